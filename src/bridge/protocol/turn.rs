//! Turn events in the wire's terms: each [`TurnEvent`] as the [`Event`]s a front end reads.

use serde_json::Value;

use super::wire::Event;
use crate::runtime::agent::plan::SKIPPED;
use crate::runtime::agent::{FinishReason, TurnEvent, WarningCode};
use crate::runtime::tools::ToolKind;
use crate::session::{StepFailure, ToolCall, Usage};

fn kind_str(k: ToolKind) -> &'static str {
    match k {
        ToolKind::Read => "read",
        ToolKind::Edit => "edit",
        ToolKind::Command => "command",
        ToolKind::Fetch => "fetch",
        ToolKind::Plan => "plan",
        ToolKind::Agent => "agent",
    }
}

/// A turn event as wire events: one each, except a failed finish (an `error` first) and a
/// plan step's event (its sub-turn's events, each with the step's `step_id`: see
/// [`turn_lines`]).
fn turn_events(e: &TurnEvent) -> Vec<Event> {
    let one = match e {
        TurnEvent::Started { session_id } => Event::TurnStarted {
            session_id: session_id.clone(),
        },
        TurnEvent::TextDelta(t) => Event::TextDelta { text: t.clone() },
        TurnEvent::ReasoningDelta(t) => Event::ReasoningDelta { text: t.clone() },
        TurnEvent::AssistantStored { seq, usage } => Event::MessageStored {
            seq: *seq,
            usage: *usage,
        },
        TurnEvent::ToolCall {
            call,
            kind,
            summary,
        } => tool_call(call, *kind, summary),
        TurnEvent::ApprovalNeeded {
            call,
            summary,
            reason,
            rules,
        } => Event::ApprovalRequest {
            call_id: call.id.clone(),
            name: call.name.clone(),
            arguments: call.arguments.clone(),
            summary: summary.clone(),
            reason: reason.clone(),
            rules: rules.clone(),
        },
        TurnEvent::ToolResult {
            call_id,
            text,
            is_error,
            seq,
            permission,
            diagnostics,
        } => Event::ToolResult {
            call_id: call_id.clone(),
            text: text.clone(),
            is_error: *is_error,
            seq: *seq,
            permission: permission.clone(),
            diagnostics: diagnostics.as_deref().cloned(),
        },
        TurnEvent::Warning { code, message } => {
            Event::warning(None, code.as_str(), message.clone())
        }
        TurnEvent::Compacting { message } => {
            Event::warning(None, WarningCode::Compacting.as_str(), message.clone())
        }
        TurnEvent::CompactionFailed { message } => Event::warning(
            None,
            WarningCode::CompactionFailed.as_str(),
            message.clone(),
        ),
        TurnEvent::PlanProposed {
            plan,
            layers,
            approved,
        } => Event::PlanProposed {
            steps: plan.steps.clone(),
            layers: layers.clone(),
            approved: *approved,
        },
        TurnEvent::StepStarted {
            step_id,
            title,
            session_id,
            retry,
        } => Event::StepStarted {
            step_id: step_id.clone(),
            title: title.clone(),
            session_id: session_id.clone(),
            retry: retry.clone(),
        },
        // Wrapped by `turn_lines`.
        TurnEvent::Step { event, .. } => return turn_events(event),
        TurnEvent::StepFinished {
            step_id,
            outcome,
            usage,
            elapsed_ms,
        } => step_finished(step_id, outcome, *usage, *elapsed_ms),
        TurnEvent::Finished { reason, usage } => return finish_events(reason, *usage),
    };
    vec![one]
}

fn tool_call(call: &ToolCall, kind: ToolKind, summary: &str) -> Event {
    Event::ToolCall {
        call_id: call.id.clone(),
        name: call.name.clone(),
        arguments: call.arguments.clone(),
        kind: kind_str(kind),
        summary: summary.to_string(),
    }
}

fn step_finished(
    step_id: &str,
    outcome: &Result<String, StepFailure>,
    usage: Usage,
    elapsed_ms: u64,
) -> Event {
    let (status, result, error_type, message) = match outcome {
        Ok(answer) => ("completed", Some(answer.clone()), None, None),
        Err(f) => (
            if f.error_type == SKIPPED {
                "skipped"
            } else {
                "failed"
            },
            None,
            Some(f.error_type.clone()),
            Some(f.message.clone()),
        ),
    };
    Event::StepFinished {
        step_id: step_id.to_string(),
        usage,
        elapsed_ms,
        status,
        result,
        error_type,
        message,
    }
}

/// `finish`, after an `error` when the turn failed.
fn finish_events(reason: &FinishReason, usage: Usage) -> Vec<Event> {
    let finish = Event::Finish {
        reason: reason.as_str(),
        usage,
        limit: match reason {
            FinishReason::LimitReached(why) => Some(why.clone()),
            _ => None,
        },
    };
    match reason {
        FinishReason::Failed { code, message } => {
            vec![Event::error(None, code.as_str(), message.clone()), finish]
        }
        _ => vec![finish],
    }
}

/// A turn event as the JSON lines of `neocode run --json` and the bridge: objects with a
/// `type` field (keys in sorted order). A failed finish is preceded by an `error` line; a plan
/// step's events carry its `step_id`.
pub(crate) fn turn_lines(e: &TurnEvent) -> Vec<Value> {
    let mut lines: Vec<Value> = turn_events(e)
        .iter()
        // Serialising these types cannot fail: every map key is a string.
        .filter_map(|ev| serde_json::to_value(ev).ok())
        .collect();
    // The outermost step names the lines (a nested step's id is replaced).
    if let TurnEvent::Step { step_id, .. } = e {
        for v in &mut lines {
            if let Some(obj) = v.as_object_mut() {
                obj.insert("step_id".into(), Value::String(step_id.clone()));
            }
        }
    }
    // Keys in order at every level, whatever map serde_json is built with (the ACP crate
    // turns on its insertion order): the wire lines stay byte for byte what they were.
    for v in &mut lines {
        v.sort_all_objects();
    }
    lines
}
