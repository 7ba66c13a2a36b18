//! The live conversation on `TestBackend`: the real app fed the agent's events as a turn sends
//! them, keys injected; snapshots of the streamed cell, tool cards in each state and the
//! approval prompt, and the turn effects the keys produce (approve, deny with a reason,
//! cancel, a second Ctrl-C quitting, slash commands).

use crate::support::Env;
use crate::support::text::has;
use crate::support::tui::{Keys, agent_info, resumed};
use crate::support::tui_flows::user_says;
use crossterm::event::{KeyCode, KeyModifiers};
use neocode::runtime::Sessions;
use neocode::runtime::agent::{
    Agent, FailCode, FinishReason, RuleScope, Target, TurnCommand, TurnEvent, TurnRequest,
    WarningCode,
};
use neocode::runtime::config::{ApprovalPolicy, Overrides, Settings};
use neocode::runtime::tools::ToolKind;
use neocode::session::{AppendMeta, NewMessage, NewSession, Role, ToolCall, Usage};
use neocode::testkit::scripted::{Reply, ScriptedServer};
use neocode::tui::app::{App, Overlay, Screen, run_inline};
use neocode::tui::effect::{Effect, TurnEffect};
use neocode::tui::live::AgentInfo;
use neocode::tui::views;
use neocode::tui::{Intent, Outcome};

pub(super) const NOW: i64 = 1_748_779_200_000;

/// The live conversation of one session on `TestBackend` (other modules of the TUI's tests
/// use it too).
pub(super) struct H {
    pub(super) app: App,
    pub(super) rt: Sessions,
    pub(super) id: String,
    pub(super) root: String,
    pub(super) turns: Vec<TurnEffect>,
    pub(super) env: Env,
}

impl H {
    /// Asserts that the queued message `text` was started as the next turn.
    #[track_caller]
    fn assert_sent_queued(&self, text: &str) {
        assert!(
            self.turns
                .iter()
                .any(|t| matches!(t, TurnEffect::StartQueued { text: sent, .. } if sent == text)),
            "{:?}",
            self.turns
        );
    }

    /// Asserts that the newest effect for the agent is `want`, and takes it.
    #[track_caller]
    pub(super) fn took(&mut self, want: TurnEffect) {
        assert_eq!(self.turns.pop(), Some(want));
    }

    /// The live conversation with `text` sent and its turn started.
    pub(super) fn sending(text: &str) -> H {
        let mut h = H::new();
        h.send(text);
        h
    }

    pub(super) fn new() -> H {
        H::with_messages(1)
    }

    pub(super) fn with_messages(n: usize) -> H {
        let env = Env::new();
        let rt = env.sessions();
        let h = crate::support::titled(&rt, "Live session");
        for i in 0..n {
            let text = if i == 0 {
                "Earlier question".to_string()
            } else {
                format!("Earlier message {i}")
            };
            user_says(&rt, &h.id, &text);
        }
        H::resume(env, rt, h.id, (100, 34), |app| {
            app.conv.set_agent(agent_info("scripted-model"));
        })
    }

    /// The app at `size` on `env`'s session `id` (through `rt`), `setup` before it runs its
    /// first jobs.
    fn resume(
        env: Env,
        rt: Sessions,
        id: String,
        size: (u16, u16),
        setup: impl FnOnce(&mut App),
    ) -> H {
        let root = env.location().root().display().to_string();
        let (mut app, jobs) = resumed(&root, env.tmp.path(), &id, size, NOW);
        setup(&mut app);
        let mut me = H {
            app,
            rt,
            id,
            root,
            turns: Vec::new(),
            env,
        };
        me.run(jobs);
        me
    }

    pub(super) fn ev(&mut self, e: TurnEvent) {
        let effects = self.app.on_turn(e);
        self.run(effects);
    }

    pub(super) fn outcome(&mut self, o: Outcome) {
        let effects = self.app.on_outcome(o);
        self.run(effects);
    }

    pub(super) fn screen(&self) -> String {
        views::draw_to_text(&self.app).replace(&self.root, "[WORKSPACE]")
    }

    /// Plays a piece of the reply's text streaming in.
    pub(super) fn delta(&mut self, text: &str) {
        self.ev(TurnEvent::TextDelta(text.into()));
    }

    /// Sends a message and plays `Started`.
    pub(super) fn send(&mut self, text: &str) {
        self.submit(text);
        let start = self.turns.pop().expect("a turn effect");
        assert_eq!(
            start,
            TurnEffect::Start {
                session_id: Some(self.id.clone()),
                text: Some(text.to_string()),
                images: Vec::new(),
                approval: ApprovalPolicy::Ask,
            }
        );
        self.started();
    }

    /// Plays `Started` for the turn of this session.
    pub(super) fn started(&mut self) {
        let id = self.id.clone();
        self.ev(TurnEvent::Started { session_id: id });
    }

    /// Plays `Finished`: completed, no usage.
    pub(super) fn completed(&mut self) {
        self.finished(FinishReason::Completed);
    }

    /// Plays `Finished` for `reason`, with no usage.
    pub(super) fn finished(&mut self, reason: FinishReason) {
        self.ev(TurnEvent::Finished {
            reason,
            usage: Usage::default(),
        });
    }

    /// Stores `messages` as the turn stores them, then plays `Finished` (completed).
    pub(super) fn store_and_finish(&mut self, messages: &[NewMessage]) {
        self.rt
            .append(&self.id, messages, &AppendMeta::default())
            .unwrap();
        self.completed();
    }

    /// Stores the user's `sent` and the model's `reply` as the turn stores them, then plays
    /// `Finished` (completed); the screen then.
    pub(super) fn replied(&mut self, sent: &str, reply: &str) -> String {
        self.store_and_finish(&[
            NewMessage::text(Role::User, sent),
            NewMessage::text(Role::Assistant, reply),
        ]);
        self.screen()
    }

    /// The text of the turn the last Enter started (taken).
    pub(super) fn started_text(&mut self) -> String {
        match self.turns.pop() {
            Some(TurnEffect::Start {
                text: Some(text), ..
            }) => text,
            other => panic!("no turn started: {other:?}"),
        }
    }

    /// Selects the message two above the newest (Alt-↑ twice) and expands it (Ctrl-Space).
    pub(super) fn expand_two_up(&mut self) {
        self.key_mod(KeyCode::Up, KeyModifiers::ALT);
        self.key_mod(KeyCode::Up, KeyModifiers::ALT);
        self.key_mod(KeyCode::Char(' '), KeyModifiers::CONTROL);
    }
}

fn call(id: &str, name: &str, args: &str) -> ToolCall {
    ToolCall {
        id: id.into(),
        name: name.into(),
        arguments: args.into(),
    }
}

