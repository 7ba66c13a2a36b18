//! `neocode demo` in a real terminal: the demo model (scripted, in process, no network) runs
//! a real turn on the demo workspace: streamed text, a `read_file`, an `edit_file` whose diff
//! waits for approval, `run_command` of the tests, and a plan run.

use std::time::Duration;

use crate::support::Env;
use crate::support::text::has;
use crate::support::tui_flows::{Kept, approve, demo_chat, demo_conversation, demo_keep};
use neocode::session::Role;

#[test]
fn the_demo_model_fixes_the_demo_project_with_an_approved_edit_and_runs_its_tests() {
    let env = Env::new();
    // No provider configured at all: the demo needs none (a base URL that would refuse
    // connections proves nothing is dialled).
    let envs = [
        ("NEOCODE_BASE_URL", "http://127.0.0.1:9/v1"),
        ("NEOCODE_MODEL", "not-used"),
        ("NEOCODE_DEMO_PACE_MS", "2"),
    ];
    let (mut pty, tmp) = demo_keep(&env, &envs);
    let s = pty.wait_for("13 sessions");
    assert!(
        s.contains("Demo model (scripted, no network): press n"),
        "said at once:\n{s}"
    );
    let s = pty.press("n", "demo model — scripted, no network");
    assert!(!s.contains("no model"), "{s}");
    pty.keys("fix the bug\r");

    // read_file ran, then the edit waits with its diff.
    let s = approve(&mut pty, "waiting for approval");
    assert!(s.contains("read_file"), "{s}");
    assert!(s.contains("Helo, $name"), "the file as read: {s}");
    assert!(s.contains("+ echo \"Hello, $name!\""), "the diff: {s}");
    // Then the tests through the sandbox, approved too.
    approve(&mut pty, "run_command  sh test.sh  · waiting");
    let s = pty.wait_for("All tests pass");
    assert!(s.contains("2 passed"), "{s}");
    let s = pty.wait_for("Done in");
    // The demo model tells its window: the gauge shows it, never "window unknown".
    assert!(s.contains("/32k"), "{s}");
    assert!(!s.contains("window unknown"), "{s}");

    // A plan run with two layers.
    pty.keys("/plan make greet.sh greet politely\r");
    let s = approve(&mut pty, "Layer 2");
    assert!(s.contains("survey") && s.contains("report"), "{s}");
    pty.wait_for("3 of 3 steps completed");
    pty.keys("\x03");
    pty.wait_exit(
        Duration::from_secs(30),
        "neocode demo did not quit on Ctrl-C",
    );

    // The edit is on disk and the tests pass there; the turn is stored with the demo model.
    let kept = Kept::find(&tmp, "fix the bug");
    let greet = std::fs::read_to_string(kept.ws.join("greet.sh")).unwrap();
    assert!(greet.contains("echo \"Hello, $name!\""), "{greet}");
    let s = kept.sessions.header(&kept.id).unwrap();
    assert_eq!(s.model, "demo model — scripted, no network");
    assert_eq!(s.provider, "demo");
    let msgs = kept.sessions.messages(&kept.id, 0, i64::MAX).unwrap();
    let ran = msgs
        .iter()
        .any(|m| m.role == Role::Tool && m.text().contains("2 passed"));
    assert!(ran, "the run_command result is stored");
}

#[test]
fn the_at_picker_ranks_files_fuzzily_inserts_the_chosen_one_and_attaches_its_text() {
    let env = Env::new();
    let (mut pty, tmp) = demo_conversation(&env, "2", &[]);
    let s = pty.press("explain @tst", "@ files: ↑↓ choose");
    assert!(s.contains(" @test.sh"), "{s}");
    assert!(!s.contains(" @greet.sh"), "only matches are listed:\n{s}");
    let s = pty.press("\r", "┃explain @test.sh");
    assert!(!s.contains("@ files:"), "the picker closed:\n{s}");
    let s = pty.press("\r", "Done in");
    assert!(
        s.contains("test.sh ("),
        "the demo model read the typed words:\n{s}"
    );
    pty.quit();
    let kept = Kept::find_by(&tmp, |t| t.starts_with("explain @test.sh"));
    let msgs = kept.sessions.messages(&kept.id, 0, i64::MAX).unwrap();
    let sent = msgs[0].text();
    assert!(sent.starts_with("explain @test.sh"), "{sent}");
    assert!(
        sent.contains("[@test.sh attached ("),
        "said on the message: {sent}"
    );
    assert!(
        sent.contains("check Ada \"Hello, Ada!\""),
        "the file's text: {sent}"
    );
}

#[test]
fn ctrl_g_edits_the_draft_in_the_editor_and_the_tui_comes_back() {
    let env = Env::new();
    let dir = env.home.parent().unwrap().join("ed");
    std::fs::create_dir_all(&dir).unwrap();
    let script = dir.join("fake-editor.sh");
    let seen = dir.join("seen");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\ncp \"$1\" '{}'\nprintf 'hello\\nfrom the editor\\n' > \"$1\"\n",
            seen.display()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let script_s = script.to_string_lossy().into_owned();
    let envs = [("VISUAL", ""), ("EDITOR", script_s.as_str())];
    let (mut pty, tmp) = demo_chat(&env, &envs);
    pty.keys("my draft");
    let s = pty.press("\x07", "The message is back from the editor");
    assert_eq!(std::fs::read_to_string(&seen).unwrap(), "my draft");
    has(&s, "┃hello");
    has(&s, "┃from the editor");
    // The whole screen came back (title bar, status line).
    has(&s, " neocode ");
    has(&s, "demo model — scripted");
    // And keys are the TUI's again: the edited draft is sent.
    pty.press("\r", "Done in");
    pty.quit();
    let kept = Kept::find(&tmp, "hello");
    let first = kept.sessions.messages(&kept.id, 1, 1).unwrap();
    assert_eq!(first[0].text(), "hello\nfrom the editor");
}

