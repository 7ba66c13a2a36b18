//! `write_file`: creates or replaces a whole file (parent folders are created inside the
//! workspace).

use serde::Deserialize;
use serde_json::{Value, json};

use super::path::confine;
use super::{ToolContext, ToolKind, ToolOutput, ToolSpec, diff, parse_args};

pub(super) const SPEC: ToolSpec = ToolSpec {
    name: "write_file",
    description: "Create a file or replace its whole content. Missing parent folders are created. Prefer edit_file for changing part of an existing file.",
    parameters: schema,
    kind: ToolKind::Edit,
    run,
};

fn schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": "File path relative to the workspace root."},
            "content": {"type": "string", "description": "The complete new content."}
        },
        "required": ["path", "content"]
    })
}

#[derive(Deserialize)]
struct Args {
    path: String,
    content: String,
}

fn run(arguments: &str, ctx: &ToolContext) -> ToolOutput {
    let args: Args = match parse_args("write_file", arguments) {
        Ok(a) => a,
        Err(e) => return e,
    };
    let p = match confine(&ctx.root, &args.path) {
        Ok(p) => p,
        Err(e) => return ToolOutput::error(e),
    };
    if p.rel == "." {
        return ToolOutput::error("write_file needs a file path, not the workspace root");
    }
    let before = match std::fs::metadata(&p.abs) {
        Ok(m) if m.is_dir() => {
            return ToolOutput::error(format!("{} is a folder; cannot write it as a file", p.rel));
        }
        Ok(_) => match std::fs::read(&p.abs) {
            Ok(bytes) => Some(String::from_utf8_lossy(&bytes).into_owned()),
            Err(e) => return ToolOutput::error(format!("cannot read {}: {e}", p.rel)),
        },
        Err(_) => None,
    };
    if let Some(parent) = p.abs.parent()
        && let Err(e) = std::fs::create_dir_all(parent)
    {
        return ToolOutput::error(format!("cannot create the folders of {}: {e}", p.rel));
    }
    if let Err(e) = std::fs::write(&p.abs, args.content.as_bytes()) {
        return ToolOutput::error(format!("cannot write {}: {e}", p.rel));
    }
    let lines = args.content.lines().count();
    let text = match &before {
        None => format!("created {} ({lines} lines)", p.rel),
        Some(_) => format!("wrote {} ({lines} lines)", p.rel),
    };
    ToolOutput {
        text,
        is_error: false,
        metadata: Some(diff::metadata(&p.rel, before.as_deref(), &args.content)),
    }
}
