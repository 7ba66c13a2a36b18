//! The one table binding keys to actions. Key handling, the bottom key bar and the `?` help
//! screen are all generated from it, so they never disagree.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::action::Action;

/// Where a binding applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Context {
    /// The session list and detail pane.
    Browse,
    /// The conversation view (the input box has the keyboard; only non-text keys bind).
    Conversation,
    /// A tool call waits for the user's answer (these keys come before the editor's).
    Approval,
    /// A turn is running in the open conversation.
    Turn,
    /// The open session stopped with tool calls that never got a result.
    Dangling,
    /// A plan run proposes its plan (`/plan`) and waits for the user's answer.
    Plan,
    /// Messages wait in the open session's queue and the editor is empty.
    Queue,
    /// The transcript search is open and its query typed (Enter): moving between matches.
    Find,
}

impl Context {
    /// Heading of the context's keys in the help screen.
    pub(crate) fn title(self) -> &'static str {
        match self {
            Context::Browse => "Session list and detail",
            Context::Conversation => "Conversation view",
            Context::Approval => "A tool call asks for approval",
            Context::Turn => "While a turn runs",
            Context::Dangling => "Resumed with interrupted tool calls",
            Context::Plan => "A plan (/plan) waits for your answer",
            Context::Queue => "Messages are queued (the editor empty)",
            Context::Find => "Searching the transcript (/ or Ctrl-F, then Enter)",
        }
    }
}

/// One binding.
#[derive(Debug, Clone, Copy)]
pub struct Binding {
    /// Where it applies.
    pub context: Context,
    /// The keys (any of them).
    pub keys: &'static [(KeyCode, KeyModifiers)],
    /// Key names as shown in help and the bar.
    pub label: &'static str,
    /// The action.
    pub action: Action,
    /// What it does, for the help screen.
    pub help: &'static str,
    /// Keys and short text for the bottom bar (`None`: help screen only).
    pub bar: Option<(&'static str, &'static str)>,
}

const N: KeyModifiers = KeyModifiers::NONE;
const S: KeyModifiers = KeyModifiers::SHIFT;
const C: KeyModifiers = KeyModifiers::CONTROL;
const A: KeyModifiers = KeyModifiers::ALT;

macro_rules! b {
    ($ctx:ident, [$($k:expr),+], $label:expr, $action:ident, $help:expr, $bar:expr) => {
        Binding {
            context: Context::$ctx,
            keys: &[$($k),+],
            label: $label,
            action: Action::$action,
            help: $help,
            bar: $bar,
        }
    };
}