pub(super) fn tool(h: &mut H, id: &str, name: &str, args: &str, kind: ToolKind, summary: &str) {
    h.ev(TurnEvent::ToolCall {
        call: call(id, name, args),
        kind,
        summary: summary.into(),
    });
}

/// The result of call `id`, stored at `seq`.
pub(super) fn result(h: &mut H, id: &str, text: &str, is_error: bool, seq: i64) {
    h.ev(TurnEvent::ToolResult {
        call_id: id.into(),
        text: text.into(),
        is_error,
        seq,
        permission: None,
        diagnostics: None,
    });
}

/// The model asks for `id`: the approval card, with why it asks.
fn approval(h: &mut H, id: &str, name: &str, summary: &str, reason: &str) {
    h.ev(TurnEvent::ApprovalNeeded {
        call: call(id, name, "{}"),
        summary: summary.into(),
        reason: reason.into(),
        rules: vec!["run_command(make)".into()],
    });
}

/// A tool call that waits for approval: its card, then the approval it asks for.
fn asked(h: &mut H, id: &str, name: &str, args: &str, kind: ToolKind, summary: &str, reason: &str) {
    tool(h, id, name, args, kind, summary);
    approval(h, id, name, summary, reason);
}

impl Keys for H {
    fn app(&mut self) -> &mut App {
        &mut self.app
    }

    fn run(&mut self, effects: Vec<Effect>) {
        let t = run_inline(&mut self.app, &self.rt, effects);
        self.turns.extend(t);
    }
}

#[test]
fn streamed_text_shows_as_it_arrives_with_a_spinner_and_elapsed_time() {
    let mut h = H::new();
    assert_eq!(h.app.screen, Screen::Conversation);
    h.send("Explain the **config** loader");
    for piece in [
        "The loader ",
        "reads `config.toml`",
        " and:\n\n- parses",
        " it\n",
    ] {
        h.delta(piece);
    }
    h.app.now_ms = NOW + 2_300;
    let s = h.screen();
    assert!(s.contains("working · 2.3s"), "{s}");
    assert!(
        s.contains("reads config.toml and:"),
        "markdown rendered:\n{s}"
    );
    assert!(s.contains("• parses it"), "{s}");
    assert!(
        s.contains("Explain the config loader"),
        "the prompt shows at once:\n{s}"
    );
    insta::assert_snapshot!("live_streaming", s);
    // Typing goes on; Enter queues the message for after the turn (a store row, shown
    // above the editor), nothing is sent now.
    h.submit("next");
    assert!(h.turns.is_empty(), "{:?}", h.turns);
    let queued = h.rt.queued(&h.id).unwrap();
    assert_eq!(queued.len(), 1);
    assert_eq!(queued[0].text, "next");
    let s = h.screen();
    assert!(
        s.contains("Queued (1)") && s.contains("1. next  next"),
        "{s}"
    );
    insta::assert_snapshot!("live_queued", s);
    // The turn ends: the queued message is the next turn.
    h.completed();
    h.assert_sent_queued("next");
}

#[test]
fn a_budget_stop_holds_the_queue_and_says_so_until_enter_on_an_empty_editor() {
    let mut h = H::sending("Explain it");
    h.submit("then this");
    h.finished(neocode::runtime::agent::FinishReason::LimitReached(
        "max_turns (1/1)".into(),
    ));
    assert!(
        !h.turns
            .iter()
            .any(|t| matches!(t, TurnEffect::StartQueued { .. })),
        "held: {:?}",
        h.turns
    );
    let s = h.screen();
    has(
        &s,
        "held: a budget stopped the turn; Enter on an empty editor sends the next",
    );
    assert_eq!(h.rt.queued(&h.id).unwrap().len(), 1, "still waiting");
    // Enter on the empty editor lets it go.
    h.submit("");
    h.assert_sent_queued("then this");
}

#[test]
fn tool_cards_in_each_state_and_the_approval_prompt() {
    let mut h = H::sending("Fix it");
    // Done.
    tool(
        &mut h,
        "r1",
        "read_file",
        r#"{"path":"src/config.rs"}"#,
        ToolKind::Read,
        "src/config.rs",
    );
    result(&mut h, "r1", "fn load() {}\nfn parse() {}\n", false, 100);
    // Failed.
    tool(
        &mut h,
        "g1",
        "grep",
        r#"{"pattern":"unwrap\\("}"#,
        ToolKind::Read,
        "unwrap\\(",
    );
    result(&mut h, "g1", "invalid regex: unclosed group", true, 101);
    // Waiting for approval, with a diff.
    asked(
        &mut h,
        "e1",
        "edit_file",
        r#"{"path":"src/config.rs","old_string":"let v = s.parse().unwrap();","new_string":"let v = s.parse()?;"}"#,
        ToolKind::Edit,
        "src/config.rs",
        "edits ask under the `ask` policy",
    );
    let s = h.screen();
    has(&s, "Allow? y yes   n no   r no+why   a always");
    assert!(s.contains("- let v = s.parse().unwrap();"), "{s}");
    assert!(s.contains("+ let v = s.parse()?;"), "{s}");
    assert!(s.contains("✓ read_file  src/config.rs  · done"), "{s}");
    assert!(s.contains("✗ grep"), "{s}");
    insta::assert_snapshot!("live_approval_prompt", s);

    // y approves exactly that call.
    h.answer('y');
    h.took(TurnEffect::Command(TurnCommand::Approve {
        call_id: "e1".into(),
        always: false,
    }));
    h.app.now_ms += 1_500;
    has(&h.screen(), "· running 1.5s");
    result(&mut h, "e1", "edited src/config.rs", false, 102);

    // A command denied with a reason typed for the model.
    asked(
        &mut h,
        "c1",
        "run_command",
        r#"{"command":"rm -rf target"}"#,
        ToolKind::Command,
        "rm -rf target",
        "commands ask",
    );
    h.answer('r');
    assert!(matches!(h.app.overlay, Overlay::DenyReason { .. }));
    h.submit("too slow to rebuild");
    h.took(TurnEffect::Command(TurnCommand::Deny {
        call_id: "c1".into(),
        reason: Some("too slow to rebuild".into()),
    }));
    result(
        &mut h,
        "c1",
        "The user denied this call: too slow to rebuild",
        true,
        103,
    );
    // Interrupted: running when the turn is cancelled.
    command(&mut h, "c2", "cargo test");
    h.key(KeyCode::Esc);
    h.took(TurnEffect::Command(TurnCommand::Cancel));
    h.finished(FinishReason::Cancelled);
    let s = h.screen();
    assert!(s.contains("⊘ run_command  rm -rf target  · denied"), "{s}");
    has(&s, "The user denied this call: too slow to rebuild");
    has(&s, "! run_command  cargo test  · interrupted");
    assert!(s.contains("✓ edit_file"), "{s}");
    assert!(s.contains("Cancelled; what arrived is kept"), "{s}");
    insta::assert_snapshot!("live_cards_all_states", s);
}

