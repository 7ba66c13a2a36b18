//! [`TurnLink`]: where the loop's turn effects go (the agent's turns, commands, compaction,
//! model and provider switches), their events sent back to the loop as [`Msg::Turn`].

use std::sync::mpsc::Sender;
use std::time::{Duration, Instant};

use super::msg::Msg;
use crate::runtime::agent::{
    Agent, Op, OpError, OpOutcome, PlanRequest, Sink, Target, TurnHandle, TurnRequest,
};
use crate::runtime::config::{Api, ProviderStatus};
use crate::tui::effect::{Intent, Outcome, TurnEffect};
use crate::tui::error::Failure;

/// Where turn effects go: `dispatch` submits each as an [`Op`] to the agent (a turn runs on
/// its own thread, owned by the runtime; commands reach the running one) and words the
/// outcome for the status line; this link only holds the running turn's handle. The turn's
/// thread sends its events to the loop as [`Msg::Turn`]. Without a configured provider every
/// turn effect is refused with what to set, which the status line shows.
pub struct TurnLink {
    events: Sender<Msg>,
    pub(super) agent: Option<Agent>,
    /// The running turn (its thread ends after its last event).
    running: Option<TurnHandle>,
}

impl TurnLink {
    /// A link without an agent: every turn effect is refused.
    pub(crate) fn new(events: Sender<Msg>) -> TurnLink {
        TurnLink {
            events,
            agent: None,
            running: None,
        }
    }

    /// A link that starts turns on `agent`.
    pub fn with_agent(events: Sender<Msg>, agent: Agent) -> TurnLink {
        TurnLink {
            events,
            agent: Some(agent),
            running: None,
        }
    }

    fn agent(&self) -> Result<&Agent, crate::tui::error::Failure> {
        let a = self
            .agent
            .as_ref()
            .ok_or_else(|| Failure::new("no model provider is connected to the TUI"))?;
        match a.provider_status() {
            ProviderStatus::Ready { .. } => Ok(a),
            ProviderStatus::Missing(m) => Err(Failure::new(m)),
        }
    }

    /// Whether a turn is still running.
    pub fn busy(&mut self) -> bool {
        if self.running.as_ref().is_some_and(TurnHandle::is_finished)
            && let Some(h) = self.running.take()
        {
            h.join();
        }
        self.running.is_some()
    }

    /// Carries out one turn effect: an [`Op`] submitted to the agent (the ones that block run
    /// off the loop), its outcome worded for the status line.
    pub fn dispatch(&mut self, effect: &TurnEffect) -> Result<(), crate::tui::error::Failure> {
        match effect {
            TurnEffect::Start { .. } | TurnEffect::StartQueued { .. } | TurnEffect::Plan { .. } => {
                self.start(effect)
            }
            TurnEffect::Command(cmd) => {
                let Some(h) = &self.running else {
                    return Err("no turn is running".into());
                };
                let to = Target::Resume(h.session_id.clone());
                self.any_agent()?
                    .submit(to, Op::Command(cmd.clone()), Sink::none())
                    .map(drop)
                    // The handle is still held: the turn is ending.
                    .map_err(|_| Failure::new("the turn has already ended"))
            }
            TurnEffect::CommandTo { session_id, cmd } => self
                .any_agent()?
                .submit(
                    Target::Resume(session_id.clone()),
                    Op::Command(cmd.clone()),
                    Sink::none(),
                )
                .map(drop)
                .map_err(|_| Failure::new("that sub-agent has already ended")),
            TurnEffect::Compact { session_id } => {
                let to = Target::Resume(session_id.clone());
                self.off_loop(
                    "neocode-compact",
                    Intent::Compact,
                    move |agent| match agent.submit(to, Op::Compact, Sink::none()) {
                        Ok(OpOutcome::Compacted(c)) => Ok(format!("Compacted: {}.", c.describe())),
                        other => Err(crate::tui::error::failed!(
                            "Cannot compact: {}",
                            failure(other)
                        )),
                    },
                )
            }
            TurnEffect::Models => self.off_loop("neocode-models", Intent::Models, |agent| {
                match agent.submit(Target::New, Op::ListModels, Sink::none()) {
                    Ok(OpOutcome::Models(names)) => Ok(names.join("\n")),
                    other => Err(crate::tui::error::failed!(
                        "Cannot list the models: {}",
                        failure(other)
                    )),
                }
            }),
            TurnEffect::AllowNetwork { session_id } => {
                let to = Target::Resume(session_id.clone());
                self.off_loop(
                    "neocode-network",
                    Intent::Network,
                    move |agent| match agent.submit(to, Op::AllowNetwork, Sink::none()) {
                        Ok(OpOutcome::NetworkAllowed { .. }) => Ok(
                            "Network allowed for this session's commands, from its next \
                                     turn (stored with the session)."
                                .to_string(),
                        ),
                        other => Err(crate::tui::error::failed!(
                            "Cannot allow the network: {}",
                            failure(other)
                        )),
                    },
                )
            }
            TurnEffect::Skill { session_id, name } => {
                let to = target(session_id.as_ref());
                let name = name.clone();
                self.off_loop("neocode-skill", Intent::Skill, move |agent| {
                    // Skill names, descriptions and why a workspace's are left out are the
                    // workspace's own text: one sanitised line for the status line.
                    let line = |s: String| crate::sanitize::line(&s).into_owned();
                    let asked = name.clone();
                    skill_answer(agent.submit(to, Op::Skill(name), Sink::none()), asked)
                        .map(line)
                        .map_err(|e| Failure::new(line(e.to_string())))
                })
            }
            TurnEffect::Model { session_id, name } => self.model(session_id.as_deref(), name),
            TurnEffect::Provider { session_id, name } => {
                self.switch_provider(session_id.clone(), name.as_deref())
            }
            TurnEffect::Permissions { session_id } => self.list_rules(session_id.clone()),
            TurnEffect::RevokeGrant { session_id, grant } => {
                self.revoke(session_id.clone(), grant.clone())
            }
        }
    }

