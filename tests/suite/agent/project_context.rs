//! Project instructions and skills end to end: the real agent against the scripted model
//! server on 127.0.0.1, the real store, and `neocode show` in a separate process. What the
//! model server receives is the proof that instructions and skills reached the model.

use crate::support;
use crate::support::Succeeds;
use crate::support::agent::{Env, drive, tool_result_in, watch};
use crate::support::finish;
use crate::support::text::has;

use neocode::runtime::agent::{Agent, FinishReason, Target, TurnEvent};
use neocode::testkit::scripted::{Reply, ScriptedServer};
use serde_json::Value;

impl Env {
    /// Writes a file of the workspace; one of its settings (`.neocode/...`) is the user's
    /// own, so the workspace is trusted as it then is.
    fn write(&self, rel: &str, text: &str) {
        let p = self.workdir.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
        if rel.starts_with(".neocode/") {
            self.trust_workspace();
        }
    }

    fn show_json(&self, id: &str) -> Value {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_neocode"))
            .args(["show", id, "--json"])
            .env("NEOCODE_HOME", &self.home)
            .current_dir(&self.workdir)
            .succeeds();
        serde_json::from_slice(&out.stdout).unwrap()
    }

    fn show_text(&self, id: &str) -> String {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_neocode"))
            .args(["show", id])
            .env("NEOCODE_HOME", &self.home)
            .current_dir(&self.workdir)
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    }
}

fn turn(agent: &Agent, target: Target, prompt: &str) -> (String, Vec<TurnEvent>) {
    let h = watch(agent, target, prompt);
    let events = drive(&h, |_| None);
    let id = h.session_id.clone();
    h.join();
    assert_eq!(finish(&events), FinishReason::Completed, "{events:?}");
    (id, events)
}

/// The system prompt of the `n`th request the model server received.
fn system(srv: &ScriptedServer, n: usize) -> String {
    srv.requests()[n].json()["messages"][0]["content"]
        .as_str()
        .unwrap()
        .to_string()
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap().to_string())
        .collect()
}

