#!/usr/bin/env python3
"""Function lengths in src/, and the check that keeps the long ones from growing.

CONTRIBUTING: a function is about 100 lines at most; the longer ones carry an
`#[expect(clippy::too_many_lines)]` and that list only shrinks. Clippy only says a function
is long, not that it grew, so CI runs this script with `--check`: every function under that
`expect` must be at most the length recorded in `scripts/long-functions.txt`, and every
`expect` must be recorded (a split function's line
goes, and a stale line is only a note; a new `expect` is a failure, as CONTRIBUTING says).

Two counts per function:
  code   clippy's count: lines inside the body's braces that are not blank and not only a
         comment; this is the one recorded and checked.
  span   lines from `fn` to its closing brace ("by brace count").

Usage:
  scripts/fn-lengths.py --check            fail if a recorded function grew (CI)
  scripts/fn-lengths.py --record           rewrite scripts/long-functions.txt
  scripts/fn-lengths.py --over N [--span]  list functions over N lines, longest first

No dependency beyond Python itself: the lexer below knows Rust's comments, strings, raw
strings, byte strings, char literals and lifetimes, which is all a brace count needs.
"""

import os
import re
import sys

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
RECORD = os.path.join(ROOT, "scripts", "long-functions.txt")
EXPECT = "#[expect(clippy::too_many_lines)]"


def blank_out(src):
    """The source with comments, strings and char literals replaced by spaces (newlines
    kept), so braces and `fn` can be found by position. Also returns, per line, whether
    the line holds code (something other than whitespace and comments)."""
    out = list(src)
    n = len(src)
    i = 0
    code_line = set()
    line = 0

    def blank(a, b, literal=False):
        # A literal's characters are code on every line they are on (a string may span lines).
        at = line
        for k in range(a, b):
            if out[k] == "\n":
                at += 1
            else:
                if literal and not out[k].isspace():
                    code_line.add(at)
                out[k] = " "

    while i < n:
        c = src[i]
        if c == "\n":
            line += 1
            i += 1
            continue
        if src.startswith("//", i):
            j = src.find("\n", i)
            j = n if j < 0 else j
            blank(i, j)
            i = j
            continue
        if src.startswith("/*", i):
            depth, j = 1, i + 2
            while j < n and depth:
                if src.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif src.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            blank(i, j)
            line += src.count("\n", i, j)
            i = j
            continue
        m = re.compile(r'b?r(#*)"').match(src, i)
        if m and (i == 0 or not (src[i - 1].isalnum() or src[i - 1] == "_")):
            end = src.find('"' + m.group(1), m.end())
            end = n if end < 0 else end + 1 + len(m.group(1))
            blank(i, end, literal=True)
            line += src.count("\n", i, end)
            i = end
            continue
        if c == '"' or (c == "b" and src.startswith('b"', i)):
            j = i + (2 if c == "b" else 1)
            while j < n and src[j] != '"':
                j += 2 if src[j] == "\\" else 1
            j = min(j + 1, n)
            blank(i, j, literal=True)
            line += src.count("\n", i, j)
            i = j
            continue
        if c == "'":
            # A char literal ('a', '\n', '\u{1F600}', '{') or a lifetime ('a).
            m = re.compile(r"'(\\u\{[0-9a-fA-F]+\}|\\.|[^\\'])'").match(src, i)
            if m:
                blank(i, m.end(), literal=True)
                i = m.end()
                continue
        if not c.isspace():
            code_line.add(line)
        i += 1
    return "".join(out), code_line


FN = re.compile(r"\bfn\s+([A-Za-z_][A-Za-z0-9_]*)")


