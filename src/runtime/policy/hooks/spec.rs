//! The hooks file's format (Claude Code's): events, matchers, commands and their timeouts, the
//! JSON a hook reads on stdin and what its run decided; [`parse_hooks`] reads one file.

use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use regex::Regex;
use serde::{Deserialize, Deserializer, Serialize};

/// A hook's timeout when its entry has none (Claude Code's default).
pub(crate) const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

/// The events hooks can run at.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum HookEvent {
    SessionStart,
    UserPromptSubmit,
    PreToolUse,
    PostToolUse,
    Stop,
    PreCompact,
    Notification,
}

impl HookEvent {
    /// Every event, in the order above.
    pub(crate) const ALL: [HookEvent; 7] = [
        HookEvent::SessionStart,
        HookEvent::UserPromptSubmit,
        HookEvent::PreToolUse,
        HookEvent::PostToolUse,
        HookEvent::Stop,
        HookEvent::PreCompact,
        HookEvent::Notification,
    ];

    /// The name as written in hooks files (`PreToolUse`).
    pub(crate) fn name(self) -> &'static str {
        match self {
            HookEvent::SessionStart => "SessionStart",
            HookEvent::UserPromptSubmit => "UserPromptSubmit",
            HookEvent::PreToolUse => "PreToolUse",
            HookEvent::PostToolUse => "PostToolUse",
            HookEvent::Stop => "Stop",
            HookEvent::PreCompact => "PreCompact",
            HookEvent::Notification => "Notification",
        }
    }

    /// Parses a name as written in hooks files.
    pub(crate) fn parse(s: &str) -> Option<HookEvent> {
        HookEvent::ALL.into_iter().find(|e| e.name() == s)
    }

    /// Whether exit code 2 blocks the event's action (elsewhere it is an error shown to the
    /// user: the session has started, the compaction and the notification happen anyway).
    pub(crate) fn can_block(self) -> bool {
        matches!(
            self,
            HookEvent::UserPromptSubmit
                | HookEvent::PreToolUse
                | HookEvent::PostToolUse
                | HookEvent::Stop
        )
    }
}

impl fmt::Display for HookEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A matcher: an anchored regular expression, or every value.
#[derive(Debug, Clone)]
pub struct Matcher {
    /// As written.
    pub text: String,
    regex: Option<Regex>,
}

/// A matcher that is not a regular expression.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("matcher `{text}` is not a valid regular expression: {message}")]
pub(crate) struct MatcherError {
    text: String,
    /// The regex parser's words.
    message: String,
}

impl Matcher {
    /// Compiles a matcher (empty or `*`: everything).
    pub(crate) fn new(text: &str) -> Result<Matcher, MatcherError> {
        let t = text.trim();
        if t.is_empty() || t == "*" {
            return Ok(Matcher {
                text: text.to_string(),
                regex: None,
            });
        }
        let regex = Regex::new(&format!("^(?:{t})$")).map_err(|e| MatcherError {
            text: t.to_string(),
            message: e.to_string(),
        })?;
        Ok(Matcher {
            text: text.to_string(),
            regex: Some(regex),
        })
    }

    /// Whether `value` (a tool name, a source…) matches.
    pub(crate) fn matches(&self, value: &str) -> bool {
        self.regex.as_ref().is_none_or(|r| r.is_match(value))
    }
}

impl<'de> Deserialize<'de> for Matcher {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Matcher, D::Error> {
        let s = String::deserialize(d)?;
        Matcher::new(&s).map_err(serde::de::Error::custom)
    }
}

/// One hook command.
#[derive(Debug, Clone)]
pub struct HookCommand {
    pub event: HookEvent,
    pub matcher: Matcher,
    /// The shell command (`sh -c`).
    pub command: String,
    pub timeout: Duration,
    /// The file it is configured in.
    pub file: PathBuf,
    /// It came from Claude Code (`"payload": "claude-code"`): it is sent Claude Code's tool
    /// names and input fields (`Bash`, `tool_input.file_path`), and its matcher also matches
    /// Claude Code's name of the tool.
    pub claude_code: bool,
}

