//! `neocode export` and `neocode import`: the lossless session file, and a readable markdown
//! transcript.

use std::collections::HashMap;
use std::io::Read;
use std::path::Path;

use super::args::ExportFormat;
use super::out::Out;
use super::{CmdResult, Failure, fmt, open_for_id};
use crate::runtime::{Location, Sessions};
use crate::sanitize;
use crate::session::file::{self, SessionFile};
use crate::session::{Part, StepStatus};

/// Largest session file accepted by `import` (assets are inline, so allow plenty).
const MAX_IMPORT_BYTES: u64 = 1 << 30;

/// `neocode export`.
pub fn export(
    loc: &Location,
    key: &str,
    format: ExportFormat,
    output: Option<&Path>,
    (force, with_files): (bool, bool),
) -> CmdResult {
    let to_file = output.filter(|p| *p != Path::new("-"));
    if let Some(path) = to_file
        && !force
        && path.exists()
    {
        return Err(Failure::usage(format!(
            "{} already exists; choose another name or add --force to replace it",
            sanitize::line(&path.to_string_lossy())
        )));
    }
    if with_files && format != ExportFormat::Json {
        return Err(Failure::usage(
            "--with-files is for the JSON session file (--format json)",
        ));
    }
    let (sessions, id) = open_for_id(loc, key)?;
    let doc = sessions.export(&id)?;
    let mut text = match format {
        ExportFormat::Json if with_files => fmt::to_json(&file::WithFiles {
            doc: &doc,
            files: &sessions.export_files(&id)?,
        }),
        ExportFormat::Json => fmt::to_json(&doc),
        ExportFormat::Markdown => match to_file {
            Some(path) => {
                let links = write_images(&doc, path, force)?;
                markdown_with(&doc, &links)
            }
            None => markdown(&doc),
        },
    };
    text.push('\n');
    match to_file {
        Some(path) => write_file(path, text.as_bytes()),
        _ => {
            let mut out = Out::stdout();
            out.bytes(text.as_bytes())?;
            out.finish()
        }
    }
}

/// Writes next to `path` then renames, so a failed export never leaves half a file.
fn write_file(path: &Path, bytes: &[u8]) -> CmdResult {
    let shown = sanitize::line(&path.to_string_lossy()).into_owned();
    let name = path
        .file_name()
        .ok_or_else(|| Failure::usage(format!("{shown}: not a file name")))?;
    let tmp = path.with_file_name(format!(
        ".{}.tmp-{}",
        name.to_string_lossy(),
        std::process::id()
    ));
    let res = std::fs::write(&tmp, bytes).and_then(|()| std::fs::rename(&tmp, path));
    if let Err(e) = res {
        let _ = std::fs::remove_file(&tmp);
        return Err(Failure::runtime(format!(
            "cannot write {shown}: {}",
            crate::session::io_error(&e)
        )));
    }
    Ok(())
}

/// `neocode import`: parse and validate everything before the workspace is touched.
pub fn import(loc: &Location, source: &Path, new_id: bool) -> CmdResult {
    let from_stdin = source == Path::new("-");
    let shown = if from_stdin {
        "standard input".to_string()
    } else {
        sanitize::line(&source.to_string_lossy()).into_owned()
    };
    let mut raw = Vec::new();
    let read = if from_stdin {
        std::io::stdin()
            .lock()
            .take(MAX_IMPORT_BYTES + 1)
            .read_to_end(&mut raw)
    } else {
        std::fs::File::open(source).and_then(|f| f.take(MAX_IMPORT_BYTES + 1).read_to_end(&mut raw))
    };
    read.map_err(|e| Failure::usage(format!("cannot read {shown}: {e}")))?;
    if raw.len() as u64 > MAX_IMPORT_BYTES {
        return Err(Failure::usage(format!(
            "{shown}: larger than {MAX_IMPORT_BYTES} bytes; not a session file"
        )));
    }
    let text = String::from_utf8(raw).map_err(|e| {
        Failure::usage(format!(
            "{shown}: not UTF-8 text (byte {})",
            e.utf8_error().valid_up_to()
        ))
    })?;
    let doc = file::parse(&text)
        .map_err(|e| Failure::usage(format!("{shown}: {}", sanitize::line(&e.to_string()))))?;
    let files = file::parse_files(&text)
        .map_err(|e| Failure::usage(format!("{shown}: {}", sanitize::line(&e.to_string()))))?;
    let sessions = Sessions::open(loc)?;
    let header = sessions.import_with_files(&doc, &files, new_id)?;
    let mut out = Out::stdout();
    out.line(&sanitize::line(&header.id))?;
    out.finish()
}

