//! The live part of the conversation: what a running turn has sent so far (streamed text, tool
//! cards with their states, the approval being asked) and what the status line says about the
//! agent. Plain data built from [`TurnEvent`](crate::runtime::agent::TurnEvent)s by the app,
//! laid out into lines here; nothing here does IO.

use std::collections::VecDeque;

use ratatui::style::Style;
use ratatui::text::{Line, Span};

use super::markdown;
use super::theme::Theme;
use crate::format;
use crate::runtime::config::ApprovalPolicy;
use crate::runtime::tools::ToolKind;
use crate::sanitize;
use crate::session::{ToolCall, Usage};

/// Result lines a card shows.
const CARD_RESULT_LINES: usize = 4;
/// Spinner frames (one per ~80 ms).
const SPINNER: [&str; 10] = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];

/// What the status line knows about the agent (settled when the TUI starts).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentInfo {
    /// The model, or exactly what to configure.
    pub provider: Result<String, crate::tui::error::Failure>,
    /// Context window in tokens ([`gauge_window`]: the configured one or the one the server
    /// tells); `None`: neither is known ("window unknown").
    pub window: Option<u64>,
    /// Approval policy of new turns.
    pub policy: ApprovalPolicy,
    /// Sandbox in words (`on`, `off`, ...).
    pub sandbox: String,
    /// Commands run inside a sandbox.
    pub sandbox_on: bool,
    /// MCP servers that failed to start or died (shown until the TUI restarts, since a failed
    /// server is not started again before that).
    pub mcp_failed: Vec<String>,
}

impl Default for AgentInfo {
    fn default() -> AgentInfo {
        AgentInfo {
            provider: Err("no model provider configured: set NEOCODE_BASE_URL and NEOCODE_MODEL (or NEOCODE_API_KEY for OpenAI)".into()),
            window: Some(128_000),
            policy: ApprovalPolicy::default(),
            sandbox: "off".into(),
            sandbox_on: false,
            mcp_failed: Vec::new(),
        }
    }
}

/// The window the gauge shows: the smaller of the configured one (`context_window` in
/// config.toml) and the one the server tells, as a turn uses them; either alone when only one
/// is known; `None` ("window unknown") when neither is.
pub(crate) fn gauge_window(configured: Option<u64>, told: Option<u64>) -> Option<u64> {
    match (configured, told) {
        (Some(c), Some(t)) => Some(c.min(t)),
        (c, t) => c.or(t),
    }
}

/// Where a tool call stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CardState {
    /// Asked the user; the reason the policy gave.
    Waiting(String),
    /// Running since the card's start.
    Running,
    /// Finished well.
    Done,
    /// Finished with an error.
    Failed,
    /// The user said no.
    Denied,
    /// The turn stopped before it ran, or a crash left it without a result.
    Interrupted,
    /// The user cancelled the turn while it ran (it was killed).
    Cancelled,
}

impl CardState {
    /// The word shown on the card.
    pub(crate) fn word(&self) -> &'static str {
        match self {
            CardState::Waiting(_) => "waiting for approval",
            CardState::Running => "running",
            CardState::Done => "done",
            CardState::Failed => "failed",
            CardState::Denied => "denied",
            CardState::Interrupted => "interrupted",
            CardState::Cancelled => "cancelled",
        }
    }
}

/// One tool call of the turn.
#[derive(Debug, Clone, PartialEq)]
pub struct Card {
    pub call: ToolCall,
    pub kind: ToolKind,
    /// One line from the runtime (path, command, pattern).
    pub summary: String,
    pub state: CardState,
    /// When it started running (or was asked about), ms.
    pub since_ms: i64,
    /// When it ended, ms.
    pub ended_ms: Option<i64>,
    /// The result text, once there is one.
    pub result: Option<String>,
    /// The stored result's seq (the card leaves the live cell once the transcript has it).
    pub result_seq: Option<i64>,
    /// The plan step whose sub-turn made the call (steps may run side by side).
    pub step: Option<String>,
    /// The rule or hook that let it run (or denied it), in one line, once it has a result.
    pub decided: Option<String>,
    /// The language servers' errors and warnings in the files it changed, once it has a
    /// result.
    pub diagnostics: Option<crate::runtime::extensions::lsp::DiagnosticReport>,
}

