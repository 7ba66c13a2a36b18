//! The dialogs over a screen and the status line: router state that the screens' transitions
//! also set (a proposed plan opens its dialog, a turn's end says how it went).

use crate::tui::input::Input;
use crate::tui::pane::SearchState;

/// A dialog over the screen.
#[derive(Debug, Clone, Default)]
pub enum Overlay {
    #[default]
    None,
    /// The help screen, scrolled.
    Help(u16),
    /// "Delete this session?"
    ConfirmDelete {
        id: String,
        /// Its title (sanitised).
        title: String,
    },
    /// Renaming inline.
    Rename {
        id: String,
        /// The new title being typed.
        input: Input,
    },
    Search(SearchState),
    /// The reason for denying a tool call, being typed (sent to the model).
    DenyReason {
        call_id: String,
        input: Input,
    },
    /// An "always" answer: the rules to keep (proposed from the call, one per part of a
    /// command; each editable), the one being edited, and where they are kept.
    AlwaysRule {
        call_id: String,
        rules: Vec<Input>,
        /// Index in `rules` of the rule edited on the status line.
        selected: usize,
        scope: crate::runtime::agent::RuleScope,
    },
    /// "Really?" before leaving a running turn behind.
    Confirm(Confirm),
    /// A plan run's proposed plan, waiting for run / reject / drop steps.
    Plan(PlanAsk),
    /// `/model` without a name: the models the server offers, to pick one (sanitised names).
    Models {
        names: Vec<String>,
        selected: usize,
    },
    /// `/resume`: the session list over the conversation, with the list's filter (its text
    /// and matches are the list's own); Enter switches, Esc returns.
    Resume,
    /// The rewind dialog (Esc Esc, Alt-R): what to go back, the preview, Enter does it.
    Rewind(Box<crate::tui::rewind::RewindDialog>),
    /// `/permissions`: every rule in force and where it comes from; `d` revokes the
    /// session's own.
    Permissions(Box<crate::tui::permissions::PermissionsDialog>),
    /// Ctrl-T: the running turn's sub-agents; Enter opens one, `x` cancels one, `X` all.
    Subagents(crate::tui::subagents::SubagentsDialog),
}

/// The plan a `/plan` run proposes.
#[derive(Debug, Clone, PartialEq)]
pub struct PlanAsk {
    /// Step ids by layer: a layer runs after every earlier one.
    pub layers: Vec<Vec<String>>,
    /// (id, title) of each step, in the plan's order.
    pub steps: Vec<(String, String)>,
    /// The ids of the steps to drop, being typed (after `d`).
    pub dropping: Option<Input>,
}

/// What a yes/no question is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Confirm {
    /// Quit while a turn runs (it is cancelled, what arrived is kept).
    Quit,
    /// Leave the conversation while its turn keeps running.
    Leave,
}

/// A status-line message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Status {
    pub text: String,
    /// Shown as an error.
    pub error: bool,
    /// When it was said (it expires, see [`crate::tui::app::App::expire_status`]).
    pub at_ms: i64,
}
