//! Which language server serves which files (plain settings `runtime::extensions::lsp` runs
//! with): a built-in table (file extensions → command, root markers), overridable and
//! extendable in `config.toml`:
//!
//! ```toml
//! [lsp]
//! enabled = true              # false: no language server ever starts
//! diagnostics_wait_ms = 3000  # how long an edit waits for its file's diagnostics
//! start_timeout_ms = 15000    # how long a server may take to initialise
//! [lsp.servers.pyright]
//! command = "/opt/bin/pyright-langserver"   # any field of the table may be given
//! args = ["--stdio"]
//! extensions = ["py", "pyi"]
//! root_markers = ["pyproject.toml"]
//! enabled = true
//! ```

use std::time::Duration;

use serde::Deserialize;

/// The `[lsp]` table of `config.toml` is malformed.
#[derive(Debug, thiserror::Error)]
#[error("[lsp]: {0}")]
pub struct LspConfigError(pub String);

/// One language server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LspServerConfig {
    /// Its name in the table and in `neocode lsp list`.
    pub name: String,
    /// The program (looked up on `PATH` unless it holds a `/`).
    pub command: String,
    /// Its arguments.
    pub args: Vec<String>,
    /// File extensions it serves, without the dot.
    pub extensions: Vec<String>,
    /// Files whose folder is the project root (the nearest one above the edited file inside
    /// the workspace; the workspace root when none).
    pub root_markers: Vec<String>,
    /// `false`: never started.
    pub enabled: bool,
}

/// The `[lsp]` settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LspSettings {
    /// `false`: no server starts, edits cost nothing.
    pub enabled: bool,
    /// How long an edit waits for its file's diagnostics.
    pub diagnostics_wait: Duration,
    /// How long a server may take to answer `initialize`.
    pub start_timeout: Duration,
    /// The table, built-ins first (overridden in place), then additions.
    pub servers: Vec<LspServerConfig>,
}

impl Default for LspSettings {
    fn default() -> LspSettings {
        LspSettings {
            enabled: true,
            diagnostics_wait: Duration::from_millis(3000),
            start_timeout: Duration::from_millis(15_000),
            servers: builtin(),
        }
    }
}

impl LspSettings {
    /// The enabled server for files ending in `.ext`, if any.
    pub fn for_extension(&self, ext: &str) -> Option<&LspServerConfig> {
        self.servers
            .iter()
            .find(|s| s.enabled && s.extensions.iter().any(|e| e == ext))
    }
}

fn server(
    name: &str,
    command: &str,
    args: &[&str],
    exts: &[&str],
    markers: &[&str],
) -> LspServerConfig {
    let v = |a: &[&str]| a.iter().map(|s| (*s).to_string()).collect();
    LspServerConfig {
        name: name.to_string(),
        command: command.to_string(),
        args: v(args),
        extensions: v(exts),
        root_markers: v(markers),
        enabled: true,
    }
}

