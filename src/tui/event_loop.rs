//! The TUI's loop: it connects the agent, starts the worker and the input thread, then
//! drains what arrives, carries the effects out and draws.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Sender};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crossterm::event::{self, Event};

use super::msg::Msg;
use super::turns::TurnLink;
use super::{app, dialog, editor, keymap, live, terminal, theme, trust, views};
use crate::runtime::agent::Agent;
use crate::runtime::config::{Overrides, ProviderStatus, Settings};
use crate::runtime::extensions::commands::CustomCommands;
use crate::runtime::{Location, Sessions};
use crate::tui::effect::Effect;
use crate::tui::pace::Pace;
use crate::tui::worker::{Reply, Worker};

/// How the TUI starts.
#[derive(Debug, Clone)]
pub(crate) struct TuiOptions {
    /// Home and workspace to act on.
    pub location: Location,
    /// Open directly in the conversation view of this session (a full, resolved id):
    /// `--resume <ID>` and `--continue`.
    pub resume: Option<String>,
    /// The workspace's sessions when the caller already opened them (to resolve `resume`),
    /// so the store is opened once.
    pub sessions: Option<Sessions>,
    /// `neocode demo`: turns talk to the scripted in-process demo model, whatever is configured.
    pub demo: bool,
}

/// The agent for the TUI and what the status line says about it. A config that does not
/// parse leaves the TUI usable for browsing and says why nothing can be sent.
fn connect(sessions: &Sessions, loc: &Location, demo: bool) -> (Option<Agent>, live::AgentInfo) {
    let settings = match Settings::load(&loc.home, &Overrides::default()) {
        Ok(s) => s,
        Err(e) => {
            let info = live::AgentInfo {
                provider: Err(crate::tui::error::Failure::new(String::from(e))),
                ..live::AgentInfo::default()
            };
            return (None, info);
        }
    };
    let sandbox = crate::runtime::tools::sandbox::status(&settings.sandbox);
    let agent = if demo {
        Agent::demo(sessions.clone(), settings)
    } else {
        Agent::new(sessions.clone(), settings)
    };
    let settings = agent.settings();
    let info = live::AgentInfo {
        provider: match agent.provider_status() {
            ProviderStatus::Ready { model, .. } => Ok(model),
            ProviderStatus::Missing(m) => Err(crate::tui::error::Failure::new(m)),
        },
        window: None,
        policy: settings.approval,
        sandbox: if sandbox.is_enforced() {
            "on".into()
        } else {
            "off".into()
        },
        sandbox_on: sandbox.is_enforced(),
        mcp_failed: Vec::new(),
    };
    let configured = settings
        .context_window_known
        .then_some(settings.context_window);
    // Off the loop (see `Connecting`): the server is asked for its window once, here.
    let told = info.provider.is_ok().then(|| agent.told_window()).flatten();
    let info = live::AgentInfo {
        window: live::gauge_window(configured, told),
        ..info
    };
    (Some(agent), info)
}

/// The agent and its status line being made off the loop (see [`connect`]).
type Connecting = Option<std::thread::JoinHandle<(Option<Agent>, live::AgentInfo, CustomCommands)>>;

/// Takes the settings thread's result once it is there (`wait`: after it said so on the
/// channel, so the join only waits for the thread to exit). Whether anything changed on
/// screen.
fn connected(
    connecting: &mut Connecting,
    wait: bool,
    app: &mut app::App,
    turns: &mut TurnLink,
) -> bool {
    if !connecting.as_ref().is_some_and(|h| wait || h.is_finished()) {
        return false;
    }
    if let Some(Ok((agent, info, custom))) = connecting.take().map(JoinHandle::join) {
        turns.agent = agent;
        app.conv.set_agent(info);
        // A command file left out (a built-in's name, unreadable) is named once, at start.
        if let Some(first) = custom.warnings.first() {
            let more = match custom.warnings.len() {
                1 => String::new(),
                n => format!(" (and {} more)", n - 1),
            };
            app.status = Some(app::Status {
                text: format!("{}{more}", crate::sanitize::line(first)),
                error: true,
                at_ms: app.now_ms,
            });
        }
        app.conv.set_commands(custom);
    }
    true
}

