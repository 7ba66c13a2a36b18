//! The list filter (`/`) as a user meets it: it searches every session (not only the loaded
//! pages) without paging the whole list in, shows the best matches with the count of all,
//! and the latest text typed wins whatever order the storage thread's answers arrive in.

use crate::support::Env;
use crate::support::text::has;
use std::sync::mpsc;
use std::time::Duration;

use crate::support::tui::options;
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use neocode::runtime::Sessions;
use neocode::session::NewSession;
use neocode::tui::app::{App, PAGE, run_inline};
use neocode::tui::effect::Effect;
use neocode::tui::filter::{FILTER_ROWS, FilterState};
use neocode::tui::views;
use neocode::tui::worker::{self, Done, Job, Reply, Request, Worker};

struct H {
    app: App,
    rt: Sessions,
    _env: Env,
}

/// A workspace of `titles` (the first is the oldest session) and the app after its first
/// page arrived.
fn with_sessions(titles: &[String]) -> H {
    let env = Env::new();
    let loc = env.location();
    let rt = env.sessions();
    for t in titles {
        rt.new_session(NewSession {
            title: t.clone(),
            ..NewSession::default()
        })
        .unwrap();
    }
    let root = loc.root().display().to_string();
    let (mut app, jobs) = App::new(options(&root, env.tmp.path(), (120, 30), 1_748_779_200_000));
    run_inline(&mut app, &rt, jobs);
    H { app, rt, _env: env }
}

impl H {
    /// The storage jobs a key press asks for.
    fn press(&mut self, c: KeyCode) -> Vec<Job> {
        self.app
            .on_key(KeyEvent::new(c, KeyModifiers::NONE))
            .into_iter()
            .filter_map(|e| match e {
                Effect::Storage(j) => Some(j),
                Effect::Turn(_) | Effect::Clipboard(_) => None,
            })
            .collect()
    }

    fn type_and_run(&mut self, s: &str) {
        for c in s.chars() {
            let jobs = self.press(KeyCode::Char(c));
            run_inline(
                &mut self.app,
                &self.rt,
                jobs.into_iter().map(Effect::from).collect(),
            );
        }
    }

    fn answer(&mut self, jobs: &[Job]) {
        for j in jobs {
            let result = worker::handle(&self.rt, j.request.clone());
            let more = self.app.on_done(Done {
                token: j.token,
                result,
            });
            run_inline(&mut self.app, &self.rt, more);
        }
    }

    fn titles(&self) -> Vec<String> {
        let l = &self.app.browse.list;
        l.visible.iter().map(|r| l.title(r).to_string()).collect()
    }

    fn screen(&self) -> String {
        views::draw_to_text(&self.app)
    }
}

fn numbered(n: usize) -> Vec<String> {
    (0..n).map(|i| format!("Session number {i}")).collect()
}

#[test]
fn the_filter_finds_an_unloaded_session_without_paging_the_list_in() {
    let mut titles = vec!["Ancient walrus migration".to_string()];
    titles.extend(numbered(2 * PAGE));
    let mut h = with_sessions(&titles);
    assert_eq!(h.app.browse.list.rows.len(), PAGE, "first page only");
    h.press(KeyCode::Char('/'));
    h.type_and_run("walrus");
    assert_eq!(h.titles(), ["Ancient walrus migration"]);
    assert_eq!(
        h.app.browse.list.current().unwrap().title,
        "Ancient walrus migration"
    );
    assert_eq!(
        h.app.browse.list.rows.len(),
        PAGE,
        "no page was loaded to filter"
    );
    has(&h.screen(), "1 match");
    // The detail pane follows the match.
    assert_eq!(
        h.app.browse.detail.as_ref().map(|d| d.id.clone()),
        h.app.browse.list.current().map(|s| s.id.clone())
    );
    // Back to the whole list; the storage thread lets go of the text it kept.
    let jobs = h.press(KeyCode::Esc);
    assert!(
        jobs.iter()
            .any(|j| matches!(j.request, Request::FilterClosed)),
        "{jobs:?}"
    );
    run_inline(
        &mut h.app,
        &h.rt,
        jobs.into_iter().map(Effect::from).collect(),
    );
    assert_eq!(h.app.browse.list.visible.len(), PAGE);
    assert_eq!(h.titles()[0], format!("Session number {}", 2 * PAGE - 1));
}

