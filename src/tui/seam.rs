//! The seam between the router (`tui::app`) and the screens that own their transitions
//! (`tui::conversation`, `tui::browse`): what a transition sees of the router ([`Ctx`]) and
//! what it leaves the router to do ([`Ask`]), and the request [`Slot`]s whose stale answers
//! the router drops. The screens never import the router: the router builds a `Ctx` from its
//! own fields and carries out the asks, in order.

use std::path::Path;

use crate::tui::action::Action;
use crate::tui::dialog::{Overlay, Status};
use crate::tui::effect::Effect;
use crate::tui::pane::Detail;
use crate::tui::screen::Screen;
use crate::tui::worker::Request;

/// What a screen's transition leaves to the router, in order: work for the outside world, or
/// a request only the router can make (it holds the request tokens, the list and the open
/// session).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Ask {
    /// Carry this out as it is (a turn effect).
    Effect(Effect),
    /// Storage work whose answer is never stale (a one-call intent: rename, mark calls).
    Request(Request),
    /// A read whose answer counts only while it is the slot's latest (an older one in flight
    /// is stale from now on).
    Load(Slot, Request),
    /// Whatever is in flight for the slot is stale (its answer is dropped).
    Forget(Slot),
    /// Read the open session again.
    RefreshDetail,
    /// Read the list's first page again (the turn's session is the newest now).
    ReloadTop,
    /// Read the list again where it is (a session's model or transcript changed).
    ReloadList,
    /// The new session a turn started exists now: open it like any other, and say so.
    OpenNew(String),
    /// An action of the router's own (`/new`, `/fork`, a view key while a card waits).
    Act(Action),
    /// `/find TEXT`: the transcript search, opened with TEXT as its query.
    Find(String),
}

/// Requests whose stale answers are dropped: only the latest token per slot counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Slot {
    List,
    Detail,
    Usage,
    Search,
    Filter,
    History,
    /// Transcript search in the open session.
    Find,
    /// The rewind dialog's preview (a newer one replaces it).
    Rewind,
    /// The Info tab's file changes.
    FileChanges,
}

/// The part of the router a conversation transition sees: the clock, the screen and where
/// files are written (read), the open session, the dialog and the status line (set).
pub(crate) struct Ctx<'a> {
    /// The clock, ms since the epoch.
    pub now_ms: i64,
    pub screen: Screen,
    /// The session open in the detail pane or the conversation.
    pub detail: Option<&'a mut Detail>,
    pub overlay: &'a mut Overlay,
    pub status: &'a mut Option<Status>,
    /// Relative paths (`/attach`) are from here: the current directory.
    pub cwd: &'a Path,
}

impl Ctx<'_> {
    /// A status-line message.
    pub(crate) fn say(&mut self, text: impl Into<String>) {
        *self.status = Some(Status {
            text: text.into(),
            error: false,
            at_ms: self.now_ms,
        });
    }

    /// A status-line error.
    pub(crate) fn fail(&mut self, text: impl Into<String>) {
        *self.status = Some(Status {
            text: text.into(),
            error: true,
            at_ms: self.now_ms,
        });
    }

    /// A status-line error, and nothing to ask: what a refused command returns.
    pub(crate) fn refuse(&mut self, text: impl Into<String>) -> Vec<Ask> {
        self.fail(text);
        Vec::new()
    }

    /// The open session, read.
    pub(crate) fn detail(&self) -> Option<&Detail> {
        self.detail.as_deref()
    }

    /// The open session's id.
    pub(crate) fn open_id(&self) -> Option<String> {
        self.detail().map(|d| d.id.clone())
    }
}
