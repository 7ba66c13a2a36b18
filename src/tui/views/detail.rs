//! The detail pane (tabs) and the conversation view.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout as Split, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, LineGauge, Paragraph, Sparkline, Wrap};

use super::text::fit;
use crate::format;
use crate::format::short_id;
use crate::sanitize;
use crate::session::{SessionHeader, Usage};
use crate::tui::app::{App, Detail, Focus, Tab};
use crate::tui::layout::Layout;
use crate::tui::theme::Theme;
use chrono::Local;

pub(super) fn draw(frame: &mut Frame<'_>, app: &App, a: &Layout) {
    let t = app.theme;
    let focused = app.focus == Focus::Detail;
    let welcoming = app.browse.list.loaded
        && app.browse.list.rows.is_empty()
        && app.browse.list.filter.is_none()
        && app.browse.detail.is_none();
    let title = match app.browse.detail.as_ref().and_then(|d| d.header.as_ref()) {
        Some(h) if !h.title.trim().is_empty() => sanitize::line(&h.title).into_owned(),
        Some(h) => format!("session {}", short_id(&h.id, 8)),
        None if welcoming => "Getting started".to_string(),
        None => String::new(),
    };
    let block = super::parts::pane_block(t, focused).title(Span::styled(
        format!(
            "{}{} ",
            super::parts::focus_mark(focused),
            fit(&title, a.detail.width.saturating_sub(6) as usize)
        ),
        t.bold(),
    ));
    frame.render_widget(block, a.detail);

    if welcoming {
        welcome(frame, app, Block::bordered().inner(a.detail));
        return;
    }

    // Tabs, each in the rectangle a click on it hits.
    for (tab, area) in Tab::ALL.into_iter().zip(a.tab_rects) {
        if area.is_empty() {
            continue;
        }
        let style = if tab == app.tab {
            t.accent()
                .patch(t.bold())
                .add_modifier(ratatui::style::Modifier::UNDERLINED)
        } else {
            t.dim()
        };
        let last = tab == Tab::Info && a.tab_form != crate::tui::layout::TabForm::Padded;
        let line = Line::from(vec![
            Span::styled(a.tab_form.label(tab), style),
            // Tight tabs end at the border: no separator beside it.
            Span::styled(if last { "" } else { "│" }, t.border()),
        ]);
        frame.render_widget(Paragraph::new(line), area);
    }
    frame.render_widget(
        Paragraph::new(Span::styled("─".repeat(a.tabs.width as usize), t.border())),
        Rect {
            y: a.tabs.y + 1,
            height: 1,
            ..a.tabs
        },
    );

    let Some(d) = &app.browse.detail else {
        frame.render_widget(
            Paragraph::new(Span::styled("No session selected.", t.dim())),
            a.body,
        );
        return;
    };
    if d.header.is_none() {
        frame.render_widget(Paragraph::new(Span::styled("Loading…", t.dim())), a.body);
        return;
    }
    match app.tab {
        Tab::Transcript => transcript(frame, app, d, a.body, focused),
        Tab::Plan => plan(frame, app, d, a.body),
        Tab::Usage => usage(frame, app, d, a.body),
        Tab::Assets => assets(frame, app, d, a.body),
        Tab::Info => info(frame, app, d, a.body),
    }
}

fn welcome(frame: &mut Frame<'_>, app: &App, area: Rect) {
    let t = app.theme;
    let lines = vec![
        Line::default(),
        Line::from(Span::styled(
            "  Welcome to neocode",
            t.bold().patch(t.accent()),
        )),
        Line::default(),
        Line::from("  This workspace has no sessions yet."),
        Line::default(),
        Line::from(vec![
            Span::raw("  • Press "),
            Span::styled("n", t.accent().patch(t.bold())),
            Span::raw(" to start a new session."),
        ]),
        Line::from(vec![
            Span::raw("  • Run "),
            Span::styled("neocode demo", t.accent().patch(t.bold())),
            Span::raw(" to explore sample sessions."),
        ]),
        Line::from(vec![
            Span::raw("  • Press "),
            Span::styled("?", t.accent().patch(t.bold())),
            Span::raw(" for help, "),
            Span::styled("q", t.accent().patch(t.bold())),
            Span::raw(" to quit."),
        ]),
    ];
    frame.render_widget(Paragraph::new(lines).wrap(Wrap { trim: false }), area);
}