/// The key table.
pub const BINDINGS: &[Binding] = &[
    b!(
        Browse,
        [(KeyCode::Up, N), (KeyCode::Char('k'), N)],
        "↑/k",
        Up,
        "move up",
        None
    ),
    b!(
        Browse,
        [(KeyCode::Down, N), (KeyCode::Char('j'), N)],
        "↓/j",
        Down,
        "move down",
        Some(("↑↓", "move"))
    ),
    b!(
        Browse,
        [(KeyCode::PageUp, N)],
        "PgUp",
        PageUp,
        "page up",
        None
    ),
    b!(
        Browse,
        [(KeyCode::PageDown, N)],
        "PgDn",
        PageDown,
        "page down",
        Some(("PgUp/Dn", "page"))
    ),
    b!(
        Browse,
        [(KeyCode::Char('g'), N), (KeyCode::Home, N)],
        "g",
        Top,
        "go to the first",
        None
    ),
    b!(
        Browse,
        [
            (KeyCode::Char('G'), S),
            (KeyCode::Char('G'), N),
            (KeyCode::End, N)
        ],
        "G",
        Bottom,
        "go to the last",
        None
    ),
    b!(
        Browse,
        [(KeyCode::Enter, N)],
        "Enter",
        Open,
        "open the conversation (Assets tab: export the asset)",
        Some(("Enter", "open"))
    ),
    b!(
        Browse,
        [(KeyCode::Tab, N), (KeyCode::BackTab, S)],
        "Tab",
        SwitchPane,
        "switch between list and detail",
        Some(("Tab", "pane"))
    ),
    b!(
        Browse,
        [(KeyCode::Char('['), N)],
        "[",
        PrevTab,
        "previous detail tab",
        None
    ),
    b!(
        Browse,
        [(KeyCode::Char(']'), N)],
        "]",
        NextTab,
        "next detail tab",
        Some(("[ ]", "tabs"))
    ),
    b!(
        Browse,
        [(KeyCode::Char('/'), N)],
        "/",
        Filter,
        "filter sessions as you type (fuzzy); in the transcript pane: search the transcript",
        Some(("/", "filter"))
    ),
    b!(
        Browse,
        [(KeyCode::Char('f'), C)],
        "Ctrl-F",
        Find,
        "search the selected session's transcript (matches highlighted; n/N move)",
        Some(("/", "find"))
    ),
    b!(
        Browse,
        [(KeyCode::Char('y'), N)],
        "y",
        Copy,
        "copy the selected message (else the last) to the clipboard (OSC 52: works over SSH and tmux)",
        Some(("y", "copy"))
    ),
    b!(
        Browse,
        [(KeyCode::Char('Y'), S), (KeyCode::Char('Y'), N)],
        "Y",
        CopyCode,
        "copy a code block of the selected message (again: the next one)",
        None
    ),
    b!(
        Browse,
        [(KeyCode::Char('s'), N)],
        "s",
        Search,
        "full-text search across all sessions",
        Some(("s", "search"))
    ),
    b!(
        Browse,
        [(KeyCode::Char('n'), N)],
        "n",
        New,
        "new session",
        Some(("n", "new"))
    ),
    b!(
        Browse,
        [(KeyCode::Char('f'), N)],
        "f",
        Fork,
        "fork (at the selected message, else at the end)",
        Some(("f", "fork"))
    ),
    b!(
        Browse,
        [(KeyCode::Char('d'), N)],
        "d",
        Delete,
        "delete (asks first)",
        Some(("d", "delete"))
    ),
    b!(
        Browse,
        [(KeyCode::Char('R'), S), (KeyCode::Char('R'), N)],
        "R",
        Rename,
        "rename",
        None
    ),
    b!(
        Browse,
        [(KeyCode::Char('r'), N)],
        "r",
        Rewind,
        "rewind to the selected message (else the last): conversation and files, conversation only or files only, with a preview",
        None
    ),
    b!(
        Browse,
        [(KeyCode::Char('e'), N)],
        "e",
        Export,
        "export to <short-id>.json here (Assets tab: the asset)",
        None
    ),
    b!(
        Browse,
        [(KeyCode::Char('E'), S), (KeyCode::Char('E'), N)],
        "E",
        ExportMarkdown,
        "export to <short-id>.md here (the markdown transcript)",
        None
    ),
    b!(
        Browse,
        [(KeyCode::Char(' '), N)],
        "Space",
        Expand,
        "expand/collapse a tool call's arguments and result",
        Some(("Space", "expand"))
    ),
    b!(
        Browse,
        [
            (KeyCode::Char('?'), N),
            (KeyCode::Char('?'), S),
            (KeyCode::F(1), N)
        ],
        "?",
        Help,
        "help",
        Some(("?", "help"))
    ),
    b!(
        Browse,
        [(KeyCode::Char('q'), N), (KeyCode::Esc, N)],
        "q/Esc",
        Back,
        "back, or quit from the list",
        Some(("q/Esc", "quit"))
    ),
    b!(
        Browse,
        [(KeyCode::Char('c'), C)],
        "Ctrl-C",
        Quit,
        "quit",
        None
    ),
    b!(
        Conversation,
        [(KeyCode::Enter, N)],
        "Enter",
        Submit,
        "send the message; while a turn runs, queue it for after the turn; on the empty editor, retry a turn that failed, else send the next queued message (Shift-Enter or Ctrl-J: new line, and Alt-Enter while no turn runs; a paste keeps its lines, a big one shows as a chip)",
        Some(("Enter", "send"))
    ),
    b!(
        Conversation,
        [(KeyCode::Up, A)],
        "Alt-↑",
        Up,
        "select the previous message (↑ in the editor recalls what you sent)",
        None
    ),
    b!(
        Conversation,
        [(KeyCode::Down, A)],
        "Alt-↓",
        Down,
        "select the next message",
        Some(("Alt-↑↓", "select"))
    ),
    b!(
        Conversation,
        [(KeyCode::PageUp, N)],
        "PgUp",
        PageUp,
        "scroll up",
        None
    ),
    b!(
        Conversation,
        [(KeyCode::PageDown, N)],
        "PgDn",
        PageDown,
        "scroll down",
        Some(("PgUp/Dn", "scroll"))
    ),
    b!(
        Conversation,
        [(KeyCode::Char(' '), C)],
        "Ctrl-Space",
        Expand,
        "expand the selected message's tool details",
        Some(("Ctrl-Space", "expand"))
    ),
    b!(
        Conversation,
        [(KeyCode::F(1), N)],
        "F1",
        Help,
        "help, opened at these keys (? types into the message here)",
        Some(("F1", "help"))
    ),
    b!(
        Conversation,
        [(KeyCode::Char('f'), C)],
        "Ctrl-F",
        Find,
        "search this session's transcript (matches highlighted; Enter, then n/N move)",
        Some(("Ctrl-F", "find"))
    ),
    b!(
        Conversation,
        [(KeyCode::Char('c'), A)],
        "Alt-C",
        Copy,
        "copy the selected message (else the last) to the clipboard (OSC 52: works over SSH and tmux)",
        Some(("Alt-C", "copy"))
    ),
    b!(
        Conversation,
        [(KeyCode::Char('k'), A)],
        "Alt-K",
        CopyCode,
        "copy a code block of the selected message (again: the next one)",
        None
    ),
    b!(
        Conversation,
        [(KeyCode::Char('o'), C)],
        "Ctrl-O",
        Fork,
        "fork at the selected message (else the end; also /fork)",
        Some(("Ctrl-O", "fork"))
    ),
    b!(
        Conversation,
        [(KeyCode::Char('r'), A)],
        "Alt-R, Esc Esc",
        Rewind,
        "rewind to the selected message (else the last): conversation and files, conversation only or files only, with a preview (Esc Esc: the editor empty)",
        Some(("Alt-R", "rewind"))
    ),
    b!(
        Conversation,
        [(KeyCode::Char('t'), C)],
        "Ctrl-T",
        Subagents,
        "the running turn's sub-agents: Enter opens one (its own session, live: Alt-Enter steers it, Esc cancels it), x cancels one, X all",
        None
    ),
    b!(
        Conversation,
        [(KeyCode::Char('g'), C)],
        "Ctrl-G",
        EditDraft,
        "edit the message in $VISUAL / $EDITOR (the TUI comes back when it exits)",
        None
    ),
    b!(
        Conversation,
        [(KeyCode::Char('v'), C)],
        "Ctrl-V",
        PasteImage,
        "attach the clipboard's image to the next message (wl-paste or xclip; also /paste)",
        None
    ),
    b!(
        Conversation,
        [(KeyCode::Esc, N)],
        "Esc",
        Back,
        "back to the list",
        Some(("Esc", "back"))
    ),
    b!(
        Conversation,
        [(KeyCode::Char('c'), C)],
        "Ctrl-C",
        Quit,
        "clear the message (↑ or Ctrl-Z brings it back); on an empty editor: quit",
        Some(("Ctrl-C", "clear/quit"))
    ),
    b!(
        Approval,
        [(KeyCode::Char('y'), N)],
        "y",
        Approve,
        "yes: run the call",
        Some(("y", "yes"))
    ),
    b!(
        Approval,
        [(KeyCode::Char('n'), N)],
        "n",
        Deny,
        "no: do not run it (the model is told)",
        Some(("n", "no"))
    ),
    b!(
        Approval,
        [(KeyCode::Char('r'), N)],
        "r",
        DenyWhy,
        "no, with a reason sent to the model",
        Some(("r", "no+why"))
    ),
    b!(
        Approval,
        [(KeyCode::Char('a'), N)],
        "a",
        ApproveAlways,
        "always: run it and keep a rule (shown to edit; Tab: this session / workspace / everywhere)",
        Some(("a", "always"))
    ),
    b!(
        Turn,
        [(KeyCode::Esc, N), (KeyCode::Char('c'), C)],
        "Esc/Ctrl-C",
        Cancel,
        "cancel the turn (what arrived is kept; Ctrl-C again quits)",
        Some(("Esc", "cancel"))
    ),
    b!(
        Turn,
        [(KeyCode::Enter, A)],
        "Alt-Enter",
        Steer,
        "steer: queue the message for the running turn's next tool boundary (Enter queues it for after the turn; Shift-Enter or Ctrl-J: new line)",
        Some(("Alt-Enter", "steer"))
    ),
    b!(
        Turn,
        [(KeyCode::Char('b'), C)],
        "Ctrl-B",
        Leave,
        "back to the list while the turn keeps running (asks first)",
        Some(("Ctrl-B", "background"))
    ),
    b!(
        Queue,
        [(KeyCode::Char('e'), C)],
        "Ctrl-E",
        EditQueued,
        "take the last queued message back into the editor (out of the queue; Ctrl-U then drops it)",
        None
    ),
    b!(
        Dangling,
        [(KeyCode::Char('r'), C)],
        "Ctrl-R",
        Rerun,
        "run the interrupted calls again (edits and commands ask first)",
        Some(("Ctrl-R", "rerun"))
    ),
    b!(
        Dangling,
        [(KeyCode::Char('d'), C)],
        "Ctrl-D",
        MarkInterrupted,
        "mark them interrupted: nothing runs, the model is told",
        Some(("Ctrl-D", "mark interrupted"))
    ),
    b!(
        Plan,
        [(KeyCode::Char('y'), N)],
        "y",
        PlanRun,
        "run the plan, step by step",
        Some(("y", "run it"))
    ),
    b!(
        Plan,
        [(KeyCode::Char('n'), N)],
        "n",
        PlanReject,
        "reject the plan: nothing runs",
        Some(("n", "reject"))
    ),
    b!(
        Plan,
        [(KeyCode::Char('d'), N)],
        "d",
        PlanDrop,
        "drop steps: type their ids, Enter (the plan is proposed again)",
        Some(("d", "drop steps"))
    ),
    b!(
        Find,
        [(KeyCode::Char('n'), N), (KeyCode::Enter, N)],
        "n/Enter",
        FindNext,
        "next match (the transcript scrolls to it)",
        Some(("n", "next"))
    ),
    b!(
        Find,
        [(KeyCode::Char('N'), S), (KeyCode::Char('N'), N)],
        "N",
        FindPrev,
        "previous match",
        Some(("N", "previous"))
    ),
    b!(
        Find,
        [(KeyCode::Char('/'), N), (KeyCode::Char('f'), C)],
        "/",
        Find,
        "type the query again",
        Some(("/", "edit"))
    ),
    b!(
        Find,
        [(KeyCode::Esc, N)],
        "Esc",
        Back,
        "close the search (any other key also closes it and acts)",
        Some(("Esc", "close"))
    ),
];

