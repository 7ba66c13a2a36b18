//! The [`OpenAi`] client: its settings, HTTP client and runtime, and how its errors are
//! worded (never with the key).

use crate::runtime::provider::error::{ErrorKind, ProviderError};
use crate::runtime::provider::settings::OpenAiSettings;
use crate::runtime::provider::sse::Completion;

/// The OpenAI-compatible provider. Owns a single-threaded tokio runtime used only inside
/// [`Provider::stream`](crate::runtime::provider::Provider::stream).
pub struct OpenAi {
    pub(super) settings: OpenAiSettings,
    pub(super) client: reqwest::Client,
    pub(super) rt: tokio::runtime::Runtime,
}

impl OpenAi {
    /// Builds the client.
    pub fn new(settings: OpenAiSettings) -> Result<OpenAi, ProviderError> {
        let (client, rt) =
            crate::runtime::provider::transport::client_and_runtime(settings.connect_timeout)?;
        Ok(OpenAi {
            settings,
            client,
            rt,
        })
    }

    /// An error whose message never contains the key.
    pub(super) fn err(
        &self,
        kind: ErrorKind,
        message: String,
        partial: Option<Box<Completion>>,
    ) -> ProviderError {
        ProviderError::redacted(kind, &message, self.settings.api_key.as_deref(), partial)
    }
}

/// The name sessions store for this provider.
pub(super) const NAME: &str = "openai";

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::provider::redact::redact;

    #[test]
    fn redact_removes_key_and_sk_tokens() {
        let s = redact(
            "Incorrect API key provided: sk-abc123XYZ. mykey-secret",
            Some("mykey-secret"),
        );
        assert!(!s.contains("abc123"));
        assert!(!s.contains("mykey-secret"));
        assert!(s.contains("***"));
    }

    #[test]
    fn debug_hides_key() {
        let s = OpenAiSettings::new("http://x/v1", "m", Some("sk-secret".into()));
        assert!(!format!("{s:?}").contains("secret"));
    }
}
