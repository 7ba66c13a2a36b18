//! The lifecycle seed's new-or-continue decision chain (seed 000 §2): which session a
//! request lands in, with conversation-key recovery when the caller lost its session id.

use crate::session::{ListQuery, NewSession, Result, StoreError};

use super::codes::WarningCode;
use super::sessions::Sessions;

/// How the lifecycle seed's decision chain ended for one request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Continue this existing session.
    Continue(String),
    /// A brand-new session was created.
    New(String),
    /// The id was missing or unknown, and the conversation key found this session.
    Recovered {
        /// Session switched back to.
        session_id: String,
        /// `session_id_missing` or `session_not_found`.
        reason: &'static str,
    },
    /// A new session was created although the request looked like a continuation; the
    /// warning names recent sessions the user may have meant.
    NewWithWarning {
        /// The new session.
        session_id: String,
        /// `session_id_missing_starting_fresh` or `session_not_found_starting_new`.
        warning: WarningCode,
        /// Recently active sessions (id, title).
        recent: Vec<(String, String)>,
    },
}

/// What a request says about which session it belongs to.
#[derive(Debug, Clone, Default)]
pub struct SessionRequest {
    /// The caller explicitly asked for a new session (e.g. `/new`).
    pub new_session: bool,
    /// The session id the caller holds, if any.
    pub session_id: Option<String>,
    /// SHA-256 of the first user message.
    pub conversation_key: Option<String>,
    /// The request's history contains assistant or tool messages.
    pub has_continuation: bool,
}

impl Sessions {
    /// The lifecycle seed's new-or-continue decision chain, run where the session is chosen.
    pub fn decide(&self, req: &SessionRequest, new: NewSession) -> Result<Decision> {
        if req.new_session {
            return Ok(Decision::New(self.new_session(new)?.id));
        }
        if let Some(id) = req.session_id.as_deref().filter(|s| !s.is_empty()) {
            match self.store().load_header(id) {
                Ok(h) => return Ok(Decision::Continue(h.id)),
                Err(StoreError::NotFound { .. }) => {
                    if let Some(found) = self.recovered(req, "session_not_found")? {
                        return Ok(found);
                    }
                    return self.new_with_warning(new, WarningCode::SessionNotFoundStartingNew);
                }
                Err(e) => return Err(e),
            }
        }
        if let Some(found) = self.recovered(req, "session_id_missing")? {
            return Ok(found);
        }
        if req.has_continuation {
            return self.new_with_warning(new, WarningCode::SessionIdMissingStartingFresh);
        }
        Ok(Decision::New(self.new_session(new)?.id))
    }

    /// Forks `id` after message `at_seq` for a caller whose history parted from the stored
    /// one there; the fork carries the conversation key, so a later recovery by key lands in
    /// the fork the caller continues rather than in the transcript it left.
    pub(crate) fn fork_conversation(
        &self,
        id: &str,
        at_seq: i64,
        conversation_key: Option<&str>,
    ) -> Result<crate::session::SessionHeader> {
        let fork = self.fork(id, Some(at_seq))?;
        if let Some(key) = conversation_key.filter(|k| !k.is_empty()) {
            self.store().set_conversation_key(&fork.id, key)?;
        }
        Ok(fork)
    }

    /// The session the conversation key finds, recovered for `reason`.
    fn recovered(&self, req: &SessionRequest, reason: &'static str) -> Result<Option<Decision>> {
        let found = match req.conversation_key.as_deref() {
            Some(k) if !k.is_empty() => self.store().find_by_conversation_key(k)?,
            _ => None,
        };
        Ok(found.map(|s| Decision::Recovered {
            session_id: s.id,
            reason,
        }))
    }

    /// A new session, with `warning` and the recent sessions the caller may have meant
    /// (listed before the new session exists: it is not one the caller meant).
    fn new_with_warning(&self, new: NewSession, warning: WarningCode) -> Result<Decision> {
        let recent = self.recent(5)?;
        let created = self.new_session(new)?;
        Ok(Decision::NewWithWarning {
            session_id: created.id,
            warning,
            recent,
        })
    }

    fn recent(&self, n: usize) -> Result<Vec<(String, String)>> {
        Ok(self
            .list(&ListQuery {
                limit: n,
                ..ListQuery::default()
            })?
            .items
            .into_iter()
            .map(|s| (s.id.clone(), s.display_title().to_string()))
            .collect())
    }
}
