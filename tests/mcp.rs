//! MCP servers end to end: a real MCP server over stdio, built with `rmcp` here, and — where
//! Node is present and the npm registry answers — the published reference "everything"
//! server. The test binary is its own server: started with `NEOCODE_TEST_MCP_SERVER=1` it
//! serves MCP on stdin/stdout instead of running the tests (hence `harness = false` and the
//! small runner in `main`).
//!
//! Covered: listing (names, kinds from readOnlyHint, enabled_tools), calls with text, image and
//! error results, a crash and the restart on next use, a hung call timing out, a server that
//! never answers its handshake, the child's minimal environment, `neocode mcp list`, and turns
//! of the real agent against the scripted model server: tools offered, approval yes/no, image
//! results stored as assets, a failed server reported. Over streamable HTTP: the everything
//! server from npm (`scripts/mcp-servers.sh`) in a turn and across a restart, a down URL, and
//! a small loopback server that checks the bearer token and a static header, and OAuth
//! (`mcp_oauth/`: login, refresh, a 401, logout against an authorization server written there).
// Tests, benchmarks and examples may unwrap: a failure there is the report.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support {
    pub(crate) mod agent;
    pub(crate) mod env;
    pub(crate) mod mcp_http;
}

#[path = "mcp_oauth/mod.rs"]
mod oauth;

use support::agent::{Env, cancel_after, drive, tool_result_in, watch};
use support::mcp_http;

use std::sync::Arc;
use std::time::{Duration, Instant};

use neocode::runtime::agent::{Agent, FinishReason, Target, TurnCommand, TurnEvent};
use neocode::runtime::extensions::mcp::{McpManager, ServerConfig, ServerState};
use neocode::runtime::tools::{CancelFlag, ToolKind};
use neocode::session::{Part, Role};
use neocode::testkit::scripted::Reply;

const SERVER_ENV: &str = "NEOCODE_TEST_MCP_SERVER";
/// Set in this process before anything else runs: a server must never see it.
const SECRET: &str = "sk-parent-secret-7d1e";
const PNG_B64: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";

// ----- the server ----------------------------------------------------------------------------

mod server {
    use rmcp::model::{
        CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
        ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
        ToolAnnotations,
    };
    use rmcp::service::RequestContext;
    use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
    use serde_json::{Value, json};

    struct TestServer;

    fn tool(name: &'static str, desc: &'static str, props: Value, read_only: bool) -> Tool {
        let schema = json!({"type": "object", "properties": props});
        let Value::Object(map) = schema else {
            unreachable!()
        };
        let mut t = Tool::new(name, desc, map);
        if read_only {
            t.annotations = Some(ToolAnnotations::new().read_only(true));
        }
        t
    }

    #[expect(
        clippy::unnecessary_wraps,
        reason = "the tool arms it ends are results; the error arm builds its own"
    )]
    fn text(s: impl Into<String>) -> Result<CallToolResponse, ErrorData> {
        Ok(CallToolResult::success(vec![ContentBlock::text(s)]).into())
    }

    impl ServerHandler for TestServer {
        fn get_info(&self) -> ServerConfig {
            ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
                .with_server_info(Implementation::new("neocode-test-server", "1.2.3"))
                .with_instructions("Test server: echo, add, picture, write_note.")
        }

        // ListToolsResult is non-exhaustive: no struct literal outside rmcp.
        #[allow(clippy::field_reassign_with_default)]
        async fn list_tools(
            &self,
            _request: Option<PaginatedRequestParams>,
            _context: RequestContext<RoleServer>,
        ) -> Result<ListToolsResult, ErrorData> {
            let s = json!({"type": "string"});
            let n = json!({"type": "number"});
            let mut r = ListToolsResult::default();
            r.tools = vec![
                tool("echo", "Echo the text back", json!({"text": s}), true),
                tool("add", "Add two numbers", json!({"a": n, "b": n}), true),
                tool("picture", "A one-pixel picture", json!({}), true),
                tool(
                    "write_note",
                    "Write note.txt in the server's folder",
                    json!({"text": s}),
                    false,
                ),
                tool("fail", "Always fails", json!({}), false),
                tool("crash", "Exits the server", json!({}), false),
                tool("sleep", "Sleeps", json!({"secs": n}), true),
                tool("env", "The server's environment", json!({}), true),
                tool("pid", "The server's process id", json!({}), true),
            ];
            Ok(r)
        }

        async fn call_tool(
            &self,
            request: CallToolRequestParams,
            _context: RequestContext<RoleServer>,
        ) -> Result<CallToolResponse, ErrorData> {
            let args = Value::Object(request.arguments.unwrap_or_default());
            let s = |k: &str| {
                args.get(k)
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string()
            };
            let n = |k: &str| args.get(k).and_then(Value::as_f64).unwrap_or(0.0);
            match request.name.as_ref() {
                "echo" => text(format!("echo: {}", s("text"))),
                "add" => text(format!("{}", n("a") + n("b"))),
                "picture" => Ok(CallToolResult::success(vec![
                    ContentBlock::text("a red pixel"),
                    ContentBlock::image(super::PNG_B64, "image/png"),
                ])
                .into()),
                "write_note" => {
                    std::fs::write("note.txt", s("text"))
                        .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
                    text("noted")
                }
                "fail" => {
                    Ok(CallToolResult::error(vec![ContentBlock::text("it went wrong")]).into())
                }
                "crash" => {
                    eprintln!("crashing on purpose");
                    std::process::exit(3);
                }
                "sleep" => {
                    tokio::time::sleep(std::time::Duration::from_secs_f64(n("secs"))).await;
                    text("slept")
                }
                "env" => {
                    let mut v: Vec<String> =
                        std::env::vars().map(|(k, v)| format!("{k}={v}")).collect();
                    v.sort();
                    text(v.join("\n"))
                }
                "pid" => text(std::process::id().to_string()),
                other => Err(ErrorData::invalid_params(format!("no tool {other}"), None)),
            }
        }
    }

    pub(crate) fn serve() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            if std::env::var("MCP_TEST_HANG_AT_START").is_ok() {
                // Never answers the handshake.
                tokio::time::sleep(std::time::Duration::from_secs(3600)).await;
            }
            let running = TestServer
                .serve(rmcp::transport::stdio())
                .await
                .expect("serve");
            let _ = running.waiting().await;
        });
    }
}