#[test]
fn several_pending_calls_are_answered_in_order_and_always_is_sent() {
    let mut h = H::sending("Two writes");
    for id in ["w1", "w2"] {
        asked(
            &mut h,
            id,
            "write_file",
            r#"{"path":"a.txt","content":"x"}"#,
            ToolKind::Edit,
            "a.txt",
            "edits ask",
        );
    }
    has(&h.screen(), "waits for its turn to be asked");
    // "always" shows the proposed rule to edit and where it is kept; Tab changes where.
    h.answer('a');
    let screen = h.screen();
    has(&screen, "Always allow, for this session: run_command(make)");
    h.key(KeyCode::Tab);
    h.key(KeyCode::Backspace);
    h.chars(" *)");
    let screen = h.screen();
    has(
        &screen,
        "Always allow, for this workspace: run_command(make *)",
    );
    h.key(KeyCode::Enter);
    h.answer('n');
    assert_eq!(
        h.turns,
        vec![
            TurnEffect::Command(TurnCommand::AlwaysAllow {
                call_id: "w1".into(),
                rules: vec!["run_command(make *)".into()],
                scope: RuleScope::Workspace,
            }),
            TurnEffect::Command(TurnCommand::Deny {
                call_id: "w2".into(),
                reason: None
            }),
        ]
    );
}

/// The model's `run_command` call `id` of `line`: its card.
fn command(h: &mut H, id: &str, line: &str) {
    let args = serde_json::json!({ "command": line }).to_string();
    tool(h, id, "run_command", &args, ToolKind::Command, line);
}

/// A command `line` that waits for approval, "always" proposing `rules`.
fn ask_command(h: &mut H, id: &str, line: &str, reason: &str, rules: &[String]) {
    command(h, id, line);
    h.ev(TurnEvent::ApprovalNeeded {
        call: call(id, "run_command", "{}"),
        summary: line.into(),
        reason: reason.into(),
        rules: rules.to_vec(),
    });
}

/// Issue 35: the card shows every rule "always" keeps for a compound command (one per part),
/// and each can be edited (or left out) before they are kept.
#[test]
fn always_lists_a_rule_per_part_and_edits_each_before_keeping_them() {
    let mut h = H::sending("Rename and test");
    let rules = vec![
        "run_command(sed -i s/a/b/ app.py)".to_string(),
        "run_command(git mv *)".to_string(),
        "run_command(python3 -m unittest)".to_string(),
    ];
    ask_command(
        &mut h,
        "c1",
        "sed -i s/a/b/ app.py && git mv old.py new.py && python3 -m unittest",
        "policy `ask`: commands need approval",
        &rules,
    );
    let s = h.screen();
    has(&s, "a always keeps 3 rules, one per part of the command:");
    for r in &rules {
        assert!(s.contains(&format!("· {r}")), "{r}\n{s}");
    }
    insta::assert_snapshot!("live_always_rules_per_part", s);
    h.answer('a');
    let s = h.screen();
    assert!(
        s.contains(
            "Always allow, for this session (rule 1 of 3): run_command(sed -i s/a/b/ app.py)"
        ),
        "{s}"
    );
    assert!(s.contains("▶ run_command(sed -i s/a/b/ app.py)"), "{s}");
    // The second rule, narrowed; the third left out (emptied).
    h.key(KeyCode::Down);
    for _ in 0.."*)".len() {
        h.key(KeyCode::Backspace);
    }
    h.chars("old.py new.py)");
    h.key(KeyCode::Down);
    h.key_mod(KeyCode::Char('u'), KeyModifiers::CONTROL);
    let s = h.screen();
    assert!(s.contains("· run_command(git mv old.py new.py)"), "{s}");
    h.key(KeyCode::Enter);
    h.took(TurnEffect::Command(TurnCommand::AlwaysAllow {
        call_id: "c1".into(),
        rules: vec![
            "run_command(sed -i s/a/b/ app.py)".into(),
            "run_command(git mv old.py new.py)".into(),
        ],
        scope: RuleScope::Session,
    }));
    has(
        &h.screen(),
        "Allowed; 2 rules are kept for this session (/permissions lists them).",
    );
}

/// Issue 35: where no rule can allow the call (the runtime proposes none) neither the card nor
/// the key bar offers "always", and `a` says why.
#[test]
fn always_is_not_offered_where_no_rule_can_allow_the_call() {
    let mut h = H::sending("Reset a file");
    ask_command(
        &mut h,
        "c2",
        "git checkout -- a.py > log.txt",
        "policy `ask`: commands need approval; no rule can allow it: an output redirection to a file",
        &[],
    );
    let s = h.screen();
    has(&s, "no rule can allow this call, so there is no \"always\"");
    assert!(!s.contains("a always"), "{s}");
    h.answer('a');
    assert!(matches!(h.app.overlay, Overlay::None));
    has(&h.screen(), "No rule can allow this call");
    h.answer('n');
    h.took(TurnEffect::Command(TurnCommand::Deny {
        call_id: "c2".into(),
        reason: None,
    }));
}

#[test]
fn the_queue_panel_drops_a_message_once_it_is_sent() {
    let mut h = H::sending("Explain it");
    h.submit("then this");
    has(&h.screen(), "1. next  then this");
    h.completed();
    h.assert_sent_queued("then this");
    // Sent: the live cell shows it, the panel no longer lists it, also when a read of the
    // session lands before the turn stored it (the row still reads as waiting then).
    h.started();
    assert_eq!(h.rt.queued(&h.id).unwrap().len(), 1, "not stored yet");
    let s = h.screen();
    assert!(!s.contains("Queued (1)"), "{s}");
    assert!(!s.contains("1. next  then this"), "{s}");
    assert!(s.contains("then this"), "the live cell shows it:\n{s}");
}

#[test]
fn ctrl_c_cancels_first_and_quits_second() {
    let mut h = H::sending("Long one");
    h.delta("Once upon");
    h.key_mod(KeyCode::Char('c'), KeyModifiers::CONTROL);
    h.took(TurnEffect::Command(TurnCommand::Cancel));
    assert!(!h.app.quit);
    has(&h.screen(), "cancelling…");
    h.key_mod(KeyCode::Char('c'), KeyModifiers::CONTROL);
    assert!(h.app.quit);
}

