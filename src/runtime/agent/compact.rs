//! Compaction (seed 003 "ReplaceTranscript"): the provider summarises the conversation; the
//! summary becomes the task state and the transcript becomes the summary plus the recent tail,
//! in one transaction. Lifetime usage (the ledger, the token totals) is kept; what the next
//! request carries shrinks to the summary and the tail. A failed summary changes nothing.

use serde_json::json;

use super::window::{self, COMPACTION_MARK};
use crate::runtime::Sessions;
use crate::runtime::cancel::CancelFlag;
use crate::runtime::provider::{ChatMessage, Provider};
use crate::session::{AppendMeta, Message, NewMessage, Replacement, Role, Usage, now_ms};

/// Messages kept verbatim after the summary, at most.
const TAIL_MAX: usize = 8;

/// What a compaction did.
#[derive(Debug, Clone, PartialEq)]
pub struct Compacted {
    /// Messages before.
    pub before: usize,
    /// Messages after (summary + tail).
    pub after: usize,
    /// Usage of the summary call (counted in the ledger by the caller).
    pub usage: Usage,
}

const INSTRUCTION: &str = "Summarise the conversation so far so that the work can continue from the summary alone: the user's goal, decisions made, files read or changed (with paths), commands run and their outcome, the current state, and the next steps. Be concise and concrete.";

/// Where the kept tail starts: the last user message when the tail stays short, else the
/// latest message that is not a tool result (a tail never starts with an orphaned result).
fn tail_start(msgs: &[Message]) -> usize {
    let n = msgs.len();
    let lo = n.saturating_sub(TAIL_MAX);
    if let Some(i) = msgs.iter().rposition(|m| m.role == Role::User)
        && i >= lo
        && i > 0
    {
        return i;
    }
    (lo.max(1)..n)
        .find(|&i| msgs[i].role != Role::Tool)
        .unwrap_or(n)
}

/// The time of the last replaced message, or of the first kept one if that is earlier.
fn summary_time(msgs: &[Message], start: usize) -> i64 {
    let replaced = start
        .checked_sub(1)
        .and_then(|i| msgs.get(i))
        .map_or_else(now_ms, |m| m.created_at_ms);
    msgs.get(start)
        .map_or(replaced, |m| m.created_at_ms.min(replaced))
}

fn to_new(m: &Message) -> NewMessage {
    NewMessage {
        role: Some(m.role),
        parts: m.parts.clone(),
        tool_calls: m.tool_calls.clone(),
        tool_call_id: m.tool_call_id.clone(),
        is_error: m.is_error,
        tool_metadata: m.tool_metadata.clone(),
        usage: m.usage,
        created_at_ms: Some(m.created_at_ms),
        extra: m.extra.clone(),
    }
}

/// How full the context is: what the next request carries, in tokens, and whether that is
/// an estimate. The latest model call's prompt and reply (read from its stored message); after
/// a compaction with no call since, the estimate made then (the kept messages' usage tells of
/// the context before it). `newest_first`: the transcript's messages, newest first (the tail
/// is enough). `None`: no model call yet.
/// The prompt tokens of the model call that made `m`, cached and cache-written ones
/// included (APIs with prompt caching count them apart, but they fill the window).
pub fn prompt_tokens(m: &Message) -> u64 {
    m.usage.input_tokens + m.extra.cached_input_tokens + m.extra.cache_write_tokens
}

pub fn context_now<'a>(
    h: &crate::session::SessionHeader,
    newest_first: impl IntoIterator<Item = &'a Message>,
) -> Option<(u64, bool)> {
    let state = h.task_state.as_ref();
    let compacted_at = state
        .and_then(|s| s.get("compacted_at_ms"))
        .and_then(|v| v.as_i64());
    let latest = newest_first
        .into_iter()
        .find(|m| m.role == Role::Assistant && prompt_tokens(m) > 0);
    if let Some(m) = latest
        && compacted_at.is_none_or(|t| m.created_at_ms > t)
    {
        return Some((prompt_tokens(m) + m.usage.output_tokens, false));
    }
    compacted_at?;
    state
        .and_then(|s| s.get("context_tokens_estimate"))
        .and_then(|v| v.as_u64())
        .or_else(|| latest.map(|m| prompt_tokens(m) + m.usage.output_tokens))
        .map(|n| (n, true))
}

