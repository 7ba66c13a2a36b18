//! Importing sessions from other tools: history, order, crashes, property tests, the TUI.

mod import_crash;
mod import_history;
mod import_history_proptest;
mod import_order;
mod import_proptest;
mod import_tui;
mod import_update_assets;