#[test]
fn leaving_and_quitting_mid_turn_ask_first_and_the_list_marks_the_turn() {
    let mut h = H::sending("Background please");
    h.delta("working on it");
    h.key_mod(KeyCode::Char('b'), KeyModifiers::CONTROL);
    has(&h.screen(), "The turn keeps running");
    h.key(KeyCode::Char('y'));
    assert_eq!(h.app.screen, Screen::Browse);
    // The list row shows the turn running (a spinner instead of the status mark).
    let s = h.screen();
    assert!(s.contains("⠋ Live session"), "{s}");
    // Quitting asks first.
    h.key(KeyCode::Char('q'));
    assert!(!h.app.quit);
    has(&h.screen(), "A turn is running. Quit anyway?");
    h.key(KeyCode::Char('n'));
    assert!(!h.app.quit);
    // Back into the conversation: the live cell is still there.
    h.key(KeyCode::Enter);
    has(&h.screen(), "working on it");
}

#[test]
fn a_failed_turn_says_why_in_the_status_line() {
    let mut h = H::sending("Hi");
    h.finished(FinishReason::Failed {
        code: FailCode::Auth,
        message: "the provider refused the API key (401)".into(),
    });
    let s = h.screen();
    has(&s, "✗ the provider refused the API key (401) (auth)");
}

#[test]
fn a_failed_mcp_server_stays_on_the_status_line() {
    let mut h = H::sending("Hi");
    h.ev(TurnEvent::Warning {
        code: WarningCode::McpServerFailed,
        message: "MCP server `docs`: cannot start `docs-server`: not found".into(),
    });
    h.completed();
    // Long after the status message expired, the agent line still names the server.
    h.app.expire_status(NOW + 3_600_000);
    let s = h.screen();
    assert!(s.contains("mcp failed: docs"), "{s}");
    assert!(!s.contains("not found"), "the message itself expired:\n{s}");
}

#[test]
fn slash_commands_complete_and_act() {
    let mut h = H::new();
    h.chars("/ap");
    has(&h.screen(), "/approve");
    h.key(KeyCode::Tab);
    assert_eq!(h.app.conv.composer().text(), "/approve ");
    h.submit("auto-edit");
    assert_eq!(h.app.approval(), ApprovalPolicy::AutoEdit);
    has(&h.screen(), "approve auto-edit");
    h.submit("/rename Renamed live");
    assert_eq!(h.rt.header(&h.id).unwrap().title, "Renamed live");
    h.submit("/compact");
    h.took(TurnEffect::Compact {
        session_id: h.id.clone(),
    });
    h.submit("/model other-model");
    h.took(TurnEffect::Model {
        session_id: Some(h.id.clone()),
        name: "other-model".into(),
    });
    // The status line names the model the next request uses at once.
    has(&h.screen(), "other-model ░");
    h.submit("/limits");
    assert!(h.screen().contains("budgets") || h.screen().contains("Budgets"));
    h.submit("/approve network");
    h.took(TurnEffect::AllowNetwork {
        session_id: h.id.clone(),
    });
    assert_eq!(
        h.app.approval(),
        ApprovalPolicy::AutoEdit,
        "policy unchanged"
    );
    // What the agent answers is said on the status line.
    h.outcome(Outcome {
        intent: Intent::Network,
        result: Ok("Network allowed for this session's commands".into()),
    });
    has(&h.screen(), "Network allowed");
    h.submit("/skill");
    h.took(TurnEffect::Skill {
        session_id: Some(h.id.clone()),
        name: None,
    });
    h.submit("/skill deploy");
    h.took(TurnEffect::Skill {
        session_id: Some(h.id.clone()),
        name: Some("deploy".into()),
    });
    h.submit("/bogus");
    has(&h.screen(), "Unknown command /bogus");
    h.submit("/help");
    assert!(matches!(h.app.overlay, Overlay::Help(_)));
}

#[test]
fn no_provider_disables_sending_with_the_reason() {
    let mut h = H::new();
    h.app.conv.set_agent(AgentInfo::default());
    h.submit("hello");
    assert!(h.turns.is_empty());
    assert_eq!(h.app.conv.composer().text(), "hello", "the text stays");
    let s = h.screen();
    has(&s, "Cannot send: no model provider configured");
    assert!(s.contains("no model configured: F1 says how"), "{s}");
}

#[test]
fn interrupted_calls_offer_rerun_and_mark_interrupted() {
    let env = Env::new();
    let rt = env.sessions();
    let s = rt.new_session(NewSession::default()).unwrap();
    let mut a = NewMessage::text(Role::Assistant, "");
    a.tool_calls = vec![call(
        "d1",
        "write_file",
        r#"{"path":"x.txt","content":"1"}"#,
    )];
    // As a turn that crashed leaves it: the calls came from the model here.
    a.tool_metadata = Some(serde_json::json!({ "calls_from": "model" }));
    rt.append(
        &s.id,
        &[NewMessage::text(Role::User, "write x"), a],
        &AppendMeta::default(),
    )
    .unwrap();
    let mut h = H::resume(env, rt, s.id, (100, 30), |app| {
        app.conv.set_provider(Ok("m".into()));
    });
    let screen = h.screen();
    has(&screen, "! write_file  x.txt  · interrupted");
    assert!(screen.contains("Ctrl-R rerun"), "{screen}");
    // The card has the keys: typing goes nowhere, Enter sends nothing (which would replay
    // the calls).
    has(
        &screen,
        "not taking keys: the interrupted calls above have them",
    );
    h.submit("hey");
    assert_eq!(h.app.conv.composer().text(), "");
    assert!(h.turns.is_empty(), "{:?}", h.turns);
    // Mark interrupted: a "not run" result is stored, nothing offers any more.
    h.key_mod(KeyCode::Char('d'), KeyModifiers::CONTROL);
    assert!(h.rt.interrupted_tool_calls(&h.id).unwrap().is_empty());
    let s = h.screen();
    assert!(!s.contains("Ctrl-R rerun"), "{s}");
    // The stored "not run" result reads as interrupted in the transcript.
    assert!(s.contains("! interrupted"), "{s}");
}

