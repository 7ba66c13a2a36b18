//! Regenerates `assets/demo/*.json` (the sessions `neocode demo` ships) by building them through
//! the real runtime and exporting them. Run with `cargo run --example demo_gen` from the
//! repository root and commit the JSON files.
// Tests, benchmarks and examples may unwrap: a failure there is the report.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use neocode::runtime::{Location, Sessions};
use neocode::session::file::SessionFile;
use neocode::session::{
    AppendMeta, NewMessage, NewSession, Part, Plan, Role, RuntimeLedger, RuntimeLimits,
    RuntimeUsage, StateUpdate, Status, Step, StepFailure, StepStatus, StepUpdate, ToolCall, Usage,
};

/// 2025-03-10 09:00:00 UTC.
const BASE: i64 = 1_741_597_200_000;
const MIN: i64 = 60_000;

struct B<'a> {
    rt: &'a Sessions,
    id: String,
    t: i64,
    call: u32,
}

impl<'a> B<'a> {
    fn new(rt: &'a Sessions, title: &str, model: &str, start: i64) -> B<'a> {
        let h = rt
            .new_session(NewSession {
                title: title.into(),
                provider: "openai-compatible".into(),
                model: model.into(),
                workdir: "/home/dev/acme-api".into(),
                // Random ids so the demo's short ids differ (v7 ids made within a minute share
                // their first 8 characters).
                id: Some(uuid::Uuid::new_v4().to_string()),
                ..NewSession::default()
            })
            .unwrap();
        B {
            rt,
            id: h.id,
            t: start,
            call: 0,
        }
    }

    fn push(&mut self, mut m: NewMessage, gap_s: i64) {
        self.t += gap_s * 1000;
        m.created_at_ms = Some(self.t);
        self.rt
            .append(&self.id, &[m], &AppendMeta::default())
            .unwrap();
    }

    fn user(&mut self, text: &str) {
        self.push(NewMessage::text(Role::User, text), 40);
    }

    fn say(&mut self, text: &str, inp: u64, out: u64) {
        let mut m = NewMessage::text(Role::Assistant, text);
        m.usage = Usage {
            input_tokens: inp,
            output_tokens: out,
        };
        self.push(m, 12);
    }

    /// An assistant turn with one tool call, then its result.
    fn tool(
        &mut self,
        text: &str,
        name: &str,
        args: serde_json::Value,
        result: &str,
        error: bool,
        usage: (u64, u64),
    ) {
        self.call += 1;
        let id = format!("call_{:03}", self.call);
        let m = NewMessage {
            role: Some(Role::Assistant),
            parts: if text.is_empty() {
                vec![]
            } else {
                vec![Part::text(text)]
            },
            tool_calls: vec![ToolCall {
                id: id.clone(),
                name: name.into(),
                arguments: args.to_string(),
            }],
            usage: Usage {
                input_tokens: usage.0,
                output_tokens: usage.1,
            },
            ..NewMessage::default()
        };
        self.push(m, 9);
        let mut r = NewMessage::tool_result(id, result, error);
        r.tool_metadata =
            Some(serde_json::json!({ "exit_code": if error { 1 } else { 0 }, "duration_ms": 840 }));
        self.push(r, 3);
    }

    fn finish(&self, status: Status, extra: StateUpdate) -> SessionFile {
        let mut u = extra;
        u.status = Some(status);
        self.rt.update_state(&self.id, &u).unwrap();
        export(self.rt, &self.id)
    }
}

fn export(rt: &Sessions, id: &str) -> SessionFile {
    let mut doc = rt.export(id).unwrap();
    let first = doc.messages.first().map(|m| m.created_at.clone()).unwrap();
    let last = doc.messages.last().map(|m| m.created_at.clone()).unwrap();
    doc.session.created_at = first.clone();
    doc.session.updated_at = last;
    for a in &mut doc.assets {
        a.created_at = first.clone();
    }
    doc
}

/// A 16x16 solid teal PNG.
const PNG_B64: &str = "iVBORw0KGgoAAAANSUhEUgAAABAAAAAQCAIAAACQkWg2AAAAFklEQVR4nGOQmtdPEmIY1TCqYfhqAABjXEcQVi7KygAAAABJRU5ErkJggg==";

#[expect(clippy::too_many_lines)]
fn main() {
    use base64::Engine;
    let tmp = tempfile::tempdir().unwrap();
    let rt = Sessions::open(&Location::scratch(tmp.path())).unwrap();
    let mut docs: Vec<(&str, SessionFile)> = Vec::new();

    // 1. A bug fix with tool calls, one failing.
    let mut s = B::new(
        &rt,
        "Fix panic in config loader on empty file",
        "gpt-4.1",
        BASE,
    );
    s.user("`acme-api` panics on startup when `config.toml` is empty:\n\n```\nthread 'main' panicked at src/config.rs:42:37:\ncalled `Option::unwrap()` on a `None` value\n```\n\nCan you find and fix it?");
    s.tool("Let me look at the loader first.", "read_file", serde_json::json!({"path": "src/config.rs", "start_line": 30, "end_line": 50}),
        "30 pub fn load(path: &Path) -> Result<Config> {\n31     let text = fs::read_to_string(path)?;\n32     let doc: toml::Table = text.parse()?;\n33\n34     let server = doc.get(\"server\").and_then(|v| v.as_table());\n35     let port = server\n36         .and_then(|s| s.get(\"port\"))\n37         .and_then(|p| p.as_integer())\n38         .unwrap_or(8080) as u16;\n39\n40     // The database section is mandatory.\n41     let db = doc.get(\"database\").and_then(|v| v.as_table());\n42     let url = db.unwrap().get(\"url\").unwrap().as_str().unwrap();\n43     Ok(Config { port, database_url: url.to_string() })\n44 }", false, (1840, 96));
    s.say("Line 42 unwraps three `Option`s. With an empty file `doc.get(\"database\")` is `None`, so the first `unwrap()` panics. The fix is to return a proper error that names the missing key.\n\nI'll reproduce it with a test first.", 2310, 74);
    s.tool("", "bash", serde_json::json!({"command": "cargo test -p acme-config empty_file", "timeout_s": 120}),
        "   Compiling acme-config v0.3.1 (/home/dev/acme-api/crates/config)\nerror[E0425]: cannot find function `load_str` in module `config`\n  --> crates/config/tests/load.rs:7:22\n   |\n 7 |     let err = config::load_str(\"\").unwrap_err();\n   |                       ^^^^^^^^ not found in `config`\n\nerror: could not compile `acme-config` (test \"load\") due to 1 previous error", true, (2620, 58));
    s.say("The test uses a `load_str` helper that doesn't exist yet. I'll split parsing out of `load` so it can be tested without a file, and replace the unwraps.", 3105, 61);
    s.tool("", "edit", serde_json::json!({"path": "src/config.rs", "old": "let url = db.unwrap().get(\"url\").unwrap().as_str().unwrap();", "new": "let url = db\n        .and_then(|d| d.get(\"url\"))\n        .and_then(|u| u.as_str())\n        .ok_or(ConfigError::Missing(\"database.url\"))?;"}),
        "Edited src/config.rs: 1 hunk, +4 -1", false, (3390, 212));
    s.tool("", "edit", serde_json::json!({"path": "src/config.rs", "old": "pub fn load(path: &Path) -> Result<Config> {\n    let text = fs::read_to_string(path)?;", "new": "pub fn load(path: &Path) -> Result<Config> {\n    load_str(&fs::read_to_string(path)?)\n}\n\npub fn load_str(text: &str) -> Result<Config> {"}),
        "Edited src/config.rs: 1 hunk, +5 -2", false, (3702, 188));
    s.tool("Running the tests again.", "bash", serde_json::json!({"command": "cargo test -p acme-config"}),
        "   Compiling acme-config v0.3.1 (/home/dev/acme-api/crates/config)\n    Finished `test` profile [unoptimized + debuginfo] target(s) in 3.41s\n     Running tests/load.rs\n\nrunning 4 tests\ntest empty_file_names_missing_key ... ok\ntest full_file_loads ... ok\ntest port_defaults_to_8080 ... ok\ntest bad_toml_reports_line ... ok\n\ntest result: ok. 4 passed; 0 failed; 0 ignored", false, (4015, 40));
    s.say("Fixed. An empty `config.toml` now fails with:\n\n```\nerror: config.toml: missing key `database.url`\n```\n\nChanges:\n- `load_str` parses from a string (used by `load` and the tests)\n- the three `unwrap()`s on line 42 became one `ok_or(ConfigError::Missing(..))?`\n- a regression test `empty_file_names_missing_key`\n\nAll 4 config tests pass.", 4230, 142);
    s.user("Great, thanks. Could you also make the port configurable through `ACME_PORT`?");
    s.say("Sure — `ACME_PORT` now overrides `server.port`, and an invalid value is reported instead of silently ignored. Want me to add it to the README too?", 4490, 88);
    let bugfix_id = s.id.clone();
    s.finish(
        Status::Completed,
        StateUpdate {
            token_totals: Some((33_702, 959)),
            ..StateUpdate::default()
        },
    );
    docs.push(("01-bugfix.json", export(&rt, &bugfix_id)));

    // 2. A plan DAG in progress.
    let mut s = B::new(
        &rt,
        "Migrate billing service to async SQLx",
        "gpt-4.1",
        BASE + 90 * MIN,
    );
    s.user("Move the billing service from diesel to async sqlx. Keep the public API identical. Make a plan first.");
    s.say("Here is the plan. I'll work through it in dependency order and report after each layer.\n\n1. **survey** — list every diesel call site\n2. **schema** — port the migrations to sqlx format\n3. **pool** — async connection pool with the same limits\n4. **repo** — rewrite the repository layer\n5. **handlers** — make the HTTP handlers async\n6. **tests** — port the integration tests\n7. **docs** — update the ops runbook", 2900, 410);
    let step = |id: &str, title: &str, deps: &[&str]| Step {
        id: id.into(),
        title: title.into(),
        depends_on: deps.iter().map(ToString::to_string).collect(),
    };
    let plan = Plan {
        steps: vec![
            step("survey", "List every diesel call site", &[]),
            step("schema", "Port migrations to sqlx", &[]),
            step("pool", "Async connection pool", &["survey"]),
            step("repo", "Rewrite the repository layer", &["schema", "pool"]),
            step("handlers", "Make HTTP handlers async", &["repo"]),
            step("tests", "Port integration tests", &["handlers"]),
            step("docs", "Update the ops runbook", &["survey"]),
        ],
    };
    rt.update_state(
        &s.id,
        &StateUpdate {
            plan: neocode::session::Change::Set(plan),
            ..StateUpdate::default()
        },
    )
    .unwrap();
    s.tool("", "bash", serde_json::json!({"command": "rg -c 'diesel::' crates/billing/src"}),
        "crates/billing/src/repo/invoice.rs:14\ncrates/billing/src/repo/customer.rs:9\ncrates/billing/src/repo/payment.rs:11\ncrates/billing/src/db.rs:6\ncrates/billing/src/handlers/refund.rs:2", false, (3400, 35));
    for (st, res) in [
        ("survey", "42 call sites in 5 files"),
        ("schema", "7 migrations ported"),
        ("pool", "PgPool with max 20 connections"),
    ] {
        rt.step_update(
            &s.id,
            st,
            &StepUpdate::Status {
                status: StepStatus::Completed,
            },
        )
        .unwrap();
        rt.step_update(
            &s.id,
            st,
            &StepUpdate::Result {
                result: serde_json::json!(res),
            },
        )
        .unwrap();
    }
    s.say("Layers 1 and 2 are done: 42 diesel call sites found, 7 migrations ported, pool in place. Starting on the repository layer.", 5200, 120);
    s.tool("", "edit", serde_json::json!({"path": "crates/billing/src/repo/invoice.rs", "old": "invoices.filter(customer_id.eq(cid)).load::<Invoice>(conn)", "new": "sqlx::query_as!(Invoice, \"SELECT * FROM invoices WHERE customer_id = $1\", cid).fetch_all(&self.pool).await"}),
        "Edited crates/billing/src/repo/invoice.rs: 14 hunks", false, (6100, 980));
    rt.step_update(
        &s.id,
        "repo",
        &StepUpdate::Status {
            status: StepStatus::Completed,
        },
    )
    .unwrap();
    rt.step_update(
        &s.id,
        "repo",
        &StepUpdate::Result {
            result: serde_json::json!("3 repositories async, 34 queries checked at compile time"),
        },
    )
    .unwrap();
    rt.step_update(
        &s.id,
        "docs",
        &StepUpdate::Status {
            status: StepStatus::Running,
        },
    )
    .unwrap();
    s.tool("Repository layer compiles. Now the handlers.", "bash", serde_json::json!({"command": "cargo check -p billing"}),
        "error[E0277]: `std::sync::MutexGuard<'_, RefundQueue>` cannot be sent between threads safely\n   --> crates/billing/src/handlers/refund.rs:58:5\n    |\n 58 |     let queue = state.refunds.lock().unwrap();\n    |         ----- has type `MutexGuard<'_, RefundQueue>` which is not `Send`\n 61 |     repo.record_refund(&refund).await?;\n    |                                 ^^^^^ await occurs here, with `queue` maybe used later", true, (7300, 66));
    rt.step_update(
        &s.id,
        "handlers",
        &StepUpdate::Status {
            status: StepStatus::Failed,
        },
    )
    .unwrap();
    rt.step_update(
        &s.id,
        "handlers",
        &StepUpdate::Error {
            error: StepFailure {
                error_type: "CompileError".into(),
                message: "MutexGuard held across .await in handlers/refund.rs:58".into(),
                traceback: None,
            },
        },
    )
    .unwrap();
    s.say("The refund handler holds a `std::sync::Mutex` guard across an `.await`. Two options:\n\n1. switch `RefundQueue` to `tokio::sync::Mutex`\n2. drop the guard before awaiting (copy what we need out)\n\nOption 2 is smaller and keeps the lock short. Should I go ahead?", 7800, 150);
    let d = s.finish(
        Status::Paused,
        StateUpdate {
            ledger: neocode::session::Change::Set(RuntimeLedger {
                limits: RuntimeLimits {
                    max_input_tokens: Some(60_000),
                    max_output_tokens: Some(8_000),
                    max_tool_calls: Some(40),
                    max_turns: Some(30),
                    max_wall_secs: None,
                    max_cost_usd: None,
                },
                usage: RuntimeUsage {
                    input_tokens: 40_600,
                    output_tokens: 1_937,
                    tool_calls: 3,
                    turns: 7,
                    ..RuntimeUsage::default()
                },
                started_at_ms: Some(BASE + 90 * MIN),
                termination: Some("waiting for the user to choose an option".into()),
                ..RuntimeLedger::default()
            }),
            token_totals: Some((40_600, 1_937)),
            ..StateUpdate::default()
        },
    );
    docs.push(("02-plan.json", d));

    // 3. An image asset.
    let mut s = B::new(
        &rt,
        "Match the login page to the design mockup",
        "gpt-4.1-mini",
        BASE + 200 * MIN,
    );
    let png = base64::engine::general_purpose::STANDARD
        .decode(PNG_B64)
        .unwrap();
    let asset = rt.save_asset(&s.id, "image/png", &png).unwrap();
    s.push(
        NewMessage {
            role: Some(Role::User),
            parts: vec![
                Part::text("Here's the mockup for the login page. The button colour and the spacing are off in ours — can you match it?"),
                Part::Image {
                    asset_id: asset.id,
                    mime_type: Some("image/png".into()),
                },
            ],
            ..NewMessage::default()
        },
        30,
    );
    s.tool("The mockup uses a teal primary colour (`#1a9e8f`) and 24px vertical rhythm. Let me check our stylesheet.", "read_file", serde_json::json!({"path": "web/src/login.css"}),
        ".login-button {\n  background: #2b6cb0;\n  margin-top: 12px;\n  padding: 8px 16px;\n}", false, (2100, 80));
    s.tool("", "edit", serde_json::json!({"path": "web/src/login.css", "old": "background: #2b6cb0;\n  margin-top: 12px;", "new": "background: var(--teal-600, #1a9e8f);\n  margin-top: 24px;"}),
        "Edited web/src/login.css: 1 hunk, +2 -2", false, (2300, 120));
    s.say("Updated: the button now uses the teal primary (`--teal-600`) and the form uses 24px spacing like the mockup.", 2400, 60);
    let d = s.finish(
        Status::Completed,
        StateUpdate {
            token_totals: Some((6_800, 260)),
            ..StateUpdate::default()
        },
    );
    docs.push(("03-image.json", d));

    // 4. A long session.
    let mut s = B::new(
        &rt,
        "Walk me through the request pipeline",
        "gpt-4.1",
        BASE + 300 * MIN,
    );
    let topics = [
        (
            "routing",
            "Requests enter through `axum::Router` in `src/app.rs`. Each route is a handler function; shared state travels in an `Arc<AppState>`.",
        ),
        (
            "middleware",
            "Tower layers wrap the router: tracing, timeout (30 s), compression and the auth layer, applied bottom-up.",
        ),
        (
            "auth",
            "`AuthLayer` reads the bearer token, checks it against the session cache and puts a `User` in the request extensions.",
        ),
        (
            "validation",
            "Request bodies deserialize into `*Request` structs; `validator` derives check lengths and formats before the handler runs.",
        ),
        (
            "database",
            "Handlers call repositories that own a `PgPool`. Queries are checked at compile time with `sqlx::query_as!`.",
        ),
        (
            "errors",
            "Every handler returns `Result<_, ApiError>`; `ApiError` implements `IntoResponse` and maps to RFC 7807 problem JSON.",
        ),
        (
            "caching",
            "Read-heavy endpoints go through a `moka` cache keyed by tenant and query; writes invalidate by tenant prefix.",
        ),
        (
            "background jobs",
            "Slow work (emails, webhooks) is queued in the `jobs` table and picked up by workers with `SELECT … FOR UPDATE SKIP LOCKED`.",
        ),
        (
            "rate limits",
            "A token bucket per API key lives in Redis; the middleware answers 429 with `Retry-After`.",
        ),
        (
            "observability",
            "Spans carry the request id; metrics go to Prometheus via `metrics-exporter-prometheus` at `/metrics`.",
        ),
        (
            "shutdown",
            "SIGTERM stops accepting connections, waits up to 20 s for in-flight requests, then drains the job workers.",
        ),
        (
            "testing",
            "Integration tests start the app on a random port with a throwaway database created from the migrations.",
        ),
    ];
    for (i, (topic, answer)) in topics.iter().enumerate() {
        let i = i as u64;
        s.user(&format!("How does **{topic}** work?"));
        let code = format!(
            "```rust\n// {topic}\nlet app = Router::new()\n    .route(\"/v1/invoices\", get(list_invoices))\n    .layer(TimeoutLayer::new(Duration::from_secs(30)));\n```"
        );
        s.say(
            &format!(
                "{answer}\n\n{code}\n\nThe key file is `src/{}.rs`.",
                topic.replace(' ', "_")
            ),
            1500 + i * 420,
            180 + (i % 4) * 70,
        );
        s.user("Got it, and what can go wrong there?");
        s.say(&format!("The usual failure for {topic} is a misconfiguration at startup; we fail fast and log the offending key. At runtime, errors surface as `ApiError::Internal` with the request id so you can find the span."), 1900 + i * 430, 95 + (i % 3) * 40);
    }
    let d = s.finish(
        Status::Completed,
        StateUpdate {
            token_totals: Some((31_000, 3_400)),
            ..StateUpdate::default()
        },
    );
    docs.push(("04-long.json", d));

    // 5. A fork of the bug fix, taken after the first edit.
    let f = rt.fork(&bugfix_id, Some(8)).unwrap();
    rt.rename(&f.id, "Fix panic in config loader — try serde defaults")
        .unwrap();
    let mut s = B {
        rt: &rt,
        id: f.id,
        t: BASE + 420 * MIN,
        call: 10,
    };
    s.user("Instead of hand-written lookups, could we deserialize into a struct with `#[serde(default)]` and validate afterwards?");
    s.tool("Good idea — that removes the manual lookups entirely.", "edit", serde_json::json!({"path": "src/config.rs", "old": "let doc: toml::Table = text.parse()?;", "new": "let raw: RawConfig = toml::from_str(text)?;\n    raw.validate()"}),
        "Edited src/config.rs: 2 hunks, +31 -14", false, (3900, 520));
    s.say("Done. `RawConfig` derives `Deserialize` with defaults; `validate()` reports the first missing mandatory key. The diff is larger but the loader is now declarative.", 4500, 110);
    let mut d = s.finish(
        Status::Completed,
        StateUpdate {
            token_totals: Some((12_400, 630)),
            ..StateUpdate::default()
        },
    );
    d.session.created_at = neocode::session::file::rfc3339(BASE + 419 * MIN);
    docs.push(("05-fork.json", d));

    // 6. A failed session.
    let mut s = B::new(
        &rt,
        "Add rate limiting to the public API",
        "gpt-4.1",
        BASE + 500 * MIN,
    );
    s.user("Add per-key rate limiting to `/v1/*` using the existing Redis.");
    s.tool(
        "",
        "bash",
        serde_json::json!({"command": "redis-cli -u $REDIS_URL ping"}),
        "Could not connect to Redis at 10.0.3.7:6379: Connection refused",
        true,
        (1800, 40),
    );
    s.say("I can't reach Redis from this machine (connection refused at 10.0.3.7:6379), so I can't verify the limiter against it. Stopping here rather than writing untested code.", 2000, 70);
    let d = s.finish(
        Status::Failed,
        StateUpdate {
            token_totals: Some((3_800, 110)),
            ..StateUpdate::default()
        },
    );
    docs.push(("06-failed.json", d));

    // 7. A short, cancelled one.
    let mut s = B::new(
        &rt,
        "Draft release notes for v0.4",
        "gpt-4.1-mini",
        BASE + 560 * MIN,
    );
    s.user("Draft release notes for v0.4 from the merged PRs.");
    s.say("## v0.4\n\n- **Config**: clear errors for missing keys (#212)\n- **Billing**: async database layer (#220, in progress)\n- **Web**: login page matches the new design (#215)", 1200, 90);
    s.user("Actually hold off until billing lands.");
    let d = s.finish(
        Status::Cancelled,
        StateUpdate {
            token_totals: Some((1_200, 90)),
            ..StateUpdate::default()
        },
    );
    docs.push(("07-cancelled.json", d));

    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("assets/demo");
    std::fs::create_dir_all(&dir).unwrap();
    for (name, doc) in docs {
        neocode::session::file::validate(&doc).unwrap();
        let mut text = serde_json::to_string_pretty(&doc).unwrap();
        text.push('\n');
        std::fs::write(dir.join(name), text).unwrap();
    }
}