/// Keys that may act on the agent (Enter sends a message, runs a slash command or opens a
/// conversation; Ctrl-R reruns interrupted calls): held until the settings are known, or they
/// would be refused as if no model were configured. Typing, moving and quitting never wait.
fn needs_agent(key: &event::KeyEvent) -> bool {
    use crossterm::event::{KeyCode, KeyModifiers};
    key.code == KeyCode::Enter
        || (key.code == KeyCode::Char('r') && key.modifiers.contains(KeyModifiers::CONTROL))
}

/// How long a conversation's first frame may wait for the settings, so the status line does
/// not say "no model configured" for the moment they take to load.
const STATUS_GRACE: Duration = Duration::from_millis(500);

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
            Effect::Clipboard(osc) => {
                // Between frames, on the terminal the frames go to.
                use std::io::Write;
                let mut out = std::io::stdout();
                if out
                    .write_all(osc.as_bytes())
                    .and_then(|()| out.flush())
                    .is_err()
                {
                    app.copy_failed();
                }
            }
        }
    }
}

/// Test hook (`tests/suite/tui/tui_panic.rs`): `NEOCODE_TEST_PANIC=loop|thread` panics after a
/// frame is drawn, on the event loop or on another thread, to prove the terminal is restored.
fn test_panic_hook() {
    match std::env::var("NEOCODE_TEST_PANIC").as_deref() {
        Ok("loop") => panic!("test panic on the event loop"),
        Ok("thread") => {
            let _ = std::thread::spawn(|| panic!("test panic on a worker thread")).join();
        }
        _ => {}
    }
}

/// Loading the settings probes the sandbox (it runs the helper once): off the loop, which
/// takes the result when the thread says it is done (or sees it finished). It also says so on
/// a channel of its own, which the first frame's grace blocks on.
fn spawn_connect(
    sessions: &Sessions,
    loc: &Location,
    tx: &Sender<Msg>,
    demo: bool,
) -> std::io::Result<(Connecting, mpsc::Receiver<()>)> {
    let (ready_tx, ready_rx) = mpsc::channel::<()>();
    let sessions = sessions.clone();
    let loc = loc.clone();
    let tx = tx.clone();
    let handle = std::thread::Builder::new()
        .name("neocode-connect".into())
        .spawn(move || {
            let (agent, info) = connect(&sessions, &loc, demo);
            let built_in: Vec<&str> = app::SLASH_COMMANDS.iter().map(|c| c.0).collect();
            let custom = crate::runtime::trust::custom_commands(&loc.home, loc.root(), &built_in);
            let out = (agent, info, custom);
            let _ = ready_tx.send(());
            let _ = tx.send(Msg::Connected);
            out
        })?;
    Ok((Some(handle), ready_rx))
}

/// Input on its own thread so the loop waits on one channel for input, storage answers and
/// turn events alike.
fn spawn_input(
    tx: Sender<Msg>,
    stop: Arc<AtomicBool>,
    pause: editor::InputPause,
) -> std::io::Result<std::thread::JoinHandle<()>> {
    std::thread::Builder::new()
        .name("neocode-input".into())
        .spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                // Another program (`$EDITOR`) has the terminal: its keys are not ours.
                if pause.paused.load(Ordering::SeqCst) {
                    pause.idle.store(true, Ordering::SeqCst);
                    std::thread::sleep(Duration::from_millis(10));
                    continue;
                }
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
        })
}

/// The app for this terminal and workspace, and its first work.
fn start_app(
    location: &Location,
    resume: Option<String>,
    size: (u16, u16),
) -> (app::App, Vec<Effect>) {
    let cwd = std::env::current_dir().unwrap_or_else(|_| location.root().to_path_buf());
    app::App::new(app::AppOptions {
        theme: theme::Theme::from_env(),
        export_dir: cwd.clone(),
        workdir: cwd.display().to_string(),
        root: location.root().display().to_string(),
        size,
        now_ms: crate::session::now_ms(),
        resume,
    })
}

/// Nothing arrived before the deadline: statuses expire and a held card answer takes effect
/// by the clock. Whether anything changed on screen.
fn clock_moved(app: &mut app::App, worker: &Worker, turns: &mut TurnLink) -> bool {
    let mut dirty = false;
    app.now_ms = crate::session::now_ms();
    dirty |= app.expire_status(app.now_ms);
    if app.answer_pending() {
        let effects = app.on_clock(app.now_ms);
        dirty = true;
        carry(app, effects, worker, turns);
    }
    dirty
}

