//! Warnings about the server: a prompt large for its window, a reply cut at its output limit.

use super::Turn;
use crate::runtime::agent::events::{FinishReason, TurnEvent, WarningCode};
use crate::runtime::provider::Completion;

impl Turn {
    /// The turn's end for a reply the output limit cut (`finish_reason: length`): stored
    /// marked incomplete, the user told, the session paused (continuing asks again).
    pub(super) fn reply_cut(&self, c: &Completion) -> FinishReason {
        let est = if c.usage_estimated { ", estimated" } else { "" };
        let calls = if c.tool_calls.is_empty() {
            String::new()
        } else {
            format!("; its {} tool call(s) were not run", c.tool_calls.len())
        };
        self.emit(TurnEvent::Warning {
            code: WarningCode::ReplyCut,
            message: format!(
                "the reply was cut at the model's output limit after {} tokens{est} (finish_reason: length){calls}; it is kept marked incomplete, and continuing asks again (raise max_tokens in [provider] of config.toml, or the server's limit)",
                c.usage.output_tokens
            ),
        });
        FinishReason::LimitReached(
            "the reply hit the model's output token limit (finish_reason: length)".into(),
        )
    }

    /// Warns (once per session and process) when the system prompt and the tool definitions
    /// alone take more than a third of the context window: a small local window has little
    /// left, and a server that cuts prompts from the front drops the system prompt first.
    pub(super) fn warn_if_prompt_large(&self, req: &crate::runtime::provider::ChatRequest) {
        static WARNED: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());
        use crate::runtime::provider::quirks::estimate_tokens;
        let tools: u64 = req
            .tools
            .iter()
            .map(crate::runtime::provider::quirks::tool_tokens)
            .sum();
        let system = estimate_tokens(&req.system);
        let window = self.ctx.settings.context_window;
        if (system + tools) * 3 <= window {
            return;
        }
        {
            let mut warned = WARNED
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            if warned.contains(&self.ctx.session_id) {
                return;
            }
            warned.push(self.ctx.session_id.clone());
        }
        self.emit(TurnEvent::Warning {
            code: WarningCode::PromptLarge,
            message: format!(
                "the system prompt (~{system} tokens) and {} tool definitions (~{tools} tokens) take {}% of the {window}-token context window before the conversation; check context_window in config.toml matches the server (a server that cuts long prompts from the front drops the system prompt)",
                req.tools.len(),
                (system + tools) * 100 / window.max(1)
            ),
        });
    }
}