#[test]
fn an_attached_image_is_stored_as_an_asset_on_the_message_and_the_turn_answers_it() {
    let mut h = H::new();
    // A real PNG header is enough: the store keeps bytes, the model gets them base64.
    let png = h.env.tmp.path().join("shot.png");
    std::fs::write(&png, b"\x89PNG\r\n\x1a\n0000").unwrap();
    h.submit(&format!("/attach {}", png.display()));
    has(&h.screen(), "1 image attached");
    // A pasted path of an image attaches it too.
    let effects = h.app.on_paste(&format!("'{}'", png.display()));
    h.run(effects);
    assert_eq!(h.app.conv.attachments().len(), 2);
    h.submit("What is in these?");
    // The turn starts with the message and its images.
    h.took(TurnEffect::Start {
        session_id: Some(h.id.clone()),
        text: Some("What is in these?".into()),
        images: vec![png.clone(), png.clone()],
        approval: ApprovalPolicy::Ask,
    });
    // The runtime stores the message with its images, then the turn answers it.
    let srv = ScriptedServer::start(vec![Reply::text("Two screenshots.")]).unwrap();
    let url = srv.base_url();
    let env = move |k: &str| match k {
        "NEOCODE_BASE_URL" => Some(url.clone()),
        "NEOCODE_MODEL" => Some("test-model".to_string()),
        "NEOCODE_API_KEY" => Some("sk-test".to_string()),
        _ => None,
    };
    let settings = Settings::load_with(h.env.tmp.path(), &Overrides::default(), &env).unwrap();
    let agent = Agent::new(h.rt.clone(), settings);
    let w = agent
        .watch(
            Target::Resume(h.id.clone()),
            TurnRequest {
                prompt: Some("What is in these?".into()),
                images: vec![png.clone(), png],
                ..TurnRequest::default()
            },
        )
        .unwrap();
    let events: Vec<TurnEvent> = w.events.iter().collect();
    assert!(
        matches!(
            events.last(),
            Some(TurnEvent::Finished {
                reason: FinishReason::Completed,
                ..
            })
        ),
        "{events:?}"
    );
    let session = h.rt.load(&h.id).unwrap();
    let m = session
        .messages
        .iter()
        .rev()
        .find(|m| m.role == Role::User)
        .unwrap();
    assert_eq!(m.text(), "What is in these?");
    let images: Vec<&neocode::session::Part> = m
        .parts
        .iter()
        .filter(|p| matches!(p, neocode::session::Part::Image { .. }))
        .collect();
    assert_eq!(images.len(), 2, "{m:?}");
    assert_eq!(h.rt.assets(&h.id).unwrap().len(), 2);
    assert!(h.app.conv.attachments().is_empty());
    // The live cell shows the prompt until the transcript has it; the stored message shows
    // its images.
    for ev in events {
        h.ev(ev);
    }
    has(&h.screen(), "[image ");
    // Not an image: refused in words.
    h.submit("/attach notes.txt");
    has(&h.screen(), "is not an image");
}

#[test]
fn at_path_completes_workspace_files() {
    let mut h = H::new();
    let root = std::path::PathBuf::from(&h.root);
    std::fs::create_dir_all(root.join("src/tui")).unwrap();
    std::fs::write(root.join("src/tui/composer.rs"), "").unwrap();
    std::fs::write(root.join("src/tui/compact.rs"), "").unwrap();
    std::fs::write(root.join("README.md"), "").unwrap();
    h.chars("look at @READ");
    h.key(KeyCode::Tab);
    assert_eq!(h.app.conv.composer().text(), "look at @README.md ");
    // The picker lists the matches as the word is typed (no Tab needed) ...
    h.chars("and @src/tui/comp");
    let s = h.screen();
    assert!(s.contains("@src/tui/composer.rs"), "{s}");
    assert!(s.contains("@src/tui/compact.rs"), "{s}");
    assert!(!s.contains("│ @README.md"), "{s}");
    // ... and narrows them; Tab (or Enter) takes the chosen one.
    h.chars("o");
    assert!(!h.screen().contains("@src/tui/compact.rs"));
    h.key(KeyCode::Tab);
    assert_eq!(
        h.app.conv.composer().text(),
        "look at @README.md and @src/tui/composer.rs "
    );
}

#[test]
fn scrolled_up_the_view_stays_put_and_says_new_output_arrived() {
    let mut h = H::with_messages(40);
    h.send("Go on");
    h.delta("first words");
    has(&h.screen(), "first words");
    h.key(KeyCode::PageUp);
    h.delta(" and more");
    let s = h.screen();
    assert!(s.contains("↓ new output"), "{s}");
    assert!(!s.contains("first words and more"), "{s}");
    // Back at the end the view follows the tail again.
    for _ in 0..5 {
        h.key(KeyCode::PageDown);
    }
    let s = h.screen();
    assert!(!s.contains("↓ new output"), "{s}");
    assert!(s.contains("first words and more"), "{s}");
}

#[test]
fn hostile_model_and_tool_text_is_drawn_inert() {
    let mut h = H::sending("hi");
    h.delta("evil \x1b]0;pwned\x07 \x1b[2J text");
    tool(
        &mut h,
        "x1",
        "run_command",
        r#"{"command":"echo"}"#,
        ToolKind::Command,
        "echo \x1b[31mred\x1b[0m",
    );
    approval(&mut h, "x1", "run_command", "echo", "because \x1b[5mblink");
    h.ev(TurnEvent::Warning {
        code: WarningCode::Retrying,
        message: "warn \x1b]52;c;AAAA\x07".into(),
    });
    let s = h.screen();
    assert!(!s.contains('\x1b'), "{s}");
    assert!(!s.contains('\x07'), "{s}");
    assert!(s.contains("evil"), "{s}");
}

#[test]
fn a_session_running_elsewhere_is_marked_read_only_and_help_lists_the_turn_keys() {
    let mut h = H::new();
    let effects = h.app.tick();
    h.run(effects);
    // Another process runs this session (its status says so; the poll brings it in).
    let other = h.env.sessions();
    other
        .update_state(
            &h.id,
            &neocode::session::StateUpdate {
                status: Some(neocode::session::Status::Running),
                ..Default::default()
            },
        )
        .unwrap();
    let effects = h.app.tick();
    h.run(effects);
    let s = h.screen();
    assert!(s.contains("running in another process"), "{s}");
    // Help: the turn, approval and resume keys and the slash commands, from the key table.
    h.key(KeyCode::F(1));
    let mut seen = String::new();
    for _ in 0..30 {
        seen.push_str(&h.screen());
        h.key(KeyCode::PageDown);
    }
    for want in [
        "While a turn runs",
        "A tool call asks for approval",
        "no, with a reason sent to the model",
        "Ctrl-R",
        "/compact",
        "/approve [ask|auto-edit|never-ask|network]",
        "/skill [NAME]",
    ] {
        assert!(seen.contains(want), "help lacks {want:?}");
    }
}

/// A turn whose edit waits for approval.
fn waiting_edit(h: &mut H) {
    h.send("Edit it");
    edit_asks(h);
}

/// An edit of a.txt that waits for approval.
fn edit_asks(h: &mut H) {
    asked(
        h,
        "e1",
        "edit_file",
        r#"{"path":"a.txt","old_string":"a","new_string":"b"}"#,
        ToolKind::Edit,
        "a.txt",
        "edits ask",
    );
}

fn approvals(h: &H) -> usize {
    h.turns
        .iter()
        .filter(|t| matches!(t, TurnEffect::Command(_)))
        .count()
}

fn clock(h: &mut H, ms: i64) {
    let t = h.app.now_ms + ms;
    let e = h.app.on_clock(t);
    h.run(e);
}

