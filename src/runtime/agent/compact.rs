//! Compaction (seed 003, reworked by issue 35): the provider summarises what the model is
//! sent; the summary is appended to the transcript as a system message naming where the
//! model's context now starts (the recent tail it keeps), and becomes the task state, in one
//! transaction. Nothing is removed: every earlier message stays in the transcript, searchable,
//! exportable, shown and rewindable; only the requests leave out what the summary stands for
//! (see [`crate::session::CONTEXT_FROM`]). Lifetime usage (the ledger, the token totals) is
//! kept; what the next request carries shrinks to the summary and the tail. A failed summary
//! changes nothing.

use serde_json::{Value, json};

use super::window;
use crate::runtime::cancel::CancelFlag;
use crate::runtime::provider::quirks::estimate_tokens;
use crate::runtime::provider::{
    ChatMessage, ChatRequest, Completion, ErrorKind, Provider, ProviderError, UserPart,
};
use crate::runtime::sessions::Sessions;
use crate::session::{
    AppendMeta, COMPACTION_MARK, CONTEXT_FROM, Change, Message, NewMessage, Role, StateUpdate,
    TASK_SUMMARY_SEQ, Usage, now_ms,
};

/// Messages kept verbatim after the summary, at most.
const TAIL_MAX: usize = 8;

/// What a compaction did.
#[derive(Debug, Clone, PartialEq)]
pub struct Compacted {
    /// Messages of the model's context the summary now stands for (they stay stored).
    pub summarised: usize,
    /// Messages the model is still sent verbatim after the summary.
    pub kept: usize,
    /// Messages the transcript holds now, the summary included: nothing was removed.
    pub stored: u64,
    /// Usage of the summary call (counted in the ledger by the caller).
    pub usage: Usage,
}

impl Compacted {
    /// What it did, in one line.
    pub(crate) fn describe(&self) -> String {
        format!(
            "the model is now sent a summary of {} message{} and the last {}; all {} stay in the transcript",
            self.summarised,
            if self.summarised == 1 { "" } else { "s" },
            self.kept,
            self.stored
        )
    }
}

const INSTRUCTION: &str = "Summarise the conversation so far so that the work can continue from the summary alone: the user's goal, decisions made, files read or changed (with paths), commands run and their outcome, the current state, and the next steps. Be concise and concrete.";

/// Where the kept tail starts: the last user message when the tail stays short, else the
/// first message of the last [`TAIL_MAX`] that is not a tool result (a tail never starts with
/// an orphaned result). A tail past a quarter of the `window` (tokens, estimated) starts at a
/// later message that is not a tool result, down to the last one, so a small window is not
/// filled by the tail again, and what waits for an answer is always kept.
fn tail_start(msgs: &[&Message], window: u64) -> usize {
    let n = msgs.len();
    let lo = n.saturating_sub(TAIL_MAX);
    let mut start = match msgs.iter().rposition(|m| m.role == Role::User) {
        Some(i) if i >= lo && i > 0 => i,
        _ => (lo.max(1)..n)
            .find(|&i| msgs[i].role != Role::Tool)
            .unwrap_or(n),
    };
    let budget = window / 4;
    let tokens = |from: usize| -> u64 {
        msgs[from..]
            .iter()
            .map(|m| estimate_tokens(&m.text()))
            .sum()
    };
    while start < n && tokens(start) > budget {
        match (start + 1..n).find(|&i| msgs[i].role != Role::Tool) {
            Some(next) => start = next,
            None => break,
        }
    }
    start
}

/// How full the context is: what the next request carries, in tokens, and whether that is
/// an estimate. The latest model call's prompt and reply (read from its stored message; an
/// estimate when the server reported no usage, `usage_estimated`); after
/// a compaction with no call since, the estimate made then (the kept messages' usage tells of
/// the context before it). `newest_first`: the transcript's messages, newest first (the tail
/// is enough). `None`: no model call yet.
/// The prompt tokens of the model call that made `m`, cached and cache-written ones
/// included (APIs with prompt caching count them apart, but they fill the window).
pub(crate) fn prompt_tokens(m: &Message) -> u64 {
    m.usage.input_tokens + m.extra.tokens.cached_input_tokens + m.extra.tokens.cache_write_tokens
}

pub(crate) fn context_now<'a>(
    h: &crate::session::SessionHeader,
    newest_first: impl IntoIterator<Item = &'a Message>,
) -> Option<(u64, bool)> {
    let state = h.task_state.as_ref();
    let compacted_at = state
        .and_then(|s| s.get("compacted_at_ms"))
        .and_then(Value::as_i64);
    let latest = newest_first
        .into_iter()
        .find(|m| m.role == Role::Assistant && prompt_tokens(m) > 0);
    if let Some(m) = latest
        && compacted_at.is_none_or(|t| m.created_at_ms > t)
    {
        // A server that reports no usage: the reply carries neocode's estimate.
        let estimated = m
            .tool_metadata
            .as_ref()
            .and_then(|v| v.get("usage_estimated"))
            .and_then(serde_json::Value::as_bool)
            .unwrap_or(false);
        return Some((prompt_tokens(m) + m.usage.output_tokens, estimated));
    }
    compacted_at?;
    state
        .and_then(|s| s.get("context_tokens_estimate"))
        .and_then(Value::as_u64)
        .or_else(|| latest.map(|m| prompt_tokens(m) + m.usage.output_tokens))
        .map(|n| (n, true))
}

