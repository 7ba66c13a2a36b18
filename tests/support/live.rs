//! The real TUI (and the real binary) on a scripted model server: the environment that points
//! neocode at the server, the TUI started on it in a pty and waited for, and the binary run
//! beside it on the same server.

use std::process::{Command, Output};

use neocode::testkit::scripted::ScriptedServer;

use super::Env;
use super::pty::Pty;

/// The environment pointing neocode at the scripted model server at `base`.
pub(crate) fn model_env(base: &str) -> [(&'static str, &str); 3] {
    [
        ("NEOCODE_BASE_URL", base),
        ("NEOCODE_MODEL", "scripted-model"),
        ("NEOCODE_API_KEY", ""),
    ]
}

impl Env {
    /// The TUI (`neocode <args>` in the workspace) on `srv`'s model in a `rows` x `cols` pty.
    pub(crate) fn tui(&self, srv: &ScriptedServer, args: &[&str], rows: u16, cols: u16) -> Pty {
        let base = srv.base_url();
        Pty::spawn(
            &self.home,
            &self.workdir,
            args,
            &model_env(&base),
            rows,
            cols,
        )
    }

    /// The TUI on `srv`'s model in a new conversation, opened from the empty list.
    pub(crate) fn compose(&self, srv: &ScriptedServer, rows: u16, cols: u16) -> Pty {
        let mut pty = self.tui(srv, &[], rows, cols);
        pty.wait_for("0 sessions");
        pty.keys("n");
        pty
    }

    /// The binary on `srv`'s model, in the workspace on this home (colour left as it is).
    pub(crate) fn neocode_on(&self, srv: &ScriptedServer) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_neocode"));
        c.env("NEOCODE_HOME", &self.home);
        for (k, v) in model_env(&srv.base_url()) {
            c.env(k, v);
        }
        c.arg("--workdir").arg(&self.workdir);
        c
    }

    /// `neocode <args>` on `srv`'s model, run to its end.
    pub(crate) fn run_on(&self, srv: &ScriptedServer, args: &[&str]) -> Output {
        self.neocode_on(srv).args(args).output().unwrap()
    }
}
