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
use super::subagent::{Child, META_KEY, Parent, SubagentError, TaskArgs, carve, narrower, opening};
use crate::session::{NewMessage, NewSession, Role};

impl Agent {
    /// Starts a child of `parent` running `args.prompt`: its session created
    /// (`subagent_of`), opened with the profile's instructions, and its turn spawned.
    pub(in crate::runtime::agent) fn start_child(
        &self,
        parent: &Parent<'_>,
        args: &TaskArgs,
    ) -> Result<Child, SubagentError> {
        let profile = match &args.agent {
            None => None,
            Some(name) => {
                let profiles = self.ext.agent_profiles();
                let found = profiles.get(name).cloned();
                Some(found.ok_or_else(|| SubagentError::UnknownProfile {
                    name: name.clone(),
                    known: match profiles.names().join(", ") {
                        n if n.is_empty() => "none".into(),
                        n => n,
                    },
                })?)
            }
        };
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
            "agent": profile.as_ref().map(|p| p.name.clone()),
            "tools": profile.as_ref().and_then(|p| p.tools.clone()),
        }}));
        agent.sessions.append(&h.id, &[open], &meta)?;
        let ended = Arc::new(Ended::default());
        let sink = {
            let (parent_sink, routes) = (parent.sink.clone(), parent.routes.clone());
            let (running, id) = (self.running.clone(), h.id.clone());
            let (call_id, ended) = (parent.call_id.to_string(), ended.clone());
            let agent = profile.as_ref().map(|p| p.name.clone());
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
        let handle = agent.spawn_on(
            h.id,
            Some(lease),
            Spawn {
                ledger: carve(parent.ledger),
                budget: Some(parent.budget.clone()),
                policy: narrower(parent.policy, profile.as_ref().and_then(|p| p.approval)),
                prompt: Some(args.prompt.clone()),
                prompt_meta: None,
                images: Vec::new(),
                caps: parent.caps,
                // The child answers in words: the caller reads its answer as a tool result.
                output_schema: None,
            },
            sink,
        )?;
        Ok(Child {
            handle,
            ended,
            parent: parent.id.to_string(),
            agent: profile.map(|p| p.name),
            started: Instant::now(),
            worktree,
        })
    }
}
