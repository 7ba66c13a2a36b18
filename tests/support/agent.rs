//! The workspace the agent tests run turns in: a home whose config retries fast and times out
//! a silent stream quickly, a workspace beside it, and agents built as a new process builds
//! them (pointed at a scripted model server on 127.0.0.1).

use std::process::{Command, Stdio};
use std::time::Duration;

use neocode::runtime::agent::{Agent, Target, TurnCommand, TurnEvent, TurnRequest, Watched};
use neocode::runtime::config::{Overrides, Settings};
use neocode::runtime::tools::CancelFlag;
use neocode::testkit::scripted::{Reply, ScriptedServer};
use serde_json::Value;

use super::env;

/// The one [`env::Env`] with a config for fast turns and the key the agents send.
pub(crate) struct Env {
    base: env::Env,
    /// The API key the agents send; tests check it never lands under the home.
    pub key: &'static str,
}

impl std::ops::Deref for Env {
    type Target = env::Env;

    fn deref(&self) -> &env::Env {
        &self.base
    }
}

impl Env {
    /// `config` follows the `[provider]` table of the config file (it may open other tables).
    pub(crate) fn new(key: &'static str, config: &str) -> Env {
        Env {
            base: env::Env::with_config(config),
            key,
        }
    }

    /// This env and a scripted model server on 127.0.0.1 answering with `replies` in order.
    pub(crate) fn with_server(self, replies: Vec<Reply>) -> (Env, ScriptedServer) {
        let srv = ScriptedServer::start(replies).expect("starting the scripted server");
        (self, srv)
    }

    /// A fresh agent over a fresh store handle, as a new process builds it.
    pub(crate) fn agent(&self, srv: &ScriptedServer) -> Agent {
        Agent::new(self.sessions(), self.settings(srv))
    }

    /// The settings a new process loads, pointed at `srv`.
    pub(crate) fn settings(&self, srv: &ScriptedServer) -> Settings {
        let url = srv.base_url();
        let key = self.key;
        let env = move |k: &str| match k {
            "NEOCODE_BASE_URL" => Some(url.clone()),
            "NEOCODE_MODEL" => Some("test-model".to_string()),
            "NEOCODE_API_KEY" => Some(key.to_string()),
            _ => None,
        };
        Settings::load_with(&self.home, &Overrides::default(), &env).unwrap()
    }

    /// The neocode binary in the workspace, on this home, its standard input closed and no model
    /// settings of the caller's environment let in: pointed at `srv` (as the test model, with
    /// this env's key) when one is given.
    pub(crate) fn cmd(&self, srv: Option<&ScriptedServer>, args: &[&str]) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_neocode"));
        c.args(args)
            .current_dir(&self.workdir)
            .env("NEOCODE_HOME", &self.home)
            .env_remove("OPENAI_API_KEY")
            .env_remove("NEOCODE_BASE_URL")
            .env_remove("NEOCODE_MODEL")
            .env_remove("NEOCODE_API_KEY")
            .stdin(Stdio::null());
        if let Some(s) = srv {
            c.env("NEOCODE_BASE_URL", s.base_url())
                .env("NEOCODE_MODEL", "test-model")
                .env("NEOCODE_API_KEY", self.key);
        }
        c
    }
}

/// The first `tool` message of a request body the scripted server recorded.
pub(crate) fn tool_message(body: &Value) -> &Value {
    body["messages"]
        .as_array()
        .expect("the request has messages")
        .iter()
        .find(|m| m["role"] == "tool")
        .unwrap_or_else(|| panic!("no tool message in {body:#}"))
}

/// The text of the first `tool` message of request `n` (from 0) the scripted server recorded.
pub(crate) fn tool_result_in(srv: &ScriptedServer, n: usize) -> String {
    tool_message(&srv.requests()[n].json())["content"]
        .as_str()
        .unwrap()
        .to_string()
}

/// Cancels `flag` after `after`, from a thread of its own (joined by the caller or not).
pub(crate) fn cancel_after(flag: &CancelFlag, after: Duration) -> std::thread::JoinHandle<()> {
    let flag = flag.clone();
    std::thread::spawn(move || {
        std::thread::sleep(after);
        flag.cancel();
    })
}

/// Reads a turn's (or a plan run's) events until `Finished`, answering each with `answer`.
pub(crate) fn drive(
    h: &Watched,
    mut answer: impl FnMut(&TurnEvent) -> Option<TurnCommand>,
) -> Vec<TurnEvent> {
    let mut out = Vec::new();
    loop {
        let e = h
            .events
            .recv_timeout(Duration::from_secs(30))
            .expect("the turn produced no event for 30 s");
        if let Some(c) = answer(&e) {
            h.commands.send(c).unwrap();
        }
        let done = matches!(e, TurnEvent::Finished { .. });
        out.push(e);
        if done {
            return out;
        }
    }
}

/// Starts a turn on `target` with `prompt` and the default limits, watching its events.
pub(crate) fn watch(agent: &Agent, target: Target, prompt: &str) -> Watched {
    agent
        .watch(
            target,
            TurnRequest {
                prompt: Some(prompt.into()),
                ..TurnRequest::default()
            },
        )
        .unwrap()
}
