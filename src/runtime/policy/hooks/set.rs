//! The hooks in force for a workspace and a home, and running those that match an event.

use std::path::{Path, PathBuf};

use super::spec::{HookCommand, HookEvent, HookOutcome, HookPayload, HooksError, parse_hooks};
use super::{claude, run};
use crate::runtime::policy::file_error::read_optional;

/// The hooks of a workspace and a home.
#[derive(Debug, Clone, Default)]
pub struct Hooks {
    commands: Vec<HookCommand>,
    root: PathBuf,
    files: Vec<PathBuf>,
}

impl Hooks {
    /// `<workspace>/.neocode/hooks.json`.
    pub(crate) fn workspace_file(workspace: &Path) -> PathBuf {
        workspace.join(".neocode").join("hooks.json")
    }

    /// `<home>/hooks.json`.
    pub(crate) fn home_file(home: &Path) -> PathBuf {
        home.join("hooks.json")
    }

    /// Reads both files (each may be absent); a malformed one is an error with its line.
    /// Whether the workspace is trusted is not asked here: turns and the commands that show
    /// or run hooks load them through `crate::runtime::trust::Admission`, which leaves out
    /// the hooks of a workspace the user has not trusted.
    #[cfg(test)]
    pub(crate) fn load(home: &Path, workspace: &Path) -> Result<Hooks, HooksError> {
        let file = Hooks::workspace_file(workspace);
        let src = read_optional(&file)?;
        Hooks::load_from(home, workspace, src.as_deref())
    }

    /// The home's hooks and, when `workspace_src` is given, the workspace file's (its text:
    /// what was hashed is what runs); `None` leaves the workspace's hooks out.
    pub(crate) fn load_from(
        home: &Path,
        workspace: &Path,
        workspace_src: Option<&str>,
    ) -> Result<Hooks, HooksError> {
        let mut hooks = Hooks {
            commands: Vec::new(),
            root: workspace.to_path_buf(),
            files: Vec::new(),
        };
        if let Some(src) = workspace_src {
            let file = Hooks::workspace_file(workspace);
            hooks.commands.extend(parse_hooks(src, &file)?);
            hooks.files.push(file);
        }
        let file = Hooks::home_file(home);
        if let Some(src) = read_optional(&file)? {
            hooks.commands.extend(parse_hooks(&src, &file)?);
            hooks.files.push(file);
        }
        Ok(hooks)
    }

    /// Adds the hooks of a hooks file's text `src` (an enabled plugin's, which the caller
    /// reads), after those already there; `file` is where they are said to come from.
    pub(crate) fn add(&mut self, src: &str, file: &Path) -> Result<(), HooksError> {
        self.commands.extend(parse_hooks(src, file)?);
        if !self.files.iter().any(|f| f == file) {
            self.files.push(file.to_path_buf());
        }
        Ok(())
    }

    /// Every configured hook command.
    pub fn commands(&self) -> &[HookCommand] {
        &self.commands
    }

    /// The files read.
    pub(crate) fn files(&self) -> &[PathBuf] {
        &self.files
    }

    /// Whether any hook is configured for `event`.
    pub(crate) fn has(&self, event: HookEvent) -> bool {
        self.commands.iter().any(|c| c.event == event)
    }

    /// Runs the hooks of `event` that match `payload`, one after the other, and combines
    /// what they decided.
    pub(crate) fn run_hooks(&self, event: HookEvent, payload: &HookPayload) -> HookOutcome {
        let mut payload = payload.clone();
        payload.hook_event_name = event.name().to_string();
        if payload.cwd.is_empty() {
            payload.cwd = self.root.display().to_string();
        }
        let stdin = serde_json::to_vec(&payload).unwrap_or_default();
        // What hooks from Claude Code are sent, made once when one of them runs.
        let mut claude_stdin: Option<Vec<u8>> = None;
        let value = payload.match_value(event);
        let tool_event = matches!(event, HookEvent::PreToolUse | HookEvent::PostToolUse);
        let mut outcome = HookOutcome::default();
        for c in self.commands.iter().filter(|c| {
            c.event == event
                && value.is_none_or(|v| {
                    c.matcher.matches(v)
                        || (c.claude_code
                            && tool_event
                            && claude::claude_names(v).any(|n| c.matcher.matches(n)))
                })
        }) {
            let stdin = if c.claude_code {
                claude_stdin.get_or_insert_with(|| {
                    serde_json::to_vec(&claude::claude_code_payload(&payload, &self.root))
                        .unwrap_or_default()
                })
            } else {
                &stdin
            };
            let r = run::run_one(c, &self.root, stdin);
            run::interpret(event, &r, &mut outcome);
            outcome.runs.push(r);
        }
        outcome
    }
}
