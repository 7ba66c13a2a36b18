//! The wire API a provider speaks, and the vendors' default URLs and key variables.

/// The wire API a provider speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Api {
    /// OpenAI Chat Completions (`/chat/completions`): OpenAI, Ollama, llama.cpp, vLLM, most
    /// gateways.
    #[default]
    Chat,
    /// OpenAI Responses (`/responses`): OpenAI's reasoning models with reasoning kept.
    Responses,
    /// Anthropic Messages (`/messages`): Claude with thinking and prompt caching.
    Anthropic,
}

impl Api {
    /// Parses `chat`, `responses`, `anthropic`.
    pub(crate) fn parse(s: &str) -> Option<Api> {
        match s.trim() {
            "chat" => Some(Api::Chat),
            "responses" => Some(Api::Responses),
            "anthropic" => Some(Api::Anthropic),
            _ => None,
        }
    }

    /// The name as written in config and flags.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Api::Chat => "chat",
            Api::Responses => "responses",
            Api::Anthropic => "anthropic",
        }
    }

    /// A model name with an api in front (`anthropic:claude-sonnet-4-5`, as `/model` and
    /// `--model` accept it) split in two; a name without one (or with another prefix, such
    /// as Ollama's `qwen2.5-coder:7b`) is left whole.
    pub(crate) fn split_model(name: &str) -> (Option<Api>, &str) {
        match name.split_once(':') {
            Some((api, model)) if !model.trim().is_empty() => match Api::parse(api) {
                Some(a) => (Some(a), model.trim()),
                None => (None, name),
            },
            _ => (None, name),
        }
    }

    /// The base URL used when a key is set and none is configured.
    pub(super) fn default_url(self) -> &'static str {
        match self {
            Api::Chat | Api::Responses => OPENAI_URL,
            Api::Anthropic => ANTHROPIC_URL,
        }
    }

    /// The vendor's own key variable, read when no other key is configured.
    pub(super) fn key_variable(self) -> &'static str {
        match self {
            Api::Chat | Api::Responses => "OPENAI_API_KEY",
            Api::Anthropic => "ANTHROPIC_API_KEY",
        }
    }
}

const OPENAI_URL: &str = "https://api.openai.com/v1";
const ANTHROPIC_URL: &str = "https://api.anthropic.com/v1";
