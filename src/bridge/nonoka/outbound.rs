//! neocode's events as nonoka's NDJSON events (`protocol_ack`, `session_init`, `text_delta`,
//! `tool_call`, `tool_result`, `approval_request`, `debug`, `finish`, `error`).

use serde_json::{Value, json};

use crate::runtime::agent::{FinishReason, TurnEvent};
use crate::session::Usage;

use super::contract::{CAPABILITIES, VERSION};

/// `protocol_ack`: sent after a chat's contract was accepted, before anything else.
pub(crate) fn ack() -> Value {
    json!({
        "type": "protocol_ack",
        "version": VERSION,
        "capabilities": CAPABILITIES,
        "cli_version": env!("CARGO_PKG_VERSION"),
        "framework_version": format!("neocode {}", env!("CARGO_PKG_VERSION")),
    })
}

/// `error {message, code}` (with `details` when given).
pub(crate) fn error(code: &str, message: &str, details: Option<Value>) -> Value {
    let mut v = json!({"type": "error", "code": code, "message": message, "retryable": false});
    if let Some(d) = details {
        v["details"] = d;
    }
    v
}

/// `session_init {session_id}`; the recovery fields are neocode's (the provider ignores them).
pub(crate) fn session_init(session_id: &str, recovery_reason: Option<&str>) -> Value {
    json!({
        "type": "session_init",
        "session_id": session_id,
        "recovered": recovery_reason.is_some(),
        "recovery_reason": recovery_reason,
    })
}

/// A neocode warning as nonoka's `debug {level: "warning"}` (OpenCode does not show it).
pub(crate) fn warning(code: &str, message: &str) -> Value {
    json!({"type": "debug", "level": "warning", "message": message, "payload": {"code": code}})
}

fn runtime(usage: Usage) -> Value {
    json!({"usage": {"input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens}})
}

/// `finish {finish_reason: "approval_required"}`: the turn is paused on a call.
pub(crate) fn approval_required(usage: Usage) -> Value {
    json!({
        "type": "finish",
        "finish_reason": "approval_required",
        "termination": {"reason": "approval_required"},
        "runtime": runtime(usage),
    })
}

/// `finish {finish_reason: "tool_calls"}`: the turn waits for the host to run its tools.
pub(crate) fn host_tool_calls(usage: Usage) -> Value {
    json!({
        "type": "finish",
        "finish_reason": "tool_calls",
        "termination": {"reason": "tool_calls"},
        "runtime": runtime(usage),
    })
}

/// The end of a turn: `finish` (after an `error` when the turn failed or a limit stopped it).
pub(crate) fn finish(reason: &FinishReason, usage: Usage) -> Vec<Value> {
    let (finish_reason, termination) = match reason {
        FinishReason::Completed => ("stop", json!({"reason": "completed"})),
        FinishReason::Cancelled => ("cancel", json!({"reason": "cancelled"})),
        FinishReason::LimitReached(why) => (
            "error",
            json!({"reason": "limit_reached", "message": format!("limit reached: {why}"), "limit": why}),
        ),
        FinishReason::Failed { code, message } => (
            "error",
            json!({"reason": code.as_str(), "message": message}),
        ),
    };
    let finish = json!({
        "type": "finish",
        "finish_reason": finish_reason,
        "termination": termination,
        "runtime": runtime(usage),
    });
    match reason {
        FinishReason::Failed { code, message } => vec![
            error(
                code.as_str(),
                message,
                Some(json!({"termination": termination})),
            ),
            finish,
        ],
        FinishReason::LimitReached(why) => vec![
            error(
                "limit_reached",
                &format!("limit reached: {why}"),
                Some(json!({"termination": termination})),
            ),
            finish,
        ],
        FinishReason::Completed | FinishReason::Cancelled => vec![finish],
    }
}

/// Tool arguments as an object (nonoka's `args`); a text that is not a JSON object is
/// passed as `{"raw": text}`.
fn args(arguments: &str) -> Value {
    match serde_json::from_str::<Value>(arguments) {
        Ok(v @ Value::Object(_)) => v,
        _ => json!({"raw": arguments}),
    }
}

/// The nonoka lines of one turn event other than `Finished` and `ApprovalNeeded` (which the
/// bridge decides on). `tool_name` names the call a `ToolResult` answers.
pub(crate) fn turn_lines(ev: &TurnEvent, tool_name: &dyn Fn(&str) -> String) -> Vec<Value> {
    match ev {
        TurnEvent::TextDelta(t) if !t.is_empty() => vec![json!({"type": "text_delta", "text": t})],
        TurnEvent::ToolCall {
            call,
            kind,
            summary,
        } => vec![json!({
            "type": "tool_call",
            "tool_call_id": call.id,
            "tool_name": call.name,
            "args": args(&call.arguments),
            "metadata": {"executor": "neocode", "kind": format!("{kind:?}").to_lowercase(), "summary": summary},
        })],
        TurnEvent::ToolResult {
            call_id,
            text,
            is_error,
            ..
        } => vec![json!({
            "type": "tool_result",
            "tool_call_id": call_id,
            "tool_name": tool_name(call_id),
            "content": text,
            "result": text,
            "is_error": is_error,
        })],
        TurnEvent::Warning { code, message } => vec![warning(code.as_str(), message)],
        TurnEvent::Compacting { message } => vec![warning("compacting", message)],
        TurnEvent::CompactionFailed { message } => vec![warning("compaction_failed", message)],
        _ => Vec::new(),
    }
}

/// A `tool_result.result` for a result whose stored metadata holds a verification receipt
/// (`run_command` ran a check): nonoka's external tool receipt `{result, exit_code,
/// truncated, completeness, host, verification}`. `None` without a receipt (the result is
/// then its text).
pub(crate) fn receipt(text: &str, metadata: &Value) -> Option<Value> {
    let v = metadata.get("verification")?;
    Some(json!({
        "result": text,
        "exit_code": v.get("exit_code"),
        "truncated": v.get("truncated"),
        "completeness": v.get("completeness"),
        "host": "neocode",
        "verification": v,
    }))
}

/// `approval_request {id, tool_call_id, tool_name, args}`: the approval's id is the call's,
/// which is what the provider answers with.
pub(crate) fn approval_request(call: &crate::session::ToolCall) -> Value {
    json!({
        "type": "approval_request",
        "id": call.id,
        "tool_call_id": call.id,
        "tool_name": call.name,
        "args": args(&call.arguments),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::agent::FailCode;

    #[test]
    fn finish_reasons_map_to_nonokas() {
        let u = Usage {
            input_tokens: 7,
            output_tokens: 2,
        };
        let r = finish(&FinishReason::Completed, u);
        assert_eq!(r.len(), 1);
        assert_eq!(r[0]["finish_reason"], "stop");
        assert_eq!(r[0]["runtime"]["usage"]["input_tokens"], 7);
        assert_eq!(
            finish(&FinishReason::Cancelled, u)[0]["finish_reason"],
            "cancel"
        );
        let f = finish(
            &FinishReason::Failed {
                code: FailCode::Auth,
                message: "no key".into(),
            },
            u,
        );
        assert_eq!(
            (f[0]["type"].as_str(), f[0]["code"].as_str()),
            (Some("error"), Some("auth"))
        );
        assert_eq!(f[1]["finish_reason"], "error");
        let l = finish(&FinishReason::LimitReached("max_turns 2".into()), u);
        assert_eq!(l[1]["termination"]["reason"], "limit_reached");
        assert_eq!(approval_required(u)["finish_reason"], "approval_required");
        assert_eq!(ack()["version"], "1.1");
    }
}
