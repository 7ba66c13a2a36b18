//! `web_fetch`: one URL, read as text. It runs inside neocode, not in the command sandbox:
//! so it fetches only http and https, connects only to public addresses (a name is resolved
//! and checked before the connection, which is pinned to what was checked; every redirect
//! is checked again) unless `[web_fetch] allow_hosts` names the host, reads at most
//! `max_bytes` within `timeout_secs`, and asks before it runs under `ask` and `auto-edit`.
//! HTML comes back as Markdown. See docs/SECURITY.md.

mod fetch;
mod guard;
mod html;

use std::net::IpAddr;
use std::time::Duration;

use reqwest::Url;
use serde::Deserialize;
use serde_json::{Value, json};

use super::spec::{ToolContext, ToolKind, ToolOutput, ToolSpec, parse_args};

pub(super) const SPEC: ToolSpec = ToolSpec {
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

/// Why a fetch failed, in one line for the model.
#[derive(Debug, thiserror::Error)]
pub(crate) enum FetchError {
    #[error("`{0}` is not a URL")]
    NotUrl(String),
    #[error("only http and https URLs are fetched, not `{0}:`")]
    Scheme(String),
    #[error("the URL names no host")]
    NoHost,
    #[error("cannot resolve `{0}`: {1}")]
    Resolve(String, String),
    #[error(
        "`{host}` is at {addr}, not a public address: web_fetch does not reach loopback or private networks (add the host to [web_fetch] allow_hosts to allow it)"
    )]
    NotPublic { host: String, addr: IpAddr },
    #[error("a redirect without a usable Location")]
    BadRedirect,
    #[error("more than {0} redirects")]
    TooManyRedirects(usize),
    #[error("no answer within {} s", .0.as_secs())]
    Timeout(Duration),
    #[error("cancelled")]
    Cancelled,
    #[error("cannot set up the HTTP client: {0}")]
    Client(String),
    #[error("the request failed: {0}")]
    Request(String),
}

/// The URL schemes fetched.
pub(super) fn check_scheme(url: &Url) -> Result<(), FetchError> {
    match url.scheme() {
        "http" | "https" => Ok(()),
        other => Err(FetchError::Scheme(other.to_string())),
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
        let mut end = cap;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
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
