//! The status line and the agent line at 120x35 and 80x24, on `TestBackend`: a message too
//! long for the width wraps whole instead of being cut, and at 80 columns the agent line keeps
//! the approval policy, the sandbox and the dollars (the gauge and the token count go first).

use neocode::runtime::agent::TurnEvent;

use super::tui_live::{H, spent};
use crate::support::tui::Keys;

const LONG: &str = "the last prompt used 1900 of 2048 context tokens; compacting what the model is sent (every message stays stored), and the summary is asked of the server at http://127.0.0.1:8080/v1 now";

#[test]
fn a_long_status_message_wraps_whole_at_120_and_80_columns() {
    for (w, rows) in [(120, 35), (80, 24)] {
        let mut h = H::new();
        let e = h.app.on_resize(w, rows);
        h.run(e);
        h.send("Hi");
        h.ev(TurnEvent::Compacting {
            message: LONG.into(),
        });
        let s = h.screen();
        let status: String = s
            .lines()
            .rev()
            .skip(1)
            .take(3)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .map(str::trim)
            .collect::<Vec<_>>()
            .join(" ");
        assert!(
            status.contains("stays stored), and the summary is asked of the server at http://127.0.0.1:8080/v1 now"),
            "{w} columns:\n{s}"
        );
    }
}

#[test]
fn at_80_columns_the_agent_line_keeps_the_policy_the_sandbox_and_the_dollars() {
    let mut h = H::new();
    let e = h.app.on_resize(80, 24);
    h.run(e);
    spent(&h, Some(0.12));
    h.send("Again");
    spent(&h, Some(0.17));
    h.completed();
    let s = h.screen();
    let line = s
        .lines()
        .find(|l| l.contains("scripted-model"))
        .unwrap_or_else(|| panic!("{s}"));
    for kept in ["approve ask", "sandbox on", "$0.17 session"] {
        assert!(line.contains(kept), "{kept}: {line}");
    }
}
