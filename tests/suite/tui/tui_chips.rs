//! What a user message carries besides what was typed, on `TestBackend`: an `@path`
//! attachment is a one-line chip in the live cell and the transcript (its text on expand, and
//! again after a reopen), a hook's context likewise; ↑ recalls only what was typed. An empty
//! reply says so rather than showing as a blank message, a long message (a big paste sent
//! whole) shows its beginning until expanded, and a done edit shows the lines it changed
//! rather than its diff's headers.

use crate::support::text::has;
use crossterm::event::{KeyCode, KeyModifiers};
use neocode::session::{AppendMeta, NewMessage, NewSession, Part, Role};

use super::tui_live::H;
use crate::support::tui::Keys;

#[test]
fn an_at_file_is_a_one_line_chip_whose_text_shows_on_expand() {
    let mut h = H::new();
    let root = std::path::PathBuf::from(&h.root);
    let notes: String = (0..650)
        .map(|i| format!("line {i:03} of the notes file\n"))
        .collect();
    std::fs::write(root.join("notes.txt"), &notes).unwrap();
    h.chars("what is in @notes.txt");
    h.key(KeyCode::Tab);
    h.chars("?");
    h.key(KeyCode::Enter);
    let sent = h.started_text();
    // The model is sent the file's text after what was typed.
    assert!(sent.starts_with("what is in @notes.txt ?\n\n[@notes.txt attached ("));
    assert!(sent.contains("line 649 of the notes file"));
    h.started();
    // The live cell shows one line for it, not 650.
    let s = h.screen();
    assert!(s.contains("[@notes.txt attached (17.1 KiB)]"), "{s}");
    assert!(s.contains("650 lines · expand to read"), "{s}");
    assert!(!s.contains("line 000 of the notes file"), "{s}");
    // Stored, as the turn stores it: the transcript shows the chip too.
    let s = h.replied(&sent, "It holds numbered lines.");
    assert!(s.contains("It holds numbered lines."), "{s}");
    assert!(s.contains("[@notes.txt attached (17.1 KiB)]"), "{s}");
    assert!(!s.contains("line 000 of the notes file"), "{s}");
    // Selected and expanded: its text is there to read.
    h.expand_two_up();
    let s = h.screen();
    assert!(s.contains("│ line 649 of the notes file"), "{s}");
    // ↑ recalls what was typed, not the file.
    h.key(KeyCode::Esc);
    h.key(KeyCode::Enter);
    h.key(KeyCode::Up);
    assert_eq!(h.app.conv.composer().text(), "what is in @notes.txt ?");
}

#[test]
fn a_hooks_context_is_a_chip_and_up_never_recalls_it() {
    let mut h = H::new();
    let mut prompt = NewMessage::text(Role::User, "run the linter");
    prompt.parts.push(Part::text(
        "[context from a hook]\nBranch: main\nUncommitted: 3 files",
    ));
    let other = h.rt.new_session(NewSession::default()).unwrap();
    h.rt.append(&other.id, &[prompt], &AppendMeta::default())
        .unwrap();
    // Opened (as after a restart): the transcript and the history are read from the store.
    h.key(KeyCode::Esc);
    let effects = h.app.resume(&other.id);
    h.run(effects);
    let s = h.screen();
    assert!(s.contains("run the linter"), "{s}");
    has(&s, "[context from a hook]  2 lines · expand to read");
    assert!(!s.contains("Uncommitted: 3 files"), "{s}");
    h.key(KeyCode::Up);
    assert_eq!(h.app.conv.composer().text(), "run the linter", "{s}");
}

#[test]
fn an_empty_reply_says_so_instead_of_showing_a_blank_message() {
    let mut h = H::sending("say nothing");
    let s = h.replied("say nothing", "");
    let at = s.find("Assistant  #3").expect("the reply is shown");
    assert!(
        s[at..].contains("(an empty reply: the model sent no text)"),
        "{s}"
    );
}

/// What `edit_file` answers: a line, then the diff (headers, context, changed lines).
const EDITED: &str = "edited stats.py (+1 -1 lines):\n--- a/stats.py\n+++ b/stats.py\n@@ -1,3 +1,3 @@\n x = 0\n-total = 1\n+total = 2\n y = 3\n";

#[test]
fn a_done_edit_card_shows_the_changed_lines_not_the_diff_headers() {
    use neocode::runtime::tools::ToolKind;
    let mut h = H::sending("Bump the total");
    super::tui_live::tool(
        &mut h,
        "e1",
        "edit_file",
        r#"{"path":"stats.py","old_string":"total = 1","new_string":"total = 2"}"#,
        ToolKind::Edit,
        "edit_file stats.py",
    );
    super::tui_live::result(&mut h, "e1", EDITED, false, 4);
    let s = h.screen();
    assert!(s.contains("│ edited stats.py (+1 -1 lines):"), "{s}");
    assert!(
        s.contains("│ -total = 1") && s.contains("│ +total = 2"),
        "{s}"
    );
    assert!(
        !s.contains("--- a/stats.py") && !s.contains("@@ -1,3"),
        "{s}"
    );
    // Stored, in the transcript: the same, collapsed.
    let mut asked = NewMessage::text(Role::Assistant, "");
    asked.tool_calls = vec![neocode::session::ToolCall {
        id: "e1".into(),
        name: "edit_file".into(),
        arguments: r#"{"path":"stats.py","old_string":"total = 1","new_string":"total = 2"}"#
            .into(),
    }];
    h.store_and_finish(&[
        NewMessage::text(Role::User, "Bump the total"),
        asked,
        NewMessage::tool_result("e1", EDITED, false),
    ]);
    let s = h.screen();
    let at = s.find("Tool · edit_file").expect("the result is shown");
    let result = &s[at..];
    assert!(result.contains("│ +total = 2"), "{s}");
    assert!(!result.contains("--- a/stats.py"), "{s}");
}

#[test]
fn a_long_message_shows_its_beginning_until_expanded() {
    let mut h = H::new();
    let log: String = (0..5000)
        .map(|i| format!("worker {i:04} finished\n"))
        .collect();
    h.chars("why did these finish? ");
    let e = h.app.on_paste(&log);
    h.run(e);
    has(&h.screen(), "[pasted 5,000 lines · 105 KB]");
    h.key(KeyCode::Enter);
    let text = h.started_text();
    assert_eq!(text.lines().count(), 5000);
    h.started();
    // The live cell: the beginning and how much more, not 5,000 rows.
    let s = h.screen();
    assert!(s.contains("worker 0010 finished"), "{s}");
    assert!(s.contains("… 4,988 more lines · expand to read"), "{s}");
    assert!(!s.contains("worker 4999"), "{s}");
    let s = h.replied(&text, "They all finished in order.");
    assert!(s.contains("… 4,988 more lines · expand to read"), "{s}");
    // Expanded: all of it.
    h.expand_two_up();
    h.key_mod(KeyCode::Down, KeyModifiers::ALT);
    let s = h.screen();
    assert!(s.contains("worker 4999 finished"), "{s}");
}
