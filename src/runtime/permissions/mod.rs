//! Permission rules (issue 27): what runs without asking, what always asks, what never runs.
//!
//! Rules come from `<workspace>/.neocode/permissions.toml` (top-level `allow`, `ask`, `deny`
//! lists, meant to be committed) and the `[permissions]` table of `<home>/config.toml`
//! (personal). A rule is `tool` or `tool(pattern)`: a tool name (`read_file`, `list_dir`,
//! `grep`, `write_file`, `edit_file`, `run_command`, `update_plan`, `mcp__server__tool`, `*`
//! for any tool; `*` inside an MCP name is a wildcard, `mcp__github__*`), with a command
//! pattern for `run_command` ([`pattern::CommandPattern`]) or a path glob for the file tools
//! ([`pattern::PathPattern`]). Syntax and examples: docs/RULES.md.
//!
//! [`Rules::decide`] takes a tool call and answers deny > ask > allow > the approval policy's
//! default, whatever file each rule comes from (the workspace file cannot lift a personal
//! deny, nor the reverse). A command is split with the bash grammar ([`shell`]) and allowed
//! only when every simple command in it is; a part the splitter cannot account for asks.
//! A `read_file(...)` deny also denies `grep` and `list_dir` on the paths it covers.

pub mod pattern;
pub mod shell;

use std::fmt;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::Value;

use pattern::{CommandPattern, PathPattern};
use shell::Part;

/// The file a session grant's [`RuleRef`] names: the grant lives in the session, not a file.
pub const SESSION_SOURCE: &str = "this session";

/// Tools whose pattern is a path glob.
const PATH_TOOLS: &[&str] = &["read_file", "list_dir", "grep", "write_file", "edit_file"];
/// Tools of neocode's own (MCP tools are `mcp__server__tool`).
const OWN_TOOLS: &[&str] = &[
    "read_file",
    "list_dir",
    "grep",
    "write_file",
    "edit_file",
    "run_command",
    "update_plan",
];

/// The three lists of a rule file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum List {
    Deny,
    Ask,
    Allow,
}

impl List {
    /// `allow`, `ask` or `deny`.
    pub fn key(self) -> &'static str {
        match self {
            List::Allow => "allow",
            List::Ask => "ask",
            List::Deny => "deny",
        }
    }

    /// Parses `allow`, `ask`, `deny`.
    pub fn parse(s: &str) -> Option<List> {
        match s {
            "allow" => Some(List::Allow),
            "ask" => Some(List::Ask),
            "deny" => Some(List::Deny),
            _ => None,
        }
    }
}

/// What the rules say about a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Runs without asking.
    Allow,
    /// Always asks, even when the approval policy would not.
    Ask,
    /// Never runs.
    Deny,
    /// No rule applies: the approval policy decides.
    Default,
}

impl Verdict {
    /// `allow`, `ask`, `deny`, `default`.
    pub fn label(self) -> &'static str {
        match self {
            Verdict::Allow => "allow",
            Verdict::Ask => "ask",
            Verdict::Deny => "deny",
            Verdict::Default => "default",
        }
    }
}

/// The rule that made a decision: its text and where it is written.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct RuleRef {
    /// The rule as written (`run_command(git diff *)`).
    pub text: String,
    /// The file it is in.
    pub file: PathBuf,
    /// Its line (1-based).
    pub line: usize,
}

impl fmt::Display for RuleRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({}:{})", self.text, self.file.display(), self.line)
    }
}

/// A decision about one tool call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    pub verdict: Verdict,
    /// The rule behind an allow, ask or deny; `None` for [`Verdict::Default`] and for an ask
    /// because a part of a command could not be accounted for (see `reason`).
    pub rule: Option<RuleRef>,
    /// Why, in words, when no rule says it (a part of the command the shell splitter could
    /// not account for).
    pub reason: Option<String>,
}

impl Decision {
    fn default_() -> Decision {
        Decision {
            verdict: Verdict::Default,
            rule: None,
            reason: None,
        }
    }
}

/// A malformed rule file (or one that cannot be read or written).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RulesError {
    pub file: PathBuf,
    /// 1-based; 0 when the problem is not on a line (the file cannot be read).
    pub line: usize,
    pub message: String,
}

impl fmt::Display for RulesError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            write!(f, "{}: {}", self.file.display(), self.message)
        } else {
            write!(f, "{}:{}: {}", self.file.display(), self.line, self.message)
        }
    }
}

impl std::error::Error for RulesError {}

