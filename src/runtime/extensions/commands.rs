//! Custom slash commands: Markdown prompt files a user types as `/name ARGS`.
//!
//! Read from `<workspace>/.neocode/commands/`, Claude Code's `<workspace>/.claude/commands/`
//! (as they are) and `<home>/commands/`. The name is the file's path below that folder
//! without `.md`, folders joined with `:` (`frontend/component.md` is `/frontend:component`).
//! Front matter is optional: `description`, `argument-hint`, `allowed-tools`, `model`; the
//! body is the prompt, with `$ARGUMENTS` (all the arguments) and `$1`…`$9` (each one;
//! quotes group words) replaced. Workspace commands are declared by the workspace: they are
//! used only when the user trusts it (the caller says, `runtime::trust::custom_commands`).
//! A name found twice: workspace (`.neocode`, then `.claude`), then home wins; a name of a
//! built-in command: the built-in wins. Each file left out is named in a warning. An enabled
//! plugin's commands come last, named `PLUGIN:cmd` as Claude Code names them.
//!
//! `/init` is built in: [`init_prompt`] asks the model to write or update `AGENTS.md`.

use std::path::{Path, PathBuf};

use super::front_matter::{self, Document, FileError, FrontMatterError, md_files, read_capped};

/// Characters of a description taken from the body's first line.
const DESCRIPTION_CHARS: usize = 100;

/// The built-in `/init`'s name.
pub const INIT: &str = "init";

/// Where a command was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CommandOrigin {
    /// `<workspace>/.neocode/commands/`.
    Workspace,
    /// `<workspace>/.claude/commands/` (Claude Code's).
    Claude,
    /// `<home>/commands/`.
    Home,
    /// An enabled plugin's (`/PLUGIN:cmd`).
    Plugin,
}

impl CommandOrigin {
    /// The word the completion and the warnings use.
    pub fn as_str(self) -> &'static str {
        match self {
            CommandOrigin::Workspace => "workspace",
            CommandOrigin::Claude => "claude",
            CommandOrigin::Home => "home",
            CommandOrigin::Plugin => "plugin",
        }
    }
}

/// One custom command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CustomCommand {
    /// Without the `/` (`review`, `frontend:component`).
    pub name: String,
    /// From the front matter, else the body's first line (may be empty).
    pub description: String,
    /// `argument-hint` (`[file] [focus]`; empty when none).
    pub argument_hint: String,
    /// `allowed-tools` as written (`Bash(git status:*)`, `Read`); `None` when not given.
    /// Read and shown; not applied (turns have no per-turn tool filter).
    pub allowed_tools: Option<Vec<String>>,
    /// `model`; read and shown, not applied (a turn has no model of its own).
    pub model: Option<String>,
    /// The prompt, with its placeholders.
    pub body: String,
    pub path: PathBuf,
    pub origin: CommandOrigin,
}

/// The commands in use, and what was left out.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CustomCommands {
    /// Sorted by name.
    pub commands: Vec<CustomCommand>,
    /// One line per file left out (unreadable, a built-in's name, a name taken before).
    pub warnings: Vec<String>,
    /// Why the workspace's commands are not offered (it is not trusted), when it has some.
    pub workspace_left_out: Option<String>,
}

