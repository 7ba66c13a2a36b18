//! The TUI's app as the tests open it: no colour, no session to resume (callers override
//! fields with `..options(..)`), and driven by keys ([`Keys`]).

use std::path::Path;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use neocode::runtime::config::ApprovalPolicy;
use neocode::tui::app::{ANSWER_AFTER_MS, ANSWER_BEFORE_MS, App, AppOptions};
use neocode::tui::effect::Effect;
use neocode::tui::live::AgentInfo;
use neocode::tui::theme::Theme;

/// Options for an app on the workspace `root` (also the workdir new sessions record), writing
/// exports to `export_dir`, drawn at `size`, with its clock at `now_ms`.
pub(crate) fn options(root: &str, export_dir: &Path, size: (u16, u16), now_ms: i64) -> AppOptions {
    AppOptions {
        theme: Theme::new(false),
        export_dir: export_dir.to_path_buf(),
        workdir: root.to_string(),
        root: root.to_string(),
        size,
        now_ms,
        resume: None,
    }
}

/// [`options`] resuming session `id`: the app, and the jobs it starts with.
pub(crate) fn resumed(
    root: &str,
    export_dir: &Path,
    id: &str,
    size: (u16, u16),
    now_ms: i64,
) -> (App, Vec<Effect>) {
    App::new(AppOptions {
        resume: Some(id.to_string()),
        ..options(root, export_dir, size, now_ms)
    })
}

/// The agent as the app learns it once the settings load: `provider`'s model with a 100k
/// window, the `ask` policy, the sandbox on, every MCP server up.
pub(crate) fn agent_info(provider: &str) -> AgentInfo {
    AgentInfo {
        provider: Ok(provider.into()),
        window: Some(100_000),
        policy: ApprovalPolicy::Ask,
        sandbox: "on".into(),
        sandbox_on: true,
        mcp_failed: Vec::new(),
    }
}

/// What the status line says now ("" when nothing).
pub(crate) fn status_text(app: &App) -> String {
    app.status
        .as_ref()
        .map(|s| s.text.clone())
        .unwrap_or_default()
}

/// Implements [`Keys`] for a harness `$h` with fields `app: App` and `rt: Sessions`: the
/// effects' jobs run inline to completion, like the worker would.
macro_rules! inline_keys {
    ($h:ty) => {
        impl $crate::support::tui::Keys for $h {
            fn app(&mut self) -> &mut neocode::tui::app::App {
                &mut self.app
            }

            fn run(&mut self, effects: Vec<neocode::tui::effect::Effect>) {
                neocode::tui::app::run_inline(&mut self.app, &self.rt, effects);
            }
        }
    };
}
pub(crate) use inline_keys;

/// A harness around an [`App`] that carries out the effects its keys cause (`run`), typed at
/// like a user types.
pub(crate) trait Keys {
    fn app(&mut self) -> &mut App;

    /// Carries out `effects` (and whatever their answers cause).
    fn run(&mut self, effects: Vec<Effect>);

    fn key_mod(&mut self, code: KeyCode, m: KeyModifiers) {
        let e = self.app().on_key(KeyEvent::new(code, m));
        self.run(e);
    }

    fn key(&mut self, code: KeyCode) {
        self.key_mod(code, KeyModifiers::NONE);
    }

    fn chars(&mut self, s: &str) {
        for c in s.chars() {
            self.key(KeyCode::Char(c));
        }
    }

    /// Types `s` and Enter (a message, or a slash command).
    fn submit(&mut self, s: &str) {
        self.chars(s);
        self.key(KeyCode::Enter);
    }

    /// A deliberate one-key answer to a waiting card: a pause before the key, none after.
    fn answer(&mut self, c: char) {
        let t = self.app().now_ms + ANSWER_BEFORE_MS;
        let e = self.app().on_clock(t);
        self.run(e);
        self.key(KeyCode::Char(c));
        let e = self.app().on_clock(t + ANSWER_AFTER_MS);
        self.run(e);
    }
}