/// A running (or just finished) turn as the view shows it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Live {
    /// The session, once `Started` said (a new session's id comes from there).
    pub session_id: Option<String>,
    /// When the turn started, ms.
    pub started_ms: i64,
    /// What the user sent (shown until the transcript has it).
    pub prompt: Option<String>,
    /// The session's last seq when the turn started.
    pub base_seq: i64,
    /// Answer text of the model call streaming now.
    pub text: String,
    /// Text of the last stored model call, shown until the transcript has `stored_seq`.
    pub stored_text: String,
    pub stored_seq: i64,
    /// Reasoning text of the model call streaming now.
    pub reasoning: String,
    /// Tool calls of the turn.
    pub cards: Vec<Card>,
    /// Calls waiting for the user's answer, first asked first.
    pub asking: VecDeque<Asked>,
    /// Usage of the model calls stored so far.
    pub usage: Usage,
    /// Prompt tokens of the latest model call: how full the context is.
    pub context: u64,
    /// The session's dollars when the turn started (`None`: none yet, or a new session):
    /// the turn's own are the session's now less these.
    pub cost_at_start: Option<f64>,
    /// Text chunks received (the list's live counter moves with them).
    pub chunks: u64,
    /// Cancel was asked for.
    pub cancelling: bool,
    /// The turn ended (kept until the transcript holds what it sent).
    pub finished: bool,
    /// Why the turn stopped, when it failed (the status line says it in words).
    pub error: Option<String>,
    /// A plan run's progress, a line per step started or finished (sanitised).
    pub steps: Vec<String>,
    /// The plan step whose streamed text the cell shows: with steps running side by side,
    /// one is followed at a time (the others' text is in their own sessions).
    pub following: Option<String>,
    /// The plan step whose event is being applied (steps' call ids may repeat).
    pub current_step: Option<String>,
    /// The sub-agents the turn started (Ctrl-T lists them).
    pub subagents: Vec<crate::tui::subagents::SubagentRow>,
}

impl Live {
    /// A card by call id (of the step whose event is being applied, if any).
    pub(crate) fn card_mut(&mut self, id: &str) -> Option<&mut Card> {
        let step = self.current_step.clone();
        self.cards
            .iter_mut()
            .find(|c| c.call.id == id && (step.is_none() || c.step == step))
    }

    /// The call whose approval is asked now.
    pub fn asking_now(&self) -> Option<&Card> {
        let a = self.asking.front()?;
        self.cards.iter().find(|c| a.is(c))
    }
}

/// A call waiting for the user's answer: its id, and the plan step that made it (steps running
/// side by side may use the same call ids).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Asked {
    pub call_id: String,
    pub step: Option<String>,
    /// The rules an "always" answer proposes (editable before they are kept); empty when no
    /// rule can allow the call ("always" is not offered).
    pub rules: Vec<String>,
}

impl Asked {
    /// Whether `card` is this call's.
    pub(crate) fn is(&self, card: &Card) -> bool {
        card.call.id == self.call_id && card.step == self.step
    }
}

/// The spinner frame for a time.
pub(crate) fn spinner(now_ms: i64) -> &'static str {
    SPINNER[(now_ms / 80).rem_euclid(SPINNER.len() as i64) as usize]
}

/// Seconds as `4.2s`, `1m05s`.
pub(crate) fn elapsed(ms: i64) -> String {
    let ms = ms.max(0);
    if ms < 60_000 {
        format!("{:.1}s", ms as f64 / 1000.0)
    } else {
        format!("{}m{:02}s", ms / 60_000, (ms / 1000) % 60)
    }
}

fn state_style(s: &CardState, t: Theme) -> Style {
    match s {
        CardState::Waiting(_) => t.warn(),
        CardState::Running => t.accent(),
        CardState::Done => t.ok(),
        CardState::Failed | CardState::Denied => t.error(),
        CardState::Interrupted => t.warn(),
        CardState::Cancelled => t.dim(),
    }
}

fn state_mark(s: &CardState, now_ms: i64) -> &'static str {
    match s {
        CardState::Waiting(_) => "?",
        CardState::Running => spinner(now_ms),
        CardState::Done => "✓",
        CardState::Failed => "✗",
        CardState::Denied => "⊘",
        CardState::Interrupted => "!",
        CardState::Cancelled => "⊘",
    }
}

/// The keys the approval prompt offers, from the key table: (keys, text).
pub(crate) type Hints<'a> = &'a [(&'static str, &'static str)];

