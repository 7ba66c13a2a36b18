//! The conversation screen: what it holds and how slash commands read.

pub mod commands;
