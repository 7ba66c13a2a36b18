//! A command line split into the simple commands it runs, with the tree-sitter bash grammar.
//!
//! `&&`, `||`, `;`, `&`, `|`, `|&`, subshells `( … )`, groups `{ …; }`, `!`, command
//! substitutions `$( … )` and backticks, process substitutions `<( … )`, here-doc bodies
//! (every form, cut out first by the here-doc lexer, whose substitutions run), `sh -c '…'` /
//! `bash -c '…'` (also `-lc`, and behind a wrapper: `sudo sh -c '…'`), a shell reading a
//! literal here-doc or here-string (`bash <<'EOF'`), and the shell strings of `watch` and
//! `flock -c` are all looked into, so every simple command that would run is listed. What
//! the splitter cannot account for becomes an [`Part::Unknown`] part, which the rules always
//! ask about: a parse error, a function definition, `if`/`for`/`while`/`case`, `eval`, an
//! expansion in the command word, an assignment to a variable that changes what runs
//! (`PATH`, `LD_*`, …), a standalone assignment or `export`, an output redirection to a
//! file, a shell reading input it cannot see, a nesting deeper than [`MAX_DEPTH`].
//!
//! The grammar is bash's, and `run_command` runs commands with bash where it exists; where
//! only a POSIX `sh` exists, [`sh_differences`] names the syntax that `sh` would read
//! otherwise, and the command is refused.

use tree_sitter::{Node, Parser};

use super::lex::{self, Bashism, Prepared};
use super::words::{
    ansi_c, dangerous_assignment, expands_unquoted, is_value, unescape, unescape_dq,
};
use super::wrappers::{self, Runs};

/// How deep `sh -c` strings and substitutions are followed before the rest is unknown.
pub(crate) const MAX_DEPTH: usize = 8;

/// One simple command of a command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Part {
    /// A command whose words are known: the command word first, then its arguments as
    /// written after quote removal (expansions in arguments stay as written, e.g. `$HOME`).
    /// Leading `NAME=value` assignments are not among the words. `computed` says, word by
    /// word, whether the word is computed when the command runs (an expansion, a
    /// substitution, an unquoted glob or brace expansion): deny and ask rules take such a
    /// word for any word.
    Simple {
        words: Vec<String>,
        computed: Vec<bool>,
        text: String,
    },
    /// Something the splitter cannot account for.
    Unknown { reason: String, text: String },
}

impl Part {
    /// The source text of the part.
    pub(crate) fn text(&self) -> &str {
        match self {
            Part::Simple { text, .. } | Part::Unknown { text, .. } => text,
        }
    }

    fn text_mut(&mut self) -> &mut String {
        match self {
            Part::Simple { text, .. } | Part::Unknown { text, .. } => text,
        }
    }
}

/// The syntax of `command` that a POSIX `sh` (dash) reads differently from bash, or
/// refuses, each kind once in order of appearance (empty: the line means the same to both).
pub(crate) fn sh_differences(command: &str) -> Vec<Bashism> {
    lex::bashisms(command)
}

/// Shells whose `-c` string, script on standard input, or here-doc is followed.
const SHELLS: &[&str] = &["sh", "bash", "dash", "zsh", "ksh", "ash", "mksh"];

/// Paths through which a shell reads its standard input as the script.
const STDIN_PATHS: &[&str] = &["-", "/dev/stdin", "/dev/fd/0", "/proc/self/fd/0"];

/// Splits `command` into its simple commands. Never fails: what cannot be read is an
/// unknown part.
pub(crate) fn split(command: &str) -> Vec<Part> {
    let mut out = Vec::new();
    split_into(command, 0, &mut out);
    out
}

fn split_into(command: &str, depth: usize, out: &mut Vec<Part>) {
    if depth > MAX_DEPTH {
        out.push(unknown("nested too deeply", command));
        return;
    }
    let prepared = match lex::prepare(command) {
        Ok(p) => p,
        Err(e) => {
            out.push(unknown(&e.to_string(), command));
            return;
        }
    };
    let mut parser = Parser::new();
    if parser
        .set_language(&tree_sitter_bash::LANGUAGE.into())
        .is_err()
    {
        out.push(unknown("the bash grammar could not be loaded", command));
        return;
    }
    let Some(tree) = parser.parse(&prepared.text, None) else {
        out.push(unknown("the shell parser gave up", command));
        return;
    };
    let root = tree.root_node();
    if root.has_error() {
        out.push(unknown("the shell parser could not read it", command));
        return;
    }
    let first = out.len();
    // Only comments or nothing at all: no part, nothing runs.
    Walker {
        src: &prepared.text,
        prepared: &prepared,
        depth,
        out,
        stdin: None,
    }
    .walk(root);
    if !prepared.docs.is_empty() {
        for p in &mut out[first..] {
            let restored = prepared.restore(p.text());
            *p.text_mut() = restored;
        }
    }
}

