//! The running turn's sub-agents in the TUI: Ctrl-T lists them (who, what each does, its
//! calls), `x` cancels one alone by its session, Enter opens one (its own session) where
//! Alt-Enter steers it through its queue and Esc cancels it, not its parent.

use crossterm::event::{KeyCode, KeyModifiers};
use neocode::runtime::agent::{TurnCommand, TurnEvent};
use neocode::runtime::tools::ToolKind;
use neocode::session::{NewSession, ToolCall};
use neocode::tui::app::Overlay;
use neocode::tui::effect::TurnEffect;

use super::tui_live::{H, child_ev, send_task};
use crate::support::text::has;
use crate::support::tui::Keys;

/// A turn that started one sub-agent (a real session of the store) which made one call.
fn with_child() -> (H, String) {
    let mut h = H::new();
    let child =
        h.rt.new_session(NewSession {
            title: "Write out.txt".into(),
            subagent_of: Some(h.id.clone()),
            ..NewSession::default()
        })
        .unwrap()
        .id;
    send_task(&mut h);
    child_ev(
        &mut h,
        &child,
        TurnEvent::Started {
            session_id: child.clone(),
        },
    );
    child_ev(
        &mut h,
        &child,
        TurnEvent::ToolCall {
            call: ToolCall {
                id: "c1".into(),
                name: "read_file".into(),
                arguments: r#"{"path":"README.md"}"#.into(),
            },
            kind: ToolKind::Read,
            summary: "README.md".into(),
        },
    );
    (h, child)
}

#[test]
fn ctrl_t_lists_the_sub_agents_and_x_cancels_one_alone() {
    let (mut h, child) = with_child();
    has(&h.screen(), "(Ctrl-T: watch, steer or cancel it)");
    h.key_mod(KeyCode::Char('t'), KeyModifiers::CONTROL);
    assert!(matches!(h.app.overlay, Overlay::Subagents(_)));
    let s = h.screen();
    has(&s, "Sub-agents · 1 of 1 running");
    has(&s, &format!("▶ {} (writer)", &child[..8]));
    has(&s, "running · 1 call · ");
    has(&s, "x cancel it");
    h.key(KeyCode::Char('x'));
    h.took(TurnEffect::CommandTo {
        session_id: child,
        cmd: TurnCommand::Cancel,
    });
    // The parent was not cancelled.
    assert!(!h.turns.contains(&TurnEffect::Command(TurnCommand::Cancel)));
    h.key(KeyCode::Esc);
    assert!(matches!(h.app.overlay, Overlay::None));
}

#[test]
fn an_opened_sub_agent_is_steered_through_its_queue_and_esc_cancels_it_not_the_parent() {
    let (mut h, child) = with_child();
    h.key_mod(KeyCode::Char('t'), KeyModifiers::CONTROL);
    h.key(KeyCode::Enter);
    let s = h.screen();
    has(&s, "Write out.txt");
    has(&s, "a sub-agent, running: Alt-Enter steers it");
    for c in "Use tabs".chars() {
        h.key(KeyCode::Char(c));
    }
    h.key_mod(KeyCode::Enter, KeyModifiers::ALT);
    let queued = h.rt.queued(&child).unwrap();
    assert_eq!(queued.len(), 1, "{queued:?}");
    assert_eq!(queued[0].text, "Use tabs");
    assert!(queued[0].steer, "{queued:?}");
    // Nothing was queued for the parent.
    assert!(h.rt.queued(&h.id).unwrap().is_empty());
    h.key(KeyCode::Esc);
    h.took(TurnEffect::CommandTo {
        session_id: child,
        cmd: TurnCommand::Cancel,
    });
}

#[test]
fn ctrl_t_without_sub_agents_says_so() {
    let mut h = H::sending("Hello");
    h.key_mod(KeyCode::Char('t'), KeyModifiers::CONTROL);
    assert!(matches!(h.app.overlay, Overlay::None));
    has(&h.screen(), "No sub-agent runs in this turn");
}
