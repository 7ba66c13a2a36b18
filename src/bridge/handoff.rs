//! Choosing the session of a `chat` request (seed 000 §2's decision chain, which lives in
//! [`Sessions::decide`]); the turn adopts the caller's history into it under its own lease
//! ([`crate::runtime::agent::adopt`]). The warnings that tell the caller what happened come
//! from here.

use crate::runtime::agent::adopt::Adopted;
use crate::runtime::codes::WarningCode;
use crate::runtime::{Decision, SessionRequest, Sessions};
use crate::session::{NewSession, StoreError, conversation_key};

use super::error::{BridgeError, ErrorCode};
use super::history::History;
use super::protocol::{ChatRequest, Event, RecentSession};

/// The session a chat runs in, ready for its turn.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Chosen {
    /// Where the turn runs.
    pub session_id: String,
    /// `session_id_missing` or `session_not_found` when the conversation key found it.
    pub recovery_reason: Option<&'static str>,
    /// The decision's warning to send after `session_init`, if any.
    pub warnings: Vec<Event>,
    /// The conversation key a fork of the session keeps.
    pub conversation_key: Option<String>,
}

fn storage(e: StoreError) -> BridgeError {
    BridgeError::new(
        ErrorCode::Storage,
        crate::sanitize::line(&e.to_string()).into_owned(),
    )
}

/// Runs the decision chain for `req` (a new session is created here; nothing is written into
/// an existing one: the turn adopts the history under its lease).
pub(crate) fn choose(
    sessions: &Sessions,
    req: &ChatRequest,
    history: &History,
    workdir: &str,
) -> Result<Chosen, BridgeError> {
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
    let (session_id, recovery_reason) = match decision {
        Decision::Continue(id) | Decision::New(id) => (id, None),
        Decision::Recovered { session_id, reason } => (session_id, Some(reason)),
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
            (session_id, None)
        }
    };

    Ok(Chosen {
        session_id,
        recovery_reason,
        warnings,
        conversation_key: key,
    })
}

/// The warnings about the caller's history, after the decision's: the turn continued in a
/// fork, non-text parts were dropped.
pub(crate) fn adopted_warnings(
    rid: Option<&String>,
    adopted: Option<&Adopted>,
    dropped_parts: usize,
) -> Vec<Event> {
    let mut warnings = Vec::new();
    if let Some(f) = adopted.and_then(|a| a.fork.as_ref()) {
        warnings.push(Event::warning(
            rid.cloned(),
            WarningCode::HistoryDiverged.as_str(),
            format!(
                "message {} of your history differs from session {}; continuing in \
                 fork {} taken after its message {}, the session itself is unchanged",
                f.diverged_at + 1,
                f.from,
                f.id,
                f.at
            ),
        ));
    }
    if dropped_parts > 0 {
        warnings.push(Event::warning(
            rid.cloned(),
            WarningCode::ContentPartsDropped.as_str(),
            format!(
                "{dropped_parts} non-text content part(s) (images, files) were left out; \
                 protocol version 1 carries text only"
            ),
        ));
    }
    warnings
}
