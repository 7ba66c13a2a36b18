//! The real binary in a pseudo-terminal: open the list, move, filter, switch tabs, fork and
//! quit, asserting on the screen text (vt100) and on the database afterwards (through the
//! runtime).

use crate::support::Env;
use std::time::Duration;

use crate::support::pty::Pty;
use neocode::runtime::Sessions;
use neocode::session::ListQuery;

/// A store holding the demo's 13 sessions.
fn demo_store() -> (Env, Sessions) {
    let env = Env::new();
    let rt = env.sessions();
    neocode::tui::demo::load_into(&rt, neocode::session::now_ms()).unwrap();
    (env, rt)
}

/// The TUI on `env`'s store in a 35 x 120 terminal, no model configured.
fn list(env: &Env) -> Pty {
    Pty::spawn(&env.home, &env.workdir, &[], &[], 35, 120)
}

/// Esc (which clears a filter), a moment, then q: the exit code.
fn esc_then_quit(pty: &mut Pty, what: &str) -> u32 {
    pty.keys("\x1b");
    std::thread::sleep(Duration::from_millis(200));
    pty.keys("q");
    pty.wait_exit(Duration::from_secs(30), what)
}

#[test]
fn browse_filter_tabs_fork_quit_in_a_real_terminal() {
    let (env, rt) = demo_store();
    let billing = rt
        .list(&ListQuery::default())
        .unwrap()
        .items
        .into_iter()
        .find(|s| s.title.starts_with("Migrate billing"))
        .unwrap()
        .id;

    let mut pty = list(&env);

    // The list.
    pty.wait_for("13 sessions");
    // The detail pane loads after the list (later under load: wait for it, do not race it).
    let s = pty.wait_for("┌ Draft release notes for v0.4");
    assert!(s.contains("Transcript"), "{s}");

    // Move down: the detail follows.
    pty.press("j", "Add per-key rate limiting");

    // Filter as you type.
    pty.keys("/");
    let s = pty.press("billing", "1 match");
    assert!(!s.contains("Walk me through"), "{s}");
    pty.keys("\r");

    // Tabs: Plan shows the DAG with the failure.
    pty.press("]", "4/7 done, 1 failed");
    pty.press("]", "Per-turn tokens");
    pty.keys("[");
    pty.keys("[");

    // Fork at the end.
    pty.press("f", "Forked at message #10");
    pty.wait_for("14 sessions");

    // Quit (Esc clears the filter first, q quits).
    let code = esc_then_quit(&mut pty, "neocode did not quit on q");
    assert_eq!(code, 0, "exit status");

    // The database saw the fork.
    let all = rt.list(&ListQuery::default()).unwrap().items;
    assert_eq!(all.len(), 14);
    let fork = all
        .iter()
        .find(|s| s.parent_id.as_deref() == Some(billing.as_str()))
        .expect("a fork of the billing session");
    assert_eq!(fork.fork_seq, Some(10));
    assert_eq!(fork.message_count, 10);
}

/// What real use found, in a real terminal: half-width sound marks never reach the terminal
/// (they made stray glyphs), a blind key behind "terminal too small" does nothing, `n` then
/// Esc leaves no session, and PgUp from the end of a transcript moves one page.
#[test]
fn real_use_fixes_in_a_real_terminal() {
    use neocode::session::{AppendMeta, NewMessage, Role};
    let (env, rt) = demo_store();
    let kana = crate::support::titled(&rt, "ﾊﾟﾝﾀﾞ notes");
    rt.append(
        &kana.id,
        &[NewMessage::text(Role::User, "ﾊﾟﾝﾀﾞ ﾊﾟﾝﾀﾞ ﾊﾟﾝﾀﾞ")],
        &AppendMeta::default(),
    )
    .unwrap();
    let count = || rt.list(&ListQuery::default()).unwrap().items.len();
    assert_eq!(count(), 14);

    let mut pty = list(&env);
    let s = pty.wait_for("14 sessions");
    // The newest session is first and its sound marks arrive as their spacing forms.
    assert!(s.contains("ﾊ\u{309C}ﾝﾀ\u{309B}"), "{s}");
    let raw = String::from_utf8_lossy(&pty.bytes()).into_owned();
    assert!(!raw.contains('\u{FF9F}') && !raw.contains('\u{FF9E}'));

    // Too small: `d y` does nothing.
    pty.resize(5, 20);
    pty.wait_for("Terminal too small");
    pty.keys("d");
    pty.keys("y");
    pty.resize(35, 120);
    pty.wait_for("14 sessions");
    assert_eq!(count(), 14, "a blind delete behind 'terminal too small'");

    // `n` then Esc: nothing is created.
    pty.press("n", "New session");
    pty.keys("\x1b");
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(count(), 14, "an empty session was left behind");

    // PgUp from the end of a long transcript moves one page, not to #1.
    pty.keys("/");
    pty.press("Walk me", "1 match");
    pty.keys("\r");
    pty.keys("\t");
    pty.press("G", "#48");
    pty.keys("\x1b[5~");
    std::thread::sleep(Duration::from_millis(300));
    let s = pty.screen();
    assert!(!s.contains("#1 ") && !s.contains("#48"), "{s}");
    assert!(s.contains("#4"), "{s}");

    pty.keys("q");
    let code = esc_then_quit(&mut pty, "neocode did not quit");
    assert_eq!(code, 0);
}

/// `E` on the list writes the selected session as the readable markdown transcript (the same
/// text as `neocode export --format markdown`) into the current directory; `e` still writes
/// the JSON session file.
#[test]
fn the_export_key_offers_markdown_as_well_as_json() {
    let (env, rt) = demo_store();
    let first = rt.list(&ListQuery::default()).unwrap().items[0].clone();
    let short: String = first.id.chars().take(8).collect();
    let cwd = env.home.parent().unwrap().to_path_buf();

    let mut pty = list(&env);
    pty.wait_for("13 sessions");
    pty.press("E", &format!("{short}.md"));
    pty.press("e", &format!("{short}.json"));
    pty.keys("q");
    assert_eq!(pty.wait_exit(Duration::from_secs(30), "no quit"), 0);

    let md = std::fs::read_to_string(cwd.join(format!("{short}.md"))).unwrap();
    assert!(md.starts_with(&format!("# {}", first.title)), "{md}");
    assert!(md.contains("## Transcript"), "{md}");
    assert!(md.contains(&format!("- **id:** `{}`", first.id)), "{md}");
    // The very text the command line writes.
    let doc = rt.export(&first.id).unwrap();
    assert_eq!(md, neocode::runtime::export_md::markdown(&doc) + "\n");
    let json = std::fs::read_to_string(cwd.join(format!("{short}.json"))).unwrap();
    assert!(json.trim_start().starts_with('{'), "{json}");
}
