//! `neocode export` and `neocode import`: the lossless session file, and a readable markdown
//! transcript.

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
pub fn export(loc: &Location, key: &str, format: ExportFormat, output: Option<&Path>) -> CmdResult {
    let (rt, id) = open_for_id(loc, key)?;
    let doc = rt.export(&id)?;
    let mut text = match format {
        ExportFormat::Json => fmt::to_json(&doc),
        ExportFormat::Markdown => markdown(&doc),
    };
    text.push('\n');
    match output {
        Some(path) if path != Path::new("-") => write_file(path, text.as_bytes()),
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
        return Err(Failure::runtime(format!("cannot write {shown}: {e}")));
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
            "{shown}: larger than {} bytes; not a session file",
            MAX_IMPORT_BYTES
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
    let rt = Sessions::open(loc)?;
    let header = rt.import(&doc, new_id)?;
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
    let l = |s: &str| sanitize::line(s).into_owned();
    let t = |s: &str| sanitize::text(s).into_owned();
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
            head.push_str(&format!(" · result of `{}`", l(call)));
        }
        if m.is_error {
            head.push_str(" · error");
        }
        md.push_str(&format!("{head}\n\n_{}_\n\n", l(&m.created_at)));
        for p in &m.parts {
            match p {
                Part::Text { text } => {
                    let body = t(text);
                    if m.tool_call_id.is_some() {
                        fenced(&mut md, "", &body);
                    } else {
                        md.push_str(body.trim_end());
                        md.push_str("\n\n");
                    }
                }
                Part::Reasoning { text } => {
                    for line in t(text).lines() {
                        md.push_str(&format!("> {line}\n"));
                    }
                    md.push('\n');
                }
                Part::Image {
                    asset_id,
                    mime_type,
                } => {
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
            let args = t(&c.arguments);
            let info = format!("tool-call {} {}", l(&c.name), l(&c.id)).replace('`', "'");
            fenced(&mut md, &info, &args);
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