#[test]
fn instruction_files_reach_the_model_and_show_names_them() {
    let env = Env::new("sk-test", "");
    std::fs::write(env.home.join("AGENTS.md"), "PERSONAL: answer in English.").unwrap();
    env.write("AGENTS.md", "ROOT: run cargo fmt before committing.");
    env.write("CLAUDE.md", "IGNORED: AGENTS.md wins in this folder.");
    env.write("crates/core/CLAUDE.md", "CORE: no unwrap in library code.");
    env.write("crates/core/lib.rs", "pub fn f() {}\n");
    env.write("docs/AGENTS.md", "DOCS: never read.");
    let srv = ScriptedServer::start(vec![
        Reply::tool_calls(&[("c1", "read_file", r#"{"path":"crates/core/lib.rs"}"#)]),
        Reply::text("read it"),
    ])
    .unwrap();
    let agent = env.agent(&srv);
    let (id, _) = turn(&agent, Target::New, "look at the core crate");

    let first = system(&srv, 0);
    assert!(first.contains("PERSONAL: answer in English."), "{first}");
    assert!(first.contains("ROOT: run cargo fmt"), "{first}");
    assert!(!first.contains("IGNORED"), "{first}");
    assert!(
        !first.contains("CORE:"),
        "not yet worked in crates/core: {first}"
    );
    assert!(first.find("PERSONAL").unwrap() < first.find("ROOT").unwrap());
    // After read_file touched crates/core, its folder's instructions join.
    let second = system(&srv, 1);
    has(&second, "CORE: no unwrap in library code.");
    assert!(second.contains("crates/core/CLAUDE.md"), "{second}");
    assert!(!second.contains("DOCS:"), "{second}");

    let show = env.show_json(&id);
    let files = strings(&show["context"]["instructions"]);
    assert_eq!(files.len(), 3, "{files:?}");
    assert!(
        files[0].ends_with("AGENTS.md (personal, 28 B)"),
        "{files:?}"
    );
    assert_eq!(files[1], "AGENTS.md (project, 38 B)");
    assert_eq!(files[2], "crates/core/CLAUDE.md (project, 32 B)");
    let text = env.show_text(&id);
    assert!(text.contains("instructions"), "{text}");
    has(&text, "crates/core/CLAUDE.md (project, 32 B)");
}

#[test]
fn oversized_instructions_are_cut_with_a_note() {
    let env = Env::new("sk-test", "");
    let big = format!("BEGIN {} END", "x".repeat(40 * 1024));
    env.write("AGENTS.md", &big);
    let srv = ScriptedServer::start(vec![Reply::text("ok")]).unwrap();
    let agent = env.agent(&srv);
    let (id, _) = turn(&agent, Target::New, "hi");
    let sys = system(&srv, 0);
    assert!(sys.contains("BEGIN xxx"), "kept head");
    assert!(!sys.contains(" END"), "cut tail");
    assert!(
        sys.contains("[AGENTS.md was cut here: 32768 of 40970 bytes kept"),
        "the model is told"
    );
    let files = strings(&env.show_json(&id)["context"]["instructions"]);
    assert_eq!(
        files,
        vec!["AGENTS.md (project, 40.0 KiB, cut to 32.0 KiB)"]
    );
}

fn deploy_skill(env: &Env) {
    env.write(
        ".neocode/skills/deploy/SKILL.md",
        "---\nname: deploy\ndescription: >-\n  Deploy the service\n  to staging.\n---\n# Deploy\nRun `make deploy-staging`, then check /health.\n",
    );
    env.write(".neocode/skills/deploy/check.sh", "curl /health\n");
}

#[test]
fn a_skill_activated_by_the_model_survives_resume_and_fork() {
    let env = Env::new("sk-test", "");
    deploy_skill(&env);
    std::fs::create_dir_all(env.home.join("skills/review")).unwrap();
    std::fs::write(
        env.home.join("skills/review/SKILL.md"),
        "---\nname: review\ndescription: Review a diff\n---\nLook for bugs.",
    )
    .unwrap();
    let srv = ScriptedServer::start(vec![
        Reply::text("hello"),
        Reply::tool_calls(&[("c1", "skill", r#"{"name":"deploy"}"#)]),
        Reply::text("deploying"),
    ])
    .unwrap();
    let agent = env.agent(&srv);
    let (id, _) = turn(&agent, Target::New, "hi");
    let (_, _) = turn(&agent, Target::Resume(id.clone()), "deploy it");

    let req0 = srv.requests()[0].json();
    let sys0 = system(&srv, 0);
    has(&sys0, "- deploy: Deploy the service to staging.");
    assert!(sys0.contains("- review: Review a diff"), "{sys0}");
    assert!(
        !sys0.contains("make deploy-staging"),
        "bodies wait for activation"
    );
    let tools = support::tool_names(&req0);
    assert!(tools.contains(&"skill"), "{tools:?}");
    // The activation loaded the body through the tool result.
    let body = tool_result_in(&srv, 2);
    assert!(body.contains("Run `make deploy-staging`"), "{body}");
    assert!(body.contains("- check.sh"), "{body}");
    let header = env.sessions().header(&id).unwrap();
    let active = header.skills.unwrap();
    assert_eq!(active[0]["name"], "deploy");
    assert_eq!(active[0]["source"], "workspace");

    // Another process sees it.
    let show = env.show_json(&id);
    assert_eq!(strings(&show["context"]["active_skills"]), vec!["deploy"]);
    assert!(
        strings(&show["context"]["skills"]).contains(&"deploy (workspace, active)".to_string())
    );

    // A new agent over a new store handle resumes with the skill active.
    let srv2 =
        ScriptedServer::start(vec![Reply::text("still here"), Reply::text("forked")]).unwrap();
    let agent2 = env.agent(&srv2);
    turn(&agent2, Target::Resume(id.clone()), "status?");
    let sys = system(&srv2, 0);
    assert!(sys.contains("- deploy (active): Deploy"), "{sys}");
    assert!(
        !sys.contains("This skill is active in this session"),
        "the transcript carries the body already: {sys}"
    );

    // A fork from before the activation keeps the skill; its body comes in the system prompt.
    let fork = env.sessions().fork(&id, Some(2)).unwrap();
    assert_eq!(fork.skills.as_ref().unwrap()[0]["name"], "deploy");
    turn(&agent2, Target::Resume(fork.id), "and now?");
    let sys = system(&srv2, 1);
    has(&sys, "This skill is active in this session");
    assert!(sys.contains("Run `make deploy-staging`"), "{sys}");
}

#[test]
fn the_user_activates_a_skill_and_unknown_ones_are_refused() {
    let env = Env::new("sk-test", "");
    deploy_skill(&env);
    let srv = ScriptedServer::start(vec![Reply::text("one"), Reply::text("two")]).unwrap();
    let agent = env.agent(&srv);
    let (id, _) = turn(&agent, Target::New, "hi");
    assert!(
        agent.activate_skill(&id, "deploy").unwrap(),
        "newly activated"
    );
    assert!(
        !agent.activate_skill(&id, "deploy").unwrap(),
        "once is enough"
    );
    let err = agent.activate_skill(&id, "nope").unwrap_err();
    assert!(err.message.contains("available: deploy"), "{}", err.message);
    turn(&agent, Target::Resume(id), "go");
    let sys = system(&srv, 1);
    assert!(sys.contains("Run `make deploy-staging`"), "{sys}");
}

#[test]
fn a_malformed_skill_is_reported_once_and_skipped() {
    let env = Env::new("sk-test", "");
    deploy_skill(&env);
    env.write(
        ".neocode/skills/broken/SKILL.md",
        "---\nname: Broken Name\n---\n",
    );
    let srv = ScriptedServer::start(vec![
        Reply::tool_calls(&[("c1", "skill", r#"{"name":"broken"}"#)]),
        Reply::text("one"),
        Reply::text("two"),
    ])
    .unwrap();
    let agent = env.agent(&srv);
    let (id, events) = turn(&agent, Target::New, "hi");
    let warnings = |ev: &[TurnEvent]| -> Vec<String> {
        ev.iter()
            .filter_map(|e| match e {
                TurnEvent::Warning { code, message } if code == "skill_skipped" => {
                    Some(message.clone())
                }
                _ => None,
            })
            .collect()
    };
    let w = warnings(&events);
    assert_eq!(w.len(), 1, "{w:?}");
    assert!(
        w[0].contains("broken/SKILL.md") && w[0].contains("no `description`"),
        "{w:?}"
    );
    let result = events.iter().find_map(|e| match e {
        TurnEvent::ToolResult { text, is_error, .. } => Some((text.clone(), *is_error)),
        _ => None,
    });
    let (text, is_error) = result.unwrap();
    assert!(
        is_error && text.contains("no skill named `broken`"),
        "{text}"
    );
    let (_, events) = turn(&agent, Target::Resume(id.clone()), "again");
    assert!(warnings(&events).is_empty());
    assert!(!system(&srv, 2).contains("Broken"));
    let show = env.show_json(&id);
    let skipped = strings(&show["context"]["problems"]);
    assert!(skipped[0].contains("broken/SKILL.md"), "{skipped:?}");
}

#[test]
fn a_skill_activated_by_another_process_is_active_when_the_session_resumes() {
    let env = Env::new("sk-test", "");
    deploy_skill(&env);
    let srv = ScriptedServer::start(vec![Reply::text("one"), Reply::text("two")]).unwrap();
    let (id, _) = turn(&env.agent(&srv), Target::New, "hi");
    let neocode = |args: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_neocode"))
            .args(args)
            .env("NEOCODE_HOME", &env.home)
            .current_dir(&env.workdir)
            .output()
            .unwrap()
    };
    let out = neocode(&["skill", "activate", &id[..8], "deploy"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("skill deploy is active in session"));
    let out = neocode(&["skill", "activate", &id, "nope"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("no skill named `nope`; available: deploy")
    );
    let out = neocode(&["skill", "list", "--session", "last"]);
    let listed = String::from_utf8_lossy(&out.stdout).into_owned();
    has(
        &listed,
        "deploy  workspace  active  Deploy the service to staging.",
    );

    // This process resumes it with a fresh agent: the body is in the system prompt.
    turn(&env.agent(&srv), Target::Resume(id), "deploy now");
    let sys = system(&srv, 1);
    assert!(sys.contains("- deploy (active)"), "{sys}");
    assert!(sys.contains("Run `make deploy-staging`"), "{sys}");
}

#[test]
fn neocode_run_in_two_processes_keeps_the_active_skill() {
    let env = Env::new("sk-test", "");
    deploy_skill(&env);
    env.write("AGENTS.md", "ROOT RULE for run.");
    let srv = ScriptedServer::start(vec![
        Reply::tool_calls(&[("c1", "skill", r#"{"name":"deploy"}"#)]),
        Reply::text("activated"),
        Reply::text("still active"),
    ])
    .unwrap();
    let run = |args: &[&str]| {
        let out = env.cmd(Some(&srv), &["run"]).args(args).output().unwrap();
        assert!(
            out.status.success(),
            "{}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    assert!(run(&["use the deploy skill"]).contains("activated"));
    assert!(run(&["--continue", "status?"]).contains("still active"));
    let first = system(&srv, 0);
    assert!(first.contains("ROOT RULE for run."), "{first}");
    assert!(first.contains("- deploy: Deploy"), "{first}");
    // The second process never saw the activation happen, only the stored session.
    let later = system(&srv, 2);
    assert!(later.contains("- deploy (active): Deploy"), "{later}");
}

/// Issue 34, break 6: a committed `AGENTS.md -> ~/.ssh/id_ed25519` (or `sub/CLAUDE.md ->
/// ~/.aws/credentials`) went into every request's system prompt. Instruction and skill files
/// are read beneath the root, with the read denials applied; what is skipped is said once
/// as a warning and listed by `show`.
#[test]
fn instruction_and_skill_files_that_link_outside_or_are_denied_are_skipped() {
    let env = Env::new("sk-test", "");
    let outside = env.tmp.path().join("user-secrets");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("id_ed25519"), "SSH-PRIVATE-KEY-MATERIAL").unwrap();
    std::fs::write(
        outside.join("credentials"),
        "aws_secret_access_key=AWS-SECRET",
    )
    .unwrap();
    std::fs::write(
        outside.join("SKILL.md"),
        "---\nname: leak\ndescription: SKILL-SECRET\n---\nSKILL-SECRET body\n",
    )
    .unwrap();
    std::os::unix::fs::symlink(outside.join("id_ed25519"), env.workdir.join("AGENTS.md")).unwrap();
    env.write("sub/x.txt", "x");
    std::os::unix::fs::symlink(
        outside.join("credentials"),
        env.workdir.join("sub/CLAUDE.md"),
    )
    .unwrap();
    std::fs::create_dir_all(env.workdir.join(".neocode/skills/leak")).unwrap();
    std::os::unix::fs::symlink(
        outside.join("SKILL.md"),
        env.workdir.join(".neocode/skills/leak/SKILL.md"),
    )
    .unwrap();
    // A link inside the workspace is fine; a read denial covers `private/`.
    env.write("docs/rules.md", "DOCS-RULE: fine to read.");
    std::os::unix::fs::symlink("rules.md", env.workdir.join("docs/AGENTS.md")).unwrap();
    env.write("private/AGENTS.md", "PRIVATE-RULE: denied.");
    env.write(
        ".neocode/permissions.toml",
        "deny = [\"read_file(private/**)\"]\n",
    );
    let srv = ScriptedServer::start(vec![
        Reply::tool_calls(&[
            ("c1", "read_file", r#"{"path":"sub/x.txt"}"#),
            ("c2", "list_dir", r#"{"path":"docs"}"#),
            ("c3", "list_dir", r#"{"path":"private"}"#),
        ]),
        Reply::text("done"),
    ])
    .unwrap();
    let agent = env.agent(&srv);
    let (id, events) = turn(&agent, Target::New, "look around");
    for r in srv.requests() {
        let body = r.json().to_string();
        for secret in [
            "SSH-PRIVATE-KEY-MATERIAL",
            "AWS-SECRET",
            "SKILL-SECRET",
            "PRIVATE-RULE",
        ] {
            assert!(!body.contains(secret), "{secret} reached the model: {body}");
        }
    }
    assert!(system(&srv, 1).contains("DOCS-RULE"), "{}", system(&srv, 1));
    let warnings: Vec<String> = events
        .iter()
        .filter_map(|e| match e {
            TurnEvent::Warning { code, message } if code == "instructions_skipped" => {
                Some(message.clone())
            }
            _ => None,
        })
        .collect();
    assert!(
        warnings
            .iter()
            .any(|w| w.starts_with("skipped AGENTS.md: it links outside the workspace")),
        "{warnings:?}"
    );
    assert!(
        warnings
            .iter()
            .any(|w| w.starts_with("skipped sub/CLAUDE.md")),
        "{warnings:?}"
    );
    assert!(
        warnings
            .iter()
            .any(|w| w.starts_with("skipped private/AGENTS.md")
                && w.contains("read_file(private/**)")),
        "{warnings:?}"
    );
    // Nothing of them is stored or exported.
    let export = std::process::Command::new(env!("CARGO_BIN_EXE_neocode"))
        .args(["export", &id])
        .env("NEOCODE_HOME", &env.home)
        .current_dir(&env.workdir)
        .output()
        .unwrap();
    let export = String::from_utf8_lossy(&export.stdout);
    for secret in [
        "SSH-PRIVATE-KEY-MATERIAL",
        "AWS-SECRET",
        "SKILL-SECRET",
        "PRIVATE-RULE",
    ] {
        assert!(!export.contains(secret), "{secret} exported");
    }
    let show = env.show_json(&id);
    let skipped = strings(&show["context"]["problems"]);
    assert!(
        skipped
            .iter()
            .any(|s| s.starts_with("AGENTS.md: skipped: it links outside the workspace (to ")),
        "{skipped:?}"
    );
    assert!(
        skipped
            .iter()
            .any(|s| s.contains("leak/SKILL.md: skipped: it links outside")),
        "{skipped:?}"
    );
    let text = env.show_text(&id);
    has(&text, "AGENTS.md: skipped: it links outside");
    assert!(!text.contains("SSH-PRIVATE-KEY-MATERIAL"), "{text}");
}
