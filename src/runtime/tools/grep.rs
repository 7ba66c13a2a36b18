//! `grep`: a regex search over the workspace with ripgrep's own libraries (the `ignore`
//! walker honours `.gitignore`; `grep-searcher` skips binary files).

use grep_regex::RegexMatcherBuilder;
use grep_searcher::sinks::Lossy;
use grep_searcher::{BinaryDetection, SearcherBuilder};
use serde::Deserialize;
use serde_json::{Value, json};

use std::os::fd::{AsRawFd, OwnedFd};

use super::path::{Beneath, Confined, FileId, fstat, walk_root};
use super::spec::{ToolContext, ToolKind, ToolOutput, ToolSpec, parse_args};
use super::{access, protected};

pub(super) const SPEC: ToolSpec = ToolSpec {
    name: "grep",
    description: "Search file contents by regex (Rust syntax), skipping .gitignored and binary files. Prints `path:line:text`. Narrow with path and glob.",
    parameters: schema,
    kind: ToolKind::Read,
    run,
    summary: Some(summary),
    preview: None,
};

fn summary(v: &Value) -> String {
    let get = |k: &str| super::spec::arg(v, k);
    let pattern = get("pattern").unwrap_or("");
    match (get("path"), get("glob")) {
        (Some(p), Some(g)) => format!("grep {pattern} in {p} ({g})"),
        (Some(p), None) => format!("grep {pattern} in {p}"),
        (None, Some(g)) => format!("grep {pattern} ({g})"),
        (None, None) => format!("grep {pattern}"),
    }
}

/// Matching lines shown before the rest is only counted.
const MAX_MATCHES: usize = 200;
/// Characters kept of one matching line.
const MAX_LINE_CHARS: usize = 300;

fn schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "pattern": {"type": "string", "description": "Regex."},
            "path": {"type": "string", "description": "File or folder. Default: the root."},
            "glob": {"type": "string", "description": "Path glob, e.g. `*.rs`, `src/**/*.toml`."},
            "case_insensitive": {"type": "boolean", "description": "Default false."}
        },
        "required": ["pattern"]
    })
}

#[derive(Deserialize)]
struct Args {
    pattern: String,
    path: Option<String>,
    glob: Option<String>,
    #[serde(default)]
    case_insensitive: bool,
}

fn run(arguments: &str, ctx: &ToolContext) -> ToolOutput {
    let args: Args = match parse_args("grep", arguments) {
        Ok(a) => a,
        Err(e) => return e,
    };
    let matcher = match RegexMatcherBuilder::new()
        .case_insensitive(args.case_insensitive)
        .build(&args.pattern)
    {
        Ok(m) => m,
        Err(e) => {
            return ToolOutput::error(format!("grep: bad regular expression: {e}"));
        }
    };
    let target = match access::readable(ctx, args.path.as_deref().unwrap_or(".")) {
        Ok(t) => t,
        Err(e) => return e,
    };
    // neocode's home inside the workspace is not walked into.
    let home_id = protected::skipped_home(&ctx.root, ctx.home.as_deref());
    let start = match target.open(libc::O_PATH, "search") {
        Ok(fd) => fd,
        Err(e) => return e,
    };
    let files = match files_to_search(&target.path, &start, args.glob.as_deref(), home_id) {
        Ok(f) => f,
        Err(e) => return e,
    };
    let mut found = Matches::default();
    if found.search(files, &target.anchor, &matcher, ctx).is_err() {
        return ToolOutput::error("grep: cancelled");
    }
    found.output(&args.pattern, &target.path.rel, ctx.output_cap)
}

/// The search was cancelled.
struct Cancelled;

