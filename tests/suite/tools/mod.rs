//! The tools and the sandbox that runs commands.

mod box_attacks;
mod sandbox;
mod tool_calls;