/// A conversation (resumed, or opened at once) shows the agent's status from its first frame
/// when the settings come within the grace; else as soon as they come. Whether anything
/// changed on screen.
fn settings_grace(
    grace: &mut Option<Instant>,
    ready: &mpsc::Receiver<()>,
    connecting: &mut Connecting,
    app: &mut app::App,
    turns: &mut TurnLink,
) -> bool {
    let mut dirty = false;
    if let Some(until) = *grace
        && connecting.is_some()
        && app.screen == app::Screen::Conversation
    {
        // Blocks until the settings thread says it is done or the grace is over; then its
        // result is joined (the thread only has to return).
        let left = until.saturating_duration_since(Instant::now());
        if ready.recv_timeout(left).is_ok() {
            dirty |= connected(connecting, true, app, turns);
        }
        *grace = None;
    }
    dirty
}

/// Hands one message to the app; the work it asks for comes back.
fn deliver(
    msg: Msg,
    app: &mut app::App,
    connecting: &mut Connecting,
    turns: &mut TurnLink,
    dirty: &mut bool,
) -> Vec<Effect> {
    match msg {
        Msg::Input(Event::Key(k)) => app.on_key(k),
        Msg::Input(Event::Mouse(m)) => app.on_mouse(m),
        Msg::Input(Event::Paste(p)) => app.on_paste(&p),
        Msg::Input(Event::Resize(w, h)) => app.on_resize(w, h),
        Msg::Input(_) => Vec::new(),
        Msg::Storage(d) => app.on_done(d),
        Msg::Turn(ev) => app.on_turn(ev),
        Msg::Outcome(o) => app.on_outcome(o),
        Msg::Rules { session_id, rules } => app.on_rules(session_id, rules),
        // Sent as the thread's last act: the join waits only for it to exit.
        Msg::Connected => {
            *dirty |= connected(connecting, true, app, turns);
            Vec::new()
        }
    }
}

/// The trust screen when the workspace declares settings it is not trusted with (or that
/// changed since): the choice, and why trusting could not be recorded when it could not.
/// `None` when nothing needs an answer (a stat or two for a workspace without settings).
fn ask_trust(
    guard: &mut terminal::Guard,
    location: &Location,
) -> anyhow::Result<
    Option<(
        trust::TrustChoice,
        Option<crate::runtime::trust::TrustError>,
    )>,
> {
    use crate::runtime::trust as ws_trust;
    let admission = ws_trust::Admission::check(&location.home, location.root());
    if admission.uses_workspace() {
        return Ok(None);
    }
    let review = ws_trust::review_of(&location.home, &admission);
    let choice = trust::ask(&mut guard.terminal, &review, theme::Theme::from_env())?;
    let failed = match choice {
        trust::TrustChoice::Trust => ws_trust::trust_as_shown(&location.home, &review).err(),
        _ => None,
    };
    Ok(Some((choice, failed)))
}

/// Runs the TUI until the user quits. Restores the terminal on every exit path, panics
/// included.
pub(crate) fn run(opts: TuiOptions) -> anyhow::Result<()> {
    use std::io::IsTerminal;
    if !std::io::stdin().is_terminal() || !std::io::stdout().is_terminal() {
        anyhow::bail!(
            "the full-screen TUI needs a terminal on standard input and output; for scripts use `neocode --list`, `neocode show <ID>` or `neocode --help`"
        );
    }
    let sessions = match opts.sessions {
        Some(sessions) => sessions,
        None => Sessions::open(&opts.location)?,
    };
    let mut guard = terminal::Guard::enter()?;
    // Asked once, before anything runs: a workspace's settings are not used until trusted.
    let trusted = if opts.demo {
        None
    } else {
        match ask_trust(&mut guard, &opts.location)? {
            Some((trust::TrustChoice::Quit, _)) => return Ok(()),
            other => other,
        }
    };
    let (tx, rx) = mpsc::channel::<Msg>();
    let worker = {
        let tx = tx.clone();
        let sessions = sessions.clone();
        Worker::spawn(sessions, move |d| {
            let _ = tx.send(Msg::Storage(d));
        })
        .map_err(|e| anyhow::anyhow!("cannot start the storage thread: {e}"))?
    };
    let (mut connecting, ready_rx) = spawn_connect(&sessions, &opts.location, &tx, opts.demo)?;
    let mut turns = TurnLink::new(tx.clone());
    let size = guard.terminal.size()?;
    let (mut app, effects) = start_app(&opts.location, opts.resume, (size.width, size.height));
    first_status(&mut app, opts.demo, trusted.as_ref());
    carry(&mut app, effects, &worker, &mut turns);

    let stop = Arc::new(AtomicBool::new(false));
    let pause = editor::InputPause::default();
    let input = spawn_input(tx, stop.clone(), pause.clone())?;

    let result = event_loop(
        &mut app,
        &mut Loop {
            guard: &mut guard,
            worker: &worker,
            turns: &mut turns,
            connecting: &mut connecting,
            ready: &ready_rx,
            rx: &rx,
            pause: &pause,
            held: std::collections::VecDeque::new(),
        },
    );
    stop.store(true, Ordering::Relaxed);
    turns.shutdown();
    let _ = input.join();
    drop(guard);
    drop(turns);
    drop(worker);
    result
}

