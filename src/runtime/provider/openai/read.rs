//! Reading the answer: an SSE stream folded as it arrives, or a whole JSON completion.

use eventsource_stream::Eventsource;
use futures_util::StreamExt;
use serde_json::Value;

use super::super::sse::{Folder, StreamEvent};
use super::super::{ErrorKind, ProviderError, quirks};
use super::{NAME, OpenAi, Waited, root_cause, secs, wait};
use crate::runtime::cancel::CancelFlag;

impl OpenAi {
    /// Reads a whole (non-streamed) completion: a server that ignores `stream: true`, or the
    /// request sent without streaming.
    pub(super) async fn read_whole(
        &self,
        resp: reqwest::Response,
        folder: &mut Folder,
        cancel: &CancelFlag,
        on_event: &mut dyn FnMut(StreamEvent),
    ) -> Result<(), ProviderError> {
        folder.set_origin(NAME, &self.settings.model);
        let url = self.settings.url();
        let text = match wait(resp.text(), cancel, self.settings.idle_timeout).await {
            Waited::Done(Ok(t)) => t,
            Waited::Cancelled => {
                return Err(self.err(ErrorKind::Cancelled, "cancelled".into(), None));
            }
            Waited::Done(Err(_)) | Waited::TimedOut => {
                return Err(self.err(
                    ErrorKind::StreamCut,
                    format!("the answer from {url} broke off"),
                    None,
                ));
            }
        };
        let events = folder.feed(&text).map_err(|e| {
            self.err(
                ErrorKind::Server,
                format!("{} reported: {}", self.settings.base_url, e.0),
                None,
            )
        })?;
        events.into_iter().for_each(on_event);
        Ok(())
    }

    /// Reads the event stream into `folder` until `[DONE]` or the end; a cut, a stall, a
    /// cancel or an error chunk is an error carrying what arrived.
    pub(super) async fn read_stream(
        &self,
        resp: reqwest::Response,
        folder: &mut Folder,
        body: &Value,
        cancel: &CancelFlag,
        on_event: &mut dyn FnMut(StreamEvent),
    ) -> Result<(), ProviderError> {
        let s = &self.settings;
        folder.set_origin(NAME, &s.model);
        let url = s.url();
        let partial = |f: &mut Folder| Some(Box::new(self.complete(std::mem::take(f), true, body)));
        let mut events = resp.bytes_stream().eventsource();
        loop {
            let next = match wait(events.next(), cancel, s.idle_timeout).await {
                Waited::Done(n) => n,
                Waited::Cancelled => {
                    return Err(self.err(
                        ErrorKind::Cancelled,
                        "cancelled".into(),
                        partial(folder),
                    ));
                }
                Waited::TimedOut => {
                    return Err(self.err(
                        ErrorKind::Timeout,
                        format!(
                            "{url} sent nothing for {}; the reply so far is kept",
                            secs(s.idle_timeout)
                        ),
                        partial(folder),
                    ));
                }
            };
            match next {
                // A clean close before `[DONE]` or a `finish_reason` (what proxies and load
                // balancers do on a timeout) is a cut, not an answer.
                None if !folder.is_done() && !folder.has_finished() && folder.has_content() => {
                    let n = folder.text_chars();
                    return Err(self.err(
                        ErrorKind::StreamCut,
                        format!(
                            "the reply was cut off after {n} characters: {} closed the connection before the reply finished; what arrived is kept, and continuing will ask again",
                            s.base_url
                        ),
                        partial(folder),
                    ));
                }
                None => return Ok(()),
                Some(Ok(ev)) => match folder.feed(&ev.data) {
                    Ok(out) => {
                        out.into_iter().for_each(&mut *on_event);
                        if folder.is_done() {
                            return Ok(());
                        }
                    }
                    Err(e) => {
                        let msg = crate::sanitize::line(&e.0).into_owned();
                        let kind = if quirks::overflow(&msg).is_some() {
                            ErrorKind::ContextOverflow
                        } else {
                            ErrorKind::Server
                        };
                        return Err(self.err(
                            kind,
                            format!("{} reported an error mid-reply: {msg}", s.base_url),
                            partial(folder),
                        ));
                    }
                },
                // A connection that breaks before anything arrived is what llama-cpp-python
                // does when its stream fails at once: the same as an empty stream.
                Some(Err(_)) if !folder.has_content() => return Ok(()),
                Some(Err(e)) => {
                    return Err(self.err(
                        ErrorKind::StreamCut,
                        format!(
                            "the reply was cut off after {} characters: the connection to {} broke ({}); what arrived is kept, and continuing will ask again",
                            folder.text_chars(),
                            s.base_url,
                            root_cause(&e)
                        ),
                        partial(folder),
                    ));
                }
            }
        }
    }

    /// The error for a 200 that held nothing a model says, even when asked again unstreamed.
    pub(super) fn no_completion(&self) -> ProviderError {
        let url = self.settings.url();
        self.err(
            ErrorKind::Protocol,
            format!(
                "{url} answered but sent no completion, streamed or not; is base_url an OpenAI-compatible endpoint ending in /v1?"
            ),
            None,
        )
    }
}