/// A fence longer than any backtick run in `s`.
fn fence(s: &str) -> String {
    let mut longest = 0;
    let mut run = 0;
    for c in s.chars() {
        if c == '`' {
            run += 1;
            longest = longest.max(run);
        } else {
            run = 0;
        }
    }
    "`".repeat((longest + 1).max(3))
}

/// Appends a fenced block of (already sanitised) `body` with an info string.
fn fenced(out: &mut String, info: &str, body: &str) {
    let f = fence(body);
    out.push_str(&format!("{f}{info}\n{body}"));
    if !body.ends_with('\n') {
        out.push('\n');
    }
    out.push_str(&format!("{f}\n\n"));
}

/// A readable markdown transcript of a session file. All session text is sanitised.
pub fn markdown(doc: &SessionFile) -> String {
    markdown_with(doc, &HashMap::new())
}

/// The markdown transcript, with images linked where `links` has a file for their asset.
#[expect(clippy::too_many_lines)]
pub fn markdown_with(doc: &SessionFile, links: &HashMap<String, String>) -> String {
    // Single-line fields go into headings and lists: neutralised, and `<` escaped so nothing
    // reads as HTML.
    let l = |s: &str| sanitize::line(&sanitize::text_without_sgr(s)).replace('<', "&lt;");
    let t = |s: &str| sanitize::text_without_sgr(s);
    let tools: HashMap<&str, &str> = doc
        .messages
        .iter()
        .flat_map(|m| m.tool_calls.iter())
        .map(|c| (c.id.as_str(), c.name.as_str()))
        .collect();
    let s = &doc.session;
    let mut md = String::new();
    let title = if s.title.trim().is_empty() {
        "(untitled)"
    } else {
        &s.title
    };
    md.push_str(&format!("# {}\n\n", l(title)));
    md.push_str(&format!("- **id:** `{}`\n", l(&s.id)));
    md.push_str(&format!("- **status:** {}\n", s.status.as_str()));
    md.push_str(&format!("- **created:** {}\n", l(&s.created_at)));
    md.push_str(&format!("- **last activity:** {}\n", l(&s.updated_at)));
    if !s.provider.is_empty() || !s.model.is_empty() {
        md.push_str(&format!(
            "- **model:** {} / {}\n",
            l(&s.provider),
            l(&s.model)
        ));
    }
    if !s.workdir.is_empty() {
        md.push_str(&format!("- **workdir:** `{}`\n", l(&s.workdir)));
    }
    if let Some(p) = &s.parent_id {
        let at = s
            .fork_seq
            .map(|n| format!(" at message {n}"))
            .unwrap_or_default();
        md.push_str(&format!("- **forked from:** `{}`{at}\n", l(p)));
    }
    md.push_str(&format!(
        "- **tokens:** {} in / {} out\n",
        s.tokens.input, s.tokens.output
    ));
    md.push_str(&format!("- **messages:** {}\n", doc.messages.len()));
    if !doc.assets.is_empty() {
        md.push_str(&format!("- **assets:** {}\n", doc.assets.len()));
    }
    md.push('\n');

    if let Some(plan) = s.plan.as_ref().filter(|p| !p.steps.is_empty()) {
        md.push_str("## Plan\n\n");
        for step in &plan.steps {
            let mark = match step.status {
                StepStatus::Completed => "[x]",
                StepStatus::Failed => "[!]",
                StepStatus::Running => "[~]",
                StepStatus::Pending => "[ ]",
            };
            md.push_str(&format!(
                "- {mark} {} (`{}`) — {}",
                l(&step.title),
                l(&step.id),
                step.status.as_str()
            ));
            if !step.depends_on.is_empty() {
                let deps: Vec<String> = step
                    .depends_on
                    .iter()
                    .map(|d| format!("`{}`", l(d)))
                    .collect();
                md.push_str(&format!(", after {}", deps.join(", ")));
            }
            if let Some(e) = &step.error {
                md.push_str(&format!(": {}: {}", l(&e.error_type), l(&e.message)));
            }
            md.push('\n');
        }
        md.push('\n');
    }

    md.push_str("## Transcript\n\n");
    for m in &doc.messages {
        let mut head = format!("### {} · {}", m.seq, m.role.as_str());
        if let Some(call) = &m.tool_call_id {
            match tools.get(call.as_str()) {
                Some(name) => head.push_str(&format!(
                    " · result of `{}` (`{}`)",
                    l(name).replace('`', "'"),
                    l(call).replace('`', "'")
                )),
                None => head.push_str(&format!(" · result of `{}`", l(call).replace('`', "'"))),
            }
        }
        if m.is_error {
            head.push_str(" · error");
        }
        if m.injected {
            // Written by the harness it was imported from (context, reminders), not typed.
            head.push_str(" (injected)");
        }
        md.push_str(&format!("{head}\n\n_{}_\n\n", l(&m.created_at)));
        for p in &m.parts {
            match p {
                Part::Text { text } => {
                    let body = t(text);
                    if m.tool_call_id.is_some() {
                        fenced(&mut md, "", &body);
                    } else {
                        // Headings in a message sit under its `###` heading, never beside
                        // the export's own (`## Transcript`).
                        md.push_str(demote_headings(&escape_html(&body)).trim_end());
                        md.push_str("\n\n");
                    }
                }
                Part::Reasoning { text, .. } => {
                    md.push_str("> **Reasoning**\n>\n");
                    for line in escape_html(&t(text)).lines() {
                        md.push_str(&format!("> _{}_\n", line.trim_end()).replace("> __\n", ">\n"));
                    }
                    md.push('\n');
                }
                Part::Image {
                    asset_id,
                    mime_type,
                } => {
                    if let Some(link) = links.get(asset_id) {
                        md.push_str(&format!(
                            "![image {}](<{}>)\n\n",
                            l(asset_id).replace(['[', ']'], ""),
                            link.replace(['<', '>'], "")
                        ));
                        continue;
                    }
                    md.push_str(&format!(
                        "_[image `{}`{}]_\n\n",
                        l(asset_id),
                        mime_type
                            .as_deref()
                            .map(|m| format!(", {}", l(m)))
                            .unwrap_or_default()
                    ));
                }
            }
        }
        for c in &m.tool_calls {
            md.push_str(&format!(
                "**Tool call** `{}` (`{}`)\n\n",
                l(&c.name).replace('`', "'"),
                l(&c.id).replace('`', "'")
            ));
            tool_args(&mut md, &t(&c.arguments));
        }
        if m.usage.input_tokens > 0 || m.usage.output_tokens > 0 {
            md.push_str(&format!(
                "<sub>tokens: {} in / {} out</sub>\n\n",
                m.usage.input_tokens, m.usage.output_tokens
            ));
        }
    }
    while md.ends_with("\n\n") {
        md.pop();
    }
    md
}