fn unknown(reason: &str, text: &str) -> Part {
    Part::Unknown {
        reason: reason.to_string(),
        text: text.trim().to_string(),
    }
}

/// What a command reads on its standard input, when the line says.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Stdin {
    /// A here-doc or here-string whose text is known.
    Text(String),
    /// Something else: a pipe, a here-doc that expands, a file.
    Unknown,
}

struct Walker<'a, 'o> {
    src: &'a str,
    prepared: &'a Prepared,
    depth: usize,
    out: &'o mut Vec<Part>,
    /// Standard input of the commands being walked.
    stdin: Option<Stdin>,
}

impl Walker<'_, '_> {
    fn text(&self, n: Node) -> &str {
        n.utf8_text(self.src.as_bytes()).unwrap_or("")
    }

    fn unknown(&mut self, reason: &str, n: Node) {
        let p = unknown(reason, self.text(n));
        self.out.push(p);
    }

    fn simple(&mut self, words: Vec<String>, computed: Vec<bool>, n: Node) {
        let text = self.text(n).to_string();
        self.out.push(Part::Simple {
            words,
            computed,
            text,
        });
    }

    fn named_children(n: Node) -> Vec<Node> {
        let mut c = n.walk();
        n.named_children(&mut c).collect()
    }

    fn walk(&mut self, n: Node) {
        if n.is_error() || n.is_missing() {
            self.unknown("the shell parser could not read it", n);
            return;
        }
        match n.kind() {
            "program"
            | "list"
            | "subshell"
            | "compound_statement"
            | "negated_command"
            | "command_substitution"
            | "process_substitution" => {
                for c in Self::named_children(n) {
                    self.walk(c);
                }
            }
            "pipeline" => {
                // Every command but the first reads the pipe.
                let outer = self.stdin.clone();
                for (i, c) in Self::named_children(n).into_iter().enumerate() {
                    if i > 0 {
                        self.stdin = Some(Stdin::Unknown);
                    }
                    self.walk(c);
                }
                self.stdin = outer;
            }
            "redirected_statement" => {
                let outer = self.stdin.clone();
                for c in Self::named_children(n) {
                    if let Some(s) = self.input_of(c) {
                        self.stdin = Some(s);
                    }
                }
                for c in Self::named_children(n) {
                    self.walk(c);
                }
                self.stdin = outer;
            }
            "comment" => {}
            "command" => self.command(n),
            "file_redirect" => self.redirect(n),
            "heredoc_redirect" | "herestring_redirect" => {
                // Commands after the here-doc start (`cat <<EOF | grep x`) and expansions
                // in the body or string.
                for c in Self::named_children(n) {
                    match c.kind() {
                        "heredoc_start" | "heredoc_end" => {}
                        "heredoc_body" | "heredoc_content" => self.substitutions(c),
                        k if is_value(k) => self.substitutions(c),
                        _ => self.walk(c),
                    }
                }
            }
            "variable_assignment" | "variable_assignments" => {
                self.unknown("a variable assignment changes the shell's state", n)
            }
            "declaration_command" | "unset_command" => {
                self.unknown("export/declare/unset change the shell's state", n)
            }
            "function_definition" => self.unknown("a function definition", n),
            "if_statement"
            | "while_statement"
            | "for_statement"
            | "c_style_for_statement"
            | "case_statement" => self.unknown("a shell control structure", n),
            other => {
                let reason = format!("shell construct `{other}`");
                self.unknown(&reason, n)
            }
        }
    }

