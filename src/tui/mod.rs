//! The full-screen TUI. It consumes the runtime only; it never opens the database or an asset
//! file itself.
//!
//! Shape: keys become [`action::Action`]s through the one [`keymap`] table; [`app::App`]
//! changes state and returns [`effect::Effect`]s as data; storage effects go to the
//! [`worker`] thread, turn effects to the agent ([`TurnLink`]); their answers come back as
//! [`Msg`]s on the one channel input arrives on. [`views`] draw the state into the
//! [`layout`] it settled on. The loop drains what is queued, then draws once; it wakes by
//! itself only when [`pace`] says (the next poll, a clock redraw, a streaming frame).

pub mod action;
pub mod app;
pub(crate) mod attachment;
pub mod browse;
pub(crate) mod clipboard;
pub(crate) mod composer;
pub(crate) mod conversation;
pub mod demo;
pub(crate) mod denial;
pub(crate) mod dialog;
pub(crate) mod diff;
pub(crate) mod editor;
pub mod effect;
pub(crate) mod error;
mod event_loop;
pub mod filter;
pub(crate) mod help;
pub(crate) mod input;
pub mod keymap;
pub(crate) mod layout;
pub mod live;
pub(crate) mod markdown;
mod msg;
pub(crate) mod pace;
pub(crate) mod pane;
pub(crate) mod permissions;
mod provider_switch;
pub(crate) mod rank;
pub(crate) mod rewind;
pub(crate) mod screen;
pub(crate) mod seam;
pub mod subagents;
pub(crate) mod terminal;
pub mod theme;
pub mod transcript;
pub mod trust;
mod turns;
pub mod views;
pub mod worker;

pub use effect::{Intent, Outcome};
pub(crate) use event_loop::{TuiOptions, run};
pub use msg::Msg;
pub use turns::TurnLink;
