//! The language servers of one neocode process: started on demand (the first edit of a file
//! they serve), one per server and project root, initialised once, kept until the manager is
//! dropped (which shuts them down). A server that is missing, fails to start or stops is
//! reported once; a stopped one is started again on its next use, twice at most.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use super::client::Client;
use super::error::LspError;
use super::report::{self, Diagnosed};
use super::status::{LspState, LspStatus};
use crate::runtime::config::lsp::{LspServerConfig, LspSettings};

/// How often a stopped server is started again.
const MAX_RESTARTS: u32 = 2;
/// How long a server may take to shut down before it is killed.
const SHUTDOWN_GRACE: Duration = Duration::from_millis(500);

enum Slot {
    Ready(Arc<Client>),
    Failed(String),
}

/// The language servers of one workspace.
pub struct LspManager {
    settings: LspSettings,
    root: PathBuf,
    slots: Mutex<HashMap<(String, PathBuf), Slot>>,
    restarts: Mutex<HashMap<String, u32>>,
    problems: Mutex<Vec<(String, String)>>,
    reported: Mutex<usize>,
    installed: std::sync::OnceLock<bool>,
}

impl std::fmt::Debug for LspManager {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LspManager")
            .field("root", &self.root)
            .finish()
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The program `command` names: itself when it holds a `/`, else the first match on `PATH`.
pub(crate) fn resolve(command: &str) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let ok = |p: &Path| {
        std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if command.contains('/') {
        let p = PathBuf::from(command);
        return ok(&p).then_some(p);
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(command))
        .find(|p| ok(p))
}

/// The LSP language id of files ending in `.ext`.
fn language_id(ext: &str) -> &str {
    match ext {
        "py" | "pyi" => "python",
        "ts" | "mts" | "cts" => "typescript",
        "tsx" => "typescriptreact",
        "js" | "mjs" | "cjs" => "javascript",
        "jsx" => "javascriptreact",
        "h" => "c",
        "cc" | "cpp" | "cxx" | "hpp" | "hh" => "cpp",
        "rs" => "rust",
        other => other,
    }
}

impl LspManager {
    /// A manager for the workspace `root` (absolute); nothing starts yet.
    pub fn new(settings: LspSettings, root: &Path) -> LspManager {
        LspManager {
            settings,
            root: root.to_path_buf(),
            slots: Mutex::default(),
            restarts: Mutex::default(),
            problems: Mutex::default(),
            reported: Mutex::new(0),
            installed: std::sync::OnceLock::new(),
        }
    }

    /// The workspace root.
    pub(crate) fn root(&self) -> &Path {
        &self.root
    }

    /// Whether an enabled server is installed whose root markers lie in the workspace root
    /// (looked up once): the navigation tools are offered only then.
    pub fn any_installed(&self) -> bool {
        *self.installed.get_or_init(|| {
            self.settings.enabled
                && self.settings.servers.iter().any(|c| {
                    c.enabled
                        && c.root_markers.iter().any(|m| self.root.join(m).exists())
                        && resolve(&c.command).is_some()
                })
        })
    }

    /// The settings it runs with.
    pub fn settings(&self) -> &LspSettings {
        &self.settings
    }

    /// Whether a server is configured for `rel` (a path relative to the root): when not, an
    /// edit of it costs nothing.
    pub fn serves(&self, rel: &str) -> bool {
        self.settings.enabled && self.server_for(rel).is_some()
    }

    fn server_for<'a>(&self, rel: &'a str) -> Option<(&LspServerConfig, &'a str)> {
        let ext = Path::new(rel).extension()?.to_str()?;
        Some((self.settings.for_extension(ext)?, ext))
    }

    /// The folder of the nearest root marker above `abs` inside the workspace, else the root.
    fn project_root(&self, cfg: &LspServerConfig, abs: &Path) -> PathBuf {
        let mut dir = abs.parent();
        while let Some(d) = dir {
            if !d.starts_with(&self.root) {
                break;
            }
            if cfg.root_markers.iter().any(|m| d.join(m).exists()) {
                return d.to_path_buf();
            }
            dir = d.parent();
        }
        self.root.clone()
    }

    fn problem(&self, name: &str, why: String) {
        let mut p = lock(&self.problems);
        let entry = (name.to_string(), why);
        if !p.contains(&entry) {
            p.push(entry);
        }
    }

    /// Problems (missing, failed, stopped servers) not reported before: each is told once.
    pub fn unreported_problems(&self) -> Vec<(String, String)> {
        let p = lock(&self.problems);
        let mut seen = lock(&self.reported);
        let new = p[*seen..].to_vec();
        *seen = p.len();
        new
    }

