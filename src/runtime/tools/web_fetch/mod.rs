//! `web_fetch`: one URL, read as text. It runs inside neocode, not in the command sandbox:
//! so it fetches only http and https, connects only to public addresses (a name is resolved
//! and checked before the connection, which is pinned to what was checked; every redirect
//! is checked again) unless `[web_fetch] allow_hosts` names the host, reads at most
//! `max_bytes` within `timeout_secs`, and asks before it runs under `ask` and `auto-edit`.
//! HTML comes back as Markdown. See docs/SECURITY.md.

mod error;
mod fetch;
mod guard;
mod html;
mod tool;

pub(super) use tool::SPEC;