    /// What a redirection gives as standard input: a here-doc (its marker), a here-string.
    fn input_of(&self, n: Node) -> Option<Stdin> {
        match n.kind() {
            "file_redirect" => {
                let (op, dest) = self.redirect_parts(n);
                if op == "<"
                    && let Some(doc) = self.prepared.doc(&dest)
                {
                    return Some(if doc.literal() {
                        Stdin::Text(doc.body.clone())
                    } else {
                        Stdin::Unknown
                    });
                }
                (op.starts_with('<') && !op.contains('>')).then_some(Stdin::Unknown)
            }
            "herestring_redirect" => {
                let value = Self::named_children(n)
                    .into_iter()
                    .find(|c| is_value(c.kind()))?;
                Some(match self.literal(value) {
                    Some(t) => Stdin::Text(format!("{t}\n")),
                    None => Stdin::Unknown,
                })
            }
            "heredoc_redirect" => Some(Stdin::Unknown),
            _ => None,
        }
    }

    /// Walks every command or process substitution under `n` (a word, a string, a
    /// here-doc body…).
    fn substitutions(&mut self, n: Node) {
        if matches!(n.kind(), "command_substitution" | "process_substitution") {
            self.walk(n);
            return;
        }
        for c in Self::named_children(n) {
            self.substitutions(c);
        }
    }

    /// The operator (`>`, `2>&`, `<`) and the destination of a redirection.
    fn redirect_parts(&self, n: Node) -> (String, String) {
        let mut op = String::new();
        let mut c = n.walk();
        for ch in n.children(&mut c) {
            if !ch.is_named() {
                op.push_str(self.text(ch));
            }
        }
        let dest = n
            .child_by_field_name("destination")
            .map(|d| self.text(d).to_string())
            .unwrap_or_default();
        (op, dest)
    }

    /// `> file`, `2>&1`, `< file`: input redirections and fd duplications are understood;
    /// writing to a file (other than /dev/null) is unknown. A here-doc's marker walks the
    /// substitutions its body runs.
    fn redirect(&mut self, n: Node) {
        let (op, dest) = self.redirect_parts(n);
        if op == "<"
            && let Some(doc) = self.prepared.doc(&dest)
        {
            if doc.expands {
                match lex::body_substitutions(&doc.body) {
                    Ok(subs) => {
                        for s in subs {
                            split_into(&s, self.depth + 1, self.out);
                        }
                    }
                    Err(e) => {
                        let p = unknown(&format!("a here-doc body: {e}"), &doc.body);
                        self.out.push(p);
                    }
                }
            }
            return;
        }
        for d in Self::named_children(n) {
            self.substitutions(d);
        }
        // `>`, `>>`, `&>`, `>|`, `<>`, `>& file` write; `2>&1`, `>&-` and /dev/null do not.
        let writes = op.contains('>');
        let harmless = dest == "/dev/null"
            || op.ends_with(">&-")
            || (op.ends_with(">&")
                && !dest.is_empty()
                && dest.chars().all(|c| c.is_ascii_digit() || c == '-'));
        if writes && !harmless {
            self.unknown("output redirected to a file", n);
        }
    }

    fn command(&mut self, n: Node) {
        let mut words: Vec<String> = Vec::new();
        let mut computed: Vec<bool> = Vec::new();
        let mut bad: Option<String> = None;
        let outer = self.stdin.clone();
        for c in Self::named_children(n) {
            if let Some(s) = self.input_of(c) {
                self.stdin = Some(s);
            }
        }
        for c in Self::named_children(n) {
            match c.kind() {
                "variable_assignment" => {
                    let name = c
                        .child_by_field_name("name")
                        .map(|v| self.text(v).to_string())
                        .unwrap_or_default();
                    if let Some(v) = c.child_by_field_name("value") {
                        self.substitutions(v);
                    }
                    if dangerous_assignment(&name) {
                        bad.get_or_insert(format!("the assignment to {name} changes what runs"));
                    }
                }
                "command_name" => {
                    self.substitutions(c);
                    match self.literal(c) {
                        // `{rm,-rf,x}` or `r*` would expand into another program's name.
                        Some(w)
                            if c.named_child(0).is_some_and(|k| k.kind() == "word")
                                && w.contains(['{', '*', '?', '[']) =>
                        {
                            bad.get_or_insert(
                                "a glob or brace expansion in the command word".to_string(),
                            );
                        }
                        Some(w) => {
                            words.push(w);
                            computed.push(false);
                        }
                        None => {
                            bad.get_or_insert("an expansion in the command word".to_string());
                        }
                    }
                }
                "file_redirect" | "heredoc_redirect" | "herestring_redirect" => self.walk(c),
                "comment" => {}
                _ => {
                    self.substitutions(c);
                    words.push(self.word_text(c));
                    computed.push(self.computed(c));
                }
            }
        }
        if let Some(reason) = bad {
            self.unknown(&reason, n);
        } else if words.is_empty() {
            self.unknown("no command word", n);
        } else {
            self.runs(n, (words, computed));
        }
        self.stdin = outer;
    }

