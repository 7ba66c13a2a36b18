//! The readable markdown transcript of a session file, shared by `neocode export --format
//! markdown` and the TUI's export key.

use std::collections::HashMap;

use crate::sanitize;
use crate::session::file::{FilePlan, SessionFile};
use crate::session::{Part, StepStatus};

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
pub(crate) fn markdown_with(doc: &SessionFile, links: &HashMap<String, String>) -> String {
    let (l, t) = (md_line, md_text);
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
        plan_section(&mut md, plan);
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
            part(&mut md, p, m.tool_call_id.is_some(), links);
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

/// A single-line field for a heading or a list: neutralised, and `<` escaped so nothing reads
/// as HTML.
fn md_line(s: &str) -> String {
    sanitize::line(&sanitize::text_without_sgr(s)).replace('<', "&lt;")
}

/// Session text without escape sequences.
fn md_text(s: &str) -> String {
    sanitize::text_without_sgr(s)
}

/// The plan's steps as a checklist.
fn plan_section(md: &mut String, plan: &FilePlan) {
    let l = md_line;
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

/// One part of a message (`result`: the message is a tool's result, shown fenced).
fn part(md: &mut String, p: &Part, result: bool, links: &HashMap<String, String>) {
    let (l, t) = (md_line, md_text);
    match p {
        Part::Text { text } => {
            let body = t(text);
            if result {
                fenced(md, "", &body);
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
                return;
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