/// ATX headings (`# x` ... `###### x`) outside code fences moved three levels down (at most
/// `######`), so a message's headings nest under the message's own `###` heading.
fn demote_headings(body: &str) -> String {
    let mut out = String::with_capacity(body.len() + 16);
    let mut fence: Option<&str> = None;
    for line in body.split_inclusive('\n') {
        let t = line.trim_start();
        let indent = line.len() - t.len();
        if indent < 4 {
            if let Some(f) = fence {
                if t.starts_with(f) {
                    fence = None;
                }
            } else if t.starts_with("```") {
                fence = Some("```");
            } else if t.starts_with("~~~") {
                fence = Some("~~~");
            } else {
                let level = t.bytes().take_while(|b| *b == b'#').count();
                let rest = &t[level..];
                if (1..=6).contains(&level)
                    && (rest.is_empty() || rest.starts_with([' ', '\t', '\n', '\r']))
                {
                    out.push_str(&line[..indent]);
                    out.push_str(&"#".repeat((level + 3).min(6)));
                    out.push_str(rest);
                    continue;
                }
            }
        }
        out.push_str(line);
    }
    out
}

/// Width long lines of tool arguments are wrapped at in the export.
const ARG_WIDTH: usize = 100;

/// Hard-wraps lines longer than `ARG_WIDTH` characters (a fenced block never wraps when read).
fn wrap_long(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for line in s.split('\n') {
        let chars: Vec<char> = line.chars().collect();
        if chars.is_empty() {
            out.push('\n');
        }
        for piece in chars.chunks(ARG_WIDTH) {
            out.extend(piece);
            out.push('\n');
        }
    }
    out.pop();
    out
}

