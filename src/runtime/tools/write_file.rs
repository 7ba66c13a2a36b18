//! `write_file`: creates or replaces a whole file (parent folders are created inside the
//! workspace).

use serde::Deserialize;
use serde_json::{Value, json};

use std::io::Read;
use std::os::fd::AsRawFd;

use super::files::FileAccess;
use super::path::{Confined, check_writable, fstat, open_error, open_in, split, write_atomic};
use super::spec::{ToolContext, ToolKind, ToolOutput, ToolSpec, parse_args};
use super::{access, diff, protected};

pub(super) const SPEC: ToolSpec = ToolSpec {
    name: "write_file",
    description: "Create or overwrite a whole file (missing folders are created). To change part of a file, use edit_file.",
    parameters: schema,
    kind: ToolKind::Edit,
    run,
    summary: None,
    preview: Some(preview),
};

fn preview(v: &Value) -> super::spec::Preview {
    super::spec::Preview {
        old: None,
        new: super::spec::arg(v, "content").map(str::to_string),
    }
}

fn schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": "File path."},
            "content": {"type": "string", "description": "The whole new content."}
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
    if let Some(files) = ctx.files.as_ref().filter(|f| f.writes()) {
        return write_to(files.as_ref(), ctx, args);
    }
    let root_refused = "write_file needs a file path, not the workspace root";
    let (p, b) = match access::writable(ctx, &args.path, Some(root_refused)) {
        Ok(w) => w,
        Err(e) => return e,
    };
    let (dir_rel, name) = split(&p.rel);
    // The folder is opened beneath the root (created there when missing) and everything
    // after goes through its descriptor.
    let dir = match b.dir(&dir_rel, true) {
        Ok(d) => d,
        Err(e)
            if e.raw_os_error() == Some(libc::ENOENT) || e.raw_os_error() == Some(libc::EEXIST) =>
        {
            return ToolOutput::error(format!("cannot create the folders of {}: {e}", p.rel));
        }
        Err(e) => return ToolOutput::error(open_error(&p.rel, &e)),
    };
    if let Err(e) = protected::refuse_write_dir(&b, &dir, ctx.home.as_deref(), &p.rel) {
        return ToolOutput::error(e);
    }
    let (before, mode) = match open_in(&dir, &name) {
        Ok(mut f) => {
            let st = match fstat(f.as_raw_fd()) {
                Ok(st) => st,
                Err(e) => return ToolOutput::error(format!("cannot read {}: {e}", p.rel)),
            };
            match st.st_mode & libc::S_IFMT {
                libc::S_IFDIR => {
                    return ToolOutput::error(format!(
                        "{} is a folder; cannot write it as a file",
                        p.rel
                    ));
                }
                libc::S_IFREG => {}
                _ => return ToolOutput::error(format!("{} is not a regular file", p.rel)),
            }
            let mut bytes = Vec::new();
            if let Err(e) = f.read_to_end(&mut bytes) {
                return ToolOutput::error(format!("cannot read {}: {e}", p.rel));
            }
            let text = String::from_utf8_lossy(&bytes).into_owned();
            (Some((text, bytes)), Some(st.st_mode & 0o7777))
        }
        Err(e) if e.raw_os_error() == Some(libc::ENOENT) => (None, None),
        Err(e) => return ToolOutput::error(open_error(&p.rel, &e)),
    };
    if mode.is_some()
        && let Err(e) = check_writable(&dir, &name)
    {
        return ToolOutput::error(format!("cannot write {}: {e}", p.rel));
    }
    if let Err(e) = write_atomic(&dir, &name, args.content.as_bytes(), mode) {
        return ToolOutput::error(format!("cannot write {}: {e}", p.rel));
    }
    done(&p, before, mode, args.content)
}

/// The result of a done write: what the model reads, the diff for the views, and the change
/// recorded for a rewind (`before`: the text and bytes there were, `mode` the file's).
fn done(
    p: &Confined,
    before: Option<(String, Vec<u8>)>,
    mode: Option<u32>,
    content: String,
) -> ToolOutput {
    let lines = content.lines().count();
    let mut text = match &before {
        None => format!("created {} ({lines} lines)", p.rel),
        Some(_) => format!("wrote {} ({lines} lines)", p.rel),
    };
    let metadata = diff::metadata(&p.rel, before.as_ref().map(|(t, _)| t.as_str()), &content);
    let before = before.zip(mode).map(|((_, bytes), m)| (bytes, m));
    let (change, note) = super::spec::written(&p.rel, &p.abs, before, content.into_bytes());
    if let Some(n) = note {
        text.push('\n');
        text.push_str(&n);
    }
    ToolOutput {
        text,
        is_error: false,
        metadata: Some(metadata),
        files: vec![change],
    }
}

/// `write_file` through the front end holding the files (an editor's buffers): the same
/// checks on the path, the text it had as the before-image, the new text written there
/// (not to disk; the front end creates missing folders).
fn write_to(files: &dyn FileAccess, ctx: &ToolContext, args: Args) -> ToolOutput {
    let root_refused = "write_file needs a file path, not the workspace root";
    let (p, b) = match access::writable(ctx, &args.path, Some(root_refused)) {
        Ok(w) => w,
        Err(e) => return e,
    };
    let (dir_rel, _) = split(&p.rel);
    match b.dir(&dir_rel, false) {
        Ok(dir) => {
            if let Err(e) = protected::refuse_write_dir(&b, &dir, ctx.home.as_deref(), &p.rel) {
                return ToolOutput::error(e);
            }
        }
        Err(e) if e.raw_os_error() == Some(libc::ENOENT) => {}
        Err(e) => return ToolOutput::error(open_error(&p.rel, &e)),
    }
    let mode = match std::fs::symlink_metadata(&p.abs) {
        Ok(m) if m.is_dir() => {
            return ToolOutput::error(format!("{} is a folder; cannot write it as a file", p.rel));
        }
        Ok(m) if m.is_file() => {
            Some(std::os::unix::fs::PermissionsExt::mode(&m.permissions()) & 0o7777)
        }
        Ok(_) => return ToolOutput::error(format!("{} is not a regular file", p.rel)),
        Err(_) => None,
    };
    let before = match mode {
        None => None,
        Some(_) if files.reads() => match files.read_text(&p.abs) {
            Ok(t) => {
                let bytes = t.clone().into_bytes();
                Some((t, bytes))
            }
            Err(e) => return ToolOutput::error(format!("cannot read {}: {e}", p.rel)),
        },
        Some(_) => match std::fs::read(&p.abs) {
            Ok(bytes) => Some((String::from_utf8_lossy(&bytes).into_owned(), bytes)),
            Err(e) => return ToolOutput::error(format!("cannot read {}: {e}", p.rel)),
        },
    };
    if let Err(e) = files.write_text(&p.abs, &args.content) {
        return ToolOutput::error(format!("cannot write {}: {e}", p.rel));
    }
    done(&p, before, mode, args.content)
}
