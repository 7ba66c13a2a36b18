//! Random use of the real app state on a real store: key presses (every bound key, text,
//! control keys), mouse clicks and wheel, and resizes down to 1x1, each followed by a frame.
//! Storage answers can be held back and then delivered in any order (a slow worker, answers
//! to requests the app has since replaced), and another process writes meanwhile. The app
//! never panics, every frame draws, in the browse view the detail pane always shows the
//! selected session, the list never holds a session twice, and the search dialog never shows
//! the answer to a query that is no longer the one typed. A model is "configured", and the
//! events of agent turns (streamed text, tool calls, approvals, results, ends) arrive at
//! random, in any order and for any session, as a misbehaving or racing agent could send them.

use crate::support::Env;
use crate::support::tui::options;
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers, MouseButton, MouseEvent, MouseEventKind};
use neocode::runtime::Sessions;
use neocode::session::{AppendMeta, ListQuery, NewMessage, NewSession, Role};
use neocode::tui::app::{App, AppOptions, Overlay, Screen, run_inline};
use neocode::tui::effect::Effect;
use neocode::tui::theme::Theme;
use neocode::tui::worker::{self, Done, Job};
use neocode::tui::{demo, views};
use proptest::prelude::*;
use ratatui::Terminal;
use ratatui::backend::TestBackend;

#[derive(Debug, Clone)]
enum Ev {
    Key(KeyCode, KeyModifiers),
    Mouse(MouseEventKind, u16, u16),
    Resize(u16, u16),
    /// The once-a-second poll of the event loop.
    Tick,
    /// Another process writes: 0 appends to a session, 1 starts one, 2 deletes one.
    Elsewhere(u8, usize),
    /// From now on storage answers are held back.
    Hold,
    /// The held answers arrive, in an order picked by the seed; answering stops holding.
    Release(u64),
    /// An event of an agent turn: which kind, and a number picking session, call and seq.
    Turn(u8, usize),
}

fn key() -> impl Strategy<Value = Ev> {
    let code = prop_oneof![
        // Every key the keymap binds, and then some.
        prop::sample::select(vec![
            'j', 'k', 'g', 'G', '[', ']', '/', 's', 'n', 'f', 'd', 'R', 'e', '?', 'q', 'y', ' ',
            'x', 'é', '界', '\u{202e}',
        ])
        .prop_map(KeyCode::Char),
        prop::sample::select(vec![
            KeyCode::Enter,
            KeyCode::Esc,
            KeyCode::Tab,
            KeyCode::BackTab,
            KeyCode::Backspace,
            KeyCode::Up,
            KeyCode::Down,
            KeyCode::Left,
            KeyCode::Right,
            KeyCode::PageUp,
            KeyCode::PageDown,
            KeyCode::Home,
            KeyCode::End,
            KeyCode::Delete,
        ]),
    ];
    let mods = prop::sample::select(vec![
        KeyModifiers::NONE,
        KeyModifiers::NONE,
        KeyModifiers::NONE,
        KeyModifiers::SHIFT,
        KeyModifiers::CONTROL,
    ]);
    (code, mods).prop_map(|(c, m)| Ev::Key(c, m))
}

fn event() -> impl Strategy<Value = Ev> {
    prop_oneof![
        8 => key(),
        1 => (
            prop::sample::select(vec![
                MouseEventKind::ScrollUp,
                MouseEventKind::ScrollDown,
                MouseEventKind::Down(MouseButton::Left),
            ]),
            0u16..130,
            0u16..40,
        )
            .prop_map(|(k, x, y)| Ev::Mouse(k, x, y)),
        1 => (1u16..140, 1u16..45).prop_map(|(w, h)| Ev::Resize(w, h)),
        1 => Just(Ev::Tick),
        1 => (0u8..3, any::<usize>()).prop_map(|(k, n)| Ev::Elsewhere(k, n)),
        1 => Just(Ev::Hold),
        1 => any::<u64>().prop_map(Ev::Release),
        3 => (0u8..7, any::<usize>()).prop_map(|(k, n)| Ev::Turn(k, n)),
    ]
}

