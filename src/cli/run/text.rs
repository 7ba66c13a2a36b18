//! The short one-line forms `run` prints: a summary cut to a width, a plan as its layers.

use crate::sanitize;

/// The first line of `s`, sanitised and cut to `n` characters (`…` when something was cut).
pub(super) fn short(s: &str, n: usize) -> String {
    let line = sanitize::line(s.lines().next().unwrap_or(""));
    let mut t: String = line.chars().take(n).collect();
    if line.chars().count() > n || s.lines().nth(1).is_some() {
        t.push('…');
    }
    t
}

/// A plan as its layers, one step a line.
pub(super) fn plan_text(plan: &crate::session::Plan, layers: &[Vec<String>]) -> String {
    let plural = |n: usize, w: &str| format!("{n} {w}{}", if n == 1 { "" } else { "s" });
    let mut out = format!(
        "Plan: {} in {}",
        plural(plan.steps.len(), "step"),
        plural(layers.len(), "layer")
    );
    for (i, layer) in layers.iter().enumerate() {
        for (j, id) in layer.iter().enumerate() {
            let Some(s) = plan.steps.iter().find(|s| &s.id == id) else {
                continue;
            };
            let n = if j == 0 {
                format!("{:>3}.", i + 1)
            } else {
                "    ".to_string()
            };
            let after = if s.depends_on.is_empty() {
                String::new()
            } else {
                format!("  (after {})", sanitize::line(&s.depends_on.join(", ")))
            };
            out.push_str(&format!(
                "\n{n} {}  {}{after}",
                sanitize::line(&s.id),
                short(&s.title, 80)
            ));
        }
    }
    out
}