pub(super) fn transcript(frame: &mut Frame<'_>, app: &App, d: &Detail, area: Rect, focused: bool) {
    let th = app.theme;
    let Some(tr) = &d.transcript else {
        frame.render_widget(Paragraph::new(Span::styled("Loading…", th.dim())), area);
        return;
    };
    let w = area.width.saturating_sub(1) as usize;
    let h = area.height as usize;
    // A turn running in this session in the background (Ctrl-B): what it sent and what
    // streams so far show live after the stored messages, as in the conversation.
    let extra: Vec<Line<'static>> = match app
        .conv
        .live()
        .filter(|l| l.session_id.as_deref() == Some(d.id.as_str()))
    {
        Some(l) if tr.follow_end || tr.last_seq == 0 => {
            let hints: Vec<(&'static str, &'static str)> =
                crate::tui::keymap::bar(crate::tui::keymap::Context::Approval).collect();
            let prompt = crate::tui::live::Prompt {
                hints: &hints,
                editing: None,
            };
            crate::tui::live::live_lines(l, tr.last_seq, w, app.now_ms, &prompt, th)
        }
        _ => Vec::new(),
    };
    if tr.last_seq == 0 && extra.is_empty() {
        frame.render_widget(
            Paragraph::new(Span::styled("No messages yet.", th.dim())),
            area,
        );
        return;
    }
    let needles = super::find::needles(app);
    let mut lines: Vec<Line<'static>> = tr
        .visible(w, h, th)
        .into_iter()
        .map(|(seq, line)| {
            let line = super::find::highlight(line, &needles, th.matched());
            let sel = focused && tr.selected == Some(seq);
            let mut spans = vec![Span::styled(if sel { "▌" } else { " " }, th.accent())];
            spans.extend(line.spans);
            Line::from(spans)
        })
        .collect();
    if !extra.is_empty() {
        super::text::follow_end(&mut lines, extra, h);
    }
    frame.render_widget(Paragraph::new(lines), area);
}

fn plan(frame: &mut Frame<'_>, app: &App, d: &Detail, area: Rect) {
    let t = app.theme;
    let Some(plan) = d
        .header
        .as_ref()
        .and_then(|h| h.plan.as_ref())
        .filter(|p| !p.steps.is_empty())
    else {
        frame.render_widget(
            Paragraph::new(Span::styled("This session has no plan.", t.dim())),
            area,
        );
        return;
    };
    let counts = d.progress.counts(plan);
    let ratio = if counts.total == 0 {
        0.0
    } else {
        counts.done as f64 / counts.total as f64
    };
    let [gauge, body] = Split::vertical([Constraint::Length(2), Constraint::Min(0)]).areas(area);
    let mut label = format!("{}/{} done", counts.done, counts.total);
    if counts.failed > 0 {
        label.push_str(&format!(", {} failed", counts.failed));
    }
    frame.render_widget(
        LineGauge::default()
            .ratio(ratio)
            .label(label)
            .filled_style(t.ok())
            .unfilled_style(t.dim()),
        Rect { height: 1, ..gauge },
    );
    let width = body.width as usize;
    let focused = app.focus == crate::tui::app::Focus::Detail;
    let mut lines: Vec<Line<'static>> = Vec::new();
    // The line the selected step starts on, so the view can keep it on screen.
    let mut selected_line = 0usize;
    let mut index = 0usize;
    match plan.layers() {
        Ok(layers) => {
            for (i, layer) in layers.iter().enumerate() {
                lines.push(Line::from(Span::styled(
                    format!("Layer {}", i + 1),
                    t.dim().patch(t.bold()),
                )));
                for step in layer {
                    let selected = index == d.plan_sel;
                    index += 1;
                    if selected {
                        selected_line = lines.len();
                    }
                    lines.extend(step_lines(app, d, step, width, selected && focused));
                }
            }
        }
        Err(e) => lines.push(Line::from(Span::styled(
            format!(
                "The plan is not a valid DAG: {}",
                sanitize::line(&e.to_string())
            ),
            t.error(),
        ))),
    }
    if !d.steps.is_empty() {
        lines.push(Line::default());
        lines.push(Line::from(Span::styled(
            "↑↓ select a step · Enter opens its conversation",
            t.dim(),
        )));
    }
    // Keep the selected step visible: scroll just enough, at least what the user scrolled.
    let h = body.height as usize;
    let scroll = if selected_line + 4 > h {
        (selected_line + 4 - h) as u16
    } else {
        0
    };
    frame.render_widget(
        Paragraph::new(lines).scroll((scroll.max(d.scroll), 0)),
        body,
    );
}

