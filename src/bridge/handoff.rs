//! Choosing the session of a `chat` request (seed 000 §2's decision chain, which lives in
//! [`Sessions::decide`]) and bringing it up to the caller's history: the events that tell
//! the caller what happened (`session_init`, warnings) come from here.

use crate::runtime::agent::{Lease, LeaseError, WarningCode};
use crate::runtime::{Decision, SessionRequest, Sessions};
use crate::session::{AppendMeta, NewSession, StoreError, conversation_key};

use super::history::{self, History};
use super::protocol::{ChatRequest, Event, RecentSession};

/// The session a chat runs in, ready for its turn.
#[derive(Debug, Clone, PartialEq)]
pub struct Chosen {
    /// Where the turn runs.
    pub session_id: String,
    /// `session_id_missing` or `session_not_found` when the conversation key found it.
    pub recovery_reason: Option<&'static str>,
    /// Warnings to send after `session_init`.
    pub warnings: Vec<Event>,
    /// The new user message is already stored, unanswered: the turn answers it.
    pub prompt_stored: bool,
}

/// Why a chat could not get its session: an `error` event's code and message.
pub type ChooseError = (&'static str, String);

fn storage(e: StoreError) -> ChooseError {
    (
        "storage",
        crate::sanitize::line(&e.to_string()).into_owned(),
    )
}

/// Runs the decision chain for `req`, then appends what the session lacks of the caller's
/// history, forking where the two disagree. Writes happen only after the request was
/// checked (the caller's `History` is already valid), and never into a session another
/// process is running a turn in (`busy`, nothing written).
#[expect(clippy::too_many_lines)]
pub fn choose(
    sessions: &Sessions,
    req: &ChatRequest,
    history: &History,
    workdir: &str,
) -> Result<Chosen, ChooseError> {
    let rid = || req.request_id.clone();
    let given_key = req.conversation_key.clone().filter(|k| !k.is_empty());
    // The key is stored with every session the bridge creates; a request without one
    // gets it computed from the first user message (the same function the caller uses).
    let key = given_key
        .clone()
        .or_else(|| history.first_user_text().map(conversation_key));
    let decision = sessions
        .decide(
            &SessionRequest {
                new_session: req.new_session,
                session_id: req.session_id.clone(),
                // Recovery only ever looks at the caller's own key: the seed's CLI does not
                // guess a continuation the caller did not claim.
                conversation_key: given_key,
                has_continuation: history.has_continuation(),
            },
            NewSession {
                workdir: workdir.to_string(),
                model: req.model.clone().unwrap_or_default(),
                conversation_key: key.clone(),
                ..NewSession::default()
            },
        )
        .map_err(storage)?;
    let mut warnings = Vec::new();
    let (mut session_id, recovery_reason, fresh) = match decision {
        Decision::Continue(id) => (id, None, false),
        Decision::New(id) => (id, None, true),
        Decision::Recovered { session_id, reason } => (session_id, Some(reason), false),
        Decision::NewWithWarning {
            session_id,
            warning,
            recent,
        } => {
            let message = match warning {
                WarningCode::SessionNotFoundStartingNew => format!(
                    "session {} is not in this workspace; starting a new session",
                    crate::sanitize::line(req.session_id.as_deref().unwrap_or_default())
                ),
                _ => "the history continues a conversation but no session id came with it and \
                      the conversation key matched none; starting a new session"
                    .to_string(),
            };
            warnings.push(Event::Warning {
                request_id: rid(),
                code: warning.to_string(),
                message,
                recent_sessions: Some(
                    recent
                        .into_iter()
                        .map(|(id, title)| RecentSession { id, title })
                        .collect(),
                ),
            });
            (session_id, None, true)
        }
    };

    // Held while the caller's history is written, so it never lands in the middle of a turn
    // another process runs; released before the turn takes its own lease.
    let _lease = if fresh {
        None
    } else {
        Some(
            Lease::acquire(sessions.data_dir(), &session_id).map_err(|e| match e {
                LeaseError::Busy { pid } => (
                    "busy",
                    match pid {
                        Some(p) => format!("session {session_id} is running in pid {p}"),
                        None => format!("session {session_id} is running in another process"),
                    },
                ),
                LeaseError::Io(m) => ("storage", m),
            })?,
        )
    };
    let stored = if fresh {
        Vec::new()
    } else {
        sessions.load(&session_id).map_err(storage)?.messages
    };
    let plan = history::reconcile(&stored, history);
    if let Some(at) = plan.fork_at {
        let fork = sessions
            .fork_conversation(&session_id, at, key.as_deref())
            .map_err(storage)?;
        warnings.push(Event::warning(
            rid(),
            WarningCode::HistoryDiverged.as_str(),
            format!(
                "message {} of your history differs from session {session_id}; continuing in \
                 fork {} taken after its message {at}, the session itself is unchanged",
                plan.diverged_at + 1,
                fork.id
            ),
        ));
        session_id = fork.id;
    }
    if !plan.append.is_empty() {
        let new: Vec<_> = plan.append.iter().map(|m| m.to_new()).collect();
        sessions
            .append(
                &session_id,
                &new,
                &AppendMeta {
                    workdir: Some(workdir.to_string()),
                    ..AppendMeta::default()
                },
            )
            .map_err(storage)?;
    }
    if history.dropped_parts > 0 {
        warnings.push(Event::warning(
            rid(),
            WarningCode::ContentPartsDropped.as_str(),
            format!(
                "{} non-text content part(s) (images, files) were left out; protocol version 1 \
                 carries text only",
                history.dropped_parts
            ),
        ));
    }
    Ok(Chosen {
        session_id,
        recovery_reason,
        warnings,
        prompt_stored: plan.prompt_stored,
    })
}
