//! The durable queue: messages typed while a turn runs (or sent by another process with
//! `neocode run --queue`), kept as rows until the process holding the session's lease
//! delivers them. A row is `queued` until [`Store::claim_queued`] or [`Store::take_steer`]
//! marks it `delivered`; removing one deletes it.

use rusqlite::{OptionalExtension, params};

use super::Store;
use crate::session::error::Result;

/// A message waiting in a session's queue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueuedMessage {
    /// Row id: the queue's order (oldest first).
    pub id: i64,
    pub session_id: String,
    pub text: String,
    /// Delivered at the next tool boundary of the running turn (Alt-Enter), not as a turn
    /// of its own.
    pub steer: bool,
    /// When it was queued, ms since the epoch.
    pub created_at_ms: i64,
}

const COLS: &str = "id, session_id, text, steer, created_at_ms";

fn from_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<QueuedMessage> {
    Ok(QueuedMessage {
        id: r.get(0)?,
        session_id: r.get(1)?,
        text: r.get(2)?,
        steer: r.get::<_, i64>(3)? != 0,
        created_at_ms: r.get(4)?,
    })
}

impl Store {
    /// Queues `text` for session `session_id` (which must exist); the row, with its id.
    pub fn enqueue(&self, session_id: &str, text: &str, steer: bool) -> Result<QueuedMessage> {
        let now = self.now();
        self.write(|tx| {
            self.require(tx, session_id)?;
            tx.execute(
                "INSERT INTO queued_messages (session_id, text, steer, created_at_ms)
                 VALUES (?1, ?2, ?3, ?4)",
                params![session_id, text, i64::from(steer), now],
            )?;
            Ok(QueuedMessage {
                id: tx.last_insert_rowid(),
                session_id: session_id.to_string(),
                text: text.to_string(),
                steer,
                created_at_ms: now,
            })
        })
    }

    /// The messages still waiting in a session's queue, oldest first.
    pub fn queued(&self, session_id: &str) -> Result<Vec<QueuedMessage>> {
        self.with_conn(|c| {
            let mut st = c.prepare_cached(&format!(
                "SELECT {COLS} FROM queued_messages
                 WHERE session_id = ?1 AND status = 'queued' ORDER BY id"
            ))?;
            let rows = st.query_map([session_id], from_row)?;
            Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
        })
    }

    /// Marks queued message `id` of `session_id` delivered and returns it; `None` when it is
    /// no longer waiting (removed, or delivered by someone else). The caller holds the
    /// session's lease and sends the text at once.
    pub fn claim_queued(&self, session_id: &str, id: i64) -> Result<Option<QueuedMessage>> {
        let now = self.now();
        self.write(|tx| {
            let row = tx
                .query_row(
                    &format!(
                        "UPDATE queued_messages SET status = 'delivered', delivered_at_ms = ?3
                         WHERE id = ?1 AND session_id = ?2 AND status = 'queued'
                         RETURNING {COLS}"
                    ),
                    params![id, session_id, now],
                    from_row,
                )
                .optional()?;
            Ok(row)
        })
    }

    /// Takes every steering message waiting for session `session_id` (oldest first), marking
    /// them delivered: the running turn sends them at its next tool boundary.
    pub fn take_steer(&self, session_id: &str) -> Result<Vec<QueuedMessage>> {
        let now = self.now();
        self.write(|tx| {
            let mut st = tx.prepare_cached(&format!(
                "UPDATE queued_messages SET status = 'delivered', delivered_at_ms = ?2
                 WHERE session_id = ?1 AND status = 'queued' AND steer = 1
                 RETURNING {COLS}"
            ))?;
            let rows = st.query_map(params![session_id, now], from_row)?;
            let mut out = rows.collect::<rusqlite::Result<Vec<_>>>()?;
            out.sort_by_key(|m| m.id);
            Ok(out)
        })
    }

    /// Removes a message still waiting; whether it was.
    pub fn remove_queued(&self, session_id: &str, id: i64) -> Result<bool> {
        self.write(|tx| {
            let n = tx.execute(
                "DELETE FROM queued_messages
                 WHERE id = ?1 AND session_id = ?2 AND status = 'queued'",
                params![id, session_id],
            )?;
            Ok(n > 0)
        })
    }

    /// Replaces the text of a message still waiting; whether it was.
    pub fn edit_queued(&self, session_id: &str, id: i64, text: &str) -> Result<bool> {
        self.write(|tx| {
            let n = tx.execute(
                "UPDATE queued_messages SET text = ?3
                 WHERE id = ?1 AND session_id = ?2 AND status = 'queued'",
                params![id, session_id, text],
            )?;
            Ok(n > 0)
        })
    }
}

#[cfg(test)]
mod tests {
    use crate::session::{NewSession, Store, WorkspacePaths};

    fn store() -> (tempfile::TempDir, Store, String) {
        let tmp = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let paths = WorkspacePaths {
            root: tmp.path().join("ws"),
            dir: tmp.path().join("data"),
        };
        let store = Store::open(paths).unwrap_or_else(|e| panic!("{e}"));
        let h = store
            .create_session(NewSession::default())
            .unwrap_or_else(|e| panic!("{e}"));
        (tmp, store, h.id)
    }

    #[test]
    fn queued_rows_are_claimed_once_removed_or_edited_and_steer_is_taken_apart() {
        let (_tmp, s, id) = store();
        let a = s.enqueue(&id, "first", false).unwrap();
        let b = s.enqueue(&id, "second", false).unwrap();
        let st = s.enqueue(&id, "look at the tests too", true).unwrap();
        assert_eq!(s.queued(&id).unwrap().len(), 3);
        assert!(s.edit_queued(&id, b.id, "second, edited").unwrap());
        let taken = s.take_steer(&id).unwrap();
        assert_eq!(taken.iter().map(|m| m.id).collect::<Vec<_>>(), vec![st.id]);
        assert!(s.claim_queued(&id, a.id).unwrap().is_some());
        assert!(
            s.claim_queued(&id, a.id).unwrap().is_none(),
            "delivered once"
        );
        let left = s.queued(&id).unwrap();
        assert_eq!(left.len(), 1);
        assert_eq!(left[0].text, "second, edited");
        assert!(s.remove_queued(&id, b.id).unwrap());
        assert!(s.queued(&id).unwrap().is_empty());
        assert!(s.enqueue("nope", "x", false).is_err(), "unknown session");
    }
}