#[test]
fn typing_never_answers_a_waiting_approval() {
    let mut h = H::new();
    waiting_edit(&mut h);
    // The card has the keys: the editor says so.
    let s = h.screen();
    assert!(s.contains("▶ Allow?"), "{s}");
    has(&s, "not taking keys: the approval above has them");
    // "hey there" typed quickly (all in one frame, as a burst arrives): nothing answers it,
    // nothing lands in the editor, however long it then waits.
    clock(&mut h, 2_000);
    h.chars("hey there");
    clock(&mut h, 2_000);
    assert_eq!(approvals(&h), 0, "{:?}", h.turns);
    assert_eq!(h.app.conv.composer().text(), "");
    assert_eq!(h.app.conv.live().unwrap().asking.len(), 1);
    has(&h.screen(), "Typing is not taken");
    // Typing a word that starts with an answer key after a pause: the next letter follows
    // at once, so it is a word, not an answer.
    clock(&mut h, 2_000);
    h.key(KeyCode::Char('a'));
    clock(&mut h, 100);
    h.key(KeyCode::Char('n'));
    clock(&mut h, 2_000);
    assert_eq!(approvals(&h), 0, "{:?}", h.turns);
    // A key the moment the card appears was meant for the editor.
    let fresh = h.app.conv.live().unwrap().asking.len();
    assert_eq!(fresh, 1);
    // A paste is typing too: it goes nowhere and answers nothing.
    clock(&mut h, 2_000);
    let e = h.app.on_paste("y");
    h.run(e);
    clock(&mut h, 2_000);
    assert_eq!(approvals(&h), 0, "{:?}", h.turns);
    assert_eq!(h.app.conv.composer().text(), "");
    // Enter does not send what the editor holds while the card waits.
    h.key(KeyCode::Enter);
    assert!(h.turns.is_empty(), "{:?}", h.turns);
    // A deliberate y approves, a moment later.
    clock(&mut h, 2_000);
    h.key(KeyCode::Char('y'));
    assert_eq!(approvals(&h), 0, "not before the quiet after it");
    clock(&mut h, neocode::tui::app::ANSWER_AFTER_MS);
    assert_eq!(
        h.turns,
        vec![TurnEffect::Command(TurnCommand::Approve {
            call_id: "e1".into(),
            always: false
        })]
    );
}

#[test]
fn a_key_as_the_card_appears_and_typing_into_it_do_not_answer() {
    let mut h = H::sending("Edit it");
    // The user types the next message while the turn runs; the card appears mid-word.
    h.chars("he");
    edit_asks(&mut h);
    clock(&mut h, 100);
    h.key(KeyCode::Char('y'));
    clock(&mut h, 2_000);
    assert_eq!(approvals(&h), 0, "{:?}", h.turns);
    // What was typed before the card stays in the editor, untouched.
    assert_eq!(h.app.conv.composer().text(), "he");
    // Esc still cancels the turn while the card waits.
    h.key(KeyCode::Esc);
    assert_eq!(h.turns, vec![TurnEffect::Command(TurnCommand::Cancel)]);
}

#[test]
fn typing_never_answers_a_proposed_plan() {
    use neocode::session::{Plan, Step};
    let mut h = H::new();
    h.submit("/plan do it");
    h.turns.clear();
    h.started();
    let step = |id: &str| Step {
        id: id.into(),
        title: format!("Step {id}"),
        depends_on: Vec::new(),
    };
    h.ev(TurnEvent::PlanProposed {
        plan: Plan {
            steps: vec![step("a"), step("b")],
        },
        layers: vec![vec!["a".into(), "b".into()]],
        approved: false,
    });
    assert!(matches!(h.app.overlay, Overlay::Plan(_)));
    // "yes do it" typed fast: neither y, n nor d answers.
    clock(&mut h, 2_000);
    h.chars("yes do it");
    clock(&mut h, 2_000);
    assert!(h.turns.is_empty(), "{:?}", h.turns);
    assert!(matches!(h.app.overlay, Overlay::Plan(ref p) if p.dropping.is_none()));
    h.answer('y');
    assert_eq!(h.turns, vec![TurnEffect::Command(TurnCommand::ApprovePlan)]);
}

#[test]
fn ctrl_u_deletes_to_the_line_start_and_drafts_survive_esc() {
    let mut h = H::new();
    // Ctrl-U is readline's: the line up to the cursor goes (not one undo step).
    h.chars("hello world");
    h.key_mod(KeyCode::Char('u'), KeyModifiers::CONTROL);
    assert_eq!(h.app.conv.composer().text(), "");
    // An existing session's unsent text is there again when it is opened again.
    h.chars("for the live session");
    h.key(KeyCode::Esc);
    assert_eq!(h.app.screen, Screen::Browse);
    // A new session's draft: kept on Esc (nothing is saved), back on `n`.
    h.key(KeyCode::Char('n'));
    assert_eq!(
        h.app.conv.composer().text(),
        "",
        "a new session starts empty"
    );
    h.chars("half a thought");
    h.key(KeyCode::Esc);
    assert_eq!(h.app.screen, Screen::Browse);
    has(&h.screen(), "Your unsent message is kept");
    assert_eq!(h.rt.count().unwrap(), 1, "nothing was saved");
    h.key(KeyCode::Char('n'));
    assert_eq!(h.app.conv.composer().text(), "half a thought");
    h.key(KeyCode::Esc);
    h.key(KeyCode::Enter);
    assert_eq!(h.app.screen, Screen::Conversation);
    assert_eq!(h.app.conv.composer().text(), "for the live session");
}

#[test]
fn a_cancelled_reply_is_headed_cancelled_not_error() {
    let mut h = H::sending("Tell me a story");
    h.delta("Once upon");
    h.key(KeyCode::Esc);
    // What the runtime stores for a reply cancelled mid-stream.
    let mut m = NewMessage::text(Role::Assistant, "Once upon");
    m.is_error = true;
    m.tool_metadata = Some(serde_json::json!({"incomplete": true, "reason": "cancelled"}));
    h.rt.append(&h.id, &[m], &AppendMeta::default()).unwrap();
    h.finished(FinishReason::Cancelled);
    let s = h.screen();
    assert!(s.contains("⊘ cancelled"), "{s}");
    assert!(!s.contains("✗ error"), "{s}");
}

#[test]
fn a_cancelled_command_is_never_done_and_compact_starts_from_a_clean_cell() {
    let mut h = H::sending("Run the tests");
    command(&mut h, "c1", "sleep 30");
    h.app.now_ms += 5_400;
    h.key(KeyCode::Esc);
    h.took(TurnEffect::Command(TurnCommand::Cancel));
    // The killed command's result, as the runtime stores it (not an error), then the end.
    result(
        &mut h,
        "c1",
        "[cancelled by the user; the command and everything it started were killed]\n",
        false,
        50,
    );
    h.finished(FinishReason::Cancelled);
    let s = h.screen();
    assert!(s.contains("⊘ run_command  sleep 30  · cancelled"), "{s}");
    assert!(!s.contains("· done"), "{s}");
    // /compact: the cancelled turn is not drawn again below the summary.
    h.submit("/compact");
    h.took(TurnEffect::Compact {
        session_id: h.id.clone(),
    });
    h.outcome(Outcome {
        intent: Intent::Compact,
        result: Ok("Compacted: 4 messages → 2 (summary + recent tail).".into()),
    });
    let s = h.screen();
    assert!(!s.contains("sleep 30"), "{s}");
    assert!(!s.contains("Run the tests"), "{s}");
    assert!(h.app.conv.live().is_none());
}

