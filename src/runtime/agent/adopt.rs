//! Adopting a caller's conversation (the bridge: an editor sends the whole history every
//! turn) into the session a turn runs in, under the turn's own lease: the stored prefix is
//! matched message by message, what the store lacks is appended, and a history that differs
//! from the store (edited or truncated on the caller's side) continues in a fork taken where
//! the two part; the stored session is never overwritten.

use super::base::{Agent, Opened};
use super::error::{StartCode, StartError};
use super::window::{is_compaction, is_incomplete};
use crate::runtime::lease::Lease;
use crate::runtime::sessions::Sessions;
use crate::session::{AppendMeta, Message, NewMessage, Part, Role, ToolCall};
use serde_json::Value;

/// The caller's conversation a turn adopts before it runs ([`super::start::TurnRequest::adopt`]).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Adopt {
    /// The conversation without system messages, ending with the new user message: the
    /// turn's prompt (stored by the turn, unless it is already stored unanswered).
    pub messages: Vec<Incoming>,
    /// The conversation key a fork keeps.
    pub conversation_key: Option<String>,
}

/// What adopting the caller's conversation did to the session.
#[derive(Debug, Clone, PartialEq)]
pub struct Adopted {
    /// The history parted from the session: the turn runs in this fork.
    pub fork: Option<Forked>,
    /// The new user message was already stored, unanswered (a retry): the turn answers it.
    pub prompt_stored: bool,
}

/// A fork taken because the caller's history parted from the stored session.
#[derive(Debug, Clone, PartialEq)]
pub struct Forked {
    /// The session the history parted from (unchanged).
    pub from: String,
    /// The fork (where the turn runs).
    pub id: String,
    /// The fork holds the session's messages up to this seq (0: none).
    pub at: i64,
    /// Index of the caller's first differing message (without system messages).
    pub diverged_at: usize,
}

/// A session brought up to the caller's conversation: where the turn runs, under which
/// lease, and what happened.
pub struct Adoption {
    /// The session the turn runs in (the fork, when one was taken).
    pub id: String,
    /// Its lease.
    pub lease: Lease,
    /// What adopting did.
    pub adopted: Adopted,
    /// The prompt the turn stores (`None`: already stored, unanswered).
    pub prompt: Option<String>,
}

/// Brings session `id`, whose `lease` the caller holds (the turn's own), up to the caller's
/// conversation: appends what the store lacks, or forks where the two part (the turn then
/// runs in the fork, under the fork's lease, taken before the session's is let go).
pub fn adopt(
    sessions: &Sessions,
    id: String,
    lease: Lease,
    adopt: &Adopt,
) -> Result<Adoption, StartError> {
    let Some(last) = adopt.messages.last() else {
        return Err(StartError::new(
            StartCode::Usage,
            "the conversation to adopt is empty",
        ));
    };
    let prompt = last.text.clone();
    let stored = sessions.load(&id)?.messages;
    let plan = reconcile(&stored, &adopt.messages);
    let (id, lease, fork) = match plan.fork_at {
        Some(at) => {
            let fork = sessions.fork_conversation(&id, at, adopt.conversation_key.as_deref())?;
            // Nobody knows the fork yet; its lease is taken before the session's goes.
            let fork_lease = super::base::lease_of(sessions, &fork.id)?;
            drop(lease);
            let forked = Forked {
                from: id,
                id: fork.id.clone(),
                at,
                diverged_at: plan.diverged_at,
            };
            (fork.id, fork_lease, Some(forked))
        }
        None => (id, lease, None),
    };
    if !plan.append.is_empty() {
        let new: Vec<_> = plan.append.iter().map(Incoming::to_new).collect();
        let meta = AppendMeta {
            workdir: Some(sessions.root().display().to_string()),
            ..AppendMeta::default()
        };
        sessions.append(&id, &new, &meta)?;
    }
    Ok(Adoption {
        id,
        lease,
        adopted: Adopted {
            fork,
            prompt_stored: plan.prompt_stored,
        },
        prompt: (!plan.prompt_stored).then_some(prompt),
    })
}

