//! Named actions: what a key (or a mouse event) asks the app to do.

/// One thing the user can ask for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Action {
    /// Move the selection up.
    Up,
    /// Move the selection down.
    Down,
    /// Page up.
    PageUp,
    /// Page down.
    PageDown,
    /// Go to the first item.
    Top,
    /// Go to the last item.
    Bottom,
    /// Open the selected session's conversation (or export the selected asset).
    Open,
    /// Switch focus between the list and the detail pane.
    SwitchPane,
    /// Previous detail tab.
    PrevTab,
    /// Next detail tab.
    NextTab,
    /// Filter the list as you type.
    Filter,
    /// Full-text search across sessions.
    Search,
    /// Start a new session.
    New,
    /// Fork the session (at the selected message when one is selected).
    Fork,
    /// Delete the session (asks first).
    Delete,
    /// Rename the session.
    Rename,
    /// Export the session (or the selected asset) to a file in the current directory.
    Export,
    /// Export the session as a readable markdown transcript to the current directory.
    ExportMarkdown,
    /// Expand or collapse the selected message's tool details.
    Expand,
    /// Show the help screen.
    Help,
    /// List the running turn's sub-agents (open one, cancel one or all).
    Subagents,
    /// Back, or quit from the list.
    Back,
    /// Quit at once.
    Quit,
    /// Send the typed message (conversation view).
    Submit,
    /// Run the tool call waiting for approval.
    Approve,
    /// Run it, and keep a rule proposed from it (edited first; session, workspace or home).
    ApproveAlways,
    /// Do not run it.
    Deny,
    /// Do not run it, and tell the model why (asks for the reason).
    DenyWhy,
    /// Cancel the running turn (what arrived is kept).
    Cancel,
    /// Leave the conversation while its turn keeps running (asks first).
    Leave,
    /// Run again the tool calls a stopped session left without a result.
    Rerun,
    /// Mark those calls interrupted instead (nothing runs).
    MarkInterrupted,
    /// Queue the typed message to steer the running turn (sent at its next tool boundary).
    Steer,
    /// Take the last queued message back into the editor.
    EditQueued,
    /// Open the message being written in `$VISUAL`/`$EDITOR`.
    EditDraft,
    /// Attach the clipboard's image to the next message (`wl-paste` or `xclip`).
    PasteImage,
    /// Run the proposed plan.
    PlanRun,
    /// Reject the proposed plan (nothing runs).
    PlanReject,
    /// Drop steps from the proposed plan (asks for their ids).
    PlanDrop,
    /// Search the open session's transcript (or type the query again).
    Find,
    /// Move to the next match of the transcript search.
    FindNext,
    /// Move to the previous match.
    FindPrev,
    /// Copy the selected message (else the last) to the clipboard, by OSC 52.
    Copy,
    /// Copy a code block of the selected message (the next one on each press), by OSC 52.
    CopyCode,
    /// Open the session picker over the conversation (`/resume`).
    ResumePicker,
    /// Open the rewind dialog at the selected message (else the last user message).
    Rewind,
}
