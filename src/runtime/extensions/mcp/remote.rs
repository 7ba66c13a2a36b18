//! HTTP servers (`url = ...`): the streamable HTTP transport of `rmcp`, on a reqwest client
//! with the providers' TLS settings (one HTTP and TLS stack in the binary). Every request
//! carries the table's static headers and the `Authorization` an [`AuthProvider`] gives for
//! it; the tokens of today's sources are read when the server is connected (and again on a
//! reconnect) and kept in memory only. rmcp 3 has no client for the older SSE transport, so
//! a server that speaks only that is reported as unreachable, with the status it answered.

use std::collections::HashMap;
use std::sync::Arc;

use std::future::Future;

use futures_util::future::BoxFuture;
use futures_util::stream::BoxStream;
use reqwest::header::{HeaderName, HeaderValue};
use rmcp::model::ClientJsonRpcMessage;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::{
    SseError, StreamableHttpClient, StreamableHttpClientTransportConfig, StreamableHttpError,
    StreamableHttpPostResponse, StreamableHttpResponseLimits,
};
use sse_stream::Sse;

use super::auth::AuthProvider;
use super::error::{StartError, TokenError};
use super::oauth::{OAuthAuth, offers_oauth};
use crate::runtime::config::mcp::{BearerSource, Remote};

/// A token read once per connection (`bearer_token_env`, `bearer_token_command`), or none.
struct StaticToken(Option<String>);

impl AuthProvider for StaticToken {
    fn bearer(&self) -> BoxFuture<'_, Option<String>> {
        Box::pin(async move { self.0.clone() })
    }
}

type HttpResult<T> = Result<T, StreamableHttpError<reqwest::Error>>;

/// reqwest's streamable HTTP client with the `Authorization` of each request asked of `auth`
/// (whatever rmcp's config would have sent is replaced).
#[derive(Clone)]
pub(super) struct AuthedClient {
    http: reqwest::Client,
    auth: Arc<dyn AuthProvider>,
}

impl AuthedClient {
    /// Sends with the current token; after a 401, once more with a renewed one.
    async fn send<T, F, Fut>(&self, send: F) -> HttpResult<T>
    where
        F: Fn(Option<String>) -> Fut + Send,
        Fut: Future<Output = HttpResult<T>> + Send,
    {
        let first = send(self.auth.bearer().await).await;
        if matches!(first, Err(StreamableHttpError::AuthRequired(_))) && self.auth.renew().await {
            return send(self.auth.bearer().await).await;
        }
        first
    }
}

impl StreamableHttpClient for AuthedClient {
    type Error = reqwest::Error;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> HttpResult<StreamableHttpPostResponse> {
        // As reqwest's own client: the default limits.
        let limits = StreamableHttpResponseLimits::default();
        self.post_message_with_response_limits(
            uri,
            message,
            session_id,
            auth_header,
            custom_headers,
            limits,
        )
        .await
    }

    async fn post_message_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> HttpResult<StreamableHttpPostResponse> {
        let mut limits = StreamableHttpResponseLimits::default();
        limits.max_sse_event_size = max_sse_event_size;
        self.post_message_with_response_limits(
            uri,
            message,
            session_id,
            auth_header,
            custom_headers,
            limits,
        )
        .await
    }

    async fn post_message_with_response_limits(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        _auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        limits: StreamableHttpResponseLimits,
    ) -> HttpResult<StreamableHttpPostResponse> {
        self.send(|auth| {
            self.http.post_message_with_response_limits(
                uri.clone(),
                message.clone(),
                session_id.clone(),
                auth,
                custom_headers.clone(),
                limits,
            )
        })
        .await
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        _auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> HttpResult<()> {
        self.send(|auth| {
            self.http.delete_session(
                uri.clone(),
                session_id.clone(),
                auth,
                custom_headers.clone(),
            )
        })
        .await
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> HttpResult<BoxStream<'static, Result<Sse, SseError>>> {
        // As reqwest's own client: the default event limit.
        let max = StreamableHttpResponseLimits::default().max_sse_event_size;
        self.get_stream_with_max_sse_event_size(
            uri,
            session_id,
            last_event_id,
            auth_header,
            custom_headers,
            max,
        )
        .await
    }

    async fn get_stream_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        _auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> HttpResult<BoxStream<'static, Result<Sse, SseError>>> {
        self.send(|auth| {
            self.http.get_stream_with_max_sse_event_size(
                uri.clone(),
                session_id.clone(),
                last_event_id.clone(),
                auth,
                custom_headers.clone(),
                max_sse_event_size,
            )
        })
        .await
    }
}

