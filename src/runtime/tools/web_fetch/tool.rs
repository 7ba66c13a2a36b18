//! The tool itself: its spec, the call run on a runtime of its own (cancellable), and the
//! result the model reads.

use std::time::Duration;

use reqwest::Url;
use serde::Deserialize;
use serde_json::{Value, json};

use super::error::{FetchError, check_scheme};
use super::{fetch, html};
use crate::runtime::tools::spec::{ToolContext, ToolKind, ToolOutput, ToolSpec, parse_args};

pub(in crate::runtime::tools) const SPEC: ToolSpec = ToolSpec {
    name: "web_fetch",
    description: "Fetch one http(s) URL and return it as text (HTML as Markdown).",
    parameters: schema,
    kind: ToolKind::Fetch,
    run,
    summary: Some(summary),
    preview: None,
};

fn schema() -> Value {
    json!({
        "type": "object",
        "properties": {"url": {"type": "string"}},
        "required": ["url"]
    })
}

fn summary(v: &Value) -> String {
    match v.get("url").and_then(Value::as_str) {
        Some(u) => format!("web_fetch {u}"),
        None => "web_fetch".into(),
    }
}

#[derive(Deserialize)]
struct Args {
    url: String,
}

fn run(arguments: &str, ctx: &ToolContext) -> ToolOutput {
    let args: Args = match parse_args("web_fetch", arguments) {
        Ok(a) => a,
        Err(e) => return e,
    };
    match fetch_blocking(&args.url, ctx) {
        Ok(f) => present(f, ctx.output_cap),
        Err(e) => ToolOutput::error(format!("web_fetch {}: {e}", args.url)),
    }
}

fn fetch_blocking(url: &str, ctx: &ToolContext) -> Result<fetch::Fetched, FetchError> {
    let url = Url::parse(url.trim()).map_err(|_| FetchError::NotUrl(url.to_string()))?;
    check_scheme(&url)?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| FetchError::Client(e.to_string()))?;
    rt.block_on(async {
        let cancelled = async {
            while !ctx.cancel.is_cancelled() {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        };
        tokio::select! {
            r = fetch::get(url, &ctx.web) => r,
            () = cancelled => Err(FetchError::Cancelled),
        }
    })
}

/// The result the model reads: where it came from, then the text, cut at `cap` bytes.
fn present(f: fetch::Fetched, cap: usize) -> ToolOutput {
    let kind = if f.content_type.is_empty() {
        "no content type"
    } else {
        f.content_type.split(';').next().unwrap_or("").trim()
    };
    let Some(mut text) = html::readable(&f.content_type, &f.body) else {
        return ToolOutput::error(format!(
            "web_fetch {}: the answer is {kind} ({} bytes), not text; web_fetch reads text and HTML only",
            f.url,
            f.body.len()
        ));
    };
    let mut notes = Vec::new();
    if f.truncated {
        notes.push(format!(
            "the page is longer than {} bytes and was cut there",
            f.body.len()
        ));
    }
    if text.len() > cap {
        let end = text.floor_char_boundary(cap);
        notes.push(format!(
            "{} characters of text follow, not shown",
            text.len() - end
        ));
        text.truncate(end);
    }
    let mut out = format!("{} ({}, {kind})\n\n{text}", f.url, f.status);
    for n in &notes {
        out.push_str(&format!("\n\n[{n}]"));
    }
    ToolOutput {
        text: out,
        is_error: f.status >= 400,
        metadata: Some(json!({
            "url": f.url.as_str(),
            "status": f.status,
            "content_type": kind,
            "bytes": f.body.len(),
        })),
        files: Vec::new(),
    }
}
