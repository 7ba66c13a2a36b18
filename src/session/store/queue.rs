//! The durable queue: messages typed while a turn runs (or sent by another process with
//! `neocode run --queue`), kept as rows until the process holding the session's lease
//! delivers them. A row is `queued` until the append that stores it as a user message marks
//! it `delivered`, in that append's own transaction ([`crate::session::StateUpdate::delivers`]): a kill
//! before that commit leaves it queued, after it leaves it stored. Removing one deletes it.

use rusqlite::{OptionalExtension, Transaction, params};

use super::core::Store;
use crate::session::error::{Result, StoreError};

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
    pub(crate) fn enqueue(
        &self,
        session_id: &str,
        text: &str,
        steer: bool,
    ) -> Result<QueuedMessage> {
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
    pub(crate) fn queued(&self, session_id: &str) -> Result<Vec<QueuedMessage>> {
        self.with_conn(|c| {
            let mut st = c.prepare_cached(&format!(
                "SELECT {COLS} FROM queued_messages
                 WHERE session_id = ?1 AND status = 'queued' ORDER BY id"
            ))?;
            let rows = st.query_map([session_id], from_row)?;
            Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
        })
    }

    /// Queued message `id` of `session_id` if it still waits; `None` when it does not
    /// (removed, or delivered by someone else). Nothing is marked: the append that stores it
    /// as a user message marks it delivered in its own transaction ([`crate::session::StateUpdate::delivers`]).
    pub(crate) fn waiting(&self, session_id: &str, id: i64) -> Result<Option<QueuedMessage>> {
        self.with_conn(|c| {
            let row = c
                .query_row(
                    &format!(
                        "SELECT {COLS} FROM queued_messages
                         WHERE id = ?1 AND session_id = ?2 AND status = 'queued'"
                    ),
                    params![id, session_id],
                    from_row,
                )
                .optional()?;
            Ok(row)
        })
    }

    /// The steering messages waiting for session `session_id`, oldest first: the running
    /// turn stores each at its next tool boundary, marking it delivered in that append.
    pub(crate) fn steer_waiting(&self, session_id: &str) -> Result<Vec<QueuedMessage>> {
        self.with_conn(|c| {
            let mut st = c.prepare_cached(&format!(
                "SELECT {COLS} FROM queued_messages
                 WHERE session_id = ?1 AND status = 'queued' AND steer = 1 ORDER BY id"
            ))?;
            let rows = st.query_map([session_id], from_row)?;
            Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
        })
    }

    /// Marks queued message `id` delivered inside a caller's transaction (an append's); fails
    /// with [`StoreError::NotQueued`] when it no longer waits, so the transaction (and the
    /// message it stores) rolls back: delivered once, and never delivered without being stored.
    pub(super) fn deliver_in(&self, tx: &Transaction<'_>, session_id: &str, id: i64) -> Result<()> {
        let n = tx.execute(
            "UPDATE queued_messages SET status = 'delivered', delivered_at_ms = ?3
             WHERE id = ?1 AND session_id = ?2 AND status = 'queued'",
            params![id, session_id, self.now()],
        )?;
        if n == 0 {
            return Err(StoreError::NotQueued(id));
        }
        Ok(())
    }

    /// Removes a message still waiting; whether it was.
    pub(crate) fn remove_queued(&self, session_id: &str, id: i64) -> Result<bool> {
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
    #[cfg(test)]
    pub(crate) fn edit_queued(&self, session_id: &str, id: i64, text: &str) -> Result<bool> {
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
    use crate::session::{
        AppendMeta, NewMessage, NewSession, Role, StateUpdate, Store, StoreError, WorkspacePaths,
    };

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
    fn queued_rows_are_delivered_once_by_the_append_that_stores_them() {
        let (_tmp, s, id) = store();
        let a = s.enqueue(&id, "first", false).unwrap();
        let b = s.enqueue(&id, "second", false).unwrap();
        let st = s.enqueue(&id, "look at the tests too", true).unwrap();
        assert_eq!(s.queued(&id).unwrap().len(), 3);
        assert!(s.edit_queued(&id, b.id, "second, edited").unwrap());
        let steer = s.steer_waiting(&id).unwrap();
        assert_eq!(steer.iter().map(|m| m.id).collect::<Vec<_>>(), vec![st.id]);
        assert_eq!(s.queued(&id).unwrap().len(), 3, "looking marks nothing");
        assert!(s.waiting(&id, a.id).unwrap().is_some());
        let deliver = |qid: i64| {
            s.append_with_state(
                &id,
                &[NewMessage::text(Role::User, "first")],
                &AppendMeta::default(),
                &StateUpdate {
                    delivers: vec![qid],
                    ..StateUpdate::default()
                },
            )
        };
        deliver(a.id).unwrap();
        assert!(s.waiting(&id, a.id).unwrap().is_none(), "delivered");
        let again = deliver(a.id);
        assert!(
            matches!(again, Err(StoreError::NotQueued(n)) if n == a.id),
            "delivered once: {again:?}"
        );
        assert_eq!(
            s.load_header(&id).unwrap().message_count,
            1,
            "the refused append stored nothing"
        );
        deliver(st.id).unwrap();
        let left = s.queued(&id).unwrap();
        assert_eq!(left.len(), 1);
        assert_eq!(left[0].text, "second, edited");
        assert!(s.remove_queued(&id, b.id).unwrap());
        assert!(s.queued(&id).unwrap().is_empty());
        assert!(deliver(b.id).is_err(), "a removed message is not delivered");
        assert!(s.enqueue("nope", "x", false).is_err(), "unknown session");
    }
}