/// Ctrl-C, in every context: stops a running turn, else quits (handled before the table,
/// and never held back by the event loop).
pub(crate) fn is_ctrl_c(key: &KeyEvent) -> bool {
    key.code == KeyCode::Char('c') && key.modifiers.contains(KeyModifiers::CONTROL)
}

/// The action bound to `key` in `context`.
pub(crate) fn lookup(context: Context, key: &KeyEvent) -> Option<Action> {
    let mods = key.modifiers & (KeyModifiers::SHIFT | KeyModifiers::CONTROL | KeyModifiers::ALT);
    BINDINGS
        .iter()
        .filter(|b| b.context == context)
        .find(|b| {
            b.keys.iter().any(|(code, m)| {
                *code == key.code
                    && (*m == mods
                        // Terminals differ on whether shifted characters report SHIFT.
                        || (matches!(code, KeyCode::Char(_)) && *m != C && mods != C && *m == N))
            })
        })
        .map(|b| b.action)
}

/// The bottom bar's entries for a context: (keys, text).
pub(crate) fn bar(context: Context) -> impl Iterator<Item = (&'static str, &'static str)> {
    BINDINGS
        .iter()
        .filter(move |b| b.context == context)
        .filter_map(|b| b.bar)
}

/// The bar entry of an action in a context (from the same table as the keys).
pub(crate) fn bar_entry(context: Context, action: Action) -> Option<(&'static str, &'static str)> {
    BINDINGS
        .iter()
        .find(|b| b.context == context && b.action == action)
        .map(|b| b.bar.unwrap_or((b.label, b.help)))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// No key is bound twice in one context (the first binding would hide the other).
    #[test]
    fn no_key_is_bound_twice_in_a_context() {
        let mut seen: Vec<(Context, (KeyCode, KeyModifiers), &str)> = Vec::new();
        for b in BINDINGS {
            for k in b.keys {
                if let Some((_, _, other)) =
                    seen.iter().find(|(c, kk, _)| *c == b.context && kk == k)
                {
                    panic!(
                        "{k:?} is bound twice in {:?}: {other} and {}",
                        b.context, b.label
                    );
                }
                seen.push((b.context, *k, b.label));
            }
        }
    }
}