/// Why a compaction did not happen (nothing changed).
#[derive(Debug, thiserror::Error)]
pub(crate) enum CompactError {
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
    /// The summary was cut at the output limit (`finish_reason: length`): a cut summary
    /// would lose the task state, so it is not used.
    #[error(
        "the summary was cut at the model's output limit after {0} tokens (finish_reason: length), so it was not used; raise max_tokens in [provider] of config.toml"
    )]
    CutSummary(u64),
}

/// Room left in each piece's request for the summary so far and the reply, in tokens.
const PIECE_ROOM: u64 = 256;

/// One message of the conversation as a line of a transcript (what a piece sends).
fn as_text(m: &ChatMessage) -> String {
    match m {
        ChatMessage::System(t) => format!("system: {t}"),
        ChatMessage::User(parts) => {
            let texts: Vec<String> = parts
                .iter()
                .map(|p| match p {
                    UserPart::Text(t) => t.clone(),
                    UserPart::Image { .. } | UserPart::Unavailable { .. } => "[image]".into(),
                })
                .collect();
            format!("user: {}", texts.join("\n"))
        }
        ChatMessage::Assistant {
            text, tool_calls, ..
        } => {
            let mut out = format!("assistant: {text}");
            for c in tool_calls {
                out.push_str(&format!("\n[called {} {}]", c.name, c.arguments));
            }
            out
        }
        ChatMessage::ToolResult { text, is_error, .. } => {
            let what = if *is_error {
                "tool error"
            } else {
                "tool result"
            };
            format!("[{what}]: {text}")
        }
    }
}

/// `text` cut to its first `3 × tokens` characters when it is estimated past `tokens` (prose
/// then stays well within).
fn clip(text: String, tokens: u64) -> String {
    if estimate_tokens(&text) <= tokens {
        return text;
    }
    let keep: String = text.chars().take((tokens * 3) as usize).collect();
    format!("{keep} […cut]")
}

/// The summary of a conversation too long for one request: the conversation as a transcript
/// in pieces of about half the window (the server's, learned from the overflow), each
/// summarised together with the summary of the pieces before. `first`: the overflow, returned
/// when the window is not known. A piece's summary cut at the output limit fails the whole.
fn summarise_in_pieces(
    req: &ChatRequest,
    provider: &mut dyn Provider,
    cancel: &CancelFlag,
    first: ProviderError,
) -> Result<Completion, CompactError> {
    let Some(window) = provider.context_window() else {
        return Err(CompactError::Provider(first.message));
    };
    let budget = (window / 2)
        .saturating_sub(estimate_tokens(&req.system) + PIECE_ROOM)
        .max(64);
    // The last message is the instruction itself.
    let convo = &req.messages[..req.messages.len().saturating_sub(1)];
    let mut pieces: Vec<String> = Vec::new();
    let mut piece = String::new();
    for m in convo {
        let line = clip(as_text(m), budget);
        if !piece.is_empty() && estimate_tokens(&piece) + estimate_tokens(&line) > budget {
            pieces.push(std::mem::take(&mut piece));
        }
        piece.push_str(&line);
        piece.push_str("\n\n");
    }
    if !piece.trim().is_empty() {
        pieces.push(piece);
    }
    let mut summary = String::new();
    let mut usage = Usage::default();
    let n = pieces.len();
    for (i, p) in pieces.iter().enumerate() {
        let before = if summary.is_empty() {
            String::new()
        } else {
            format!("Summary of the earlier parts:\n\n{summary}\n\n")
        };
        let text = format!(
            "{before}Part {} of {n} of the conversation:\n\n{p}{INSTRUCTION}",
            i + 1
        );
        let piece_req = ChatRequest {
            system: req.system.clone(),
            messages: vec![ChatMessage::user_text(text)],
            tools: Vec::new(),
            cache_key: req.cache_key.clone(),
            output_schema: None,
            require_tool: false,
        };
        let c = provider
            .stream(&piece_req, cancel, &mut |_| {})
            .map_err(|e| CompactError::Provider(e.message))?;
        usage.input_tokens += c.usage.input_tokens;
        usage.output_tokens += c.usage.output_tokens;
        if c.finish_reason.as_deref() == Some("length") {
            return Err(CompactError::CutSummary(c.usage.output_tokens));
        }
        summary = c.text.trim().to_string();
        if summary.is_empty() {
            return Err(CompactError::EmptySummary);
        }
    }
    Ok(Completion {
        text: summary,
        usage,
        finish_reason: Some("stop".into()),
        ..Completion::default()
    })
}

