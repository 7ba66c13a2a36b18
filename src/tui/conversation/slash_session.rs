//! Slash commands about the session itself: `/rename`, `/plan`.

use super::Conversation;
use super::commands::parse_plan_args;
use crate::session::StepStatus;
use crate::tui::seam::{Ask, Ctx};
use crate::tui::worker::Request;

impl Conversation {
    /// `/rename TITLE`.
    pub(super) fn slash_rename(open: Option<String>, arg: &str, ctx: &mut Ctx<'_>) -> Vec<Ask> {
        let Some(id) = open else {
            return ctx.refuse("/rename: send a first message, then the session can be renamed.");
        };
        if arg.is_empty() {
            return ctx.refuse("/rename needs the new title: /rename TITLE");
        }
        vec![Ask::Request(Request::Rename {
            id,
            title: arg.to_string(),
        })]
    }

    /// `/undo`: the files the last turn changed go back (the worker carries it out).
    pub(super) fn slash_undo(&self, open: Option<String>, ctx: &mut Ctx<'_>) -> Vec<Ask> {
        if self.turn_active() {
            return ctx.refuse("/undo: wait for the turn to end first.");
        }
        let Some(id) = open else {
            return ctx.refuse("/undo: this session has no turn yet.");
        };
        vec![Ask::Request(Request::UndoTurn { id })]
    }

    /// `/plan [--width N] [--retry-failed] [GOAL]`: drafts and runs a plan, or resumes the open session's.
    pub(super) fn slash_plan(&mut self, arg: &str, ctx: &mut Ctx<'_>) -> Vec<Ask> {
        if self.turn_active() {
            return ctx.refuse("/plan: wait for the turn to end first.");
        }
        if let Some(why) = self.needs_model("/plan") {
            return ctx.refuse(why);
        }
        let (opts, goal) = match parse_plan_args(arg) {
            Ok(p) => p,
            Err(m) => {
                return ctx.refuse(m);
            }
        };
        if !goal.is_empty() {
            if opts.retry_failed {
                return ctx.refuse(
                    "/plan --retry-failed resumes the open session's plan run: leave out the goal",
                );
            }
            return self.start_plan(Some(goal.to_string()), opts, ctx);
        }
        // No goal: the open session's plan run goes on where it stopped.
        let unfinished = ctx.detail().is_some_and(|d| {
            d.header
                .as_ref()
                .and_then(|h| h.plan.as_ref())
                .is_some_and(|p| {
                    p.steps
                        .iter()
                        .any(|s| d.progress.statuses.get(&s.id) != Some(&StepStatus::Completed))
                })
        });
        if unfinished && !self.draft {
            ctx.say(if opts.retry_failed {
                "Resuming the plan run, failed steps again… Esc cancels."
            } else {
                "Resuming the plan run… Esc cancels."
            });
            return self.start_plan(None, opts, ctx);
        }
        if opts.retry_failed {
            return ctx.refuse("/plan --retry-failed: this session has no unfinished plan run");
        }
        ctx.fail("/plan needs a goal: /plan add a --json flag to the CLI");
        Vec::new()
    }
}