/// Why a compaction did not happen (nothing changed).
#[derive(Debug, thiserror::Error)]
pub enum CompactError {
    /// The session could not be read or replaced.
    #[error("{0}")]
    Store(#[from] crate::session::StoreError),
    /// Fewer than two messages: nothing to summarise.
    #[error("nothing to compact yet")]
    TooShort,
    /// The summary's model call failed (its message, never the key).
    #[error("{0}")]
    Provider(String),
    /// The model answered with no text.
    #[error("the model returned an empty summary")]
    EmptySummary,
}

/// Compacts `session_id` with `provider`. The caller holds the session's lease.
pub fn compact_with(
    sessions: &Sessions,
    session_id: &str,
    provider: &mut dyn Provider,
    cancel: &CancelFlag,
    meta: &AppendMeta,
) -> Result<Compacted, CompactError> {
    let session = sessions.load(session_id)?;
    let before = session.messages.len();
    if before < 2 {
        return Err(CompactError::TooShort);
    }
    let mut req = window::build(sessions, &session);
    req.tools.clear();
    req.messages.push(ChatMessage::user_text(INSTRUCTION));
    let c = provider
        .stream(&req, cancel, &mut |_| {})
        .map_err(|e| CompactError::Provider(e.message))?;
    let summary = c.text.trim().to_string();
    if summary.is_empty() {
        return Err(CompactError::EmptySummary);
    }
    let h = &session.header;
    let lifetime = match &h.ledger {
        Some(l) => (l.usage.input_tokens, l.usage.output_tokens),
        None => (h.token_input_total, h.token_output_total),
    };
    let start = tail_start(&session.messages);
    let replaced = start;
    let mut messages = vec![NewMessage {
        role: Some(Role::System),
        parts: vec![crate::session::Part::text(format!(
            "Summary of the earlier conversation ({replaced} messages):\n\n{summary}"
        ))],
        tool_metadata: Some(json!({COMPACTION_MARK: true, "replaced_messages": replaced})),
        // It stands where the replaced messages stood: its time is theirs (the last of them),
        // never later than the tail kept after it. When it was written is in the task state.
        created_at_ms: Some(summary_time(&session.messages, start)),
        ..NewMessage::default()
    }];
    messages.extend(session.messages[start..].iter().map(to_new));
    let after = messages.len();
    // What the next request carries until a model call says: about 4 characters a token.
    let chars: usize = messages
        .iter()
        .flat_map(|m| m.parts.iter())
        .map(|p| match p {
            crate::session::Part::Text { text } | crate::session::Part::Reasoning { text, .. } => {
                text.len()
            }
            _ => 0,
        })
        .sum();
    let rep = Replacement {
        messages,
        task_state: Some(json!({
            "summary": summary,
            "compacted_at_ms": now_ms(),
            "replaced_messages": replaced,
            "context_tokens_estimate": chars.div_ceil(4),
        })),
        // Lifetime usage is kept, this summary's call included.
        token_totals: (
            lifetime.0 + c.usage.input_tokens,
            lifetime.1 + c.usage.output_tokens,
        ),
        meta: meta.clone(),
    };
    sessions.compact(session_id, &rep)?;
    Ok(Compacted {
        before,
        after,
        usage: c.usage,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::Location;
    use crate::runtime::provider::{
        ChatRequest, Completion, ErrorKind, ProviderError, StreamEvent,
    };
    use crate::session::NewSession;

    /// Answers every request with `reply`.
    struct Fixed(Result<Completion, ProviderError>);

    impl Provider for Fixed {
        fn name(&self) -> &str {
            "fixed"
        }
        fn model(&self) -> &str {
            "m"
        }
        fn stream(
            &mut self,
            _: &ChatRequest,
            _: &CancelFlag,
            _: &mut dyn FnMut(StreamEvent),
        ) -> Result<Completion, ProviderError> {
            match &self.0 {
                Ok(c) => Ok(c.clone()),
                Err(e) => Err(ProviderError {
                    kind: e.kind,
                    message: e.message.clone(),
                    partial: None,
                }),
            }
        }
    }

    fn compact_of(messages: usize, reply: Result<Completion, ProviderError>) -> String {
        let dir = tempfile::tempdir().unwrap();
        let s = Sessions::open(&Location::scratch(dir.path())).unwrap();
        let id = s.new_session(NewSession::default()).unwrap().id;
        let msgs: Vec<_> = (0..messages)
            .map(|i| NewMessage::text(Role::User, format!("m{i}")))
            .collect();
        s.append(&id, &msgs, &AppendMeta::default()).unwrap();
        let mut p = Fixed(reply);
        let e = compact_with(
            &s,
            &id,
            &mut p,
            &CancelFlag::default(),
            &AppendMeta::default(),
        )
        .err()
        .unwrap();
        assert_eq!(
            s.load(&id).unwrap().messages.len(),
            messages,
            "nothing changed"
        );
        e.to_string()
    }

    #[test]
    fn a_compaction_that_cannot_happen_says_why_in_words() {
        assert_eq!(
            compact_of(1, Ok(Completion::default())),
            "nothing to compact yet"
        );
        assert_eq!(
            compact_of(3, Ok(Completion::default())),
            "the model returned an empty summary"
        );
        let refused = ProviderError {
            kind: ErrorKind::Auth,
            message: "the provider refused the API key (401)".into(),
            partial: None,
        };
        assert_eq!(
            compact_of(3, Err(refused)),
            "the provider refused the API key (401)"
        );
    }
}
