//! The editor's end of the connection: JSON-RPC lines on stdin and stdout, where an editor
//! that has gone away (its end of stdout closed) is the end of the conversation, not a
//! failure: what is still written to it goes nowhere, and the running turns are cancelled
//! and stored when stdin ends, as they are when the editor closes stdin first.

use std::io::{ErrorKind, Write};

use agent_client_protocol::Lines;
use futures_util::{Sink, Stream};
use tokio::io::AsyncBufReadExt;

/// The stdin/stdout transport `neocode acp` serves on.
pub(super) fn transport() -> Lines<
    impl Sink<String, Error = std::io::Error> + Send + 'static,
    impl Stream<Item = std::io::Result<String>> + Send + 'static,
> {
    let incoming = futures_util::stream::unfold(
        tokio::io::BufReader::new(tokio::io::stdin()).lines(),
        async |mut lines| match lines.next_line().await {
            Ok(Some(line)) => Some((Ok(line), lines)),
            Ok(None) => None,
            Err(e) => Some((Err(e), lines)),
        },
    );
    let outgoing = futures_util::sink::unfold(std::io::stdout(), async |mut out, line: String| {
        // A full pipe blocks this worker, not the others.
        tokio::task::block_in_place(|| write_line(&mut out, &line))?;
        Ok::<_, std::io::Error>(out)
    });
    Lines::new(Box::pin(outgoing), Box::pin(incoming))
}

/// Writes one line; a closed pipe (the editor is gone) swallows it.
fn write_line(out: &mut impl Write, line: &str) -> std::io::Result<()> {
    let written = out
        .write_all(line.as_bytes())
        .and_then(|()| out.write_all(b"\n"))
        .and_then(|()| out.flush());
    match written {
        Err(e) if e.kind() == ErrorKind::BrokenPipe => Ok(()),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A writer every write of which fails with its error kind.
    struct Failing(ErrorKind);

    impl Write for Failing {
        fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
            Err(self.0.into())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_line_to_an_editor_that_is_gone_is_dropped_and_other_failures_are_not() {
        assert!(write_line(&mut Failing(ErrorKind::BrokenPipe), "{}").is_ok());
        assert_eq!(
            write_line(&mut Failing(ErrorKind::StorageFull), "{}")
                .unwrap_err()
                .kind(),
            ErrorKind::StorageFull
        );
        let mut v = Vec::new();
        write_line(&mut v, r#"{"a":1}"#).unwrap();
        assert_eq!(v, b"{\"a\":1}\n");
    }
}
