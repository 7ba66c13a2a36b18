//! The tools and the sandbox that runs commands.

mod sandbox;
mod tool_calls;
