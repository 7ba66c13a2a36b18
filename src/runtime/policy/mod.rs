//! Who decides whether a tool call runs: the permission rules (`permissions/`), the hooks
//! (`hooks/`), the approval policy's default (`approval.rs`) and the gate that asks them in
//! order and records what decided (`gate.rs`); the error of a malformed rule or hooks file
//! (`file_error.rs`). The turn's side of it (asking the user,
//! answering the model) is `agent::turn_gate`.

pub(crate) mod approval;
pub mod file_error;
pub mod gate;
pub(crate) mod hooks;
pub mod permissions;
