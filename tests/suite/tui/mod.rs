//! The TUI: snapshots, filter, live turns, plans, fuzzing, a real terminal, panics.

mod tui_chips;
mod tui_commands;
mod tui_demo;
mod tui_editor_pty;
mod tui_filter;
mod tui_find_copy;
mod tui_fuzz;
mod tui_live;
mod tui_live_pty;
mod tui_panic;
mod tui_plan;
mod tui_pty;
mod tui_queue;
mod tui_rewind;
mod tui_snapshots;
mod tui_status;
mod tui_subagents;
mod tui_trust;
mod tui_worktree;
