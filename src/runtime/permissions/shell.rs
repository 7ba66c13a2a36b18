//! A command line split into the simple commands it runs, with the tree-sitter bash grammar.
//!
//! `&&`, `||`, `;`, `&`, `|`, `|&`, subshells `( … )`, groups `{ …; }`, `!`, command
//! substitutions `$( … )` and backticks, process substitutions `<( … )`, here-doc bodies and
//! `sh -c '…'` / `bash -c '…'` (also `-lc`) strings are all looked into, so every simple
//! command that would run is listed. What the splitter cannot account for becomes an
//! [`Part::Unknown`] part, which the rules always ask about: a parse error, a function
//! definition, `if`/`for`/`while`/`case`, `eval`, an expansion in the command word, an
//! assignment to a variable that changes what runs (`PATH`, `LD_*`, …), a standalone
//! assignment or `export`, an output redirection to a file, a nesting deeper than
//! [`MAX_DEPTH`].

use tree_sitter::{Node, Parser};

/// How deep `sh -c` strings and substitutions are followed before the rest is unknown.
pub const MAX_DEPTH: usize = 8;

/// One simple command of a command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Part {
    /// A command whose words are known: the command word first, then its arguments as
    /// written after quote removal (expansions in arguments stay as written, e.g. `$HOME`).
    /// Leading `NAME=value` assignments are not among the words.
    Simple { words: Vec<String>, text: String },
    /// Something the splitter cannot account for.
    Unknown { reason: String, text: String },
}

impl Part {
    /// The source text of the part.
    pub fn text(&self) -> &str {
        match self {
            Part::Simple { text, .. } | Part::Unknown { text, .. } => text,
        }
    }
}

/// Environment variables whose assignment before a command changes which program runs or
/// what a shell executes: such a prefix makes the command unknown.
fn dangerous_assignment(name: &str) -> bool {
    const NAMES: &[&str] = &[
        "PATH",
        "BASH_ENV",
        "ENV",
        "IFS",
        "SHELLOPTS",
        "BASHOPTS",
        "PS4",
        "PROMPT_COMMAND",
        "CDPATH",
        "PYTHONPATH",
        "PYTHONSTARTUP",
        "NODE_OPTIONS",
        "PERL5OPT",
        "RUSTC_WRAPPER",
        "CARGO_BUILD_RUSTC_WRAPPER",
    ];
    NAMES.contains(&name)
        || name.starts_with("LD_")
        || name.starts_with("DYLD_")
        || name.starts_with("GIT_")
        || name.ends_with("_COMMAND")
        || name.ends_with("_EDITOR")
        || name == "EDITOR"
        || name == "VISUAL"
        || name == "PAGER"
}

/// Splits `command` into its simple commands. Never fails: what cannot be read is an
/// unknown part.
pub fn split(command: &str) -> Vec<Part> {
    let mut out = Vec::new();
    split_into(command, 0, &mut out);
    out
}

fn split_into(command: &str, depth: usize, out: &mut Vec<Part>) {
    if depth > MAX_DEPTH {
        out.push(unknown("nested too deeply", command));
        return;
    }
    let mut parser = Parser::new();
    if parser
        .set_language(&tree_sitter_bash::LANGUAGE.into())
        .is_err()
    {
        out.push(unknown("the bash grammar could not be loaded", command));
        return;
    }
    let Some(tree) = parser.parse(command, None) else {
        out.push(unknown("the shell parser gave up", command));
        return;
    };
    let root = tree.root_node();
    if root.has_error() {
        out.push(unknown("the shell parser could not read it", command));
        return;
    }
    // Only comments or nothing at all: no part, nothing runs.
    Walker {
        src: command,
        depth,
        out,
    }
    .walk(root);
}

fn unknown(reason: &str, text: &str) -> Part {
    Part::Unknown {
        reason: reason.to_string(),
        text: text.trim().to_string(),
    }
}

struct Walker<'a, 'o> {
    src: &'a str,
    depth: usize,
    out: &'o mut Vec<Part>,
}

impl Walker<'_, '_> {
    fn text(&self, n: Node) -> &str {
        n.utf8_text(self.src.as_bytes()).unwrap_or("")
    }

    fn unknown(&mut self, reason: &str, n: Node) {
        let p = unknown(reason, self.text(n));
        self.out.push(p);
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
            | "pipeline"
            | "subshell"
            | "compound_statement"
            | "negated_command"
            | "redirected_statement"
            | "command_substitution"
            | "process_substitution" => {
                for c in Self::named_children(n) {
                    self.walk(c);
                }
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

    /// `> file`, `2>&1`, `< file`: input redirections and fd duplications are understood;
    /// writing to a file (other than /dev/null) is unknown.
    fn redirect(&mut self, n: Node) {
        let mut op = String::new();
        let mut c = n.walk();
        for ch in n.children(&mut c) {
            if !ch.is_named() {
                op.push_str(self.text(ch));
            }
        }
        for d in Self::named_children(n) {
            self.substitutions(d);
        }
        let dest = n
            .child_by_field_name("destination")
            .map(|d| self.text(d).to_string())
            .unwrap_or_default();
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
        let mut bad: Option<String> = None;
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
                        Some(w) => words.push(w),
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
                }
            }
        }
        if let Some(reason) = bad {
            self.unknown(&reason, n);
            return;
        }
        let Some(first) = words.first() else {
            self.unknown("no command word", n);
            return;
        };
        let name = first.rsplit('/').next().unwrap_or(first);
        match name {
            "eval" => self.unknown("eval runs a string as code", n),
            "sh" | "bash" | "dash" | "zsh" | "ksh" => {
                if words.len() == 1 {
                    self.unknown("a shell reading commands from its input", n);
                    return;
                }
                let flag = words[1].as_str();
                let is_c = flag.starts_with('-')
                    && flag.len() > 1
                    && flag[1..].chars().all(|ch| "lceixu".contains(ch))
                    && flag.contains('c');
                if !is_c {
                    // `sh script.sh`: an ordinary command.
                    let text = self.text(n).to_string();
                    self.out.push(Part::Simple { words, text });
                    return;
                }
                if words.len() != 3 {
                    self.unknown("a shell -c with other arguments", n);
                    return;
                }
                let script = self.script_arg(n);
                match script {
                    Some(s) => split_into(&s, self.depth + 1, self.out),
                    None => self.unknown("a shell -c string with expansions", n),
                }
            }
            _ => {
                let text = self.text(n).to_string();
                self.out.push(Part::Simple { words, text });
            }
        }
    }

    /// The literal script of `sh -c SCRIPT` (the last argument), when it has no expansion.
    fn script_arg(&self, n: Node) -> Option<String> {
        let last = Self::named_children(n)
            .into_iter()
            .rfind(|c| c.kind() != "file_redirect" && c.kind() != "comment")?;
        self.literal(last)
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

fn is_value(kind: &str) -> bool {
    matches!(
        kind,
        "word" | "string" | "raw_string" | "concatenation" | "simple_expansion" | "expansion"
    )
}

/// Backslash escapes of an unquoted word.
fn unescape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            if let Some(n) = chars.next() {
                out.push(n);
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// Backslash escapes inside double quotes (only `\"`, `\\`, `\$`, `` \` `` are escapes).
fn unescape_dq(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\\' && matches!(chars.peek(), Some('"' | '\\' | '$' | '`')) {
            if let Some(n) = chars.next() {
                out.push(n);
            }
        } else {
            out.push(c);
        }
    }
    out
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
        v.iter().map(|s| s.to_string()).collect()
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
}
