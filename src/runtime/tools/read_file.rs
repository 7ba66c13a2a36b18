//! `read_file`: a text file with line numbers, a window of lines at a time.

use std::io::{BufRead, BufReader, Read};

use serde::Deserialize;
use serde_json::{Value, json};

use std::os::fd::AsRawFd;

use super::access;
use super::files::FileAccess;
use super::path::{Confined, fstat};
use super::spec::{ToolContext, ToolKind, ToolOutput, ToolSpec, parse_args};

pub(super) const SPEC: ToolSpec = ToolSpec {
    name: "read_file",
    description: "Read a text file; lines come numbered (`   12\\tcode`). offset (first line, from 1) and limit (lines) page through long files.",
    parameters: schema,
    kind: ToolKind::Read,
    run,
    summary: None,
    preview: None,
};

/// Lines returned when the model gives no limit.
const DEFAULT_LIMIT: usize = 2000;
/// Characters kept of one very long line (minified files).
const MAX_LINE_CHARS: usize = 2000;
/// Bytes of one line kept in memory (a minified file can be one huge line).
const MAX_LINE_BYTES: u64 = 4 * MAX_LINE_CHARS as u64;
/// Bytes looked at to decide that a file is binary.
const SNIFF: usize = 8192;

fn schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": "File path."},
            "offset": {"type": "integer", "minimum": 1, "description": "First line, from 1. Default 1."},
            "limit": {"type": "integer", "minimum": 1, "description": "Lines to read. Default 2000."}
        },
        "required": ["path"]
    })
}

#[derive(Deserialize)]
struct Args {
    path: String,
    offset: Option<usize>,
    limit: Option<usize>,
}

fn run(arguments: &str, ctx: &ToolContext) -> ToolOutput {
    let args: Args = match parse_args("read_file", arguments) {
        Ok(a) => a,
        Err(e) => return e,
    };
    if let Some(files) = ctx.files.as_ref().filter(|f| f.reads()) {
        return read_from(files.as_ref(), ctx, &args);
    }
    let (file, p, size) = match open_regular(ctx, &args.path) {
        Ok(f) => f,
        Err(e) => return e,
    };
    let mut reader = BufReader::with_capacity(64 * 1024, file);
    excerpt(&mut reader, &p, size, &args, ctx)
}

/// `read_file` through the front end holding the files (an editor's buffers): the same
/// checks on the path, then the text the front end has for it, shown the same way.
fn read_from(files: &dyn FileAccess, ctx: &ToolContext, args: &Args) -> ToolOutput {
    let p = match access::readable(ctx, &args.path) {
        Ok(t) => t.path,
        Err(e) => return e,
    };
    if p.abs.is_dir() {
        return ToolOutput::error(format!(
            "{} is a directory; use list_dir to see what it holds",
            p.rel
        ));
    }
    let text = match files.read_text(&p.abs) {
        Ok(t) => t,
        Err(e) => return ToolOutput::error(format!("cannot read {}: {e}", p.rel)),
    };
    let size = text.len() as u64;
    let mut reader = std::io::Cursor::new(text.into_bytes());
    excerpt(&mut reader, &p, size, args, ctx)
}

/// The numbered window of lines `args` asks for, from `reader` (a file of `size` bytes).
fn excerpt(
    reader: &mut impl BufRead,
    p: &Confined,
    size: u64,
    args: &Args,
    ctx: &ToolContext,
) -> ToolOutput {
    let head = match reader.fill_buf() {
        Ok(b) => &b[..b.len().min(SNIFF)],
        Err(e) => return ToolOutput::error(format!("cannot read {}: {e}", p.rel)),
    };
    if head.contains(&0) {
        return ToolOutput {
            text: format!(
                "{} is a binary file ({size} bytes); its content is not shown.",
                p.rel
            ),
            is_error: false,
            metadata: Some(json!({"path": p.rel, "binary": true, "size": size})),
            files: Vec::new(),
        };
    }
    let offset = args.offset.unwrap_or(1).max(1);
    let limit = args.limit.unwrap_or(DEFAULT_LIMIT).max(1);
    let cap = ctx.output_cap.max(1024);
    let mut excerpt = match Excerpt::read(reader, offset, limit, cap) {
        Ok(e) => e,
        Err(e) => return ToolOutput::error(format!("cannot read {}: {e}", p.rel)),
    };
    if excerpt.shown == 0 && excerpt.stopped_at.is_none() {
        if excerpt.line_no == 0 {
            excerpt.text.push_str(&format!("({} is empty)\n", p.rel));
        } else {
            return ToolOutput::error(format!(
                "{} has {} lines; offset {offset} is past the end",
                p.rel, excerpt.line_no
            ));
        }
    }
    excerpt.output(&p.rel, size, offset)
}

