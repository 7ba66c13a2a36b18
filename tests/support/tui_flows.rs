//! Flows the TUI's tests share: a new conversation on a scripted model, what the user said
//! written to and read back from the store, files written under a home or workspace, and
//! `neocode demo --keep` (started, its conversation opened, the demo it kept found, opened and
//! resumed).

use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::Duration;

use neocode::runtime::{Location, Sessions};
use neocode::session::{AppendMeta, ListQuery, Message, NewMessage, Role, WorkspacePaths};
use neocode::testkit::scripted::{Reply, ScriptedServer};

use super::Env;
use super::pty::{Envs, Pty};

impl Env {
    /// A scripted model answering `replies`, and the TUI on it in a `rows` x `cols` terminal,
    /// in a new conversation whose status line names the model.
    pub(crate) fn chat(&self, replies: Vec<Reply>, rows: u16, cols: u16) -> (ScriptedServer, Pty) {
        let srv = ScriptedServer::start(replies).unwrap();
        let pty = self.compose(&srv, rows, cols);
        pty.wait_for("scripted-model");
        (srv, pty)
    }

    /// The sessions, and the id of the one the list shows first (the newest).
    pub(crate) fn newest(&self) -> (Sessions, String) {
        let rt = self.sessions();
        let id = rt.list(&ListQuery::default()).unwrap().items[0].id.clone();
        (rt, id)
    }
}

/// A scripted model's replies: each of `texts` in turn, as a plain answer.
pub(crate) fn answers(texts: &[&str]) -> Vec<Reply> {
    texts.iter().map(|t| Reply::text(t)).collect()
}

/// Writes `text` to `path`, creating the folders it needs.
pub(crate) fn write_file(path: impl AsRef<Path>, text: &str) {
    let path = path.as_ref();
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// The user's message `text`, appended to session `id`.
pub(crate) fn user_says(rt: &Sessions, id: &str, text: &str) {
    rt.append(
        id,
        &[NewMessage::text(Role::User, text)],
        &AppendMeta::default(),
    )
    .unwrap();
}

/// What the user said in session `id`, in order.
pub(crate) fn user_texts(sessions: &Sessions, id: &str) -> Vec<String> {
    sessions
        .messages(id, 0, i64::MAX)
        .unwrap()
        .iter()
        .filter(|m| m.role == Role::User)
        .map(Message::text)
        .collect()
}

/// `neocode demo --keep` in a 40 x 120 terminal, its temp folder under the test's and `envs`
/// in its environment, once its list shows; the folder it keeps the demo in.
pub(crate) fn demo_keep(env: &Env, envs: Envs) -> (Pty, PathBuf) {
    let tmp = env.home.parent().unwrap().join("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    let tmp_s = tmp.to_string_lossy().into_owned();
    let mut all = vec![("TMPDIR", tmp_s.as_str())];
    all.extend_from_slice(envs);
    let pty = Pty::spawn_args(&env.home, &["demo", "--keep"], &all, 40, 120);
    pty.wait_for("13 sessions");
    (pty, tmp)
}

/// [`demo_keep`], then a new conversation on the demo model.
pub(crate) fn demo_chat(env: &Env, envs: Envs) -> (Pty, PathBuf) {
    let (mut pty, tmp) = demo_keep(env, envs);
    pty.keys("n");
    pty.wait_for("demo model — scripted, no network");
    (pty, tmp)
}

/// [`demo_chat`] with the demo model at `pace_ms` a piece and `more` in its environment.
pub(crate) fn demo_conversation(env: &Env, pace_ms: &str, more: Envs) -> (Pty, PathBuf) {
    let mut envs = vec![("NEOCODE_DEMO_PACE_MS", pace_ms)];
    envs.extend_from_slice(more);
    demo_chat(env, &envs)
}

/// Waits for the approval card, lets the quiet moment pass, answers `y`.
pub(crate) fn approve(pty: &mut Pty, what: &str) -> String {
    let s = pty.wait_for(what);
    std::thread::sleep(Duration::from_millis(700));
    pty.keys("y");
    s
}

/// The one demo folder `neocode demo --keep` left under `tmp`.
fn kept_demo(tmp: &Path) -> PathBuf {
    let dirs: Vec<PathBuf> = std::fs::read_dir(tmp)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("neocode-demo-"))
        })
        .collect();
    assert_eq!(dirs.len(), 1, "one kept demo folder in {}", tmp.display());
    dirs[0].clone()
}

/// The demo a test kept, with one of its sessions picked by title; its folder is removed when
/// this is dropped.
pub(crate) struct Kept {
    dir: PathBuf,
    pub sessions: Sessions,
    pub home: PathBuf,
    pub ws: PathBuf,
    pub id: String,
}

impl Kept {
    /// The kept demo under `tmp`, at its session titled `title`.
    pub(crate) fn find(tmp: &Path, title: &str) -> Kept {
        Kept::find_by(tmp, |t| t == title)
    }

    /// The kept demo under `tmp`, at the first session whose title `fits`.
    pub(crate) fn find_by(tmp: &Path, fits: impl Fn(&str) -> bool) -> Kept {
        let dir = kept_demo(tmp);
        let ws = dir.join("workspace");
        let home = dir.join("home");
        let loc = Location {
            paths: WorkspacePaths::resolve(&home, &ws).unwrap(),
            home: home.clone(),
        };
        let sessions = Sessions::open(&loc).unwrap();
        let id = sessions
            .list(&ListQuery::default())
            .unwrap()
            .items
            .into_iter()
            .find(|s| fits(&s.title))
            .expect("a session with that title")
            .id;
        Kept {
            dir,
            sessions,
            home,
            ws,
            id,
        }
    }

    /// What the user said in the session, in order.
    pub(crate) fn user_texts(&self) -> Vec<String> {
        user_texts(&self.sessions, &self.id)
    }

    /// Asserts that nothing waits in the session's queue any more and that the user's
    /// messages are `texts`, in order.
    #[track_caller]
    pub(crate) fn delivered(&self, texts: &[&str]) {
        assert!(
            self.sessions.queued(&self.id).unwrap().is_empty(),
            "delivered"
        );
        assert_eq!(self.user_texts(), texts);
    }

    /// `neocode ARGS` on the kept demo's home and workspace, run to its end.
    pub(crate) fn neocode(&self, args: &[&str]) -> Output {
        std::process::Command::new(env!("CARGO_BIN_EXE_neocode"))
            .env("NEOCODE_HOME", &self.home)
            .arg("--workdir")
            .arg(&self.ws)
            .args(args)
            .output()
            .unwrap()
    }

    /// The session opened again in the TUI (the demo model kept, at full pace).
    pub(crate) fn resume(&self) -> Pty {
        Pty::spawn(
            &self.home,
            &self.ws,
            &["--resume", &self.id],
            &[("NEOCODE_DEMO_PACE_MS", "2")],
            40,
            120,
        )
    }
}

impl Drop for Kept {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
