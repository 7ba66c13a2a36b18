//! Pure views: functions of the app state that draw a frame. They read the state and the
//! layout it settled on; they write nothing back.

mod changes;
mod conversation;
mod detail;
mod find;
mod list;
mod overlay;
mod parts;
mod permissions;
mod popup;
mod resume;
mod rewind;
mod subagents;
mod text;

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Wrap};

pub(crate) use text::input_cursor_width;

use super::app::{App, Overlay, Screen};
use super::keymap;
use super::layout::Layout;
use crate::sanitize;

use crate::tui::layout::MIN_SIZE;

/// The frame `app` draws at its size, as text: one line per row, trailing blanks trimmed
/// (what tests and benchmarks read as the screen).
#[cfg(any(test, feature = "testkit"))]
pub fn draw_to_text(app: &App) -> String {
    let (w, h) = app.size;
    let mut t = ratatui::Terminal::new(ratatui::backend::TestBackend::new(w, h))
        .expect("a test backend never fails");
    t.draw(|f| draw(f, app))
        .expect("a test backend never fails");
    let b = t.backend().buffer();
    let mut out = String::new();
    for y in 0..b.area.height {
        let mut line = String::new();
        for x in 0..b.area.width {
            line.push_str(b[(x, y)].symbol());
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// Draws the whole frame.
pub fn draw(frame: &mut Frame<'_>, app: &App) {
    let size = frame.area();
    if size.width < MIN_SIZE.0 || size.height < MIN_SIZE.1 {
        let msg = format!(
            "Terminal too small ({}x{}). neocode needs at least {}x{}.",
            size.width, size.height, MIN_SIZE.0, MIN_SIZE.1
        );
        frame.render_widget(Paragraph::new(msg).wrap(Wrap { trim: true }), size);
        return;
    }
    // The app settles its layout for its own idea of the terminal size; a frame of another
    // size (a resize not yet handled) is laid out afresh, never drawn out of bounds.
    let computed;
    let a = if app.layout.size == size {
        &app.layout
    } else {
        computed = Layout::compute_with_status(
            app.screen,
            app.browse.list.filter.is_some(),
            app.conv.composer().rows(),
            app.status_rows(),
            size,
        );
        &computed
    };
    title_bar(frame, app, a.title);
    match app.screen {
        Screen::Browse => {
            list::draw(frame, app, a);
            detail::draw(frame, app, a);
        }
        Screen::Conversation => conversation::draw(frame, app, a),
    }
    status_line(frame, app, a.status);
    key_bar(frame, app, a.bar);
    overlay::draw(frame, app, size);
}

fn title_bar(frame: &mut Frame<'_>, app: &App, area: Rect) {
    let t = app.theme;
    let count = match app.browse.list.total {
        Some(1) => "1 session".to_string(),
        Some(n) => format!("{n} sessions"),
        None => "loading…".to_string(),
    };
    let root = sanitize::line(&app.paths.root).into_owned();
    let line = Line::from(vec![
        Span::styled(" neocode ", t.bold().patch(t.accent())),
        Span::raw(" "),
        Span::raw(root),
        Span::styled(format!("  ·  {count}"), t.dim()),
    ]);
    frame.render_widget(Paragraph::new(line).style(t.title_bar()), area);
}

fn status_line(frame: &mut Frame<'_>, app: &App, area: Rect) {
    let t = app.theme;
    let always;
    let editing = match &app.overlay {
        Overlay::Rename { input, .. } => Some(("Rename to: ", input)),
        Overlay::DenyReason { input, .. } => Some(("Deny because: ", input)),
        Overlay::AlwaysRule {
            rules,
            selected,
            scope,
            ..
        } => {
            always = if rules.len() > 1 {
                format!(
                    "Always allow, for {} (rule {} of {}): ",
                    scope.label(),
                    selected + 1,
                    rules.len()
                )
            } else {
                format!("Always allow, for {}: ", scope.label())
            };
            rules.get(*selected).map(|input| (always.as_str(), input))
        }
        Overlay::Plan(p) => p.dropping.as_ref().map(|i| ("Drop steps (ids): ", i)),
        _ => None,
    };
    if editing.is_none()
        && let Some(f) = app.find()
    {
        let count = f.count();
        let mut spans = vec![
            Span::styled("Find: ", t.accent().patch(t.bold())),
            Span::raw(sanitize::line(&f.input.text).into_owned()),
        ];
        if !count.is_empty() {
            spans.push(Span::styled(format!("  {count}"), t.dim()));
        }
        frame.render_widget(Paragraph::new(Line::from(spans)), area);
        if f.editing {
            let x = area.x + 6 + input_cursor_width(&f.input.text, f.input.cursor);
            frame.set_cursor_position((x.min(area.right().saturating_sub(1)), area.y));
        }
        return;
    }
    if let Some((prefix, input)) = editing {
        let line = Line::from(vec![
            Span::styled(prefix, t.accent().patch(t.bold())),
            Span::raw(sanitize::line(&input.text).into_owned()),
        ]);
        frame.render_widget(Paragraph::new(line), area);
        let x = area.x + prefix.len() as u16 + input_cursor_width(&input.text, input.cursor);
        frame.set_cursor_position((x.min(area.right().saturating_sub(1)), area.y));
        return;
    }
    // A message too long for the width wraps onto the rows the layout gave it; past those
    // its last row ends with "…".
    let mut lines = app.status_lines();
    let rows = area.height.max(1) as usize;
    if lines.len() > rows {
        lines.truncate(rows);
        if let Some(last) = lines.last_mut() {
            last.spans.push(Span::styled(" …", t.dim()));
        }
    }
    frame.render_widget(Paragraph::new(lines), area);
}

/// What the bar offers where the keyboard is: the focused pane, its tab, the dialog. The last
/// entries (help, back/quit) are kept whatever the width; the others go from the right.
fn bar_entries(app: &App) -> Vec<(&'static str, &'static str)> {
    use super::action::Action as A;
    use super::app::{Focus, Tab};
    let ctx = app.context();
    let actions: &[A] = match (app.screen, app.focus, app.tab) {
        (Screen::Conversation, _, _) => &[
            A::Submit,
            A::Down,
            A::PageDown,
            A::Expand,
            A::Find,
            A::Copy,
            A::Fork,
            A::Rewind,
            A::Help,
            A::Back,
        ],
        (Screen::Browse, Focus::List, _) => &[
            A::Down,
            A::Open,
            A::New,
            A::Filter,
            A::Search,
            A::Fork,
            A::Delete,
            A::SwitchPane,
            A::NextTab,
            A::Help,
            A::Back,
        ],
        (Screen::Browse, Focus::Detail, Tab::Transcript) => &[
            A::Down,
            A::Expand,
            A::Find,
            A::Copy,
            A::PageDown,
            A::Fork,
            A::Open,
            A::SwitchPane,
            A::NextTab,
            A::Help,
            A::Back,
        ],
        (Screen::Browse, Focus::Detail, Tab::Assets) => &[
            A::Down,
            A::Open,
            A::SwitchPane,
            A::NextTab,
            A::Help,
            A::Back,
        ],
        (Screen::Browse, Focus::Detail, Tab::Plan | Tab::Usage | Tab::Info) => {
            &[A::Down, A::SwitchPane, A::NextTab, A::Help, A::Back]
        }
    };
    let mut out: Vec<(&str, &str)> = Vec::new();
    if app.screen == Screen::Conversation {
        for c in app.turn_contexts() {
            out.extend(keymap::bar(c));
        }
        if app
            .live_here()
            .is_some_and(|l| l.asking.front().is_some_and(|a| a.rules.is_empty()))
        {
            // No rule can allow the call asked about: no "always".
            let always = keymap::bar_entry(keymap::Context::Approval, A::ApproveAlways);
            out.retain(|e| Some(*e) != always);
        }
        if !out.is_empty() {
            // The turn's keys first, then help; Esc cancels a running turn, so back is
            // offered only when no turn runs.
            let actions: &[A] = if app.live_here().is_some_and(|l| !l.finished)
                || app.conv.open_subagent(app.browse.detail.as_ref()).is_some()
            {
                &[A::Help]
            } else {
                &[A::Help, A::Back]
            };
            out.extend(actions.iter().filter_map(|a| keymap::bar_entry(ctx, *a)));
            return out;
        }
    }
    out.extend(actions.iter().filter_map(|a| keymap::bar_entry(ctx, *a)));
    // Back means something else where focus is not on the list.
    if let Some(last) = out.last_mut() {
        if app.screen == Screen::Browse && app.focus == Focus::Detail {
            *last = ("q/Esc", "list");
        }
        if app.screen == Screen::Browse && app.focus == Focus::List {
            *last = ("q", "quit");
        }
    }
    if app.screen == Screen::Browse && app.focus == Focus::Detail && app.tab == Tab::Assets {
        for e in out.iter_mut() {
            if e.0 == "Enter" {
                *e = ("Enter", "export");
            }
        }
    }
    out
}

/// Whether the open transcript search takes n/N now (the browse screen: in the transcript
/// pane only).
fn find_has_keys(app: &App) -> bool {
    use super::app::{Focus, Tab};
    app.screen == Screen::Conversation || (app.focus == Focus::Detail && app.tab == Tab::Transcript)
}

/// Keeps the last `keep` entries and as many of the others, in order, as fit `width`.
pub(crate) fn fit_bar(
    entries: &[(&'static str, &'static str)],
    keep: usize,
    width: usize,
) -> Vec<(&'static str, &'static str)> {
    let w = |e: &(&str, &str)| {
        unicode_width::UnicodeWidthStr::width(e.0) + unicode_width::UnicodeWidthStr::width(e.1) + 3
    };
    let split = entries.len().saturating_sub(keep);
    let (opt, kept) = entries.split_at(split);
    let mut used = 1 + kept.iter().map(w).sum::<usize>();
    let mut out = Vec::new();
    for e in opt {
        if used + w(e) > width {
            break;
        }
        used += w(e);
        out.push(*e);
    }
    out.extend_from_slice(kept);
    out
}

fn key_bar(frame: &mut Frame<'_>, app: &App, area: Rect) {
    let t = app.theme;
    let entries: Vec<(&str, &str)> = match &app.overlay {
        Overlay::Search(_) => vec![
            ("type", "to search"),
            ("↑↓", "select"),
            ("Enter", "open"),
            ("Esc", "close"),
        ],
        Overlay::ConfirmDelete { .. } => vec![("y", "delete"), ("n/Esc", "keep")],
        Overlay::Rename { .. } => vec![("Enter", "save"), ("Esc", "cancel")],
        Overlay::DenyReason { .. } => vec![("Enter", "deny with this reason"), ("Esc", "back")],
        Overlay::AlwaysRule { rules, .. } if rules.len() > 1 => vec![
            ("Enter", "run it, keep these rules"),
            ("↑↓", "choose a rule to edit"),
            ("Ctrl-U", "clear (an empty rule is left out)"),
            ("Tab", "session / workspace / everywhere"),
            ("Esc", "back"),
        ],
        Overlay::AlwaysRule { .. } => vec![
            ("Enter", "run it, keep this rule"),
            ("Tab", "session / workspace / everywhere"),
            ("Esc", "back"),
        ],
        Overlay::Confirm(_) => vec![("y", "yes"), ("n/Esc", "no")],
        Overlay::Plan(p) if p.dropping.is_some() => {
            vec![("Enter", "drop these"), ("Esc", "back")]
        }
        Overlay::Plan(_) => keymap::bar(keymap::Context::Plan).collect(),
        Overlay::Help(_) => vec![("↑↓", "scroll"), ("any key", "close")],
        Overlay::Models { .. } => vec![("↑↓", "choose"), ("Enter", "switch"), ("Esc", "keep")],
        Overlay::Rewind(_) => vec![
            ("Enter", "rewind"),
            ("Tab", "choose"),
            ("↑↓", "scroll"),
            ("Esc", "cancel"),
        ],
        Overlay::Subagents(_) => vec![
            ("↑↓", "choose"),
            ("Enter", "open"),
            ("x", "cancel it"),
            ("X", "cancel all"),
            ("Esc", "close"),
        ],
        Overlay::Permissions(_) => vec![
            ("↑↓", "choose"),
            ("d", "revoke (this session's)"),
            ("Esc", "close"),
        ],
        Overlay::Resume => vec![
            ("type", "to filter"),
            ("↑↓", "choose"),
            ("Enter", "switch to it"),
            ("Esc", "back to the conversation"),
        ],
        Overlay::None if app.find().is_some_and(|f| f.editing) => vec![
            ("type", "to search the transcript"),
            ("Enter", "keep (n/N move)"),
            ("Esc", "close"),
        ],
        Overlay::None if app.find().is_some() && find_has_keys(app) => {
            keymap::bar(keymap::Context::Find).collect()
        }
        Overlay::None => {
            if app.screen == Screen::Browse
                && app.browse.list.filter.as_ref().is_some_and(|f| f.editing)
            {
                vec![
                    ("type", "to filter"),
                    ("↑↓", "move"),
                    ("Enter", "keep"),
                    ("Esc", "clear"),
                ]
            } else {
                bar_entries(app)
            }
        }
    };
    let keep = match &app.overlay {
        Overlay::None => 2,
        _ => 1,
    };
    let rows = fit_bar_rows(
        &entries,
        keep,
        area.width as usize,
        area.height.max(1) as usize,
    );
    let lines: Vec<Line<'static>> = rows
        .into_iter()
        .map(|row| {
            let mut spans = vec![Span::raw(" ")];
            for (k, text) in row {
                spans.push(Span::styled(k.to_string(), t.accent().patch(t.bold())));
                spans.push(Span::styled(format!(" {text}  "), t.dim()));
            }
            Line::from(spans)
        })
        .collect();
    frame.render_widget(Paragraph::new(lines), area);
}

/// The bar over `rows` rows of `width`: every entry in order when they all fit; else the last
/// `keep` entries end the last row and as many of the others as fit come before them.
pub(crate) fn fit_bar_rows(
    entries: &[(&'static str, &'static str)],
    keep: usize,
    width: usize,
    rows: usize,
) -> Vec<Vec<(&'static str, &'static str)>> {
    if rows <= 1 {
        return vec![fit_bar(entries, keep, width)];
    }
    let w = |e: &(&str, &str)| {
        unicode_width::UnicodeWidthStr::width(e.0) + unicode_width::UnicodeWidthStr::width(e.1) + 3
    };
    let split = entries.len().saturating_sub(keep);
    let (opt, kept) = entries.split_at(split);
    let kept_w: usize = kept.iter().map(w).sum();
    let mut out: Vec<Vec<(&str, &str)>> = vec![Vec::new()];
    let mut used = 1;
    for e in opt {
        let last = out.len() == rows;
        let room = if last {
            width.saturating_sub(kept_w)
        } else {
            width
        };
        if used + w(e) > room {
            if last {
                break;
            }
            out.push(Vec::new());
            used = 1;
        }
        used += w(e);
        if let Some(row) = out.last_mut() {
            row.push(*e);
        }
    }
    // The kept entries close the row the others ended on when they fit there.
    if used + kept_w > width && out.len() < rows {
        out.push(Vec::new());
    }
    if let Some(row) = out.last_mut() {
        row.extend_from_slice(kept);
    }
    out
}
