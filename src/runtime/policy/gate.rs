//! What decides a tool call before it runs, and the hooks around a turn (issue 27).
//!
//! A call is decided in this order: a `deny` rule; a `PreToolUse` hook that blocks (exit 2)
//! or denies; an `ask` rule (or a command part the shell grammar cannot account for) or a
//! hook's `ask`; an `allow` rule, a session grant or a hook's `allow`; else the approval
//! policy's default ([`super::approval::needs_approval`]). Whatever decides is recorded with
//! the call's result as a [`Permission`] (`tool_metadata.permission`).
//!
//! Hook runs are kept in [`Gate::pending`] until the turn appends its next message, which
//! carries them in `tool_metadata.hooks` (the transcript shows them dim).

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::runtime::policy::file_error::PolicyFileError;
use crate::runtime::policy::hooks::{
    HookEvent, HookOutcome, HookPayload, HookRun, Hooks, PermissionDecision,
};
use crate::runtime::policy::permissions::{
    self, List, RuleRef, Rules, RulesError, SESSION_SOURCE, Verdict,
};
use crate::session::ToolCall;

/// What a workspace's trust lets the gate use, and neocode's own writes to its rule file
/// (`runtime::trust` implements it; the gate is built with it, so it never asks trust itself).
pub trait Admit: Send + Sync {
    /// The rules and hooks in force: the home's, and the workspace's as far as the user trusts
    /// it; with why part of the workspace's was left out (`None`: nothing was).
    fn load(&self) -> Result<Loaded, GateError>;
    /// The rules in force again (after a rule file was written).
    fn rules(&self) -> Result<Rules, RulesError>;
    /// Appends allow `rules` to the workspace's rule `file` as the user's own change: true
    /// when the workspace stays trusted with it (the rules are in force), false when its allow
    /// rules are not used (it was not trusted before).
    fn write_workspace_rules(&self, file: &Path, rules: &[String]) -> Result<bool, KeepError>;
}

/// What [`Admit::load`] reads.
pub struct Loaded {
    pub rules: Rules,
    pub hooks: Hooks,
    /// Why the workspace's hooks, allow rules and skills are not used, if they are not.
    pub left_out: Option<String>,
}

/// Why the rules and hooks of a turn could not be read: one line naming the file and line.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GateError {
    /// A rule file or a hooks file is malformed.
    #[error("{0}")]
    File(#[from] PolicyFileError),
}

/// Why the rules of an "always" answer were not kept.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeepError {
    /// A rule does not parse (what is wrong with it).
    #[error("{0}")]
    Rule(#[from] permissions::RuleError),
    /// The rule file cannot be read, parsed or written.
    #[error(transparent)]
    File(#[from] permissions::RulesError),
    /// The rule was written but the workspace's trust record could not be refreshed (the
    /// record's error, in its words).
    #[error("{0}")]
    Trust(String),
}

/// A `UserPromptSubmit` hook blocked the prompt.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{reason}")]
pub(crate) struct PromptRefused {
    /// The hook's reason, as it gave it.
    pub reason: String,
}

/// Where the rule of an "always" answer is kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RuleScope {
    /// The session's grants (stored with the session).
    #[default]
    Session,
    /// `<workspace>/.neocode/permissions.toml`.
    Workspace,
    /// `[permissions]` of `<home>/config.toml`.
    Everywhere,
}

impl RuleScope {
    /// In words, for prompts.
    pub(crate) fn label(self) -> &'static str {
        match self {
            RuleScope::Session => "this session",
            RuleScope::Workspace => "this workspace",
            RuleScope::Everywhere => "everywhere",
        }
    }

    /// The next scope (the TUI cycles through them).
    pub(crate) fn next(self) -> RuleScope {
        match self {
            RuleScope::Session => RuleScope::Workspace,
            RuleScope::Workspace => RuleScope::Everywhere,
            RuleScope::Everywhere => RuleScope::Session,
        }
    }
}

/// Who let a call run or kept it from running, stored with its result and sent with the
/// `tool_result` event: "why did this run without asking?" always has an answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Permission {
    /// `allow` or `deny`.
    pub decision: String,
    /// `rule` (a rule file or a session grant), `hook`, `policy` or `user`.
    pub by: String,
    /// The rule's text, when a rule decided.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rule: Option<String>,
    /// The rule's file (`this session` for a session grant).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    /// The rule's line in its file (1-based; absent for a session grant).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<usize>,
    /// Why, in words (the policy, the hook's reason, the user's answer).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