/// One step of the Plan tab: mark, id, title, status; then timing and tokens of its latest
/// conversation, what it depends on, the result's first line or the error.
fn step_lines(
    app: &App,
    d: &Detail,
    step: &crate::session::Step,
    width: usize,
    selected: bool,
) -> Vec<Line<'static>> {
    let t = app.theme;
    let st = d.progress.status(&step.id);
    let failure = d.progress.failures.get(&step.id);
    let skipped = failure.is_some_and(|f| f.error_type == "skipped");
    let (icon, icon_style) = if skipped {
        ("⊘", t.dim())
    } else {
        super::parts::step_icon(st, t)
    };
    let word = if skipped { "skipped" } else { st.as_str() };
    let id_style = if selected {
        t.accent()
            .patch(t.bold())
            .add_modifier(ratatui::style::Modifier::REVERSED)
    } else {
        t.accent()
    };
    let mut lines = crate::tui::markdown::wrap(
        &[
            (if selected { "› " } else { "  " }.to_string(), t.accent()),
            (icon.to_string(), icon_style),
            (" ".into(), t.text()),
            (sanitize::line(&step.id).into_owned(), id_style),
            ("  ".into(), t.text()),
            (sanitize::line(&step.title).into_owned(), t.text()),
            (format!("  {word}"), t.dim()),
        ],
        width,
        "",
        "    ",
    );
    if let Some((c, attempts)) = d.step_conversation(&step.id) {
        let s = &c.session;
        // A running step's clock runs to now; a finished one's stops at its last write.
        let end = if st == crate::session::StepStatus::Running {
            app.now_ms.max(s.updated_at_ms)
        } else {
            s.updated_at_ms
        };
        let secs = (end - s.created_at_ms).max(0) as f64 / 1000.0;
        let mut info = format!(
            "      {secs:.1} s · {} in / {} out tokens · {} messages",
            format::compact(s.token_input_total),
            format::compact(s.token_output_total),
            s.message_count
        );
        if attempts > 1 {
            info.push_str(&format!(" · attempt {attempts}"));
        }
        lines.push(Line::from(Span::styled(info, t.dim())));
    }
    if !step.depends_on.is_empty() {
        let deps: Vec<String> = step
            .depends_on
            .iter()
            .map(|s| sanitize::line(s).into_owned())
            .collect();
        lines.push(Line::from(Span::styled(
            format!("      after {}", deps.join(", ")),
            t.dim(),
        )));
    }
    if let Some(r) = d.progress.results.get(&step.id) {
        let text = crate::runtime::agent::plan::result_text(r);
        let first = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
        let text = sanitize::line(first).into_owned();
        lines.push(Line::from(vec![
            Span::styled("      → ", t.ok()),
            Span::raw(fit(&text, width.saturating_sub(8))),
        ]));
    }
    if let Some(f) = failure {
        let text = format!("{}: {}", f.error_type, f.message);
        let text = sanitize::line(&text).into_owned();
        let style = if skipped { t.dim() } else { t.error() };
        lines.push(Line::from(vec![
            Span::styled(if skipped { "      ⊘ " } else { "      ✗ " }, style),
            Span::styled(fit(&text, width.saturating_sub(8)), style),
        ]));
    }
    lines
}

/// The Usage tab's prompt-cache and cost lines, when the ledger has any.
fn cache_and_cost(
    ledger: &crate::session::RuntimeLedger,
    t: crate::tui::theme::Theme,
) -> Vec<Line<'static>> {
    let mut lines = Vec::new();
    let u = &ledger.usage;
    let prompt = u.input_tokens + u.cached_input_tokens + u.cache_write_tokens;
    if u.cached_input_tokens + u.cache_write_tokens > 0 && prompt > 0 {
        lines.push(Line::from(vec![
            Span::styled("Prompt cache    ", t.dim()),
            Span::raw(format!(
                "{:.0}% hit rate (cached input / all input) · {} read · {} written",
                u.cached_input_tokens as f64 * 100.0 / prompt as f64,
                format::compact(u.cached_input_tokens),
                format::compact(u.cache_write_tokens),
            )),
        ]));
    }
    if let Some(cost) = u.cost_usd {
        let of = ledger
            .limits
            .max_cost_usd
            .map(|m| format!(" of ${m:.2}"))
            .unwrap_or_default();
        lines.push(Line::from(vec![
            Span::styled("Cost            ", t.dim()),
            Span::raw(format!("${cost:.4}{of} (model calls with a known price)")),
        ]));
    }
    lines
}

