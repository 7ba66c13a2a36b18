//! `list_dir`: what a folder holds, as an indented tree, honouring `.gitignore`.

use serde::Deserialize;
use serde_json::{Value, json};

use std::os::fd::AsRawFd;

use super::path::{fstat, walk_root};
use super::spec::{ToolContext, ToolKind, ToolOutput, ToolSpec, parse_args};
use super::{access, protected};

pub(super) const SPEC: ToolSpec = ToolSpec {
    name: "list_dir",
    description: "List a folder as an indented tree (folders end in `/`), skipping .gitignored files. depth 1: the folder only (default 2).",
    parameters: schema,
    kind: ToolKind::Read,
    run,
    summary: Some(summary),
    preview: None,
};

fn summary(v: &Value) -> String {
    format!("list_dir {}", super::spec::arg(v, "path").unwrap_or("."))
}

/// Entries shown before the rest is only counted.
const MAX_ENTRIES: usize = 500;
const DEFAULT_DEPTH: usize = 2;
const MAX_DEPTH: usize = 10;

fn schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": "Folder. Default: the root."},
            "depth": {"type": "integer", "minimum": 1, "maximum": MAX_DEPTH, "description": "Levels. Default 2."}
        }
    })
}

#[derive(Deserialize)]
struct Args {
    path: Option<String>,
    depth: Option<usize>,
}

fn run(arguments: &str, ctx: &ToolContext) -> ToolOutput {
    let args: Args = match parse_args("list_dir", arguments) {
        Ok(a) => a,
        Err(e) => return e,
    };
    let user = args.path.as_deref().unwrap_or(".");
    let target = match access::readable(ctx, user) {
        Ok(t) => t,
        Err(e) => return e,
    };
    // neocode's home inside the workspace is not walked into.
    let home_id = protected::skipped_home(&ctx.root, ctx.home.as_deref());
    let start = match target.open(libc::O_PATH, "list") {
        Ok(fd) => fd,
        Err(e) => return e,
    };
    let p = &target.path;
    match fstat(start.as_raw_fd()) {
        Ok(st) if st.st_mode & libc::S_IFMT == libc::S_IFDIR => {}
        Ok(_) => {
            return ToolOutput::error(format!("{} is a file, not a folder; use read_file", p.rel));
        }
        Err(e) => return ToolOutput::error(format!("cannot list {}: {e}", p.rel)),
    }
    let depth = args.depth.unwrap_or(DEFAULT_DEPTH).clamp(1, MAX_DEPTH);
    // Walked from the folder opened beneath the root, so a swap of its path cannot move it.
    let walker = ignore::WalkBuilder::new(walk_root(&start, &p.abs))
        .max_depth(Some(depth))
        .hidden(false)
        .require_git(false)
        .follow_links(false)
        .sort_by_file_name(Ord::cmp)
        .filter_entry(move |e| e.file_name() != ".git" && !protected::is(e, home_id))
        .build();
    let mut text = format!("{}/\n", p.rel);
    let mut shown = 0usize;
    let mut more = 0usize;
    let mut errors = 0usize;
    for entry in walker {
        let Ok(entry) = entry else {
            errors += 1;
            continue;
        };
        if entry.depth() == 0 {
            continue;
        }
        if shown >= MAX_ENTRIES {
            more += 1;
            continue;
        }
        let name = entry.file_name().to_string_lossy();
        // A file a read denial covers is not listed (its name can be the secret).
        let below = entry.path().components().rev().take(entry.depth());
        let mut rel: Vec<_> = below.map(|c| c.as_os_str().to_string_lossy()).collect();
        rel.reverse();
        let rel = format!("{}/{}", p.rel, rel.join("/"));
        if ctx.read_denied(&rel) {
            continue;
        }
        let ft = entry.file_type();
        let suffix = if ft.is_some_and(|t| t.is_dir()) {
            "/".to_string()
        } else if ft.is_some_and(|t| t.is_symlink()) {
            match std::fs::read_link(entry.path()) {
                Ok(t) => format!(" -> {}", t.display()),
                Err(_) => " -> ?".to_string(),
            }
        } else {
            String::new()
        };
        let indent = "  ".repeat(entry.depth());
        text.push_str(&format!("{indent}{name}{suffix}\n"));
        shown += 1;
    }
    if shown == 0 {
        text.push_str("  (empty)\n");
    }
    if more > 0 {
        text.push_str(&format!("… {more} more\n"));
    }
    if errors > 0 {
        text.push_str(&format!("({errors} entries could not be read)\n"));
    }
    ToolOutput {
        text,
        is_error: false,
        metadata: Some(json!({"path": p.rel, "entries": shown, "more": more, "depth": depth})),
        files: Vec::new(),
    }
}