/// A command file that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum CommandError {
    #[error(transparent)]
    File(#[from] FileError),
    #[error("not UTF-8 text")]
    NotUtf8,
    #[error("{0}")]
    FrontMatter(#[from] FrontMatterError),
    #[error("the name {0:?} has a space or a character a command line cannot type")]
    BadName(String),
}

impl CustomCommands {
    /// The commands of the home and of workspace `root` (the workspace's only when
    /// `trusted`), less those named like one of `built_in` (with or without the `/`).
    pub fn load(home: &Path, root: &Path, trusted: bool, built_in: &[&str]) -> CustomCommands {
        let mut out = CustomCommands::default();
        let home_dir = home.join("commands");
        let places = [
            (
                root.join(".neocode").join("commands"),
                CommandOrigin::Workspace,
            ),
            (root.join(".claude").join("commands"), CommandOrigin::Claude),
            (home_dir.clone(), CommandOrigin::Home),
        ];
        for (dir, origin) in places {
            // `<root>/.neocode` that is the home: its commands are the personal ones.
            if origin == CommandOrigin::Workspace && same_dir(&dir, &home_dir) {
                continue;
            }
            let mut files = Vec::new();
            md_files(&dir, &dir, 0, &mut files);
            if origin != CommandOrigin::Home && !trusted {
                if !files.is_empty() {
                    out.workspace_left_out =
                        Some("the workspace is not trusted (`neocode trust`)".to_string());
                }
                continue;
            }
            for (path, name) in files {
                out.add(read_command(&path, name, origin), &path, built_in);
            }
        }
        for plugin in super::plugins::enabled(home) {
            for (name, path) in plugin.brings().commands {
                out.add(
                    read_command(&path, name, CommandOrigin::Plugin),
                    &path,
                    built_in,
                );
            }
        }
        out.commands.sort_by(|a, b| a.name.cmp(&b.name));
        out
    }

    fn add(&mut self, read: Result<CustomCommand, CommandError>, path: &Path, built_in: &[&str]) {
        let c = match read {
            Ok(c) => c,
            Err(e) => {
                self.warnings
                    .push(format!("skipped command {}: {e}", path.display()));
                return;
            }
        };
        if built_in
            .iter()
            .any(|b| b.strip_prefix('/').unwrap_or(b) == c.name)
        {
            self.warnings.push(format!(
                "skipped command {}: /{} is a built-in command",
                path.display(),
                c.name
            ));
        } else if let Some(first) = self.get(&c.name) {
            self.warnings.push(format!(
                "skipped command {}: /{} is already {}",
                path.display(),
                c.name,
                first.path.display()
            ));
        } else {
            self.commands.push(c);
        }
    }

    /// The command `name` (without the `/`).
    pub fn get(&self, name: &str) -> Option<&CustomCommand> {
        self.commands.iter().find(|c| c.name == name)
    }

    /// The names, each with its `/`.
    pub fn names(&self) -> Vec<String> {
        self.commands
            .iter()
            .map(|c| format!("/{}", c.name))
            .collect()
    }
}

fn same_dir(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

fn read_command(
    path: &Path,
    name: String,
    origin: CommandOrigin,
) -> Result<CustomCommand, CommandError> {
    if name.is_empty()
        || name
            .chars()
            .any(|c| c.is_whitespace() || c.is_control() || c == '/')
    {
        return Err(CommandError::BadName(name));
    }
    let bytes = read_capped(path, |p| std::fs::read(p))?;
    let text = String::from_utf8(bytes).map_err(|_| CommandError::NotUtf8)?;
    let mut c = parse_command(&text)?;
    c.name = name;
    c.path = path.to_path_buf();
    c.origin = origin;
    Ok(c)
}

/// A command from a file's text (`name`, `path` and `origin` left for the caller). Front
/// matter is optional, as in Claude Code.
pub(crate) fn parse_command(text: &str) -> Result<CustomCommand, FrontMatterError> {
    let doc = match front_matter::read(text) {
        Ok(doc) => doc,
        Err(FrontMatterError::Missing) => Document {
            fields: Vec::new(),
            body: text.strip_prefix('\u{feff}').unwrap_or(text),
        },
        Err(e) => return Err(e),
    };
    let body = doc.body.trim().to_string();
    let description = doc.value("description").unwrap_or_else(|| {
        let first = body.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
        first
            .trim()
            .trim_start_matches('#')
            .trim()
            .chars()
            .take(DESCRIPTION_CHARS)
            .collect()
    });
    Ok(CustomCommand {
        name: String::new(),
        description: one_line(&description),
        argument_hint: one_line(&doc.value("argument-hint").unwrap_or_default()),
        allowed_tools: doc.value("allowed-tools").map(|t| tool_list(&t)),
        model: doc.value("model"),
        body,
        path: PathBuf::new(),
        origin: CommandOrigin::Home,
    })
}

fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// `Bash(git add:*), Read` as its entries: commas inside parentheses do not split.
fn tool_list(value: &str) -> Vec<String> {
    let value = value.trim().trim_start_matches('[').trim_end_matches(']');
    let mut out = Vec::new();
    let mut depth = 0usize;
    let mut cur = String::new();
    for ch in value.chars() {
        match ch {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                out.push(std::mem::take(&mut cur));
                continue;
            }
            _ => {}
        }
        cur.push(ch);
    }
    out.push(cur);
    out.into_iter()
        .map(|t| t.trim().trim_matches(['"', '\'']).to_string())
        .filter(|t| !t.is_empty())
        .collect()
}

impl CustomCommand {
    /// The prompt this command sends for `args` (what follows `/name`): `$ARGUMENTS` is
    /// all of it (trimmed), `$1`…`$9` its words (`"a b"` or `'a b'` is one; a missing one
    /// is empty). A body with neither gets non-empty arguments after it, as
    /// `ARGUMENTS: …`, as Claude Code does.
    pub fn expand(&self, args: &str) -> String {
        let args = args.trim();
        let words = split_args(args);
        let mut out = String::with_capacity(self.body.len() + args.len());
        let mut placeholders = false;
        let mut rest = self.body.as_str();
        while let Some(i) = rest.find('$') {
            out.push_str(&rest[..i]);
            let after = &rest[i + 1..];
            if let Some(tail) = after.strip_prefix("ARGUMENTS") {
                out.push_str(args);
                placeholders = true;
                rest = tail;
            } else if let Some(d) = after.chars().next().and_then(|c| c.to_digit(10))
                && d >= 1
            {
                let n = d as usize;
                out.push_str(words.get(n - 1).map_or("", String::as_str));
                placeholders = true;
                rest = &after[1..];
            } else {
                out.push('$');
                rest = after;
            }
        }
        out.push_str(rest);
        if !placeholders && !args.is_empty() {
            out.push_str("\n\nARGUMENTS: ");
            out.push_str(args);
        }
        out.trim().to_string()
    }
}

/// Words of `args`, quotes grouping (and removed).
fn split_args(args: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quote: Option<char> = None;
    let mut started = false;
    for ch in args.chars() {
        match (quote, ch) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => cur.push(c),
            (None, '"' | '\'') => {
                quote = Some(ch);
                started = true;
            }
            (None, c) if c.is_whitespace() => {
                if started {
                    out.push(std::mem::take(&mut cur));
                    started = false;
                }
            }
            (None, c) => {
                cur.push(c);
                started = true;
            }
        }
    }
    if started {
        out.push(cur);
    }
    out
}