/// The file `user` names, opened for reading beneath the root if it is a regular file, with
/// its confined path and size.
fn open_regular(
    ctx: &ToolContext,
    user: &str,
) -> Result<(std::fs::File, Confined, u64), ToolOutput> {
    let target = access::readable(ctx, user)?;
    let file = std::fs::File::from(target.open(libc::O_RDONLY | libc::O_NONBLOCK, "read")?);
    let p = target.path;
    let st = fstat(file.as_raw_fd())
        .map_err(|e| ToolOutput::error(format!("cannot read {}: {e}", p.rel)))?;
    if st.st_mode & libc::S_IFMT == libc::S_IFDIR {
        return Err(ToolOutput::error(format!(
            "{} is a directory; use list_dir to see what it holds",
            p.rel
        )));
    }
    if st.st_mode & libc::S_IFMT != libc::S_IFREG {
        // A FIFO or device would block or never end.
        return Err(ToolOutput::error(format!(
            "{} is not a regular file",
            p.rel
        )));
    }
    Ok((file, p, st.st_size as u64))
}

/// The lines shown, numbered, and what was left out.
#[derive(Default)]
struct Excerpt {
    text: String,
    /// Lines read (the last one read when it stopped early).
    line_no: usize,
    shown: usize,
    /// Some bytes were not UTF-8 (shown as U+FFFD).
    lossy: bool,
    /// Some lines were cut at [`MAX_LINE_CHARS`].
    long_lines: bool,
    /// The first line not shown, when more follow.
    stopped_at: Option<usize>,
}

impl Excerpt {
    /// `limit` lines from line `offset` (1-based), stopping early once `cap` bytes are shown.
    fn read(
        reader: &mut impl BufRead,
        offset: usize,
        limit: usize,
        cap: usize,
    ) -> std::io::Result<Excerpt> {
        let mut x = Excerpt::default();
        let mut buf = Vec::new();
        loop {
            buf.clear();
            if !read_line(reader, &mut buf)? {
                break;
            }
            x.line_no += 1;
            if x.line_no < offset {
                continue;
            }
            if x.shown == limit || x.text.len() >= cap {
                x.stopped_at = Some(x.line_no);
                break;
            }
            let raw = buf.strip_suffix(b"\n").unwrap_or(&buf);
            let raw = raw.strip_suffix(b"\r").unwrap_or(raw);
            let line = match std::str::from_utf8(raw) {
                Ok(s) => std::borrow::Cow::Borrowed(s),
                Err(_) => {
                    x.lossy = true;
                    String::from_utf8_lossy(raw)
                }
            };
            let line = if line.chars().count() > MAX_LINE_CHARS {
                x.long_lines = true;
                let cut: String = line.chars().take(MAX_LINE_CHARS).collect();
                std::borrow::Cow::Owned(format!("{cut} … (line cut)"))
            } else {
                line
            };
            x.text.push_str(&format!("{:>6}\t{line}\n", x.line_no));
            x.shown += 1;
        }
        Ok(x)
    }

    /// The tool's result: the lines, then a note for each thing left out.
    fn output(self, rel: &str, size: u64, offset: usize) -> ToolOutput {
        let mut text = self.text;
        let mut notes = Vec::new();
        if let Some(next) = self.stopped_at {
            notes.push(format!(
                "showing lines {offset}-{}; more follow, continue with offset={next}",
                next - 1
            ));
        }
        if self.lossy {
            notes.push(
                "the file is not valid UTF-8; invalid bytes are shown as \u{FFFD}".to_string(),
            );
        }
        if self.long_lines {
            notes.push(format!(
                "lines longer than {MAX_LINE_CHARS} characters were cut"
            ));
        }
        for n in &notes {
            text.push_str(&format!("({n})\n"));
        }
        ToolOutput {
            text,
            is_error: false,
            metadata: Some(json!({
                "path": rel,
                "size": size,
                "first_line": offset,
                "lines_shown": self.shown,
                "more": self.stopped_at.is_some(),
                "lossy_utf8": self.lossy,
            })),
            files: Vec::new(),
        }
    }
}

/// Reads one line into `buf` (at most [`MAX_LINE_BYTES`] of it; the rest of a longer line is
/// skipped). `Ok(false)` at the end of the file.
fn read_line(reader: &mut impl BufRead, buf: &mut Vec<u8>) -> std::io::Result<bool> {
    let n = reader
        .by_ref()
        .take(MAX_LINE_BYTES)
        .read_until(b'\n', buf)?;
    if n == 0 {
        return Ok(false);
    }
    if buf.last() != Some(&b'\n') && n as u64 == MAX_LINE_BYTES {
        loop {
            let chunk = reader.fill_buf()?;
            if chunk.is_empty() {
                break;
            }
            match chunk.iter().position(|&b| b == b'\n') {
                Some(i) => {
                    reader.consume(i + 1);
                    break;
                }
                None => {
                    let len = chunk.len();
                    reader.consume(len);
                }
            }
        }
        buf.extend_from_slice(" … (line cut)".as_bytes());
    }
    Ok(true)
}
