//! The conversation's transitions on their own, with no router: a `Ctx` built from plain
//! values, and the asks checked as the router would carry them out.

use std::path::{Path, PathBuf};

use super::{Ask, Conversation, Ctx};
use crate::runtime::agent::{FinishReason, TurnEvent};
use crate::session::Usage;
use crate::tui::action::Action;
use crate::tui::browse::Detail;
use crate::tui::dialog::{Overlay, PlanAsk, Status};
use crate::tui::effect::{Effect, TurnEffect};
use crate::tui::screen::Screen;

struct Router {
    detail: Option<Detail>,
    overlay: Overlay,
    status: Option<Status>,
}

impl Router {
    fn new(open: Option<&str>) -> Router {
        Router {
            detail: open.map(Detail::new),
            overlay: Overlay::None,
            status: None,
        }
    }

    fn ctx(&mut self) -> Ctx<'_> {
        Ctx {
            now_ms: 1_000,
            screen: Screen::Conversation,
            detail: self.detail.as_mut(),
            overlay: &mut self.overlay,
            status: &mut self.status,
            cwd: Path::new("/nonexistent"),
        }
    }
}

#[test]
fn a_new_sessions_turn_asks_the_router_to_open_it_and_its_end_asks_for_the_list() {
    let mut r = Router::new(None);
    let mut c = Conversation::new(0, PathBuf::new());
    c.draft = true;
    c.editor.composer_mut().set_text("hello");
    c.set_provider(Ok("m".into()));
    let asks = c.act(Action::Submit, &mut r.ctx());
    assert!(matches!(
        asks.as_slice(),
        [Ask::Effect(Effect::Turn(TurnEffect::Start { session_id: None, text: Some(t), .. }))] if t == "hello"
    ));
    assert!(c.turn_active());

    let asks = c.on_turn(
        TurnEvent::Started {
            session_id: "s1".into(),
        },
        &mut r.ctx(),
    );
    assert_eq!(asks, vec![Ask::OpenNew("s1".into())]);
    assert!(!c.draft, "the new session exists now");

    // The router opened it; the turn's end refreshes it and the list's top.
    r.detail = Some(Detail::new("s1"));
    r.overlay = Overlay::Plan(PlanAsk {
        layers: Vec::new(),
        steps: Vec::new(),
        dropping: None,
    });
    let asks = c.on_turn(
        TurnEvent::Finished {
            reason: FinishReason::Completed,
            usage: Usage::default(),
        },
        &mut r.ctx(),
    );
    assert_eq!(asks, vec![Ask::RefreshDetail, Ask::ReloadTop]);
    assert!(!c.turn_active());
    assert!(
        matches!(r.overlay, Overlay::None),
        "an unanswered plan goes"
    );
    let said = r.status.as_ref().map(|s| s.text.as_str()).unwrap_or("");
    assert!(said.starts_with("Done in"), "{said}");
}

#[test]
fn slash_commands_of_the_router_and_the_store_come_back_as_asks() {
    let mut r = Router::new(Some("s1"));
    let mut c = Conversation::new(0, PathBuf::new());
    c.editor.composer_mut().set_text("/fork");
    assert_eq!(
        c.act(Action::Submit, &mut r.ctx()),
        vec![Ask::Act(Action::Fork)]
    );
    c.editor.composer_mut().set_text("/rename New title");
    let asks = c.act(Action::Submit, &mut r.ctx());
    assert!(matches!(
        asks.as_slice(),
        [Ask::Request(crate::tui::worker::Request::Rename { id, title })] if id == "s1" && title == "New title"
    ));
    c.editor.composer_mut().set_text("/nope");
    assert!(c.act(Action::Submit, &mut r.ctx()).is_empty());
    assert!(
        r.status
            .as_ref()
            .is_some_and(|s| s.error && s.text.starts_with("Unknown command /nope"))
    );
}