#[derive(Debug, Clone)]
enum ToolPat {
    Any,
    Exact(String),
    /// An MCP name with `*` wildcards.
    Glob(String),
}

impl ToolPat {
    fn matches(&self, tool: &str) -> bool {
        match self {
            ToolPat::Any => true,
            ToolPat::Exact(t) => t == tool,
            ToolPat::Glob(g) => pattern_word_match(g, tool),
        }
    }
}

fn pattern_word_match(p: &str, w: &str) -> bool {
    CommandPattern::parse(p).is_some_and(|c| c.matches(&[w.to_string()]))
}

#[derive(Debug, Clone)]
enum Pat {
    None,
    Command(CommandPattern),
    Path(PathPattern),
}

/// One parsed rule.
#[derive(Debug, Clone)]
pub struct Rule {
    pub list: List,
    pub at: RuleRef,
    tool: ToolPat,
    pat: Pat,
}

impl Rule {
    /// The tool name part (`*` for any).
    pub fn tool(&self) -> &str {
        match &self.tool {
            ToolPat::Any => "*",
            ToolPat::Exact(t) | ToolPat::Glob(t) => t,
        }
    }
}

/// Parses one rule's text; `Err` says what is wrong with it.
pub fn parse_rule(
    text: &str,
    root: &Path,
    home_dir: Option<&Path>,
) -> Result<(String, Option<String>), String> {
    let t = text.trim();
    let (name, pat) = match t.find('(') {
        Some(i) => {
            let Some(inner) = t[i + 1..].strip_suffix(')') else {
                return Err(format!("rule `{t}` opens `(` but does not end with `)`"));
            };
            (t[..i].trim(), Some(inner.trim().to_string()))
        }
        None => (t, None),
    };
    if name.is_empty() {
        return Err(format!("rule `{t}` has no tool name"));
    }
    let known = name == "*"
        || OWN_TOOLS.contains(&name)
        || (name.starts_with("mcp__")
            && name.len() > 5
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '*')));
    if !known {
        return Err(format!(
            "rule `{t}`: unknown tool `{name}` (tools: {}, mcp__server__tool, *)",
            OWN_TOOLS.join(", ")
        ));
    }
    if let Some(p) = &pat {
        if p.is_empty() {
            return Err(format!("rule `{t}` has an empty pattern"));
        }
        if name == "run_command" {
            if CommandPattern::parse(p).is_none() {
                return Err(format!("rule `{t}`: an empty command pattern"));
            }
        } else if PATH_TOOLS.contains(&name) {
            PathPattern::parse(p, root, home_dir).map_err(|e| format!("rule `{t}`: {e}"))?;
        } else {
            return Err(format!(
                "rule `{t}`: only run_command and the file tools ({}) take a pattern",
                PATH_TOOLS.join(", ")
            ));
        }
    }
    Ok((name.to_string(), pat))
}

/// The permission rules of a workspace and a home.
#[derive(Debug, Clone)]
pub struct Rules {
    rules: Vec<Rule>,
    root: PathBuf,
    home_dir: Option<PathBuf>,
    files: Vec<PathBuf>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RuleLists {
    #[serde(default)]
    allow: Vec<toml::Spanned<String>>,
    #[serde(default)]
    ask: Vec<toml::Spanned<String>>,
    #[serde(default)]
    deny: Vec<toml::Spanned<String>>,
}

#[derive(Deserialize)]
struct HomeConfig {
    permissions: Option<RuleLists>,
}

fn line_of(src: &str, offset: usize) -> usize {
    src.as_bytes()[..offset.min(src.len())]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
        + 1
}

impl Rules {
    /// `<workspace>/.neocode/permissions.toml`.
    pub fn workspace_file(workspace: &Path) -> PathBuf {
        workspace.join(".neocode").join("permissions.toml")
    }

    /// `<home>/config.toml` (its `[permissions]` table).
    pub fn home_file(home: &Path) -> PathBuf {
        home.join("config.toml")
    }

    /// No rules at all (every call: the policy decides).
    pub fn empty(workspace: &Path) -> Rules {
        Rules {
            rules: Vec::new(),
            root: workspace.to_path_buf(),
            home_dir: user_home(),
            files: Vec::new(),
        }
    }

    /// Reads the workspace file and the home config (each may be absent). A malformed file,
    /// an unknown key or a rule that does not parse is an error naming the file and line.
    pub fn load(home: &Path, workspace: &Path) -> Result<Rules, RulesError> {
        Rules::load_with_home_dir(home, workspace, user_home().as_deref())
    }

