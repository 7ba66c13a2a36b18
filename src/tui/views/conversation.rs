//! The conversation view: the stored transcript, the live cell of a running turn after it,
//! interrupted calls with their choices, the editor, and the agent's status under the
//! transcript (model, context gauge, tokens, budget, approval policy, sandbox).

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Clear, Paragraph, Wrap};

use super::text::fit;
use crate::format::short_id;
use crate::sanitize;
use crate::tui::app::App;
use crate::tui::keymap::{self, Context};
use crate::tui::layout::Layout;
use crate::tui::live::{self, Card, CardState};

/// The approval prompt's keys, from the key table.
fn approval_hints() -> Vec<(&'static str, &'static str)> {
    keymap::bar(Context::Approval).collect()
}

/// The "always" rules being edited (their texts) and the one the status line edits.
fn always_editing(app: &App) -> Option<(Vec<String>, usize)> {
    match &app.overlay {
        crate::tui::dialog::Overlay::AlwaysRule {
            rules, selected, ..
        } => Some((rules.iter().map(|i| i.text.clone()).collect(), *selected)),
        _ => None,
    }
}

/// Prompt tokens of the latest model call the open transcript holds (how full the context
/// is); the live turn's newer figure wins.
/// The context now: what the next request carries (and whether it is an estimate, right
/// after a compaction), by the one definition `show` uses too.
fn context_used(app: &App) -> (u64, bool) {
    if let Some(l) = app.live_here()
        && l.context > 0
    {
        return (l.context, false);
    }
    let Some(d) = app.browse.detail.as_ref() else {
        return (0, false);
    };
    match (d.header.as_ref(), d.transcript.as_ref()) {
        (Some(h), Some(t)) => crate::runtime::agent::compact::context_now(h, t.msgs.values().rev())
            .unwrap_or((0, false)),
        _ => (0, false),
    }
}

/// Lifetime usage: every token the session's model calls spent (its totals, which the store
/// keeps equal to the ledger's).
fn session_tokens(app: &App) -> u64 {
    app.browse
        .detail
        .as_ref()
        .and_then(|d| d.header.as_ref())
        .map_or(0, |h| h.token_input_total + h.token_output_total)
}

/// Dollars of the turn shown (running or just finished) when it has any, and of the
/// session's priced model calls: (`$0.04`, `$0.17`), read `$0.04 turn · $0.17 session`.
/// `None` while no call had a price (tokens only, never a made-up dollar).
fn dollars(app: &App) -> (Option<String>, Option<String>) {
    let Some(session) = app
        .browse
        .detail
        .as_ref()
        .and_then(|d| d.header.as_ref())
        .and_then(|h| h.ledger.as_ref())
        .and_then(|l| l.usage.cost_usd)
    else {
        return (None, None);
    };
    let turn = app
        .live_here()
        .map(|l| session - l.cost_at_start.unwrap_or(0.0))
        .filter(|t| *t > 0.0)
        .map(crate::format::usd);
    (turn, Some(crate::format::usd(session)))
}

/// The agent line: the failure of the last turn in words, else model, gauge and the rest.
fn agent_line(app: &App, width: usize) -> Line<'static> {
    let t = app.theme;
    if let Some(e) = app.live_here().and_then(|l| l.error.as_ref()) {
        let retry = if app.conv.retry_offered(app.browse.detail.as_ref()) {
            "· Enter retries "
        } else {
            ""
        };
        let full = format!(" ✗ {} {retry}", sanitize::line(e));
        // Too long for the border: the whole of it is wrapped at the end of the transcript.
        let shown = if unicode_width::UnicodeWidthStr::width(full.as_str()) <= width {
            full
        } else {
            format!(" ✗ the turn failed: why is written above {retry}")
        };
        return Line::from(Span::styled(fit(&shown, width), t.error()));
    }
    // The model the next request uses: the session's own, else the configured one.
    let info = live::AgentInfo {
        provider: app.next_model(),
        ..app.conv.agent().clone()
    };
    let spans = live::status_spans(
        &info,
        context_used(app),
        session_tokens(app),
        dollars(app),
        app.budget_left(),
        app.approval(),
        t,
    );
    // Too narrow for all of it: the gauge, tokens and budget go before the policy, the
    // sandbox and the dollars; what still does not fit is cut at the end.
    let mut out = vec![Span::raw(" ")];
    let mut used = 2;
    for p in live::fit_status(spans, width.saturating_sub(2)) {
        let w = unicode_width::UnicodeWidthStr::width(p.text.as_str());
        if used + w > width {
            let room = width.saturating_sub(used);
            out.push(Span::styled(fit(&p.text, room), p.style));
            break;
        }
        used += w;
        out.push(Span::styled(p.text, p.style));
    }
    out.push(Span::raw(" "));
    Line::from(out)
}

