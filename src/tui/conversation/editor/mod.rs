//! The editor part of the conversation: the message being written ([`Composer`]), the `@`
//! picker and Tab completion over the workspace's files (`picker`, `complete`), the images
//! waiting to go with the next message, the unsent text of conversations left, and the
//! Ctrl-G request to edit the draft in `$EDITOR`. Its fields are its own: the conversation's
//! transitions and the router reach them through these methods.

mod complete;
pub(crate) mod picker;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use crate::tui::composer::{Composer, Draft};

/// What the conversation's editor holds.
pub(super) struct Editor {
    composer: Composer,
    /// Workspace files for `@path` completion, once listed.
    files: Option<Arc<Vec<String>>>,
    /// Paths the last `@` completion left to choose from, or the `@` picker's matches
    /// (shown above the editor).
    path_matches: Vec<String>,
    /// The `@` picker is open (its keys come first); `path_sel` is its chosen row.
    picker: bool,
    path_sel: usize,
    /// The workspace's files were asked of the worker (once).
    files_asked: bool,
    /// The workspace root (`@path` attachments are read from it).
    root: PathBuf,
    /// Ctrl-G asked for the draft to be edited in `$EDITOR` (the loop runs it).
    edit_draft: bool,
    /// Images to send with the next message (`/attach`, a pasted image path).
    attachments: Vec<PathBuf>,
    /// Unsent text of conversations left, by session id ("" for the new session being
    /// written): it is there again when the conversation is opened again.
    drafts: HashMap<String, Draft>,
}

impl Editor {
    /// An empty editor.
    pub(super) fn new() -> Editor {
        Editor {
            composer: Composer::new(),
            files: None,
            path_matches: Vec::new(),
            picker: false,
            path_sel: 0,
            files_asked: false,
            root: PathBuf::new(),
            edit_draft: false,
            attachments: Vec::new(),
            drafts: HashMap::new(),
        }
    }

    /// The message editor, read.
    pub(super) fn composer(&self) -> &Composer {
        &self.composer
    }

    /// The message editor, to edit.
    pub(super) fn composer_mut(&mut self) -> &mut Composer {
        &mut self.composer
    }

    /// The workspace root `@path` attachments are read from.
    pub(super) fn set_root(&mut self, root: PathBuf) {
        self.root = root;
    }

    /// The workspace's files, once listed.
    pub(super) fn files(&self) -> Option<&Arc<Vec<String>>> {
        self.files.as_ref()
    }

    /// The workspace's files arrived; whether the picker waits for them.
    pub(super) fn set_files(&mut self, files: Vec<String>) -> bool {
        self.files = Some(Arc::new(files));
        self.picker
    }

    /// The paths offered above the editor (the picker's matches or the last completion's).
    pub(super) fn path_matches(&self) -> &[String] {
        &self.path_matches
    }

    /// The picker's chosen row, while it lists files.
    pub(super) fn picker_row(&self) -> Option<usize> {
        self.picker_open().then_some(self.path_sel)
    }

    /// Closes the picker and forgets the paths offered.
    pub(super) fn close_picker(&mut self) {
        self.path_matches.clear();
        self.picker = false;
    }

    /// Forgets the paths offered (an edit made them stale); the picker follows the next
    /// refresh.
    pub(super) fn clear_matches(&mut self) {
        self.path_matches.clear();
    }

    /// Ctrl-G: the loop edits the draft in `$EDITOR`.
    pub(super) fn ask_edit(&mut self) {
        self.edit_draft = true;
    }

    /// Whether Ctrl-G asked for `$EDITOR` (the request is taken).
    pub(super) fn take_edit(&mut self) -> bool {
        std::mem::take(&mut self.edit_draft)
    }

    /// Images waiting to go with the next message.
    pub(super) fn attachments(&self) -> &[PathBuf] {
        &self.attachments
    }

    /// One more image for the next message; how many wait now.
    pub(super) fn attach(&mut self, path: PathBuf) -> usize {
        self.attachments.push(path);
        self.attachments.len()
    }

    /// The images waiting, taken for the message being sent.
    pub(super) fn take_attachments(&mut self) -> Vec<PathBuf> {
        std::mem::take(&mut self.attachments)
    }

    /// Keeps the unsent text under `key` (a session id, "" for a new session) and empties the
    /// editor.
    pub(super) fn stash(&mut self, key: String) {
        let draft = self.composer.draft_now();
        if draft.shown.trim().is_empty() {
            self.drafts.remove(&key);
        } else {
            self.drafts.insert(key, draft);
        }
        self.composer.set_text("");
    }

    /// Puts back the text left unsent under `key`.
    pub(super) fn restore(&mut self, key: &str) {
        let draft = self.drafts.remove(key).unwrap_or_default();
        self.composer.set_draft(&draft);
    }
}
