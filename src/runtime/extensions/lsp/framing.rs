//! JSON-RPC framing of the Language Server Protocol over stdio: each message is a
//! `Content-Length: N` header block, a blank line, then N bytes of JSON.

use std::io::BufRead;

use super::error::FrameError;

/// Largest message body accepted (a server that announces more is broken or hostile).
pub(crate) const MAX_BODY: usize = 64 * 1024 * 1024;

/// `body` with its header, ready to write to the server's standard input.
pub(crate) fn encode(body: &[u8]) -> Vec<u8> {
    let mut out = format!("Content-Length: {}\r\n\r\n", body.len()).into_bytes();
    out.extend_from_slice(body);
    out
}

/// The next message body from `r`; `Ok(None)` at a clean end of stream (between messages).
/// Headers other than `Content-Length` (`Content-Type`) are skipped.
pub(crate) fn read_message(r: &mut impl BufRead) -> Result<Option<Vec<u8>>, FrameError> {
    let mut length: Option<usize> = None;
    let mut line = String::new();
    let mut first = true;
    loop {
        line.clear();
        let n = r.read_line(&mut line).map_err(FrameError::Io)?;
        if n == 0 {
            return if first {
                Ok(None)
            } else {
                Err(FrameError::Truncated)
            };
        }
        first = false;
        let l = line.trim_end_matches(['\r', '\n']);
        if l.is_empty() {
            break;
        }
        let Some((name, value)) = l.split_once(':') else {
            return Err(FrameError::BadHeader(l.chars().take(80).collect()));
        };
        if name.trim().eq_ignore_ascii_case("content-length") {
            let v = value.trim();
            length = Some(
                v.parse()
                    .map_err(|_| FrameError::BadHeader(l.chars().take(80).collect()))?,
            );
        }
    }
    let len = length.ok_or(FrameError::NoLength)?;
    if len > MAX_BODY {
        return Err(FrameError::TooLarge(len));
    }
    let mut body = vec![0; len];
    std::io::Read::read_exact(r, &mut body).map_err(|_| FrameError::Truncated)?;
    Ok(Some(body))
}

#[cfg(test)]
mod tests {
    use super::{encode, read_message};
    use crate::runtime::extensions::lsp::error::FrameError;

    /// What pyright-langserver 1.1.414 wrote on its standard output after an `initialize`
    /// request (captured from the real server): two log messages, then the answer.
    const CAPTURED: &[u8] = include_bytes!("testdata/pyright-initialize.bin");

    #[test]
    fn captured_server_output_splits_into_its_messages() {
        // A small buffer, so headers and bodies straddle its refills.
        let mut r = std::io::BufReader::with_capacity(7, CAPTURED);
        let mut messages = Vec::new();
        while let Some(body) = read_message(&mut r).unwrap() {
            messages.push(serde_json::from_slice::<serde_json::Value>(&body).unwrap());
        }
        assert_eq!(messages.len(), 3);
        assert_eq!(messages[0]["method"], "window/logMessage");
        assert_eq!(
            messages[0]["params"]["message"],
            "Pyright language server 1.1.414 starting"
        );
        assert_eq!(messages[2]["id"], 1);
        assert_eq!(messages[2]["result"]["capabilities"]["textDocumentSync"], 2);
    }

    #[test]
    fn encoding_round_trips_multibyte_bodies() {
        let body = "{\"text\":\"é — ü\"}".as_bytes();
        let framed = encode(body);
        assert!(framed.starts_with(format!("Content-Length: {}\r\n\r\n", body.len()).as_bytes()));
        let mut r = std::io::BufReader::new(framed.as_slice());
        assert_eq!(read_message(&mut r).unwrap().unwrap(), body);
    }

    #[test]
    fn a_stream_cut_mid_message_or_without_length_is_an_error() {
        let mut r = std::io::BufReader::new(&b"Content-Length: 10\r\n\r\n{\"a\""[..]);
        assert!(matches!(read_message(&mut r), Err(FrameError::Truncated)));
        let mut r = std::io::BufReader::new(&b"Content-Type: x\r\n\r\n{}"[..]);
        assert!(matches!(read_message(&mut r), Err(FrameError::NoLength)));
        let mut r = std::io::BufReader::new(&b"garbage\r\n\r\n"[..]);
        assert!(matches!(
            read_message(&mut r),
            Err(FrameError::BadHeader(_))
        ));
    }
}