/// Which names a hook is sent (`"payload"` in its entry).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
enum PayloadNames {
    /// neocode's (`run_command`, `tool_input.path`).
    #[default]
    #[serde(rename = "neocode")]
    Neocode,
    /// Claude Code's (`Bash`, `tool_input.file_path`).
    #[serde(rename = "claude-code")]
    ClaudeCode,
}

#[derive(Deserialize)]
#[serde(rename_all = "lowercase")]
enum HookType {
    Command,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct HookSpec {
    #[serde(rename = "type")]
    #[allow(dead_code)]
    kind: HookType,
    command: String,
    #[serde(default, deserialize_with = "timeout_secs")]
    timeout: Option<Duration>,
    #[serde(default)]
    payload: PayloadNames,
}

fn timeout_secs<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
    let secs = f64::deserialize(d)?;
    if !(secs > 0.0 && secs <= 86_400.0) {
        return Err(serde::de::Error::custom(format!(
            "timeout must be between 0 and 86400 seconds, not {secs}"
        )));
    }
    Ok(Some(Duration::from_secs_f64(secs)))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct MatcherGroup {
    #[serde(default = "match_all")]
    matcher: Matcher,
    hooks: Vec<HookSpec>,
}

fn match_all() -> Matcher {
    Matcher {
        text: String::new(),
        regex: None,
    }
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct EventTable {
    #[serde(rename = "SessionStart", default)]
    session_start: Vec<MatcherGroup>,
    #[serde(rename = "UserPromptSubmit", default)]
    user_prompt_submit: Vec<MatcherGroup>,
    #[serde(rename = "PreToolUse", default)]
    pre_tool_use: Vec<MatcherGroup>,
    #[serde(rename = "PostToolUse", default)]
    post_tool_use: Vec<MatcherGroup>,
    #[serde(rename = "Stop", default)]
    stop: Vec<MatcherGroup>,
    #[serde(rename = "PreCompact", default)]
    pre_compact: Vec<MatcherGroup>,
    #[serde(rename = "Notification", default)]
    notification: Vec<MatcherGroup>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct HooksFile {
    #[serde(default)]
    hooks: EventTable,
}

/// A malformed hooks file (or one that cannot be read).
pub(crate) type HooksError = crate::runtime::policy::file_error::PolicyFileError;

/// What a hook is told: the JSON object on its stdin (Claude Code's field names). Fields
/// that do not apply to an event are left out.
#[derive(Debug, Clone, Default, Serialize)]
pub(crate) struct HookPayload {
    pub session_id: String,
    /// The workspace root (also the hook's working folder).
    pub cwd: String,
    /// Set by [`Hooks::run_hooks`](super::Hooks::run_hooks).
    pub hook_event_name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub transcript_path: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_input: Option<serde_json::Value>,
    /// `PostToolUse`: the tool's result.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_response: Option<serde_json::Value>,
    /// `UserPromptSubmit`: the prompt.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prompt: Option<String>,
    /// `SessionStart`: `startup`, `resume`, `clear`, `compact`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// `PreCompact`: `manual` or `auto`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trigger: Option<String>,
    /// `Notification`: what it says.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// `Notification`: `permission_prompt`, `idle_prompt`, …
    #[serde(skip_serializing_if = "Option::is_none")]
    pub notification_type: Option<String>,
    /// `Stop`: whether the turn already goes on because of a Stop hook.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stop_hook_active: Option<bool>,
}

impl HookPayload {
    /// A payload with the session and workspace filled in.
    pub(crate) fn new(session_id: &str, workspace: &Path) -> HookPayload {
        HookPayload {
            session_id: session_id.to_string(),
            cwd: workspace.display().to_string(),
            ..HookPayload::default()
        }
    }

    /// The value a matcher is matched against for `event`.
    pub(super) fn match_value(&self, event: HookEvent) -> Option<&str> {
        match event {
            HookEvent::PreToolUse | HookEvent::PostToolUse => self.tool_name.as_deref(),
            HookEvent::SessionStart => self.source.as_deref(),
            HookEvent::PreCompact => self.trigger.as_deref(),
            HookEvent::Notification => self.notification_type.as_deref(),
            HookEvent::UserPromptSubmit | HookEvent::Stop => None,
        }
    }
}

/// A permission decision from a `PreToolUse` hook's JSON.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum PermissionDecision {
    Deny,
    Ask,
    Allow,
}

/// One hook run, for the session transcript.
#[derive(Debug, Clone, Serialize)]
pub struct HookRun {
    pub event: HookEvent,
    pub command: String,
    /// The hooks file it came from.
    pub file: PathBuf,
    /// `None` when it was killed (timeout) or could not start.
    pub exit_code: Option<i32>,
    pub timed_out: bool,
    pub duration_ms: u64,
    /// The first [`OUTPUT_KEEP`](super::run::OUTPUT_KEEP) bytes of stdout (lossy UTF-8).
    pub stdout: String,
    /// The first [`OUTPUT_KEEP`](super::run::OUTPUT_KEEP) bytes of stderr.
    pub stderr: String,
    /// Whether stdout or stderr was longer than what is kept.
    pub output_cut: bool,
    /// It could not be started (`sh` missing, …).
    pub spawn_error: Option<String>,
}

/// What the hooks of one event decided.
#[derive(Debug, Clone, Default, Serialize)]
pub(crate) struct HookOutcome {
    /// Every run, in order.
    pub runs: Vec<HookRun>,
    /// The event's action is refused, with the reason for the model (exit 2's stderr, or
    /// the JSON's `reason`): `PreToolUse` denies the call, `UserPromptSubmit` refuses the
    /// prompt, `PostToolUse` feeds the reason to the model, `Stop` makes the turn go on.
    pub block: Option<String>,
    /// `PreToolUse`: the strongest `permissionDecision` (deny > ask > allow), with its reason.
    pub permission: Option<(PermissionDecision, Option<String>)>,
    /// Context to add for the model (`additionalContext`; for `UserPromptSubmit` and
    /// `SessionStart` also plain stdout of a hook that exits 0).
    pub additional_context: Vec<String>,
    /// Non-blocking errors to show the user (other exit codes, timeouts, start failures).
    pub errors: Vec<String>,
    /// Messages for the user (`systemMessage`).
    pub messages: Vec<String>,
    /// `"continue": false`: the session should stop, with this reason.
    pub stop: Option<String>,
}

/// Parses a hooks file's text.
pub(crate) fn parse_hooks(src: &str, file: &Path) -> Result<Vec<HookCommand>, HooksError> {
    let parsed: HooksFile = serde_json::from_str(src).map_err(|e| HooksError {
        file: file.to_path_buf(),
        line: e.line(),
        message: strip_position(&e.to_string()),
    })?;
    let t = parsed.hooks;
    let mut out = Vec::new();
    for (event, groups) in [
        (HookEvent::SessionStart, t.session_start),
        (HookEvent::UserPromptSubmit, t.user_prompt_submit),
        (HookEvent::PreToolUse, t.pre_tool_use),
        (HookEvent::PostToolUse, t.post_tool_use),
        (HookEvent::Stop, t.stop),
        (HookEvent::PreCompact, t.pre_compact),
        (HookEvent::Notification, t.notification),
    ] {
        for g in groups {
            for h in g.hooks {
                out.push(HookCommand {
                    event,
                    matcher: g.matcher.clone(),
                    command: h.command,
                    timeout: h.timeout.unwrap_or(DEFAULT_TIMEOUT),
                    file: file.to_path_buf(),
                    claude_code: h.payload == PayloadNames::ClaudeCode,
                });
            }
        }
    }
    Ok(out)
}

/// serde_json's message without its trailing ` at line L column C` (the line is said apart).
fn strip_position(msg: &str) -> String {
    match msg.rfind(" at line ") {
        Some(i) => msg[..i].to_string(),
        None => msg.to_string(),
    }
}
