//! Reconciling the caller's history with the stored transcript. A caller such as an editor
//! plugin sends the whole conversation every turn; the store already holds most of it. The
//! stored prefix is matched message by message, new messages are appended, and a caller
//! whose history differs from the store (edited or truncated on its side) continues in a fork
//! taken where the two part: the stored session is never overwritten.

use serde_json::Value;

use crate::session::{Role, ToolCall};

pub(crate) use crate::runtime::agent::adopt::Incoming;
#[cfg(test)]
use crate::runtime::agent::adopt::Reconciled;
#[cfg(test)]
use crate::session::Message;

use super::protocol::ChatMessage;

/// Why a history was refused (nothing is written).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct HistoryError(pub String);

/// The caller's history, checked and converted.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct History {
    /// The conversation without system messages; the last one is the new user message.
    pub messages: Vec<Incoming>,
    /// Non-text content parts (images, files) were dropped.
    pub dropped_parts: usize,
}

impl History {
    /// The text of the first user message: what the conversation key is computed from.
    pub(crate) fn first_user_text(&self) -> Option<&str> {
        self.messages
            .iter()
            .find(|m| m.role == Role::User)
            .map(|m| m.text.as_str())
    }

    /// The history has assistant or tool messages (the seed's sign of a continuation).
    pub(crate) fn has_continuation(&self) -> bool {
        self.messages
            .iter()
            .any(|m| matches!(m.role, Role::Assistant | Role::Tool))
    }
}

/// Checks and converts the caller's messages: known roles, a non-empty last user message,
/// tool results only for calls made earlier in the history.
pub(crate) fn parse(messages: &[ChatMessage]) -> Result<History, HistoryError> {
    let mut out = Vec::with_capacity(messages.len());
    let mut dropped_parts = 0;
    let mut calls = std::collections::HashSet::new();
    for (i, m) in messages.iter().enumerate() {
        let role = match m.role.as_str() {
            "system" | "developer" => continue,
            "user" => Role::User,
            "assistant" => Role::Assistant,
            "tool" => Role::Tool,
            other => {
                return Err(HistoryError(format!(
                    "messages[{i}]: unknown role {:?} (system, developer, user, assistant, tool)",
                    crate::sanitize::line(other)
                )));
            }
        };
        let (text, dropped) =
            content_text(&m.content).map_err(|e| HistoryError(format!("messages[{i}]: {e}")))?;
        dropped_parts += dropped;
        if role != Role::Assistant && !m.tool_calls.is_empty() {
            return Err(HistoryError(format!(
                "messages[{i}]: only assistant messages have tool_calls"
            )));
        }
        let tool_call_id = match role {
            Role::Tool => {
                let id = m.tool_call_id.clone().unwrap_or_default();
                if !calls.contains(&id) {
                    return Err(HistoryError(format!(
                        "messages[{i}]: tool result for {:?}, which no earlier assistant message called",
                        crate::sanitize::line(&id)
                    )));
                }
                Some(id)
            }
            _ => None,
        };
        let tool_calls: Vec<ToolCall> = m
            .tool_calls
            .iter()
            .map(|c| ToolCall {
                id: c.id.clone(),
                name: c.function.name.clone(),
                arguments: c.function.arguments.clone(),
            })
            .collect();
        for c in &tool_calls {
            if c.id.is_empty() || c.name.is_empty() {
                return Err(HistoryError(format!(
                    "messages[{i}]: a tool call needs an id and a function name"
                )));
            }
            calls.insert(c.id.clone());
        }
        out.push(Incoming {
            role,
            text,
            tool_calls,
            tool_call_id,
            placeholder: false,
        });
    }
    match out.last() {
        Some(m) if m.role == Role::User && !m.text.trim().is_empty() => {}
        Some(_) => {
            return Err(HistoryError(
                "the last message must be the new user message, with text".into(),
            ));
        }
        None => return Err(HistoryError("no user message in `messages`".into())),
    }
    Ok(History {
        messages: out,
        dropped_parts,
    })
}

/// The text of OpenAI `content`: a string, null, or an array of parts of which `text` parts
/// count (joined by newlines); the count of other parts is returned beside it.
/// Matches the caller's history against the stored transcript (the runtime does it under
/// the turn's lease, [`crate::runtime::agent::adopt::reconcile`]).
#[cfg(test)]
pub(crate) fn reconcile(stored: &[Message], history: &History) -> Reconciled {
    crate::runtime::agent::adopt::reconcile(stored, &history.messages)
}

