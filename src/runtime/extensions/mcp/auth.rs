//! What gives an HTTP server's requests their `Authorization`: the static token sources
//! (`remote.rs`) and OAuth (`oauth/`).

use futures_util::future::BoxFuture;

/// Yields the bearer token of each request (without `Bearer `). The static sources answer
/// with what they read at connection time; OAuth refreshes here (`oauth/`).
pub(crate) trait AuthProvider: Send + Sync {
    /// The token for the next request, if the server gets one.
    fn bearer(&self) -> BoxFuture<'_, Option<String>>;

    /// Called once after a request was answered 401: whether a new token was obtained (the
    /// request is then sent again with it).
    fn renew(&self) -> BoxFuture<'_, bool> {
        Box::pin(async { false })
    }
}