impl Permission {
    fn new(allow: bool, by: &str, reason: Option<String>) -> Permission {
        Permission {
            decision: if allow { "allow" } else { "deny" }.to_string(),
            by: by.to_string(),
            rule: None,
            file: None,
            line: None,
            reason,
        }
    }

    fn of_rule(allow: bool, r: &RuleRef) -> Permission {
        Permission {
            rule: Some(r.text.clone()),
            file: Some(r.file.display().to_string()),
            line: (r.line > 0).then_some(r.line),
            ..Permission::new(allow, "rule", None)
        }
    }

    /// The user answered (once, or "always" with the rules saved at `scope`; several are
    /// named in one `rule`, separated by `, `).
    pub(crate) fn user(always: Option<(&[String], RuleScope)>) -> Permission {
        match always {
            None => Permission::new(true, "user", Some("approved once".into())),
            Some((rules, scope)) => Permission {
                rule: Some(rules.join(", ")),
                reason: Some(format!("approved, always for {}", scope.label())),
                ..Permission::new(true, "user", None)
            },
        }
    }

    /// The user denied the call.
    pub(crate) fn user_denied() -> Permission {
        Permission::new(false, "user", None)
    }

    /// One line: `allowed by rule run_command(cargo test *) (/w/.neocode/permissions.toml:2)`.
    pub(crate) fn describe(&self) -> String {
        let verb = if self.decision == "allow" {
            "allowed"
        } else {
            "denied"
        };
        let mut s = format!("{verb} by {}", self.by);
        if let Some(r) = &self.rule {
            s.push_str(&format!(" {r}"));
        }
        match (&self.file, self.line) {
            (Some(f), Some(l)) => s.push_str(&format!(" ({f}:{l})")),
            (Some(f), None) => s.push_str(&format!(" ({f})")),
            _ => {}
        }
        if let Some(why) = &self.reason {
            s.push_str(&format!(": {why}"));
        }
        s
    }

    /// The permission stored in a tool result's metadata.
    pub(crate) fn of_metadata(meta: Option<&Value>) -> Option<Permission> {
        serde_json::from_value(meta?.get("permission")?.clone()).ok()
    }
}

/// What the gate says about a call.
#[derive(Debug, Clone)]
pub(crate) enum Gated {
    /// It runs without asking.
    Run(Permission),
    /// The user is asked.
    Ask {
        /// Why, in words.
        reason: String,
        /// Whether an allow rule could let such a call run without asking: false when an
        /// `ask` rule or a `PreToolUse` hook asks (they ask whatever is allowed), so no
        /// "always" is offered.
        rules_can_allow: bool,
    },
    /// It does not run; `text` is what the model is told.
    Deny {
        permission: Permission,
        text: String,
    },
}

/// The rules and hooks of a turn's workspace and home.
pub struct Gate {
    rules: Rules,
    hooks: Hooks,
    home: PathBuf,
    root: PathBuf,
    session_id: String,
    /// Hook runs not yet stored: the next message the turn appends carries them.
    pub pending: Vec<HookRun>,
    /// What the user should see of the hooks (errors, `systemMessage`s), drained by the turn.
    pub notices: Vec<String>,
    /// Why the workspace's hooks, allow rules and skills are not used (it is not trusted as
    /// it is), as [`Gate::load`] found it; `None` when they are.
    pub left_out: Option<String>,
    /// The workspace's trust: what it lets the gate use and write.
    admit: Arc<dyn Admit>,
}

/// Sessions whose `SessionStart` hooks ran in this process.
static STARTED: Mutex<Option<HashSet<String>>> = Mutex::new(None);

/// What this process said already about workspace settings left out (once each).
static SAID: Mutex<Option<HashSet<String>>> = Mutex::new(None);

impl Gate {
    /// No rules, no hooks (until [`Gate::load`] reads them).
    pub fn empty(home: &Path, root: &Path, session_id: &str, admit: Arc<dyn Admit>) -> Gate {
        Gate {
            admit,
            rules: Rules::empty(root),
            hooks: Hooks::default(),
            home: home.to_path_buf(),
            root: root.to_path_buf(),
            session_id: session_id.to_string(),
            pending: Vec::new(),
            notices: Vec::new(),
            left_out: None,
        }
    }