/// Stores `results` (tool messages answering calls the session waits on, which the front
/// end's own tools ran: the nonoka dialect's host tools) in session `id`, whose lease the
/// caller holds (the turn's own), in one append: a result for a call already answered is
/// skipped (a retried request), one for a call the session never made refuses the turn with
/// nothing written.
pub(crate) fn store_results(
    sessions: &Sessions,
    id: &str,
    results: &[NewMessage],
) -> Result<(), StartError> {
    if results.is_empty() {
        return Ok(());
    }
    let pending = sessions.interrupted_tool_calls(id)?;
    let stored = sessions.load(id)?.messages;
    let mut new = Vec::new();
    for r in results {
        let call = r.tool_call_id.as_deref().unwrap_or_default();
        if pending.iter().any(|c| c.id == call) {
            new.push(r.clone());
        } else if !stored
            .iter()
            .any(|m| m.tool_call_id.as_deref() == Some(call))
        {
            return Err(StartError::new(
                StartCode::Usage,
                format!(
                    "no call {} waits for its result in session {id}",
                    crate::sanitize::line(call)
                ),
            ));
        }
    }
    if new.is_empty() {
        return Ok(());
    }
    let meta = AppendMeta {
        workdir: Some(sessions.root().display().to_string()),
        ..AppendMeta::default()
    };
    sessions.append(id, &new, &meta)?;
    Ok(())
}

impl Agent {
    /// [`adopt`] for a session [`Agent::open`] opened.
    pub(crate) fn adopt(
        opened: Opened,
        conversation: &Adopt,
    ) -> Result<(Opened, Adopted, Option<String>), StartError> {
        let Opened { agent, id, lease } = opened;
        let a = adopt(&agent.sessions, id, lease, conversation)?;
        let opened = Opened {
            agent,
            id: a.id,
            lease: a.lease,
        };
        Ok((opened, a.adopted, a.prompt))
    }
}

/// A caller message in the store's terms; `system` and `developer` messages are not part of
/// a transcript (neocode has its own instructions) and are dropped before this.
#[derive(Debug, Clone, PartialEq)]
pub struct Incoming {
    /// Author.
    pub role: Role,
    /// Text parts joined by newlines (as the store joins them for the conversation key).
    pub text: String,
    /// Calls of an assistant message.
    pub tool_calls: Vec<ToolCall>,
    /// The call a tool message answers.
    pub tool_call_id: Option<String>,
    /// A tool message standing for a result the caller did not send (the nonoka dialect: a
    /// call the bridge ran comes back without its result): it matches the stored result of
    /// the same call whatever its text.
    pub placeholder: bool,
}

impl Incoming {
    /// The message to append.
    pub(crate) fn to_new(&self) -> NewMessage {
        NewMessage {
            role: Some(self.role),
            parts: if self.text.is_empty() {
                Vec::new()
            } else {
                vec![Part::text(self.text.clone())]
            },
            tool_calls: self.tool_calls.clone(),
            tool_call_id: self.tool_call_id.clone(),
            ..NewMessage::default()
        }
    }
}

/// What to do with a chosen session so that it holds the caller's history.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Reconciled {
    /// `None`: the stored transcript is a prefix of the caller's history. `Some(seq)`: the
    /// two part after stored message `seq` (0: before the first one); continue in a fork
    /// taken there.
    pub fork_at: Option<i64>,
    /// Index (in the caller's history without system messages) of the first message that
    /// differs, for the warning.
    pub diverged_at: usize,
    /// Caller messages the session (or the fork) lacks, before the new user message.
    pub append: Vec<Incoming>,
    /// The new user message is already the last stored message, unanswered (an earlier
    /// turn failed before the reply, and the caller retries): the turn answers it instead
    /// of storing it twice.
    pub prompt_stored: bool,
}

/// Matches the caller's history (ending with the new user message) against the stored transcript (system messages ignored on
/// both sides). The new user message is never in `append`: the turn appends it.
///
/// A compaction keeps every message (its summary is a system message, ignored here), so the
/// stored transcript is compared whole. A session compacted before that holds a summary and
/// the recent tail while the caller still sends the whole conversation: the tail is aligned
/// with the latest place in the caller's history where it fits, and what precedes that place
/// counts as summarised.
pub(crate) fn reconcile(stored: &[Message], history: &[Incoming]) -> Reconciled {
    let full = reconcile_all(stored, history);
    // Replies at the end that were cut off (stored incomplete) and that the caller does not
    // have: a caller retrying after the cut asks again, in the same session.
    let kept = stored
        .iter()
        .rposition(|m| !is_incomplete(m))
        .map_or(0, |i| i + 1);
    if full.fork_at.is_some() && kept < stored.len() {
        let again = reconcile_all(&stored[..kept], history);
        if again.fork_at.is_none() {
            return again;
        }
    }
    full
}

