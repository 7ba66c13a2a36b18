//! [`Rules`]: loading the rule files and deciding a tool call.

use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::Value;

use super::files::{line_of, read_optional, toml_error, user_home};
use super::pattern::{self, CommandPattern, PathPattern};
use super::rule::{self, CompileError, Pat, Rule, ToolPat, parse_rule};
use super::types::{Decision, List, PATH_TOOLS, RuleRef, RulesError, SESSION_SOURCE, Verdict};
use crate::runtime::shell::wrappers;
use crate::runtime::shell::{self, Part};

/// The permission rules of a workspace and a home.
#[derive(Debug, Clone)]
pub struct Rules {
    pub(super) rules: Vec<Rule>,
    pub(super) root: PathBuf,
    pub(super) home_dir: Option<PathBuf>,
    pub(super) files: Vec<PathBuf>,
    /// The workspace's allow rules left out because the workspace is not trusted.
    pub(super) ignored: Vec<RuleRef>,
}

/// What of a workspace's rule file a load uses (`crate::runtime::trust` decides).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WorkspaceRules<'a> {
    /// Every list: the workspace is trusted (the file's text, as its hash was taken).
    All(&'a str),
    /// Only `deny` and `ask`, which can only make neocode more careful: the workspace is not
    /// trusted, so its `allow` rules are left out.
    DenyAndAsk(&'a str),
    /// None: the workspace has no rule file.
    Absent,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RuleLists {
    #[serde(default)]
    allow: Vec<toml::Spanned<String>>,
    #[serde(default)]
    ask: Vec<toml::Spanned<String>>,
    #[serde(default)]
    deny: Vec<toml::Spanned<String>>,
}

impl RuleLists {
    /// Every rule as (list, text as written, line in `src`), allow then ask then deny.
    fn entries(self, src: &str) -> impl Iterator<Item = (List, String, usize)> {
        [
            (List::Allow, self.allow),
            (List::Ask, self.ask),
            (List::Deny, self.deny),
        ]
        .into_iter()
        .flat_map(move |(list, items)| {
            items.into_iter().map(move |item| {
                let line = line_of(src, item.span().start);
                (list, item.into_inner(), line)
            })
        })
    }
}

#[derive(Deserialize)]
struct HomeConfig {
    permissions: Option<RuleLists>,
}

impl crate::runtime::tools::ReadDenials for Rules {
    fn denies(&self, root: &Path, rel: &str) -> bool {
        self.read_denied(&pattern::absolute(root, rel, None))
            .is_some()
    }
}

/// What the most severe matching rule says (none: the policy decides).
fn decision(best: Option<&Rule>) -> Decision {
    match best {
        Some(r) => Decision {
            verdict: verdict_of(r.list),
            rule: Some(r.at.clone()),
            reason: None,
        },
        None => Decision::default_(),
    }
}

impl Rules {
    /// `<workspace>/.neocode/permissions.toml`.
    pub(crate) fn workspace_file(workspace: &Path) -> PathBuf {
        workspace.join(".neocode").join("permissions.toml")
    }

    /// `<home>/config.toml` (its `[permissions]` table).
    pub(crate) fn home_file(home: &Path) -> PathBuf {
        home.join("config.toml")
    }

    /// No rules at all (every call: the policy decides).
    pub(crate) fn empty(workspace: &Path) -> Rules {
        Rules {
            rules: Vec::new(),
            root: workspace.to_path_buf(),
            home_dir: user_home(),
            files: Vec::new(),
            ignored: Vec::new(),
        }
    }

    /// Reads the workspace file and the home config (each may be absent). A malformed file,
    /// an unknown key or a rule that does not parse is an error naming the file and line.
    /// Whether the workspace is trusted is not asked here: the turns and the commands that
    /// show rules load them through `crate::runtime::trust::Admission`, which leaves out the
    /// allow rules of a workspace the user has not trusted.
    pub(crate) fn load(home: &Path, workspace: &Path) -> Result<Rules, RulesError> {
        Rules::load_with_home_dir(home, workspace, user_home().as_deref())
    }

    /// [`Rules::load`] with the folder `~/` stands for.
    pub(crate) fn load_with_home_dir(
        home: &Path,
        workspace: &Path,
        home_dir: Option<&Path>,
    ) -> Result<Rules, RulesError> {
        let ws_file = Rules::workspace_file(workspace);
        let src = read_optional(&ws_file)?;
        let ws = src
            .as_deref()
            .map_or(WorkspaceRules::Absent, WorkspaceRules::All);
        Rules::load_parts(home, workspace, ws, home_dir)
    }

    /// The home config's rules and, of the workspace's file, what `ws` says (its text is
    /// given: what was hashed is what is used).
    pub(crate) fn load_from(
        home: &Path,
        workspace: &Path,
        ws: WorkspaceRules<'_>,
    ) -> Result<Rules, RulesError> {
        Rules::load_parts(home, workspace, ws, user_home().as_deref())
    }

    fn load_parts(
        home: &Path,
        workspace: &Path,
        ws: WorkspaceRules<'_>,
        home_dir: Option<&Path>,
    ) -> Result<Rules, RulesError> {
        let mut rules = Rules {
            rules: Vec::new(),
            root: workspace.to_path_buf(),
            home_dir: home_dir.map(Path::to_path_buf),
            files: Vec::new(),
            ignored: Vec::new(),
        };
        let ws_file = Rules::workspace_file(workspace);
        let (src, allow) = match ws {
            WorkspaceRules::All(src) => (Some(src), true),
            WorkspaceRules::DenyAndAsk(src) => (Some(src), false),
            WorkspaceRules::Absent => (None, true),
        };
        if let Some(src) = src {
            let mut lists: RuleLists =
                toml::from_str(src).map_err(|e| toml_error(&ws_file, src, &e))?;
            if !allow {
                for item in std::mem::take(&mut lists.allow) {
                    rules.ignored.push(RuleRef {
                        text: item.get_ref().trim().to_string(),
                        file: ws_file.clone(),
                        line: line_of(src, item.span().start),
                    });
                }
            }
            rules.add(&ws_file, src, lists)?;
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
        for (list, text, line) in lists.entries(src) {
            let rule = self
                .compile(list, &text, file, line)
                .map_err(|e| RulesError {
                    file: file.to_path_buf(),
                    line,
                    message: e.to_string(),
                })?;
            self.rules.push(rule);
        }
        Ok(())
    }

    pub(super) fn compile(
        &self,
        list: List,
        text: &str,
        file: &Path,
        line: usize,
    ) -> Result<Rule, CompileError> {
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
                Pat::Command(CommandPattern::parse(&p).ok_or(CompileError::EmptyCommand)?)
            }
            Some(p) if name == "web_fetch" => Pat::Domain(
                rule::domain_pattern(&p)
                    .ok_or_else(|| rule::RuleError::BadDomain(text.trim().into()))?,
            ),
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
    pub(crate) fn with_session_grants(&self, grants: &[String]) -> Rules {
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
    pub(crate) fn files(&self) -> &[PathBuf] {
        &self.files
    }

    /// The workspace's allow rules that were left out (the workspace is not trusted).
    pub(crate) fn ignored(&self) -> &[RuleRef] {
        &self.ignored
    }

    /// What the rules say about calling `tool` with `args` (the call's JSON arguments).
    pub(crate) fn decide(&self, tool: &str, args: &Value) -> Decision {
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
        if tool == "web_fetch" {
            return self.decide_fetch(get("url").unwrap_or(""));
        }
        self.decide_simple(tool, None)
    }

    /// A URL: the most severe rule whose host covers the URL's host (a URL without one
    /// matches only rules without a pattern).
    fn decide_fetch(&self, url: &str) -> Decision {
        let host = reqwest::Url::parse(url)
            .ok()
            .and_then(|u| u.host_str().map(str::to_string));
        let mut best: Option<&Rule> = None;
        for r in &self.rules {
            if !r.tool.matches("web_fetch") {
                continue;
            }
            let ok = match (&r.pat, &host) {
                (Pat::None, _) => true,
                (Pat::Domain(d), Some(h)) => rule::domain_matches(d, h),
                _ => false,
            };
            if ok && best.is_none_or(|b| r.list < b.list) {
                best = Some(r);
            }
        }
        decision(best)
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
    pub(crate) fn read_denied(&self, path: &Path) -> Option<RuleRef> {
        self.rules
            .iter()
            .find(|r| {
                r.list == List::Deny
                    && (r.tool.matches("read_file"))
                    && match &r.pat {
                        Pat::Path(p) => p.matches(path, false),
                        Pat::None => true,
                        Pat::Command(_) | Pat::Domain(_) => false,
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
        decision(best)
    }

    /// The decision for one simple command's words (`computed`: word by word, whether the
    /// word is computed when the command runs).
    pub(super) fn decide_words(&self, words: &[String], computed: &[bool]) -> Option<&Rule> {
        let mut best: Option<&Rule> = None;
        // Deny and ask also see through wrappers (`sudo rm`, `env X=1 rm`, `xargs rm`,
        // `find -exec rm`), name a program given by path by its name (`/bin/rm`), and take
        // a computed word for any word.
        let candidates = if words.is_empty() {
            Vec::new()
        } else {
            wrappers::chain(&(words.to_vec(), computed.to_vec())).0
        };
        for r in &self.rules {
            if !r.tool.matches("run_command") {
                continue;
            }
            let ok = match &r.pat {
                Pat::None => true,
                Pat::Command(c) if r.list == List::Allow => c.matches(words),
                Pat::Command(c) => candidates.iter().any(|(w, cs)| c.may_match(w, cs)),
                Pat::Path(_) | Pat::Domain(_) => false,
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
                Part::Simple {
                    words, computed, ..
                } => match self.decide_words(words, computed) {
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
                    if let Some(r) = self.decide_words(&[], &[]).filter(|r| r.list == List::Deny) {
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

/// The rules of a workspace rule file's text as written, without compiling them: (list,
/// text, line), allow then ask then deny. For showing what a workspace declares.
pub(crate) fn rule_entries(
    file: &Path,
    src: &str,
) -> Result<Vec<(List, String, usize)>, RulesError> {
    let lists: RuleLists = toml::from_str(src).map_err(|e| toml_error(file, src, &e))?;
    Ok(lists
        .entries(src)
        .map(|(list, text, line)| (list, text.trim().to_string(), line))
        .collect())
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
