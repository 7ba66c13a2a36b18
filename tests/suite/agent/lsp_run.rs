//! Language-server diagnostics after edits (issue 41): the real binary against the scripted
//! model, with a real pyright from npm (installed by `scripts/language-servers.sh` into a
//! cache folder outside the repository), and without any server.

use std::path::Path;
use std::process::{Command, Output};

use crate::support::agent::Env;
use crate::support::stderr;

use neocode::testkit::scripted::{Reply, ScriptedServer};
use serde_json::Value;

const KEY: &str = "sk-lsp-test-KEY-41aa01";

/// `neocode ARGS` against `srv`, asserted to succeed.
fn run(env: &Env, srv: &ScriptedServer, args: &[&str]) -> Output {
    let o = env.cmd(Some(srv), args).output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    o
}

/// `neocode run --approve auto-edit PROMPT` against a model that answers `replies`; the
/// server and the output (asserted to succeed).
fn auto_edit(env: &Env, replies: Vec<Reply>, prompt: &str) -> (ScriptedServer, Output) {
    let srv = ScriptedServer::start(replies).unwrap();
    let o = run(env, &srv, &["run", "--approve", "auto-edit", prompt]);
    (srv, o)
}

/// A model that writes `x = 1` into each of `paths` in turn (calls `w1`, `w2`, ...), then
/// says `done`.
fn writes(paths: &[&str]) -> Vec<Reply> {
    let mut replies: Vec<Reply> = paths
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let (id, args) = (
                format!("w{}", i + 1),
                serde_json::json!({"path": p, "content": "x = 1\n"}).to_string(),
            );
            Reply::tool_calls(&[(id.as_str(), "write_file", args.as_str())])
        })
        .collect();
    replies.push(Reply::text("done"));
    replies
}

/// An env whose only language server is `name`, run as `command`, with `extra` config lines.
fn env_with_server(name: &str, command: &str, extra: &str) -> Env {
    Env::new(
        KEY,
        &format!("{extra}[lsp.servers.{name}]\ncommand = \"{command}\"\n"),
    )
}

/// Waits long enough for a real server's first diagnostics.
const WAIT: &str = "[lsp]\ndiagnostics_wait_ms = 30000\n";

/// The `tool` messages `show last --json` prints, in order.
fn shown_tool_messages(env: &Env) -> Vec<Value> {
    let shown = env.cmd(None, &["show", "last", "--json"]).output().unwrap();
    let shown: Value = serde_json::from_slice(&shown.stdout).unwrap();
    shown["last_messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .cloned()
        .collect()
}

/// The text of the last `tool` message of request `n`.
fn last_tool_text(srv: &ScriptedServer, n: usize) -> String {
    crate::support::last_tool_text(&srv.requests()[n].json())
}

/// The folder holding `pyright-langserver`, installed when needed; `None` (said loudly)
/// only when npm cannot reach its registry.
fn language_servers() -> Option<String> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/language-servers.sh");
    let o = Command::new("bash").arg(script).output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        o.status.success(),
        "scripts/language-servers.sh failed: {err}"
    );
    let dir = String::from_utf8_lossy(&o.stdout).trim().to_string();
    if dir.is_empty() {
        eprintln!("SKIPPED (no real language server): {err}");
        return None;
    }
    Some(dir)
}

/// A pyright command that is not there.
const MISSING: &str = "/nonexistent/pyright-langserver";

const BROKEN: &str =
    "def add(a: int, b: int) -> int:\n    return a + b\n\n\ntotal: int = add(1, \"two\")\n";