/// The question of the card asked about now.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Prompt<'a> {
    /// The keys (from the key table; "always" is left out when no rule can allow the call).
    pub hints: Hints<'a>,
    /// The "always" rules being edited (their texts now) and the one the status line edits;
    /// `None`: the card lists the rules the call's "always" proposes.
    pub editing: Option<(&'a [String], usize)>,
}

/// What a card that asks shows under its question: the keys, the rules "always" keeps
/// (empty: none can allow the call), and the rule being edited, if they are.
#[derive(Debug, Clone, Copy)]
pub(crate) struct CardPrompt<'a> {
    pub hints: Hints<'a>,
    pub rules: &'a [String],
    pub selected: Option<usize>,
}

/// The card's lines about "always": the rules it keeps, one a line, the one being edited
/// marked; or that no rule can allow the call.
fn always_lines(p: &CardPrompt<'_>, width: usize, t: Theme) -> Vec<Line<'static>> {
    let mut out = Vec::new();
    if let ([only], None) = (p.rules, p.selected) {
        out.extend(markdown::wrap(
            &[
                ("a always keeps ".to_string(), t.dim()),
                (sanitize::line(only).into_owned(), t.code()),
            ],
            width,
            "  │ ",
            "  │   ",
        ));
        return out;
    }
    let head = match (p.rules.len(), p.selected) {
        (0, _) => "no rule can allow this call, so there is no \"always\"".to_string(),
        (1, Some(_)) => "always keeps this rule (edit it below):".to_string(),
        (_, Some(_)) => "always keeps these rules (↑↓ choose, edit below):".to_string(),
        (n, None) => format!("a always keeps {n} rules, one per part of the command:"),
    };
    out.extend(markdown::plain(&head, width, "  │ ", t.dim()));
    for (i, r) in p.rules.iter().enumerate() {
        let chosen = p.selected == Some(i);
        let (mark, style) = if chosen {
            ("▶ ", t.selected())
        } else {
            ("· ", t.code())
        };
        out.extend(markdown::wrap(
            &[
                (mark.to_string(), style),
                (sanitize::line(r).into_owned(), style),
            ],
            width,
            "  │   ",
            "  │     ",
        ));
    }
    out
}

/// A tool card: name, summary, state (with elapsed time), the diff of an edit, the result
/// collapsed to a few lines, and when `prompt` is given, the approval question with its keys
/// and the rules "always" keeps.
pub(crate) fn card_lines(
    card: &Card,
    width: usize,
    now_ms: i64,
    prompt: Option<CardPrompt<'_>>,
    theme: Theme,
) -> Vec<Line<'static>> {
    let width = width.max(16);
    let t = theme;
    let mut out = Vec::new();
    let st = state_style(&card.state, t);
    let took = card.ended_ms.unwrap_or(now_ms) - card.since_ms;
    let when = match card.state {
        CardState::Running => format!(" {}", elapsed(took)),
        CardState::Done | CardState::Failed if card.ended_ms.is_some() => {
            format!(" in {}", elapsed(took))
        }
        _ => String::new(),
    };
    // The runtime's summary starts with the tool's name, which the card shows already.
    let summary = card
        .summary
        .strip_prefix(card.call.name.as_str())
        .map_or(card.summary.as_str(), str::trim_start);
    let mut head = vec![
        (format!("{} ", state_mark(&card.state, now_ms)), st),
        (sanitize::line(&card.call.name).into_owned(), t.tool()),
        ("  ".into(), t.text()),
        (sanitize::line(summary).into_owned(), t.code()),
        (format!("  · {}{when}", card.state.word()), st),
    ];
    if let Some(d) = &card.diagnostics
        && let Some(counts) = d.counts()
    {
        let style = if d.errors > 0 { t.error() } else { t.warn() };
        head.push((format!("  {counts}"), style));
    }
    out.extend(markdown::wrap(&head, width, "  ╭ ", "  │   "));
    out.extend(super::diff::diff_lines(&card.call, width, "  │ ", 8, t));
    if let CardState::Waiting(reason) = &card.state {
        out.extend(markdown::wrap(
            &[(sanitize::line(reason).into_owned(), t.dim())],
            width,
            "  │ ",
            "  │ ",
        ));
        if let Some(p) = prompt {
            out.extend(always_lines(&p, width, t));
        }
        // While the rules are edited the status line and the key bar have the keys.
        if let Some(p) = prompt.filter(|p| p.selected.is_none()) {
            // The card has the keyboard while it asks (the editor takes no keys).
            let mut spans = vec![("▶ Allow? ".to_string(), t.warn().patch(t.bold()))];
            for (k, what) in p.hints {
                spans.push((k.to_string(), t.accent().patch(t.bold())));
                spans.push((format!(" {what}   "), t.text()));
            }
            out.extend(markdown::wrap(&spans, width, "  │ ", "  │ "));
        } else if prompt.is_none() {
            out.push(Line::from(Span::styled(
                "  │ waits for its turn to be asked",
                t.dim(),
            )));
        }
    }
    if let Some(d) = &card.decided {
        out.extend(markdown::plain(&sanitize::line(d), width, "  │ ", t.dim()));
    }
    if let Some(r) = &card.result
        && card.state == CardState::Done
        && super::diff::is_edit(&card.call.name)
    {
        // A done edit shows what it changed, not its diff's headers.
        out.extend(super::diff::result_lines(
            r,
            width,
            "  │ ",
            CARD_RESULT_LINES,
            t,
        ));
    } else if let Some(r) = &card.result {
        let clean = sanitize::text_without_sgr(&super::denial::shown(r));
        let rows: Vec<&str> = clean.trim_end().split('\n').collect();
        let style = if matches!(card.state, CardState::Failed | CardState::Denied) {
            t.error()
        } else {
            t.dim()
        };
        for row in rows.iter().take(CARD_RESULT_LINES) {
            out.extend(markdown::plain(row, width, "  │ ", style));
        }
        if rows.len() > CARD_RESULT_LINES {
            let more = rows.len() - CARD_RESULT_LINES;
            out.push(Line::from(Span::styled(
                format!("  │ … {more} more line{}", if more == 1 { "" } else { "s" }),
                t.dim(),
            )));
        }
    }
    out.push(Line::from(Span::styled("  ╰", st)));
    out
}

