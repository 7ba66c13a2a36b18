//! Slash commands about the session itself: `/rename`, `/plan`.

use super::App;
use crate::sanitize;
use crate::session::StepStatus;
use crate::tui::conversation::commands::parse_plan_args;
use crate::tui::effect::Effect;
use crate::tui::worker::Request;

impl App {
    /// `/rename TITLE`.
    pub(super) fn slash_rename(&mut self, open: Option<String>, arg: &str) -> Vec<Effect> {
        let Some(id) = open else {
            self.fail("/rename: send a first message, then the session can be renamed.");
            return Vec::new();
        };
        if arg.is_empty() {
            self.fail("/rename needs the new title: /rename TITLE");
            return Vec::new();
        }
        vec![self.ask(
            None,
            Request::Rename {
                id,
                title: arg.to_string(),
            },
        )]
    }

    /// `/plan [--width N] [--retry-failed] [GOAL]`: drafts and runs a plan, or resumes the open session's.
    pub(super) fn slash_plan(&mut self, arg: &str) -> Vec<Effect> {
        if self.turn_active() {
            self.fail("/plan: wait for the turn to end first.");
            return Vec::new();
        }
        if let Err(m) = &self.conv.agent.provider {
            let m = sanitize::line(m).into_owned();
            self.fail(format!("/plan needs a model: {m}"));
            return Vec::new();
        }
        let (opts, goal) = match parse_plan_args(arg) {
            Ok(p) => p,
            Err(m) => {
                self.fail(m);
                return Vec::new();
            }
        };
        if !goal.is_empty() {
            if opts.retry_failed {
                self.fail(
                    "/plan --retry-failed resumes the open session's plan run: leave out the goal",
                );
                return Vec::new();
            }
            return self.start_plan(Some(goal.to_string()), opts);
        }
        // No goal: the open session's plan run goes on where it stopped.
        let unfinished = self.browse.detail.as_ref().is_some_and(|d| {
            d.header
                .as_ref()
                .and_then(|h| h.plan.as_ref())
                .is_some_and(|p| {
                    p.steps
                        .iter()
                        .any(|s| d.progress.statuses.get(&s.id) != Some(&StepStatus::Completed))
                })
        });
        if unfinished && !self.conv.draft {
            self.say(if opts.retry_failed {
                "Resuming the plan run, failed steps again… Esc cancels."
            } else {
                "Resuming the plan run… Esc cancels."
            });
            return self.start_plan(None, opts);
        }
        if opts.retry_failed {
            self.fail("/plan --retry-failed: this session has no unfinished plan run");
            return Vec::new();
        }
        self.fail("/plan needs a goal: /plan add a --json flag to the CLI");
        Vec::new()
    }
}
