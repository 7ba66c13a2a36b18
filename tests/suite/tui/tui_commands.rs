//! Custom slash commands in the conversation: the `/` completion lists them with their
//! description and argument hint (snapshot), a workspace's only once it is trusted, and
//! Enter sends the prompt the command expands to.

use crate::support::text::has;
use crate::support::tui::Keys;
use crossterm::event::KeyCode;
use neocode::runtime::config::ApprovalPolicy;
use neocode::runtime::trust;
use neocode::tui::app::SLASH_COMMANDS;
use neocode::tui::effect::TurnEffect;

use super::tui_live::H;
use crate::support::tui_flows::write_file;

/// The commands the TUI finds at start for `h`'s workspace, given to its conversation.
fn load(h: &mut H) {
    let loc = h.env.location();
    let built_in: Vec<&str> = SLASH_COMMANDS.iter().map(|c| c.0).collect();
    let found = trust::custom_commands(&loc.home, loc.root(), &built_in);
    h.app.conv.set_commands(found);
}

/// A conversation on a workspace with a custom command in the home and one in the workspace,
/// the workspace `trusted` or not, the commands found as at start.
fn with_commands(trusted: bool) -> H {
    let mut h = H::new();
    let loc = h.env.location();
    write_file(
        loc.home.join("commands/explain.md"),
        "---\ndescription: Explain code simply\nargument-hint: TOPIC\n---\nExplain $ARGUMENTS simply.\n",
    );
    write_file(
        loc.root().join(".claude/commands/review.md"),
        "---\ndescription: Review a folder\nargument-hint: PATH [FOCUS]\n---\nReview $1, $2 first.\n",
    );
    if trusted {
        trust::trust(&h.env.home, &h.env.workdir).unwrap();
    }
    load(&mut h);
    h
}

#[test]
fn the_completion_lists_custom_commands_with_description_and_hint() {
    let mut h = with_commands(true);
    h.chars("/");
    let s = h.screen();
    assert!(
        s.contains("/review PATH [FOCUS]  Review a folder (claude)"),
        "{s}"
    );
    assert!(
        s.contains("/explain TOPIC  Explain code simply (home)"),
        "{s}"
    );
    insta::assert_snapshot!("commands_completion", s);
    // Tab completes a custom name like a built-in one.
    h.key(KeyCode::Backspace);
    h.chars("/rev");
    h.key(KeyCode::Tab);
    assert_eq!(h.app.conv.composer().text(), "/review ");
}

#[test]
fn untrusted_workspace_commands_are_not_offered() {
    let mut h = with_commands(false);
    h.chars("/");
    let s = h.screen();
    assert!(s.contains("/explain"), "{s}");
    assert!(!s.contains("/review"), "{s}");
    h.key(KeyCode::Backspace);
    h.submit("/review src/");
    assert!(h.turns.is_empty(), "nothing is sent: {:?}", h.turns);
    has(&h.screen(), "Unknown command /review");
}

#[test]
fn enter_sends_the_expanded_prompt() {
    let mut h = with_commands(true);
    h.submit("/review src/ \"error handling\"");
    h.took(TurnEffect::Start {
        session_id: Some(h.id.clone()),
        text: Some("Review src/, error handling first.".into()),
        images: Vec::new(),
        approval: ApprovalPolicy::Ask,
    });
    has(&h.screen(), "Sent /review as its prompt");
}

#[test]
fn init_sends_the_agents_md_prompt() {
    let mut h = H::new();
    h.submit("/init");
    let text = h.started_text();
    assert!(text.starts_with("Write or update AGENTS.md"), "{text}");
}

#[test]
fn a_path_typed_as_the_message_is_sent_not_run() {
    let mut h = H::new();
    h.submit("/etc/hosts: what is it?");
    assert_eq!(h.started_text(), "/etc/hosts: what is it?");
}

#[test]
fn an_enabled_plugins_commands_are_in_the_completion_with_its_prefix() {
    let mut h = H::new();
    let loc = h.env.location();
    write_file(
        loc.home
            .join("plugins/review-kit/.claude-plugin/plugin.json"),
        r#"{"name": "review-kit", "version": "1.0.0"}"#,
    );
    write_file(
        loc.home.join("plugins/review-kit/commands/review.md"),
        "---\ndescription: Review a folder\nargument-hint: PATH\n---\nReview $1.\n",
    );
    write_file(
        loc.home.join("plugins.toml"),
        "[plugins.review-kit]\nenabled = false\nsource = \"./review-kit\"\n",
    );
    load(&mut h);
    h.chars("/review-kit");
    assert!(!h.screen().contains("/review-kit:review"), "{}", h.screen());
    write_file(
        loc.home.join("plugins.toml"),
        "[plugins.review-kit]\nenabled = true\nsource = \"./review-kit\"\n",
    );
    load(&mut h);
    for _ in 0.."/review-kit".len() {
        h.key(KeyCode::Backspace);
    }
    h.chars("/review-kit");
    let s = h.screen();
    assert!(
        s.contains("/review-kit:review PATH  Review a folder (plugin)"),
        "{s}"
    );
}
