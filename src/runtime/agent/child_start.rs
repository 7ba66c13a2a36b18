//! Starting a sub-agent: the child's session created (`subagent_of` its parent), opened with
//! its profile's instructions, and its turn spawned through the one spawn path plan steps use.

use std::sync::Arc;
use std::time::Instant;

use serde_json::json;

use super::base::Agent;
use super::handle::Sink;
use super::start::Spawn;
use super::subagent::children::Ended;
use super::subagent::sink::ChildSink;
use super::subagent::{
    Child, META_KEY, Parent, SubagentError, TaskArgs, carve, narrower, opening, replay,
};
use crate::runtime::extensions::agents::Profile;
use crate::session::{NewMessage, NewSession, Role};

impl Agent {
    /// Starts a child of `parent` running `args.prompt`: its session created
    /// (`subagent_of`), opened with the profile's instructions, and its turn spawned.
    pub(in crate::runtime::agent) fn start_child(
        &self,
        parent: &Parent<'_>,
        args: &TaskArgs,
    ) -> Result<Child, SubagentError> {
        let profile = self.profile(args.agent.as_deref())?;
        let agent = match profile.as_ref().and_then(|p| p.model.as_deref()) {
            Some(m) => self.with_model(m),
            None => self.clone(),
        };
        let h = agent.sessions.new_session(NewSession {
            title: super::turn::title_from(&args.prompt),
            model: agent.model_name().unwrap_or_default(),
            workdir: agent.sessions.root().display().to_string(),
            subagent_of: Some(parent.id.to_string()),
            ..NewSession::default()
        })?;
        let (agent, worktree) = if args.worktree {
            match super::subagent::worktree::make(&agent.sessions, "task", &h.id) {
                Ok(wt) => (agent.rooted_at(&wt.path), Some(wt)),
                Err(e) => {
                    let _ = agent.sessions.delete(&h.id);
                    return Err(e.into());
                }
            }
        } else {
            (agent, None)
        };
        // Its workdir is its worktree when it has one (the opening's append records it).
        let meta = agent.meta();
        let lease = agent.lease(&h.id)?;
        let mut open = NewMessage::text(Role::System, opening(profile.as_ref()));
        open.tool_metadata = Some(json!({META_KEY: {
            "parent": parent.id,
            "call_id": parent.call_id,
            "agent": profile.as_ref().map(|p| p.name.clone()),
            "tools": profile.as_ref().and_then(|p| p.tools.clone()),
        }}));
        agent.sessions.append(&h.id, &[open], &meta)?;
        let spawn = Spawn {
            ledger: carve(parent.ledger),
            budget: Some(parent.budget.clone()),
            policy: narrower(parent.policy, profile.as_ref().and_then(|p| p.approval)),
            prompt: Some(args.prompt.clone()),
            prompt_meta: None,
            images: Vec::new(),
            caps: parent.caps,
            // The child answers in words: the caller reads its answer as a tool result.
            output_schema: None,
        };
        spawn_child(&agent, parent, h.id, Some(lease), spawn, profile, worktree)
    }

    /// The agent profile `name`, when the call names one that is in use.
    fn profile(&self, name: Option<&str>) -> Result<Option<Profile>, SubagentError> {
        let Some(name) = name else {
            return Ok(None);
        };
        let profiles = self.ext.agent_profiles();
        let found = profiles.get(name).cloned();
        found
            .map(Some)
            .ok_or_else(|| SubagentError::UnknownProfile {
                name: name.to_string(),
                known: match profiles.names().join(", ") {
                    n if n.is_empty() => "none".into(),
                    n => n,
                },
            })
    }

    /// Resumes child `id` of `parent`, which a replayed `task` call started before the
    /// process stopped: its turn goes on from its own conversation and ledger (its model and
    /// profile as it recorded them), in its worktree when that is still there.
    pub(in crate::runtime::agent) fn resume_child(
        &self,
        parent: &Parent<'_>,
        id: &str,
    ) -> Result<Child, SubagentError> {
        let session = self.sessions.load(id)?;
        let profile = self.profile(replay::profile_of(&session).as_deref())?;
        let agent = self.for_session(id)?.unwrap_or_else(|| self.clone());
        let worktree = super::subagent::worktree::existing(&agent.sessions, "task", id);
        let agent = match &worktree {
            Some(wt) => agent.rooted_at(&wt.path),
            None => agent,
        };
        let lease = agent.lease(id)?;
        let mut ledger = super::ledger::of(&session.header, &agent.settings.limits);
        ledger.termination = None;
        let spawn = Spawn {
            ledger,
            budget: Some(parent.budget.clone()),
            policy: narrower(parent.policy, profile.as_ref().and_then(|p| p.approval)),
            prompt: None,
            prompt_meta: None,
            images: Vec::new(),
            caps: parent.caps,
            output_schema: None,
        };
        spawn_child(
            &agent,
            parent,
            id.to_string(),
            Some(lease),
            spawn,
            profile,
            worktree,
        )
    }
}

/// Spawns child `id`'s turn on `agent` with a sink that relays its events to `parent`'s
/// front end as they happen ([`ChildSink`]).
fn spawn_child(
    agent: &Agent,
    parent: &Parent<'_>,
    id: String,
    lease: Option<crate::runtime::lease::Lease>,
    spawn: Spawn,
    profile: Option<Profile>,
    worktree: Option<crate::runtime::tools::worktree::Worktree>,
) -> Result<Child, SubagentError> {
    let ended = Arc::new(Ended::default());
    let name = profile.map(|p| p.name);
    let sink = {
        let (parent_sink, routes) = (parent.sink.clone(), parent.routes.clone());
        let (running, id) = (agent.running.clone(), id.clone());
        let (call_id, ended, agent) = (parent.call_id.to_string(), ended.clone(), name.clone());
        Sink::new(move |commands| ChildSink {
            parent: parent_sink,
            routes,
            commands: commands.clone(),
            running,
            id,
            call_id,
            agent,
            ended,
        })
    };
    let handle = agent.spawn_on(id, lease, spawn, sink)?;
    Ok(Child {
        handle,
        ended,
        parent: parent.id.to_string(),
        agent: name,
        started: Instant::now(),
        worktree,
    })
}