// ----- helpers -------------------------------------------------------------------------------

fn me() -> String {
    std::env::current_exe().unwrap().display().to_string()
}

fn test_server(name: &str) -> ServerConfig {
    let mut c = ServerConfig::stdio(name, &me(), &[]);
    c.env.insert(SERVER_ENV.into(), "1".into());
    c
}

/// The `[mcp_servers.NAME]` table of the test server, with extra lines.
fn table(name: &str, extra: &str) -> String {
    format!(
        "[mcp_servers.{name}]\ncommand = {:?}\nenv = {{ {SERVER_ENV} = \"1\", MCP_TEST_VAR = \"given\" }}\n{extra}\n",
        me()
    )
}

fn text_of(m: &McpManager, name: &str, args: &str) -> (String, bool) {
    let o = m.call(name, args, &CancelFlag::default());
    (o.text, o.is_error)
}

// ----- manager tests -------------------------------------------------------------------------

fn lists_tools_with_kinds_and_filters() {
    let ws = tempfile::tempdir().unwrap();
    let mut only = test_server("only");
    only.enabled_tools = Some(vec!["echo".into(), "write_note".into()]);
    let mut off = test_server("off");
    off.enabled = false;
    let m = McpManager::new(vec![test_server("t"), only, off], ws.path()).unwrap();
    assert!(
        m.statuses().iter().all(|s| s.state != ServerState::Ready),
        "nothing starts before its tools are wanted"
    );
    let tools = m.tools();
    let t: Vec<(&str, ToolKind)> = tools.iter().map(|t| (t.name.as_str(), t.kind)).collect();
    assert!(t.contains(&("mcp__t__echo", ToolKind::Read)), "{t:?}");
    assert!(
        t.contains(&("mcp__t__write_note", ToolKind::Command)),
        "{t:?}"
    );
    assert!(t.contains(&("mcp__t__fail", ToolKind::Command)), "{t:?}");
    let only: Vec<&str> = t
        .iter()
        .filter(|(n, _)| n.starts_with("mcp__only__"))
        .map(|(n, _)| *n)
        .collect();
    assert_eq!(only, vec!["mcp__only__echo", "mcp__only__write_note"]);
    assert!(!t.iter().any(|(n, _)| n.starts_with("mcp__off__")));
    let echo = tools.iter().find(|t| t.name == "mcp__t__echo").unwrap();
    assert_eq!(echo.description, "Echo the text back");
    assert_eq!(echo.parameters["properties"]["text"]["type"], "string");
    let st = m.statuses();
    assert_eq!(st[0].state, ServerState::Ready);
    assert_eq!(
        st[0].server_info.as_deref(),
        Some("neocode-test-server 1.2.3")
    );
    assert_eq!(st[2].state, ServerState::Disabled);
}