/// The built-in table.
pub fn builtin() -> Vec<LspServerConfig> {
    vec![
        server(
            "pyright",
            "pyright-langserver",
            &["--stdio"],
            &["py", "pyi"],
            &[
                "pyrightconfig.json",
                "pyproject.toml",
                "setup.py",
                "setup.cfg",
                "requirements.txt",
            ],
        ),
        server(
            "typescript",
            "typescript-language-server",
            &["--stdio"],
            &["ts", "tsx", "js", "jsx", "mjs", "cjs", "mts", "cts"],
            &["tsconfig.json", "jsconfig.json", "package.json"],
        ),
        server(
            "clangd",
            "clangd",
            &[],
            &["c", "h", "cc", "cpp", "cxx", "hpp", "hh"],
            &[
                "compile_commands.json",
                "compile_flags.txt",
                ".clangd",
                ".git",
            ],
        ),
        server("gopls", "gopls", &[], &["go"], &["go.mod", "go.work"]),
        server(
            "rust-analyzer",
            "rust-analyzer",
            &[],
            &["rs"],
            &["Cargo.toml"],
        ),
    ]
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct FileLsp {
    enabled: Option<bool>,
    diagnostics_wait_ms: Option<u64>,
    start_timeout_ms: Option<u64>,
    #[serde(default)]
    servers: std::collections::BTreeMap<String, FileServer>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileServer {
    command: Option<String>,
    args: Option<Vec<String>>,
    extensions: Option<Vec<String>>,
    root_markers: Option<Vec<String>>,
    enabled: Option<bool>,
}

#[derive(Deserialize)]
struct Whole {
    lsp: Option<toml::Value>,
}

/// The `[lsp]` settings of `<home>/config.toml` (the defaults when the file is missing).
pub fn load(home: &std::path::Path) -> Result<LspSettings, LspConfigError> {
    match std::fs::read_to_string(home.join("config.toml")) {
        Ok(text) => parse(&text),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(LspSettings::default()),
        Err(e) => Err(LspConfigError(format!(
            "cannot read {}: {}",
            home.join("config.toml").display(),
            crate::session::io_error(&e)
        ))),
    }
}

/// The `[lsp]` settings of a `config.toml` text (the defaults when it has no such table).
pub fn parse(text: &str) -> Result<LspSettings, LspConfigError> {
    let whole: Whole = toml::from_str(text).map_err(|e| LspConfigError(e.message().to_string()))?;
    from_value(whole.lsp)
}

/// The `[lsp]` settings of a parsed config file.
pub(super) fn from_table(doc: &toml::Table) -> Result<LspSettings, LspConfigError> {
    from_value(doc.get("lsp").cloned())
}

fn from_value(lsp: Option<toml::Value>) -> Result<LspSettings, LspConfigError> {
    let mut out = LspSettings::default();
    let Some(v) = lsp else {
        return Ok(out);
    };
    let file: FileLsp = v
        .try_into()
        .map_err(|e: toml::de::Error| LspConfigError(e.message().to_string()))?;
    out.enabled = file.enabled.unwrap_or(true);
    if let Some(ms) = file.diagnostics_wait_ms {
        out.diagnostics_wait = Duration::from_millis(ms);
    }
    if let Some(ms) = file.start_timeout_ms {
        out.start_timeout = Duration::from_millis(ms);
    }
    for (name, f) in file.servers {
        let idx = match out.servers.iter().position(|s| s.name == name) {
            Some(i) => i,
            None => {
                let Some(command) = f.command.clone() else {
                    return Err(LspConfigError(format!(
                        "servers.{name} is not built in, so it needs `command`"
                    )));
                };
                out.servers.push(server(&name, &command, &[], &[], &[]));
                out.servers.len() - 1
            }
        };
        let s = &mut out.servers[idx];
        if let Some(c) = f.command {
            s.command = c;
        }
        if let Some(a) = f.args {
            s.args = a;
        }
        if let Some(e) = f.extensions {
            s.extensions = e
                .into_iter()
                .map(|x| x.trim_start_matches('.').to_string())
                .collect();
        }
        if let Some(m) = f.root_markers {
            s.root_markers = m;
        }
        if let Some(en) = f.enabled {
            s.enabled = en;
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::parse;

    #[test]
    fn a_table_overrides_a_built_in_server_and_adds_one() {
        let s = parse(
            "[lsp]\ndiagnostics_wait_ms = 500\n[lsp.servers.pyright]\ncommand = \"/x/pyls\"\n[lsp.servers.zig]\ncommand = \"zls\"\nextensions = [\".zig\"]\n[lsp.servers.gopls]\nenabled = false\n",
        )
        .unwrap();
        assert_eq!(s.diagnostics_wait.as_millis(), 500);
        let py = s.for_extension("py").unwrap();
        assert_eq!(
            (py.command.as_str(), py.args.as_slice()),
            ("/x/pyls", &["--stdio".to_string()][..])
        );
        assert_eq!(s.for_extension("zig").unwrap().command, "zls");
        assert!(s.for_extension("go").is_none());
        assert!(
            parse("[lsp.servers.new]\nargs = []\n")
                .unwrap_err()
                .to_string()
                .contains("needs `command`")
        );
        assert!(parse("[lsp]\nwait = 1\n").is_err());
    }
}