    /// Reads the rule and hook files, the workspace's as far as the user trusts it
    /// ([`Admit`]: an untrusted workspace's hooks and allow rules are left out, and
    /// [`Gate::left_out`] says why); a malformed file is an error naming its file and line.
    pub fn load(&mut self) -> Result<(), GateError> {
        let Loaded {
            rules,
            hooks,
            left_out,
        } = self.admit.load()?;
        self.rules = rules;
        self.hooks = hooks;
        self.left_out = left_out;
        Ok(())
    }

    /// [`Gate::left_out`] unless this process said it already (the same words once).
    pub(crate) fn left_out_unsaid(&self) -> Option<String> {
        let why = self.left_out.clone()?;
        let mut g = SAID.lock().unwrap_or_else(PoisonError::into_inner);
        g.get_or_insert_with(HashSet::new)
            .insert(why.clone())
            .then_some(why)
    }

    fn payload(&self) -> HookPayload {
        HookPayload::new(&self.session_id, &self.root)
    }

    /// Runs `event`'s hooks; their runs wait for the next append, errors and messages for
    /// the user are kept in [`Gate::notices`].
    fn fire(&mut self, event: HookEvent, payload: &HookPayload) -> HookOutcome {
        if !self.hooks.has(event) {
            return HookOutcome::default();
        }
        let mut o = self.hooks.run_hooks(event, payload);
        self.pending.append(&mut o.runs);
        self.notices.append(&mut o.errors);
        self.notices.append(&mut o.messages);
        o
    }

    /// `SessionStart`, once per session and process (`startup` for a session without
    /// messages, else `resume`). Returns the context its hooks add.
    pub(crate) fn session_start(&mut self, has_messages: bool) -> Vec<String> {
        let first = match STARTED.lock() {
            Ok(mut g) => g
                .get_or_insert_with(HashSet::new)
                .insert(self.session_id.clone()),
            Err(_) => true,
        };
        if !first {
            return Vec::new();
        }
        let mut p = self.payload();
        p.source = Some(if has_messages { "resume" } else { "startup" }.into());
        self.fire(HookEvent::SessionStart, &p).additional_context
    }

    /// `UserPromptSubmit`: `Err` refuses the prompt (with the hook's reason); `Ok` has the
    /// context to add.
    pub(crate) fn prompt_submit(&mut self, prompt: &str) -> Result<Vec<String>, PromptRefused> {
        let mut p = self.payload();
        p.prompt = Some(prompt.to_string());
        let o = self.fire(HookEvent::UserPromptSubmit, &p);
        match o.block {
            Some(reason) => Err(PromptRefused { reason }),
            None => Ok(o.additional_context),
        }
    }

    /// `PostToolUse`: a reason to add to the result for the model, when a hook blocks.
    pub(crate) fn post_tool_use(
        &mut self,
        call: &ToolCall,
        text: &str,
        is_error: bool,
    ) -> Option<String> {
        let mut p = self.payload();
        p.tool_name = Some(call.name.clone());
        p.tool_input = Some(arguments(call));
        p.tool_response = Some(serde_json::json!({"text": text, "is_error": is_error}));
        self.fire(HookEvent::PostToolUse, &p).block
    }

    /// `Stop` (the model answered without calls): a reason to go on, when a hook blocks.
    pub(crate) fn stop(&mut self, active: bool) -> Option<String> {
        let mut p = self.payload();
        p.stop_hook_active = Some(active);
        self.fire(HookEvent::Stop, &p).block
    }

    /// The model answered without calls: `Stop`, and when the turn does end (no `Stop` hook
    /// makes it go on), `Notification` `idle_prompt`. A reason to go on, when a hook blocks
    /// (`active`: the turn already went on once for a `Stop` hook, and does not again).
    pub(crate) fn turn_end(&mut self, active: bool) -> Option<String> {
        let go_on = self.stop(active);
        if go_on.is_none() || active {
            self.notify(
                "idle_prompt",
                "the turn is done: neocode waits for your next message",
            );
        }
        go_on
    }

