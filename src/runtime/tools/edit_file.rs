//! `edit_file`: replaces one exact, unique piece of text in a file.

use serde::Deserialize;
use serde_json::{Value, json};

use std::io::Read;
use std::os::fd::AsRawFd;

use super::files::FileAccess;
use super::path::{check_writable, fstat, open_error, open_in, split, write_atomic};
use super::spec::{ToolContext, ToolKind, ToolOutput, ToolSpec, parse_args};
use super::{access, diff, protected};

pub(super) const SPEC: ToolSpec = ToolSpec {
    name: "edit_file",
    description: "Replace old_string with new_string in a file. old_string must match exactly (whitespace too) and occur once: add surrounding lines to make it unique. Read the file first.",
    parameters: schema,
    kind: ToolKind::Edit,
    run,
    summary: None,
    preview: Some(preview),
};

fn preview(v: &Value) -> super::spec::Preview {
    let get = |a: &str, b: &str| {
        super::spec::arg(v, a)
            .or(super::spec::arg(v, b))
            .map(str::to_string)
    };
    super::spec::Preview {
        old: get("old_string", "old"),
        new: get("new_string", "new"),
    }
}

fn schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": "File path."},
            "old_string": {"type": "string", "description": "Exact text, occurring once."},
            "new_string": {"type": "string", "description": "Replacement."}
        },
        "required": ["path", "old_string", "new_string"]
    })
}

#[derive(Deserialize)]
struct Args {
    path: String,
    old_string: String,
    new_string: String,
}

fn run(arguments: &str, ctx: &ToolContext) -> ToolOutput {
    let args: Args = match parse_args("edit_file", arguments) {
        Ok(a) => a,
        Err(e) => return e,
    };
    if args.old_string.is_empty() {
        return ToolOutput::error(
            "edit_file: old_string is empty; use write_file to create a file",
        );
    }
    if let Some(files) = ctx.files.as_ref().filter(|f| f.reads() && f.writes()) {
        return edit_in(files.as_ref(), ctx, &args);
    }
    let (p, b) = match access::writable(ctx, &args.path, None) {
        Ok(w) => w,
        Err(e) => return e,
    };
    let (dir_rel, name) = split(&p.rel);
    if p.rel == "." {
        return ToolOutput::error(format!("{} is not a regular file", p.rel));
    }
    let dir = match b.dir(&dir_rel, false) {
        Ok(d) => d,
        Err(e) => return ToolOutput::error(open_error(&p.rel, &e)),
    };
    if let Err(e) = protected::refuse_write_dir(&b, &dir, ctx.home.as_deref(), &p.rel) {
        return ToolOutput::error(e);
    }
    let mut file = match open_in(&dir, &name) {
        Ok(f) => f,
        Err(e) if e.raw_os_error() == Some(libc::ENOENT) => {
            return ToolOutput::error(format!("cannot read {}: {e}", p.rel));
        }
        Err(e) => return ToolOutput::error(open_error(&p.rel, &e)),
    };
    let mode = match fstat(file.as_raw_fd()) {
        Ok(st) if st.st_mode & libc::S_IFMT == libc::S_IFREG => st.st_mode & 0o7777,
        Ok(_) => return ToolOutput::error(format!("{} is not a regular file", p.rel)),
        Err(e) => return ToolOutput::error(format!("cannot read {}: {e}", p.rel)),
    };
    let mut bytes = Vec::new();
    if let Err(e) = file.read_to_end(&mut bytes) {
        return ToolOutput::error(format!("cannot read {}: {e}", p.rel));
    }
    drop(file);
    let Ok(before) = String::from_utf8(bytes) else {
        return ToolOutput::error(format!(
            "{} is not valid UTF-8; edit_file only changes text files",
            p.rel
        ));
    };
    let after = match replaced(&before, &args, &p.rel) {
        Ok(a) => a,
        Err(e) => return e,
    };
    if let Err(e) = check_writable(&dir, &name) {
        return ToolOutput::error(format!("cannot write {}: {e}", p.rel));
    }
    if let Err(e) = write_atomic(&dir, &name, after.as_bytes(), Some(mode)) {
        return ToolOutput::error(format!("cannot write {}: {e}", p.rel));
    }
    result(&p.rel, &p.abs, before, after, mode)
}

