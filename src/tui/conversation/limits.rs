//! The session's limits in words: the `/limits` answer and the status line's budget.

use crate::format;
use crate::tui::browse::Detail;

/// The session's budgets in one line: used / limit of each.
pub(crate) fn limits_text(detail: Option<&Detail>) -> String {
    let Some(l) = detail
        .and_then(|d| d.header.as_ref())
        .and_then(|h| h.ledger.as_ref())
    else {
        return "No budgets yet: they are set when the first turn runs (config.toml [limits], neocode run --max-*).".into();
    };
    let limits = [
        l.limits.max_turns,
        l.limits.max_tool_calls,
        l.limits.max_input_tokens,
        l.limits.max_output_tokens,
    ];
    if limits.iter().all(Option::is_none) {
        // Usage alone must not read as a budget.
        return format!(
            "No budgets set (config.toml [limits], neocode run --max-*); used: turns {} · tool calls {} · input tokens {} · output tokens {}",
            l.usage.turns, l.usage.tool_calls, l.usage.input_tokens, l.usage.output_tokens
        );
    }
    let one = |name: &str, used: u64, max: Option<u64>| match max {
        Some(m) => format!("{name} {used}/{m}"),
        None => format!("{name} used {used} (no limit)"),
    };
    format!(
        "Budgets: {} · {} · {} · {}",
        one("turns", l.usage.turns, l.limits.max_turns),
        one("tool calls", l.usage.tool_calls, l.limits.max_tool_calls),
        one(
            "input tokens",
            l.usage.input_tokens,
            l.limits.max_input_tokens
        ),
        one(
            "output tokens",
            l.usage.output_tokens,
            l.limits.max_output_tokens
        ),
    )
}

/// The tightest budget left, in words (the status line), when any is set.
pub(crate) fn budget_left(detail: Option<&Detail>) -> Option<String> {
    let l = detail?.header.as_ref()?.ledger.as_ref()?;
    let mut best: Option<(f64, String)> = None;
    for (name, used, max) in [
        ("turns", l.usage.turns, l.limits.max_turns),
        ("tool calls", l.usage.tool_calls, l.limits.max_tool_calls),
        ("in tok", l.usage.input_tokens, l.limits.max_input_tokens),
        ("out tok", l.usage.output_tokens, l.limits.max_output_tokens),
    ] {
        let Some(max) = max else { continue };
        let left = max.saturating_sub(used);
        let share = left as f64 / max.max(1) as f64;
        if best.as_ref().is_none_or(|b| share < b.0) {
            best = Some((share, format!("{} {name} left", format::compact(left))));
        }
    }
    best.map(|b| b.1)
}