    /// `/model NAME`: the session's model from its next turn (kept with it), or the model of
    /// the new sessions this TUI starts; the status line also says when the server does not
    /// list the name.
    fn model(
        &mut self,
        session_id: Option<&str>,
        name: &str,
    ) -> Result<(), crate::tui::error::Failure> {
        let name = name.to_string();
        let Some(id) = session_id.map(str::to_string) else {
            self.switch_model(&name)?;
            // Whether the server lists it, asked off the loop: said only when it does not.
            let agent = self.any_agent()?.clone();
            return self.spawn("neocode-model-check", move |tx| {
                if let Some(note) = unlisted(&agent, &name) {
                    let _ = tx.send(Msg::Outcome(Outcome {
                        intent: Intent::Model,
                        result: Ok(format!("The new session uses {name}, but {note}.")),
                    }));
                }
            });
        };
        self.off_loop("neocode-model", Intent::Model, move |agent| {
            match agent.submit(Target::Resume(id), Op::SetModel(name.clone()), Sink::none()) {
                Ok(OpOutcome::ModelSet { .. }) => Ok(match unlisted(&agent, &name) {
                    Some(note) => {
                        format!("This session uses {name} from its next turn, but {note}.")
                    }
                    None => format!(
                        "This session uses {name} from its next turn (kept with it; \
                         run --model overrides it for one run)."
                    ),
                }),
                other => Err(crate::tui::error::failed!(
                    "Cannot switch the model: {}",
                    failure(other)
                )),
            }
        })
    }

    /// `/permissions`, `d`: takes `grant` out of the session's own rules, off the loop.
    fn revoke(&self, id: String, grant: String) -> Result<(), crate::tui::error::Failure> {
        let agent = self.any_agent()?.clone();
        self.spawn("neocode-revoke", move |tx| {
            let shown = crate::sanitize::line(&grant).into_owned();
            let result = match agent.revoke_grant(&id, &grant) {
                Ok(true) => Ok(format!(
                    "Revoked `{shown}`: calls it allowed ask again from the next turn."
                )),
                Ok(false) => Ok(format!("`{shown}` was not among this session's rules.")),
                Err(e) => Err(crate::tui::error::failed!(
                    "Cannot revoke it: {}",
                    e.message
                )),
            };
            let _ = tx.send(Msg::Outcome(Outcome {
                intent: Intent::Revoke,
                result,
            }));
        })
    }