    /// [`Rules::load`] with the folder `~/` stands for.
    pub fn load_with_home_dir(
        home: &Path,
        workspace: &Path,
        home_dir: Option<&Path>,
    ) -> Result<Rules, RulesError> {
        let mut rules = Rules {
            rules: Vec::new(),
            root: workspace.to_path_buf(),
            home_dir: home_dir.map(Path::to_path_buf),
            files: Vec::new(),
        };
        let ws_file = Rules::workspace_file(workspace);
        if let Some(src) = read_optional(&ws_file)? {
            let lists: RuleLists =
                toml::from_str(&src).map_err(|e| toml_error(&ws_file, &src, &e))?;
            rules.add(&ws_file, &src, lists)?;
            rules.files.push(ws_file);
        }
        let home_file = Rules::home_file(home);
        if let Some(src) = read_optional(&home_file)? {
            let cfg: HomeConfig =
                toml::from_str(&src).map_err(|e| toml_error(&home_file, &src, &e))?;
            if let Some(lists) = cfg.permissions {
                rules.add(&home_file, &src, lists)?;
                rules.files.push(home_file);
            }
        }
        Ok(rules)
    }

    fn add(&mut self, file: &Path, src: &str, lists: RuleLists) -> Result<(), RulesError> {
        for (list, items) in [
            (List::Allow, lists.allow),
            (List::Ask, lists.ask),
            (List::Deny, lists.deny),
        ] {
            for item in items {
                let line = line_of(src, item.span().start);
                let text = item.into_inner();
                let rule = self
                    .compile(list, &text, file, line)
                    .map_err(|message| RulesError {
                        file: file.to_path_buf(),
                        line,
                        message,
                    })?;
                self.rules.push(rule);
            }
        }
        Ok(())
    }

    fn compile(&self, list: List, text: &str, file: &Path, line: usize) -> Result<Rule, String> {
        let (name, pat) = parse_rule(text, &self.root, self.home_dir.as_deref())?;
        let tool = if name == "*" {
            ToolPat::Any
        } else if name.contains('*') {
            ToolPat::Glob(name.clone())
        } else {
            ToolPat::Exact(name.clone())
        };
        let pat = match pat {
            None => Pat::None,
            Some(p) if name == "run_command" => {
                Pat::Command(CommandPattern::parse(&p).ok_or("an empty command pattern")?)
            }
            Some(p) => Pat::Path(PathPattern::parse(
                &p,
                &self.root,
                self.home_dir.as_deref(),
            )?),
        };
        Ok(Rule {
            list,
            at: RuleRef {
                text: text.trim().to_string(),
                file: file.to_path_buf(),
                line,
            },
            tool,
            pat,
        })
    }

    /// These rules plus a session's "always" answers as allow rules: each grant is a rule
    /// text (`run_command(cargo test *)`) or, as older sessions stored them, a bare tool name
    /// (every call of that tool). A grant that is not a rule (`sandbox:network`) is skipped.
    /// Their file is [`SESSION_SOURCE`] and their line 0.
    pub fn with_session_grants(&self, grants: &[String]) -> Rules {
        let mut out = self.clone();
        for g in grants {
            if let Ok(rule) = self.compile(List::Allow, g, Path::new(SESSION_SOURCE), 0) {
                out.rules.push(rule);
            }
        }
        out
    }

    /// Every rule, in file order (the workspace file first), allow before ask before deny
    /// within a file.
    pub fn rules(&self) -> &[Rule] {
        &self.rules
    }

    /// The files rules were read from.
    pub fn files(&self) -> &[PathBuf] {
        &self.files
    }

    /// What the rules say about calling `tool` with `args` (the call's JSON arguments).
    pub fn decide(&self, tool: &str, args: &Value) -> Decision {
        let get = |k: &str| args.get(k).and_then(Value::as_str);
        if tool == "run_command" {
            let Some(command) = get("command") else {
                return self.decide_simple(tool, None);
            };
            return self.decide_command(command);
        }
        if PATH_TOOLS.contains(&tool) {
            let path = get("path").unwrap_or(".");
            let abs = pattern::absolute(&self.root, path, self.home_dir.as_deref());
            let lexical = self.decide_simple(tool, Some(&abs));
            // A symlink is judged by where it points too: the stricter answer wins, and an
            // allow needs both (`src/link -> ../.env` is denied by `read_file(.env)`).
            return match self.resolved(&abs) {
                Some(real) if real != abs => {
                    let target = self.decide_simple(tool, Some(&real));
                    if strictness(target.verdict) < strictness(lexical.verdict) {
                        target
                    } else {
                        lexical
                    }
                }
                _ => lexical,
            };
        }
        self.decide_simple(tool, None)
    }