#[test]
fn a_type_error_an_edit_introduces_comes_back_with_its_line_and_goes_when_fixed() {
    let Some(bin) = language_servers() else {
        return;
    };
    let env = env_with_server("pyright", &format!("{bin}/pyright-langserver"), WAIT);
    let write = serde_json::json!({"path": "calc.py", "content": BROKEN}).to_string();
    let fix = serde_json::json!({"path": "calc.py", "old_string": "add(1, \"two\")", "new_string": "add(1, 2)"})
        .to_string();
    let (srv, _) = auto_edit(
        &env,
        vec![
            Reply::tool_calls(&[("w1", "write_file", &write)]),
            Reply::text("I see the error."),
            Reply::tool_calls(&[("e1", "edit_file", &fix)]),
            Reply::text("Fixed."),
        ],
        "write calc.py",
    );
    let first = last_tool_text(&srv, 1);
    assert!(first.starts_with("created calc.py"), "{first}");
    assert!(first.contains("pyright reports 1 error"), "{first}");
    assert!(first.contains("calc.py:5:"), "{first}");
    assert!(
        first.contains("\"two\"") || first.contains("'two'"),
        "{first}"
    );

    run(
        &env,
        &srv,
        &["run", "--continue", "--approve", "auto-edit", "fix it"],
    );
    let second = last_tool_text(&srv, 3);
    assert!(second.starts_with("edited calc.py"), "{second}");
    assert!(
        second.contains("pyright: no errors or warnings in calc.py"),
        "{second}"
    );
    assert!(!second.contains("error: "), "{second}");

    // The stored result is what `show` prints.
    let tools = shown_tool_messages(&env);
    let tool = tools.last().unwrap();
    assert!(
        tool["text"]
            .as_str()
            .unwrap()
            .ends_with("pyright: no errors or warnings in calc.py"),
        "{tool}"
    );
}

#[test]
fn a_missing_server_is_named_once_and_edits_still_work() {
    let env = env_with_server("pyright", MISSING, "");
    let (srv, o) = auto_edit(&env, writes(&["a.py", "b.py", "notes.txt"]), "write files");
    let err = stderr(&o);
    assert_eq!(
        err.matches("/nonexistent/pyright-langserver").count(),
        1,
        "{err}"
    );
    assert!(err.contains("not installed"), "{err}");
    assert_eq!(last_tool_text(&srv, 1), "created a.py (1 lines)");
    assert_eq!(last_tool_text(&srv, 2), "created b.py (1 lines)");
    assert_eq!(last_tool_text(&srv, 3), "created notes.txt (1 lines)");
    assert!(env.workdir.join("b.py").exists());
}

#[test]
fn lsp_list_names_missing_disabled_and_failing_servers() {
    let env = Env::new(
        KEY,
        "[lsp.servers.pyright]\ncommand = \"/nonexistent/pyright-langserver\"\n[lsp.servers.gopls]\nenabled = false\n[lsp.servers.quitter]\ncommand = \"/bin/true\"\nextensions = [\"q\"]\n",
    );
    let o = env
        .cmd(None, &["lsp", "list", "--start", "--json"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let rows: Value = serde_json::from_slice(&o.stdout).unwrap();
    let state = |name: &str| {
        let row = rows
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["name"] == name)
            .unwrap();
        (
            row["state"].as_str().unwrap().to_string(),
            row["detail"].clone(),
        )
    };
    assert_eq!(state("pyright").0, "missing");
    assert_eq!(state("gopls").0, "disabled");
    let (st, why) = state("quitter");
    assert_eq!(st, "failed", "{why}");
    assert!(why.as_str().unwrap().contains("stopped"), "{why}");

    let o = env.cmd(None, &["lsp", "list"]).output().unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains("quitter  found — /bin/true"), "{text}");
    assert!(
        text.contains("/nonexistent/pyright-langserver  (.py .pyi)"),
        "{text}"
    );
}

/// The texts of the `tool` messages of request `n`, in order.
fn tool_texts(srv: &ScriptedServer, n: usize) -> Vec<String> {
    let body = srv.requests()[n].json();
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap_or("").to_string())
        .collect()
}

