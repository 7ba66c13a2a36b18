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
pub mod attachment;
pub mod browse;
pub mod clipboard;
pub mod composer;
pub mod conversation;
pub mod demo;
pub mod denial;
pub mod dialog;
pub mod diff;
pub mod editor;
pub mod effect;
pub mod error;
mod event_loop;
pub mod filter;
pub mod help;
pub mod input;
pub mod keymap;
pub mod layout;
pub mod live;
pub mod markdown;
mod msg;
pub mod pace;
pub mod permissions;
mod provider_switch;
pub mod rank;
pub mod rewind;
pub mod screen;
pub mod seam;
pub mod terminal;
pub mod theme;
pub mod transcript;
pub mod trust;
mod turns;
pub mod views;
pub mod worker;

pub use effect::{Intent, Outcome};
pub use event_loop::{TuiOptions, run};
pub use msg::Msg;
pub use turns::TurnLink;