    /// The agent, whether or not it can send (rules need no model).
    fn any_agent(&self) -> Result<&Agent, crate::tui::error::Failure> {
        self.agent
            .as_ref()
            .ok_or_else(|| Failure::new("no settings are loaded (see the status line)"))
    }

    /// `/permissions`: reads the rules in force off the loop; they come back as
    /// [`Msg::Rules`].
    fn list_rules(&self, session_id: Option<String>) -> Result<(), crate::tui::error::Failure> {
        let agent = self.any_agent()?.clone();
        self.spawn("neocode-rules", move |tx| {
            let rules = agent
                .rules_in_force(session_id.as_deref())
                .map_err(|e| Failure::new(e.message));
            let _ = tx.send(Msg::Rules { session_id, rules });
        })
    }

    /// Runs `work` on its own thread with the loop's sender.
    fn spawn(
        &self,
        name: &str,
        work: impl FnOnce(Sender<Msg>) + Send + 'static,
    ) -> Result<(), crate::tui::error::Failure> {
        let tx = self.events.clone();
        std::thread::Builder::new()
            .name(name.into())
            .spawn(move || work(tx))
            .map(|_| ())
            .map_err(|e| crate::tui::error::failed!("cannot start a thread: {e}"))
    }

    /// Starts a turn or a plan run (`TurnEffect::Start`, `TurnEffect::Plan`).
    fn start(&mut self, effect: &TurnEffect) -> Result<(), crate::tui::error::Failure> {
        // The next queued message is sent once the turn before it said it finished: its
        // thread is ending, so it is waited for rather than refused.
        if matches!(effect, TurnEffect::StartQueued { .. })
            && let Some(h) = self.running.take()
        {
            h.join();
        }
        if self.busy() {
            return Err("a turn is already running".into());
        }
        // The runtime checks the provider when it opens the session: a session that keeps a
        // [providers.NAME] profile runs on it even when nothing else is configured.
        let agent = self.any_agent()?;
        let (to, op) = match effect {
            TurnEffect::Start {
                session_id,
                text,
                images,
                approval,
            } => (
                target(session_id.as_ref()),
                Op::Turn(TurnRequest {
                    prompt: text.clone(),
                    images: images.clone(),
                    approval: Some(*approval),
                    ..TurnRequest::default()
                }),
            ),
            TurnEffect::StartQueued {
                session_id,
                qid,
                approval,
                ..
            } => (
                Target::Resume(session_id.clone()),
                Op::Queued {
                    qid: *qid,
                    approval: Some(*approval),
                },
            ),
            TurnEffect::Plan {
                session_id,
                goal,
                approval,
                width,
                retry_failed,
            } => (
                target(session_id.as_ref()),
                Op::Plan(PlanRequest {
                    goal: goal.clone(),
                    width: (*width).max(1),
                    retry_failed: *retry_failed,
                    approval: Some(*approval),
                    ..PlanRequest::default()
                }),
            ),
            _ => return Err("not a turn to start".into()),
        };
        match agent.submit(to, op, self.sink()) {
            Ok(OpOutcome::Started(s)) => {
                self.running = Some(s.handle);
                Ok(())
            }
            other => Err(Failure::new(failure(other))),
        }
    }

    /// `/model NAME` with no session yet: the model of the new sessions this TUI starts.
    fn switch_model(&mut self, name: &str) -> Result<(), crate::tui::error::Failure> {
        let Some(a) = &self.agent else {
            return Err("no model provider is connected to the TUI".into());
        };
        let settings = a.with_model(name).settings().clone();
        if let ProviderStatus::Missing(m) = settings.provider_status() {
            return Err(Failure::new(m));
        }
        // Same extensions: MCP servers are not started again.
        self.agent = Some(a.with_model(name));
        Ok(())
    }

    /// What a turn's thread sends its events to: the loop's channel. When the loop is gone
    /// the turn is cancelled (through its commands, which the sink is built with) rather
    /// than run unseen.
    fn sink(&self) -> Sink {
        let tx = self.events.clone();
        Sink::new(move |commands| {
            let commands = commands.clone();
            move |ev| {
                if tx.send(Msg::Turn(ev)).is_err() {
                    commands.cancel();
                }
            }
        })
    }