/// A client builder with the TLS settings every neocode HTTP client shares (`runtime::net`).
fn http_builder() -> Result<reqwest::ClientBuilder, rustls::Error> {
    Ok(reqwest::Client::builder().tls_backend_preconfigured(crate::runtime::net::tls_config()?))
}

/// The transport to `remote` (server `name`): the HTTP client, its headers and its token,
/// read now (an OAuth login is loaded, and renewed if it expires soon).
pub(super) async fn transport(
    name: &str,
    remote: &Remote,
) -> Result<StreamableHttpClientTransport<AuthedClient>, StartError> {
    let auth: Arc<dyn AuthProvider> = if remote.oauth.is_some() {
        Arc::new(OAuthAuth::open(name, remote).await?)
    } else {
        Arc::new(StaticToken(token(remote.bearer.as_ref()).await?))
    };
    let http = http_builder()
        .map_err(|e| StartError::Client(e.to_string()))?
        // A redirect would carry the session and the headers elsewhere: none is followed.
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .map_err(|e| StartError::Client(cause(&e)))?;
    let mut headers = HashMap::new();
    for (name, value) in &remote.headers {
        // The config checked both when it was read.
        if let (Ok(n), Ok(v)) = (
            HeaderName::from_bytes(name.as_bytes()),
            HeaderValue::from_str(value),
        ) {
            headers.insert(n, v);
        }
    }
    let config = StreamableHttpClientTransportConfig::with_uri(remote.url.as_str())
        .custom_headers(headers)
        .reinit_on_expired_session(true);
    let client = AuthedClient { http, auth };
    Ok(StreamableHttpClientTransport::with_client(client, config))
}

/// The token `source` gives now: a variable's value, or a command's standard output (the
/// command split into words and run without a shell; what it printed is never repeated).
pub(super) async fn token(source: Option<&BearerSource>) -> Result<Option<String>, TokenError> {
    match source {
        None => Ok(None),
        Some(BearerSource::Env(var)) => std::env::var(var)
            .ok()
            .map(|v| v.trim().to_string())
            .filter(|v| !v.is_empty())
            .map(Some)
            .ok_or_else(|| TokenError::Unset(var.clone())),
        Some(BearerSource::Command(cmd)) => {
            let words = shell_words::split(cmd).map_err(|e| TokenError::Words(e.to_string()))?;
            let Some((program, args)) = words.split_first() else {
                return Err(TokenError::Words("it is empty".to_string()));
            };
            let out = tokio::process::Command::new(program)
                .args(args)
                .stdin(std::process::Stdio::null())
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::null())
                .kill_on_drop(true)
                .output()
                .await
                .map_err(|e| TokenError::Start(crate::session::io_error(&e)))?;
            if !out.status.success() {
                return Err(TokenError::Failed(out.status.code()));
            }
            let token = String::from_utf8_lossy(&out.stdout).trim().to_string();
            if token.is_empty() || token.contains(char::is_whitespace) {
                return Err(TokenError::NoToken);
            }
            Ok(Some(token))
        }
    }
}

/// The innermost cause of an error, without the `(os error N)` the user cannot act on.
pub(super) fn cause(e: &dyn std::error::Error) -> String {
    let mut last = e.to_string();
    let mut cur = e.source();
    while let Some(s) = cur {
        last = s.to_string();
        cur = s.source();
    }
    match last.find(" (os error") {
        Some(i) => last[..i].to_string(),
        None => last,
    }
}