    /// A simple command with known words: itself, and what it runs when it is a shell, a
    /// wrapper around one, or a wrapper with a shell string.
    fn runs(&mut self, n: Node, words: wrappers::Words) {
        let mut cur = words.clone();
        let mut wrapped = false;
        for _ in 0..16 {
            match wrappers::inner(&cur) {
                Some(Runs::Words(next)) => {
                    cur = next;
                    wrapped = true;
                }
                Some(Runs::Script { text, computed }) => {
                    self.simple(words.0, words.1, n);
                    if computed {
                        self.unknown("a shell string with expansions", n);
                    } else {
                        split_into(&text, self.depth + 1, self.out);
                    }
                    return;
                }
                None => break,
            }
        }
        let Some(first) = cur.0.first() else {
            self.simple(words.0, words.1, n);
            return;
        };
        let name = wrappers::program(first);
        if cur.1.first().copied().unwrap_or(false) {
            self.simple(words.0, words.1, n);
            self.unknown("a wrapper runs a computed command", n);
            return;
        }
        if name == "eval" {
            self.unknown("eval runs a string as code", n);
            return;
        }
        if SHELLS.contains(&name) {
            if wrapped {
                self.simple(words.0, words.1, n);
            }
            self.shell(n, &cur);
            return;
        }
        self.simple(words.0, words.1, n);
    }

    /// `sh -c STRING`, `sh` reading its input, `sh script.sh`.
    fn shell(&mut self, n: Node, cur: &wrappers::Words) {
        let (words, computed) = cur;
        let mut i = 1;
        let (mut c_flag, mut s_flag) = (false, false);
        while i < words.len() {
            let w = words[i].as_str();
            if w == "--" || w == "-" {
                if w == "-" {
                    s_flag = true;
                }
                i += 1;
                break;
            }
            if w.len() < 2 || !(w.starts_with('-') || w.starts_with('+')) {
                break;
            }
            if let Some(long) = w.strip_prefix("--") {
                i += if matches!(long, "rcfile" | "init-file") {
                    2
                } else {
                    1
                };
                continue;
            }
            let flags = &w[1..];
            c_flag |= flags.contains('c');
            s_flag |= flags.contains('s') || flags.contains('i');
            i += if flags.contains(['o', 'O']) { 2 } else { 1 };
        }
        if c_flag {
            match (words.get(i), computed.get(i).copied().unwrap_or(false)) {
                (None, _) => self.unknown("a shell -c without a string", n),
                (Some(_), true) => self.unknown("a shell -c string with expansions", n),
                (Some(s), false) => split_into(s, self.depth + 1, self.out),
            }
            return;
        }
        let reads_input = s_flag
            || words
                .get(i)
                .is_none_or(|w| STDIN_PATHS.contains(&w.as_str()));
        if !reads_input {
            // `sh script.sh`: an ordinary command.
            self.simple(words.clone(), computed.clone(), n);
            return;
        }
        match self.stdin.clone() {
            Some(Stdin::Text(script)) => split_into(&script, self.depth + 1, self.out),
            _ => self.unknown("a shell reading commands from its input", n),
        }
    }

    /// Whether an argument is computed when the command runs.
    fn computed(&self, n: Node) -> bool {
        match n.kind() {
            "word" | "number" => expands_unquoted(self.text(n)),
            "raw_string" => false,
            "string" | "ansi_c_string" => self.literal(n).is_none(),
            "concatenation" => {
                if self.literal(n).is_none() {
                    return true;
                }
                // Quoted parts stand for one ordinary character: only the unquoted text
                // can glob or brace-expand.
                let skeleton: String = Self::named_children(n)
                    .into_iter()
                    .map(|c| match c.kind() {
                        "word" | "number" => self.text(c).to_string(),
                        _ => "q".to_string(),
                    })
                    .collect();
                expands_unquoted(&skeleton)
            }
            _ => true,
        }
    }

