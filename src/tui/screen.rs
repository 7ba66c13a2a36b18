//! Where the user is: the screen showing, the browse pane with the keyboard, the detail tab.
//! A leaf: the layout, the state and the views all name these.

/// Which screen is showing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Screen {
    /// Session list + detail.
    Browse,
    /// One session's conversation: transcript, input box, status line.
    Conversation,
}

/// Which pane of the browse screen has the keyboard.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Focus {
    List,
    Detail,
}

/// Detail tabs, in the order they are shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tab {
    Transcript,
    /// The plan DAG.
    Plan,
    /// Token usage and budgets.
    Usage,
    Assets,
    /// Ids, paths, model.
    Info,
}

impl Tab {
    pub(crate) const ALL: [Tab; 5] = [
        Tab::Transcript,
        Tab::Plan,
        Tab::Usage,
        Tab::Assets,
        Tab::Info,
    ];

    pub(crate) fn title(self) -> &'static str {
        match self {
            Tab::Transcript => "Transcript",
            Tab::Plan => "Plan",
            Tab::Usage => "Usage",
            Tab::Assets => "Assets",
            Tab::Info => "Info",
        }
    }

    pub(crate) fn index(self) -> usize {
        Tab::ALL.iter().position(|t| *t == self).unwrap_or(0)
    }
}