/// The live cell: a header with the spinner and elapsed time, the streamed reasoning and text
/// (markdown as in the transcript), then the cards not yet in the transcript.
pub(crate) fn live_lines(
    live: &Live,
    stored_last: i64,
    width: usize,
    now_ms: i64,
    prompt: &Prompt<'_>,
    theme: Theme,
) -> Vec<Line<'static>> {
    let t = theme;
    let width = width.max(16);
    let mut out = Vec::new();
    let showing_cards: Vec<&Card> = live
        .cards
        .iter()
        .filter(|c| c.result_seq.is_none_or(|s| s > stored_last))
        .collect();
    let user_prompt = live
        .prompt
        .as_ref()
        .filter(|_| stored_last <= live.base_seq);
    let stored_text = (stored_last < live.stored_seq && !live.stored_text.is_empty())
        .then_some(live.stored_text.as_str());
    if live.finished && live.text.is_empty() && showing_cards.is_empty() && stored_text.is_none() {
        return out;
    }
    if let Some(p) = user_prompt {
        out.push(Line::from(Span::styled("You", t.user())));
        let clean = sanitize::text_without_sgr(p);
        // `@path` attachments as chips, as the transcript shows them.
        out.extend(crate::tui::transcript::user_text_lines(
            &clean,
            width.saturating_sub(2),
            false,
            t,
        ));
        out.push(Line::default());
    }
    if !live.finished {
        let what = if live.cancelling {
            "cancelling…"
        } else if live.asking.is_empty() {
            "working"
        } else {
            "waiting for you"
        };
        out.push(Line::from(vec![
            Span::styled(format!("{} ", spinner(now_ms)), t.accent()),
            Span::styled("Assistant", t.assistant()),
            Span::styled(
                format!("  {what} · {}", elapsed(now_ms - live.started_ms)),
                t.dim(),
            ),
        ]));
    }
    for s in &live.steps {
        out.push(Line::from(Span::styled(format!("  {s}"), t.dim())));
    }
    out.extend(streamed_lines(live, stored_text, width, t));
    out.extend(cards_lines(live, &showing_cards, width, now_ms, prompt, t));
    out
}