/// The status line the TUI opens with: the demo's hint, or what the trust question decided.
fn first_status(
    app: &mut app::App,
    demo: bool,
    trusted: Option<&(
        trust::TrustChoice,
        Option<crate::runtime::trust::TrustError>,
    )>,
) {
    if demo {
        app.status = Some(dialog::Status {
            text: "Demo model (scripted, no network): press n and type `fix the bug` or `hello`."
                .into(),
            error: false,
            at_ms: app.now_ms,
        });
    }
    if let Some((choice, failed)) = trusted {
        let (text, error) = trust::outcome_status(*choice, failed.as_ref());
        app.status = Some(dialog::Status {
            text,
            error,
            at_ms: app.now_ms,
        });
    }
}

/// What the event loop works with besides the app: the terminal, the storage worker, the
/// agent (and the thread still connecting it), the messages, and the input held until the
/// settings are known.
struct Loop<'a> {
    guard: &'a mut terminal::Guard,
    worker: &'a Worker,
    turns: &'a mut TurnLink,
    connecting: &'a mut Connecting,
    /// Says the settings are read (the status line may show them).
    ready: &'a mpsc::Receiver<()>,
    rx: &'a mpsc::Receiver<Msg>,
    /// Stops the input thread while `$EDITOR` has the terminal.
    pause: &'a editor::InputPause,
    /// Keys that need the agent, and every input after them, kept in order until the
    /// settings are known.
    held: std::collections::VecDeque<Msg>,
}

