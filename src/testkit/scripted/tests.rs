//! The server end to end over raw sockets, and the stream bytes.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};

use super::*;

fn raw_post(addr: SocketAddr, body: &str) -> String {
    let mut c = TcpStream::connect(addr).unwrap();
    write!(
        c,
        "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer sk-test\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut out = String::new();
    let _ = c.read_to_string(&mut out);
    out
}

#[test]
fn records_requests_and_serves_script_in_order() {
    let srv = ScriptedServer::start(vec![Reply::text("hello"), Reply::rate_limited(2)]).unwrap();
    let a = raw_post(srv.addr(), r#"{"model":"m"}"#);
    assert!(a.starts_with("HTTP/1.1 200"), "{a}");
    assert!(a.contains("data: [DONE]"));
    assert!(a.contains(r#""content":"he"#) || a.contains("hel"));
    let b = raw_post(srv.addr(), "{}");
    assert!(b.starts_with("HTTP/1.1 429"), "{b}");
    assert!(b.contains("Retry-After: 2"));
    let c = raw_post(srv.addr(), "{}");
    assert!(c.starts_with("HTTP/1.1 500"), "{c}");
    let reqs = srv.requests();
    assert_eq!(reqs.len(), 3);
    assert_eq!(reqs[0].json()["model"], "m");
    assert_eq!(reqs[0].header("authorization"), Some("Bearer sk-test"));
}

#[test]
fn cut_connection_leaves_chunked_body_unterminated() {
    let srv = ScriptedServer::start(vec![Stream::text("abcdef").cut_after(2).reply()]).unwrap();
    let a = raw_post(srv.addr(), "{}");
    assert!(!a.ends_with("0\r\n\r\n"), "{a}");
    assert!(!a.contains("[DONE]"));
}

#[test]
fn crlf_and_keep_alives_are_written() {
    let s = Stream::text("hi").keep_alives_between().crlf();
    let body = String::from_utf8(s.body_bytes()).unwrap();
    assert!(body.contains(": keep-alive\r\n\r\n"));
    assert!(body.ends_with("data: [DONE]\r\n\r\n"));
}