/// Why the handshake with `remote` failed, in words a user can act on. rmcp gives the cause
/// as flattened text: an HTTP status is read from it; a request that could not be sent is
/// tried once more with a plain GET, whose error still has its cause (refused, unknown host,
/// TLS).
pub(super) async fn why_unreachable(name: &str, remote: &Remote, error: &str) -> String {
    let refused = error.contains("Auth required")
        || error.contains("Insufficient scope")
        || matches!(http_status(error), Some(401 | 403));
    if refused && remote.oauth.is_some() {
        return format!(
            "it refused the saved login (HTTP 401/403) and it could not be renewed: run `neocode mcp login {name}`"
        );
    }
    if refused
        && remote.bearer.is_none()
        && !remote
            .headers
            .keys()
            .any(|k| k.eq_ignore_ascii_case("authorization"))
        && let Ok(builder) = http_builder()
        && let Ok(http) = builder.timeout(std::time::Duration::from_secs(5)).build()
        && offers_oauth(&http, &remote.url).await
    {
        return format!(
            "it asks for an OAuth login: add `oauth = true` to [mcp_servers.{name}] and run `neocode mcp login {name}`"
        );
    }
    if error.contains("Auth required") || error.contains("Insufficient scope") {
        return "it answered HTTP 401/403 (unauthorized): check its bearer token and headers"
            .to_string();
    }
    if let Some(code) = http_status(error) {
        return match code {
            404 | 405 => format!(
                "it answered HTTP {code} to the streamable HTTP handshake (a server that speaks only the older SSE transport cannot be used: neocode's MCP client has none)"
            ),
            401 | 403 => format!(
                "it answered HTTP {code} (unauthorized): check its bearer token and headers"
            ),
            _ => format!("it answered HTTP {code}"),
        };
    }
    if error.contains("error sending request")
        && let Ok(builder) = http_builder()
        && let Ok(http) = builder
            .redirect(reqwest::redirect::Policy::none())
            .timeout(std::time::Duration::from_secs(5))
            .build()
        && let Err(e) = http.get(remote.url.as_str()).send().await
    {
        return cause(&e);
    }
    let error = error.split_once("] error: ").map_or(error, |(_, e)| e);
    let error = error.split_once(", when send").map_or(error, |(e, _)| e);
    error.lines().next().unwrap_or_default().to_string()
}

/// The status of rmcp's `HTTP 404 Not Found`-style text.
fn http_status(error: &str) -> Option<u16> {
    let at = error.find("HTTP ")?;
    let digits: String = error[at + 5..].chars().take(3).collect();
    digits.parse().ok().filter(|c| (100..600).contains(c))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_are_read_from_rmcp_text() {
        assert_eq!(
            http_status("unexpected server response: HTTP 404 Not Found: <html>"),
            Some(404)
        );
        assert_eq!(http_status("HTTP abc"), None);
        assert_eq!(http_status("no status"), None);
    }

    #[tokio::test]
    async fn token_sources_never_repeat_what_a_command_printed() {
        let cmd = |c: &str| BearerSource::Command(c.to_string());
        assert_eq!(
            token(Some(&cmd("printf 'tok 42'"))).await,
            Err(TokenError::NoToken)
        );
        assert_eq!(
            token(Some(&cmd("echo  t0k"))).await,
            Ok(Some("t0k".to_string()))
        );
        assert_eq!(
            token(Some(&cmd("false"))).await,
            Err(TokenError::Failed(Some(1)))
        );
        assert_eq!(
            token(Some(&cmd("'unclosed"))).await.map_err(|e| e
                .to_string()
                .starts_with("bearer_token_command cannot be split")),
            Err(true)
        );
        assert_eq!(
            token(Some(&BearerSource::Env(
                "NEOCODE_TEST_SURELY_UNSET_VAR".into()
            )))
            .await,
            Err(TokenError::Unset("NEOCODE_TEST_SURELY_UNSET_VAR".into()))
        );
        assert_eq!(token(None).await, Ok(None));
    }
}
