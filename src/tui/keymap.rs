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

/// Builds the key table from one line a binding, grouped by context:
/// `Action [keys] "label" "help"`, then `=> ("bar keys", "bar text")` when the binding shows
/// in the bottom bar. Key codes are `KeyCode`'s variants.
macro_rules! bindings {
    ($($ctx:ident {
        $($action:ident [$($key:expr),+] $label:literal $help:literal $(=> $bar:expr)?;)*
    })*) => {{
        use KeyCode::*;
        &[$($(Binding {
            context: Context::$ctx,
            keys: &[$($key),+],
            label: $label,
            action: Action::$action,
            help: $help,
            bar: bindings!(@bar $($bar)?),
        }),*),*]
    }};
    (@bar) => {
        None
    };
    (@bar $bar:expr) => {
        Some($bar)
    };
}

/// The key table.
pub const BINDINGS: &[Binding] = bindings! {
    Browse {
        Up [(Up, N), (Char('k'), N)] "↑/k" "move up";
        Down [(Down, N), (Char('j'), N)] "↓/j" "move down" => ("↑↓", "move");
        PageUp [(PageUp, N)] "PgUp" "page up";
        PageDown [(PageDown, N)] "PgDn" "page down" => ("PgUp/Dn", "page");
        Top [(Char('g'), N), (Home, N)] "g" "go to the first";
        Bottom [(Char('G'), S), (Char('G'), N), (End, N)] "G" "go to the last";
        Open [(Enter, N)] "Enter" "open the conversation (Assets tab: export the \
            asset)" => ("Enter", "open");
        SwitchPane [(Tab, N), (BackTab, S)] "Tab" "switch between list and \
            detail" => ("Tab", "pane");
        PrevTab [(Char('['), N)] "[" "previous detail tab";
        NextTab [(Char(']'), N)] "]" "next detail tab" => ("[ ]", "tabs");
        Filter [(Char('/'), N)] "/" "filter sessions as you type (fuzzy); in the transcript pane: \
            search the transcript" => ("/", "filter");
        Find [(Char('f'), C)] "Ctrl-F" "search the selected session's transcript (matches \
            highlighted; n/N move)" => ("/", "find");
        Copy [(Char('y'), N)] "y" "copy the selected message (else the last) to the clipboard (OSC \
            52: works over SSH and tmux)" => ("y", "copy");
        CopyCode [(Char('Y'), S), (Char('Y'), N)] "Y" "copy a code block of the selected message \
            (again: the next one)";
        Search [(Char('s'), N)] "s" "full-text search across all sessions" => ("s", "search");
        New [(Char('n'), N)] "n" "new session" => ("n", "new");
        Fork [(Char('f'), N)] "f" "fork (at the selected message, else at the \
            end)" => ("f", "fork");
        Delete [(Char('d'), N)] "d" "delete (asks first)" => ("d", "delete");
        Rename [(Char('R'), S), (Char('R'), N)] "R" "rename";
        Rewind [(Char('r'), N)] "r" "rewind to the selected message (else the last): conversation \
            and files, conversation only or files only, with a preview";
        Export [(Char('e'), N)] "e" "export to <short-id>.json here (Assets tab: the asset)";
        ExportMarkdown [(Char('E'), S), (Char('E'), N)] "E" "export to <short-id>.md here (the \
            markdown transcript)";
        Expand [(Char(' '), N)] "Space" "expand/collapse a tool call's arguments and \
            result" => ("Space", "expand");
        Help [(Char('?'), N), (Char('?'), S), (F(1), N)] "?" "help" => ("?", "help");
        Back [(Char('q'), N), (Esc, N)] "q/Esc" "back, or quit from the list" => ("q/Esc", "quit");
        Quit [(Char('c'), C)] "Ctrl-C" "quit";
    }
    Conversation {
        Submit [(Enter, N)] "Enter" "send the message; while a turn runs, queue it for after the \
            turn; on the empty editor, retry a turn that failed, else send the next queued message \
            (Shift-Enter or Ctrl-J: new line, and Alt-Enter while no turn runs; a paste keeps its \
            lines, a big one shows as a chip)" => ("Enter", "send");
        Up [(Up, A)] "Alt-↑" "select the previous message (↑ in the editor recalls what you sent)";
        Down [(Down, A)] "Alt-↓" "select the next message" => ("Alt-↑↓", "select");
        PageUp [(PageUp, N)] "PgUp" "scroll up";
        PageDown [(PageDown, N)] "PgDn" "scroll down" => ("PgUp/Dn", "scroll");
        Expand [(Char(' '), C)] "Ctrl-Space" "expand the selected message's tool \
            details" => ("Ctrl-Space", "expand");
        Help [(F(1), N)] "F1" "help, opened at these keys (? types into the message \
            here)" => ("F1", "help");
        Find [(Char('f'), C)] "Ctrl-F" "search this session's transcript (matches highlighted; \
            Enter, then n/N move)" => ("Ctrl-F", "find");
        Copy [(Char('c'), A)] "Alt-C" "copy the selected message (else the last) to the clipboard \
            (OSC 52: works over SSH and tmux)" => ("Alt-C", "copy");
        CopyCode [(Char('k'), A)] "Alt-K" "copy a code block of the selected message (again: the \
            next one)";
        Fork [(Char('o'), C)] "Ctrl-O" "fork at the selected message (else the end; also \
            /fork)" => ("Ctrl-O", "fork");
        Rewind [(Char('r'), A)] "Alt-R, Esc Esc" "rewind to the selected message (else the last): \
            conversation and files, conversation only or files only, with a preview (Esc Esc: the \
            editor empty)" => ("Alt-R", "rewind");
        Subagents [(Char('t'), C)] "Ctrl-T" "the running turn's sub-agents: Enter opens one (its \
            own session, live: Alt-Enter steers it, Esc cancels it), x cancels one, X all";
        EditDraft [(Char('g'), C)] "Ctrl-G" "edit the message in $VISUAL / $EDITOR (the TUI comes \
            back when it exits)";
        PasteImage [(Char('v'), C)] "Ctrl-V" "attach the clipboard's image to the next message \
            (wl-paste or xclip; also /paste)";
        Back [(Esc, N)] "Esc" "back to the list" => ("Esc", "back");
        Quit [(Char('c'), C)] "Ctrl-C" "clear the message (↑ or Ctrl-Z brings it back); on an \
            empty editor: quit" => ("Ctrl-C", "clear/quit");
    }
    Approval {
        Approve [(Char('y'), N)] "y" "yes: run the call" => ("y", "yes");
        Deny [(Char('n'), N)] "n" "no: do not run it (the model is told)" => ("n", "no");
        DenyWhy [(Char('r'), N)] "r" "no, with a reason sent to the model" => ("r", "no+why");
        ApproveAlways [(Char('a'), N)] "a" "always: run it and keep a rule (shown to edit; Tab: \
            this session / workspace / everywhere)" => ("a", "always");
    }
    Turn {
        Cancel [(Esc, N), (Char('c'), C)] "Esc/Ctrl-C" "cancel the turn (what arrived is kept; \
            Ctrl-C again quits)" => ("Esc", "cancel");
        Steer [(Enter, A)] "Alt-Enter" "steer: queue the message for the running turn's next tool \
            boundary (Enter queues it for after the turn; Shift-Enter or Ctrl-J: new \
            line)" => ("Alt-Enter", "steer");
        Leave [(Char('b'), C)] "Ctrl-B" "back to the list while the turn keeps running (asks \
            first)" => ("Ctrl-B", "background");
    }
    Queue {
        EditQueued [(Char('e'), C)] "Ctrl-E" "take the last queued message back into the editor \
            (out of the queue; Ctrl-U then drops it)";
    }
    Dangling {
        Rerun [(Char('r'), C)] "Ctrl-R" "run the interrupted calls again (edits and commands ask \
            first)" => ("Ctrl-R", "rerun");
        MarkInterrupted [(Char('d'), C)] "Ctrl-D" "mark them interrupted: nothing runs, the model \
            is told" => ("Ctrl-D", "mark interrupted");
    }
    Plan {
        PlanRun [(Char('y'), N)] "y" "run the plan, step by step" => ("y", "run it");
        PlanReject [(Char('n'), N)] "n" "reject the plan: nothing runs" => ("n", "reject");
        PlanDrop [(Char('d'), N)] "d" "drop steps: type their ids, Enter (the plan is proposed \
            again)" => ("d", "drop steps");
    }
    Find {
        FindNext [(Char('n'), N), (Enter, N)] "n/Enter" "next match (the transcript scrolls to \
            it)" => ("n", "next");
        FindPrev [(Char('N'), S), (Char('N'), N)] "N" "previous match" => ("N", "previous");
        Find [(Char('/'), N), (Char('f'), C)] "/" "type the query again" => ("/", "edit");
        Back [(Esc, N)] "Esc" "close the search (any other key also closes it and \
            acts)" => ("Esc", "close");
    }
};

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