#[test]
fn many_matches_show_the_best_with_the_count_of_all() {
    let n = FILTER_ROWS + 20;
    let mut h = with_sessions(&numbered(n));
    h.press(KeyCode::Char('/'));
    h.type_and_run("session");
    assert_eq!(h.app.browse.list.visible.len(), FILTER_ROWS);
    assert_eq!(h.app.browse.list.matched, n);
    let screen = h.screen();
    has(&screen, &format!("{n} matches, best {FILTER_ROWS} shown"));
    // Equal scores keep activity order: the newest first.
    assert_eq!(h.titles()[0], format!("Session number {}", n - 1));
    // Typing on narrows to the one session.
    h.type_and_run(" number 7");
    let mut got = h.titles();
    got.sort();
    assert!(got.contains(&"Session number 7".to_string()), "{got:?}");
    assert!(
        got.iter().all(|t| t.contains('7')),
        "every match holds a 7: {got:?}"
    );
}

#[test]
fn the_latest_filter_text_wins_whatever_order_the_answers_come_in() {
    let mut h = with_sessions(&[
        "walrus tusks".to_string(),
        "wax drum".to_string(),
        "otter den".to_string(),
    ]);
    h.press(KeyCode::Char('/'));
    let first = h.press(KeyCode::Char('w'));
    let second = h.press(KeyCode::Char('a'));
    let third = h.press(KeyCode::Char('l'));
    assert!(
        first
            .iter()
            .chain(&second)
            .chain(&third)
            .all(|j| !matches!(j.request, Request::List { .. })),
        "typing never pages the list in"
    );
    // The newest answer arrives first, the older ones after it: they change nothing.
    h.answer(&third);
    assert_eq!(h.titles(), ["walrus tusks"]);
    h.answer(&first);
    h.answer(&second);
    assert_eq!(h.titles(), ["walrus tusks"], "stale answers are dropped");
    assert!(!h.app.browse.list.filtering);

    // An older answer arriving while a newer text is still being matched is dropped too.
    let newer = h.press(KeyCode::Backspace);
    h.answer(&first);
    assert_eq!(h.titles(), ["walrus tusks"]);
    assert!(h.app.browse.list.filtering, "still waiting for 'wa'");
    h.answer(&newer);
    let mut got = h.titles();
    got.sort();
    assert_eq!(got, ["walrus tusks", "wax drum"]);
}

#[test]
fn a_filter_stops_when_a_newer_text_is_queued() {
    let h = with_sessions(&numbered(10));
    let mut state = FilterState::default();
    assert_eq!(state.run(&h.rt, "session", &|| true).unwrap(), None);
    let r = state.run(&h.rt, "session", &|| false).unwrap().unwrap();
    assert_eq!((r.rows.len(), r.matched), (10, 10));
}

#[test]
fn matching_split_over_threads_answers_what_one_thread_answers() {
    // Titles with repeats, so equal scores have to keep activity order across the chunks.
    let titles: Vec<String> = (0..700)
        .map(|i| {
            format!(
                "{} task {}",
                ["fix the parser", "add paging", "port to clap"][i % 3],
                i % 50
            )
        })
        .collect();
    let h = with_sessions(&titles);
    let mut one = FilterState::new(1, usize::MAX);
    let mut three = FilterState::new(3, 0);
    for q in [
        "", "pa", "par", "parser 4", "clap", "task 1", "zzz", "!paging",
    ] {
        let a = one.run(&h.rt, q, &|| false).unwrap().unwrap();
        let b = three.run(&h.rt, q, &|| false).unwrap().unwrap();
        assert_eq!(a.matched, b.matched, "{q:?}");
        let ids = |r: &neocode::tui::filter::FilterResult| {
            r.rows.iter().map(|s| s.id.clone()).collect::<Vec<_>>()
        };
        assert_eq!(ids(&a), ids(&b), "{q:?}");
        assert_eq!(a.hl, b.hl, "{q:?}");
        if q == "par" {
            assert!(
                a.matched > 200 && a.rows.len() == a.matched,
                "{}",
                a.matched
            );
        }
    }
    // A stale answer from any thread stops the whole match.
    assert_eq!(three.run(&h.rt, "task", &|| true).unwrap(), None);
}