struct Driver {
    app: App,
    rt: Sessions,
    /// Another neocode process on the same workspace.
    other: Sessions,
    /// Storage work asked for and not answered yet, while holding.
    held: Vec<Job>,
    holding: bool,
    _env: Env,
}

impl Driver {
    /// The demo sessions, plus `extra` more so the list has more than one page.
    fn new(extra: usize) -> Driver {
        let env = Env::new();
        let loc = env.location();
        let export = env.tmp.path().join("out");
        std::fs::create_dir_all(&export).unwrap();
        let rt = env.sessions();
        demo::load_into(&rt, neocode::session::now_ms()).unwrap();
        for i in 0..extra {
            rt.new_session(NewSession {
                title: format!("filler {i}"),
                ..NewSession::default()
            })
            .unwrap();
        }
        let root = loc.root().display().to_string();
        let (app, jobs) = App::new(AppOptions {
            theme: Theme::new(true),
            ..options(&root, &export, (120, 35), neocode::session::now_ms())
        });
        let other = env.sessions();
        let mut app = app;
        app.conv.set_provider(Ok("fuzz-model".into()));
        let mut d = Driver {
            app,
            rt,
            other,
            held: Vec::new(),
            holding: false,
            _env: env,
        };
        d.run(jobs);
        d
    }

    fn run(&mut self, effects: Vec<Effect>) {
        if !self.holding {
            run_inline(&mut self.app, &self.rt, effects);
            return;
        }
        for e in effects {
            match e {
                Effect::Storage(j) => self.held.push(j),
                // What the agent is asked to do; its events come as `Ev::Turn`.
                Effect::Turn(_) | Effect::Clipboard(_) => {}
            }
        }
    }

    /// Answers every held job in a seeded order; follow-up work runs at once.
    fn release(&mut self, seed: u64) {
        self.holding = false;
        let mut held = std::mem::take(&mut self.held);
        let mut x = seed | 1;
        while !held.is_empty() {
            // xorshift: a cheap, reproducible order.
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let j = held.swap_remove((x % held.len() as u64) as usize);
            let done = Done {
                token: j.token,
                result: worker::handle(&self.rt, j.request),
            };
            let effects = self.app.on_done(done);
            self.run(effects);
        }
    }