/// The command a line invokes: `/word` at its start, then a space or the end, `word`
/// holding no further `/` (`/etc/hosts is odd` is a message, not a command). The name
/// (without `/`) and the rest, trimmed.
pub fn invocation(line: &str) -> Option<(&str, &str)> {
    let line = line.trim();
    let rest = line.strip_prefix('/')?;
    let (word, args) = match rest.find(char::is_whitespace) {
        Some(i) => (&rest[..i], rest[i..].trim()),
        None => (rest, ""),
    };
    (!word.is_empty() && !word.contains('/')).then_some((word, args))
}

/// The prompt of `/init`; `args` (what follows it) is added as the user's own guidance.
pub fn init_prompt(args: &str) -> String {
    let mut p = String::from(INIT_PROMPT);
    let args = args.trim();
    if !args.is_empty() {
        p.push_str("\n\nThe user adds: ");
        p.push_str(args);
    }
    p
}

const INIT_PROMPT: &str = "Write or update AGENTS.md at the root of this workspace: the instructions a coding agent (you, in later sessions) reads before working here.

First read the project; do not guess:
- List the top-level layout and the main source folders; open the README, the build files (Cargo.toml, package.json, pyproject.toml, go.mod, Makefile, CMakeLists.txt and the like), the CI configuration and any contributing guide.
- Find the exact commands to build, to run the tests (all of them, and one test or one file), to lint and to format. Prefer the commands CI runs.
- Note the conventions the code keeps: language version, layout of modules and tests, naming, error handling, formatting, commit messages, and any rule a contributor guide states.
- If AGENTS.md exists, read it first and keep what is still true; if CLAUDE.md, .cursorrules, .github/copilot-instructions.md or similar files exist, fold in what they say that applies.

Then write AGENTS.md with the write_file tool (or edit_file for an existing one), so the user sees the change as a diff and approves it. Keep it short and specific to this project, about 20 to 60 lines of Markdown:
1. One or two sentences on what the project is.
2. Layout: the folders that matter and what lives in each.
3. Commands: build, test (all and one), lint, format, run, each in a code block exactly as typed.
4. Conventions and rules a change must follow.
5. Anything surprising: generated files not to edit, slow or flaky tests, required services or environment variables.

Do not invent commands you did not find, do not copy the README wholesale, and do not change any other file. When done, say in two or three lines what you wrote or changed.";

#[cfg(test)]
mod tests {
    use super::*;

    fn cmd(text: &str) -> CustomCommand {
        parse_command(text).unwrap()
    }