pub(super) fn draw(frame: &mut Frame<'_>, app: &App, a: &Layout) {
    let t = app.theme;
    let d = app.browse.detail.as_ref();
    let title = match d.and_then(|d| d.header.as_ref()) {
        Some(h) if !h.title.trim().is_empty() => sanitize::line(&h.title).into_owned(),
        Some(h) => format!("session {}", short_id(&h.id, 8)),
        None if app.conv.draft() => "New session".into(),
        None => "Loading…".into(),
    };
    let width = a.conversation.width.saturating_sub(4) as usize;
    let block = Block::bordered()
        .border_style(t.border())
        .title(Span::styled(format!(" {} ", fit(&title, width)), t.bold()))
        .title_bottom(agent_line(app, width));
    frame.render_widget(block, a.conversation);
    // The queue takes the transcript's last rows, so it never hides a card.
    let panel = queue_lines(app, a.transcript);
    let h = (panel.len() as u16).min(a.transcript.height.saturating_sub(3));
    let (body_area, panel_area) = split_bottom(a.transcript, h);
    body(frame, app, body_area);
    if h > 0 {
        frame.render_widget(
            Paragraph::new(panel).style(app.theme.title_bar()),
            panel_area,
        );
    }
    completion(frame, app, a);
    composer(frame, app, a);
}

/// The transcript with the live cell (or the interrupted calls) after it.
fn body(frame: &mut Frame<'_>, app: &App, area: Rect) {
    let t = app.theme;
    let w = area.width.saturating_sub(1) as usize;
    let h = area.height as usize;
    let tr = app
        .browse
        .detail
        .as_ref()
        .and_then(|d| d.transcript.as_ref());
    let stored_last = tr.map_or(0, |t| t.last_seq);
    let following = tr.is_none_or(|t| t.follow_end);
    let mut extra: Vec<Line<'static>> = Vec::new();
    let live = app.live_here();
    if let Some(l) = live {
        let hints = approval_hints();
        let editing = always_editing(app);
        let prompt = live::Prompt {
            hints: &hints,
            editing: editing.as_ref().map(|(r, i)| (r.as_slice(), *i)),
        };
        extra = live::live_lines(l, stored_last, w, app.now_ms, &prompt, t);
        if let Some(e) = l.error.as_ref() {
            let full = format!(" ✗ {} ", sanitize::line(e));
            let border = area.width.saturating_sub(2) as usize;
            if unicode_width::UnicodeWidthStr::width(full.as_str()) > border {
                extra.extend(crate::tui::markdown::wrap(
                    &[(format!("✗ {}", sanitize::line(e)), t.error())],
                    w.saturating_sub(1),
                    "",
                    "  ",
                ));
            }
        }
    } else if app.turn_contexts().contains(&Context::Dangling)
        && let Some(d) = app.browse.detail.as_ref()
    {
        extra = dangling_lines(app, &d.interrupted, w);
    }
    if tr.is_none() && app.conv.draft() && extra.is_empty() {
        frame.render_widget(
            Paragraph::new(Span::styled(
                "Nothing is saved until you send the first message; Esc goes back (what you typed is kept).",
                t.dim(),
            ))
            .wrap(Wrap { trim: false }),
            area,
        );
        return;
    }
    let needles = super::find::needles(app);
    let mut lines: Vec<Line<'static>> = match tr {
        Some(tr) => tr
            .visible(w, h, t)
            .into_iter()
            .map(|(seq, line)| {
                let line = super::find::highlight(line, &needles, t.matched());
                let sel = tr.selected == Some(seq);
                let mut spans = vec![Span::styled(if sel { "▌" } else { " " }, t.accent())];
                spans.extend(line.spans);
                Line::from(spans)
            })
            .collect(),
        None if !app.conv.draft() => vec![Line::from(Span::styled(" Loading…", t.dim()))],
        None => Vec::new(),
    };
    if tr.is_some_and(|t| t.last_seq == 0) && extra.is_empty() {
        lines.push(Line::from(Span::styled(" No messages yet.", t.dim())));
    }
    let mut marker = false;
    if following {
        super::text::follow_end(&mut lines, extra, h);
    } else {
        marker = live.is_some_and(|l| !l.finished || !extra.is_empty());
    }
    frame.render_widget(Paragraph::new(lines), area);
    if marker && area.height > 0 {
        let text = " ↓ new output (PgDn) ";
        let mw = text.chars().count() as u16;
        let r = Rect::new(
            area.right().saturating_sub(mw + 1),
            area.bottom() - 1,
            mw.min(area.width),
            1,
        );
        frame.render_widget(Clear, r);
        frame.render_widget(
            Paragraph::new(Span::styled(text, t.accent().patch(t.bold()))),
            r,
        );
    }
}