/// The files to search, relative to the root: the one file asked for, or what the walk
/// from the folder `start` finds (ignore files honoured, `.git` and neocode's home skipped,
/// never following a symlink), narrowed by `glob`.
fn files_to_search(
    p: &Confined,
    start: &OwnedFd,
    glob: Option<&str>,
    home_id: Option<FileId>,
) -> Result<Box<dyn Iterator<Item = String>>, ToolOutput> {
    let start_is_dir =
        fstat(start.as_raw_fd()).is_ok_and(|st| st.st_mode & libc::S_IFMT == libc::S_IFDIR);
    if !start_is_dir {
        return Ok(Box::new(std::iter::once(p.rel.clone())));
    }
    let walk_from = walk_root(start, &p.abs);
    let prefix = if p.rel == "." {
        String::new()
    } else {
        format!("{}/", p.rel)
    };
    let mut walk = ignore::WalkBuilder::new(&walk_from);
    walk.hidden(false)
        .require_git(false)
        .follow_links(false)
        .sort_by_file_name(Ord::cmp)
        .filter_entry(move |e| e.file_name() != ".git" && !protected::is(e, home_id));
    if let Some(glob) = glob {
        let mut ob = ignore::overrides::OverrideBuilder::new(&walk_from);
        if let Err(e) = ob.add(glob) {
            return Err(ToolOutput::error(format!("grep: bad glob {glob}: {e}")));
        }
        match ob.build() {
            Ok(o) => {
                walk.overrides(o);
            }
            Err(e) => return Err(ToolOutput::error(format!("grep: bad glob {glob}: {e}"))),
        }
    }
    Ok(Box::new(walk.build().filter_map(move |entry| {
        let entry = entry.ok()?;
        if entry.path_is_symlink() || !entry.file_type().is_some_and(|t| t.is_file()) {
            return None;
        }
        let below = entry.path().strip_prefix(&walk_from).ok()?;
        Some(format!("{prefix}{}", below.to_string_lossy()))
    })))
}

/// What the search found.
#[derive(Default)]
struct Matches {
    /// The first [`MAX_MATCHES`] matching lines, `path:line:text`.
    lines: Vec<String>,
    /// Matching lines in all.
    total: usize,
    /// Files with a match.
    files: usize,
    /// Files a permission rule kept from being searched.
    withheld: usize,
}

impl Matches {
    /// Searches each of `files` (opened beneath the root) for `matcher`.
    fn search(
        &mut self,
        files: impl Iterator<Item = String>,
        b: &Beneath,
        matcher: &grep_regex::RegexMatcher,
        ctx: &ToolContext,
    ) -> Result<(), Cancelled> {
        let mut searcher = SearcherBuilder::new()
            .binary_detection(BinaryDetection::quit(0))
            .line_number(true)
            .build();
        for rel in files {
            if ctx.cancel.is_cancelled() {
                return Err(Cancelled);
            }
            if ctx.read_denied(&rel) {
                self.withheld += 1;
                continue;
            }
            // Read through a descriptor opened beneath the root: a folder swapped for a link
            // since the walk saw it is refused, never followed out.
            let Ok(fd) = b.open_rel(&rel, libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_NONBLOCK)
            else {
                continue;
            };
            let file = std::fs::File::from(fd);
            if !fstat(file.as_raw_fd()).is_ok_and(|st| st.st_mode & libc::S_IFMT == libc::S_IFREG) {
                continue;
            }
            let before = self.total;
            let (lines, total) = (&mut self.lines, &mut self.total);
            let result = searcher.search_file(
                matcher,
                &file,
                Lossy(|n, text| {
                    *total += 1;
                    if lines.len() < MAX_MATCHES {
                        lines.push(format!("{rel}:{n}:{}", shown_line(text)));
                    }
                    Ok(true)
                }),
            );
            if result.is_ok() && self.total > before {
                self.files += 1;
            }
        }
        Ok(())
    }

    /// The tool's result: the lines, what more there was, cut at the output cap.
    fn output(&self, pattern: &str, rel: &str, output_cap: usize) -> ToolOutput {
        let mut text = if self.lines.is_empty() {
            format!("no matches for {pattern} in {rel}\n")
        } else {
            let mut t = self.lines.join("\n");
            t.push('\n');
            t
        };
        if self.total > self.lines.len() {
            text.push_str(&format!(
                "… {} more matches (narrow the search with path or glob)\n",
                self.total - self.lines.len()
            ));
        }
        if self.withheld > 0 {
            text.push_str(&format!(
                "({} file(s) not searched: a permission rule denies reading them)\n",
                self.withheld
            ));
        }
        if text.len() > output_cap.max(1024) {
            let cut = text.floor_char_boundary(output_cap.max(1024));
            text.truncate(cut);
            text.push_str("\n… (output cut; narrow the search)\n");
        }
        ToolOutput {
            text,
            is_error: false,
            metadata: Some(
                json!({"path": rel, "matches": self.total, "files": self.files,
                "shown": self.lines.len()}),
            ),
            files: Vec::new(),
        }
    }
}

/// A matching line as shown: without its line end, cut at [`MAX_LINE_CHARS`].
fn shown_line(text: &str) -> String {
    let text = text.trim_end_matches(['\n', '\r']);
    if text.chars().count() > MAX_LINE_CHARS {
        let cut: String = text.chars().take(MAX_LINE_CHARS).collect();
        format!("{cut} …")
    } else {
        text.to_string()
    }
}
