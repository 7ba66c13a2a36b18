//! The tokens of one server in `<home>/mcp-tokens/NAME.json`: written atomically (a temporary
//! file of mode 0600 renamed over the old one), read when the server is connected, deleted by
//! `neocode mcp logout`. Nothing else of neocode writes them anywhere.

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::error::OAuthError;
use crate::runtime::config::mcp::Remote;

/// What a login left: the tokens, when they expire, and the client and endpoint that renew
/// them.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(super) struct Saved {
    /// The MCP server's URL the tokens were issued for; another URL means logged out.
    pub(super) server_url: String,
    pub(super) access_token: String,
    pub(super) refresh_token: Option<String>,
    /// Unix seconds; `None` when the server gave no lifetime.
    pub(super) expires_at: Option<i64>,
    pub(super) client_id: String,
    pub(super) client_secret: Option<String>,
    pub(super) token_endpoint: String,
    /// The RFC 8707 resource the tokens are for.
    pub(super) resource: String,
}

/// Tokens are never printed.
impl std::fmt::Debug for Saved {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Saved")
            .field("server_url", &self.server_url)
            .field("expires_at", &self.expires_at)
            .field("client_id", &self.client_id)
            .finish_non_exhaustive()
    }
}

pub(super) fn now() -> i64 {
    chrono::Utc::now().timestamp()
}

/// The tokens in `path` for `server_url`, if any (an unreadable file counts as none).
pub(super) fn load(path: &Path, server_url: &str) -> Option<Saved> {
    let text = std::fs::read_to_string(path).ok()?;
    serde_json::from_str::<Saved>(&text)
        .ok()
        .filter(|s| s.server_url == server_url)
}

/// Writes `saved` to `path` atomically with mode 0600 (its folder 0700).
pub(super) fn save(path: &Path, saved: &Saved) -> Result<(), OAuthError> {
    let io = |e: std::io::Error| {
        OAuthError::Io(format!(
            "cannot write {}: {}",
            path.display(),
            crate::session::io_error(&e)
        ))
    };
    let dir = path
        .parent()
        .ok_or_else(|| OAuthError::Io(format!("{} has no folder", path.display())))?;
    std::fs::create_dir_all(dir).map_err(io)?;
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700)).map_err(io)?;
    }
    let tmp = dir.join(format!(".{}.tmp", uuid::Uuid::new_v4()));
    let body = serde_json::to_vec_pretty(saved).map_err(|e| OAuthError::Io(e.to_string()))?;
    let written = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&tmp)
        .and_then(|mut f| {
            f.write_all(&body)?;
            f.sync_all()
        })
        .and_then(|()| std::fs::rename(&tmp, path));
    if let Err(e) = written {
        let _ = std::fs::remove_file(&tmp);
        return Err(io(e));
    }
    Ok(())
}

/// For `mcp list`: `logged in (expires …)` / `logged in` / `not logged in`, or `None` when
/// the server does not use OAuth.
pub fn login_state(remote: &Remote) -> Option<String> {
    let oauth = remote.oauth.as_ref()?;
    let saved = oauth
        .token_file
        .as_deref()
        .and_then(|p| load(p, &remote.url));
    Some(match saved {
        None => "not logged in".to_string(),
        Some(s) => match s
            .expires_at
            .and_then(|t| chrono::DateTime::from_timestamp(t, 0))
        {
            Some(t) if s.refresh_token.is_none() && t.timestamp() <= now() => {
                "expired: run `neocode mcp login` again".to_string()
            }
            Some(t) => format!(
                "logged in (expires {}{})",
                t.format("%Y-%m-%d %H:%M UTC"),
                if s.refresh_token.is_some() {
                    ", renewed automatically"
                } else {
                    ""
                }
            ),
            None => "logged in".to_string(),
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn saved_atomically_with_mode_0600_and_never_debug_printed() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("mcp-tokens").join("s.json");
        let s = Saved {
            server_url: "http://127.0.0.1/mcp".into(),
            access_token: "at-secret".into(),
            refresh_token: Some("rt-secret".into()),
            expires_at: Some(1),
            client_id: "c".into(),
            client_secret: None,
            token_endpoint: "http://127.0.0.1/token".into(),
            resource: "http://127.0.0.1/mcp".into(),
        };
        save(&path, &s).unwrap();
        save(&path, &s).unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        assert_eq!(
            std::fs::read_dir(path.parent().unwrap()).unwrap().count(),
            1
        );
        assert_eq!(load(&path, "http://127.0.0.1/mcp"), Some(s.clone()));
        assert_eq!(load(&path, "http://127.0.0.1/other"), None);
        assert!(!format!("{s:?}").contains("secret"));
    }
}