    /// Runs `work` with the agent on its own thread, so the render loop never waits on the
    /// store or the provider; its outcome comes back as [`Msg::Outcome`].
    pub(super) fn off_loop(
        &self,
        name: &str,
        intent: Intent,
        work: impl FnOnce(Agent) -> Result<String, crate::tui::error::Failure> + Send + 'static,
    ) -> Result<(), crate::tui::error::Failure> {
        let agent = self.agent()?.clone();
        let tx = self.events.clone();
        std::thread::Builder::new()
            .name(name.into())
            .spawn(move || {
                let result = work(agent);
                let _ = tx.send(Msg::Outcome(Outcome { intent, result }));
            })
            .map_err(|e| crate::tui::error::failed!("cannot start a thread: {e}"))?;
        Ok(())
    }

    /// Quitting: cancels a running turn and waits a little for it to store what arrived and
    /// release the session, so nothing is left marked running.
    pub fn shutdown(&mut self) {
        if let Some(h) = self.running.take() {
            h.cancel();
            let until = Instant::now() + Duration::from_secs(3);
            while !h.is_finished() && Instant::now() < until {
                std::thread::sleep(Duration::from_millis(10));
            }
            if h.is_finished() {
                h.join();
            }
        }
    }
}

/// The target of an effect's session (`None`: a new one).
fn target(session_id: Option<&String>) -> Target {
    match session_id {
        Some(id) => Target::Resume(id.clone()),
        None => Target::New,
    }
}

/// Why an op did not give the outcome asked for, in one line.
fn failure(r: Result<OpOutcome, OpError>) -> String {
    match r {
        Err(e) => e.to_string(),
        Ok(_) => "the agent answered another request".to_string(),
    }
}

/// When the server lists its models (`GET /v1/models`) and `name` (`api:model` too) is not
/// among them, the words saying so (`/model` keeps the name: some servers route names they
/// do not list); `None` when it is listed or the server lists none.
fn unlisted(agent: &Agent, name: &str) -> Option<String> {
    let (_, model) = Api::split_model(name.trim());
    let Ok(OpOutcome::Models(names)) = agent.submit(Target::New, Op::ListModels, Sink::none())
    else {
        return None;
    };
    if names.is_empty() || names.iter().any(|n| n == model) {
        return None;
    }
    let shown: Vec<&str> = names.iter().take(4).map(String::as_str).collect();
    let more = if names.len() > shown.len() {
        ", …"
    } else {
        ""
    };
    Some(format!(
        "the server does not list {model} (it lists {}{more}; /model alone picks one)",
        shown.join(", ")
    ))
}

/// `/skill` (list) or `/skill NAME` (activate in the open session): the op's outcome in
/// words.
fn skill_answer(
    r: Result<OpOutcome, OpError>,
    asked: Option<String>,
) -> Result<String, crate::tui::error::Failure> {
    match r {
        Ok(OpOutcome::SkillActivated { name, newly: true }) => Ok(format!(
            "Skill {name} is active in this session: its body joins the next turns."
        )),
        Ok(OpOutcome::SkillActivated { name, newly: false }) => {
            Ok(format!("Skill {name} was already active in this session."))
        }
        Ok(OpOutcome::Skills(skills)) => {
            let left_out = skills
                .workspace_left_out
                .as_ref()
                .map(|w| format!(" ({w})"))
                .unwrap_or_default();
            if skills.skills.is_empty() {
                return Ok(format!(
                    "No skills: add a folder with a SKILL.md under .neocode/skills/ or \
                     <home>/skills/.{left_out}"
                ));
            }
            let names: Vec<String> = skills
                .skills
                .iter()
                .map(|s| format!("{} ({})", s.name, s.description))
                .collect();
            Ok(format!(
                "Skills: {}. /skill NAME activates one.{left_out}",
                names.join("; ")
            ))
        }
        Err(OpError::NoSession) => Err("/skill NAME: no session is open".into()),
        Err(e) => Err(crate::tui::error::failed!(
            "Cannot activate {}: {e}",
            asked.unwrap_or_default()
        )),
        other => Err(Failure::new(failure(other))),
    }
}
