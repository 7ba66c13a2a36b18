//! Where to log in: the protected resource's metadata (RFC 9728: the `resource_metadata` a
//! 401 names, else `/.well-known/oauth-protected-resource` under the server's origin, with its
//! path and then without), then its authorization server's metadata (RFC 8414
//! `/.well-known/oauth-authorization-server`, falling back to OpenID's
//! `/.well-known/openid-configuration`). A server with no resource metadata is taken to be
//! its own authorization server (the MCP specification of 2025-03-26).

use reqwest::Url;
use serde::Deserialize;

use super::error::OAuthError;

/// What discovery found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Endpoints {
    pub(super) authorization: String,
    pub(super) token: String,
    pub(super) registration: Option<String>,
    /// RFC 8707 resource: the metadata's `resource`, else the server's URL.
    pub(super) resource: String,
    /// The resource's `scopes_supported`, used when the table gives no `scopes`.
    pub(super) scopes: Vec<String>,
}

#[derive(Deserialize)]
struct ResourceMeta {
    resource: Option<String>,
    #[serde(default)]
    authorization_servers: Vec<String>,
    #[serde(default)]
    scopes_supported: Vec<String>,
}

#[derive(Deserialize)]
struct ServerMeta {
    authorization_endpoint: String,
    token_endpoint: String,
    registration_endpoint: Option<String>,
    code_challenge_methods_supported: Option<Vec<String>>,
}

/// `{origin}/.well-known/{name}{path}` and, when the path is not empty,
/// `{origin}/.well-known/{name}`.
fn well_known(base: &Url, name: &str) -> Vec<String> {
    let origin = base.origin().ascii_serialization();
    let path = base.path().trim_end_matches('/');
    let mut out = vec![format!("{origin}/.well-known/{name}{path}")];
    if !path.is_empty() {
        out.push(format!("{origin}/.well-known/{name}"));
    }
    out
}

/// The first of `urls` that answers 200 with a document of type `T`.
async fn first<T: for<'de> Deserialize<'de>>(http: &reqwest::Client, urls: &[String]) -> Option<T> {
    for u in urls {
        let Ok(r) = http
            .get(u)
            .header("Accept", "application/json")
            .send()
            .await
        else {
            continue;
        };
        if r.status().is_success()
            && let Ok(t) = r.json::<T>().await
        {
            return Some(t);
        }
    }
    None
}

/// The `resource_metadata` URL of a 401's `WWW-Authenticate: Bearer ...`, if the server
/// answers an unauthenticated request with one.
async fn challenged(http: &reqwest::Client, server: &Url) -> Option<String> {
    let r = http
        .post(server.as_str())
        .header("Content-Type", "application/json")
        .header("Accept", "application/json, text/event-stream")
        .body(r#"{"jsonrpc":"2.0","id":0,"method":"ping"}"#)
        .send()
        .await
        .ok()?;
    let h = r.headers().get("www-authenticate")?.to_str().ok()?;
    let at = h.find("resource_metadata=")? + "resource_metadata=".len();
    let rest = h[at..].trim_start_matches('"');
    let end = rest.find(['"', ',', ' ']).unwrap_or(rest.len());
    Some(rest[..end].to_string())
}

/// Whether the server at `url` answers an unauthenticated request with a Bearer challenge that
/// names its resource metadata (RFC 9728): it wants an OAuth login.
pub(crate) async fn offers_oauth(http: &reqwest::Client, url: &str) -> bool {
    match Url::parse(url) {
        Ok(u) => challenged(http, &u).await.is_some(),
        Err(_) => false,
    }
}

/// Discovers the endpoints of the MCP server at `server_url`.
pub(super) async fn discover(
    http: &reqwest::Client,
    server_url: &str,
) -> Result<Endpoints, OAuthError> {
    let server = Url::parse(server_url).map_err(|e| OAuthError::Discovery(e.to_string()))?;
    let mut candidates: Vec<String> = challenged(http, &server).await.into_iter().collect();
    candidates.extend(well_known(&server, "oauth-protected-resource"));
    let meta: Option<ResourceMeta> = first(http, &candidates).await;
    let (issuer, resource, scopes) = match meta {
        Some(m) => {
            let issuer = m.authorization_servers.into_iter().next().ok_or_else(|| {
                OAuthError::Discovery(
                    "the resource metadata names no authorization server".to_string(),
                )
            })?;
            let issuer = Url::parse(&issuer).map_err(|e| {
                OAuthError::Discovery(format!("bad authorization server address: {e}"))
            })?;
            (issuer, m.resource, m.scopes_supported)
        }
        None => {
            let mut origin = server.clone();
            origin.set_path("");
            origin.set_query(None);
            (origin, None, Vec::new())
        }
    };
    let mut urls = well_known(&issuer, "oauth-authorization-server");
    urls.extend(well_known(&issuer, "openid-configuration"));
    urls.push(format!(
        "{}/.well-known/openid-configuration",
        issuer.as_str().trim_end_matches('/')
    ));
    let asm: ServerMeta = first(http, &urls).await.ok_or_else(|| {
        OAuthError::Discovery(format!(
            "no authorization server metadata at {}",
            issuer.origin().ascii_serialization()
        ))
    })?;
    if asm
        .code_challenge_methods_supported
        .as_ref()
        .is_some_and(|m| !m.iter().any(|x| x == "S256"))
    {
        return Err(OAuthError::NoPkce);
    }
    let mut canonical = server;
    canonical.set_fragment(None);
    Ok(Endpoints {
        authorization: asm.authorization_endpoint,
        token: asm.token_endpoint,
        registration: asm.registration_endpoint,
        resource: resource.unwrap_or_else(|| canonical.to_string()),
        scopes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn well_known_addresses_keep_the_path_first() {
        let u = Url::parse("https://h.example/tenant/mcp/").unwrap();
        assert_eq!(
            well_known(&u, "oauth-protected-resource"),
            [
                "https://h.example/.well-known/oauth-protected-resource/tenant/mcp",
                "https://h.example/.well-known/oauth-protected-resource"
            ]
        );
        let root = Url::parse("https://h.example").unwrap();
        assert_eq!(
            well_known(&root, "openid-configuration"),
            ["https://h.example/.well-known/openid-configuration"]
        );
    }
}
