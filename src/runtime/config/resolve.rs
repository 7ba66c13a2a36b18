//! Whether a model can be called, the provider settings, and where the API key comes from.

use super::{Api, ConfigError, ProviderStatus, Settings};
use crate::runtime::provider::{ApiSettings, OpenAiSettings};

impl Settings {
    /// The base URL a request would go to: the configured one, else OpenAI's when a key is set.
    /// The base URL requests go to (the OpenAI default when only a key is set), if any.
    pub(crate) fn effective_base_url(&self) -> Option<String> {
        self.base_url.clone().or_else(|| {
            self.has_api_key()
                .then(|| self.api.default_url().to_string())
        })
    }

    /// Whether sending can work, else exactly which setting is missing.
    pub(crate) fn provider_status(&self) -> ProviderStatus {
        let file = self.path.display();
        let Some(base_url) = self.effective_base_url() else {
            return ProviderStatus::Missing(format!(
                "no model provider configured: set NEOCODE_BASE_URL (e.g. http://localhost:11434/v1 for Ollama) or NEOCODE_API_KEY / OPENAI_API_KEY for OpenAI, and NEOCODE_MODEL (or base_url and model in {file})"
            ));
        };
        if base_url.contains("api.openai.com") && !self.has_api_key() {
            return ProviderStatus::Missing(
                "no API key for api.openai.com: set NEOCODE_API_KEY or OPENAI_API_KEY".into(),
            );
        }
        if base_url.contains("api.anthropic.com") && !self.has_api_key() {
            return ProviderStatus::Missing(
                "no API key for api.anthropic.com: set NEOCODE_API_KEY or ANTHROPIC_API_KEY".into(),
            );
        }
        if !(base_url.starts_with("http://") || base_url.starts_with("https://")) {
            return ProviderStatus::Missing(format!(
                "base URL `{base_url}` must start with http:// or https:// (NEOCODE_BASE_URL, --base-url or base_url in {file})"
            ));
        }
        let Some(model) = self.model.clone() else {
            return ProviderStatus::Missing(format!(
                "no model configured: set NEOCODE_MODEL, pass --model, or set model in {file}"
            ));
        };
        ProviderStatus::Ready { base_url, model }
    }

    /// Settings for the OpenAI provider, or what is missing.
    pub fn openai(&self) -> Result<OpenAiSettings, ConfigError> {
        match self.provider_status() {
            ProviderStatus::Missing(m) => Err(ConfigError::Missing(m)),
            ProviderStatus::Ready { base_url, model } => {
                let key = self.resolved_key()?;
                let mut s = OpenAiSettings::new(&base_url, &model, key);
                s.connect_timeout = self.connect_timeout;
                s.idle_timeout = self.idle_timeout;
                s.max_retries = self.max_retries;
                s.backoff = self.retry_backoff;
                s.max_tokens = self.max_tokens;
                s.reasoning_effort = self.reasoning_effort.clone();
                Ok(s)
            }
        }
    }

    /// Settings for the configured wire API's provider, or what is missing.
    pub(crate) fn wire(&self) -> Result<ApiSettings, ConfigError> {
        Ok(ApiSettings {
            http: self.openai()?,
            reasoning_effort: self.reasoning_effort.clone(),
            thinking_budget: self.thinking_budget,
            max_output_tokens: self.max_output_tokens,
            system_as_text: self.system_as_text,
        })
    }

    /// Whether an API key is set or a command gives one (the key itself is never shown).
    pub(crate) fn has_api_key(&self) -> bool {
        self.api_key.is_some() || self.key_command.is_some() || self.vendor_key().is_some()
    }

    /// Where the key comes from (a variable's name, or `api_key_command`), for messages.
    pub(crate) fn key_source(&self) -> Option<String> {
        if self.api_key.is_some() {
            return self.explicit_source.clone();
        }
        if self.key_command.is_some() {
            return Some("api_key_command".to_string());
        }
        self.vendor_key()
            .map(|_| self.api.key_variable().to_string())
    }

    /// The key of the api's own variable (`OPENAI_API_KEY`, `ANTHROPIC_API_KEY`), if set.
    fn vendor_key(&self) -> Option<&str> {
        let i = usize::from(self.api == Api::Anthropic);
        self.vendor_keys[i].as_deref()
    }

    /// The key, for redacting it from text (never for printing): the variable's, else the
    /// command's once it has run.
    pub(crate) fn api_key(&self) -> Option<&str> {
        self.api_key
            .as_deref()
            .or_else(|| {
                let cmd = self.key_command.as_deref()?;
                crate::runtime::key_command::cached(cmd)
            })
            .or_else(|| self.vendor_key())
    }

    /// The key to send: the variable's, else `api_key_command`'s output (the command runs
    /// once per process); an error says why the command gave none, never what it printed.
    fn resolved_key(&self) -> Result<Option<String>, crate::runtime::key_command::KeyCommandError> {
        if let Some(k) = &self.api_key {
            return Ok(Some(k.clone()));
        }
        match &self.key_command {
            Some(cmd) => crate::runtime::key_command::run_once(cmd).map(Some),
            None => Ok(self.vendor_key().map(str::to_string)),
        }
    }
}