fn usage(frame: &mut Frame<'_>, app: &App, d: &Detail, area: Rect) {
    let t = app.theme;
    let Some(h) = &d.header else { return };
    let ledger = h.ledger.clone().unwrap_or_default();
    // The three figures (README "Token figures"): lifetime usage (what was spent: the
    // ledger, which the header's totals equal), the context now (what the next request
    // carries) and per turn (the chart).
    let replies = d.usage.as_ref().map(|u| u.len() as u64);
    let calls = if h.ledger.is_some() {
        Some(ledger.usage.turns)
    } else {
        replies
    };
    let mut spent = format!(
        "{} in · {} out",
        format::compact(h.token_input_total),
        format::compact(h.token_output_total)
    );
    if let Some(n) = calls {
        spent.push_str(&format!(
            " · {n} model call{}",
            if n == 1 { "" } else { "s" }
        ));
    }
    if h.ledger.is_some() {
        spent.push_str(&format!(" · {} tool calls", ledger.usage.tool_calls));
    }
    let context = d
        .transcript
        .as_ref()
        .and_then(|tr| crate::runtime::agent::compact::context_now(h, tr.msgs.values().rev()));
    let context = match context {
        Some((n, est)) => format!(
            "{}{} of {} (what the next request carries)",
            if est { "~" } else { "" },
            format::compact(n),
            app.conv.agent().window.map_or_else(
                || "? (window unknown: set context_window in config.toml)".to_string(),
                format::compact
            )
        ),
        None => "no model call yet".to_string(),
    };
    let mut lines = vec![
        Line::from(vec![
            Span::styled("Lifetime usage  ", t.dim()),
            Span::styled(spent, t.bold()),
        ]),
        Line::from(vec![
            Span::styled("Context now     ", t.dim()),
            Span::raw(context),
        ]),
    ];
    lines.extend(cache_and_cost(&ledger, t));
    if let Some(term) = &ledger.termination {
        lines.push(Line::from(vec![
            Span::styled("Stopped         ", t.dim()),
            Span::styled(sanitize::line(term).into_owned(), t.warn()),
        ]));
    }
    let limits = &ledger.limits;
    let gauges: Vec<(&str, u64, u64)> = [
        (
            "input tokens",
            ledger.usage.input_tokens,
            limits.max_input_tokens,
        ),
        (
            "output tokens",
            ledger.usage.output_tokens,
            limits.max_output_tokens,
        ),
        ("tool calls", ledger.usage.tool_calls, limits.max_tool_calls),
        ("turns", ledger.usage.turns, limits.max_turns),
    ]
    .into_iter()
    .filter_map(|(n, used, lim)| lim.map(|l| (n, used, l)))
    .collect();
    let lines = super::parts::wrap_lines(lines, area.width as usize, 16);
    let head_h = lines.len() as u16 + 1;
    let [head, chart_title, chart, gauge_area] = Split::vertical([
        Constraint::Length(head_h),
        Constraint::Length(1),
        Constraint::Length(
            7.min(
                area.height
                    .saturating_sub(head_h + 1 + gauges.len() as u16 + 1),
            ),
        ),
        Constraint::Min(0),
    ])
    .areas(area);
    frame.render_widget(Paragraph::new(lines), head);
    usage_chart(frame, t, d.usage.as_deref(), calls, chart_title, chart);
    usage_gauges(frame, t, gauges, gauge_area);
}