/// Why a message's `content` cannot be read as text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
enum ContentError {
    #[error("a text part without a string `text`")]
    TextNotString,
    #[error("a content part without a `type`")]
    NoType,
    #[error("`content` must be a string, an array of parts, or null")]
    Shape,
}

fn content_text(content: &Value) -> Result<(String, usize), ContentError> {
    match content {
        Value::Null => Ok((String::new(), 0)),
        Value::String(s) => Ok((s.clone(), 0)),
        Value::Array(parts) => {
            let mut texts = Vec::new();
            let mut dropped = 0;
            for p in parts {
                match p.get("type").and_then(Value::as_str) {
                    Some("text") => match p.get("text").and_then(Value::as_str) {
                        Some(t) => texts.push(t),
                        None => return Err(ContentError::TextNotString),
                    },
                    Some(_) => dropped += 1,
                    None => return Err(ContentError::NoType),
                }
            }
            Ok((texts.join("\n"), dropped))
        }
        _ => Err(ContentError::Shape),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::NewMessage;

    #[test]
    fn unreadable_content_keeps_its_wire_words() {
        let e = |v: Value| content_text(&v).unwrap_err().to_string();
        assert_eq!(
            e(serde_json::json!(7)),
            "`content` must be a string, an array of parts, or null"
        );
        assert_eq!(
            e(serde_json::json!([{"text": "x"}])),
            "a content part without a `type`"
        );
        assert_eq!(
            e(serde_json::json!([{"type": "text", "text": 1}])),
            "a text part without a string `text`"
        );
    }
    use crate::bridge::protocol::{ChatFunction, ChatToolCall};
    use serde_json::json;

    fn msg(role: &str, content: Value) -> ChatMessage {
        ChatMessage {
            role: role.into(),
            content,
            ..ChatMessage::default()
        }
    }

    fn call(id: &str) -> ChatMessage {
        ChatMessage {
            role: "assistant".into(),
            content: Value::Null,
            tool_calls: vec![ChatToolCall {
                id: id.into(),
                kind: "function".into(),
                function: ChatFunction {
                    name: "read_file".into(),
                    arguments: r#"{"path": "a.rs"}"#.into(),
                },
            }],
            tool_call_id: None,
        }
    }

    fn result(id: &str, text: &str) -> ChatMessage {
        ChatMessage {
            role: "tool".into(),
            content: json!(text),
            tool_call_id: Some(id.into()),
            ..ChatMessage::default()
        }
    }

    fn stored(h: &[ChatMessage]) -> Vec<Message> {
        parse_prefix(h)
            .into_iter()
            .enumerate()
            .map(|(i, m)| Message::stored(i as i64 + 1, m.to_new()))
            .collect()
    }

    /// Converts a history that need not end with a user message (for building stores).
    fn parse_prefix(h: &[ChatMessage]) -> Vec<Incoming> {
        let mut with_prompt = h.to_vec();
        with_prompt.push(msg("user", json!("next")));
        let mut v = parse(&with_prompt).unwrap().messages;
        v.pop();
        v
    }

    fn turn1() -> Vec<ChatMessage> {
        vec![
            msg("system", json!("you are an editor plugin")),
            msg("user", json!("read a.rs")),
            call("c1"),
            result("c1", "fn main() {}"),
            msg("assistant", json!("It is empty.")),
        ]
    }

    #[test]
    fn a_stored_prefix_is_matched_and_only_new_messages_are_appended() {
        let store = stored(&turn1());
        let mut h = turn1();
        h.push(msg("user", json!([{"type": "text", "text": "thanks"}])));
        let r = reconcile(&store, &parse(&h).unwrap());
        assert_eq!(r.fork_at, None);
        assert!(r.append.is_empty());
        // The caller re-serialised the arguments and trimmed the text: still the same.
        h[2].tool_calls[0].function.arguments = r#"{"path":"a.rs"}"#.into();
        h[4].content = json!("It is empty.\n");
        assert_eq!(reconcile(&store, &parse(&h).unwrap()).fork_at, None);
    }

    #[test]
    fn messages_the_store_lacks_are_appended_in_order() {
        let store = stored(&turn1()[..2]);
        let mut h = turn1();
        h.push(msg("user", json!("thanks")));
        let r = reconcile(&store, &parse(&h).unwrap());
        assert_eq!(r.fork_at, None);
        let roles: Vec<Role> = r.append.iter().map(|m| m.role).collect();
        assert_eq!(roles, [Role::Assistant, Role::Tool, Role::Assistant]);
    }

    #[test]
    fn an_edited_message_forks_where_the_histories_part() {
        let store = stored(&turn1());
        let mut h = turn1();
        h[4].content = json!("It has a main function.");
        h.push(msg("user", json!("thanks")));
        let r = reconcile(&store, &parse(&h).unwrap());
        assert_eq!(r.fork_at, Some(3));
        assert_eq!(r.diverged_at, 3);
        assert_eq!(r.append.len(), 1);
        assert_eq!(r.append[0].text, "It has a main function.");
    }

    #[test]
    fn a_truncated_history_forks_before_the_missing_tail() {
        let store = stored(&turn1());
        // The caller dropped the last two messages (an undo on its side) and asks again.
        let mut h = turn1()[..3].to_vec();
        h.push(msg("user", json!("try again")));
        let r = reconcile(&store, &parse(&h).unwrap());
        assert_eq!(r.fork_at, Some(2));
        assert!(r.append.is_empty());
    }

    #[test]
    fn a_retried_prompt_that_was_stored_unanswered_is_answered_not_stored_again() {
        let mut h = turn1();
        h.push(msg("user", json!("thanks")));
        let store = stored(&h);
        let r = reconcile(&store, &parse(&h).unwrap());
        assert!(r.prompt_stored);
        assert_eq!(r.fork_at, None);
        assert!(r.append.is_empty());
        // A different new message after the same stored one is a divergence, not a retry.
        let last = h.len() - 1;
        h[last] = msg("user", json!("no, thanks"));
        let r = reconcile(&store, &parse(&h).unwrap());
        assert!(!r.prompt_stored);
        assert_eq!(r.fork_at, Some(4));
    }

    /// A store after compaction: the summary at seq 1, then `tail` from seq 2.
    fn compacted(tail: &[ChatMessage]) -> Vec<Message> {
        let summary = NewMessage {
            tool_metadata: Some(json!({"compaction_summary": true, "replaced_messages": 4})),
            ..NewMessage::text(Role::System, "Summary of the earlier conversation")
        };
        let mut v = vec![Message::stored(1, summary)];
        for mut m in stored(tail) {
            m.seq += 1;
            v.push(m);
        }
        v
    }

    fn conversation() -> Vec<ChatMessage> {
        vec![
            msg("user", json!("u1")),
            msg("assistant", json!("a1")),
            msg("user", json!("u2")),
            msg("assistant", json!("a2")),
            msg("user", json!("u3")),
            msg("assistant", json!("a3")),
        ]
    }

    #[test]
    fn after_compaction_the_tail_is_aligned_and_the_rest_counts_as_summarised() {
        let store = compacted(&conversation()[4..]);
        let mut h = conversation();
        h.push(msg("user", json!("u4")));
        let r = reconcile(&store, &parse(&h).unwrap());
        assert_eq!(
            (r.fork_at, r.append.len(), r.prompt_stored),
            (None, 0, false)
        );

        // Messages after the tail the store lacks are appended.
        let mut h = conversation();
        h.push(msg("user", json!("u4")));
        h.push(msg("assistant", json!("a4")));
        h.push(msg("user", json!("u5")));
        let r = reconcile(&store, &parse(&h).unwrap());
        assert_eq!(r.fork_at, None);
        assert_eq!(r.append.len(), 2);

        // Only the summary left: everything before is covered.
        let r = reconcile(&compacted(&[]), &parse(&h).unwrap());
        assert_eq!((r.fork_at, r.append.len()), (None, 0));
    }

    #[test]
    fn after_compaction_an_edit_in_the_tail_forks_inside_the_tail() {
        let store = compacted(&conversation()[2..]);
        let mut h = conversation();
        h[5] = msg("assistant", json!("a3, edited"));
        h.push(msg("user", json!("u4")));
        let r = reconcile(&store, &parse(&h).unwrap());
        // Tail u2 a2 u3 a3 sits at seqs 2..=5: the fork keeps the summary and u2 a2 u3.
        assert_eq!(r.fork_at, Some(4));
        assert_eq!(r.append.len(), 1);
        assert_eq!(r.diverged_at, 5);
        // A history that shares nothing with the tail keeps only the summary.
        let h = vec![
            msg("user", json!("other")),
            msg("assistant", json!("x")),
            msg("user", json!("y")),
        ];
        let r = reconcile(&store, &parse(&h).unwrap());
        assert_eq!(r.fork_at, Some(1));
    }

    #[test]
    fn a_different_first_message_forks_at_zero() {
        let store = stored(&turn1());
        let h = vec![msg("user", json!("something else"))];
        let r = reconcile(&store, &parse(&h).unwrap());
        assert_eq!(r.fork_at, Some(0));
    }

    #[test]
    fn an_empty_store_takes_the_whole_history() {
        let mut h = turn1();
        h.push(msg("user", json!("more")));
        let r = reconcile(&[], &parse(&h).unwrap());
        assert_eq!(r.fork_at, None);
        assert_eq!(r.append.len(), 4);
    }

    #[test]
    fn bad_histories_are_refused() {
        let no_user = parse(&[msg("assistant", json!("hi"))]).unwrap_err();
        assert!(no_user.0.contains("last message"), "{no_user:?}");
        assert!(parse(&[]).is_err());
        assert!(parse(&[msg("user", json!("   "))]).is_err());
        let orphan = parse(&[result("c9", "x"), msg("user", json!("q"))]).unwrap_err();
        assert!(orphan.0.contains("messages[0]"), "{orphan:?}");
        assert!(parse(&[msg("wizard", json!("x")), msg("user", json!("q"))]).is_err());
        assert!(parse(&[msg("user", json!(42))]).is_err());
    }

    #[test]
    fn text_parts_join_and_other_parts_are_counted() {
        let h = parse(&[msg(
            "user",
            json!([{"type": "text", "text": "a"}, {"type": "image_url", "image_url": {"url": "x"}}, {"type": "text", "text": "b"}]),
        )])
        .unwrap();
        assert_eq!(h.first_user_text(), Some("a\nb"));
        assert_eq!(h.dropped_parts, 1);
        assert!(!h.has_continuation());
    }
}

#[cfg(test)]
mod properties {
    use super::*;
    use crate::bridge::protocol::ChatMessage;
    use crate::session::NewMessage;
    use proptest::prelude::*;

    fn chat(role: Role, text: &str) -> ChatMessage {
        ChatMessage {
            role: role.as_str().into(),
            content: serde_json::Value::String(text.into()),
            ..ChatMessage::default()
        }
    }

    fn turn() -> impl Strategy<Value = (Role, String)> {
        (
            prop_oneof![Just(Role::User), Just(Role::Assistant)],
            // A small alphabet, so equal messages at different places are common.
            prop_oneof![Just("a"), Just("b"), Just("c")].prop_map(str::to_string),
        )
    }

    proptest! {
        /// Whatever the store holds and whatever the caller sends, carrying out the plan
        /// (fork, append, then the turn appends the prompt unless it is stored) leaves
        /// exactly the caller's conversation in the session the turn runs in; and a caller
        /// that only adds to the stored transcript never forks.
        #[test]
        fn carrying_out_the_plan_yields_the_callers_conversation(
            stored in prop::collection::vec(turn(), 0..8),
            keep in 0usize..9,
            extra in prop::collection::vec(turn(), 0..4),
            prompt in prop_oneof![Just("a"), Just("z")],
        ) {
            let store: Vec<Message> = stored
                .iter()
                .enumerate()
                .map(|(i, (r, t))| Message::stored(i as i64 + 1, NewMessage::text(*r, t)))
                .collect();
            let mut caller: Vec<(Role, String)> = stored[..keep.min(stored.len())].to_vec();
            caller.extend(extra.iter().cloned());
            caller.push((Role::User, prompt.to_string()));
            let msgs: Vec<ChatMessage> = caller.iter().map(|(r, t)| chat(*r, t)).collect();
            let h = parse(&msgs).unwrap();
            let plan = reconcile(&store, &h);

            let mut result: Vec<(Role, String)> = store
                .iter()
                .filter(|m| plan.fork_at.is_none_or(|at| m.seq <= at))
                .map(|m| (m.role, m.text()))
                .collect();
            result.extend(plan.append.iter().map(|m| (m.role, m.text.clone())));
            if !plan.prompt_stored {
                result.push((Role::User, prompt.to_string()));
            }
            prop_assert_eq!(&result, &caller);
            if keep >= stored.len() {
                prop_assert_eq!(plan.fork_at, None);
            }
        }
    }
}
