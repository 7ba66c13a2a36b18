//! The real binary on a real pseudo-terminal: colour and width cutting on a terminal,
//! `NO_COLOR`, and the delete confirmation.

use crate::support::cli::*;
use crate::support::pty;
use portable_pty::CommandBuilder;

/// Runs neocode on a `cols`-wide pty, typing `input`; returns (exit success, output bytes).
fn on_tty(ws: &Ws, args: &[&str], envs: &[(&str, &str)], input: &str, cols: u16) -> (bool, String) {
    let mut cmd = CommandBuilder::new(env!("CARGO_BIN_EXE_neocode"));
    cmd.env_remove("NO_COLOR");
    cmd.env("NEOCODE_HOME", ws.home.as_path());
    for (k, v) in envs {
        cmd.env(k, v);
    }
    cmd.arg("--workdir");
    cmd.arg(ws.workdir.as_path());
    cmd.args(args);
    let (status, out) = pty::run_typed(cmd, input, 40, cols);
    (status.success(), out)
}

#[test]
fn list_on_a_terminal_is_coloured_and_cut_to_the_width() {
    let ws = Ws::new();
    let long = format!("A very long title {}", "that keeps going ".repeat(10));
    ws.session(&long, 1);
    let (ok, out) = on_tty(&ws, &["--list"], &[], "", 70);
    assert!(ok, "{out}");
    assert!(
        out.contains("\x1b["),
        "colour expected on a terminal:\n{out}"
    );
    let mut screen = vt100::Parser::new(
        std::num::NonZeroU16::new(40).unwrap(),
        std::num::NonZeroU16::new(70).unwrap(),
        0,
    );
    screen.process(out.as_bytes());
    let text = screen.screen().contents();
    let row = text
        .lines()
        .find(|l| l.contains("A very long"))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(row.trim_end().ends_with('…'), "title cut with …: {row:?}");
    assert!(columns(row.trim_end()) <= 70);
    // One screen row per session: nothing wrapped.
    assert_eq!(
        text.lines().filter(|l| !l.trim().is_empty()).count(),
        2,
        "{text}"
    );

    let (ok, out) = on_tty(&ws, &["--list"], &[("NO_COLOR", "1")], "", 70);
    assert!(ok);
    assert!(
        !out.contains('\x1b'),
        "NO_COLOR must turn colour off:\n{out:?}"
    );
}

/// Columns of ASCII text plus `…`.
fn columns(s: &str) -> usize {
    s.chars().count()
}

#[test]
fn delete_asks_on_a_terminal() {
    let ws = Ws::new();
    let id = ws.session("Ask before deleting me", 1);
    let (ok, out) = on_tty(&ws, &["delete", "last"], &[], "n\n", 100);
    assert!(ok, "{out}");
    assert!(
        out.contains("[y/N]") && out.contains("Ask before deleting me"),
        "{out}"
    );
    assert!(out.contains("nothing deleted"), "{out}");
    assert_eq!(ws.sessions().count().unwrap(), 1);

    let (ok, out) = on_tty(&ws, &["delete", &id[..12]], &[], "y\n", 100);
    assert!(ok, "{out}");
    assert!(out.contains(&format!("deleted {id}")), "{out}");
    assert_eq!(ws.sessions().count().unwrap(), 0);
}

#[test]
fn search_highlights_matches_on_a_terminal() {
    let ws = Ws::new();
    ws.session("Highlight", 1);
    let (ok, out) = on_tty(&ws, &["search", "Highlight"], &[], "", 100);
    assert!(ok, "{out}");
    assert!(out.contains("\x1b[1;31mHighlight\x1b[0m"), "{out:?}");
    assert!(
        !out.contains('\u{E000}') && !out.contains('\u{E001}'),
        "{out:?}"
    );
    let (ok, out) = on_tty(&ws, &["search", "Highlight"], &[("NO_COLOR", "1")], "", 100);
    assert!(ok);
    assert!(
        !out.contains('\x1b') && !out.contains('\u{E000}'),
        "{out:?}"
    );
}

#[test]
fn the_cost_column_shows_only_when_the_title_keeps_room_for_it() {
    let ws = Ws::new();
    let id = ws.session("A priced session", 1);
    let mut ledger = neocode::session::RuntimeLedger::default();
    ledger.usage.cost_usd = Some(0.42);
    ws.sessions()
        .update_state(
            &id,
            &neocode::session::StateUpdate {
                ledger: neocode::session::Change::Set(ledger),
                ..Default::default()
            },
        )
        .unwrap();
    let screen_of = |cols: u16| {
        let (ok, out) = on_tty(&ws, &["--list"], &[("NO_COLOR", "1")], "", cols);
        assert!(ok, "{out}");
        let mut screen = vt100::Parser::new(
            std::num::NonZeroU16::new(40).unwrap(),
            std::num::NonZeroU16::new(cols).unwrap(),
            0,
        );
        screen.process(out.as_bytes());
        screen.screen().contents()
    };
    let wide = screen_of(110);
    assert!(wide.contains("COST") && wide.contains("$0.42"), "{wide}");
    assert!(wide.contains("A priced session"), "{wide}");
    // 80 columns: the title would keep less than 20 with it, so the column goes.
    let narrow = screen_of(80);
    assert!(
        !narrow.contains("COST") && !narrow.contains('$'),
        "{narrow}"
    );
    assert!(narrow.contains("A priced session"), "{narrow}");
}
