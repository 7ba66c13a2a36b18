//! Reading the answer: an SSE stream folded as it arrives, or a whole JSON completion.

use super::client::{NAME, OpenAi};
use crate::runtime::cancel::CancelFlag;
use crate::runtime::provider::error::{ErrorKind, ProviderError};
use crate::runtime::provider::quirks;
use crate::runtime::provider::sse::{Folder, StreamEvent};
use crate::runtime::provider::sse_decode::{NotUtf8, SseDecoder};
use crate::runtime::provider::transport::{Waited, root_cause, secs, wait};
use serde_json::Value;

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
    /// cancel or an error chunk is an error carrying what arrived. The events of one network
    /// read reach `on_event` together, consecutive text joined ([`push_merged`]).
    ///
    /// [`push_merged`]: crate::runtime::provider::sse::push_merged
    pub(super) async fn read_stream(
        &self,
        mut resp: reqwest::Response,
        folder: &mut Folder,
        body: &Value,
        cancel: &CancelFlag,
        on_event: &mut dyn FnMut(StreamEvent),
    ) -> Result<(), ProviderError> {
        let s = &self.settings;
        folder.set_origin(NAME, &s.model);
        let url = s.url();
        let partial = |f: &mut Folder| Some(Box::new(self.complete(std::mem::take(f), true, body)));
        let mut decoder = SseDecoder::new();
        let mut read = Vec::new();
        loop {
            // Every event the bytes so far complete.
            let fed = loop {
                let ev = match decoder.next_event() {
                    Ok(Some(ev)) => ev,
                    Ok(None) => break Ok(false),
                    Err(e) => break Err(Broke::NotUtf8(e)),
                };
                match folder.feed_into(ev.data, &mut read) {
                    Ok(()) if folder.is_done() => break Ok(true),
                    Ok(()) => {}
                    Err(e) => break Err(Broke::Chunk(e.0)),
                }
            };
            read.drain(..).for_each(&mut *on_event);
            let broke = match fed {
                Ok(true) => return Ok(()),
                Ok(false) => None,
                Err(b) => Some(b),
            };
            let next = match broke {
                Some(b) => Err(b),
                None => match wait(resp.chunk(), cancel, s.idle_timeout).await {
                    Waited::Done(Ok(chunk)) => Ok(chunk),
                    Waited::Done(Err(e)) => Err(Broke::Transport(e)),
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
                },
            };
            match next {
                Ok(Some(bytes)) => decoder.push(&bytes),
                // A clean close before `[DONE]` or a `finish_reason` (what proxies and load
                // balancers do on a timeout) is a cut, not an answer.
                Ok(None) if !folder.is_done() && !folder.has_finished() && folder.has_content() => {
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
                Ok(None) => return Ok(()),
                Err(Broke::Chunk(e)) => {
                    let msg = crate::sanitize::line(&e).into_owned();
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
                // A connection that breaks before anything arrived is what llama-cpp-python
                // does when its stream fails at once: the same as an empty stream.
                Err(_) if !folder.has_content() => return Ok(()),
                Err(b) => {
                    let why = match &b {
                        Broke::Transport(e) => root_cause(e),
                        Broke::NotUtf8(e) => e.to_string(),
                        Broke::Chunk(m) => m.clone(),
                    };
                    return Err(self.err(
                        ErrorKind::StreamCut,
                        format!(
                            "the reply was cut off after {} characters: the connection to {} broke ({why}); what arrived is kept, and continuing will ask again",
                            folder.text_chars(),
                            s.base_url,
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

/// Why reading a stream stopped before its end.
enum Broke {
    /// The connection failed.
    Transport(reqwest::Error),
    /// The bytes are not an event stream's text.
    NotUtf8(NotUtf8),
    /// The server sent an error chunk (its message).
    Chunk(String),
}