    /// `path` with its symlinks resolved, expressed under the workspace root as written
    /// when it lies inside it; `None` when it does not exist.
    fn resolved(&self, path: &Path) -> Option<PathBuf> {
        let real = std::fs::canonicalize(path).ok()?;
        let root = std::fs::canonicalize(&self.root).ok()?;
        Some(match real.strip_prefix(&root) {
            Ok(rel) => self.root.join(rel),
            Err(_) => real,
        })
    }

    /// The deny rule covering reads of `path` (for tools that walk folders, such as `grep`
    /// and `list_dir`, to skip the files a `read_file(...)` deny covers).
    pub fn read_denied(&self, path: &Path) -> Option<RuleRef> {
        self.rules
            .iter()
            .find(|r| {
                r.list == List::Deny
                    && (r.tool.matches("read_file"))
                    && match &r.pat {
                        Pat::Path(p) => p.matches(path, false),
                        Pat::None => true,
                        Pat::Command(_) => false,
                    }
            })
            .map(|r| r.at.clone())
    }

    /// Decides a tool call without a command: a path (absolute) or nothing.
    fn decide_simple(&self, tool: &str, path: Option<&Path>) -> Decision {
        let walks = matches!(tool, "list_dir" | "grep");
        let mut best: Option<&Rule> = None;
        for r in &self.rules {
            let tool_ok = r.tool.matches(tool)
                // Read denials cover the tools that read by walking.
                || (r.list == List::Deny && walks && r.tool.matches("read_file"));
            if !tool_ok {
                continue;
            }
            let pat_ok = match (&r.pat, path) {
                (Pat::None, _) => true,
                (Pat::Path(p), Some(path)) => p.matches(path, walks),
                _ => false,
            };
            if pat_ok && best.is_none_or(|b| r.list < b.list) {
                best = Some(r);
            }
        }
        match best {
            Some(r) => Decision {
                verdict: verdict_of(r.list),
                rule: Some(r.at.clone()),
                reason: None,
            },
            None => Decision::default_(),
        }
    }

    /// The decision for one simple command's words.
    fn decide_words(&self, words: &[String]) -> Option<&Rule> {
        let mut best: Option<&Rule> = None;
        for r in &self.rules {
            if !r.tool.matches("run_command") {
                continue;
            }
            let ok = match &r.pat {
                Pat::None => true,
                Pat::Command(c) if r.list == List::Allow => c.matches(words),
                // Deny and ask also see through wrappers: `sudo rm`, `env X=1 rm`, `xargs rm`.
                Pat::Command(c) => unwrapped(words).iter().any(|w| c.matches(w)),
                Pat::Path(_) => false,
            };
            if ok && best.is_none_or(|b| r.list < b.list) {
                best = Some(r);
            }
        }
        best
    }