#[test]
fn navigation_tools_answer_from_pyright_without_asking() {
    let Some(bin) = language_servers() else {
        return;
    };
    let env = Env::new(
        KEY,
        &format!(
            "[lsp.servers.pyright]\ncommand = \"{bin}/pyright-langserver\"\n[permissions]\ndeny = [\"read_file(secret.py)\"]\n"
        ),
    );
    std::fs::write(env.workdir.join("secret.py"), "TOKEN = 'hunter2'\n").unwrap();
    std::fs::write(
        env.workdir.join("pyproject.toml"),
        "[project]\nname = \"demo\"\n",
    )
    .unwrap();
    std::fs::write(
        env.workdir.join("lib.py"),
        "def greet(name: str) -> str:\n    return \"hi \" + name\n",
    )
    .unwrap();
    std::fs::write(
        env.workdir.join("main.py"),
        "from lib import greet\n\nprint(greet(\"bob\"))\n",
    )
    .unwrap();
    let at = |p: &str, l: u32, c: u32| {
        serde_json::json!({"path": p, "line": l, "column": c}).to_string()
    };
    let (d, r, h) = (at("main.py", 3, 7), at("lib.py", 1, 5), at("main.py", 3, 7));
    let s = serde_json::json!({"query": "greet", "path": "main.py"}).to_string();
    let denied = at("secret.py", 1, 1);
    let srv = ScriptedServer::start(vec![
        Reply::tool_calls(&[
            ("n1", "definition", &d),
            ("n2", "references", &r),
            ("n3", "hover", &h),
            ("n4", "symbols", &s),
            ("n5", "hover", &denied),
        ]),
        Reply::text("found"),
    ])
    .unwrap();
    // The default policy asks before edits and commands; these only read, so nothing asks.
    run(&env, &srv, &["run", "where is greet"]);
    let offered = srv.requests()[0].json()["tools"].to_string();
    for t in ["definition", "references", "hover", "symbols"] {
        assert!(offered.contains(&format!("\"{t}\"")), "{offered}");
    }
    let texts = tool_texts(&srv, 1);
    assert_eq!(texts.len(), 5, "{texts:?}");
    assert_eq!(texts[4], "secret.py: a permission rule denies reading it");
    assert!(
        texts[0].starts_with("lib.py:1:5: def greet"),
        "{}",
        texts[0]
    );
    assert!(
        texts[1].contains("main.py:1:") && texts[1].contains("main.py:3:7"),
        "{}",
        texts[1]
    );
    assert!(
        texts[2].contains("greet") && texts[2].contains("str"),
        "{}",
        texts[2]
    );
    assert!(texts[3].contains("greet  lib.py:1:"), "{}", texts[3]);
}

#[test]
fn typescript_language_server_reports_a_type_error_of_a_written_file() {
    let Some(bin) = language_servers() else {
        return;
    };
    let env = env_with_server(
        "typescript",
        &format!("{bin}/typescript-language-server"),
        WAIT,
    );
    let write = serde_json::json!({
        "path": "src/app.ts",
        "content": "export function twice(n: number): number {\n  return n * 2;\n}\n\nconst s: string = twice(2);\n"
    })
    .to_string();
    let (srv, _) = auto_edit(
        &env,
        vec![
            Reply::tool_calls(&[("w1", "write_file", &write)]),
            Reply::text("ok"),
        ],
        "write app.ts",
    );
    let text = last_tool_text(&srv, 1);
    assert!(text.contains("typescript reports 1 error"), "{text}");
    assert!(
        text.contains("src/app.ts:5:7: error: Type 'number' is not assignable to type 'string'"),
        "{text}"
    );
}

#[test]
fn a_server_that_never_answers_is_given_up_once_and_the_turn_goes_on() {
    // `sleep` reads nothing and answers nothing: `initialize` times out, the child is killed.
    let env = Env::new(
        KEY,
        "[lsp]\nstart_timeout_ms = 300\n[lsp.servers.pyright]\ncommand = \"/bin/sleep\"\nargs = [\"1000\"]\n",
    );
    let (srv, o) = auto_edit(&env, writes(&["a.py", "b.py"]), "write files");
    let err = stderr(&o);
    assert_eq!(
        err.matches("no answer to `initialize` within 300 ms")
            .count(),
        1,
        "{err}"
    );
    assert_eq!(last_tool_text(&srv, 2), "created b.py (1 lines)");
    // The hung child did not outlive neocode.
    let ps = Command::new("pgrep")
        .args(["-f", "^/bin/sleep 1000$"])
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&ps.stdout).trim().is_empty(),
        "a `sleep 1000` survived"
    );
}

