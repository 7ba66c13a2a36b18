//! The agent: providers, turns, `neocode run`, plans, project context.

mod agent_port;
mod agent_provider;
mod agent_run;
mod agent_tty;
mod agent_turn;
mod compaction;
mod headless;
mod lsp_run;
mod plan_layers;
mod plan_run;
mod plugins;
mod project_context;
mod rules_attacks;
mod rules_hooks_run;
mod slash_commands;
mod subagent_kill;
mod subagent_steer;
mod subagent_worktrees;
mod subagents;
mod web_fetch;
mod wire_apis;
mod wire_chat;
mod workspace_trust;
mod worktree_prune;
