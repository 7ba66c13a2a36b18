//! `neocode mcp login NAME`: discovery, the client (registered now or configured), the
//! authorization code with PKCE (S256), `state` and `resource`, received by a loopback
//! listener on `http://127.0.0.1:<port>/callback` (one request) or pasted back, then
//! exchanged for tokens that are saved. Also the refresh grant and `logout`.

use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use reqwest::Url;
use serde::Deserialize;
use sha2::{Digest, Sha256};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::discover::{Endpoints, discover};
use super::error::OAuthError;
use super::store::{self, Saved};
use crate::runtime::config::mcp::{OAuthSettings, Remote, ServerConfig};

/// How long the loopback listener waits for the browser.
const WAIT: Duration = Duration::from_secs(300);

/// How the authorization comes back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LoginMode {
    /// A loopback listener receives the browser's redirect.
    Loopback,
    /// The user pastes the address the browser was sent to (or its code).
    Paste,
}

/// What a login left.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoginOutcome {
    /// When the access token expires (Unix seconds), if the server said.
    pub expires_at: Option<i64>,
    /// Whether a refresh token came with it.
    pub refreshable: bool,
    /// Whether the client was registered now (no `client_id` configured).
    pub registered: bool,
}

fn random() -> Result<String, OAuthError> {
    let mut bytes = [0u8; 32];
    ring::rand::SecureRandom::fill(&ring::rand::SystemRandom::new(), &mut bytes)
        .map_err(|_| OAuthError::Io("the system has no random numbers".to_string()))?;
    Ok(URL_SAFE_NO_PAD.encode(bytes))
}

/// The PKCE S256 challenge of `verifier`.
pub(super) fn challenge(verifier: &str) -> String {
    URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()))
}

/// An `application/x-www-form-urlencoded` body.
fn form(pairs: &[(&str, &str)]) -> String {
    let Ok(mut u) = Url::parse("http://f/") else {
        return String::new();
    };
    u.query_pairs_mut().extend_pairs(pairs);
    u.query().unwrap_or_default().to_string()
}

pub(super) fn http() -> Result<reqwest::Client, OAuthError> {
    let tls = crate::runtime::net::tls_config().map_err(|e| OAuthError::Io(e.to_string()))?;
    reqwest::Client::builder()
        .tls_backend_preconfigured(tls)
        .redirect(reqwest::redirect::Policy::limited(5))
        .timeout(Duration::from_secs(30))
        .build()
        .map_err(|e| OAuthError::Io(crate::runtime::net::root_cause(&e)))
}

#[derive(Deserialize)]
struct TokenReply {
    access_token: String,
    refresh_token: Option<String>,
    expires_in: Option<i64>,
}

/// Posts a token request; the reply's tokens, or the server's `error` (never its body whole).
async fn token_request(
    http: &reqwest::Client,
    endpoint: &str,
    pairs: &[(&str, &str)],
) -> Result<TokenReply, OAuthError> {
    let r = http
        .post(endpoint)
        .header("Content-Type", "application/x-www-form-urlencoded")
        .header("Accept", "application/json")
        .body(form(pairs))
        .send()
        .await
        .map_err(|e| OAuthError::Token(crate::runtime::net::root_cause(&e)))?;
    let status = r.status();
    let body: serde_json::Value = r.json().await.unwrap_or_default();
    if !status.is_success() {
        let code = body["error"].as_str().unwrap_or("no error code");
        return Err(OAuthError::Token(format!(
            "HTTP {}: {code}",
            status.as_u16()
        )));
    }
    serde_json::from_value(body)
        .map_err(|_| OAuthError::Token("the reply has no access_token".to_string()))
}

/// The refresh grant: new tokens for `saved` (its refresh token kept when no new one comes).
pub(super) async fn refresh(http: &reqwest::Client, saved: &Saved) -> Result<Saved, OAuthError> {
    let Some(rt) = saved.refresh_token.as_deref() else {
        return Err(OAuthError::NoRefreshToken);
    };
    let mut pairs = vec![
        ("grant_type", "refresh_token"),
        ("refresh_token", rt),
        ("client_id", saved.client_id.as_str()),
        ("resource", saved.resource.as_str()),
    ];
    if let Some(s) = &saved.client_secret {
        pairs.push(("client_secret", s));
    }
    let reply = token_request(http, &saved.token_endpoint, &pairs).await?;
    Ok(Saved {
        access_token: reply.access_token,
        refresh_token: reply.refresh_token.or_else(|| saved.refresh_token.clone()),
        expires_at: reply.expires_in.map(|s| store::now() + s),
        ..saved.clone()
    })
}

