//! The start every file tool shares: the path the model wrote confined to the workspace,
//! the protected paths refused, and the workspace's anchor (every open beneath it, never
//! through a link). A refusal is the tool's error result, worded by the check that refused.

use std::os::fd::OwnedFd;

use super::path::{Beneath, Confined, anchor, confine, in_home, open_error};
use super::protected;
use super::spec::{ToolContext, ToolOutput};

/// A path a reading tool may look at.
pub(super) struct Readable {
    pub path: Confined,
    pub anchor: Beneath,
}

/// `user` confined, not a protected path (nor a folder holding one), and the anchor to open
/// it under.
pub(super) fn readable(ctx: &ToolContext, user: &str) -> Result<Readable, ToolOutput> {
    let home = ctx.home.as_deref();
    let path = confine(&ctx.root, user).map_err(ToolOutput::error)?;
    protected::refuse_read(&ctx.root, &path.abs, home).map_err(ToolOutput::error)?;
    let anchor = anchor(&ctx.root).map_err(ToolOutput::error)?;
    protected::refuse_read_folder(&anchor, &ctx.root, &path.rel, home)
        .map_err(ToolOutput::error)?;
    Ok(Readable { path, anchor })
}

impl Readable {
    /// Opens the path beneath the anchor with `flags` (plus `O_NOFOLLOW`); a missing one is
    /// "cannot `verb` `path`: ...".
    pub(super) fn open(&self, flags: i32, verb: &str) -> Result<OwnedFd, ToolOutput> {
        let rel = &self.path.rel;
        self.anchor
            .open_rel(rel, flags | libc::O_NOFOLLOW)
            .map_err(|e| match e.raw_os_error() {
                Some(libc::ENOENT) => ToolOutput::error(format!("cannot {verb} {rel}: {e}")),
                _ => ToolOutput::error(open_error(rel, &e)),
            })
    }
}

/// `user` confined, outside neocode's home, not a path no tool writes, and the anchor to
/// write beneath. `root_refused`, when given, is the error for the workspace root itself
/// (checked right after confining).
pub(super) fn writable(
    ctx: &ToolContext,
    user: &str,
    root_refused: Option<&str>,
) -> Result<(Confined, Beneath), ToolOutput> {
    let path = confine(&ctx.root, user).map_err(ToolOutput::error)?;
    if let Some(refused) = root_refused
        && path.rel == "."
    {
        return Err(ToolOutput::error(refused));
    }
    in_home(&path.abs, ctx.home.as_deref()).map_err(ToolOutput::error)?;
    protected::refuse_write(&path.rel).map_err(ToolOutput::error)?;
    let anchor = anchor(&ctx.root).map_err(ToolOutput::error)?;
    Ok((path, anchor))
}
