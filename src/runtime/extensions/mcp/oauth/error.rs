//! Why logging in to an MCP server, or using its tokens, failed: one line a user can act on.
//! No token, code or secret is ever part of a message.

/// An OAuth failure.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OAuthError {
    /// The server is not configured, not an HTTP server, or lacks `oauth = true`.
    #[error("{0}")]
    NotOAuth(String),
    /// A metadata document could not be fetched or read.
    #[error("OAuth discovery failed: {0}")]
    Discovery(String),
    /// The authorization server offers no registration and no `client_id` is configured.
    #[error(
        "the authorization server of `{0}` offers no client registration: set `client_id` in [mcp_servers.{0}] (a client registered with that service)"
    )]
    NoClient(String),
    /// Registration was refused.
    #[error("client registration failed: {0}")]
    Registration(String),
    /// The authorization server does not do PKCE with S256.
    #[error("the authorization server does not support PKCE with S256")]
    NoPkce,
    /// The redirect carried an error, a wrong state or no code.
    #[error("authorization failed: {0}")]
    Authorize(String),
    /// The token endpoint refused the code or the refresh token.
    #[error("the token endpoint refused: {0}")]
    Token(String),
    /// Stored tokens could not be refreshed.
    #[error(
        "the login of `{server}` expired and could not be renewed ({why}): run `neocode mcp login {server}`"
    )]
    Refresh { server: String, why: String },
    /// The stored tokens carry no refresh token.
    #[error("no refresh token")]
    NoRefreshToken,
    /// No stored tokens.
    #[error("it needs a login: run `neocode mcp login {0}`")]
    NotLoggedIn(String),
    /// The token file or the loopback listener failed (the I/O error, in words).
    #[error("{0}")]
    Io(String),
    /// No redirect arrived in time.
    #[error("no authorization arrived within {0} minutes; run the login again (or use --paste)")]
    Timeout(u64),
}