/// The client to log in with: the configured one, else one registered now.
async fn client(
    http: &reqwest::Client,
    name: &str,
    oauth: &OAuthSettings,
    ends: &Endpoints,
    redirect: &str,
) -> Result<(String, Option<String>, bool), OAuthError> {
    if let Some(id) = &oauth.client_id {
        return Ok((id.clone(), None, false));
    }
    let Some(reg) = &ends.registration else {
        return Err(OAuthError::NoClient(name.to_string()));
    };
    let body = serde_json::json!({
        "client_name": "neocode",
        "redirect_uris": [redirect],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": "none",
    });
    let r = http
        .post(reg)
        .json(&body)
        .send()
        .await
        .map_err(|e| OAuthError::Registration(crate::runtime::net::root_cause(&e)))?;
    let status = r.status();
    let reply: serde_json::Value = r.json().await.unwrap_or_default();
    let Some(id) = reply["client_id"].as_str().filter(|_| status.is_success()) else {
        let code = reply["error"]
            .as_str()
            .unwrap_or("no client_id in the reply");
        return Err(OAuthError::Registration(format!(
            "HTTP {}: {code}",
            status.as_u16()
        )));
    };
    let secret = reply["client_secret"].as_str().map(str::to_string);
    Ok((id.to_string(), secret, true))
}

/// The code of a redirect's query (`code`, `state`, `error`), checked against `state`.
fn code_of(query: &str, state: &str) -> Result<String, OAuthError> {
    let url = Url::parse(&format!("http://x/?{query}"))
        .map_err(|e| OAuthError::Authorize(e.to_string()))?;
    let get = |k: &str| {
        url.query_pairs()
            .find(|(n, _)| n == k)
            .map(|(_, v)| v.into_owned())
    };
    if let Some(e) = get("error") {
        return Err(OAuthError::Authorize(
            crate::sanitize::line(&e).into_owned(),
        ));
    }
    if get("state").as_deref() != Some(state) {
        return Err(OAuthError::Authorize(
            "the redirect's state does not match this login".to_string(),
        ));
    }
    get("code").ok_or_else(|| OAuthError::Authorize("the redirect carries no code".to_string()))
}

/// What the user pasted: the whole redirected address, or the code alone.
fn pasted_code(text: &str, state: &str) -> Result<String, OAuthError> {
    let text = text.trim();
    match text.split_once('?') {
        Some((_, q)) => code_of(q.split('#').next().unwrap_or(q), state),
        None if !text.is_empty() && !text.contains(char::is_whitespace) => Ok(text.to_string()),
        None => Err(OAuthError::Authorize("nothing was pasted".to_string())),
    }
}

/// The request line and headers of a connection (up to 8 KiB, or what came within 10 s):
/// a request may arrive in several pieces.
async fn read_head(conn: &mut tokio::net::TcpStream) -> String {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 2048];
    let read = async {
        while buf.len() < 8192 && !buf.windows(4).any(|w| w == b"\r\n\r\n") {
            match conn.read(&mut chunk).await {
                Ok(0) | Err(_) => break,
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
            }
        }
    };
    let _ = tokio::time::timeout(Duration::from_secs(10), read).await;
    String::from_utf8_lossy(&buf).to_string()
}

/// Serves the loopback redirect: waits for `GET /callback?...`, answers it, returns its code.
/// Other requests (a browser's favicon) get a 404 and the wait goes on.
async fn receive(listener: tokio::net::TcpListener, state: &str) -> Result<String, OAuthError> {
    loop {
        let (mut conn, _) = listener
            .accept()
            .await
            .map_err(|e| OAuthError::Io(crate::session::io_error(&e)))?;
        let head = read_head(&mut conn).await;
        let target = head.split(' ').nth(1).unwrap_or("");
        let Some(query) = target.strip_prefix("/callback?") else {
            let _ = conn
                .write_all(
                    b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
                )
                .await;
            continue;
        };
        let got = code_of(query, state);
        let page = match &got {
            Ok(_) => "neocode is logged in. You can close this tab.".to_string(),
            Err(e) => format!("neocode could not log in: {e}"),
        };
        let reply = format!(
            "HTTP/1.1 200 OK\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{page}",
            page.len()
        );
        let _ = conn.write_all(reply.as_bytes()).await;
        let _ = conn.shutdown().await;
        return got;
    }
}

/// The server's HTTP settings, if it is an OAuth server with a token file.
fn oauth_of(cfg: &ServerConfig) -> Result<(&Remote, &OAuthSettings, &std::path::Path), OAuthError> {
    let not = |why: &str| OAuthError::NotOAuth(format!("MCP server `{}` {why}", cfg.name));
    if let Some(why) = &cfg.invalid {
        return Err(not(&format!("is invalid: {why}")));
    }
    let remote = cfg
        .remote
        .as_ref()
        .ok_or_else(|| not("is not a `url` server"))?;
    let oauth = remote
        .oauth
        .as_ref()
        .ok_or_else(|| not("does not use OAuth (add `oauth = true` to its table)"))?;
    let file = oauth
        .token_file
        .as_deref()
        .ok_or_else(|| not("has no place for tokens"))?;
    Ok((remote, oauth, file))
}

