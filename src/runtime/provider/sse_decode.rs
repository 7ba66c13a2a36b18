//! Server-sent events decoded from the bytes as they arrive: the `text/event-stream` format
//! of the HTML standard (fields `event` and `data`, comments, CRLF / CR / LF line ends, a
//! leading byte order mark, an event dispatched by an empty line and only when it has data).
//!
//! Every provider reads its stream through this decoder: the bytes of one network read are
//! pushed, then every event they complete is taken, borrowed from the decoder (no copy when an
//! event has one `data` line, which is what every API sends). It replaced a line parser that
//! copied the rest of its buffer after each line, which was most of a streamed delta's cost.

use std::ops::Range;

const BOM: &[u8] = b"\xEF\xBB\xBF";

/// A stream whose bytes are not UTF-8: its lines cannot be read as text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct NotUtf8;

impl std::fmt::Display for NotUtf8 {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the event stream is not UTF-8")
    }
}

impl std::error::Error for NotUtf8 {}

/// One dispatched event: its `event` name (`message` when the stream named none) and its
/// `data` (the event's `data` lines joined by newlines).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct SseEvent<'a> {
    pub event: &'a str,
    pub data: &'a str,
}

/// The decoder: bytes in ([`SseDecoder::push`]), events out ([`SseDecoder::next_event`]).
#[derive(Debug)]
pub(super) struct SseDecoder {
    /// Bytes received; those before `pos` are consumed.
    buf: Vec<u8>,
    pos: usize,
    /// No byte of the stream was looked at yet (a byte order mark may come).
    at_start: bool,
    /// The event being read: its name ...
    event: String,
    /// ... its only `data` line so far, still in `buf` ...
    line: Option<Range<usize>>,
    /// ... or its `data` lines joined, once there are two (or the line had to leave `buf`).
    joined: String,
    has_data: bool,
    /// An event was handed out: its buffers are cleared when the next one is read.
    handed_out: bool,
}

impl Default for SseDecoder {
    fn default() -> SseDecoder {
        SseDecoder::new()
    }
}

impl SseDecoder {
    /// A decoder at the start of a stream.
    pub(super) fn new() -> SseDecoder {
        SseDecoder {
            buf: Vec::new(),
            pos: 0,
            at_start: true,
            event: String::new(),
            line: None,
            joined: String::new(),
            has_data: false,
            handed_out: false,
        }
    }

    /// Appends bytes as they came (split anywhere).
    pub(super) fn push(&mut self, bytes: &[u8]) {
        if bytes.is_empty() {
            return;
        }
        self.reset_if_handed_out();
        if self.pos > 0 {
            // Consumed bytes go; a pending event's data line moves out of the buffer first.
            if let Some(r) = self.line.take() {
                self.joined
                    .push_str(std::str::from_utf8(&self.buf[r]).unwrap_or_default());
            }
            self.buf.drain(..self.pos);
            self.pos = 0;
        }
        self.buf.extend_from_slice(bytes);
        if self.at_start {
            // A byte order mark starts the stream or not at all (it may be split over reads).
            let rest = &self.buf[..];
            if rest.len() < BOM.len() && BOM.starts_with(rest) {
                return;
            }
            self.at_start = false;
            if rest.starts_with(BOM) {
                self.pos = BOM.len();
            }
        }
    }

    fn reset_if_handed_out(&mut self) {
        if self.handed_out {
            self.handed_out = false;
            self.event.clear();
            self.joined.clear();
            self.line = None;
            self.has_data = false;
        }
    }

