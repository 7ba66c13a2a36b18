//! The `Authorization` of an OAuth server's requests: the saved access token, refreshed when
//! it is about to expire (a minute ahead) and once after a 401; what a refresh brings is
//! saved again. Read when the server is connected: no login, or a login that cannot be
//! renewed, is a failed start that names `neocode mcp login NAME`.

use std::path::PathBuf;

use futures_util::future::BoxFuture;

use super::error::OAuthError;
use super::flow::{http, refresh};
use super::store::{self, Saved};
use crate::runtime::config::mcp::Remote;
use crate::runtime::extensions::mcp::auth::AuthProvider;

/// Seconds before expiry at which a token is renewed.
const AHEAD: i64 = 60;

/// The tokens of one connected OAuth server.
pub(crate) struct OAuthAuth {
    server: String,
    file: PathBuf,
    http: reqwest::Client,
    saved: tokio::sync::Mutex<Saved>,
}

impl OAuthAuth {
    /// The saved login of server `name`, renewed now if it is (about to be) expired.
    pub(crate) async fn open(name: &str, remote: &Remote) -> Result<OAuthAuth, OAuthError> {
        let file = remote
            .oauth
            .as_ref()
            .and_then(|o| o.token_file.clone())
            .ok_or_else(|| OAuthError::NotLoggedIn(name.to_string()))?;
        let saved = store::load(&file, &remote.url)
            .ok_or_else(|| OAuthError::NotLoggedIn(name.to_string()))?;
        let auth = OAuthAuth {
            server: name.to_string(),
            file,
            http: http()?,
            saved: tokio::sync::Mutex::new(saved),
        };
        if auth.expiring().await {
            auth.renew_now().await?;
        }
        Ok(auth)
    }

    async fn expiring(&self) -> bool {
        self.saved
            .lock()
            .await
            .expires_at
            .is_some_and(|t| t - AHEAD <= store::now())
    }

    /// Refreshes and saves the tokens. Another neocode process may have renewed them first
    /// (a rotated refresh token then fails here): the file's newer tokens are taken instead.
    async fn renew_now(&self) -> Result<(), OAuthError> {
        let mut saved = self.saved.lock().await;
        let newer = |s: &Saved| {
            store::load(&self.file, &s.server_url).filter(|f| {
                f.access_token != s.access_token
                    && f.expires_at.is_none_or(|t| t - AHEAD > store::now())
            })
        };
        if let Some(f) = newer(&saved) {
            *saved = f;
            return Ok(());
        }
        match refresh(&self.http, &saved).await {
            Ok(fresh) => {
                store::save(&self.file, &fresh)?;
                *saved = fresh;
                Ok(())
            }
            Err(why) => match newer(&saved) {
                Some(f) => {
                    *saved = f;
                    Ok(())
                }
                None => Err(OAuthError::Refresh {
                    server: self.server.clone(),
                    why: why.to_string(),
                }),
            },
        }
    }
}

impl AuthProvider for OAuthAuth {
    fn bearer(&self) -> BoxFuture<'_, Option<String>> {
        Box::pin(async move {
            if self.expiring().await {
                // A failed renewal sends the old token: the 401 it gets ends the call.
                let _ = self.renew_now().await;
            }
            Some(self.saved.lock().await.access_token.clone())
        })
    }

    fn renew(&self) -> BoxFuture<'_, bool> {
        Box::pin(async move { self.renew_now().await.is_ok() })
    }
}
