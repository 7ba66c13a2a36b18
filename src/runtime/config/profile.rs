//! Named provider profiles (`[providers.NAME]`) over `[provider]`.

use super::file::{FileConfig, FileProvider};

impl FileProvider {
    /// `self` with every key `profile` sets taken from it.
    fn overlay(self, profile: FileProvider) -> FileProvider {
        FileProvider {
            api: profile.api.or(self.api),
            api_key_env: profile.api_key_env.or(self.api_key_env),
            api_key_command: profile.api_key_command.or(self.api_key_command),
            reasoning_effort: profile.reasoning_effort.or(self.reasoning_effort),
            thinking_budget: profile.thinking_budget.or(self.thinking_budget),
            system_as_text: profile.system_as_text.or(self.system_as_text),
            tool_choice: profile.tool_choice.or(self.tool_choice),
            max_output_tokens: profile.max_output_tokens.or(self.max_output_tokens),
            base_url: profile.base_url.or(self.base_url),
            model: profile.model.or(self.model),
            context_window: profile.context_window.or(self.context_window),
            compact_at: profile.compact_at.or(self.compact_at),
            max_tokens: profile.max_tokens.or(self.max_tokens),
            connect_timeout_secs: profile.connect_timeout_secs.or(self.connect_timeout_secs),
            idle_timeout_secs: profile.idle_timeout_secs.or(self.idle_timeout_secs),
            max_retries: profile.max_retries.or(self.max_retries),
            retry_backoff_ms: profile.retry_backoff_ms.or(self.retry_backoff_ms),
        }
    }
}

/// A provider profile asked for (`--provider`, `NEOCODE_PROVIDER`, `provider =`) that the
/// file has no `[providers.NAME]` table for.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(super) struct UnknownProfile {
    name: String,
    /// The profiles the file does have, in file order.
    known: Vec<String>,
}

impl std::fmt::Display for UnknownProfile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let name = &self.name;
        if self.known.is_empty() {
            write!(
                f,
                "no provider profile `{name}`: add a [providers.{name}] table"
            )
        } else {
            write!(
                f,
                "no provider profile `{name}` (profiles: {}); add a [providers.{name}] table",
                self.known.join(", ")
            )
        }
    }
}

/// `[provider]` with the chosen profile's keys over it; a profile that is not in the file is
/// an error naming the ones that are.
pub(super) fn chosen_provider(
    file: &mut FileConfig,
    name: Option<&str>,
) -> Result<FileProvider, UnknownProfile> {
    let base = std::mem::take(&mut file.provider);
    let Some(name) = name else {
        return Ok(base);
    };
    match file.providers.remove(name) {
        Some(profile) => Ok(base.overlay(profile)),
        None => Err(UnknownProfile {
            name: name.to_string(),
            known: file.providers.keys().cloned().collect(),
        }),
    }
}