#[test]
fn the_storage_thread_answers_the_last_text_of_a_burst() {
    let h = with_sessions(&numbered(300));
    let (tx, rx) = mpsc::channel();
    let w = Worker::spawn(h.rt, move |d| {
        let _ = tx.send(d);
    })
    .unwrap();
    let texts = ["s", "se", "ses", "sess", "session 29"];
    for (i, t) in texts.iter().enumerate() {
        w.send(Job {
            token: i as u64 + 1,
            request: Request::Filter {
                text: t.to_string(),
            },
        });
    }
    let mut last = None;
    while let Ok(d) = rx.recv_timeout(Duration::from_secs(10)) {
        let token = d.token;
        if let Ok(Reply::Filter { text, result }) = d.result
            && token == texts.len() as u64
        {
            last = Some((text, result));
            break;
        }
    }
    let (text, result) = last.expect("the last text is answered");
    assert_eq!(text, "session 29");
    let result = result.expect("the last text is never superseded");
    assert!(
        result.rows.iter().any(|s| s.title == "Session number 29"),
        "{:?}",
        result.rows.iter().map(|s| &s.title).collect::<Vec<_>>()
    );
}

/// `branch:NAME` in the filter keeps the sessions started on that branch (the rest of the
/// text still matches fuzzily), and the Info tab shows a session's branch.
#[test]
fn branch_in_the_filter_keeps_the_sessions_of_that_branch() {
    let env = Env::new();
    let loc = env.location();
    let rt = env.sessions();
    for (title, branch) in [
        ("Fix login redirect", Some("feature/login")),
        ("Login copy tweaks", Some("main")),
        ("Refactor login form", Some("feature/login")),
        ("Unrelated chores", None),
    ] {
        rt.new_session(NewSession {
            title: title.into(),
            branch: branch.map(str::to_string),
            ..NewSession::default()
        })
        .unwrap();
    }
    let root = loc.root().display().to_string();
    let (mut app, jobs) = App::new(options(&root, env.tmp.path(), (120, 30), 1_748_779_200_000));
    run_inline(&mut app, &rt, jobs);
    let mut h = H { app, rt, _env: env };
    h.press(KeyCode::Char('/'));
    h.type_and_run("branch:feature/login");
    let mut titles = h.titles();
    titles.sort();
    assert_eq!(titles, ["Fix login redirect", "Refactor login form"]);
    h.type_and_run(" redir");
    assert_eq!(h.titles(), ["Fix login redirect"]);
    // A wide list has a branch column; a narrow one keeps the title's room.
    let fx = h.app.on_resize(200, 30);
    run_inline(&mut h.app, &h.rt, fx);
    let s = h.screen();
    let row = s
        .lines()
        .find(|l| l.contains("○ Fix login redirect"))
        .unwrap();
    assert!(row.contains("feature/login"), "{s}");
    assert!(s.contains("branch"), "{s}");
    let fx = h.app.on_resize(120, 30);
    run_inline(&mut h.app, &h.rt, fx);
    // Info shows it.
    h.press(KeyCode::Enter);
    let jobs = h.press(KeyCode::Tab);
    h.answer(&jobs);
    for _ in 0..4 {
        let jobs = h.press(KeyCode::Char(']'));
        h.answer(&jobs);
    }
    let s = h.screen();
    assert!(s.contains("branch") && s.contains("feature/login"), "{s}");
}
