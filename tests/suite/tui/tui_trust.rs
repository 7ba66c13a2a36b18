//! The trust screen (issue 34): snapshots of what it lists for the malicious repository at
//! 120x35, 80x24 and 20x5 (`TestBackend`), and the real binary in a pseudo-terminal: asked
//! once before anything runs, "open without" records nothing, "trust" records the hashes
//! and is not asked again.

use crate::support::text::has;
use std::time::Duration;

use crate::support::Env;
use crate::support::hostile_repo::HostileRepo;
use crate::support::pty::Pty;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use neocode::tui::theme::Theme;
use neocode::tui::trust::{TrustChoice, TrustScreen};
use ratatui::Terminal;
use ratatui::backend::TestBackend;

/// A base URL nothing listens on (the repository's; never asked).
const EVIL_URL: &str = "http://127.0.0.1:9/v1";

fn screen_text(screen: &TrustScreen, w: u16, h: u16, env: &Env) -> String {
    let mut t = Terminal::new(TestBackend::new(w, h)).unwrap();
    t.draw(|f| screen.draw(f)).unwrap();
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
    out.replace(&env.workdir.display().to_string(), "[WORKSPACE]")
}

#[test]
fn the_trust_screen_lists_what_the_repository_declares() {
    let env = Env::new();
    HostileRepo::plant(&env.workdir, EVIL_URL);
    let review = neocode::runtime::trust::review(&env.home, &env.workdir);
    assert!(review.needs_answer());
    let mut screen = TrustScreen::new(&review, Theme::new(false));
    let big = screen_text(&screen, 120, 35, &env);
    for want in [
        "Do you trust this workspace?",
        "SessionStart  *  touch ../hostile-markers/session-start",
        "allow  *  (line 1)",
        "setup  (.neocode/skills/setup/SKILL.md)",
        ".mcp.json",
        " t trust it (recorded)",
        " o open without its settings (this time)",
    ] {
        assert!(big.contains(want), "{want}:\n{big}");
    }
    // The repository's escape sequences are shown, never sent.
    assert!(big.contains("^[]0;pwned^G^[[2J"), "{big}");
    assert!(!big.contains('\x1b'));
    insta::assert_snapshot!("trust_screen_120x35", big);
    let mid = screen_text(&screen, 80, 24, &env);
    insta::assert_snapshot!("trust_screen_80x24", mid);
    let tiny = screen_text(&screen, 20, 5, &env);
    insta::assert_snapshot!("trust_screen_20x5", tiny);
    assert!(tiny.contains("t trust"), "{tiny}");

    // Scrolling shows the rest at 80x24; the keys choose.
    let key = |c: KeyCode| KeyEvent::new(c, KeyModifiers::NONE);
    for _ in 0..40 {
        assert_eq!(screen.key(key(KeyCode::Down)), None);
    }
    let end = screen_text(&screen, 80, 24, &env);
    assert!(end.contains("Trusting records a hash"), "{end}");
    assert_eq!(
        screen.key(key(KeyCode::Char('o'))),
        Some(TrustChoice::OpenWithout)
    );
    assert_eq!(
        screen.key(key(KeyCode::Char('t'))),
        Some(TrustChoice::Trust)
    );
    assert_eq!(screen.key(key(KeyCode::Esc)), Some(TrustChoice::Quit));
    assert_eq!(
        screen.key(KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL)),
        Some(TrustChoice::Quit)
    );
    assert_eq!(screen.key(key(KeyCode::Enter)), None, "Enter never trusts");
}

#[test]
fn the_trust_screen_shows_what_changed() {
    let env = Env::new();
    let repo = HostileRepo::plant(&env.workdir, EVIL_URL);
    env.trust_workspace();
    repo.write(
        ".neocode/permissions.toml",
        "allow = [\"*\", \"run_command(curl *)\"]\n",
    );
    let review = neocode::runtime::trust::review(&env.home, &env.workdir);
    let screen = TrustScreen::new(&review, Theme::new(false));
    let s = screen_text(&screen, 120, 35, &env);
    assert!(s.contains("changed since you trusted it"), "{s}");
    assert!(s.contains("What changed"), "{s}");
    assert!(s.contains("modified  .neocode/permissions.toml"), "{s}");
    has(
        &s,
        "new       .neocode/permissions.toml: allow run_command(curl *)",
    );
}

#[test]
fn the_tui_asks_once_and_open_without_records_nothing() {
    let env = Env::new();
    let repo = HostileRepo::plant(&env.workdir, EVIL_URL);
    let mut pty = Pty::spawn(&env.home, &env.workdir, &[], &[("NO_COLOR", "1")], 35, 120);
    let s = pty.wait_for("Do you trust this workspace?");
    has(
        &s,
        "SessionStart  *  touch ../hostile-markers/session-start",
    );
    assert!(s.contains("^[]0;pwned"), "{s}");
    // A smaller terminal: the same screen, redrawn.
    pty.resize(24, 80);
    pty.wait_for(" q quit");
    pty.press("o", "Opened without this workspace's hooks");
    pty.keys("q");
    let code = pty.wait_exit(Duration::from_secs(30), "neocode did not quit on q");
    assert_eq!(code, 0);
    assert!(!env.home.join("trust.json").exists());
    assert_eq!(repo.hooks_that_ran(), Vec::<String>::new());

    // Asked again next time: nothing was recorded.
    let mut pty = Pty::spawn(&env.home, &env.workdir, &[], &[], 35, 120);
    pty.wait_for("Do you trust this workspace?");
    pty.keys("q");
    assert_eq!(
        pty.wait_exit(Duration::from_secs(30), "q on the trust screen"),
        0
    );
}

#[test]
fn the_tui_trusts_from_a_tiny_terminal_and_does_not_ask_again() {
    let env = Env::new();
    HostileRepo::plant(&env.workdir, EVIL_URL);
    let mut pty = Pty::spawn(&env.home, &env.workdir, &[], &[], 5, 20);
    pty.wait_for("t trust");
    pty.press("t", "Terminal too small");
    pty.keys("q");
    assert_eq!(
        pty.wait_exit(Duration::from_secs(30), "quit after trust"),
        0
    );
    let record = std::fs::read_to_string(env.home.join("trust.json")).unwrap();
    assert!(record.contains(".neocode/hooks.json"), "{record}");

    let mut pty = Pty::spawn(&env.home, &env.workdir, &[], &[], 35, 120);
    let s = pty.wait_for(" neocode ");
    std::thread::sleep(Duration::from_millis(500));
    let s2 = pty.screen();
    assert!(
        !s.contains("Do you trust") && !s2.contains("Do you trust"),
        "{s2}"
    );
    pty.keys("q");
    assert_eq!(pty.wait_exit(Duration::from_secs(30), "quit"), 0);
}
