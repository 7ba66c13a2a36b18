//! The full-screen TUI. It consumes the runtime only; it never opens the database or an asset
//! file itself.
//!
//! Shape: keys become [`action::Action`]s through the one [`keymap`] table; [`app::App`]
//! changes state and returns [`effect::Effect`]s as data; storage effects go to the
//! [`worker`] thread, turn effects to the agent ([`TurnLink`]); their answers come back as
//! [`Msg`]s on the one channel input arrives on. [`views`] draw the state into the
//! [`layout`] it settled on. The loop drains what is queued, then draws once; it wakes by
//! itself only when [`pace`] says (the next poll, a clock redraw, a streaming frame).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Sender};
use std::time::{Duration, Instant};

use crossterm::event::{self, Event};

use crate::runtime::agent::TurnEvent;
use crate::runtime::{Location, Sessions};
use crate::tui::effect::{Effect, TurnEffect};
use crate::tui::pace::Pace;
use crate::tui::worker::{Done, Reply, Worker};

pub mod action;
pub mod app;
pub mod composer;
pub mod demo;
pub mod effect;
pub mod filter;
pub mod input;
pub mod keymap;
pub mod layout;
pub mod markdown;
pub mod pace;
pub mod terminal;
pub mod theme;
pub mod transcript;
pub mod views;
pub mod worker;

/// How the TUI starts.
#[derive(Debug, Clone)]
pub struct TuiOptions {
    /// Home and workspace to act on.
    pub location: Location,
    /// Open directly in the conversation view of this session (a full, resolved id):
    /// `--resume <ID>` and `--continue`.
    pub resume: Option<String>,
    /// The workspace's sessions when the caller already opened them (to resolve `resume`),
    /// so the store is opened once.
    pub sessions: Option<Sessions>,
}

/// What the loop waits for: all of it arrives on one channel.
#[derive(Debug)]
pub enum Msg {
    /// A terminal event (from the input thread).
    Input(Event),
    /// A storage answer (from the worker thread).
    Storage(Done),
    /// An event of a running turn (from the agent).
    Turn(TurnEvent),
}

/// Where turn effects go. The live conversation connects the agent here: `dispatch` starts a
/// turn (or steers the running one) and the agent sends its events through [`events`]
/// (`Msg::Turn`). Until then no agent is attached to the TUI and every turn effect is refused
/// with a reason the status line shows.
///
/// [`events`]: TurnLink::events
pub struct TurnLink {
    events: Sender<Msg>,
}

impl TurnLink {
    pub fn new(events: Sender<Msg>) -> TurnLink {
        TurnLink { events }
    }

    /// The sender a turn's events go to.
    pub fn events(&self) -> Sender<Msg> {
        self.events.clone()
    }

    /// Carries out one turn effect.
    pub fn dispatch(&mut self, effect: &TurnEffect) -> Result<(), String> {
        match effect {
            TurnEffect::Start { .. } | TurnEffect::Command(_) => {
                Err("no model provider is connected to the TUI yet".into())
            }
        }
    }
}

/// Hands effects to the worker and the agent.
fn carry(app: &mut app::App, effects: Vec<Effect>, worker: &Worker, turns: &mut TurnLink) {
    for e in effects {
        match e {
            Effect::Storage(job) => worker.send(job),
            Effect::Turn(t) => {
                if let Err(why) = turns.dispatch(&t) {
                    app.turn_refused(&t, &why);
                }
            }
        }
    }
}

/// Test hook (`tests/tui_panic.rs`): `NEOCODE_TEST_PANIC=loop|thread` panics after a frame
/// is drawn, on the event loop or on another thread, to prove the terminal is restored.
fn test_panic_hook() {
    match std::env::var("NEOCODE_TEST_PANIC").as_deref() {
        Ok("loop") => panic!("test panic on the event loop"),
        Ok("thread") => {
            let _ = std::thread::spawn(|| panic!("test panic on a worker thread")).join();
        }
        _ => {}
    }
}