    /// A command line: deny when any part is denied; else ask when any part asks or cannot
    /// be accounted for; else allow when every part is allowed; else the policy decides.
    fn decide_command(&self, command: &str) -> Decision {
        let parts = shell::split(command);
        let mut deny: Option<&Rule> = None;
        let mut ask: Option<&Rule> = None;
        let mut unknown: Option<String> = None;
        let mut allow: Option<&Rule> = None;
        let mut all_allowed = true;
        for p in &parts {
            match p {
                Part::Simple { words, .. } => match self.decide_words(words) {
                    Some(r) if r.list == List::Deny => {
                        deny.get_or_insert(r);
                    }
                    Some(r) if r.list == List::Ask => {
                        ask.get_or_insert(r);
                        all_allowed = false;
                    }
                    Some(r) => {
                        allow.get_or_insert(r);
                    }
                    None => all_allowed = false,
                },
                Part::Unknown { reason, text } => {
                    // A tool-wide deny (`run_command`, `*`) still denies it.
                    if let Some(r) = self.decide_words(&[]).filter(|r| r.list == List::Deny) {
                        deny.get_or_insert(r);
                    }
                    unknown.get_or_insert(format!("{reason}: `{text}`"));
                    all_allowed = false;
                }
            }
        }
        if let Some(r) = deny {
            return Decision {
                verdict: Verdict::Deny,
                rule: Some(r.at.clone()),
                reason: None,
            };
        }
        if let Some(r) = ask {
            return Decision {
                verdict: Verdict::Ask,
                rule: Some(r.at.clone()),
                reason: unknown,
            };
        }
        if let Some(reason) = unknown {
            return Decision {
                verdict: Verdict::Ask,
                rule: None,
                reason: Some(reason),
            };
        }
        if parts.is_empty() {
            // Nothing runs (an empty line, only comments): the policy decides.
            return self.decide_simple("run_command", None);
        }
        match (all_allowed, allow) {
            (true, Some(r)) => Decision {
                verdict: Verdict::Allow,
                rule: Some(r.at.clone()),
                reason: None,
            },
            _ => Decision::default_(),
        }
    }
}

/// Programs that run the rest of their arguments as a command.
const WRAPPERS: &[&str] = &[
    "sudo",
    "doas",
    "env",
    "command",
    "builtin",
    "exec",
    "nice",
    "nohup",
    "time",
    "timeout",
    "xargs",
    "stdbuf",
    "setsid",
    "chrt",
    "ionice",
    "taskset",
    "unbuffer",
    "watch",
    "strace",
    "ltrace",
    "flock",
    "caffeinate",
    "busybox",
];

/// `words` and, for each wrapper in front (`sudo -u x`, `env -i A=1`, `timeout 5`), the
/// command it runs: options, assignments and numbers after a wrapper are skipped.
fn unwrapped(words: &[String]) -> Vec<&[String]> {
    let mut out = vec![words];
    let mut rest = words;
    while let Some(first) = rest.first() {
        let name = first.rsplit('/').next().unwrap_or(first);
        if !WRAPPERS.contains(&name) {
            break;
        }
        let mut i = 1;
        while i < rest.len() {
            let w = &rest[i];
            let option = w.starts_with('-') || w.contains('=');
            let number = w.chars().next().is_some_and(|c| c.is_ascii_digit());
            if !(option || number) {
                break;
            }
            i += 1;
        }
        rest = &rest[i..];
        if rest.is_empty() {
            break;
        }
        out.push(rest);
    }
    out
}

/// Deny 0 < ask 1 < default 2 < allow 3: the lower, the stricter.
fn strictness(v: Verdict) -> u8 {
    match v {
        Verdict::Deny => 0,
        Verdict::Ask => 1,
        Verdict::Default => 2,
        Verdict::Allow => 3,
    }
}

fn verdict_of(l: List) -> Verdict {
    match l {
        List::Allow => Verdict::Allow,
        List::Ask => Verdict::Ask,
        List::Deny => Verdict::Deny,
    }
}

fn user_home() -> Option<PathBuf> {
    std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from)
}