    #[test]
    fn arguments_and_positions_are_replaced() {
        let c = cmd(
            "---\nargument-hint: [pr] [priority]\n---\nReview PR #$1 at $2 priority. All: $ARGUMENTS. Cost $5.\n",
        );
        assert_eq!(c.argument_hint, "[pr] [priority]");
        assert_eq!(
            c.expand(" 456 \"very high\" "),
            "Review PR #456 at very high priority. All: 456 \"very high\". Cost ."
        );
        let plain = cmd("Explain the code.");
        assert_eq!(plain.description, "Explain the code.");
        assert_eq!(plain.expand(""), "Explain the code.");
        assert_eq!(plain.expand("src/"), "Explain the code.\n\nARGUMENTS: src/");
        assert_eq!(
            cmd("Pay $ 5, $0 and $$ARGUMENTS").expand("x"),
            "Pay $ 5, $0 and $x"
        );
    }

    #[test]
    fn claude_code_front_matter_is_read() {
        let c = cmd(
            "---\nallowed-tools: Bash(git add:*), Bash(git status:*), Bash(git commit:*)\nargument-hint: [message]\ndescription: Create a git commit\nmodel: claude-3-5-haiku-20241022\n---\n\n## Context\n\n- Current status: !`git status`\n\nCreate a commit: $ARGUMENTS\n",
        );
        assert_eq!(c.description, "Create a git commit");
        assert_eq!(
            c.allowed_tools.as_deref(),
            Some(
                &[
                    "Bash(git add:*)".to_string(),
                    "Bash(git status:*)".into(),
                    "Bash(git commit:*)".into()
                ][..]
            )
        );
        assert_eq!(c.model.as_deref(), Some("claude-3-5-haiku-20241022"));
        assert!(c.body.starts_with("## Context"));
        assert!(parse_command("---\ndescription: 'open\n---\n").is_err());
    }

    #[test]
    fn only_a_slash_word_is_a_command() {
        assert_eq!(invocation("/review src/"), Some(("review", "src/")));
        assert_eq!(invocation("  /init"), Some(("init", "")));
        assert_eq!(
            invocation("/frontend:component  Button  "),
            Some(("frontend:component", "Button"))
        );
        assert_eq!(invocation("/etc/hosts looks odd"), None);
        assert_eq!(invocation("/"), None);
        assert_eq!(invocation("review"), None);
    }

    #[test]
    fn places_trust_and_built_ins_decide_what_is_used() {
        let dir = tempfile::tempdir().unwrap();
        let (home, root) = (dir.path().join("home"), dir.path().join("ws"));
        let write = |p: PathBuf, t: &str| {
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, t).unwrap();
        };
        write(home.join("commands/review.md"), "Home review");
        write(home.join("commands/help.md"), "Mine");
        write(root.join(".neocode/commands/review.md"), "Workspace review");
        write(
            root.join(".claude/commands/frontend/component.md"),
            "Make $1",
        );
        let all = CustomCommands::load(&home, &root, true, &["/help", "/init"]);
        assert_eq!(all.names(), ["/frontend:component", "/review"]);
        assert_eq!(all.get("review").unwrap().body, "Workspace review");
        assert_eq!(all.warnings.len(), 2, "{:?}", all.warnings);
        assert!(
            all.warnings
                .iter()
                .any(|w| w.contains("/help is a built-in"))
        );
        assert!(
            all.warnings
                .iter()
                .any(|w| w.contains("/review is already"))
        );
        let home_only = CustomCommands::load(&home, &root, false, &["/help"]);
        assert_eq!(home_only.names(), ["/review"]);
        assert_eq!(home_only.get("review").unwrap().origin, CommandOrigin::Home);
        assert!(home_only.workspace_left_out.is_some());
    }

    #[test]
    fn init_asks_for_agents_md_through_the_edit_tools() {
        let p = init_prompt("mention the fuzz targets");
        assert!(p.starts_with("Write or update AGENTS.md"));
        assert!(p.contains("write_file"));
        assert!(p.ends_with("The user adds: mention the fuzz targets"));
    }
}

#[cfg(test)]
mod link_tests {
    use super::md_files;

    #[test]
    fn a_command_file_planted_as_a_link_is_never_read() {
        let d = tempfile::tempdir().unwrap();
        let secret = d.path().join("secret.txt");
        std::fs::write(&secret, "KEY=1\n").unwrap();
        let dir = d.path().join("commands");
        std::fs::create_dir_all(dir.join("git")).unwrap();
        std::fs::write(dir.join("git/commit.md"), "Commit.\n").unwrap();
        std::os::unix::fs::symlink(&secret, dir.join("leak.md")).unwrap();
        std::os::unix::fs::symlink(d.path(), dir.join("up")).unwrap();
        let mut found = Vec::new();
        md_files(&dir, &dir, 0, &mut found);
        let names: Vec<&str> = found.iter().map(|(_, n)| n.as_str()).collect();
        assert_eq!(names, ["git:commit"]);
    }
}