/// The calls a stopped session left without a result, as cards with the two choices.
fn dangling_lines(app: &App, calls: &[crate::session::ToolCall], w: usize) -> Vec<Line<'static>> {
    let t = app.theme;
    let mut out = vec![Line::from(Span::styled(
        "These tool calls never got a result (the session stopped mid-turn):",
        t.warn(),
    ))];
    for c in calls {
        let card = Card {
            call: c.clone(),
            kind: crate::runtime::tools::spec(&c.name)
                .map_or(crate::runtime::tools::ToolKind::Read, |s| s.kind),
            summary: crate::runtime::tools::summary(&c.name, &c.arguments),
            state: CardState::Interrupted,
            since_ms: app.now_ms,
            ended_ms: None,
            result: None,
            result_seq: None,
            step: None,
            decided: None,
            diagnostics: None,
        };
        out.extend(live::card_lines(&card, w, app.now_ms, None, t));
    }
    let mut spans = Vec::new();
    for (k, what) in keymap::bar(Context::Dangling) {
        spans.push(Span::styled(k, t.accent().patch(t.bold())));
        spans.push(Span::styled(format!(" {what}   "), t.text()));
    }
    out.push(Line::from(spans));
    out
}

/// Slash commands matching what is typed, just above the editor.
fn completion(frame: &mut Frame<'_>, app: &App, a: &Layout) {
    let t = app.theme;
    let m: Vec<(String, String, String)> = if app.conv.path_matches().is_empty() {
        app.conv.slash_matches()
    } else {
        app.conv
            .path_matches()
            .iter()
            .map(|p| {
                (
                    format!("@{}", sanitize::line(p)),
                    String::new(),
                    String::new(),
                )
            })
            .collect()
    };
    if m.is_empty() || a.transcript.height < 4 {
        return;
    }
    let n = (m.len() as u16).min(a.transcript.height - 2);
    let r = Rect::new(
        a.transcript.x,
        a.transcript.bottom().saturating_sub(n),
        a.transcript.width,
        n,
    );
    frame.render_widget(Clear, r);
    let picked = app.conv.picker_row();
    let lines: Vec<Line<'static>> = m
        .iter()
        .take(n as usize)
        .enumerate()
        .map(|(i, (name, args, what))| {
            let line = Line::from(vec![
                Span::styled(format!(" {name}"), t.accent().patch(t.bold())),
                Span::styled(format!(" {args}"), t.code()),
                Span::styled(format!("  {what}"), t.dim()),
            ]);
            if picked == Some(i) {
                line.patch_style(t.selected())
            } else {
                line
            }
        })
        .collect();
    frame.render_widget(Paragraph::new(lines).style(t.title_bar()), r);
}

/// `area` less its last `h` rows, and those rows.
fn split_bottom(area: Rect, h: u16) -> (Rect, Rect) {
    let top = Rect::new(area.x, area.y, area.width, area.height - h);
    (
        top,
        Rect::new(area.x, area.y + area.height - h, area.width, h),
    )
}