#[test]
fn no_language_server_starts_in_a_workspace_whose_settings_are_not_trusted() {
    let env = env_with_server("pyright", MISSING, "");
    // A cloned repository that declares a rule and was never trusted.
    std::fs::create_dir_all(env.workdir.join(".neocode")).unwrap();
    std::fs::write(
        env.workdir.join(".neocode/permissions.toml"),
        "deny = [\"run_command(rm:*)\"]\n",
    )
    .unwrap();
    let (srv, o) = auto_edit(&env, writes(&["a.py"]), "write a file");
    let err = stderr(&o);
    // The server was never tried: the missing binary is not even named.
    assert!(!err.contains("/nonexistent/pyright-langserver"), "{err}");
    assert_eq!(last_tool_text(&srv, 1), "created a.py (1 lines)");
}

/// `clangd` on PATH, made available by `scripts/language-servers.sh` (Debian's package);
/// `None` (said loudly) when it could not be installed.
fn clangd() -> Option<std::path::PathBuf> {
    let _ = language_servers();
    let found = std::env::var_os("PATH").and_then(|p| {
        std::env::split_paths(&p)
            .map(|d| d.join("clangd"))
            .find(|p| p.is_file())
    });
    if found.is_none() {
        eprintln!("SKIPPED (no clangd): scripts/language-servers.sh could not install it");
    }
    found
}

const C_BROKEN: &str = "int add(int a, int b) { return a + b; }\n\nint main(void) {\n    int total = add(1);\n    return total;\n}\n";

/// The edit that fixes `C_BROKEN`'s call, and the one that breaks it again.
fn c_edits() -> (String, String) {
    let e = |old: &str, new: &str| {
        serde_json::json!({"path": "main.c", "old_string": old, "new_string": new}).to_string()
    };
    (e("add(1);", "add(1, 2);"), e("add(1, 2);", "add(1);"))
}

