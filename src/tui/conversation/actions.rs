//! The conversation's own actions (from the keymap, the mouse or a card's held answer):
//! answering cards, cancelling, sending. The router's actions (moving, opening, the
//! browse screen's) stay with the router, which hands these here.

use super::Conversation;
use crate::runtime::agent::TurnCommand;
use crate::tui::action::Action;
use crate::tui::dialog::{Confirm, Overlay};
use crate::tui::seam::{Ask, Ctx};

impl Conversation {
    /// Applies one of the conversation's actions; any other does nothing here.
    pub(crate) fn act(&mut self, action: Action, ctx: &mut Ctx<'_>) -> Vec<Ask> {
        match action {
            Action::Approve => self.reply_to_call(true, false, None, ctx),
            Action::ApproveAlways => self.ask_always_rule(ctx),
            Action::Deny => self.reply_to_call(false, false, None, ctx),
            Action::DenyWhy => self.ask_deny_reason(ctx),
            Action::Cancel => self.cancel_turn(ctx),
            Action::PlanRun => Conversation::answer_plan(TurnCommand::ApprovePlan, ctx),
            Action::PlanReject => Conversation::answer_plan(TurnCommand::RejectPlan, ctx),
            Action::PlanDrop => Conversation::plan_drop(ctx),
            Action::Leave => {
                *ctx.overlay = Overlay::Confirm(Confirm::Leave);
                Vec::new()
            }
            Action::Rerun => self.rerun_interrupted(ctx),
            Action::MarkInterrupted => Conversation::mark_interrupted(ctx),
            Action::Submit => self.submit(ctx),
            Action::Steer => self.steer(ctx),
            Action::EditQueued => self.edit_queued(ctx),
            Action::PasteImage => {
                self.paste_image(ctx);
                Vec::new()
            }
            Action::EditDraft => {
                // The loop owns the terminal: it runs the editor before the next frame.
                self.editor.ask_edit();
                Vec::new()
            }
            _ => Vec::new(),
        }
    }
}
