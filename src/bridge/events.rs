//! The one mapping from the agent's [`TurnEvent`]s to event lines. `neocode bridge` and
//! `neocode run --json` both print through it, so their shapes cannot drift apart.

use crate::runtime::agent::{FinishReason, TurnEvent};
use crate::runtime::tools::ToolKind;

use super::protocol::Event;

/// The name of a tool kind on the wire.
pub fn kind_name(kind: ToolKind) -> &'static str {
    match kind {
        ToolKind::Read => "read",
        ToolKind::Edit => "edit",
        ToolKind::Command => "command",
        ToolKind::Plan => "plan",
    }
}

/// The event lines of one turn event (a failed turn gives `error` then `finish`).
/// `Started` becomes a `session_init` that is not a recovery; the bridge, which knows how the
/// session was chosen, sends its own instead.
pub fn turn_event(ev: &TurnEvent, request_id: Option<&str>) -> Vec<Event> {
    let rid = || request_id.map(str::to_string);
    match ev {
        TurnEvent::Started { session_id } => vec![Event::SessionInit {
            request_id: rid(),
            session_id: session_id.clone(),
            recovered: false,
            recovery_reason: None,
        }],
        TurnEvent::TextDelta(text) => vec![Event::TextDelta {
            request_id: rid(),
            text: text.clone(),
        }],
        TurnEvent::ReasoningDelta(text) => vec![Event::ReasoningDelta {
            request_id: rid(),
            text: text.clone(),
        }],
        TurnEvent::AssistantStored { seq, usage } => vec![Event::MessageStored {
            request_id: rid(),
            seq: *seq,
            usage: *usage,
        }],
        TurnEvent::ToolCall {
            call,
            kind,
            summary,
        } => vec![Event::ToolCall {
            request_id: rid(),
            call_id: call.id.clone(),
            name: call.name.clone(),
            arguments: call.arguments.clone(),
            kind: kind_name(*kind),
            summary: summary.clone(),
        }],
        TurnEvent::ApprovalNeeded {
            call,
            summary,
            reason,
        } => vec![Event::ApprovalRequest {
            request_id: rid(),
            call_id: call.id.clone(),
            name: call.name.clone(),
            arguments: call.arguments.clone(),
            summary: summary.clone(),
            reason: reason.clone(),
        }],
        TurnEvent::ToolResult {
            call_id,
            text,
            is_error,
            seq,
        } => vec![Event::ToolResult {
            request_id: rid(),
            call_id: call_id.clone(),
            text: text.clone(),
            is_error: *is_error,
            seq: *seq,
        }],
        TurnEvent::Warning { code, message } => {
            vec![Event::warning(rid(), code, message.clone())]
        }
        TurnEvent::Finished { reason, usage } => {
            let finish = |reason, message| Event::Finish {
                request_id: rid(),
                reason,
                message,
                usage: *usage,
            };
            match reason {
                FinishReason::Completed => vec![finish("completed", None)],
                FinishReason::Cancelled => vec![finish("cancelled", None)],
                FinishReason::LimitReached(which) => {
                    vec![finish("limit_reached", Some(which.clone()))]
                }
                FinishReason::Failed { code, message } => vec![
                    Event::error(rid(), code, message.clone()),
                    finish("failed", Some(message.clone())),
                ],
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::{ToolCall, Usage};
    use serde_json::{Value, json};

    fn lines(ev: TurnEvent) -> Vec<Value> {
        turn_event(&ev, Some("r1"))
            .iter()
            .map(|e| serde_json::from_str(&e.to_line()).unwrap())
            .collect()
    }

    #[test]
    fn shapes_of_the_turn_events() {
        let call = ToolCall {
            id: "c1".into(),
            name: "run_command".into(),
            arguments: r#"{"command":"ls"}"#.into(),
        };
        assert_eq!(
            lines(TurnEvent::TextDelta("Hel".into())),
            [json!({"type": "text_delta", "request_id": "r1", "text": "Hel"})]
        );
        assert_eq!(
            lines(TurnEvent::ToolCall {
                call: call.clone(),
                kind: ToolKind::Command,
                summary: "ls".into()
            }),
            [
                json!({"type": "tool_call", "request_id": "r1", "call_id": "c1", "name": "run_command",
                    "arguments": "{\"command\":\"ls\"}", "kind": "command", "summary": "ls"})
            ]
        );
        assert_eq!(
            lines(TurnEvent::ApprovalNeeded {
                call,
                summary: "ls".into(),
                reason: "policy ask".into()
            })[0]["type"],
            "approval_request"
        );
        let failed = lines(TurnEvent::Finished {
            reason: FinishReason::Failed {
                code: "unreachable".into(),
                message: "no model at 127.0.0.1:9".into(),
            },
            usage: Usage {
                input_tokens: 3,
                output_tokens: 4,
            },
        });
        assert_eq!(failed[0]["type"], "error");
        assert_eq!(failed[0]["code"], "unreachable");
        assert_eq!(
            failed[1],
            json!({"type": "finish", "request_id": "r1", "reason": "failed",
                   "message": "no model at 127.0.0.1:9",
                   "usage": {"input_tokens": 3, "output_tokens": 4}})
        );
        assert_eq!(
            lines(TurnEvent::Finished {
                reason: FinishReason::LimitReached("max_turns 3".into()),
                usage: Usage::default()
            })[0]["reason"],
            "limit_reached"
        );
    }
}