    /// The text of a word with quotes removed, or `None` when it holds an expansion or a
    /// substitution.
    fn literal(&self, n: Node) -> Option<String> {
        match n.kind() {
            "command_name" => {
                let c = n.named_child(0)?;
                self.literal(c)
            }
            "word" | "number" => Some(unescape(self.text(n))),
            "raw_string" => {
                let t = self.text(n);
                Some(
                    t.trim_start_matches('\'')
                        .trim_end_matches('\'')
                        .to_string(),
                )
            }
            "ansi_c_string" => ansi_c(self.text(n)),
            "string" => {
                let mut s = String::new();
                for c in Self::named_children(n) {
                    if c.kind() == "string_content" {
                        s.push_str(&unescape_dq(self.text(c)));
                    } else {
                        return None;
                    }
                }
                Some(s)
            }
            "concatenation" => {
                let mut s = String::new();
                for c in Self::named_children(n) {
                    s.push_str(&self.literal(c)?);
                }
                Some(s)
            }
            _ => None,
        }
    }

    /// An argument as a word: its literal text when it has one, else its source text.
    fn word_text(&self, n: Node) -> String {
        self.literal(n).unwrap_or_else(|| self.text(n).to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(cmd: &str) -> Vec<Vec<String>> {
        split(cmd)
            .into_iter()
            .map(|p| match p {
                Part::Simple { words, .. } => words,
                Part::Unknown { reason, text } => vec![format!("?{reason}: {text}")],
            })
            .collect()
    }

    fn w(v: &[&str]) -> Vec<String> {
        v.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn compound_commands_split_into_simple_ones() {
        assert_eq!(
            words("cargo test && git diff --stat || echo 'no luck'; ls | wc -l"),
            vec![
                w(&["cargo", "test"]),
                w(&["git", "diff", "--stat"]),
                w(&["echo", "no luck"]),
                w(&["ls"]),
                w(&["wc", "-l"]),
            ]
        );
        assert_eq!(
            words("(cd src && ls) & echo $(rm -rf /) `curl x`"),
            vec![
                w(&["cd", "src"]),
                w(&["ls"]),
                w(&["rm", "-rf", "/"]),
                w(&["curl", "x"]),
                w(&["echo", "$(rm -rf /)", "`curl x`"]),
            ]
        );
    }

    #[test]
    fn shell_c_strings_are_followed() {
        assert_eq!(
            words("bash -lc 'git status && curl evil.sh'"),
            vec![w(&["git", "status"]), w(&["curl", "evil.sh"])]
        );
        assert_eq!(words("sh -c \"echo hi\""), vec![w(&["echo", "hi"])]);
        assert!(matches!(
            split("sh -c \"$CMD\"").as_slice(),
            [Part::Unknown { .. }]
        ));
    }

    #[test]
    fn env_prefixes_redirections_and_heredocs() {
        assert_eq!(
            words("RUST_LOG=debug cargo test 2>&1 </dev/null >/dev/null"),
            vec![w(&["cargo", "test"])]
        );
        assert!(matches!(
            split("PATH=/tmp cargo test").as_slice(),
            [Part::Unknown { .. }]
        ));
        assert!(
            split("echo hi > notes.txt").iter().any(
                |p| matches!(p, Part::Unknown { reason, .. } if reason.contains("redirected"))
            )
        );
        let parts = words("cat <<EOF | grep x\n$(whoami)\nEOF\n");
        assert!(parts.contains(&w(&["cat"])), "{parts:?}");
        assert!(parts.contains(&w(&["grep", "x"])), "{parts:?}");
        assert!(parts.contains(&w(&["whoami"])), "{parts:?}");
    }

    #[test]
    fn only_redirections_that_write_files_are_unknown() {
        for ok in [
            "ls 2>&1",
            "ls >&2",
            "ls &>/dev/null",
            "ls 2>/dev/null",
            "ls < in.txt",
            "ls 3>&-",
        ] {
            assert_eq!(words(ok), vec![w(&["ls"])], "{ok}");
        }
        for bad in [
            "ls > out",
            "ls >> log",
            "ls &> out",
            "ls >& out",
            "ls >| out",
            "ls 2> err",
        ] {
            assert!(
                split(bad).iter().any(|p| matches!(p, Part::Unknown { .. })),
                "{bad}"
            );
        }
    }

    #[test]
    fn what_cannot_be_accounted_for_is_unknown() {
        for cmd in [
            "eval \"$X\"",
            "{rm,-rf,x}",
            "/bin/r? -rf x",
            "$CMD arg",
            "f() { rm -rf /; }; f",
            "for f in *; do rm $f; done",
            "if true; then ls; fi",
            "echo 'unterminated",
            "FOO=1",
            "export FOO=1",
        ] {
            let parts = split(cmd);
            assert!(
                parts.iter().any(|p| matches!(p, Part::Unknown { .. })),
                "{cmd}: {parts:?}"
            );
        }
    }

    fn has(parts: &[Vec<String>], cmd: &str) -> bool {
        let want: Vec<String> = cmd.split(' ').map(str::to_string).collect();
        parts.contains(&want)
    }

    #[test]
    fn every_here_doc_form_is_walked() {
        for (line, inner) in [
            ("cat <<-EOF\n\t$(rm -rf x)\n\tEOF\n", "rm -rf x"),
            ("cat <<EOF\n`rm -rf x`\nEOF\n", "rm -rf x"),
            ("cat <<A <<B\n$(rm a)\nA\n$(rm b)\nB\nrm c", "rm b"),
            ("cat <<A <<B\n$(rm a)\nA\n$(rm b)\nB\nrm c", "rm c"),
            ("cat <<A; cat <<B\nA\nB\nrm x", "rm x"),
            ("cat <<EOF\n${x:-$(rm y)}\nEOF", "rm y"),
            ("bash <<'EOF'\nrm -rf x\nEOF", "rm -rf x"),
            ("sh -s <<-\"EOF\"\n\trm -rf x\n\tEOF", "rm -rf x"),
            ("bash <<< 'rm -rf x'", "rm -rf x"),
            ("echo \"$(cat <<EOF\n$(rm z)\nEOF\n)\"", "rm z"),
        ] {
            let parts = words(line);
            assert!(has(&parts, inner), "{line:?}: {parts:?}");
        }
        // A quoted delimiter: nothing in the body runs.
        let parts = words("cat <<'EOF'\n$(rm x)\nEOF\n");
        assert_eq!(parts, vec![w(&["cat"])]);
        // The part's text shows the here-doc as written.
        assert_eq!(split("<<'EOF' cat\nx\nEOF")[0].text(), "<<'EOF' cat");
        // A shell reading what the line cannot show.
        for line in [
            "echo rm x | sh",
            "sh -e",
            "bash -s <<EOF\nrm $X\nEOF",
            "bash /dev/stdin < script",
        ] {
            assert!(
                split(line)
                    .iter()
                    .any(|p| matches!(p, Part::Unknown { reason, .. } if reason.contains("reading commands"))),
                "{line:?}: {:?}",
                split(line)
            );
        }
        assert_eq!(words("sh -e build.sh"), vec![w(&["sh", "-e", "build.sh"])]);
    }

    #[test]
    fn wrapped_shells_and_shell_strings_are_followed() {
        for (line, inner) in [
            ("sudo sh -c 'rm -rf x'", "rm -rf x"),
            ("timeout 5 bash -lc 'rm -rf x'", "rm -rf x"),
            ("env -i bash -c 'rm -rf x'", "rm -rf x"),
            ("xargs sh -c 'rm -rf \"$1\"' _", "rm -rf \"$1\""),
            ("watch -n 1 'rm -rf x'", "rm -rf x"),
            ("flock /tmp/l -c 'rm -rf x'", "rm -rf x"),
            ("bash -o pipefail -c 'rm -rf x'", "rm -rf x"),
        ] {
            let parts = words(line);
            assert!(has(&parts, inner), "{line:?}: {parts:?}");
        }
        // The wrapper stays a part of its own.
        assert!(has(&words("sudo sh -c 'ls'"), "sudo sh -c ls"));
        assert!(matches!(
            split("command eval \"$X\"").as_slice(),
            [Part::Unknown { .. }]
        ));
    }

    #[test]
    fn computed_words_are_marked() {
        let computed = |line: &str| -> Vec<bool> {
            split(line)
                .into_iter()
                .rev()
                .find_map(|p| match p {
                    Part::Simple { computed, .. } => Some(computed),
                    Part::Unknown { .. } => None,
                })
                .unwrap_or_default()
        };
        assert_eq!(
            computed("git $(echo push) origin"),
            vec![false, true, false]
        );
        assert_eq!(computed("git pu* origin"), vec![false, true, false]);
        assert_eq!(
            computed("git 'pu*' \"$HOME\" a{b,c} {}"),
            vec![false, false, true, true, false]
        );
        assert_eq!(words("$'\\x72m' -rf x"), vec![w(&["rm", "-rf", "x"])]);
    }
}
