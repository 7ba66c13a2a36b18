//! Why a fetch failed (one line for the model) and the schemes fetched.

use std::net::IpAddr;
use std::time::Duration;

use reqwest::Url;

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