/// The reasoning and the text streamed so far (`stored_text`: the part of it already stored
/// but not yet read back), as markdown.
fn streamed_lines(
    live: &Live,
    stored_text: Option<&str>,
    width: usize,
    t: Theme,
) -> Vec<Line<'static>> {
    let mut out = Vec::new();
    if !live.reasoning.is_empty() {
        let clean = sanitize::text_without_sgr(&live.reasoning);
        for l in markdown::render_with(&clean, width.saturating_sub(4), t, t.reasoning(), false) {
            let mut spans = vec![Span::styled("  ∴ ", t.reasoning())];
            spans.extend(l.spans);
            out.push(Line::from(spans));
        }
    }
    for text in [stored_text.unwrap_or(""), live.text.as_str()] {
        if text.is_empty() {
            continue;
        }
        let clean = sanitize::text_without_sgr(text);
        for l in markdown::render_with(&clean, width.saturating_sub(2), t, t.text(), false) {
            let mut spans = vec![Span::raw("  ")];
            spans.extend(l.spans);
            out.push(Line::from(spans));
        }
    }
    out
}

/// The cards not yet in the transcript; the one asked about now carries its prompt (the
/// keys to answer and, while a rule is being chosen, the rules).
fn cards_lines(
    live: &Live,
    showing_cards: &[&Card],
    width: usize,
    now_ms: i64,
    prompt: &Prompt<'_>,
    t: Theme,
) -> Vec<Line<'static>> {
    let mut out = Vec::new();
    let asking = live.asking.front();
    let always = crate::tui::keymap::bar_entry(
        crate::tui::keymap::Context::Approval,
        crate::tui::action::Action::ApproveAlways,
    );
    for &c in showing_cards {
        let p = asking.filter(|a| a.is(c)).map(|a| {
            let (rules, selected) = match prompt.editing {
                Some((rules, i)) => (rules, Some(i)),
                None => (a.rules.as_slice(), None),
            };
            (rules, selected)
        });
        let hints: Vec<(&'static str, &'static str)> = match p {
            Some(([], _)) => prompt
                .hints
                .iter()
                .copied()
                .filter(|h| Some(*h) != always)
                .collect(),
            _ => prompt.hints.to_vec(),
        };
        let p = p.map(|(rules, selected)| CardPrompt {
            hints: &hints,
            rules,
            selected,
        });
        out.extend(card_lines(c, width, now_ms, p, t));
    }
    out
}

/// One piece of the agent line and when it goes: pieces with a higher `drop` go first when
/// the line is too narrow (0: never; the model, the approval policy, the sandbox and the
/// dollars stay longest).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct StatusPart {
    pub text: String,
    pub style: Style,
    pub drop: u8,
}

fn part(text: String, style: Style, drop: u8) -> StatusPart {
    StatusPart { text, style, drop }
}

/// The agent line under the conversation: model, a context gauge (context now: what the next
/// request carries, `~` when estimated), lifetime tokens used, budget, policy, sandbox (or,
/// with no provider, what to configure).
pub(crate) fn status_spans(
    info: &AgentInfo,
    (context, estimated): (u64, bool),
    session_tokens: u64,
    (turn_usd, session_usd): (Option<String>, Option<String>),
    budget_left: Option<String>,
    policy: ApprovalPolicy,
    theme: Theme,
) -> Vec<StatusPart> {
    let t = theme;
    let Ok(model) = &info.provider else {
        return vec![part(
            "No model configured: F1 says how to set one up".into(),
            t.warn(),
            0,
        )];
    };
    let est = if estimated { "~" } else { "" };
    let mut v = vec![part(format!("{} ", sanitize::line(model)), t.bold(), 0)];
    if let Some(window) = info.window {
        let window = window.max(1);
        let pct = (context.saturating_mul(100) / window).min(100);
        let filled = (pct as usize * 8).div_ceil(100).min(8);
        let gauge = format!("{}{}", "█".repeat(filled), "░".repeat(8 - filled));
        let gauge_style = if pct >= 80 { t.warn() } else { t.accent() };
        v.push(part(gauge, gauge_style, 5));
        v.push(part(
            format!(
                " {est}{}/{} ",
                format::compact(context),
                format::compact(window)
            ),
            t.dim(),
            2,
        ));
    } else {
        // No gauge without a window: set context_window in config.toml.
        v.push(part(
            format!("{est}{} · window unknown ", format::compact(context)),
            t.warn(),
            2,
        ));
    }
    v.push(part(
        format!("· {} tok ", format::compact(session_tokens)),
        t.dim(),
        4,
    ));
    if let Some(d) = turn_usd {
        v.push(part(format!("· {d} turn "), t.dim(), 3));
    }
    if let Some(d) = session_usd {
        v.push(part(format!("· {d} session "), t.dim(), 1));
    }
    if let Some(b) = budget_left {
        v.push(part(format!("· {b} "), t.dim(), 3));
    }
    v.push(part(format!("· approve {} ", policy.as_str()), t.dim(), 0));
    v.push(part(
        format!("· sandbox {}", info.sandbox),
        if info.sandbox_on { t.dim() } else { t.warn() },
        0,
    ));
    if !info.mcp_failed.is_empty() {
        let names: Vec<_> = info.mcp_failed.iter().map(|n| sanitize::line(n)).collect();
        v.push(part(
            format!(" · mcp failed: {}", names.join(", ")),
            t.error(),
            0,
        ));
    }
    v
}