/// Compacts `session_id` with `provider`. The caller holds the session's lease. A
/// conversation too long for the model's window is summarised in pieces. `window`: the
/// context window in tokens as the caller knows it (a smaller one the server told wins).
pub(crate) fn compact_with(
    sessions: &Sessions,
    session_id: &str,
    provider: &mut dyn Provider,
    cancel: &CancelFlag,
    meta: &AppendMeta,
    window: u64,
) -> Result<Compacted, CompactError> {
    let session = sessions.load_context(session_id)?;
    // The messages the model is sent (earlier summaries stand in the task state).
    let convo: Vec<&Message> = session
        .messages
        .iter()
        .filter(|m| !m.is_compaction())
        .collect();
    if convo.len() < 2 {
        return Err(CompactError::TooShort);
    }
    let mut req = window::build(sessions, &session);
    req.tools.clear();
    req.messages.push(ChatMessage::user_text(INSTRUCTION));
    let c = match provider.stream(&req, cancel, &mut |_| {}) {
        Ok(c) => c,
        // Too long to summarise at once: in pieces that fit the window the server told.
        Err(e) if e.kind == ErrorKind::ContextOverflow => {
            summarise_in_pieces(&req, provider, cancel, e)?
        }
        Err(e) => return Err(CompactError::Provider(e.message)),
    };
    if c.finish_reason.as_deref() == Some("length") {
        return Err(CompactError::CutSummary(c.usage.output_tokens));
    }
    let summary = c.text.trim().to_string();
    if summary.is_empty() {
        return Err(CompactError::EmptySummary);
    }
    let h = &session.header;
    let lifetime = match &h.ledger {
        Some(l) => (l.usage.input_tokens, l.usage.output_tokens),
        None => (h.token_input_total, h.token_output_total),
    };
    let window = provider.context_window().map_or(window, |w| w.min(window));
    let start = tail_start(&convo, window);
    let summary_seq = h.last_seq + 1;
    // The model's context from now on: the summary, then the kept tail (none: what follows).
    let context_from = convo.get(start).map_or(summary_seq, |m| m.seq);
    let text = format!(
        "Summary of the earlier conversation ({start} message{}; the model is sent this and the messages from #{context_from} on, and every message stays here):\n\n{summary}",
        if start == 1 { "" } else { "s" }
    );
    let row = NewMessage {
        role: Some(Role::System),
        parts: vec![crate::session::Part::text(text)],
        tool_metadata: Some(json!({
            COMPACTION_MARK: true,
            "replaced_messages": start,
            CONTEXT_FROM: context_from,
        })),
        ..NewMessage::default()
    };
    // What the next request carries until a model call says: about 4 characters a token.
    let chars: usize = std::iter::once(summary.len())
        .chain(
            convo[start..]
                .iter()
                .flat_map(|m| m.parts.iter())
                .map(|p| match p {
                    crate::session::Part::Text { text }
                    | crate::session::Part::Reasoning { text, .. } => text.len(),
                    _ => 0,
                }),
        )
        .sum();
    let update = StateUpdate {
        task_state: Change::Set(json!({
            "summary": summary,
            "compacted_at_ms": now_ms(),
            "replaced_messages": start,
            "context_tokens_estimate": chars.div_ceil(4),
            TASK_SUMMARY_SEQ: summary_seq,
            CONTEXT_FROM: context_from,
        })),
        // Lifetime usage is kept, this summary's call included.
        token_totals: Some((
            lifetime.0 + c.usage.input_tokens,
            lifetime.1 + c.usage.output_tokens,
        )),
        touch: true,
        ..StateUpdate::default()
    };
    sessions.append_with_state(session_id, &[row], meta, &update)?;
    Ok(Compacted {
        summarised: start,
        kept: convo.len() - start,
        stored: h.message_count + 1,
        usage: c.usage,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::location::Location;
    use crate::runtime::provider::StreamEvent;
    use crate::session::NewSession;

    /// Answers every request with `reply`.
    struct Fixed(Result<Completion, ProviderError>);

    impl Provider for Fixed {
        fn name(&self) -> &'static str {
            "fixed"
        }
        fn model(&self) -> &'static str {
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
            128_000,
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
        let cut = Completion {
            text: "The user wants".into(),
            finish_reason: Some("length".into()),
            usage: Usage {
                input_tokens: 900,
                output_tokens: 64,
            },
            ..Completion::default()
        };
        assert_eq!(
            compact_of(3, Ok(cut)),
            "the summary was cut at the model's output limit after 64 tokens (finish_reason: length), so it was not used; raise max_tokens in [provider] of config.toml"
        );
    }
}