#[test]
fn up_recalls_the_stored_history_this_session_first_then_the_workspace() {
    let mut h = H::with_messages(3);
    // Opened with --resume: ↑ recalls the session's own messages from the store.
    h.key(KeyCode::Up);
    assert_eq!(h.app.conv.composer().text(), "Earlier message 2");
    h.key(KeyCode::Down);
    assert_eq!(h.app.conv.composer().text(), "");
    // Another session of the workspace, newer than this one's messages.
    let other = crate::support::titled(&h.rt, "Other");
    user_says(&h.rt, &other.id, "from the other session");
    user_says(&h.rt, &other.id, "newest in the other session");
    // A plan step's prompt (a child session that is not a fork) is not something typed.
    let step =
        h.rt.new_session(NewSession {
            title: "step a".into(),
            parent_id: Some(other.id),
            ..NewSession::default()
        })
        .unwrap();
    user_says(&h.rt, &step.id, "Do step a of the plan");
    // As after a restart: the conversation is opened again, the editor's memory is empty.
    h.key(KeyCode::Esc);
    h.key(KeyCode::Enter);
    assert_eq!(h.app.screen, Screen::Conversation);
    let mut seen = Vec::new();
    for _ in 0..6 {
        h.key(KeyCode::Up);
        seen.push(h.app.conv.composer().text());
    }
    assert_eq!(
        seen,
        [
            "Earlier message 2",
            "Earlier message 1",
            "Earlier question",
            "newest in the other session",
            "from the other session",
            "from the other session",
        ]
    );
    h.key(KeyCode::Down);
    assert_eq!(h.app.conv.composer().text(), "newest in the other session");
}

#[test]
fn a_background_turn_shows_live_in_the_detail_pane() {
    let mut h = H::sending("Background please");
    h.delta("working on it");
    h.key_mod(KeyCode::Char('b'), KeyModifiers::CONTROL);
    h.key(KeyCode::Char('y'));
    assert_eq!(h.app.screen, Screen::Browse);
    // The detail pane shows the sent message and the text streamed so far…
    let s = h.screen();
    assert!(s.contains("Background please"), "{s}");
    assert!(s.contains("working on it"), "{s}");
    // …and goes on streaming without Enter.
    h.delta(", nearly there");
    let s = h.screen();
    assert!(s.contains("working on it, nearly there"), "{s}");
}

#[test]
fn a_long_failure_is_wrapped_whole_not_cut() {
    let mut h = H::new();
    h.app.on_resize(120, 35);
    h.send("Hi");
    h.finished(FinishReason::Failed {
            code: FailCode::ServerError,
            message: "server error HTTP 500 from http://127.0.0.1:45678/v1 (after 4 attempts): the upstream model server is overloaded right now, please retry in a minute".into(),
        });
    let s = h.screen();
    assert!(s.contains("please retry in a minute (server_error)"), "{s}");
    assert!(!s.contains("(server_err…"), "{s}");
}

#[test]
fn a_card_says_which_rule_let_its_call_run() {
    let mut h = H::sending("Build it");
    tool(
        &mut h,
        "m1",
        "run_command",
        r#"{"command":"make all"}"#,
        ToolKind::Command,
        "run_command make all",
    );
    h.ev(TurnEvent::ToolResult {
        call_id: "m1".into(),
        text: "built".into(),
        is_error: false,
        seq: 99,
        permission: Some(neocode::runtime::agent::Permission {
            decision: "allow".into(),
            by: "rule".into(),
            rule: Some("run_command(make *)".into()),
            file: Some("/ws/.neocode/permissions.toml".into()),
            line: Some(2),
            reason: None,
        }),
        diagnostics: None,
    });
    let s = h.screen();
    has(
        &s,
        "allowed by rule run_command(make *) (/ws/.neocode/permissions.toml:2)",
    );
}

/// The session's ledger as a turn leaves it: `cost` dollars so far.
pub(super) fn spent(h: &H, cost: Option<f64>) {
    let mut ledger = neocode::session::RuntimeLedger::default();
    ledger.usage.input_tokens = 1000;
    ledger.usage.cost_usd = cost;
    h.rt.update_state(
        &h.id,
        &neocode::session::StateUpdate {
            ledger: neocode::session::Change::Set(ledger),
            ..Default::default()
        },
    )
    .unwrap();
}

#[test]
fn the_status_line_shows_the_turns_and_the_sessions_dollars_only_when_priced() {
    let mut h = H::new();
    // A model without a price: tokens only, no dollar anywhere on the line.
    spent(&h, None);
    h.send("Hi");
    h.completed();
    let s = h.screen();
    assert!(s.contains(" tok "), "{s}");
    assert!(!s.contains('$'), "{s}");

    // Priced calls: $0.12 before the turn, $0.17 after it.
    spent(&h, Some(0.12));
    h.completed();
    let s = h.screen();
    assert!(s.contains("· $0.12 session "), "{s}");
    h.send("Again");
    spent(&h, Some(0.17));
    h.completed();
    let s = h.screen();
    assert!(s.contains("· $0.05 turn · $0.17 session "), "{s}");
}

#[test]
fn provider_lists_or_switches_the_profile_of_the_next_turns() {
    let mut h = H::new();
    h.chars("/prov");
    has(&h.screen(), "/provider");
    h.key(KeyCode::Tab);
    assert_eq!(h.app.conv.composer().text(), "/provider ");
    h.submit("");
    h.took(TurnEffect::Provider {
        session_id: Some(h.id.clone()),
        name: None,
    });
    h.outcome(Outcome {
        intent: Intent::Provider,
        result: Ok("Profiles: claude (current), local. /provider NAME switches.".into()),
    });
    has(&h.screen(), "claude (current), local");
    h.submit("/provider local");
    h.took(TurnEffect::Provider {
        session_id: Some(h.id.clone()),
        name: Some("local".into()),
    });
    h.outcome(Outcome {
        intent: Intent::Provider,
        result: Err("Cannot switch the profile: session busy".into()),
    });
    has(&h.screen(), "Cannot switch the profile");
    // Not while a turn runs.
    h.send("Hi");
    h.submit("/provider claude");
    assert!(
        !h.turns
            .iter()
            .any(|t| matches!(t, TurnEffect::Provider { .. })),
        "{:?}",
        h.turns
    );
    has(&h.screen(), "/provider: wait for the turn");
}

