//! Slash commands that steer the agent: `/compact`, `/model`, `/approve`, `/skill`.

use super::Conversation;
use crate::runtime::config::ApprovalPolicy;
use crate::sanitize;
use crate::tui::effect::{Effect, TurnEffect};
use crate::tui::seam::{Ask, Ctx};

impl Conversation {
    /// Why `command` cannot run, when no model is configured.
    pub(super) fn needs_model(&self, command: &str) -> Option<String> {
        let m = self.agent.provider().as_ref().err()?;
        Some(format!(
            "{command} needs a model: {}",
            sanitize::line(m.as_str())
        ))
    }

    /// `/compact`: the model summarises the transcript now.
    pub(super) fn slash_compact(&mut self, open: Option<String>, ctx: &mut Ctx<'_>) -> Vec<Ask> {
        let Some(id) = open else {
            return ctx.refuse("/compact: this session has nothing to compact yet.");
        };
        if self.turn_active() {
            return ctx.refuse("/compact: wait for the turn to end (or Esc to cancel it).");
        }
        if let Some(why) = self.needs_model("/compact") {
            return ctx.refuse(why);
        }
        // Compaction starts from a clean live cell.
        self.turn.drop_finished();
        ctx.say("Compacting… (the model writes a summary)");
        vec![Ask::Effect(Effect::Turn(TurnEffect::Compact {
            session_id: id,
        }))]
    }

    /// `/model [NAME]`: shows the model, or switches this session's (a new session's: the agent's).
    pub(super) fn slash_model(
        &mut self,
        open: Option<String>,
        arg: &str,
        ctx: &mut Ctx<'_>,
    ) -> Vec<Ask> {
        if arg.is_empty() {
            match &self.next_model(ctx.detail()) {
                Ok(m) => {
                    let m = sanitize::line(m.as_str()).into_owned();
                    ctx.say(format!(
                        "Model: {m}. Asking the server which models it offers… (/model NAME switches)"
                    ));
                }
                Err(e) => {
                    let e = sanitize::line(e.as_str()).into_owned();
                    return ctx.refuse(e);
                }
            }
            return vec![Ask::Effect(Effect::Turn(TurnEffect::Models))];
        }
        if self.turn_active() {
            return ctx.refuse("/model: wait for the turn to end first.");
        }
        let shown = sanitize::line(arg).into_owned();
        match open.filter(|_| !self.draft) {
            Some(id) => {
                // Kept with the session (its header), so a restart keeps it too.
                self.agent.switch_session(id.clone(), arg.to_string());
                ctx.say(format!("This session's next turns use {shown}."));
                vec![Ask::Effect(Effect::Turn(TurnEffect::Model {
                    session_id: Some(id),
                    name: arg.to_string(),
                }))]
            }
            None => {
                self.agent.switch_agent(arg.to_string());
                ctx.say(format!("The new session uses {shown}."));
                vec![Ask::Effect(Effect::Turn(TurnEffect::Model {
                    session_id: None,
                    name: arg.to_string(),
                }))]
            }
        }
    }

    /// `/provider [NAME]`: lists the profiles, or switches the next turns to one (the open
    /// session takes its model, kept with the session, as `/model` keeps one).
    pub(super) fn slash_provider(
        &self,
        open: Option<String>,
        arg: &str,
        ctx: &mut Ctx<'_>,
    ) -> Vec<Ask> {
        if !arg.is_empty() && self.turn_active() {
            return ctx.refuse("/provider: wait for the turn to end first.");
        }
        vec![Ask::Effect(Effect::Turn(TurnEffect::Provider {
            session_id: open.filter(|_| !self.draft),
            name: (!arg.is_empty()).then(|| arg.to_string()),
        }))]
    }

    /// A model picked from the server's list (`/model` without a name): as `/model NAME`.
    pub(crate) fn pick_model(&mut self, name: &str, ctx: &mut Ctx<'_>) -> Vec<Ask> {
        let open = ctx.open_id();
        self.slash_model(open, name, ctx)
    }

    /// The server's models arrived (one a line): the picker opens on the model in use.
    pub(super) fn models_listed(&self, names: &str, ctx: &mut Ctx<'_>) {
        let names: Vec<String> = names
            .lines()
            .filter(|n| !n.trim().is_empty())
            .map(|n| sanitize::line(n).into_owned())
            .collect();
        if names.is_empty() {
            ctx.say("The server lists no models: /model NAME switches to one by name.");
            return;
        }
        let current = self.next_model(ctx.detail()).ok();
        let selected = names
            .iter()
            .position(|n| Some(n) == current.as_ref())
            .unwrap_or(0);
        let keeps = current.map_or("the model".to_string(), |m| sanitize::line(&m).into_owned());
        ctx.say(format!(
            "{} models: ↑↓ choose, Enter switches, Esc keeps {keeps}.",
            names.len()
        ));
        *ctx.overlay = crate::tui::dialog::Overlay::Models { names, selected };
    }

    /// `/approve network`: this session's commands may use the network.
    pub(super) fn slash_allow_network(&self, open: Option<String>, ctx: &mut Ctx<'_>) -> Vec<Ask> {
        let Some(id) = open else {
            return ctx.refuse("/approve network: send a first message, then allow the network.");
        };
        if self.turn_active() {
            return ctx.refuse("/approve network: wait for the turn to end (or Esc to cancel it).");
        }
        vec![Ask::Effect(Effect::Turn(TurnEffect::AllowNetwork {
            session_id: id,
        }))]
    }

    /// `/skill [NAME]`: lists the skills, or activates one in this session.
    pub(super) fn slash_skill(
        &self,
        open: Option<String>,
        arg: &str,
        ctx: &mut Ctx<'_>,
    ) -> Vec<Ask> {
        if !arg.is_empty() && open.is_none() {
            return ctx.refuse("/skill NAME: send a first message, then activate a skill.");
        }
        if !arg.is_empty() && self.turn_active() {
            return ctx.refuse("/skill: wait for the turn to end (or Esc to cancel it).");
        }
        vec![Ask::Effect(Effect::Turn(TurnEffect::Skill {
            session_id: open,
            name: (!arg.is_empty()).then(|| arg.to_string()),
        }))]
    }

    /// `/approve [POLICY]`: shows or sets the approval policy of the next turns.
    pub(super) fn slash_approve(&mut self, arg: &str, ctx: &mut Ctx<'_>) -> Vec<Ask> {
        if arg.is_empty() {
            ctx.say(format!(
                "Approval policy: {} (ask: edits and commands ask; auto-edit: commands ask; never-ask). /approve POLICY sets it.",
                self.approval().as_str()
            ));
            return Vec::new();
        }
        match ApprovalPolicy::parse(arg) {
            Some(p) => {
                self.agent.set_policy(p);
                ctx.say(format!(
                    "Approval policy of the next turns: {}.",
                    p.as_str()
                ));
            }
            None => ctx.fail(format!(
                "/approve: `{}` is not one of ask, auto-edit, never-ask",
                sanitize::line(arg)
            )),
        }
        Vec::new()
    }
}