    /// The running client of `cfg` for `project`, started when needed. A server found
    /// stopped is started again (named once as a problem), [`MAX_RESTARTS`] times at most.
    fn client(&self, cfg: &LspServerConfig, project: &Path) -> Result<Arc<Client>, LspError> {
        let key = (cfg.name.clone(), project.to_path_buf());
        let mut slots = lock(&self.slots);
        match slots.get(&key) {
            Some(Slot::Ready(c)) => match c.stopped() {
                None => return Ok(Arc::clone(c)),
                Some(why) => {
                    let mut r = lock(&self.restarts);
                    let n = r.entry(cfg.name.clone()).or_insert(0);
                    if *n >= MAX_RESTARTS {
                        self.problem(
                            &cfg.name,
                            format!(
                                "the server stopped ({why}) {} times; no diagnostics from it until neocode restarts",
                                *n + 1
                            ),
                        );
                        slots.insert(key, Slot::Failed(format!("stopped {} times", *n + 1)));
                        return Err(LspError::Stopped(why));
                    }
                    self.problem(
                        &cfg.name,
                        format!("the server stopped ({why}); started it again"),
                    );
                    *n += 1;
                }
            },
            Some(Slot::Failed(why)) => return Err(LspError::Stopped(why.clone())),
            None => {}
        }
        let started = resolve(&cfg.command)
            .ok_or_else(|| LspError::Missing(cfg.command.clone()))
            .and_then(|program| Client::start(cfg, &program, project, self.settings.start_timeout));
        match started {
            Ok(c) => {
                let c = Arc::new(c);
                slots.insert(key, Slot::Ready(Arc::clone(&c)));
                Ok(c)
            }
            Err(e) => {
                self.problem(&cfg.name, format!("{e}; no diagnostics from it"));
                slots.insert(key, Slot::Failed(e.to_string()));
                Err(e)
            }
        }
    }

    /// Syncs the files `rels` (relative to the root) with their servers and waits (at most
    /// the configured `diagnostics_wait`, shared by all) for their diagnostics. `None` when
    /// no server serves any of them or none answered in time.
    pub fn after_edit(&self, rels: &[&str]) -> Option<Diagnosed> {
        if !self.settings.enabled {
            return None;
        }
        let deadline = Instant::now() + self.settings.diagnostics_wait;
        let mut out = Diagnosed::default();
        let mut any = false;
        for rel in rels {
            let Some((cfg, ext)) = self.server_for(rel) else {
                continue;
            };
            if let Some(diags) = self.diagnose(cfg, ext, rel, deadline) {
                report::add(&mut out, &cfg.name, rel, &diags);
                any = true;
            }
        }
        any.then_some(out)
    }

    /// One file's diagnostics from its server, by `deadline`. A server that stops while it
    /// is waited for is started again once (within the same deadline).
    fn diagnose(
        &self,
        cfg: &LspServerConfig,
        ext: &str,
        rel: &str,
        deadline: Instant,
    ) -> Option<Vec<lsp_types::Diagnostic>> {
        let abs = self.root.join(rel);
        let text = std::fs::read_to_string(&abs).ok()?;
        let uri = super::uri::from_path(&abs).ok()?;
        let project = self.project_root(cfg, &abs);
        for _ in 0..2 {
            let client = self.client(cfg, &project).ok()?;
            let (since, version) = client.sync(&uri, language_id(ext), &text);
            let left = deadline.saturating_duration_since(Instant::now());
            if let Some(diags) = client.wait_diagnostics(&uri, since, version, left) {
                return Some(diags);
            }
            if client.stopped().is_none() || Instant::now() >= deadline {
                return None;
            }
        }
        None
    }

    /// A running server for `rel` (started when needed), for the navigation requests.
    pub(crate) fn client_for(&self, rel: &str) -> Result<(Arc<Client>, String), LspError> {
        let Some((cfg, ext)) = self.server_for(rel).filter(|_| self.settings.enabled) else {
            return Err(LspError::NoServer(rel.to_string()));
        };
        let abs = self.root.join(rel);
        let client = self.client(cfg, &self.project_root(cfg, &abs))?;
        let uri = super::uri::from_path(&abs)?;
        if let Ok(text) = std::fs::read_to_string(&abs) {
            client.sync(&uri, language_id(ext), &text);
        }
        Ok((client, uri))
    }

    /// Every configured server's state, without starting anything.
    pub fn statuses(&self) -> Vec<LspStatus> {
        let slots = lock(&self.slots);
        self.settings
            .servers
            .iter()
            .map(|cfg| {
                let running = slots
                    .iter()
                    .find(|((n, _), _)| n == &cfg.name)
                    .map(|(_, s)| s);
                let state = if !self.settings.enabled || !cfg.enabled {
                    LspState::Disabled
                } else {
                    match (running, resolve(&cfg.command)) {
                        (Some(Slot::Ready(c)), _) => match c.stopped() {
                            None => LspState::Ready(c.info.clone()),
                            Some(why) => LspState::Stopped(why),
                        },
                        (Some(Slot::Failed(why)), _) => LspState::Failed(why.clone()),
                        (None, Some(p)) => LspState::Found(p),
                        (None, None) => LspState::Missing,
                    }
                };
                LspStatus {
                    config: cfg.clone(),
                    state,
                }
            })
            .collect()
    }

    /// Starts every found, enabled server on the workspace root (for `neocode lsp list`).
    pub fn start_all(&self) {
        for cfg in self
            .settings
            .servers
            .iter()
            .filter(|c| c.enabled && self.settings.enabled)
        {
            if resolve(&cfg.command).is_some() {
                let _ = self.client(cfg, &self.root);
            }
        }
    }
}

impl Drop for LspManager {
    fn drop(&mut self) {
        let slots: Vec<Slot> = lock(&self.slots).drain().map(|(_, s)| s).collect();
        let clients: Vec<Arc<Client>> = slots
            .into_iter()
            .filter_map(|s| match s {
                Slot::Ready(c) => Some(c),
                Slot::Failed(_) => None,
            })
            .collect();
        std::thread::scope(|s| {
            for c in &clients {
                s.spawn(|| c.shutdown(SHUTDOWN_GRACE));
            }
        });
    }
}