/// `before` with the one occurrence of `old_string` replaced; none or several are the
/// error the model reads.
fn replaced(before: &str, args: &Args, rel: &str) -> Result<String, ToolOutput> {
    let count = before.matches(args.old_string.as_str()).count();
    match count {
        0 => {
            return Err(ToolOutput::error(format!(
                "edit_file: old_string was not found in {rel} (0 matches); read the file and copy the text exactly"
            )));
        }
        1 => {}
        n => {
            return Err(ToolOutput::error(format!(
                "edit_file: old_string occurs {n} times in {rel}; it must occur exactly once, so include more surrounding lines"
            )));
        }
    }
    Ok(before.replacen(args.old_string.as_str(), &args.new_string, 1))
}

/// `edit_file` through the front end holding the files (an editor's buffers): the same
/// checks on the path, the text read from and written to the front end (not the disk).
fn edit_in(files: &dyn FileAccess, ctx: &ToolContext, args: &Args) -> ToolOutput {
    let (p, b) = match access::writable(ctx, &args.path, None) {
        Ok(w) => w,
        Err(e) => return e,
    };
    if p.rel == "." {
        return ToolOutput::error(format!("{} is not a regular file", p.rel));
    }
    let (dir_rel, _) = split(&p.rel);
    let dir = match b.dir(&dir_rel, false) {
        Ok(d) => d,
        Err(e) => return ToolOutput::error(open_error(&p.rel, &e)),
    };
    if let Err(e) = protected::refuse_write_dir(&b, &dir, ctx.home.as_deref(), &p.rel) {
        return ToolOutput::error(e);
    }
    let mode = match std::fs::symlink_metadata(&p.abs) {
        Ok(m) if m.is_file() => std::os::unix::fs::PermissionsExt::mode(&m.permissions()) & 0o7777,
        Ok(_) => return ToolOutput::error(format!("{} is not a regular file", p.rel)),
        Err(_) => 0o644,
    };
    let before = match files.read_text(&p.abs) {
        Ok(t) => t,
        Err(e) => return ToolOutput::error(format!("cannot read {}: {e}", p.rel)),
    };
    let after = match replaced(&before, args, &p.rel) {
        Ok(a) => a,
        Err(e) => return e,
    };
    if let Err(e) = files.write_text(&p.abs, &after) {
        return ToolOutput::error(format!("cannot write {}: {e}", p.rel));
    }
    result(&p.rel, &p.abs, before, after, mode)
}

/// The result of a done edit: the capped diff for the model, the full one for the views,
/// and the change recorded for a rewind.
fn result(
    rel: &str,
    abs: &std::path::Path,
    before: String,
    after: String,
    mode: u32,
) -> ToolOutput {
    let meta = diff::metadata(rel, Some(&before), &after);
    let added = meta["added"].as_u64().unwrap_or(0);
    let removed = meta["removed"].as_u64().unwrap_or(0);
    let diff_text = meta["diff"].as_str().unwrap_or("");
    let mut text = format!(
        "edited {rel} (+{added} -{removed} lines):\n{}",
        capped_diff(diff_text)
    );
    let (change, note) = super::spec::written(
        rel,
        abs,
        Some((before.into_bytes(), mode)),
        after.into_bytes(),
    );
    if let Some(n) = note {
        text.push_str(&n);
        text.push('\n');
    }
    ToolOutput {
        text,
        is_error: false,
        metadata: Some(meta),
        files: vec![change],
    }
}

/// The diff the model reads: at most [`DIFF_LINES`] lines and [`DIFF_BYTES`] bytes, then how
/// much was left out.
fn capped_diff(diff: &str) -> String {
    let lines: Vec<&str> = diff.lines().collect();
    let mut out = String::new();
    let mut shown = 0;
    for l in &lines {
        if shown == DIFF_LINES || out.len() + l.len() + 1 > DIFF_BYTES {
            break;
        }
        out.push_str(l);
        out.push('\n');
        shown += 1;
    }
    if shown < lines.len() {
        out.push_str(&format!(
            "… {} more diff lines (read the file to see the rest)\n",
            lines.len() - shown
        ));
    }
    out
}

/// Lines of the diff returned to the model.
const DIFF_LINES: usize = 80;
/// Bytes of the diff returned to the model.
const DIFF_BYTES: usize = 8 * 1024;
