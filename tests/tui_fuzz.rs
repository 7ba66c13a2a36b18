//! Random use of the real app state on a real store: key presses (every bound key, text,
//! control keys), mouse clicks and wheel, and resizes down to 1x1, each followed by a frame.
//! The app never panics, every frame draws, and in the browse view the detail pane always
//! shows the selected session.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers, MouseButton, MouseEvent, MouseEventKind};
use neocode::runtime::{Location, Sessions};
use neocode::session::{AppendMeta, ListQuery, NewMessage, NewSession, Role, WorkspacePaths};
use neocode::tui::app::{App, AppOptions, Overlay, Screen, run_inline};
use neocode::tui::effect::Effect;
use neocode::tui::theme::Theme;
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
    ]
}

struct Driver {
    app: App,
    rt: Sessions,
    /// Another neocode process on the same workspace.
    other: Sessions,
    _tmp: tempfile::TempDir,
}

impl Driver {
    fn new() -> Driver {
        let tmp = tempfile::tempdir().unwrap();
        let home = tmp.path().join("home");
        let ws = tmp.path().join("ws");
        let export = tmp.path().join("out");
        std::fs::create_dir_all(&ws).unwrap();
        std::fs::create_dir_all(&export).unwrap();
        let loc = Location {
            paths: WorkspacePaths::resolve(&home, &ws).unwrap(),
            home,
        };
        let rt = Sessions::open(&loc).unwrap();
        demo::load_into(&rt, neocode::session::now_ms()).unwrap();
        let root = loc.root().display().to_string();
        let (app, jobs) = App::new(AppOptions {
            theme: Theme::new(true),
            export_dir: export,
            workdir: root.clone(),
            root,
            size: (120, 35),
            now_ms: neocode::session::now_ms(),
            resume: None,
        });
        let other = Sessions::open(&loc).unwrap();
        let mut d = Driver {
            app,
            rt,
            other,
            _tmp: tmp,
        };
        d.run(jobs);
        d
    }

    fn run(&mut self, effects: Vec<Effect>) {
        run_inline(&mut self.app, &self.rt, effects);
    }

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

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn random_use_never_panics_and_keeps_list_and_detail_together(
        events in prop::collection::vec(event(), 1..80)
    ) {
        let mut d = Driver::new();
        d.draw();
        for ev in &events {
            d.apply(ev);
            if d.app.quit {
                break;
            }
            d.draw();
            if d.app.screen == Screen::Browse && matches!(d.app.overlay, Overlay::None) {
                let selected = d.app.list.current().map(|s| s.id.clone());
                let shown = d.app.detail.as_ref().map(|x| x.id.clone());
                prop_assert_eq!(selected, shown, "after {:?}", ev);
            }
        }
    }
}