/// A tool call's arguments, readable: each field in turn, string values as text with their
/// real line breaks, other values as pretty JSON; long lines wrapped.
fn tool_args(md: &mut String, args: &str) {
    // Parsing turns JSON escapes back into characters (`\u001b`), so every value is
    // neutralised again after parsing.
    let clean = |s: &str| sanitize::text_without_sgr(s);
    match serde_json::from_str::<serde_json::Value>(args) {
        Ok(serde_json::Value::Object(obj)) if !obj.is_empty() => {
            for (k, v) in &obj {
                let key = sanitize::line(k).replace('`', "'");
                match v {
                    serde_json::Value::String(s)
                        if !s.contains('\n') && s.chars().count() <= 80 =>
                    {
                        let s = sanitize::line(&clean(s)).into_owned();
                        let (open, close) = if s.contains('`') {
                            ("`` ", " ``")
                        } else {
                            ("`", "`")
                        };
                        md.push_str(&format!("- `{key}`: {open}{s}{close}\n"));
                    }
                    serde_json::Value::String(s) => {
                        md.push_str(&format!("- `{key}`:\n\n"));
                        fenced(md, "text", &wrap_long(&clean(s)));
                    }
                    v => {
                        let pretty = clean(&serde_json::to_string_pretty(v).unwrap_or_default());
                        if pretty.contains('\n') {
                            md.push_str(&format!("- `{key}`:\n\n"));
                            fenced(md, "json", &wrap_long(&pretty));
                        } else {
                            md.push_str(&format!("- `{key}`: `{}`\n", pretty.replace('`', "'")));
                        }
                    }
                }
            }
            md.push('\n');
        }
        Ok(v) => {
            let pretty = clean(&serde_json::to_string_pretty(&v).unwrap_or_default());
            fenced(md, "json", &wrap_long(&pretty));
        }
        Err(_) => fenced(md, "text", &wrap_long(&clean(args))),
    }
}

/// Markdown text with every HTML-like piece (a tag, a comment) shown as text: `<` becomes
/// `&lt;` there, while code spans and fences, where it is already literal, are left alone.
fn escape_html(text: &str) -> String {
    use pulldown_cmark::{Event, Options, Parser};
    let mut ranges = Vec::new();
    for (ev, range) in Parser::new_ext(text, Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH)
        .into_offset_iter()
    {
        if matches!(ev, Event::Html(_) | Event::InlineHtml(_)) {
            ranges.push(range);
        }
    }
    if ranges.is_empty() {
        return text.to_string();
    }
    let mut out = String::with_capacity(text.len() + 16);
    let mut last = 0;
    for r in ranges {
        if r.start < last {
            continue;
        }
        out.push_str(&text[last..r.start]);
        out.push_str(&text[r.clone()].replace('&', "&amp;").replace('<', "&lt;"));
        last = r.end;
    }
    out.push_str(&text[last..]);
    out
}

/// Writes the session's image assets next to the markdown file `path`, in `<stem>.images/`,
/// and returns each asset's link relative to the markdown file.
fn write_images(
    doc: &SessionFile,
    path: &Path,
    force: bool,
) -> Result<HashMap<String, String>, Failure> {
    use base64::Engine;
    let mut links = HashMap::new();
    let images: Vec<_> = doc
        .assets
        .iter()
        .filter(|a| a.mime_type.starts_with("image/"))
        .collect();
    if images.is_empty() {
        return Ok(links);
    }
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "export".into());
    let dir_name = format!("{stem}.images");
    let dir = path.with_file_name(&dir_name);
    let shown = sanitize::line(&dir.to_string_lossy()).into_owned();
    std::fs::create_dir_all(&dir).map_err(|e| {
        Failure::runtime(format!(
            "cannot create {shown}: {}",
            crate::session::io_error(&e)
        ))
    })?;
    for a in images {
        let ext = match a.mime_type.as_str() {
            "image/png" => "png",
            "image/jpeg" => "jpg",
            "image/gif" => "gif",
            "image/webp" => "webp",
            "image/svg+xml" => "svg",
            _ => "img",
        };
        // Asset ids are checked on import, but a file name must never leave the folder.
        let safe: String =
            a.id.chars()
                .filter(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '_')
                .collect();
        let name = format!("{safe}.{ext}");
        let file = dir.join(&name);
        if file.exists() && !force {
            return Err(Failure::usage(format!(
                "{} already exists; choose another name or add --force to replace it",
                sanitize::line(&file.to_string_lossy())
            )));
        }
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(&a.data_base64)
            .map_err(|e| Failure::runtime(format!("asset {}: {e}", sanitize::line(&a.id))))?;
        write_file(&file, &bytes)?;
        links.insert(a.id.clone(), format!("{dir_name}/{name}"));
    }
    Ok(links)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fences_outgrow_backticks_in_the_body() {
        assert_eq!(fence("plain"), "```");
        assert_eq!(fence("a ``` b"), "````");
        assert_eq!(fence("`````"), "``````");
    }
}