def functions(path):
    """(name, qualified name, first line, last line, code lines, has expect) per fn with a body."""
    with open(path, encoding="utf-8") as f:
        src = f.read()
    text, code_line = blank_out(src)
    lines = src.split("\n")
    starts = [0]
    for k, ch in enumerate(text):
        if ch == "\n":
            starts.append(k + 1)

    def line_of(pos):
        lo, hi = 0, len(starts) - 1
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if starts[mid] <= pos:
                lo = mid
            else:
                hi = mid - 1
        return lo

    # The enclosing `impl X` / `mod x` / `trait X` for qualified names.
    scopes = []
    for m in re.finditer(r"\b(impl|trait|mod)\b([^{;]*)\{", text):
        head = m.group(2)
        if m.group(1) == "impl":
            head = head.split(" for ")[-1] if " for " in head else head
            head = re.sub(r"<.*>", "", head.split("where")[0]).strip()
            head = re.sub(r"^<.*?>\s*", "", head).strip()
        name = (head.strip().split() or ["?"])[-1]
        close = match_brace(text, m.end() - 1)
        scopes.append((m.end() - 1, close, name))

    found = []
    for m in FN.finditer(text):
        # The body is the first `{` at paren/bracket depth 0 after the name; a `;` first
        # means a declaration without one (a trait method).
        j, depth = m.end(), 0
        while j < len(text):
            ch = text[j]
            if ch in "([<" and not (ch == "<" and text[j - 1] == "-"):
                depth += 1
            elif ch in ")]>" and not (ch == ">" and text[j - 1] in "-="):
                depth -= 1
            elif ch == "{" and depth <= 0:
                break
            elif ch == ";" and depth <= 0:
                j = -1
                break
            j += 1
        if j < 0 or j >= len(text):
            continue
        close = match_brace(text, j)
        first, body, last = line_of(m.start()), line_of(j), line_of(close)
        # Clippy drops the braces themselves: the line of `{` counts only for code after
        # it, the line of `}` only for code before it.
        after_open = text[j + 1 : text.find("\n", j) if text.find("\n", j) >= 0 else len(text)]
        before_close = text[starts[last] : close]
        if body == last:
            code = 1 if text[j + 1 : close].strip() else 0
        else:
            code = sum(1 for ln in range(body + 1, last) if ln in code_line)
            code += bool(after_open.strip()) + bool(before_close.strip())
        owner = [s for s in scopes if s[0] < m.start() < s[1]]
        qual = owner[-1][2] + "::" + m.group(1) if owner else m.group(1)
        # The attributes above the fn (skipping doc comments and other attributes).
        has_expect = False
        k = first - 1
        while k >= 0:
            stripped = lines[k].strip()
            if stripped == EXPECT:
                has_expect = True
            if stripped.startswith("#[") or stripped.startswith("///") or stripped.startswith("//"):
                k -= 1
                continue
            break
        found.append((qual, first + 1, last + 1, code, has_expect))
    return found


def match_brace(text, open_pos):
    depth = 0
    for k in range(open_pos, len(text)):
        if text[k] == "{":
            depth += 1
        elif text[k] == "}":
            depth -= 1
            if depth == 0:
                return k
    return len(text) - 1


def all_functions():
    rows = []
    for base, _, files in os.walk(os.path.join(ROOT, "src")):
        for name in sorted(files):
            if name.endswith(".rs"):
                path = os.path.join(base, name)
                rel = os.path.relpath(path, ROOT)
                for qual, first, last, code, has_expect in functions(path):
                    rows.append((rel, qual, first, last, code, has_expect))
    return rows


def read_record():
    record = {}
    with open(RECORD, encoding="utf-8") as f:
        for raw in f:
            raw = raw.split("#", 1)[0].strip()
            if raw:
                length, key = raw.split(None, 1)
                record[key] = int(length)
    return record


def key(rel, qual):
    return f"{rel} {qual}"


def main(argv):
    rows = all_functions()
    if "--over" in argv:
        limit = int(argv[argv.index("--over") + 1])
        span = "--span" in argv
        long = [r for r in rows if (r[3] - r[2] + 1 if span else r[4]) > limit]
        long.sort(key=lambda r: -(r[3] - r[2] + 1 if span else r[4]))
        for rel, qual, first, last, code, has_expect in long:
            mark = " (expect)" if has_expect else ""
            print(f"{last - first + 1:4} span {code:4} code  {rel}:{first} {qual}{mark}")
        print(f"{len(long)} functions over {limit} lines ({'span' if span else 'code'})")
        return 0
    expected = {key(r[0], r[1]): r[4] for r in rows if r[5]}
    if "--record" in argv:
        with open(RECORD, "w", encoding="utf-8") as f:
            f.write(
                "# The functions under #[expect(clippy::too_many_lines)] and their length in\n"
                "# clippy's count (code lines). scripts/fn-lengths.py --check (CI) fails when one\n"
                "# grows; a split one's line goes. Rewrite with scripts/fn-lengths.py --record\n"
                "# only when a function got shorter.\n"
            )
            for k in sorted(expected):
                f.write(f"{expected[k]:4} {k}\n")
        print(f"recorded {len(expected)} functions in {os.path.relpath(RECORD, ROOT)}")
        return 0
    if "--check" in argv:
        record = read_record()
        failures = []
        for k, length in sorted(expected.items()):
            if k not in record:
                failures.append(f"{k}: new #[expect(clippy::too_many_lines)] ({length} lines); split it instead")
            elif length > record[k]:
                failures.append(f"{k}: {length} lines, recorded {record[k]}; split it instead of growing it")
        for k in sorted(set(record) - set(expected)):
            # Not a failure: a split function is progress, and its line only goes stale.
            print(f"fn-lengths: note: {k} is recorded but no longer under the expect; drop its line (--record)")
        for line in failures:
            print(f"fn-lengths: {line}", file=sys.stderr)
        if failures:
            return 1
        print(f"fn-lengths: {len(expected)} long functions, none grew")
        return 0
    print(__doc__.strip().split("\n\n")[-2], file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
