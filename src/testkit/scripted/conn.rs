//! One connection: the request read and recorded, the GET metadata endpoints (`/props`,
//! `/models`), and the reply written (errors, JSON, streams).

use std::io::Write;
use std::net::TcpStream;
use std::sync::atomic::Ordering;

use serde_json::{Value, json};

use super::llama::{as_llama_sends, llama_like};
use super::replies::{Piece, Reply, Stream};
use super::request::read_request;
use super::shared::{Shared, lock};
use super::strict::refusal;

pub(super) fn serve(mut conn: TcpStream, shared: &Shared) -> std::io::Result<()> {
    let Some(req) = read_request(&conn)? else {
        return Ok(());
    };
    if shared.stop.load(Ordering::SeqCst) {
        return Ok(());
    }
    // Model calls are POSTs (`/chat/completions`, `/responses`, `/messages`); the GETs are
    // the servers' metadata.
    if req.method == "GET" {
        // `/props`, `/v1/models`: what the test set, else 404; not scripted. A model list
        // asked for is recorded once one is set (`/model` asks once per run).
        let props = lock(&shared.props).clone();
        let models = lock(&shared.models).clone();
        let body = match (&props, req.path.as_str()) {
            (Some(p), "/props") => Some(p.to_string()),
            (_, path) if path.ends_with("/models") && !models.is_empty() => {
                let data: Vec<Value> = models
                    .iter()
                    .map(|id| json!({"id": id, "object": "model", "owned_by": "scripted"}))
                    .collect();
                lock(&shared.requests).push(req.clone());
                Some(json!({"object": "list", "data": data}).to_string())
            }
            _ => None,
        };
        let (status, body) = match body {
            Some(b) => ("200 OK", b),
            None => ("404 Not Found", r#"{"detail":"Not Found"}"#.to_string()),
        };
        write!(
            conn,
            "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        )?;
        return conn.flush();
    }
    let strict = *lock(&shared.strict);
    let own = refusal(&req, strict).or_else(|| shared.like.and_then(|like| llama_like(&req, like)));
    let streamed = req.json()["stream"] == json!(true);
    lock(&shared.requests).push(req);
    let reply = match own {
        Some(r) => r,
        None => {
            let next = lock(&shared.script).pop_front();
            let next = next.unwrap_or_else(|| Reply::error(500, "scripted server: no reply left"));
            if shared.like.is_some() {
                as_llama_sends(next, streamed)
            } else {
                next
            }
        }
    };
    match reply {
        Reply::Error {
            status,
            message,
            retry_after,
        } => {
            let body = json!({"error": {"message": message, "type": "scripted", "code": status}})
                .to_string();
            let retry = retry_after
                .map(|s| format!("Retry-After: {s}\r\n"))
                .unwrap_or_default();
            write!(
                conn,
                "HTTP/1.1 {status} {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n{retry}Connection: close\r\n\r\n{body}",
                reason(status),
                body.len()
            )?;
            conn.flush()
        }
        Reply::Json(v) => {
            let body = v.to_string();
            write!(
                conn,
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            )?;
            conn.flush()
        }
        Reply::Stream(s) => serve_stream(conn, &s),
        Reply::Reset { after_head } => {
            if after_head {
                conn.write_all(
                    b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n",
                )?;
                conn.flush()?;
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            reset(conn);
            Ok(())
        }
    }
}

/// Closes `conn` with a TCP RST (`SO_LINGER` 0), not a FIN: the client reads "connection
/// reset by peer".
fn reset(conn: TcpStream) {
    use std::os::fd::AsRawFd;
    let linger = libc::linger {
        l_onoff: 1,
        l_linger: 0,
    };
    // SAFETY: `conn` owns a valid socket for this call; the option value is a `linger` of
    // the size passed.
    unsafe {
        libc::setsockopt(
            conn.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_LINGER,
            (&raw const linger).cast(),
            std::mem::size_of::<libc::linger>() as libc::socklen_t,
        );
    }
    drop(conn);
}

fn serve_stream(mut conn: TcpStream, s: &Stream) -> std::io::Result<()> {
    std::thread::sleep(s.delay_before);
    conn.write_all(
        b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n",
    )?;
    conn.flush()?;
    let mut send = |bytes: &[u8]| -> std::io::Result<()> {
        let size = s.write_size.unwrap_or(bytes.len().max(1));
        for part in bytes.chunks(size) {
            write!(conn, "{:x}\r\n", part.len())?;
            conn.write_all(part)?;
            conn.write_all(b"\r\n")?;
            conn.flush()?;
        }
        Ok(())
    };
    for (i, p) in s.pieces.iter().enumerate() {
        if s.cut_after == Some(i) {
            // Drop the socket with the chunked body unterminated: the client sees a cut.
            return Ok(());
        }
        std::thread::sleep(s.delay_between);
        if let Piece::Pause(d) = p {
            std::thread::sleep(*d);
            continue;
        }
        send(&s.piece_bytes(p))?;
    }
    if s.cut_after.is_some_and(|n| n >= s.pieces.len()) {
        return Ok(());
    }
    if s.done {
        send(&s.piece_bytes(&Piece::Raw(String::new())))?;
    }
    conn.write_all(b"0\r\n\r\n")?;
    conn.flush()
}

fn reason(status: u16) -> &'static str {
    match status {
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        _ => "Status",
    }
}