fn calls_return_text_images_and_errors() {
    let ws = tempfile::tempdir().unwrap();
    let m = McpManager::new(vec![test_server("t")], ws.path()).unwrap();
    m.tools();
    assert_eq!(
        text_of(&m, "mcp__t__echo", r#"{"text":"hi there"}"#),
        ("echo: hi there".to_string(), false)
    );
    assert_eq!(text_of(&m, "mcp__t__add", r#"{"a":2,"b":40}"#).0, "42");
    let pic = m.call("mcp__t__picture", "{}", &CancelFlag::default());
    assert!(!pic.is_error);
    assert_eq!(pic.images.len(), 1);
    assert_eq!(pic.images[0].mime_type, "image/png");
    assert!(pic.images[0].data.starts_with(b"\x89PNG"));
    assert!(
        pic.text.starts_with("a red pixel\n[image: image/png,"),
        "{}",
        pic.text
    );
    assert_eq!(
        text_of(&m, "mcp__t__fail", "{}"),
        ("it went wrong".to_string(), true)
    );
    let (t, err) = text_of(&m, "mcp__t__echo", "[1,2]");
    assert!(err && t.contains("JSON object"), "{t}");
    let (t, err) = text_of(&m, "mcp__t__nope", "{}");
    assert!(err && t.contains("unknown tool"), "{t}");
    // The server ran in the workspace.
    text_of(&m, "mcp__t__write_note", r#"{"text":"in ws"}"#);
    assert_eq!(
        std::fs::read_to_string(ws.path().join("note.txt")).unwrap(),
        "in ws"
    );
}

fn child_environment_is_minimal() {
    let ws = tempfile::tempdir().unwrap();
    let mut c = test_server("t");
    c.env.insert("MCP_TEST_VAR".into(), "given".into());
    let m = McpManager::new(vec![c], ws.path()).unwrap();
    m.tools();
    let (env, _) = text_of(&m, "mcp__t__env", "{}");
    assert!(env.lines().any(|l| l == "MCP_TEST_VAR=given"), "{env}");
    assert!(env.lines().any(|l| l.starts_with("PATH=")), "{env}");
    assert!(
        !env.contains(SECRET),
        "a provider key reached the server:\n{env}"
    );
    assert!(!env.contains("OPENAI_API_KEY"), "{env}");
    assert!(!env.contains("CARGO_MANIFEST_DIR"), "{env}");
}

fn crash_is_reported_and_restarted_on_next_use() {
    let ws = tempfile::tempdir().unwrap();
    let m = McpManager::new(vec![test_server("t")], ws.path()).unwrap();
    m.tools();
    let (pid1, _) = text_of(&m, "mcp__t__pid", "{}");
    let (t, err) = text_of(&m, "mcp__t__crash", "{}");
    assert!(err, "{t}");
    assert!(t.contains("MCP server `t` crashed"), "{t}");
    assert!(
        t.contains("crashing on purpose"),
        "stderr tail explains it: {t}"
    );
    let st = &m.statuses()[0];
    assert!(matches!(st.state, ServerState::Crashed(_)), "{st:?}");
    assert_eq!(m.unreported_problems().len(), 1);
    assert!(m.unreported_problems().is_empty(), "reported once");
    // Its tools stay offered; the next call starts it again.
    assert!(m.tools().iter().any(|t| t.name == "mcp__t__pid"));
    let (pid2, err) = text_of(&m, "mcp__t__pid", "{}");
    assert!(!err, "{pid2}");
    assert_ne!(pid1, pid2, "a new process answers");
    let st = &m.statuses()[0];
    assert_eq!(st.state, ServerState::Ready);
    assert_eq!(st.restarts, 1);
}

fn a_server_killed_between_calls_is_restarted() {
    let ws = tempfile::tempdir().unwrap();
    let m = McpManager::new(vec![test_server("t")], ws.path()).unwrap();
    m.tools();
    let (pid1, _) = text_of(&m, "mcp__t__pid", "{}");
    let pid: i32 = pid1.parse().unwrap();
    // SAFETY: kill(2) on the test's own server child.
    unsafe {
        libc::kill(pid, libc::SIGKILL);
    }
    std::thread::sleep(Duration::from_millis(300));
    let (pid2, err) = text_of(&m, "mcp__t__pid", "{}");
    assert!(!err, "{pid2}");
    assert_ne!(pid1, pid2);
    assert_eq!(m.statuses()[0].restarts, 1);
}

fn dropping_the_manager_ends_its_servers() {
    let ws = tempfile::tempdir().unwrap();
    let m = McpManager::new(vec![test_server("t")], ws.path()).unwrap();
    m.tools();
    let pid = text_of(&m, "mcp__t__pid", "{}").0;
    drop(m);
    let stat = format!("/proc/{pid}/stat");
    let t0 = Instant::now();
    loop {
        // Gone, or a zombie waiting for nobody: either way it runs no more.
        match std::fs::read_to_string(&stat) {
            Err(_) => break,
            Ok(s)
                if s.rsplit(')')
                    .next()
                    .unwrap_or("")
                    .trim_start()
                    .starts_with('Z') =>
            {
                break;
            }
            Ok(_) => {}
        }
        assert!(
            t0.elapsed() < Duration::from_secs(5),
            "server {pid} still runs"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn hung_call_times_out_and_the_server_stays_usable() {
    let ws = tempfile::tempdir().unwrap();
    let mut c = test_server("t");
    c.tool_timeout = Duration::from_millis(700);
    let m = McpManager::new(vec![c], ws.path()).unwrap();
    m.tools();
    let t0 = Instant::now();
    let (t, err) = text_of(&m, "mcp__t__sleep", r#"{"secs": 30}"#);
    assert!(err && t.contains("timed out after 0.7 s"), "{t}");
    assert!(t0.elapsed() < Duration::from_secs(10));
    assert_eq!(
        text_of(&m, "mcp__t__echo", r#"{"text":"still"}"#).0,
        "echo: still"
    );
}

fn cancel_stops_a_call() {
    let ws = tempfile::tempdir().unwrap();
    let m = Arc::new(McpManager::new(vec![test_server("t")], ws.path()).unwrap());
    m.tools();
    let cancel = CancelFlag::default();
    cancel_after(&cancel, Duration::from_millis(300));
    let t0 = Instant::now();
    let o = m.call("mcp__t__sleep", r#"{"secs": 30}"#, &cancel);
    assert!(o.is_error && o.text.contains("cancelled"), "{}", o.text);
    assert!(t0.elapsed() < Duration::from_secs(10));
}

fn startup_failures_are_reported_and_do_not_block_others() {
    let ws = tempfile::tempdir().unwrap();
    let missing = ServerConfig::stdio("missing", "/nonexistent/neocode-mcp-server", &[]);
    let mut nowhere = test_server("nowhere");
    nowhere.cwd = Some("no/such/folder".into());
    let mut hang = test_server("hang");
    hang.env.insert("MCP_TEST_HANG_AT_START".into(), "1".into());
    hang.startup_timeout = Duration::from_millis(800);
    let m = McpManager::new(vec![hang, missing, nowhere, test_server("ok")], ws.path()).unwrap();
    let t0 = Instant::now();
    let tools = m.tools();
    assert!(
        t0.elapsed() < Duration::from_secs(8),
        "servers start in parallel"
    );
    assert!(tools.iter().all(|t| t.server == "ok"));
    assert!(!tools.is_empty());
    let st = m.statuses();
    let reason = |i: usize| st[i].state.reason().unwrap_or_default().to_string();
    assert_eq!(st[0].state.label(), "failed");
    assert!(
        reason(0).contains("did not answer within 0.8 s"),
        "{}",
        reason(0)
    );
    assert_eq!(st[1].state.label(), "failed");
    assert!(
        reason(1).contains("cannot start `/nonexistent/neocode-mcp-server`"),
        "{}",
        reason(1)
    );
    assert!(
        reason(2).contains("no/such/folder does not exist"),
        "{}",
        reason(2)
    );
    let problems = m.unreported_problems();
    assert_eq!(problems.len(), 3, "{problems:?}");
}

// ----- the command line ----------------------------------------------------------------------

fn mcp_list_prints_servers_state_and_tools() {
    let env = support::env::Env::new();
    let (home, ws) = (&env.home, &env.workdir);
    std::fs::create_dir_all(home).unwrap();
    std::fs::write(
        home.join("config.toml"),
        format!(
            "{}{}[mcp_servers.broken]\ncommand = \"/nonexistent/x\"\n[mcp_servers.typo]\ncomand = \"x\"\n",
            table("t", "enabled_tools = [\"echo\", \"write_note\"]"),
            table("off", "enabled = false")
        ),
    )
    .unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_neocode"))
        .args(["mcp", "list"])
        .env("NEOCODE_HOME", home)
        .current_dir(ws)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("t  ready"), "{stdout}");
    assert!(
        stdout.contains("mcp__t__echo  read-only  Echo the text back"),
        "{stdout}"
    );
    assert!(stdout.contains("mcp__t__write_note  asks"), "{stdout}");
    assert!(!stdout.contains("mcp__t__add"), "{stdout}");
    assert!(stdout.contains("off  disabled"), "{stdout}");
    assert!(stdout.contains("broken  failed"), "{stdout}");
    assert!(stdout.contains("typo  invalid"), "{stdout}");

    let out = std::process::Command::new(env!("CARGO_BIN_EXE_neocode"))
        .args(["mcp", "list", "--json"])
        .env("NEOCODE_HOME", home)
        .current_dir(ws)
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let t = v
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == "t")
        .unwrap();
    assert_eq!(t["state"], "ready");
    assert_eq!(t["tools"][0]["name"], "mcp__t__echo");
    assert_eq!(t["tools"][0]["read_only"], true);
}

/// A Claude Code plugin's `.mcp.json` server starts only once the plugin is enabled.
fn a_plugins_server_starts_only_once_it_is_enabled() {
    let env = support::env::Env::new();
    let (home, ws) = (&env.home, &env.workdir);
    let plugin = env.tmp.path().join("notes-kit");
    std::fs::create_dir_all(plugin.join(".claude-plugin")).unwrap();
    std::fs::write(
        plugin.join(".claude-plugin/plugin.json"),
        r#"{"name": "notes-kit", "version": "0.1.0"}"#,
    )
    .unwrap();
    std::fs::write(
        plugin.join(".mcp.json"),
        serde_json::json!({"mcpServers": {"t": {"command": me(), "env": {SERVER_ENV: "1"}}}})
            .to_string(),
    )
    .unwrap();
    let neocode = |args: &[&str]| {
        let o = std::process::Command::new(env!("CARGO_BIN_EXE_neocode"))
            .args(args)
            .env("NEOCODE_HOME", home)
            .current_dir(ws)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8_lossy(&o.stdout).into_owned()
    };
    neocode(&["plugin", "add", plugin.to_str().unwrap()]);
    let v: serde_json::Value = serde_json::from_str(&neocode(&["mcp", "list", "--json"])).unwrap();
    assert_eq!(
        v,
        serde_json::json!([]),
        "a disabled plugin's server is not started"
    );
    neocode(&["plugin", "enable", "notes-kit"]);
    let v: serde_json::Value = serde_json::from_str(&neocode(&["mcp", "list", "--json"])).unwrap();
    assert_eq!(v[0]["name"], "notes-kit_t");
    assert_eq!(v[0]["state"], "ready", "{v}");
    assert_eq!(v[0]["tools"][0]["name"], "mcp__notes-kit_t__echo");
}

// ----- agent turns -----------------------------------------------------------------------------

/// Runs one turn to its end, answering approvals with `approve`.
fn turn(
    agent: &Agent,
    target: Target,
    prompt: &str,
    approve: Option<bool>,
) -> (String, Vec<TurnEvent>) {
    let h = watch(agent, target, prompt);
    let events = drive(&h, |e| {
        let TurnEvent::ApprovalNeeded { call, .. } = e else {
            return None;
        };
        Some(match approve {
            Some(true) => TurnCommand::Approve {
                call_id: call.id.clone(),
                always: false,
            },
            Some(false) => TurnCommand::Deny {
                call_id: call.id.clone(),
                reason: Some("not now".into()),
            },
            None => panic!("unexpected approval request for {}", call.name),
        })
    });
    let id = h.session_id.clone();
    h.join();
    (id, events)
}

/// What the MCP server's `write_note` left in the workspace.
fn note(env: &Env) -> String {
    std::fs::read_to_string(env.workdir.join("note.txt")).unwrap()
}

fn finished_ok(events: &[TurnEvent]) {
    match events.last() {
        Some(TurnEvent::Finished {
            reason: FinishReason::Completed,
            ..
        }) => {}
        other => panic!("turn did not complete: {other:?}\n{events:?}"),
    }
}

fn tool_names(req: &serde_json::Value) -> Vec<String> {
    req["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap().to_string())
        .collect()
}

fn agent_offers_mcp_tools_and_asks_for_mutating_ones() {
    let (env, srv) = Env::new("sk-test", &table("t", "")).with_server(vec![
        Reply::tool_calls(&[("c1", "mcp__t__echo", r#"{"text":"ro"}"#)]),
        Reply::tool_calls(&[("c2", "mcp__t__write_note", r#"{"text":"denied"}"#)]),
        Reply::text("ok"),
        Reply::tool_calls(&[("c3", "mcp__t__write_note", r#"{"text":"approved"}"#)]),
        Reply::text("done"),
    ]);
    let agent = env.agent(&srv);
    let (id, events) = turn(&agent, Target::New, "use the tools", Some(false));
    finished_ok(&events);
    let asked: Vec<&str> = events
        .iter()
        .filter_map(|e| match e {
            TurnEvent::ApprovalNeeded { call, .. } => Some(call.name.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(
        asked,
        vec!["mcp__t__write_note"],
        "read-only echo never asks"
    );
    assert!(
        !env.workdir.join("note.txt").exists(),
        "a denied call must not run"
    );
    let reqs = srv.requests();
    let names = tool_names(&reqs[0].json());
    assert!(names.contains(&"read_file".to_string()), "{names:?}");
    assert!(names.contains(&"mcp__t__echo".to_string()), "{names:?}");
    let msgs = env.sessions().load(&id).unwrap().messages;
    let results: Vec<(String, bool)> = msgs
        .iter()
        .filter(|m| m.role == Role::Tool)
        .map(|m| (m.text(), m.is_error))
        .collect();
    assert_eq!(results[0], ("echo: ro".to_string(), false));
    assert!(
        results[1].1 && results[1].0.contains("not now"),
        "{results:?}"
    );

    let (_, events) = turn(&agent, Target::Resume(id), "again", Some(true));
    finished_ok(&events);
    assert_eq!(note(&env), "approved");
}

fn always_and_never_ask_cover_mutating_mcp_tools() {
    let (env, srv) = Env::new("sk-test", &table("t", "")).with_server(vec![
        Reply::tool_calls(&[("c1", "mcp__t__write_note", r#"{"text":"one"}"#)]),
        Reply::text("ok"),
        Reply::tool_calls(&[("c2", "mcp__t__write_note", r#"{"text":"two"}"#)]),
        Reply::text("ok"),
    ]);
    let agent = env.agent(&srv);
    let h = watch(&agent, Target::New, "note");
    let id = h.session_id.clone();
    loop {
        let e = h.events.recv_timeout(Duration::from_secs(30)).unwrap();
        if let TurnEvent::ApprovalNeeded { call, .. } = &e {
            h.commands
                .send(TurnCommand::Approve {
                    call_id: call.id.clone(),
                    always: true,
                })
                .unwrap();
        }
        if matches!(e, TurnEvent::Finished { .. }) {
            break;
        }
    }
    h.join();
    // "always" is session state: the next turn does not ask (turn() panics if it does).
    let (_, events) = turn(&agent, Target::Resume(id), "again", None);
    finished_ok(&events);
    assert_eq!(note(&env), "two");

    let (env, srv) = Env::new(
        "sk-test",
        &format!("[approval]\npolicy = \"never-ask\"\n{}", table("t", "")),
    )
    .with_server(vec![
        Reply::tool_calls(&[("c1", "mcp__t__write_note", r#"{"text":"free"}"#)]),
        Reply::text("ok"),
    ]);
    let (_, events) = turn(&env.agent(&srv), Target::New, "note", None);
    finished_ok(&events);
    assert_eq!(note(&env), "free");
}

fn neocode_run_calls_mcp_tools_and_asks_for_mutating_ones() {
    let (env, srv) = Env::new("sk-test", &table("t", "")).with_server(vec![
        Reply::tool_calls(&[("c1", "mcp__t__write_note", r#"{"text":"from run"}"#)]),
        Reply::text("refused"),
        Reply::tool_calls(&[("c2", "mcp__t__write_note", r#"{"text":"from run"}"#)]),
        Reply::text("written"),
    ]);
    let run = |args: &[&str]| env.cmd(Some(&srv), &["run"]).args(args).output().unwrap();
    // No terminal to ask on: the call is denied, naming the flag that allows it.
    let out = run(&["write a note"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("never-ask"), "{err}");
    assert!(!env.workdir.join("note.txt").exists());
    let out = run(&["--continue", "--approve", "never-ask", "now write it"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(note(&env), "from run");
}

fn agent_stores_image_results_as_assets() {
    let (env, srv) = Env::new("sk-test", &table("t", "")).with_server(vec![
        Reply::tool_calls(&[("c1", "mcp__t__picture", "{}")]),
        Reply::text("a pixel"),
    ]);
    let agent = env.agent(&srv);
    let (id, events) = turn(&agent, Target::New, "draw", None);
    finished_ok(&events);
    let s = env.sessions();
    let assets = s.assets(&id).unwrap();
    assert_eq!(assets.len(), 1);
    assert_eq!(assets[0].mime_type, "image/png");
    let (_, bytes) = s.asset_bytes(&id, &assets[0].id).unwrap();
    assert!(bytes.starts_with(b"\x89PNG"));
    let msgs = s.load(&id).unwrap().messages;
    let result = msgs.iter().find(|m| m.role == Role::Tool).unwrap();
    assert!(
        result
            .parts
            .iter()
            .any(|p| matches!(p, Part::Image { asset_id, .. } if *asset_id == assets[0].id))
    );
    // The model reads the text, which names the image.
    let text = tool_result_in(&srv, 1);
    assert!(text.contains("[image: image/png"), "{text}");
}

fn agent_reports_a_failed_server_once_and_goes_on() {
    let (env, srv) = Env::new(
        "sk-test",
        "[mcp_servers.gone]\ncommand = \"/nonexistent/mcp\"\n",
    )
    .with_server(vec![Reply::text("hi"), Reply::text("again")]);
    let agent = env.agent(&srv);
    let (id, events) = turn(&agent, Target::New, "hello", None);
    finished_ok(&events);
    let warned = |ev: &[TurnEvent]| {
        ev.iter()
            .filter(|e| matches!(e, TurnEvent::Warning { code, message } if code == "mcp_server_failed" && message.contains("gone")))
            .count()
    };
    assert_eq!(warned(&events), 1);
    let (_, events) = turn(&agent, Target::Resume(id), "again", None);
    finished_ok(&events);
    assert_eq!(warned(&events), 0, "a problem is told once per process");
}

// ----- the published reference server ------------------------------------------------------------

fn everything_server_from_npm() {
    let node = std::process::Command::new("node").arg("--version").output();
    if !node.is_ok_and(|o| o.status.success()) {
        println!("    skipped: node is not installed");
        return;
    }
    // npx fetches the package from the npm registry once; without it, skip.
    let cache = std::env::temp_dir().join("neocode-test-npm-cache");
    let mut c = ServerConfig::stdio(
        "everything",
        "npx",
        &["-y", "@modelcontextprotocol/server-everything"],
    );
    c.env
        .insert("npm_config_cache".into(), cache.display().to_string());
    c.startup_timeout = Duration::from_secs(120);
    c.tool_timeout = Duration::from_secs(30);
    let ws = tempfile::tempdir().unwrap();
    let m = McpManager::new(vec![c], ws.path()).unwrap();
    let tools = m.tools();
    if let ServerState::Failed(why) = &m.statuses()[0].state {
        println!("    skipped: the everything server could not be started ({why})");
        return;
    }
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    assert!(names.contains(&"mcp__everything__echo"), "{names:?}");
    let (t, err) = text_of(&m, "mcp__everything__echo", r#"{"message":"from neocode"}"#);
    assert!(!err && t.contains("from neocode"), "{t}");
    if let Some(add) = ["mcp__everything__get-sum", "mcp__everything__add"]
        .iter()
        .find(|n| names.contains(n))
    {
        let (t, err) = text_of(&m, add, r#"{"a":2,"b":3}"#);
        assert!(!err && t.contains('5'), "{t}");
    }
    if let Some(img) = [
        "mcp__everything__get-tiny-image",
        "mcp__everything__getTinyImage",
    ]
    .iter()
    .find(|n| names.contains(n))
    {
        let o = m.call(img, "{}", &CancelFlag::default());
        assert!(!o.is_error, "{}", o.text);
        assert!(!o.images.is_empty(), "{}", o.text);
        assert!(o.images[0].mime_type.starts_with("image/"));
    }
}

// ----- HTTP servers ------------------------------------------------------------------------------

/// A port nothing listens on (bound, then closed).
fn closed_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

/// What `scripts/mcp-servers.sh ARGS` installs (when needed) and prints: the entry point of
/// `what`; `None` (said loudly) only when npm or its registry is not there.
pub(crate) fn npm_entry(args: &[&str], what: &str) -> Option<String> {
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/mcp-servers.sh");
    let o = std::process::Command::new("bash")
        .arg(script)
        .args(args)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "scripts/mcp-servers.sh failed: {err}");
    let entry = String::from_utf8_lossy(&o.stdout).trim().to_string();
    if entry.is_empty() {
        println!("    SKIPPED (no {what} from npm): {err}");
        return None;
    }
    Some(entry)
}

/// The everything server's `dist/index.js`.
fn everything_entry() -> Option<String> {
    npm_entry(&[], "everything server")
}

/// The everything server in its streamable HTTP mode on `port`, answering on `/mcp`.
struct Everything {
    child: std::process::Child,
}

impl Everything {
    fn start(entry: &str, port: u16) -> Everything {
        let child = std::process::Command::new("node")
            .arg(entry)
            .arg("streamableHttp")
            .env("PORT", port.to_string())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let t0 = Instant::now();
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                t0.elapsed() < Duration::from_secs(30),
                "the everything server did not listen"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        Everything { child }
    }
}

impl Drop for Everything {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn everything_over_http_in_a_turn_and_after_a_restart() {
    let Some(entry) = everything_entry() else {
        return;
    };
    let port = closed_port();
    let server = Everything::start(&entry, port);
    let url = format!("http://127.0.0.1:{port}/mcp");
    let (env, srv) = Env::new(
        "sk-test",
        &format!("[mcp_servers.ev]\nurl = \"{url}\"\nenabled_tools = [\"echo\"]\n"),
    )
    .with_server(vec![
        Reply::tool_calls(&[("c1", "mcp__ev__echo", r#"{"message":"over http"}"#)]),
        Reply::text("done"),
    ]);
    let agent = env.agent(&srv);
    let (_, events) = turn(&agent, Target::New, "echo it", None);
    finished_ok(&events);
    let first = srv.requests()[0].json();
    assert_eq!(
        tool_names(&first)
            .iter()
            .filter(|n| n.starts_with("mcp__"))
            .count(),
        1
    );
    let text = tool_result_in(&srv, 1);
    assert!(text.contains("over http"), "{text}");

    // The connection drops (the server goes away): the call fails, named; the next call
    // reconnects once, which works when the server is back, and fails the call when not.
    let m = McpManager::new(vec![ServerConfig::http("ev", &url)], env.workdir.as_path()).unwrap();
    assert!(m.tools().iter().any(|t| t.name == "mcp__ev__echo"));
    assert_eq!(m.statuses()[0].transport, "streamable HTTP");
    let echo = |msg: &str| text_of(&m, "mcp__ev__echo", &format!("{{\"message\":\"{msg}\"}}"));
    let (t, err) = echo("one");
    assert!(!err && t.contains("one"), "{t}");
    drop(server);
    let (t, err) = echo("two");
    assert!(err, "{t}");
    assert!(
        t.starts_with("MCP server `ev` lost its connection during a call to `echo`")
            && t.ends_with("It will be reconnected on its next use."),
        "{t}"
    );
    let server = Everything::start(&entry, port);
    let (t, err) = echo("three");
    assert!(!err && t.contains("three"), "not reconnected: {t}");
    drop(server);
    let (t, err) = echo("four");
    assert!(err, "{t}");
    let (t, err) = echo("five");
    assert!(err, "{t}");
    assert_eq!(
        t,
        format!("MCP server `ev` could not be reconnected: cannot reach {url}: Connection refused")
    );
    assert_eq!(m.statuses()[0].restarts, 2);
}

fn a_down_url_is_named_once_and_the_turn_goes_on() {
    let port = closed_port();
    let (env, srv) = Env::new(
        "sk-test",
        &format!("[mcp_servers.gone]\nurl = \"http://127.0.0.1:{port}/mcp\"\n"),
    )
    .with_server(vec![Reply::text("hi"), Reply::text("again")]);
    let agent = env.agent(&srv);
    let (id, events) = turn(&agent, Target::New, "hello", None);
    finished_ok(&events);
    let warned: Vec<&String> = events
        .iter()
        .filter_map(|e| match e {
            TurnEvent::Warning { code, message } if code == "mcp_server_failed" => Some(message),
            _ => None,
        })
        .collect();
    assert_eq!(warned.len(), 1, "{warned:?}");
    assert!(
        warned[0].contains("`gone`")
            && warned[0].contains(&format!("cannot reach http://127.0.0.1:{port}/mcp"))
            && warned[0].to_lowercase().contains("refused"),
        "{}",
        warned[0]
    );
    let (_, events) = turn(&agent, Target::Resume(id), "again", None);
    finished_ok(&events);
    assert!(
        !events
            .iter()
            .any(|e| matches!(e, TurnEvent::Warning { code, .. } if code == "mcp_server_failed")),
        "a problem is told once per process"
    );
}

/// A small streamable HTTP MCP server on 127.0.0.1 that answers only requests carrying
/// `Authorization: Bearer <token>` and `X-Team: core` (JSON responses, one request per
/// connection), with one tool, `whoami`. Every request's Authorization is recorded.
struct Loopback {
    port: u16,
    seen: Arc<std::sync::Mutex<Vec<String>>>,
}

impl Loopback {
    fn start(token: &'static str) -> Loopback {
        let seen: Arc<std::sync::Mutex<Vec<String>>> = Arc::default();
        let log = seen.clone();
        let port = mcp_http::serve(move |_, req| {
            let auth = req.header("authorization");
            log.lock().unwrap().push(auth.to_string());
            if auth != format!("Bearer {token}")
                || !req.header("x-team").eq_ignore_ascii_case("core")
            {
                mcp_http::reply("401 Unauthorized", "", "{}")
            } else if req.method != "POST" {
                mcp_http::reply("405 Method Not Allowed", "", "")
            } else {
                mcp_http::mcp_reply(&req.body, "loopback", "you are the core team")
            }
        });
        Loopback { port, seen }
    }
}

fn bearer_tokens_reach_the_server_and_nothing_stored() {
    // The command's config line spells it in two words: the token is in no file of ours.
    const TOKEN: &str = "tok-bearer-5c9e21";
    let lb = Loopback::start(TOKEN);
    let url = format!("http://127.0.0.1:{}/mcp", lb.port);
    let (env, srv) = Env::new(
        "sk-test",
        &format!(
            "[mcp_servers.lb]\nurl = \"{url}\"\nheaders = {{ X-Team = \"core\" }}\nbearer_token_env = \"LB_TOKEN\"\n[mcp_servers.cmd]\nurl = \"{url}\"\nheaders = {{ X-Team = \"core\" }}\nbearer_token_command = \"printf '%s%s' tok-bearer- 5c9e21\"\n[mcp_servers.wrong]\nurl = \"{url}\"\nheaders = {{ X-Team = \"core\" }}\nbearer_token_command = \"echo not-the-token\"\n"
        ),
    )
    .with_server(vec![
        Reply::tool_calls(&[
            ("c1", "mcp__lb__whoami", "{}"),
            ("c2", "mcp__cmd__whoami", "{}"),
        ]),
        Reply::text("done"),
    ]);
    let o = env
        .cmd(Some(&srv), &["run", "who am I"])
        .env("LB_TOKEN", TOKEN)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr).to_string();
    assert!(o.status.success(), "{stderr}");
    let second = srv.requests()[1].json();
    let msgs: Vec<&str> = second["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap())
        .collect();
    assert_eq!(
        msgs,
        ["you are the core team", "you are the core team"],
        "{second:#}"
    );
    assert!(
        stderr.contains("MCP server `wrong`") && stderr.contains("401"),
        "{stderr}"
    );
    assert!(!stderr.contains(TOKEN), "{stderr}");
    let seen = lb.seen.lock().unwrap().clone();
    assert!(
        seen.iter()
            .filter(|a| **a == format!("Bearer {TOKEN}"))
            .count()
            >= 6,
        "{seen:?}"
    );

    // Neither the store, nor an export, nor `neocode mcp list` holds the token.
    let exported = env.cmd(None, &["export", "last"]).output().unwrap();
    assert!(exported.status.success());
    assert!(!String::from_utf8_lossy(&exported.stdout).contains(TOKEN));
    let list = env
        .cmd(None, &["mcp", "list"])
        .env("LB_TOKEN", TOKEN)
        .output()
        .unwrap();
    let listed = String::from_utf8_lossy(&list.stdout).to_string();
    assert!(
        listed.contains(&format!(
            "lb  ready  (loopback 1)\n  url: {url}  (streamable HTTP)"
        )),
        "{listed}"
    );
    assert!(listed.contains("wrong  failed"), "{listed}");
    let json = env
        .cmd(None, &["mcp", "list", "--json"])
        .env("LB_TOKEN", TOKEN)
        .output()
        .unwrap();
    let json = String::from_utf8_lossy(&json.stdout).to_string();
    assert!(json.contains("\"transport\":\"streamable HTTP\""), "{json}");
    for text in [&listed, &json] {
        assert!(!text.contains(TOKEN) && !text.contains("core\""), "{text}");
    }
    for entry in walk(&env.home) {
        let bytes = std::fs::read(&entry).unwrap_or_default();
        assert!(
            !bytes.windows(TOKEN.len()).any(|w| w == TOKEN.as_bytes()),
            "the token is in {}",
            entry.display()
        );
    }
}

/// Every file under `dir`.
pub(crate) fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

// ----- runner --------------------------------------------------------------------------------

#[expect(clippy::too_many_lines)]
fn main() {
    if std::env::var_os(SERVER_ENV).is_some() {
        server::serve();
        return;
    }
    // SAFETY: no other thread runs yet; every server must be kept from seeing this.
    unsafe {
        std::env::set_var("OPENAI_API_KEY", SECRET);
    }
    let tests: &[(&str, fn())] = &[
        (
            "lists_tools_with_kinds_and_filters",
            lists_tools_with_kinds_and_filters,
        ),
        (
            "calls_return_text_images_and_errors",
            calls_return_text_images_and_errors,
        ),
        ("child_environment_is_minimal", child_environment_is_minimal),
        (
            "crash_is_reported_and_restarted_on_next_use",
            crash_is_reported_and_restarted_on_next_use,
        ),
        (
            "a_server_killed_between_calls_is_restarted",
            a_server_killed_between_calls_is_restarted,
        ),
        (
            "dropping_the_manager_ends_its_servers",
            dropping_the_manager_ends_its_servers,
        ),
        (
            "hung_call_times_out_and_the_server_stays_usable",
            hung_call_times_out_and_the_server_stays_usable,
        ),
        ("cancel_stops_a_call", cancel_stops_a_call),
        (
            "startup_failures_are_reported_and_do_not_block_others",
            startup_failures_are_reported_and_do_not_block_others,
        ),
        (
            "mcp_list_prints_servers_state_and_tools",
            mcp_list_prints_servers_state_and_tools,
        ),
        (
            "agent_offers_mcp_tools_and_asks_for_mutating_ones",
            agent_offers_mcp_tools_and_asks_for_mutating_ones,
        ),
        (
            "always_and_never_ask_cover_mutating_mcp_tools",
            always_and_never_ask_cover_mutating_mcp_tools,
        ),
        (
            "neocode_run_calls_mcp_tools_and_asks_for_mutating_ones",
            neocode_run_calls_mcp_tools_and_asks_for_mutating_ones,
        ),
        (
            "agent_stores_image_results_as_assets",
            agent_stores_image_results_as_assets,
        ),
        (
            "agent_reports_a_failed_server_once_and_goes_on",
            agent_reports_a_failed_server_once_and_goes_on,
        ),
        ("everything_server_from_npm", everything_server_from_npm),
        (
            "everything_over_http_in_a_turn_and_after_a_restart",
            everything_over_http_in_a_turn_and_after_a_restart,
        ),
        (
            "a_down_url_is_named_once_and_the_turn_goes_on",
            a_down_url_is_named_once_and_the_turn_goes_on,
        ),
        (
            "bearer_tokens_reach_the_server_and_nothing_stored",
            bearer_tokens_reach_the_server_and_nothing_stored,
        ),
        (
            "oauth_login_turn_refresh_and_logout",
            oauth::oauth_login_turn_refresh_and_logout,
        ),
        (
            "oauth_renews_once_after_a_401",
            oauth::oauth_renews_once_after_a_401,
        ),
        (
            "oauth_challenge_without_an_oauth_table_is_explained",
            oauth::oauth_challenge_without_an_oauth_table_is_explained,
        ),
        (
            "oauth_paste_login_with_a_preregistered_client",
            oauth::oauth_paste_login_with_a_preregistered_client,
        ),
        (
            "oauth_against_the_sdk_example_from_npm",
            oauth::oauth_against_the_sdk_example_from_npm,
        ),
        (
            "a_plugins_server_starts_only_once_it_is_enabled",
            a_plugins_server_starts_only_once_it_is_enabled,
        ),
    ];
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.iter().any(|a| a == "--list") {
        for (name, _) in tests {
            println!("{name}: test");
        }
        return;
    }
    let filters: Vec<&String> = args.iter().filter(|a| !a.starts_with('-')).collect();
    let selected: Vec<&(&str, fn())> = tests
        .iter()
        .filter(|(n, _)| filters.is_empty() || filters.iter().any(|f| n.contains(f.as_str())))
        .collect();
    println!("\nrunning {} tests", selected.len());
    let mut failed = Vec::new();
    for (name, f) in &selected {
        let t0 = Instant::now();
        let ok = std::panic::catch_unwind(f).is_ok();
        println!(
            "test {name} ... {} ({:.1}s)",
            if ok { "ok" } else { "FAILED" },
            t0.elapsed().as_secs_f64()
        );
        if !ok {
            failed.push(*name);
        }
    }
    println!(
        "\ntest result: {}. {} passed; {} failed; 0 ignored; 0 measured; {} filtered out\n",
        if failed.is_empty() { "ok" } else { "FAILED" },
        selected.len() - failed.len(),
        failed.len(),
        tests.len() - selected.len()
    );
    if !failed.is_empty() {
        for f in &failed {
            eprintln!("failed: {f}");
        }
        std::process::exit(101);
    }
}
