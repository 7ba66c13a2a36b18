//! The full-screen TUI. It consumes the runtime only; it never opens the database or an asset
//! file itself.
//!
//! Shape: keys become [`action::Action`]s through the one [`keymap`] table; [`app::App`]
//! changes state and returns storage work as data; a [`worker`](crate::tui::worker) thread
//! runs that work and sends results back; [`views`] draw the state. The loop waits on input and
//! results, drains what is queued, then draws once.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::Duration;

use crossterm::event::{self, Event};

use crate::runtime::{Location, Sessions};
use crate::tui::worker::{Done, Job, Reply, Worker};

pub mod action;
pub mod app;
pub mod demo;
pub mod filter;
pub mod input;
pub mod keymap;
pub mod markdown;
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
}

enum Msg {
    Input(Event),
    Done(Done),
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
    let rt = Sessions::open(&opts.location)?;
    let (tx, rx) = mpsc::channel::<Msg>();
    let worker = {
        let tx = tx.clone();
        Worker::spawn(rt, move |d| {
            let _ = tx.send(Msg::Done(d));
        })
    };
    let mut guard = terminal::Guard::enter()?;
    let size = guard.terminal.size()?;
    let cwd = std::env::current_dir().unwrap_or_else(|_| opts.location.root().to_path_buf());
    let (mut app, jobs) = app::App::new(app::AppOptions {
        theme: theme::Theme::from_env(),
        export_dir: cwd.clone(),
        workdir: cwd.display().to_string(),
        root: opts.location.root().display().to_string(),
        size: (size.width, size.height),
        now_ms: crate::session::now_ms(),
        resume: opts.resume,
    });
    let send = |jobs: Vec<Job>| jobs.into_iter().for_each(|j| worker.send(j));
    send(jobs);

    // Input on its own thread so the loop waits on one channel for input and results alike.
    let stop = Arc::new(AtomicBool::new(false));
    let input = {
        let stop = stop.clone();
        std::thread::Builder::new()
            .name("neocode-input".into())
            .spawn(move || {
                while !stop.load(Ordering::Relaxed) {
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
        let mut idle_ticks: u64 = 0;
        loop {
            if dirty {
                app.now_ms = crate::session::now_ms();
                guard.terminal.draw(|f| views::draw(f, &app))?;
                dirty = false;
                test_panic_hook();
            }
            // Idle: once a second ask whether another process wrote (the app reloads what is
            // shown if so); relative times are redrawn every 30 seconds.
            let first = match rx.recv_timeout(Duration::from_secs(1)) {
                Ok(m) => m,
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    idle_ticks += 1;
                    dirty = idle_ticks.is_multiple_of(30);
                    send(app.tick());
                    continue;
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => return Ok(()),
            };
            let mut next = Some(first);
            while let Some(msg) = next {
                // An unchanged poll answer changes nothing on screen: no redraw for it.
                let quiet_poll =
                    matches!(&msg, Msg::Done(d) if matches!(d.result, Ok(Reply::Version(_))));
                let jobs = match msg {
                    Msg::Input(Event::Key(k)) => app.on_key(k),
                    Msg::Input(Event::Mouse(m)) => app.on_mouse(m),
                    Msg::Input(Event::Paste(p)) => app.on_paste(&p),
                    Msg::Input(Event::Resize(w, h)) => app.on_resize(w, h),
                    Msg::Input(_) => Vec::new(),
                    Msg::Done(d) => app.on_done(d),
                };
                dirty |= !(quiet_poll && jobs.is_empty());
                send(jobs);
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
    drop(worker);
    result
}