fn reconcile_all(stored: &[Message], history: &[Incoming]) -> Reconciled {
    let Some((prompt, before)) = history.split_last() else {
        return Reconciled {
            fork_at: None,
            diverged_at: 0,
            append: Vec::new(),
            prompt_stored: false,
        };
    };
    // Only a summary that replaced what came before it cuts the stored history short.
    let summary = stored
        .iter()
        .rposition(|m| is_compaction(m) && m.context_from().is_none());
    let tail: Vec<&Message> = stored[summary.map_or(0, |i| i + 1)..]
        .iter()
        .filter(|m| m.role != Role::System)
        .collect();
    // Where the kept part of the store starts: after the summary, or at the beginning.
    let base_seq = summary.map_or(0, |i| stored[i].seq);
    let (start, m) = match summary {
        None => (0, compare(&tail, before, prompt)),
        Some(_) if tail.is_empty() => {
            // Only the summary is left: it covers everything the caller sent before.
            return Reconciled {
                fork_at: None,
                diverged_at: before.len(),
                append: Vec::new(),
                prompt_stored: false,
            };
        }
        Some(_) => align(&tail, before, prompt),
    };
    let common = m.common;
    if m.complete {
        return Reconciled {
            fork_at: None,
            diverged_at: start + common,
            append: if m.prompt_stored {
                Vec::new()
            } else {
                before[start + common..].to_vec()
            },
            prompt_stored: m.prompt_stored,
        };
    }
    Reconciled {
        fork_at: Some(if common == 0 {
            base_seq
        } else {
            tail[common - 1].seq
        }),
        diverged_at: start + common,
        append: before[start + common..].to_vec(),
        prompt_stored: false,
    }
}

/// How far stored messages match the caller's, from the first stored one on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Match {
    /// Stored messages matched in order.
    common: usize,
    /// Every stored message matched (the caller may have more).
    complete: bool,
    /// All but the last stored message matched the caller's history entirely, and the last
    /// is the new user message, unanswered.
    prompt_stored: bool,
}

fn compare(stored: &[&Message], caller: &[Incoming], prompt: &Incoming) -> Match {
    let common = stored
        .iter()
        .zip(caller)
        .take_while(|(s, c)| same(s, c))
        .count();
    if common == stored.len() {
        return Match {
            common,
            complete: true,
            prompt_stored: false,
        };
    }
    let retry =
        common == caller.len() && stored.len() == common + 1 && same(stored[common], prompt);
    Match {
        common,
        complete: retry,
        prompt_stored: retry,
    }
}

/// The latest start in `caller` where the whole compacted tail fits; else the start with the
/// longest partial fit; else nothing fits (fork right after the summary).
fn align(tail: &[&Message], caller: &[Incoming], prompt: &Incoming) -> (usize, Match) {
    let mut best: Option<(usize, Match)> = None;
    for start in (0..=caller.len()).rev() {
        let m = compare(tail, &caller[start..], prompt);
        if m.complete {
            return (start, m);
        }
        if m.common > 0 && best.is_none_or(|(_, b)| m.common > b.common) {
            best = Some((start, m));
        }
    }
    best.unwrap_or((
        caller.len(),
        Match {
            common: 0,
            complete: false,
            prompt_stored: false,
        },
    ))
}

/// A stored message and a caller message are the same message. Text is compared without
/// surrounding whitespace (callers trim); reasoning and images are not compared.
fn same(s: &Message, c: &Incoming) -> bool {
    let any_text = c.placeholder && c.role == Role::Tool;
    if s.role != c.role || (!any_text && s.text().trim() != c.text.trim()) {
        return false;
    }
    match s.role {
        Role::Assistant => {
            s.tool_calls.len() == c.tool_calls.len()
                && s.tool_calls
                    .iter()
                    .zip(&c.tool_calls)
                    .all(|(a, b)| a.id == b.id && a.name == b.name && same_args(a, b))
        }
        Role::Tool => s.tool_call_id == c.tool_call_id,
        Role::User | Role::System => true,
    }
}

/// Arguments compare as JSON values when both parse (callers re-serialise them), else as text.
fn same_args(a: &ToolCall, b: &ToolCall) -> bool {
    match (
        serde_json::from_str::<Value>(&a.arguments),
        serde_json::from_str::<Value>(&b.arguments),
    ) {
        (Ok(x), Ok(y)) => x == y,
        _ => a.arguments == b.arguments,
    }
}
