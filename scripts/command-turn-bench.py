#!/usr/bin/env python3
"""Whole-process time of a `run_command true` round trip, paired between binaries.

    cargo build --release --features testkit --bin neocode --example wire_server
    scripts/command-turn-bench.py [--runs N] [--files N] BIN [BIN ...]

For each workspace (a small git repository, and one of --files files in 100 folders,
committed) and each binary, `neocode run --approve never-ask go` is timed against
`examples/wire_server.rs`: `chat` (a one-delta turn: start, request, reply, exit) and
`command` (a `run_command true` call, its result sent back, then the one-delta reply). The
binaries run in turn (A B A B ...), each with its own fresh NEOCODE_HOME per workspace. The
round trip is median(command) - median(chat) of the same binary and workspace; wall and CPU
(user + sys of the process and its children) are printed.
"""

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SERVER = os.path.join(ROOT, "target", "release", "examples", "wire_server")


def git(ws, *args):
    subprocess.run(
        ["git", "-C", ws, *args],
        check=True,
        stdout=subprocess.DEVNULL,
        env={**os.environ, "GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@example.com",
             "GIT_COMMITTER_NAME": "b", "GIT_COMMITTER_EMAIL": "b@example.com"},
    )


def workspace(base, name, files):
    ws = os.path.join(base, name)
    os.makedirs(ws)
    git(ws, "init", "-q")
    per = max(1, files // 100)
    for i in range(files):
        d = os.path.join(ws, "src", f"d{i // per:03}")
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, f"f{i:05}.rs"), "w") as f:
            f.write(f"// file {i}\nfn f{i}() {{}}\n")
    with open(os.path.join(ws, "README.md"), "w") as f:
        f.write("bench\n")
    git(ws, "add", "-A")
    git(ws, "commit", "-qm", "start")
    return ws


class Server:
    def __init__(self, api, turns):
        self.p = subprocess.Popen(
            [SERVER, api, str(turns)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        self.url = self.p.stdout.readline().strip()

    def close(self):
        self.p.stdin.close()
        self.p.wait()


def timed(binary, ws, home, url):
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": os.environ.get("HOME", "/root"),
        "NEOCODE_HOME": home,
        "NEOCODE_BASE_URL": url,
        "NEOCODE_MODEL": "scripted",
        "NEOCODE_API_KEY": "sk-bench",
    }
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    out = subprocess.run(
        [binary, "run", "--approve", "never-ask", "go"],
        cwd=ws, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if out.returncode != 0:
        sys.exit(f"{binary} failed: {out.stderr}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall * 1000, cpu * 1000


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--files", type=int, default=10000)
    ap.add_argument("binaries", nargs="+")
    a = ap.parse_args()
    base = tempfile.mkdtemp(prefix="neocode-cmd-bench-")
    try:
        spaces = [("small", workspace(base, "small", 3)),
                  (f"{a.files} files", workspace(base, "big", a.files))]
        turns = (a.runs + 3) * len(a.binaries) * len(spaces) + 10
        servers = {kind: Server(kind, turns) for kind in ("chat", "command")}
        print(f"load average {os.getloadavg()[0]:.1f} at start", flush=True)
        for label, ws in spaces:
            times = {}
            for i, b in enumerate(a.binaries):
                for kind in servers:
                    home = os.path.join(base, f"home-{label}-{i}-{kind}")
                    os.makedirs(home)
                    times[(b, kind)] = ([], [], home)
            for r in range(a.runs + 3):
                for kind, srv in servers.items():
                    for b in a.binaries:
                        walls, cpus, home = times[(b, kind)]
                        w, c = timed(b, ws, home, srv.url)
                        if r >= 3:
                            walls.append(w)
                            cpus.append(c)
            print(f"== {label} ({a.runs} runs each, after 3 warm-ups)")
            for b in a.binaries:
                cw, cc, _ = times[(b, "chat")]
                mw, mc, _ = times[(b, "command")]
                med = statistics.median
                print(
                    f"{b}: one-delta turn wall {med(cw):.1f} ms cpu {med(cc):.1f} ms | "
                    f"command turn wall {med(mw):.1f} ms cpu {med(mc):.1f} ms | "
                    f"round trip wall {med(mw) - med(cw):.1f} ms cpu {med(mc) - med(cc):.1f} ms"
                )
        print(f"load average {os.getloadavg()[0]:.1f} at end")
        for s in servers.values():
            s.close()
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