    /// `PreCompact` with trigger `auto` (the context window filled).
    pub(crate) fn pre_compact(&mut self) {
        let mut p = self.payload();
        p.trigger = Some("auto".into());
        self.fire(HookEvent::PreCompact, &p);
    }

    /// `Notification` (`permission_prompt`: a call waits for the user).
    pub(crate) fn notify(&mut self, kind: &str, message: &str) {
        let mut p = self.payload();
        p.notification_type = Some(kind.to_string());
        p.message = Some(message.to_string());
        self.fire(HookEvent::Notification, &p);
    }

    /// Decides `call`: rules (with the session's `grants`), then `PreToolUse` hooks, then
    /// `policy` (the approval policy's reason to ask, `None` when it lets the call run).
    pub(crate) fn decide(
        &mut self,
        call: &ToolCall,
        grants: &[String],
        policy: impl FnOnce() -> Option<String>,
    ) -> Gated {
        let args = arguments(call);
        let rules = self.rules.with_session_grants(grants);
        let d = rules.decide(&call.name, &args);
        if d.verdict == Verdict::Deny
            && let Some(r) = &d.rule
        {
            return Gated::Deny {
                permission: Permission::of_rule(false, r),
                text: format!("Denied by the permission rule `{}`.", r.text),
            };
        }
        let mut p = self.payload();
        p.tool_name = Some(call.name.clone());
        p.tool_input = Some(args);
        let hook = self.fire(HookEvent::PreToolUse, &p);
        let hook_decision = hook.permission.clone();
        if let Some(reason) = hook.block.or_else(|| match &hook_decision {
            Some((PermissionDecision::Deny, why)) => {
                Some(why.clone().unwrap_or_else(|| "denied by a hook".into()))
            }
            _ => None,
        }) {
            return Gated::Deny {
                permission: Permission::new(false, "hook", Some(reason.clone())),
                text: format!("Denied by a PreToolUse hook: {reason}"),
            };
        }
        // A part the shell grammar cannot account for keeps the rules from allowing the
        // command: the policy decides (and says why when it asks).
        let unknown = match (&d.verdict, &d.rule, &d.reason) {
            (Verdict::Ask, None, Some(why)) => Some(why.clone()),
            _ => None,
        };
        match d.verdict {
            Verdict::Ask if unknown.is_none() => {
                return Gated::Ask {
                    reason: match &d.rule {
                        Some(r) => format!("the rule `{}` asks ({})", r.text, where_(r)),
                        None => "a rule asks".into(),
                    },
                    rules_can_allow: false,
                };
            }
            _ if matches!(hook_decision, Some((PermissionDecision::Ask, _))) => {
                let why = hook_decision.and_then(|(_, w)| w);
                return Gated::Ask {
                    reason: format!(
                        "a PreToolUse hook asks{}",
                        why.map(|w| format!(": {w}")).unwrap_or_default()
                    ),
                    rules_can_allow: false,
                };
            }
            Verdict::Allow => {
                if let Some(r) = &d.rule {
                    return Gated::Run(Permission::of_rule(true, r));
                }
            }
            Verdict::Ask | Verdict::Deny | Verdict::Default => {}
        }
        if let Some((PermissionDecision::Allow, why)) = hook_decision {
            return Gated::Run(Permission::new(true, "hook", why));
        }
        match (policy(), unknown) {
            (Some(reason), Some(why)) => Gated::Ask {
                reason: format!("{reason}; no rule can allow it: {why}"),
                rules_can_allow: false,
            },
            (Some(reason), None) => Gated::Ask {
                reason,
                rules_can_allow: true,
            },
            (None, _) => Gated::Run(Permission::new(true, "policy", None)),
        }
    }

    /// The rules whose read denials `grep` and `list_dir` honour while they walk.
    pub(crate) fn read_rules(&self) -> std::sync::Arc<Rules> {
        std::sync::Arc::new(self.rules.clone())
    }

