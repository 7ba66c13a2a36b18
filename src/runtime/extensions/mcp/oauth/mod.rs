//! OAuth 2.1 for HTTP MCP servers (`oauth = true`): discovery of the protected resource's and
//! its authorization server's metadata (RFC 9728, RFC 8414 with OpenID's as a fallback),
//! dynamic client registration (RFC 7591) or a configured `client_id`, the authorization code
//! with PKCE (S256) and the `resource` parameter (RFC 8707) through a one-request loopback
//! redirect or a pasted address, and the tokens kept in `<home>/mcp-tokens/NAME.json` (mode
//! 0600), refreshed before they expire and once after a 401.

mod discover;
mod error;
mod flow;
mod provider;
mod store;

pub(super) use discover::offers_oauth;
pub use error::OAuthError;
pub use flow::{LoginMode, LoginOutcome, login, logout};
pub(super) use provider::OAuthAuth;
pub use store::login_state;