    /// The next event the pushed bytes complete, if any. A line that is not UTF-8 is an
    /// error: the stream cannot be read further.
    pub(super) fn next_event(&mut self) -> Result<Option<SseEvent<'_>>, NotUtf8> {
        self.reset_if_handed_out();
        if self.at_start {
            return Ok(None);
        }
        loop {
            let rest = &self.buf[self.pos..];
            let Some(end) = memchr::memchr2(b'\n', b'\r', rest) else {
                return Ok(None);
            };
            let eol = if rest[end] == b'\r' {
                match rest.get(end + 1) {
                    Some(b'\n') => 2,
                    Some(_) => 1,
                    // A CR last: the LF of a CRLF may be in the next read.
                    None => return Ok(None),
                }
            } else {
                1
            };
            let line = self.pos..self.pos + end;
            self.pos += end + eol;
            if !line.is_empty() {
                self.field(line)?;
            } else if self.has_data {
                self.handed_out = true;
                let data = match &self.line {
                    Some(r) => std::str::from_utf8(&self.buf[r.clone()]).map_err(|_| NotUtf8)?,
                    None => self.joined.as_str(),
                };
                let event = if self.event.is_empty() {
                    "message"
                } else {
                    self.event.as_str()
                };
                return Ok(Some(SseEvent { event, data }));
            } else {
                // An event without data is not dispatched; its name is forgotten.
                self.event.clear();
            }
        }
    }

    /// One non-empty line: a comment, or a field (`name`, `name:value`, `name: value`).
    fn field(&mut self, line: Range<usize>) -> Result<(), NotUtf8> {
        let text = std::str::from_utf8(&self.buf[line.clone()]).map_err(|_| NotUtf8)?;
        let (name, value) = match text.find(':') {
            Some(0) => return Ok(()),
            Some(c) => {
                let v = if text.as_bytes().get(c + 1) == Some(&b' ') {
                    c + 2
                } else {
                    c + 1
                };
                (&text[..c], line.start + v..line.end)
            }
            None => (text, line.end..line.end),
        };
        match name {
            "data" => {
                if !self.has_data {
                    self.has_data = true;
                    self.line = Some(value);
                } else {
                    if let Some(first) = self.line.take() {
                        let first = std::str::from_utf8(&self.buf[first]).map_err(|_| NotUtf8)?;
                        self.joined.push_str(first);
                    }
                    self.joined.push('\n');
                    let more = std::str::from_utf8(&self.buf[value]).map_err(|_| NotUtf8)?;
                    self.joined.push_str(more);
                }
            }
            "event" => {
                let v = std::str::from_utf8(&self.buf[value]).map_err(|_| NotUtf8)?;
                self.event.clear();
                self.event.push_str(v);
            }
            // `id` and `retry` are for reconnecting browsers; other names are ignored.
            _ => {}
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures_util::StreamExt;
    use proptest::prelude::*;

    /// Every event of `body` pushed in pieces of `split` bytes: (event, data).
    fn decode(body: &[u8], split: usize) -> Result<Vec<(String, String)>, NotUtf8> {
        let mut d = SseDecoder::new();
        let mut out = Vec::new();
        for piece in body.chunks(split.max(1)) {
            d.push(piece);
            while let Some(e) = d.next_event()? {
                out.push((e.event.to_string(), e.data.to_string()));
            }
        }
        Ok(out)
    }

    /// What the `eventsource-stream` crate (the parser this replaced) makes of the same pieces.
    fn reference(body: &[u8], split: usize) -> Result<Vec<(String, String)>, ()> {
        use eventsource_stream::Eventsource;
        let pieces: Vec<Result<Vec<u8>, std::io::Error>> =
            body.chunks(split.max(1)).map(|p| Ok(p.to_vec())).collect();
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        rt.block_on(async move {
            let mut s = futures_util::stream::iter(pieces).eventsource();
            let mut out = Vec::new();
            while let Some(e) = s.next().await {
                let e = e.map_err(|_| ())?;
                out.push((e.event, e.data));
            }
            Ok(out)
        })
    }

    fn ev(event: &str, data: &str) -> (String, String) {
        (event.to_string(), data.to_string())
    }

    #[test]
    fn events_come_whole_in_every_split() {
        let body = "\u{feff}: a comment\r\nevent: delta\r\ndata: {\"a\":1}\r\n\r\n\
                    data:no space\n\ndata: two\ndata:  lines\n\nid: 7\nretry: 10\n\n\
                    event: only a name\n\ndata\n\ndata: ünï ✓\rdata: cr\r\r";
        let want = vec![
            ev("delta", "{\"a\":1}"),
            ev("message", "no space"),
            ev("message", "two\n lines"),
            ev("message", ""),
        ];
        // The last event ends with a lone CR: it waits for a byte that may be its LF.
        for split in 1..body.len() {
            assert_eq!(
                decode(body.as_bytes(), split).unwrap(),
                want,
                "split {split}"
            );
        }
        let mut full = body.as_bytes().to_vec();
        full.push(b'\n');
        let mut d = SseDecoder::new();
        d.push(&full);
        let mut n = 0;
        while let Some(e) = d.next_event().unwrap() {
            n += 1;
            if n == 5 {
                assert_eq!(e.data, "ünï ✓\ncr");
            }
        }
        assert_eq!(n, 5);
    }

    #[test]
    fn an_unfinished_event_and_bytes_that_are_not_utf8() {
        assert_eq!(decode(b"data: half", 3).unwrap(), vec![]);
        assert_eq!(decode(b"data: a\n\ndata: \xff\n\n", 4), Err(NotUtf8));
    }

    proptest! {
        /// The same events as the parser this replaced, for streams made of the lines
        /// providers send and the odd ones the standard allows, split anywhere.
        #[test]
        fn decodes_as_the_old_parser_did(
            lines in proptest::collection::vec(
                prop_oneof![
                    Just(String::new()),
                    "data: [a-z{}\":, ]{0,12}",
                    "data:[ -~]{0,8}",
                    "event: [a-z_.]{1,10}",
                    ": [ -~]{0,6}",
                    "(id|retry|x): ?[0-9]{0,3}",
                    "data: [ä✓é]{1,3}",
                    Just("data".to_string()),
                ],
                0..24,
            ),
            ends in proptest::collection::vec(prop_oneof![Just("\n"), Just("\r\n"), Just("\r")], 24),
            bom in any::<bool>(),
            split in 1usize..40,
        ) {
            let mut body = String::new();
            if bom {
                body.push('\u{feff}');
            }
            for (l, e) in lines.iter().zip(&ends) {
                body.push_str(l);
                body.push_str(e);
            }
            // A final LF: a stream that ends on a lone CR is incomplete for both.
            body.push('\n');
            let ours = decode(body.as_bytes(), split).unwrap();
            match body.strip_prefix('\u{feff}') {
                // The old parser panicked on a leading byte order mark (it sliced the mark's
                // first byte off a three-byte character): the stream without it decodes the same.
                Some(rest) => prop_assert_eq!(ours, decode(rest.as_bytes(), split).unwrap()),
                None => prop_assert_eq!(ours, reference(body.as_bytes(), split).unwrap()),
            }
        }
    }
}
