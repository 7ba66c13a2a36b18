//! The request: each hop's host resolved and checked ([`super::guard`]), the connection
//! pinned to the addresses checked, redirects followed by hand (at most [`MAX_REDIRECTS`],
//! each one checked again), the body read up to the byte cap, the whole within the time cap.

use std::time::Duration;

use futures_util::StreamExt;
use reqwest::Url;

use super::error::{FetchError, check_scheme};
use super::guard;
use crate::runtime::tools::spec::WebFetchSettings;

/// Redirects followed before giving up.
pub(super) const MAX_REDIRECTS: usize = 5;

/// What came back.
#[derive(Debug)]
pub(super) struct Fetched {
    /// Where the body came from, after redirects.
    pub(super) url: Url,
    pub(super) status: u16,
    /// The `Content-Type` header, lowercased (empty when absent).
    pub(super) content_type: String,
    pub(super) body: Vec<u8>,
    /// The body was longer than the cap and was cut there.
    pub(super) truncated: bool,
}

/// Fetches `url` within the settings' time cap.
pub(super) async fn get(url: Url, settings: &WebFetchSettings) -> Result<Fetched, FetchError> {
    match tokio::time::timeout(settings.timeout, follow(url, settings)).await {
        Ok(r) => r,
        Err(_) => Err(FetchError::Timeout(settings.timeout)),
    }
}

async fn follow(mut url: Url, settings: &WebFetchSettings) -> Result<Fetched, FetchError> {
    for _ in 0..=MAX_REDIRECTS {
        let resp = one_hop(&url, settings).await?;
        let status = resp.status();
        if status.is_redirection()
            && let Some(loc) = resp.headers().get(reqwest::header::LOCATION)
        {
            let loc = loc.to_str().map_err(|_| FetchError::BadRedirect)?;
            url = url.join(loc).map_err(|_| FetchError::BadRedirect)?;
            check_scheme(&url)?;
            continue;
        }
        return read(url, resp, settings.max_bytes).await;
    }
    Err(FetchError::TooManyRedirects(MAX_REDIRECTS))
}

async fn one_hop(url: &Url, settings: &WebFetchSettings) -> Result<reqwest::Response, FetchError> {
    let host = url.host_str().ok_or(FetchError::NoHost)?.to_string();
    let port = url.port_or_known_default().ok_or(FetchError::NoHost)?;
    let addrs = guard::resolve(&host, port, &settings.allow_hosts).await?;
    let tls = crate::runtime::net::tls_config().map_err(|e| FetchError::Client(e.to_string()))?;
    let client = reqwest::Client::builder()
        .tls_backend_preconfigured(tls)
        .redirect(reqwest::redirect::Policy::none())
        // A proxy would resolve the name itself, past the check.
        .no_proxy()
        .resolve_to_addrs(host.trim_start_matches('[').trim_end_matches(']'), &addrs)
        .connect_timeout(Duration::from_secs(10))
        .user_agent(concat!(
            "neocode/",
            env!("CARGO_PKG_VERSION"),
            " (web_fetch)"
        ))
        .build()
        .map_err(|e| FetchError::Client(e.to_string()))?;
    client
        .get(url.clone())
        .header(
            reqwest::header::ACCEPT,
            "text/html, text/markdown, text/plain, application/json, */*;q=0.5",
        )
        .send()
        .await
        .map_err(|e| FetchError::Request(crate::runtime::net::root_cause(&e)))
}

async fn read(url: Url, resp: reqwest::Response, cap: usize) -> Result<Fetched, FetchError> {
    let status = resp.status().as_u16();
    let content_type = resp
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_ascii_lowercase();
    let mut body = Vec::new();
    let mut truncated = false;
    let mut stream = resp.bytes_stream();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|e| FetchError::Request(crate::runtime::net::root_cause(&e)))?;
        let room = cap.saturating_sub(body.len());
        if chunk.len() > room {
            body.extend_from_slice(&chunk[..room]);
            truncated = true;
            break;
        }
        body.extend_from_slice(&chunk);
    }
    Ok(Fetched {
        url,
        status,
        content_type,
        body,
        truncated,
    })
}
