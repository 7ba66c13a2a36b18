//! [`Provider`] for [`OpenAi`]: a streamed call, asked again unstreamed when the server
//! cannot stream, and the context window the server tells.

use super::client::{NAME, OpenAi};
use super::send::Answer;
use crate::runtime::cancel::CancelFlag;
use crate::runtime::provider::contract::Provider;
use crate::runtime::provider::error::ProviderError;
use crate::runtime::provider::quirks;
use crate::runtime::provider::request::ChatRequest;
use crate::runtime::provider::sse::{Completion, StreamEvent};

impl Provider for OpenAi {
    fn name(&self) -> &str {
        NAME
    }

    fn model(&self) -> &str {
        &self.settings.model
    }

    fn stream(
        &mut self,
        req: &ChatRequest,
        cancel: &CancelFlag,
        on_event: &mut dyn FnMut(StreamEvent),
    ) -> Result<Completion, ProviderError> {
        let base = self.settings.base_url.clone();
        let tools = !req.tools.is_empty();
        let streamed = !(tools && quirks::cannot_stream_tools(&base));
        let body = self.body(req, streamed);
        let this = &*self;
        let c = match this.rt.block_on(this.call(&body, cancel, on_event))? {
            Answer::Done(c) => c,
            Answer::Unstreamed(why) if streamed => {
                // Asked again without streaming: an empty stream is what llama-cpp-python
                // sends both for a prompt too long and for tool calls it cannot stream; the
                // plain answer says which.
                let plain = self.body(req, false);
                let mut held = Vec::new();
                let again = this
                    .rt
                    .block_on(this.call(&plain, cancel, &mut |e| held.push(e)))?;
                let Answer::Done(c) = again else {
                    return Err(this.no_completion());
                };
                let message = if tools && quirks::remember_cannot_stream_tools(&base) {
                    format!(
                        "{base} {why} for a request with tools; it answered when asked without streaming, so requests with tools are sent unstreamed from now on (replies arrive whole)"
                    )
                } else {
                    format!("{base} {why}; it answered when asked without streaming")
                };
                on_event(StreamEvent::NotStreamed(
                    crate::sanitize::line(&message).into_owned(),
                ));
                held.into_iter().for_each(&mut *on_event);
                c
            }
            Answer::Unstreamed(_) => return Err(this.no_completion()),
        };
        if c.usage_estimated && quirks::first_missing_usage(&base) {
            on_event(StreamEvent::UsageEstimated(format!(
                "{base} reports no token usage; neocode estimates the counts from the text (marked estimated)"
            )));
        }
        Ok(c)
    }

    fn context_window(&mut self) -> Option<u64> {
        let base = self.settings.base_url.clone();
        if let Some(w) = quirks::known_window(&base) {
            return w;
        }
        // OpenAI's own API says nothing of windows: no requests made for it.
        let w = if base.contains("api.openai.com") {
            None
        } else {
            self.rt.block_on(self.probe_window())
        };
        quirks::remember_window(&base, w);
        w
    }
}