/// Runs the TUI until the user quits. Restores the terminal on every exit path, panics
/// included.
pub fn run(opts: TuiOptions) -> anyhow::Result<()> {
    use std::io::IsTerminal;
    if !std::io::stdin().is_terminal() || !std::io::stdout().is_terminal() {
        anyhow::bail!(
            "the full-screen TUI needs a terminal on standard input and output; for scripts use `neocode --list`, `neocode show <ID>` or `neocode --help`"
        );
    }
    let rt = match opts.sessions {
        Some(rt) => rt,
        None => Sessions::open(&opts.location)?,
    };
    let (tx, rx) = mpsc::channel::<Msg>();
    let worker = {
        let tx = tx.clone();
        Worker::spawn(rt, move |d| {
            let _ = tx.send(Msg::Storage(d));
        })
    };
    let mut turns = TurnLink::new(tx.clone());
    let mut guard = terminal::Guard::enter()?;
    let size = guard.terminal.size()?;
    let cwd = std::env::current_dir().unwrap_or_else(|_| opts.location.root().to_path_buf());
    let (mut app, effects) = app::App::new(app::AppOptions {
        theme: theme::Theme::from_env(),
        export_dir: cwd.clone(),
        workdir: cwd.display().to_string(),
        root: opts.location.root().display().to_string(),
        size: (size.width, size.height),
        now_ms: crate::session::now_ms(),
        resume: opts.resume,
    });
    carry(&mut app, effects, &worker, &mut turns);

    // Input on its own thread so the loop waits on one channel for input, storage answers
    // and turn events alike.
    let stop = Arc::new(AtomicBool::new(false));
    let input = {
        let stop = stop.clone();
        std::thread::Builder::new()
            .name("neocode-input".into())
            .spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    // Short, so the thread notices `stop` soon after the loop ends.
                    match event::poll(Duration::from_millis(100)) {
                        Ok(true) => match event::read() {
                            Ok(ev) => {
                                if tx.send(Msg::Input(ev)).is_err() {
                                    return;
                                }
                            }
                            Err(_) => return,
                        },
                        Ok(false) => {}
                        Err(_) => return,
                    }
                }
            })?
    };

    let result = (|| -> anyhow::Result<()> {
        let mut dirty = true;
        let mut pace = Pace::new(Instant::now());
        loop {
            let now = Instant::now();
            if pace.poll_due(now) {
                pace.polled(now);
                let effects = app.tick();
                carry(&mut app, effects, &worker, &mut turns);
            }
            dirty |= pace.clock_due(now);
            let animating = app.animating();
            if (dirty || animating) && pace.may_draw(now, animating) {
                app.now_ms = crate::session::now_ms();
                guard.terminal.draw(|f| views::draw(f, &app))?;
                dirty = false;
                pace.drew(now);
                test_panic_hook();
            }
            let wait = pace
                .deadline(dirty, animating)
                .saturating_duration_since(Instant::now());
            let first = match rx.recv_timeout(wait) {
                Ok(m) => m,
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    app.now_ms = crate::session::now_ms();
                    dirty |= app.expire_status(app.now_ms);
                    continue;
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => return Ok(()),
            };
            // Statuses are stamped with the time they are said, and expire by it.
            app.now_ms = crate::session::now_ms();
            dirty |= app.expire_status(app.now_ms);
            let mut next = Some(first);
            while let Some(msg) = next {
                // An unchanged poll answer changes nothing on screen: no redraw for it.
                let quiet_poll =
                    matches!(&msg, Msg::Storage(d) if matches!(d.result, Ok(Reply::Version(_))));
                let effects = match msg {
                    Msg::Input(Event::Key(k)) => app.on_key(k),
                    Msg::Input(Event::Mouse(m)) => app.on_mouse(m),
                    Msg::Input(Event::Paste(p)) => app.on_paste(&p),
                    Msg::Input(Event::Resize(w, h)) => app.on_resize(w, h),
                    Msg::Input(_) => Vec::new(),
                    Msg::Storage(d) => app.on_done(d),
                    Msg::Turn(ev) => app.on_turn(ev),
                };
                dirty |= !(quiet_poll && effects.is_empty());
                carry(&mut app, effects, &worker, &mut turns);
                if app.quit {
                    return Ok(());
                }
                next = rx.try_recv().ok();
            }
        }
    })();
    stop.store(true, Ordering::Relaxed);
    let _ = input.join();
    drop(guard);
    drop(turns);
    drop(worker);
    result
}
