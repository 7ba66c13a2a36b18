//! Every colour the TUI uses, in one place. With `NO_COLOR` set the theme keeps only bold,
//! dim, reverse and underline, so meaning never rests on colour alone.

use ratatui::style::{Color, Modifier, Style};

use crate::session::{Status, StepStatus};

/// The styles of the TUI.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Theme {
    /// Colours are on.
    pub color: bool,
}

impl Theme {
    /// A theme; `color = false` for `NO_COLOR`.
    pub fn new(color: bool) -> Theme {
        Theme { color }
    }

    /// Colour on when `NO_COLOR` is unset or empty (no-color.org).
    pub(crate) fn from_env() -> Theme {
        Theme::new(std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty()))
    }

    fn fg(self, c: Color) -> Style {
        if self.color {
            Style::new().fg(c)
        } else {
            Style::new()
        }
    }

    /// Plain text.
    pub(crate) fn text(self) -> Style {
        Style::new()
    }
    /// Secondary text.
    pub(crate) fn dim(self) -> Style {
        Style::new().add_modifier(Modifier::DIM)
    }
    /// Titles and emphasis.
    pub(crate) fn bold(self) -> Style {
        Style::new().add_modifier(Modifier::BOLD)
    }
    /// The accent (focused borders, active tab, key names).
    pub(crate) fn accent(self) -> Style {
        self.fg(Color::Cyan)
    }
    /// The selected row.
    pub(crate) fn selected(self) -> Style {
        if self.color {
            Style::new()
                .bg(Color::Rgb(40, 60, 90))
                .add_modifier(Modifier::BOLD)
        } else {
            Style::new().add_modifier(Modifier::REVERSED)
        }
    }
    /// Matched characters of a filter or search.
    pub(crate) fn matched(self) -> Style {
        self.fg(Color::Yellow)
            .add_modifier(Modifier::BOLD | Modifier::UNDERLINED)
    }
    /// Errors.
    pub(crate) fn error(self) -> Style {
        self.fg(Color::Red).add_modifier(Modifier::BOLD)
    }
    /// Success.
    pub(crate) fn ok(self) -> Style {
        self.fg(Color::Green)
    }
    /// Warnings and running things.
    pub(crate) fn warn(self) -> Style {
        self.fg(Color::Yellow)
    }
    /// The user's messages.
    pub(crate) fn user(self) -> Style {
        self.fg(Color::LightBlue).add_modifier(Modifier::BOLD)
    }
    /// The assistant's messages.
    pub(crate) fn assistant(self) -> Style {
        self.fg(Color::LightGreen).add_modifier(Modifier::BOLD)
    }
    /// Tool results.
    pub(crate) fn tool(self) -> Style {
        self.fg(Color::LightMagenta).add_modifier(Modifier::BOLD)
    }
    /// System messages.
    pub(crate) fn system(self) -> Style {
        self.fg(Color::Gray).add_modifier(Modifier::BOLD)
    }
    /// Code blocks and inline code.
    pub(crate) fn code(self) -> Style {
        self.fg(Color::LightYellow)
    }
    /// Borders of unfocused panes.
    pub(crate) fn border(self) -> Style {
        self.fg(Color::DarkGray)
    }
    /// The title bar.
    pub(crate) fn title_bar(self) -> Style {
        if self.color {
            Style::new().bg(Color::Rgb(30, 30, 46)).fg(Color::White)
        } else {
            Style::new().add_modifier(Modifier::BOLD)
        }
    }
    /// Reasoning (thinking) text: dim italic, so it never reads as the answer.
    pub(crate) fn reasoning(self) -> Style {
        self.fg(Color::Gray)
            .add_modifier(Modifier::DIM | Modifier::ITALIC)
    }
    /// The style tool output asked for with SGR sequences, on top of `base`; with `NO_COLOR`
    /// only the attributes are kept.
    pub(crate) fn sgr(self, base: Style, s: &crate::sanitize::Sgr) -> Style {
        use crate::sanitize::SgrColor;
        let color = |c: SgrColor| match c {
            SgrColor::Indexed(i) => Color::Indexed(i),
            SgrColor::Rgb(r, g, b) => Color::Rgb(r, g, b),
        };
        let mut st = base;
        if self.color {
            if let Some(c) = s.fg {
                st = st.fg(color(c));
            }
            if let Some(c) = s.bg {
                st = st.bg(color(c));
            }
        }
        for (on, m) in [
            (s.bold, Modifier::BOLD),
            (s.dim, Modifier::DIM),
            (s.italic, Modifier::ITALIC),
            (s.underline, Modifier::UNDERLINED),
            (s.reverse, Modifier::REVERSED),
        ] {
            if on {
                st = st.add_modifier(m);
            }
        }
        st
    }
}

/// A plan step's icon, the same in the TUI and `neocode show`.
pub(crate) fn step_icon(s: StepStatus, t: Theme) -> (&'static str, Style) {
    (
        s.symbol(),
        match s {
            StepStatus::Pending => t.dim(),
            StepStatus::Running => t.warn(),
            StepStatus::Completed => t.ok(),
            StepStatus::Failed => t.error(),
        },
    )
}

/// Status marker and its style.
pub(crate) fn marker(s: Status, t: Theme) -> (&'static str, Style) {
    match s {
        Status::Created => ("○", t.dim()),
        Status::Running => ("●", t.warn()),
        Status::Paused => ("‖", t.warn()),
        Status::Completed => ("✔", t.ok()),
        Status::Failed => ("✗", t.error()),
        Status::Cancelled => ("⊘", t.dim()),
    }
}