    /// The rules an "always" answer proposes for `call` with the session's `grants`: one
    /// per part of a command that nothing allows yet (`cargo test *` for `cargo test -p
    /// core`), a folder or glob for a file tool ([`Rules::propose`]). Empty when no rule can
    /// allow the call (`rules_can_allow` false, or a part the shell grammar cannot account
    /// for): no "always" is offered then.
    pub(crate) fn propose(
        &self,
        call: &ToolCall,
        grants: &[String],
        rules_can_allow: bool,
    ) -> Vec<String> {
        if !rules_can_allow {
            return Vec::new();
        }
        self.rules
            .with_session_grants(grants)
            .propose(&call.name, &arguments(call))
    }

    /// Keeps `rules` at `scope`: session grants (pushed to `grants`) or lines in the
    /// workspace's or the home's rule file, written at once (and read again). Every rule is
    /// checked first: when one does not parse none is kept, and `Err` says why (the call
    /// still runs once).
    ///
    /// The workspace's file is the user's own change: when the workspace was trusted (or
    /// declared nothing) before, the trust record is refreshed so it is not asked about.
    /// When it was not trusted, its allow rules are not used: the rules are kept in the file
    /// and as session grants too, and a notice says so.
    pub fn keep(
        &mut self,
        rules: &[String],
        scope: RuleScope,
        grants: &mut Vec<String>,
    ) -> Result<(), KeepError> {
        for rule in rules {
            permissions::parse_rule(rule, &self.root, None)?;
        }
        let grant = |grants: &mut Vec<String>| {
            for rule in rules {
                let rule = rule.trim();
                if !grants.iter().any(|g| g == rule) {
                    grants.push(rule.to_string());
                }
            }
        };
        let file = match scope {
            RuleScope::Session => {
                grant(grants);
                return Ok(());
            }
            RuleScope::Workspace => Rules::workspace_file(&self.root),
            RuleScope::Everywhere => Rules::home_file(&self.home),
        };
        if scope == RuleScope::Everywhere {
            permissions::append_rules(&file, List::Allow, rules)?;
        } else if !self.admit.write_workspace_rules(&file, rules)? {
            grant(grants);
            let shown: Vec<String> = rules.iter().map(|r| format!("`{}`", r.trim())).collect();
            self.notices.push(format!(
                "{} written to {}, but this workspace's allow rules are not used until you trust it (`neocode trust`); kept for this session",
                shown.join(", "),
                file.display()
            ));
        }
        self.rules = self.admit.rules()?;
        Ok(())
    }
}

fn where_(r: &RuleRef) -> String {
    if r.file == Path::new(SESSION_SOURCE) {
        SESSION_SOURCE.to_string()
    } else {
        format!("{}:{}", r.file.display(), r.line)
    }
}

/// A call's arguments as JSON (`null` when they do not parse).
fn arguments(call: &ToolCall) -> Value {
    serde_json::from_str(&call.arguments).unwrap_or(Value::Null)
}

/// `meta` with the hook `runs` added under `hooks` (an object is made when `meta` is none).
pub(crate) fn with_hook_runs(meta: Option<Value>, runs: Vec<HookRun>) -> Option<Value> {
    if runs.is_empty() {
        return meta;
    }
    let mut meta = match meta {
        Some(Value::Object(m)) => m,
        Some(other) => {
            let mut m = serde_json::Map::new();
            m.insert("value".into(), other);
            m
        }
        None => serde_json::Map::new(),
    };
    let list = meta
        .entry("hooks")
        .or_insert_with(|| Value::Array(Vec::new()));
    if let Value::Array(a) = list {
        a.extend(runs.iter().filter_map(|r| serde_json::to_value(r).ok()));
    }
    Some(Value::Object(meta))
}

/// `meta` with `permission` set.
pub(crate) fn with_permission(meta: Option<Value>, p: &Permission) -> Value {
    let mut m = match meta {
        Some(Value::Object(m)) => m,
        _ => serde_json::Map::new(),
    };
    if let Ok(v) = serde_json::to_value(p) {
        m.insert("permission".into(), v);
    }
    Value::Object(m)
}

/// The text parts a prompt carries for the context hooks added (`additionalContext`, or a
/// `SessionStart` / `UserPromptSubmit` hook's plain output), each marked as a hook's.
pub(crate) fn context_parts(context: &[String]) -> Vec<crate::session::Part> {
    context
        .iter()
        .filter(|c| !c.trim().is_empty())
        .map(|c| crate::session::Part::text(format!("[context from a hook]\n{}", c.trim())))
        .collect()
}