/// The agent line's pieces that fit `width` columns: the first to go are those with the
/// highest `drop`, then the rest keep their order; what still does not fit is cut at the end.
pub(crate) fn fit_status(mut parts: Vec<StatusPart>, width: usize) -> Vec<StatusPart> {
    let w = |p: &[StatusPart]| -> usize {
        p.iter()
            .map(|s| unicode_width::UnicodeWidthStr::width(s.text.as_str()))
            .sum()
    };
    while w(&parts) > width {
        let Some(worst) = parts
            .iter()
            .enumerate()
            .filter(|(_, p)| p.drop > 0)
            .max_by_key(|(i, p)| (p.drop, *i))
            .map(|(i, _)| i)
        else {
            break;
        };
        parts.remove(worst);
    }
    parts
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(window: Option<u64>) -> String {
        let info = AgentInfo {
            provider: Ok("smollm2".into()),
            window,
            ..AgentInfo::default()
        };
        status_spans(
            &info,
            (1500, true),
            3000,
            (None, None),
            None,
            ApprovalPolicy::Ask,
            Theme::new(false),
        )
        .into_iter()
        .map(|p| p.text)
        .collect()
    }

    #[test]
    fn a_narrow_line_keeps_the_policy_the_sandbox_and_the_dollars() {
        let info = AgentInfo {
            provider: Ok("qwen2.5-coder:7b-instruct".into()),
            window: Some(32_000),
            sandbox: "on".into(),
            sandbox_on: true,
            ..AgentInfo::default()
        };
        let parts = status_spans(
            &info,
            (12_000, false),
            48_000,
            (Some("$0.04".into()), Some("$0.17".into())),
            Some("12 turns left".into()),
            ApprovalPolicy::AutoEdit,
            Theme::new(false),
        );
        let line = |w: usize| -> String {
            fit_status(parts.clone(), w)
                .into_iter()
                .map(|p| p.text)
                .collect()
        };
        let wide = line(200);
        assert!(wide.contains("███░") && wide.contains("48k tok"), "{wide}");
        // 80 columns (76 inside the border): the gauge, tokens and budget go first.
        let narrow = line(76);
        assert!(
            unicode_width::UnicodeWidthStr::width(narrow.as_str()) <= 76,
            "{narrow}"
        );
        for kept in [
            "qwen2.5-coder",
            "$0.17 session",
            "approve auto-edit",
            "sandbox on",
        ] {
            assert!(narrow.contains(kept), "{kept} kept: {narrow}");
        }
        assert!(!narrow.contains('░'), "{narrow}");
    }

    #[test]
    fn the_gauge_says_window_unknown_when_the_config_does_not_set_one() {
        let known = line(Some(2048));
        assert!(known.contains("~1.5k/2k"), "{known}");
        assert!(!known.contains("unknown"), "{known}");
        let unknown = line(gauge_window(None, None));
        assert!(unknown.contains("~1.5k · window unknown"), "{unknown}");
        assert!(
            !unknown.contains('█') && !unknown.contains('░'),
            "{unknown}"
        );
    }

    #[test]
    fn the_gauge_shows_a_window_the_server_told_when_the_config_sets_none() {
        let told = line(gauge_window(None, Some(2048)));
        assert!(told.contains("~1.5k/2k"), "{told}");
        assert!(!told.contains("unknown"), "{told}");
        assert!(told.contains("██████"), "1.5k of 2k fills 6 of 8: {told}");
        // A smaller told window wins over a configured one, as in a turn.
        let both = line(gauge_window(Some(128_000), Some(2048)));
        assert!(both.contains("~1.5k/2k"), "{both}");
        let configured = line(gauge_window(Some(4096), None));
        assert!(configured.contains("~1.5k/4.1k"), "{configured}");
    }
}
