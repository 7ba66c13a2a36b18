//! What the server tells besides completions: the models it offers and the context window.

use std::time::Duration;

use super::client::OpenAi;
use crate::runtime::provider::error::{ErrorKind, ProviderError};
use crate::runtime::provider::quirks;
use crate::runtime::provider::transport::root_cause;
use serde_json::Value;

impl OpenAi {
    /// The models the server offers (`GET <base_url>/models`), sorted; one attempt, no
    /// retries, at most the idle timeout (10 s if that is longer).
    pub(crate) fn models(&self) -> Result<Vec<String>, ProviderError> {
        let s = &self.settings;
        let url = format!("{}/models", s.base_url);
        let limit = s.idle_timeout.min(Duration::from_secs(10));
        let mut rb = self.client.get(&url).timeout(limit);
        if let Some(k) = &s.api_key {
            rb = rb.bearer_auth(k);
        }
        let fetched = self.rt.block_on(async {
            let resp = rb.send().await?;
            let status = resp.status().as_u16();
            let text = resp.text().await?;
            Ok::<_, reqwest::Error>((status, text))
        });
        let (status, text) = fetched.map_err(|e| {
            let kind = if e.is_timeout() {
                ErrorKind::Timeout
            } else {
                ErrorKind::Unreachable
            };
            self.err(
                kind,
                format!("cannot list the models of {url}: {}", root_cause(&e)),
                None,
            )
        })?;
        if !(200..300).contains(&status) {
            let kind = match status {
                401 | 403 => ErrorKind::Auth,
                404 => ErrorKind::NotFound,
                _ => ErrorKind::BadRequest,
            };
            return Err(self.err(
                kind,
                format!(
                    "{url} answered HTTP {status} ({}): this server does not list its models",
                    quirks::server_message(&text)
                ),
                None,
            ));
        }
        let v: Value = serde_json::from_str(&text).map_err(|_| {
            self.err(
                ErrorKind::Protocol,
                format!("{url} did not answer a model list (JSON with `data`)"),
                None,
            )
        })?;
        let mut names: Vec<String> = v["data"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|m| m["id"].as_str().map(str::to_string))
            .collect();
        names.sort();
        names.dedup();
        Ok(names)
    }

    /// The window the server tells: llama.cpp's `/props` (beside `/v1`), else the model's
    /// entry in `/v1/models`. Both are asked at once (one round trip before the first request
    /// instead of two); a short wait each; any failure is "not told".
    pub(super) async fn probe_window(&self) -> Option<u64> {
        let s = &self.settings;
        let get = |url: String| {
            let mut rb = self.client.get(url).timeout(Duration::from_secs(3));
            if let Some(k) = &s.api_key {
                rb = rb.bearer_auth(k);
            }
            async move {
                let r = rb.send().await.ok()?;
                if !r.status().is_success() {
                    return None;
                }
                r.json::<Value>().await.ok()
            }
        };
        let root = s.base_url.strip_suffix("/v1").unwrap_or(&s.base_url);
        let (props, models) = tokio::join!(
            get(format!("{root}/props")),
            get(format!("{}/models", s.base_url))
        );
        props
            .as_ref()
            .and_then(quirks::props_window)
            .or_else(|| models.and_then(|v| quirks::models_window(&v, &s.model)))
    }
}