fn read_optional(file: &Path) -> Result<Option<String>, RulesError> {
    match std::fs::read_to_string(file) {
        Ok(s) => Ok(Some(s)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(RulesError {
            file: file.to_path_buf(),
            line: 0,
            message: format!("cannot read it: {e}"),
        }),
    }
}

fn toml_error(file: &Path, src: &str, e: &toml::de::Error) -> RulesError {
    let line = e.span().map(|s| line_of(src, s.start)).unwrap_or(0);
    RulesError {
        file: file.to_path_buf(),
        line,
        message: e.message().trim().to_string(),
    }
}

/// The rule proposed when the user answers "always" to a call: the first of
/// [`derive_rules`].
pub fn derive_rule(tool: &str, args: &Value, workspace: &Path) -> String {
    derive_rules(tool, args, workspace)
        .into_iter()
        .next()
        .unwrap_or_else(|| tool.to_string())
}

/// Rules that would allow a call, one per distinct simple command of a command line.
///
/// - `run_command`: each simple command's words. The command word and its first argument
///   when that looks like a subcommand (letters, digits, `-`, `_`, `:`, not starting with
///   `-`) are kept, the rest becomes `*`: `cargo test -p core` → `run_command(cargo test *)`,
///   `git diff --stat` → `run_command(git diff *)`. When only the command word would be
///   kept (`python3 test_stats.py`, `rm -rf build`) the rule is the exact command, never
///   `python3 *`. A command with nothing after the kept words is exact (`git status`).
/// - File tools: the folder of the path, relative to the workspace, with `/**`
///   (`src/a/b.rs` → `edit_file(src/a/**)`); a file at the root is named exactly
///   (`edit_file(Cargo.toml)`); a path outside the workspace keeps its absolute folder.
/// - Other tools (`update_plan`, MCP tools): the tool name.
pub fn derive_rules(tool: &str, args: &Value, workspace: &Path) -> Vec<String> {
    let get = |k: &str| args.get(k).and_then(Value::as_str);
    if tool == "run_command" {
        let Some(cmd) = get("command") else {
            return vec![tool.to_string()];
        };
        let mut out: Vec<String> = Vec::new();
        for p in shell::split(cmd) {
            let r = match &p {
                Part::Simple { words, .. } => format!("run_command({})", derive_words(words)),
                Part::Unknown { text, .. } => format!("run_command({})", text.replace('\n', " ")),
            };
            if !out.contains(&r) {
                out.push(r);
            }
        }
        if out.is_empty() {
            out.push(format!("run_command({})", cmd.trim()));
        }
        return out;
    }
    if PATH_TOOLS.contains(&tool) {
        let path = get("path").unwrap_or(".");
        let abs = pattern::absolute(workspace, path, None);
        let shown = match abs.strip_prefix(workspace) {
            Ok(rel) => rel.to_path_buf(),
            Err(_) => abs.clone(),
        };
        let is_dir = matches!(tool, "list_dir" | "grep") && !abs.is_file();
        let glob = if is_dir {
            if shown.as_os_str().is_empty() {
                "**".to_string()
            } else {
                format!("{}/**", shown.display())
            }
        } else {
            match shown.parent().filter(|p| !p.as_os_str().is_empty()) {
                Some(dir) => format!("{}/**", dir.display()),
                // A root file: exactly that file (with a `/` so it stays anchored).
                None if abs.starts_with(workspace) => format!("./{}", shown.display()),
                None => shown.display().to_string(),
            }
        };
        return vec![format!("{tool}({glob})")];
    }
    vec![tool.to_string()]
}

fn derive_words(words: &[String]) -> String {
    let subcommand = |w: &str| {
        !w.is_empty()
            && !w.starts_with('-')
            && w.chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | ':'))
    };
    let mut keep = 1;
    if words.len() > 1 && subcommand(&words[1]) {
        keep = 2;
    }
    let spaced = |ws: &[String]| ws.iter().any(|w| w.chars().any(char::is_whitespace));
    if keep >= words.len() || (keep == 1 && !spaced(words)) {
        return words.join(" ");
    }
    format!("{} *", words[..keep].join(" "))
}

/// Writes `rule` into the `list` of a rule file, keeping everything else in it (comments,
/// other tables). `file` named `config.toml` gets it under `[permissions]`; any other file
/// (`.neocode/permissions.toml`) at its top level. The folder is created when missing; a
/// rule already in the list is not added twice. Returns whether the file changed.
pub fn append_rule(file: &Path, list: List, rule: &str) -> Result<bool, RulesError> {
    let err = |line: usize, message: String| RulesError {
        file: file.to_path_buf(),
        line,
        message,
    };
    let root = file.parent().unwrap_or(Path::new("."));
    parse_rule(rule, root, user_home().as_deref()).map_err(|m| err(0, m))?;
    let src = read_optional(file)?.unwrap_or_default();
    let mut doc: toml_edit::DocumentMut = src.parse().map_err(|e: toml_edit::TomlError| {
        let line = e.span().map(|s| line_of(&src, s.start)).unwrap_or(0);
        err(line, e.message().trim().to_string())
    })?;
    let in_table = file.file_name().is_some_and(|n| n == "config.toml");
    let table: &mut toml_edit::Table = if in_table {
        let item = doc
            .as_table_mut()
            .entry("permissions")
            .or_insert_with(|| toml_edit::Item::Table(toml_edit::Table::new()));
        item.as_table_mut()
            .ok_or_else(|| err(0, "`permissions` is not a table".to_string()))?
    } else {
        doc.as_table_mut()
    };
    let arr = table
        .entry(list.key())
        .or_insert_with(|| toml_edit::value(toml_edit::Array::new()))
        .as_array_mut()
        .ok_or_else(|| err(0, format!("`{}` is not a list", list.key())))?;
    let rule = rule.trim();
    if arr.iter().any(|v| v.as_str() == Some(rule)) {
        return Ok(false);
    }
    arr.push(rule);
    if let Some(dir) = file.parent() {
        std::fs::create_dir_all(dir)
            .map_err(|e| err(0, format!("cannot create {}: {e}", dir.display())))?;
    }
    let tmp = file.with_extension("toml.tmp");
    std::fs::write(&tmp, doc.to_string())
        .and_then(|()| std::fs::rename(&tmp, file))
        .map_err(|e| err(0, format!("cannot write it: {e}")))?;
    Ok(true)
}

#[cfg(test)]
mod tests;
