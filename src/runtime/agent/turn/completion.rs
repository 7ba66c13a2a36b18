//! A completion in the ledger and the transcript: its usage and cost, and its stored form.

use super::{Flow, Turn, store_failed};
use crate::runtime::agent::events::TurnEvent;
use crate::runtime::agent::ledger;
use crate::runtime::provider::{Completion, ErrorKind};
use crate::session::{NewMessage, Part, Role};
use serde_json::{Value, json};

impl Turn {
    /// Cache tokens (kept apart) and the dollars of one model call, in the ledger; a model
    /// without a price adds no dollars.
    pub(super) fn add_detail(&mut self, c: &Completion) {
        let u = &mut self.state.ledger.usage;
        u.cached_input_tokens += c.detail.cached_input_tokens;
        u.cache_write_tokens += c.detail.cache_write_tokens;
        if let Some(cost) =
            self.ctx
                .settings
                .prices
                .cost(self.io.provider.model(), c.usage, c.detail)
        {
            *u.cost_usd.get_or_insert(0.0) += cost;
        }
    }

    /// Stores what arrived of a reply that stopped early (tool calls of an unfinished reply
    /// are dropped: their arguments may be cut).
    pub(super) fn store_partial(&mut self, c: &Completion, kind: ErrorKind) -> Flow {
        ledger::add_model_call(&mut self.state.ledger, c.usage);
        self.add_detail(c);
        if let Some(b) = &self.state.budget {
            b.add_tokens(c.usage);
        }
        self.state.usage.input_tokens += c.usage.input_tokens;
        self.state.usage.output_tokens += c.usage.output_tokens;
        if c.text.is_empty() && c.reasoning.is_empty() {
            return self
                .io
                .sessions
                .update_state(&self.ctx.session_id, &self.update(None))
                .map_err(store_failed);
        }
        let meta = json!({
            "incomplete": true,
            "reason": kind.code(),
            "dropped_tool_calls": c.tool_calls.len(),
        });
        let seq = self.append(assistant_message(c, Some(meta)), self.update(None))?;
        self.emit(TurnEvent::AssistantStored {
            seq,
            usage: c.usage,
        });
        Ok(())
    }
}

/// The stored form of a completion: reasoning (with what replaying it needs), then text;
/// tool calls; usage with its cache and reasoning counts (marked `usage_estimated` in the
/// metadata when the server reported none); a stop reason that cut it short. `incomplete`:
/// the metadata of a reply that stopped early (its calls are dropped).
pub(super) fn assistant_message(c: &Completion, incomplete: Option<Value>) -> NewMessage {
    let cut = incomplete.is_some();
    let mut meta = incomplete;
    if !cut && !c.tool_calls.is_empty() {
        // This store received these calls from the model: they may be replayed after a crash.
        let m = meta.get_or_insert_with(|| json!({}));
        m[crate::session::CALLS_FROM] = json!("model");
    }
    if c.usage_estimated {
        let m = meta.get_or_insert_with(|| json!({}));
        m["usage_estimated"] = Value::Bool(true);
    }
    if let Some(stop) = &c.stop {
        let m = meta.get_or_insert_with(|| json!({}));
        m["stop_reason"] = json!(stop.code());
    }
    let mut parts = Vec::new();
    if !c.reasoning_items.is_empty() {
        parts.extend(c.reasoning_items.iter().map(|r| Part::Reasoning {
            text: r.text.clone(),
            replay: r.replay.clone(),
        }));
    } else if !c.reasoning.is_empty() {
        parts.push(Part::reasoning(c.reasoning.clone()));
    }
    if !c.text.is_empty() {
        parts.push(Part::text(c.text.clone()));
    }
    NewMessage {
        role: Some(Role::Assistant),
        parts,
        tool_calls: if cut {
            Vec::new()
        } else {
            c.tool_calls.clone()
        },
        is_error: cut,
        tool_metadata: meta,
        usage: c.usage,
        extra: crate::session::MessageExtra {
            tokens: c.detail,
            ..crate::session::MessageExtra::default()
        },
        ..NewMessage::default()
    }
}