/// Draws when something changed (or a turn streams) and hands every message to the app,
/// until the user quits.
fn event_loop(app: &mut app::App, l: &mut Loop<'_>) -> anyhow::Result<()> {
    let mut dirty = true;
    // What waits to be drawn includes the user's input (drawn sooner while streaming).
    let mut typed = false;
    let mut pace = Pace::new(Instant::now());
    let mut grace = Some(Instant::now() + STATUS_GRACE);
    loop {
        dirty |= settings_grace(&mut grace, l.ready, l.connecting, app, l.turns);
        dirty |= connected(l.connecting, false, app, l.turns);
        let now = Instant::now();
        if pace.poll_due(now) {
            pace.polled(now);
            let effects = app.tick();
            carry(app, effects, l.worker, l.turns);
        }
        dirty |= pace.clock_due(now);
        let animating = app.animating();
        if (dirty || animating) && pace.may_draw(now, animating, typed) {
            app.now_ms = crate::session::now_ms();
            l.guard.terminal.draw(|f| views::draw(f, app))?;
            dirty = false;
            typed = false;
            pace.drew(now);
            test_panic_hook();
        }
        let mut wait = pace
            .deadline(dirty, animating, typed)
            .saturating_duration_since(Instant::now());
        if app.answer_pending() {
            // A card's answer takes effect after a quiet moment (see `conversation::cards`).
            wait = wait.min(Duration::from_millis(50));
        }
        let first = match l.rx.recv_timeout(wait) {
            Ok(m) => m,
            Err(mpsc::RecvTimeoutError::Timeout) => {
                dirty |= clock_moved(app, l.worker, l.turns);
                continue;
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => return Ok(()),
        };
        // Statuses are stamped with the time they are said, and expire by it.
        app.now_ms = crate::session::now_ms();
        dirty |= app.expire_status(app.now_ms);
        if drain(app, l, first, &mut dirty, &mut typed) {
            return Ok(());
        }
        if app.answer_pending() {
            let effects = app.on_clock(crate::session::now_ms());
            dirty = true;
            carry(app, effects, l.worker, l.turns);
        }
    }
}

/// Hands `first` and every message already waiting to the app, in order; true when the user
/// quit.
fn drain(
    app: &mut app::App,
    l: &mut Loop<'_>,
    first: Msg,
    dirty: &mut bool,
    typed: &mut bool,
) -> bool {
    let mut next = Some(first);
    while let Some(msg) = next {
        // An unchanged poll answer changes nothing on screen: no redraw for it.
        let quiet_poll =
            matches!(&msg, Msg::Storage(d) if matches!(d.result, Ok(Reply::Version(_))));
        *typed |= matches!(msg, Msg::Input(_));
        // A key that needs the agent waits for the settings, and so does every input after
        // it (kept in order); the loop goes on drawing and answering meanwhile. Ctrl-C is
        // never held: quitting must not depend on the settings.
        if let Msg::Input(Event::Key(k)) = &msg
            && l.connecting.is_some()
            && !keymap::is_ctrl_c(k)
            && (!l.held.is_empty() || needs_agent(k))
        {
            l.held.push_back(msg);
            next = l.rx.try_recv().ok();
            continue;
        }
        let effects = deliver(msg, app, l.connecting, l.turns, dirty);
        *dirty |= !(quiet_poll && effects.is_empty());
        carry(app, effects, l.worker, l.turns);
        if app.quit {
            return true;
        }
        if let Some(text) = app.conv.take_edit_request() {
            let edited = editor::edit(l.guard, l.pause, &text);
            app.draft_edited(edited);
            *dirty = true;
        }
        // Held input goes first once the settings are known.
        next = if l.connecting.is_none() {
            l.held.pop_front()
        } else {
            None
        }
        .or_else(|| l.rx.try_recv().ok());
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::scripted::ScriptedServer;

    /// A config that sets no `context_window`, a server whose `/props` tells 2,048: the gauge
    /// shows 2k, not "window unknown".
    #[test]
    fn the_status_line_shows_the_window_the_server_tells() {
        let dir = tempfile::tempdir().unwrap();
        let loc = Location::scratch(dir.path());
        let srv = ScriptedServer::start(vec![]).unwrap();
        srv.set_props(serde_json::json!({"default_generation_settings": {"n_ctx": 2048}}));
        std::fs::create_dir_all(&loc.home).unwrap();
        std::fs::write(
            loc.home.join("config.toml"),
            format!(
                "[provider]\nbase_url = \"{}\"\nmodel = \"m\"\n",
                srv.base_url()
            ),
        )
        .unwrap();
        let sessions = Sessions::open(&loc).unwrap();
        let (agent, info) = connect(&sessions, &loc, false);
        assert!(agent.is_some());
        assert_eq!(info.window, Some(2048));
        let line: String = live::status_spans(
            &info,
            (1000, false),
            0,
            (None, None),
            None,
            info.policy,
            theme::Theme::new(false),
        )
        .into_iter()
        .map(|p| p.text)
        .collect();
        assert!(line.contains(" 1k/2k "), "{line}");
        assert!(!line.contains("window unknown"), "{line}");
        // Nothing was sent to the model for it.
        assert_eq!(srv.request_count(), 0);
    }

    /// The commands the start thread finds reach the conversation; a file named like a
    /// built-in command is named on the status line.
    #[test]
    fn the_commands_found_at_start_reach_the_conversation_and_a_clash_is_said() {
        let dir = tempfile::tempdir().unwrap();
        let loc = Location::scratch(dir.path());
        let cmds = loc.home.join("commands");
        std::fs::create_dir_all(&cmds).unwrap();
        std::fs::write(cmds.join("explain.md"), "Explain $ARGUMENTS simply.").unwrap();
        std::fs::write(cmds.join("help.md"), "Mine").unwrap();
        let sessions = Sessions::open(&loc).unwrap();
        let (tx, _rx) = mpsc::channel();
        let (mut connecting, ready) = spawn_connect(&sessions, &loc, &tx, true).unwrap();
        ready.recv().unwrap();
        let (mut app, _) = start_app(&loc, None, (100, 30));
        let mut turns = TurnLink::new(tx);
        assert!(connected(&mut connecting, true, &mut app, &mut turns));
        assert_eq!(app.conv.custom_commands().names(), ["/explain"]);
        let status = app
            .status
            .as_ref()
            .map(|s| s.text.clone())
            .unwrap_or_default();
        assert!(
            status.contains("help.md: /help is a built-in command"),
            "{status}"
        );
    }
}