#[test]
fn alt_c_copies_the_last_message_to_the_clipboard_with_osc_52() {
    use base64::Engine;
    let env = Env::new();
    let (mut pty, _tmp) = demo_conversation(&env, "1", &[]);
    pty.press("hello\r", "Done in");
    let s = pty.press("\x1bc", "to the clipboard (OSC 52)");
    assert!(s.contains("Copied reply #2"), "{s}");
    let bytes = pty.bytes();
    let raw = String::from_utf8_lossy(&bytes);
    let start = raw.find("\x1b]52;c;").expect("an OSC 52 sequence") + 7;
    let end = start + raw[start..].find('\x07').expect("its end");
    let text = base64::engine::general_purpose::STANDARD
        .decode(&raw[start..end])
        .unwrap();
    let text = String::from_utf8(text).unwrap();
    assert!(text.starts_with("# Hello from the demo model"), "{text}");
    pty.quit();
}

#[test]
fn slash_resume_picks_another_session_and_esc_comes_back() {
    let env = Env::new();
    let (mut pty, _tmp) = demo_conversation(&env, "1", &[]);
    pty.press("hello\r", "Done in");
    // The picker, and Esc back to this conversation.
    has(&pty.press("/resume\r", "Resume a session"), "Filter: ");
    has(&pty.press("\x1b", "Back to the conversation."), "┌ hello ");
    // The picker again: filter, Enter switches to the chosen session's conversation.
    pty.press("/resume\r", "Resume a session");
    pty.press("release notes", " matches");
    pty.wait_for("▶ Draft release notes for v0.4");
    let s = pty.press("\r", "Type a message");
    assert!(
        s.contains("┌ Draft release notes for v0.4 "),
        "its conversation:\n{s}"
    );
    pty.quit();
}

/// Ctrl-V (and `/paste`) reads the clipboard's image with `xclip` (a fake one on `$PATH` here):
/// with no image it says so in one line; with one it is attached (said on the draft), sent with the message
/// and stored as an asset of the session. A pasted path of an existing image attaches too.
#[test]
fn ctrl_v_pastes_the_clipboards_image_and_it_is_sent_as_an_asset() {
    use std::os::unix::fs::PermissionsExt;
    let env = Env::new();
    let root = env.home.parent().unwrap().to_path_buf();
    let bin = root.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let clip = root.join("clip.png");
    let png: &[u8] = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR fake image bytes";
    std::fs::write(
        bin.join("xclip"),
        format!(
            "#!/bin/sh\necho \"$@\" > '{args}'\n[ -f '{clip}' ] || {{ echo 'Error: target image/png not available' >&2; exit 1; }}\ncat '{clip}'\n",
            args = root.join("xclip-args").display(),
            clip = clip.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(bin.join("xclip"), std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = format!("{}:/usr/bin:/bin", bin.display());
    let envs = [("PATH", path.as_str()), ("WAYLAND_DISPLAY", "")];
    let (mut pty, tmp) = demo_conversation(&env, "1", &envs);
    pty.press("hello\r", "Done in");

    // Nothing on the clipboard: one clear line.
    pty.keys("\x16");
    pty.wait_for("The clipboard holds no PNG image (xclip: Error: target image/png not");
    assert_eq!(
        std::fs::read_to_string(root.join("xclip-args"))
            .unwrap()
            .trim(),
        "-selection clipboard -t image/png -o"
    );
    // An image on it: attached, and the draft says so.
    std::fs::write(&clip, png).unwrap();
    let s = pty.press("/paste\r", "Pasted a PNG image from the clipboard");
    assert!(s.contains("1 image attached"), "{s}");
    // A pasted path of an existing image attaches it too; a missing one is text.
    pty.press(
        &format!("\x1b[200~{}\x1b[201~", clip.display()),
        "2 images attached",
    );
    pty.keys("what is this\r");
    let kept = Kept::find(&tmp, "hello");
    let (sessions, id) = (&kept.sessions, kept.id.as_str());
    let start = std::time::Instant::now();
    while sessions.assets(id).unwrap().len() < 2 {
        assert!(start.elapsed() < Duration::from_secs(30), "never stored");
        std::thread::sleep(Duration::from_millis(50));
    }
    let msgs = sessions.messages(id, 0, i64::MAX).unwrap();
    let sent = msgs
        .iter()
        .find(|m| m.role == Role::User && m.text() == "what is this")
        .expect("the message with the images");
    let images = sent
        .parts
        .iter()
        .filter(|p| matches!(p, neocode::session::Part::Image { .. }))
        .count();
    assert_eq!(images, 2, "{sent:?}");
    for a in sessions.assets(id).unwrap() {
        let (meta, bytes) = sessions.asset_bytes(id, &a.id).unwrap();
        assert_eq!(meta.mime_type, "image/png");
        assert_eq!(bytes, png);
    }
    // The demo model's answer may still run: the first Ctrl-C cancels it, the second quits.
    pty.keys("\x03");
    std::thread::sleep(Duration::from_millis(300));
    pty.quit();
}