    #[expect(clippy::too_many_lines)]
    fn apply(&mut self, ev: &Ev) {
        let jobs = match ev {
            Ev::Key(c, m) => self.app.on_key(KeyEvent::new(*c, *m)),
            Ev::Mouse(kind, x, y) => self.app.on_mouse(MouseEvent {
                kind: *kind,
                column: *x,
                row: *y,
                modifiers: KeyModifiers::NONE,
            }),
            Ev::Resize(w, h) => self.app.on_resize(*w, *h),
            Ev::Tick => self.app.tick(),
            Ev::Hold => {
                self.holding = true;
                Vec::new()
            }
            Ev::Release(seed) => {
                self.release(*seed);
                Vec::new()
            }
            Ev::Turn(kind, n) => {
                use neocode::runtime::agent::{FinishReason, TurnEvent};
                use neocode::session::{ToolCall, Usage};
                let call = ToolCall {
                    id: format!("c{}", n % 4),
                    name: ["write_file", "run_command", "edit_file", "read_file"][n % 4].into(),
                    arguments:
                        r#"{"path":"a.txt","content":"x\ny","old_string":"a","new_string":"b"}"#
                            .into(),
                };
                let ev = match kind {
                    0 => {
                        let all = self.rt.list(&ListQuery::default()).unwrap().items;
                        match all.get(n % all.len().max(1)) {
                            Some(s) => TurnEvent::Started {
                                session_id: s.id.clone(),
                            },
                            None => return,
                        }
                    }
                    1 => TurnEvent::TextDelta(
                        [
                            "word ",
                            "**bold** ",
                            "\n```rust\nfn x() {}\n```\n",
                            "| a | b |\n",
                        ][n % 4]
                            .into(),
                    ),
                    2 => TurnEvent::ToolCall {
                        call,
                        kind: neocode::runtime::tools::ToolKind::Edit,
                        summary: "write_file a.txt".into(),
                    },
                    3 => TurnEvent::ApprovalNeeded {
                        call,
                        summary: "write_file a.txt".into(),
                        reason: "edits ask".into(),
                        rules: vec!["run_command(make)".into()],
                    },
                    4 => TurnEvent::ToolResult {
                        call_id: call.id,
                        text: "ok\nmore".into(),
                        is_error: n % 3 == 0,
                        seq: (n % 60) as i64,
                        permission: None,
                        diagnostics: None,
                    },
                    5 => TurnEvent::AssistantStored {
                        seq: (n % 60) as i64,
                        usage: Usage {
                            input_tokens: (n % 5000) as u64,
                            output_tokens: 7,
                        },
                    },
                    _ => TurnEvent::Finished {
                        reason: match n % 3 {
                            0 => FinishReason::Completed,
                            1 => FinishReason::Cancelled,
                            _ => FinishReason::Failed {
                                code: neocode::runtime::agent::FailCode::Auth,
                                message: "no".into(),
                            },
                        },
                        usage: Usage::default(),
                    },
                };
                self.app.on_turn(ev)
            }
            Ev::Elsewhere(kind, n) => {
                let all = self.other.list(&ListQuery::default()).unwrap().items;
                let target = all.get(n % all.len().max(1)).map(|s| s.id.clone());
                match (kind, target) {
                    (0, Some(id)) => {
                        let m = NewMessage::text(Role::User, "from the other window");
                        self.other
                            .append(&id, &[m], &AppendMeta::default())
                            .unwrap();
                    }
                    (2, Some(id)) => self.other.delete(&id).unwrap(),
                    _ => {
                        self.other.new_session(NewSession::default()).unwrap();
                    }
                }
                Vec::new()
            }
        };
        self.run(jobs);
    }

    fn draw(&self) {
        let (w, h) = self.app.size;
        let mut t = Terminal::new(TestBackend::new(w, h)).unwrap();
        t.draw(|f| views::draw(f, &self.app)).unwrap();
    }
}

fn check(d: &Driver, ev: &Ev) -> Result<(), TestCaseError> {
    let app = &d.app;
    if app.screen == Screen::Browse && matches!(app.overlay, Overlay::None) {
        let selected = app.browse.list.current().map(|s| s.id.clone());
        let shown = app.browse.detail.as_ref().map(|x| x.id.clone());
        prop_assert_eq!(selected, shown, "after {:?}", ev);
    }
    let mut seen = std::collections::HashSet::new();
    for s in &app.browse.list.rows {
        prop_assert!(seen.insert(&s.id), "{} listed twice after {:?}", s.id, ev);
    }
    if let Some(det) = &app.browse.detail
        && let Some(h) = &det.header
    {
        prop_assert_eq!(&h.id, &det.id, "the detail shows another session's header");
    }
    if let Overlay::Search(s) = &app.overlay
        && !s.searching
        && !s.answered.is_empty()
    {
        prop_assert_eq!(
            s.answered.as_str(),
            s.input.text.trim(),
            "hits of an old query after {:?}",
            ev
        );
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn random_use_never_panics_and_keeps_list_and_detail_together(
        events in prop::collection::vec(event(), 1..80),
        paged in any::<bool>(),
    ) {
        // More than a page (200) of sessions, some of the time: paging answers can race.
        let mut d = Driver::new(if paged { 230 } else { 0 });
        d.draw();
        for ev in &events {
            d.apply(ev);
            if d.app.quit {
                break;
            }
            d.draw();
            check(&d, ev)?;
        }
        d.release(7);
        check(&d, &Ev::Release(7))?;
    }
}