/// Issue 35: `/permissions` asks for the rules in force and shows them grouped by source (the
/// view the user reads); `d` on one of the session's own asks the agent to revoke it, and the
/// list is read again once it is.
#[test]
fn permissions_shows_the_rules_in_force_and_d_revokes_a_session_rule() {
    use neocode::runtime::agent::RulesInForce;
    use neocode::runtime::policy::permissions::{List, RuleRef};
    let mut h = H::new();
    h.submit("/permissions");
    h.took(TurnEffect::Permissions {
        session_id: Some(h.id.clone()),
    });
    let ws_file = std::path::Path::new(&h.root).join(".neocode/permissions.toml");
    let rules = RulesInForce {
        session: vec!["run_command(git mv *)".into(), "sandbox:network".into()],
        files: vec![(
            List::Ask,
            RuleRef {
                text: "run_command(git push *)".into(),
                file: ws_file.clone(),
                line: 3,
            },
        )],
        workspace_file: ws_file,
        home_file: "/nonexistent-home/.neocode/config.toml".into(),
        ..RulesInForce::default()
    };
    let effects = h.app.on_rules(Some(h.id.clone()), Ok(rules));
    h.run(effects);
    let s = h.screen();
    assert!(s.contains("Permissions · 3 rules"), "{s}");
    assert!(s.contains("▶ allow   run_command(git mv *)"), "{s}");
    assert!(s.contains("ask     run_command(git push *) :3"), "{s}");
    insta::assert_snapshot!("permissions_dialog", s);
    h.key(KeyCode::Char('d'));
    h.took(TurnEffect::RevokeGrant {
        session_id: h.id.clone(),
        grant: "run_command(git mv *)".into(),
    });
    h.outcome(Outcome {
        intent: Intent::Revoke,
        result: Ok("Revoked `run_command(git mv *)`.".into()),
    });
    h.took(TurnEffect::Permissions {
        session_id: Some(h.id.clone()),
    });
    h.key(KeyCode::Esc);
    assert!(matches!(h.app.overlay, Overlay::None));
}

#[test]
fn an_edit_card_counts_the_diagnostics_its_result_carried() {
    use neocode::runtime::extensions::lsp::{DiagnosticItem, DiagnosticReport};
    let mut h = H::sending("Make total a string");
    let args = r#"{"path":"calc.py","old_string":"add(1, 2)","new_string":"add(1, \"two\")"}"#;
    tool(&mut h, "e1", "edit_file", args, ToolKind::Edit, "calc.py");
    let item = |line: u32, severity: &str| DiagnosticItem {
        path: "calc.py".into(),
        line,
        column: 5,
        severity: severity.into(),
        message: "bad".into(),
        server: "pyright".into(),
    };
    h.ev(TurnEvent::ToolResult {
        call_id: "e1".into(),
        text: "edited calc.py (+1 -1 lines):\n@@ -5 +5 @@\n-total = add(1, 2)\n+total = add(1, \"two\")\n\npyright reports 1 error and 2 warnings in calc.py:".into(),
        is_error: false,
        seq: 100,
        permission: None,
        diagnostics: Some(Box::new(DiagnosticReport {
            errors: 1,
            warnings: 2,
            items: vec![item(5, "error"), item(1, "warning"), item(2, "warning")],
        })),
    });
    tool(&mut h, "e2", "edit_file", args, ToolKind::Edit, "calc.py");
    result(
        &mut h,
        "e2",
        "edited calc.py (+1 -1 lines):\n@@ -5 +5 @@\n-a\n+b",
        false,
        101,
    );
    let s = h.screen();
    let heads: Vec<&str> = s
        .lines()
        .filter(|l| l.contains("edit_file  calc.py"))
        .collect();
    assert_eq!(heads.len(), 2, "{s}");
    assert!(
        heads[0].contains("· done") && heads[0].contains("· done in 0.0s  1 error, 2 warnings"),
        "{s}"
    );
    assert!(
        !heads[1].contains("error") && !heads[1].contains("warning"),
        "{s}"
    );
}

/// Sends a message and plays the model's `task` call `t1` (profile `writer`).
pub(super) fn send_task(h: &mut H) {
    h.send("Have it written");
    tool(
        h,
        "t1",
        "task",
        r#"{"prompt":"Write out.txt","agent":"writer"}"#,
        ToolKind::Agent,
        "task (writer)",
    );
}

/// `event` of sub-agent `child`, started by the parent's call `t1`.
pub(super) fn child_ev(h: &mut H, child: &str, event: TurnEvent) {
    h.ev(TurnEvent::Subagent {
        session_id: child.into(),
        call_id: "t1".into(),
        agent: Some("writer".into()),
        event: Box::new(event),
    });
}

#[test]
fn a_sub_agents_calls_show_named_after_it_and_its_question_is_answered_here() {
    let mut h = H::new();
    send_task(&mut h);
    let child = "0a1b2c3d-child-session";
    child_ev(
        &mut h,
        child,
        TurnEvent::Started {
            session_id: child.into(),
        },
    );
    child_ev(
        &mut h,
        child,
        TurnEvent::ToolCall {
            call: call("c1", "write_file", r#"{"path":"out.txt","content":"x\n"}"#),
            kind: ToolKind::Edit,
            summary: "out.txt".into(),
        },
    );
    child_ev(
        &mut h,
        child,
        TurnEvent::ApprovalNeeded {
            call: call("c1", "write_file", r#"{"path":"out.txt","content":"x\n"}"#),
            summary: "sub-agent 0a1b2c3d (writer): out.txt".into(),
            reason: "policy `ask`: file changes need approval".into(),
            rules: vec!["write_file(./*.txt)".into()],
        },
    );
    let s = h.screen();
    has(
        &s,
        "write_file  sub-agent 0a1b2c3d (writer): out.txt  · waiting for approval",
    );
    has(&s, "▸ sub-agent 0a1b2c3d (writer) started");
    has(&s, "Allow? y yes");
    h.answer('y');
    h.took(TurnEffect::Command(TurnCommand::Approve {
        call_id: "c1".into(),
        always: false,
    }));
    child_ev(
        &mut h,
        child,
        TurnEvent::Finished {
            reason: FinishReason::Completed,
            usage: Usage {
                input_tokens: 1200,
                output_tokens: 34,
            },
        },
    );
    let s = h.screen();
    // The child's card is in its own session now; the parent's task card stays.
    assert!(!s.contains("(writer): out.txt"), "{s}");
    has(&s, "task  (writer)  · running");
    has(&s, "■ sub-agent 0a1b2c3d (writer) completed · 1234 tokens");
}
