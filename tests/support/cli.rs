//! Shared set-up of the command-line tests: the one [`Env`] populated through the library,
//! and the real binary pointed at it.

use std::path::Path;

use assert_cmd::Command;
use neocode::session::{
    AppendMeta, NewMessage, NewSession, Plan, Role, StateUpdate, Step, StepFailure, StepStatus,
    StepUpdate, ToolCall, Usage,
};

use super::Env;

/// The ids of a `--list --json` answer, in its order.
pub(crate) fn list_ids(list: &serde_json::Value) -> Vec<&str> {
    list.as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap())
        .collect()
}

/// Sets the plan of session `id`.
pub(crate) fn set_plan(rt: &neocode::runtime::Sessions, id: &str, plan: Plan) {
    rt.update_state(
        id,
        &StateUpdate {
            plan: neocode::session::Change::Set(plan),
            ..StateUpdate::default()
        },
    )
    .unwrap();
}

/// Hostile text: OSC title change with BEL, CSI clear screen, 8-bit CSI, bidi override.
pub(crate) const HOSTILE: &str = "evil\x1b]0;pwned\x07 \x1b[2J\u{9b}31m \u{202e}desrever";

/// Bytes that must never reach stdout raw.
pub(crate) fn assert_harmless(stdout: &[u8]) {
    let s = String::from_utf8_lossy(stdout);
    for (bad, name) in [
        ('\x1b', "ESC"),
        ('\x07', "BEL"),
        ('\u{9b}', "C1 CSI"),
        ('\u{202e}', "RLO"),
        ('\u{E000}', "snippet marker"),
        ('\u{E001}', "snippet marker"),
    ] {
        assert!(!s.contains(bad), "raw {name} in output:\n{s}");
    }
}

/// The one [`Env`], its home made (empty), populated through the library and driven
/// through the real binary.
pub(crate) struct Ws(Env);

impl std::ops::Deref for Ws {
    type Target = Env;

    fn deref(&self) -> &Env {
        &self.0
    }
}

impl Ws {
    pub(crate) fn new() -> Ws {
        let env = Env::new();
        std::fs::create_dir_all(&env.home).unwrap();
        Ws(env)
    }

    /// The real binary on this home and workspace, colour forced off by the pipe.
    pub(crate) fn cmd(&self) -> Command {
        self.cmd_in(&self.workdir)
    }

    pub(crate) fn cmd_in(&self, workdir: &Path) -> Command {
        let mut c = Command::cargo_bin("neocode").unwrap();
        c.env("NEOCODE_HOME", &self.home)
            .env_remove("NO_COLOR")
            .arg("--workdir")
            .arg(workdir);
        c
    }

    /// A new empty session titled `title`, on openai's `model`, in this workspace.
    fn titled(&self, title: &str, model: &str) -> neocode::session::SessionHeader {
        self.sessions()
            .new_session(NewSession {
                title: title.into(),
                provider: "openai".into(),
                model: model.into(),
                workdir: self.workdir.to_string_lossy().into(),
                ..NewSession::default()
            })
            .unwrap()
    }

    /// A plain session with `n` user/assistant exchanges.
    pub(crate) fn session(&self, title: &str, n: usize) -> String {
        let rt = self.sessions();
        let h = self.titled(title, "gpt-test");
        for i in 0..n {
            rt.append(
                &h.id,
                &[
                    NewMessage::text(Role::User, format!("question {i} about {title}")),
                    NewMessage {
                        usage: Usage {
                            input_tokens: 100,
                            output_tokens: 10,
                        },
                        ..NewMessage::text(Role::Assistant, format!("answer {i}"))
                    },
                ],
                &AppendMeta::default(),
            )
            .unwrap();
        }
        h.id
    }

    /// A rich session: plan with a completed and a failed step, a tool call and its result,
    /// an asset, token usage of 12,345 in / 678 out.
    pub(crate) fn rich_session(&self, title: &str) -> String {
        let rt = self.sessions();
        let h = self.titled(title, "gpt-rich");
        let plan = Plan {
            steps: vec![
                step("read", "Read the code", &[]),
                step("fix", "Fix the bug", &["read"]),
                step("test", "Run the tests", &["fix"]),
            ],
        };
        set_plan(&rt, &h.id, plan);
        rt.append(
            &h.id,
            &[
                NewMessage::text(Role::User, "Please fix the flaky login test"),
                NewMessage {
                    role: Some(Role::Assistant),
                    parts: vec![neocode::session::Part::text("Let me look.")],
                    tool_calls: vec![ToolCall {
                        id: "call_1".into(),
                        name: "read_file".into(),
                        arguments: r#"{"path":"src/login.rs"}"#.into(),
                    }],
                    usage: Usage {
                        input_tokens: 12_000,
                        output_tokens: 600,
                    },
                    ..NewMessage::default()
                },
                NewMessage::tool_result("call_1", "fn login() { sleep(1) }", false),
                NewMessage {
                    usage: Usage {
                        input_tokens: 345,
                        output_tokens: 78,
                    },
                    ..NewMessage::text(Role::Assistant, "The sleep makes it flaky; removed it.")
                },
            ],
            &AppendMeta::default(),
        )
        .unwrap();
        rt.step_update(
            &h.id,
            "read",
            &StepUpdate::Status {
                status: StepStatus::Completed,
            },
        )
        .unwrap();
        rt.step_update(
            &h.id,
            "fix",
            &StepUpdate::Error {
                error: StepFailure {
                    error_type: "ToolError".into(),
                    message: "patch did not apply".into(),
                    traceback: None,
                },
            },
        )
        .unwrap();
        rt.step_update(
            &h.id,
            "fix",
            &StepUpdate::Status {
                status: StepStatus::Failed,
            },
        )
        .unwrap();
        rt.save_asset(&h.id, "image/png", b"\x89PNG fake image bytes")
            .unwrap();
        h.id
    }
}

fn step(id: &str, title: &str, deps: &[&str]) -> Step {
    Step {
        id: id.into(),
        title: title.into(),
        depends_on: deps.iter().map(ToString::to_string).collect(),
    }
}

/// Stdout of a successful run.
pub(crate) fn ok_stdout(cmd: &mut Command) -> String {
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "exit {:?}\nstdout: {}\nstderr: {}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// Parsed JSON stdout of a successful run.
pub(crate) fn ok_json(cmd: &mut Command) -> serde_json::Value {
    let s = ok_stdout(cmd);
    serde_json::from_str(&s).unwrap_or_else(|e| panic!("not JSON ({e}):\n{s}"))
}

/// (exit code, stdout, stderr) of a failing run.
pub(crate) fn fail(cmd: &mut Command) -> (i32, String, String) {
    let out = cmd.output().unwrap();
    assert!(
        !out.status.success(),
        "expected failure, got success: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}