/// The per-turn chart under its title line.
fn usage_chart(
    frame: &mut Frame<'_>,
    t: Theme,
    usage: Option<&[(i64, Usage)]>,
    calls: Option<u64>,
    chart_title: Rect,
    chart: Rect,
) {
    match usage {
        None => frame.render_widget(
            Paragraph::new(Span::styled("Per-turn usage: loading…", t.dim())),
            chart_title,
        ),
        Some([]) => frame.render_widget(
            Paragraph::new(Span::styled(
                "Per-turn usage: no model turns recorded.",
                t.dim(),
            )),
            chart_title,
        ),
        Some(turns) => {
            let n = (chart.width as usize).min(turns.len());
            let shown = &turns[turns.len() - n..];
            let max = shown
                .iter()
                .map(|(_, u)| u.input_tokens + u.output_tokens)
                .max()
                .unwrap_or(0);
            // Calls that left no reply in this transcript (a plan run's steps reply in their
            // own sessions; a compaction's summary, a reply cancelled before any text, the
            // replies a compaction replaced) count in the lifetime usage, not here.
            let k = turns.len() as u64;
            let elsewhere = calls.map_or(0, |c| c.saturating_sub(k));
            let more = if elsewhere > 0 {
                format!(" · {elsewhere} more model calls have no reply here")
            } else {
                String::new()
            };
            frame.render_widget(
                Paragraph::new(Line::from(vec![
                    Span::styled(
                        format!("Per-turn tokens (last {n} of {k} replies{more})",),
                        t.dim(),
                    ),
                    Span::styled(format!("  peak {}", format::compact(max)), t.dim()),
                ])),
                chart_title,
            );
            // One column per turn when they are many; wider bars with a gap when they are few,
            // so a short session's chart is not a sliver.
            let bar = (chart.width as usize / n.max(1)).clamp(1, 6);
            let mut data: Vec<u64> = Vec::with_capacity(n * bar);
            for (_, u) in shown {
                let v = u.input_tokens + u.output_tokens;
                if bar >= 3 {
                    data.extend(std::iter::repeat_n(v, bar - 1));
                    data.push(0);
                } else {
                    data.extend(std::iter::repeat_n(v, bar));
                }
            }
            frame.render_widget(Sparkline::default().data(&data).style(t.accent()), chart);
        }
    }
}

/// One gauge per budget limit set.
fn usage_gauges(frame: &mut Frame<'_>, t: Theme, gauges: Vec<(&str, u64, u64)>, gauge_area: Rect) {
    if gauges.is_empty() {
        frame.render_widget(
            Paragraph::new(Span::styled(
                "No budget limits set for this session.",
                t.dim(),
            )),
            Rect {
                y: gauge_area.y + 1,
                height: gauge_area.height.saturating_sub(1),
                ..gauge_area
            },
        );
        return;
    }
    for (y, (name, used, limit)) in (gauge_area.y + 1..).zip(gauges) {
        if y >= gauge_area.bottom() {
            break;
        }
        let ratio = if limit == 0 {
            1.0
        } else {
            (used as f64 / limit as f64).min(1.0)
        };
        let style = if ratio >= 0.9 {
            t.error()
        } else if ratio >= 0.7 {
            t.warn()
        } else {
            t.ok()
        };
        frame.render_widget(
            LineGauge::default()
                .ratio(ratio)
                .label(format!(
                    "{name:<14}{:>7} / {:<7}",
                    format::compact(used),
                    format::compact(limit)
                ))
                .filled_style(style)
                .unfilled_style(t.dim()),
            Rect {
                y,
                height: 1,
                ..gauge_area
            },
        );
    }
}

fn assets(frame: &mut Frame<'_>, app: &App, d: &Detail, area: Rect) {
    let t = app.theme;
    if d.assets.is_empty() {
        frame.render_widget(
            Paragraph::new(Span::styled("This session has no assets.", t.dim())),
            area,
        );
        return;
    }
    let mut lines = vec![Line::from(Span::styled(
        format!("  {:<22} {:<12} {:>9}  {}", "id", "type", "size", "created"),
        t.dim().patch(t.bold()),
    ))];
    let focused = app.focus == Focus::Detail;
    for (i, a) in d.assets.iter().enumerate() {
        let line = Line::from(vec![
            Span::styled(if i == d.asset_sel { "▌ " } else { "  " }, t.accent()),
            Span::raw(format!(
                "{:<22} {:<12} {:>9}  {}",
                fit(&sanitize::line(&a.id), 22),
                fit(&sanitize::line(&a.mime_type), 12),
                human_size(a.size_bytes),
                format::relative_time(app.now_ms, a.created_at_ms, &Local)
            )),
        ]);
        lines.push(if i == d.asset_sel && focused {
            line.style(t.selected())
        } else {
            line
        });
    }
    lines.push(Line::default());
    lines.push(Line::from(Span::styled(
        "Tab to focus, ↑↓ select, Enter or e writes the asset to a file in the current directory.",
        t.dim(),
    )));
    frame.render_widget(Paragraph::new(lines).wrap(Wrap { trim: false }), area);
}