/// Logs in to `cfg`'s server: `show` gets the address to open (and whether a listener
/// waits for it); in [`LoginMode::Paste`], `paste` reads what the user pasted.
pub fn login(
    cfg: &ServerConfig,
    mode: LoginMode,
    show: &mut dyn FnMut(&str),
    paste: &mut dyn FnMut() -> std::io::Result<String>,
) -> Result<LoginOutcome, OAuthError> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| OAuthError::Io(crate::session::io_error(&e)))?;
    rt.block_on(login_async(cfg, mode, show, paste))
}

async fn login_async(
    cfg: &ServerConfig,
    mode: LoginMode,
    show: &mut dyn FnMut(&str),
    paste: &mut dyn FnMut() -> std::io::Result<String>,
) -> Result<LoginOutcome, OAuthError> {
    let (remote, oauth, file) = oauth_of(cfg)?;
    let http = http()?;
    let ends = discover(&http, &remote.url).await?;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .map_err(|e| OAuthError::Io(crate::session::io_error(&e)))?;
    let port = listener
        .local_addr()
        .map_err(|e| OAuthError::Io(crate::session::io_error(&e)))?
        .port();
    let redirect = format!("http://127.0.0.1:{port}/callback");
    let (client_id, client_secret, registered) =
        client(&http, &cfg.name, oauth, &ends, &redirect).await?;
    let verifier = random()?;
    let state = random()?;
    let scopes = if oauth.scopes.is_empty() {
        ends.scopes.join(" ")
    } else {
        oauth.scopes.join(" ")
    };
    let mut url = Url::parse(&ends.authorization)
        .map_err(|e| OAuthError::Discovery(format!("bad authorization endpoint: {e}")))?;
    url.query_pairs_mut()
        .append_pair("response_type", "code")
        .append_pair("client_id", &client_id)
        .append_pair("redirect_uri", &redirect)
        .append_pair("code_challenge", &challenge(&verifier))
        .append_pair("code_challenge_method", "S256")
        .append_pair("state", &state)
        .append_pair("resource", &ends.resource);
    if !scopes.is_empty() {
        url.query_pairs_mut().append_pair("scope", &scopes);
    }
    show(url.as_str());
    let code = match mode {
        LoginMode::Loopback => tokio::time::timeout(WAIT, receive(listener, &state))
            .await
            .map_err(|_| OAuthError::Timeout(WAIT.as_secs() / 60))??,
        LoginMode::Paste => {
            drop(listener);
            let text = paste().map_err(|e| OAuthError::Io(crate::session::io_error(&e)))?;
            pasted_code(&text, &state)?
        }
    };
    let mut pairs = vec![
        ("grant_type", "authorization_code"),
        ("code", code.as_str()),
        ("redirect_uri", redirect.as_str()),
        ("client_id", client_id.as_str()),
        ("code_verifier", verifier.as_str()),
        ("resource", ends.resource.as_str()),
    ];
    if let Some(s) = &client_secret {
        pairs.push(("client_secret", s));
    }
    let reply = token_request(&http, &ends.token, &pairs).await?;
    let saved = Saved {
        server_url: remote.url.clone(),
        access_token: reply.access_token,
        refresh_token: reply.refresh_token,
        expires_at: reply.expires_in.map(|s| store::now() + s),
        client_id,
        client_secret,
        token_endpoint: ends.token,
        resource: ends.resource,
    };
    store::save(file, &saved)?;
    Ok(LoginOutcome {
        expires_at: saved.expires_at,
        refreshable: saved.refresh_token.is_some(),
        registered,
    })
}

/// Deletes the server's tokens; whether there were any.
pub fn logout(cfg: &ServerConfig) -> Result<bool, OAuthError> {
    let (_, _, file) = oauth_of(cfg)?;
    match std::fs::remove_file(file) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(OAuthError::Io(format!(
            "cannot delete {}: {}",
            file.display(),
            crate::session::io_error(&e)
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pkce_challenge_is_unpadded_base64url_of_sha256() {
        // Computed independently with Python's hashlib and base64.urlsafe_b64encode.
        assert_eq!(
            challenge("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWjOEjXk"),
            "VYFANLqdx_HDV6BqEhluZJ63rtrIPROSSFdB3P6G83I"
        );
    }

    #[test]
    fn redirects_are_checked_for_state_and_pasted_codes_taken() {
        assert_eq!(code_of("code=c1&state=s", "s"), Ok("c1".to_string()));
        assert!(code_of("code=c1&state=t", "s").is_err());
        assert!(code_of("error=access_denied&state=s", "s").is_err());
        assert_eq!(
            pasted_code("http://127.0.0.1:9/callback?code=c2&state=s\n", "s"),
            Ok("c2".to_string())
        );
        assert_eq!(pasted_code(" c3 ", "s"), Ok("c3".to_string()));
        assert!(pasted_code("", "s").is_err());
        assert_eq!(form(&[("a", "b c"), ("d", "&")]), "a=b+c&d=%26");
    }
}