/// The open session's queue, above the editor: what waits, oldest first (steering messages
/// marked), and whether it goes on by itself or is held (and why). Empty: nothing waits.
fn queue_lines(app: &App, area: Rect) -> Vec<Line<'static>> {
    let t = app.theme;
    let Some(d) = app.browse.detail.as_ref().filter(|_| !app.conv.draft()) else {
        return Vec::new();
    };
    if d.queued.is_empty() || area.height < 8 {
        return Vec::new();
    }
    let room = area.width.saturating_sub(2) as usize;
    let n = d.queued.len();
    // At most a third of the transcript's rows.
    let shown = n.min((area.height / 3).saturating_sub(1).max(1) as usize);
    let state = match app.conv.queue_held(Some(d)) {
        Some(why) if app.conv.retry_offered(Some(d)) => {
            format!(" · held: {why}; Enter on an empty editor retries it, then the queue goes on")
        }
        Some(why) => format!(" · held: {why}; Enter on an empty editor sends the next"),
        None if app.turn_active() => " · sent one at a time when the turn ends".to_string(),
        None => String::new(),
    };
    let head = format!(" Queued ({n})");
    let mut lines = vec![Line::from(vec![
        Span::styled(head.clone(), t.accent().patch(t.bold())),
        Span::styled(
            fit(
                &format!("{state} · Ctrl-E (editor empty) edits the last"),
                room.saturating_sub(head.chars().count()),
            ),
            t.dim(),
        ),
    ])];
    for (i, q) in d.queued.iter().take(shown).enumerate() {
        let mark = if q.steer { "steer" } else { "next " };
        let text = sanitize::line(&q.text).into_owned();
        lines.push(Line::from(vec![
            Span::styled(format!(" {}. {mark} ", i + 1), t.dim()),
            Span::raw(fit(&text, room.saturating_sub(12))),
        ]));
    }
    if n > shown {
        lines.push(Line::from(Span::styled(
            format!("    … {} more", n - shown),
            t.dim(),
        )));
    }
    lines
}

fn composer(frame: &mut Frame<'_>, app: &App, a: &Layout) {
    let t = app.theme;
    let room = a.input.width.saturating_sub(2) as usize;
    let card = app.card_focus();
    let (hint, style) = if let Some(ctx) = card {
        let what = match ctx {
            Context::Plan => "the plan dialog has",
            Context::Dangling => "the interrupted calls above have",
            _ => "the approval above has",
        };
        (format!("not taking keys: {what} them"), t.warn())
    } else if app.conv.picker_open() {
        (
            "@ files: ↑↓ choose, Enter or Tab inserts, Esc closes".to_string(),
            t.accent(),
        )
    } else if app.conv.agent().provider.is_err() {
        // "▶ Message · " and the hint must fit whole in the border.
        let long = "no model configured: F1 says how";
        let hint = if 12 + long.chars().count() < room {
            long
        } else {
            "no model: F1"
        };
        (hint.to_string(), t.warn())
    } else if let Some(l) = app.live_here().filter(|l| !l.finished) {
        if l.asking.is_empty() {
            (
                "a turn is running: Enter queues, Alt-Enter steers, Esc cancels".to_string(),
                t.dim(),
            )
        } else {
            ("answer the approval above first".to_string(), t.warn())
        }
    } else if app.conv.open_subagent(app.browse.detail.as_ref()).is_some() {
        (
            "a sub-agent, running: Alt-Enter steers it, Esc cancels it, Ctrl-T lists them"
                .to_string(),
            t.dim(),
        )
    } else if app.turn_active() {
        (
            "a turn runs in another session: Enter queues here".to_string(),
            t.dim(),
        )
    } else if app.running_elsewhere() {
        (
            "running in another process: shown live, read-only".to_string(),
            t.warn(),
        )
    } else if app.conv.retry_offered(app.browse.detail.as_ref()) && app.conv.composer().is_empty() {
        (
            "the last turn failed: Enter retries it".to_string(),
            t.warn(),
        )
    } else {
        ("Tab completes /commands".to_string(), t.dim())
    };
    let focused = card.is_none();
    let mut title = vec![
        Span::styled(
            format!("{}Message ", super::parts::focus_mark(focused)),
            t.bold(),
        ),
        Span::styled(format!("· {hint} "), style),
    ];
    if !app.conv.attachments().is_empty() {
        let n = app.conv.attachments().len();
        title.push(Span::styled(
            format!("· {n} image{} attached ", if n == 1 { "" } else { "s" }),
            t.accent(),
        ));
    }
    let input_block = super::parts::pane_block(t, focused).title(Line::from(title));
    let inner = input_block.inner(a.input);
    frame.render_widget(input_block, a.input);
    if card.is_some() && app.conv.composer().is_empty() {
        frame.render_widget(
            Paragraph::new(Span::styled(
                " Typing is paused: pause, then press one of the keys it offers.",
                t.dim(),
            )),
            inner,
        );
        return;
    }
    // The editor holds only neutralised text (typed characters, sanitised pastes). While a
    // turn runs here, Alt-Enter steers it: the empty editor says so.
    let placeholder = if app.live_here().is_some_and(|l| !l.finished) {
        crate::tui::composer::PLACEHOLDER_TURN
    } else {
        crate::tui::composer::PLACEHOLDER
    };
    frame.render_widget(app.conv.composer().area_with(placeholder).as_ref(), inner);
}