fn human_size(n: u64) -> String {
    if n < 1024 {
        format!("{n} B")
    } else if n < 1024 * 1024 {
        format!("{:.1} KiB", n as f64 / 1024.0)
    } else {
        format!("{:.1} MiB", n as f64 / (1024.0 * 1024.0))
    }
}

/// A `key         value` line of the Info tab (the value sanitised).
fn kv(t: Theme, k: &str, v: String) -> Line<'static> {
    Line::from(vec![
        Span::styled(format!("{k:<12}"), t.dim()),
        Span::raw(sanitize::line(&v).into_owned()),
    ])
}

/// The Info tab's lines about the session itself: its header, where it came from, when.
fn header_lines(app: &App, d: &Detail, h: &SessionHeader) -> Vec<Line<'static>> {
    let t = app.theme;
    let kv = |k: &str, v: String| kv(t, k, v);
    let mut lines = vec![
        kv("id", h.id.clone()),
        kv(
            "title",
            if h.title.is_empty() {
                "(untitled)".into()
            } else {
                h.title.clone()
            },
        ),
        kv("status", h.status.as_str().to_string()),
        kv("workspace", app.paths.root.clone()),
        kv("workdir", h.workdir.clone()),
        kv(
            "branch",
            h.branch.clone().unwrap_or_else(|| "(none recorded)".into()),
        ),
        kv("provider", h.provider.clone()),
        kv("model", h.model.clone()),
        kv(
            "tokens",
            format!(
                "{} in / {} out (lifetime)",
                format::compact(h.token_input_total),
                format::compact(h.token_output_total)
            ),
        ),
        kv(
            "messages",
            format!("{} (last seq {})", h.message_count, h.last_seq),
        ),
    ];
    if !d.interrupted.is_empty() {
        lines.push(Line::from(vec![
            Span::styled(format!("{:<12}", "interrupted"), t.dim()),
            Span::styled(crate::tui::app::interrupted_note(&d.interrupted), t.error()),
        ]));
    }
    match (&h.parent_id, h.fork_seq) {
        (Some(p), seq) => lines.push(kv(
            "forked from",
            format!(
                "{p} at message #{}",
                seq.map(|s| s.to_string()).unwrap_or_else(|| "?".into())
            ),
        )),
        (None, _) => lines.push(kv("forked from", "—".into())),
    }
    if let Some(p) = &h.profile {
        lines.insert(8, kv("profile", format!("[providers.{p}]")));
    }
    if let Some(p) = &h.subagent_of {
        lines.push(kv("sub-agent of", p.clone()));
    }
    if let Some(src) = &h.source {
        lines.push(kv(
            "imported",
            format!("from {} {} ({})", src.tool, src.version, src.id),
        ));
    }
    lines.push(kv(
        "created",
        format!(
            "{} ({})",
            format::timestamp(h.created_at_ms),
            format::relative_time(app.now_ms, h.created_at_ms, &Local)
        ),
    ));
    lines.push(kv(
        "updated",
        format!(
            "{} ({})",
            format::timestamp(h.updated_at_ms),
            format::relative_time(app.now_ms, h.updated_at_ms, &Local)
        ),
    ));
    lines
}

fn info(frame: &mut Frame<'_>, app: &App, d: &Detail, area: Rect) {
    let t = app.theme;
    let Some(h) = &d.header else { return };
    let mut lines = header_lines(app, d, h);
    if let Some(c) = &d.context {
        for (k, v) in [
            ("instr files", &c.instructions),
            ("skills", &c.skills),
            ("mcp servers", &c.mcp_servers),
            ("skipped", &c.problems),
        ] {
            if !v.is_empty() {
                lines.push(kv(t, k, v.join(", ")));
            }
        }
    }
    // Long values (ids, paths) wrap under their value column instead of being cut.
    let wrapped = super::parts::wrap_lines(lines, area.width as usize, 12);
    let shown = super::changes::with_changes(t, d, wrapped, area);
    frame.render_widget(Paragraph::new(shown), area);
}