#[test]
fn clangd_reports_a_type_error_an_edit_introduces_and_it_goes_when_fixed() {
    let Some(clangd) = clangd() else {
        return;
    };
    let env = env_with_server("clangd", &clangd.display().to_string(), WAIT);
    let write = serde_json::json!({"path": "main.c", "content": C_BROKEN}).to_string();
    let (fix, _) = c_edits();
    let srv = ScriptedServer::start(vec![
        Reply::tool_calls(&[("w1", "write_file", &write)]),
        Reply::tool_calls(&[("e1", "edit_file", &fix)]),
        Reply::text("Fixed."),
    ])
    .unwrap();
    let o = run(
        &env,
        &srv,
        &["run", "--json", "--approve", "auto-edit", "write main.c"],
    );
    let first = last_tool_text(&srv, 1);
    assert!(first.starts_with("created main.c"), "{first}");
    assert!(first.contains("clangd reports 1 error"), "{first}");
    assert!(first.contains("main.c:4:"), "{first}");
    assert!(
        first
            .to_lowercase()
            .contains("too few arguments to function call"),
        "{first}"
    );
    let second = last_tool_text(&srv, 2);
    assert!(second.starts_with("edited main.c"), "{second}");
    assert!(
        second.ends_with("clangd: no errors or warnings in main.c"),
        "{second}"
    );

    // `--json` carries them as fields of the `tool_result` line.
    let lines: Vec<Value> = String::from_utf8_lossy(&o.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .filter(|v: &Value| v["type"] == "tool_result")
        .collect();
    assert_eq!(lines.len(), 2, "{}", String::from_utf8_lossy(&o.stdout));
    let d = &lines[0]["diagnostics"];
    assert_eq!(
        (d["errors"].as_u64(), d["warnings"].as_u64()),
        (Some(1), Some(0)),
        "{d}"
    );
    let item = &d["items"][0];
    assert_eq!(item["path"], "main.c", "{d}");
    assert_eq!(item["line"], 4, "{d}");
    assert_eq!(item["severity"], "error", "{d}");
    assert_eq!(item["server"], "clangd", "{d}");
    assert!(
        item["message"]
            .as_str()
            .unwrap()
            .to_lowercase()
            .contains("too few arguments"),
        "{d}"
    );
    assert_eq!(lines[1]["diagnostics"]["errors"], 0, "{}", lines[1]);

    // `show` prints them with the result; `show --json` carries them.
    let shown = env.cmd(None, &["show", "last"]).output().unwrap();
    let text = String::from_utf8_lossy(&shown.stdout);
    assert!(text.contains("  diagnostics: 1 error"), "{text}");
    assert!(text.contains("    error   main.c:4:"), "{text}");
    assert!(text.contains("(clangd)"), "{text}");
    let results = shown_tool_messages(&env);
    assert_eq!(
        results[0]["diagnostics"]["items"][0]["line"], 4,
        "{results:#?}"
    );
    assert_eq!(results[1]["diagnostics"]["errors"], 0, "{results:#?}");
}

#[test]
fn a_server_killed_between_two_edits_is_named_once_and_started_again() {
    let Some(clangd) = clangd() else {
        return;
    };
    let env = Env::new(KEY, "");
    // The server as a wrapper that notes each start's process id, then becomes clangd.
    let pids = env.tmp.path().join("clangd.pids");
    let wrapper = env.tmp.path().join("clangd-wrapper.sh");
    std::fs::write(
        &wrapper,
        format!(
            "#!/bin/sh\necho $$ >> '{}'\nexec '{}' \"$@\"\n",
            pids.display(),
            clangd.display()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::write(
        env.home.join("config.toml"),
        format!(
            // The command that kills the server runs outside the sandbox, whose signals stay in.
            "{}\n[sandbox]\nmode = \"off\"\n[lsp]\ndiagnostics_wait_ms = 20000\n[lsp.servers.clangd]\ncommand = \"{}\"\n",
            std::fs::read_to_string(env.home.join("config.toml")).unwrap_or_default(),
            wrapper.display()
        ),
    )
    .unwrap();
    let write = serde_json::json!({"path": "main.c", "content": C_BROKEN}).to_string();
    let kill = serde_json::json!({"command": format!("kill -9 $(tail -1 '{}')", pids.display())})
        .to_string();
    let (fix, rebreak) = c_edits();
    let srv = ScriptedServer::start(vec![
        Reply::tool_calls(&[("w1", "write_file", &write)]),
        Reply::tool_calls(&[("k1", "run_command", &kill)]),
        Reply::tool_calls(&[("e1", "edit_file", &fix)]),
        Reply::tool_calls(&[("k2", "run_command", &kill)]),
        Reply::tool_calls(&[("e2", "edit_file", &rebreak)]),
        Reply::text("done"),
    ])
    .unwrap();
    let started = std::time::Instant::now();
    let o = run(
        &env,
        &srv,
        &["run", "--approve", "never-ask", "edit main.c"],
    );
    let took = started.elapsed();
    assert!(last_tool_text(&srv, 1).contains("clangd reports 1 error"));
    // The edit after each kill: the server was started again and answered.
    let fixed = last_tool_text(&srv, 3);
    assert!(
        fixed.ends_with("clangd: no errors or warnings in main.c"),
        "{fixed}"
    );
    let again = last_tool_text(&srv, 5);
    assert!(again.contains("clangd reports 1 error"), "{again}");
    let started_pids = std::fs::read_to_string(&pids).unwrap();
    assert_eq!(started_pids.lines().count(), 3, "{started_pids}");
    // The stop is named once, not after every kill.
    let err = stderr(&o);
    assert_eq!(err.matches("the server stopped").count(), 1, "{err}");
    assert!(err.contains("started it again"), "{err}");
    // No edit waited out its 20 s cap.
    assert!(took < std::time::Duration::from_secs(20), "{took:?}");
}
