//! The small loopback HTTP servers of the MCP tests (`tests/mcp.rs` and its `mcp_oauth/`): one
//! request per connection, read into a [`Req`], answered by a handler with a whole response
//! ([`reply`]); [`mcp_reply`] answers MCP's JSON-RPC with one read-only tool, `whoami`.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};

/// One request as the loopback servers read it.
pub(crate) struct Req {
    pub(crate) method: String,
    pub(crate) path: String,
    pub(crate) query: HashMap<String, String>,
    /// Header names lowercased, values trimmed.
    pub(crate) headers: HashMap<String, String>,
    pub(crate) body: Vec<u8>,
}

impl Req {
    /// The value of header `name` (lowercase), empty when absent.
    pub(crate) fn header(&self, name: &str) -> &str {
        self.headers.get(name).map_or("", String::as_str)
    }
}

/// The pairs of a query string or a form body.
pub(crate) fn pairs(s: &str) -> HashMap<String, String> {
    let u = reqwest::Url::parse(&format!("http://x/?{s}")).unwrap();
    u.query_pairs()
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect()
}

fn read_req(stream: &std::net::TcpStream) -> Option<Req> {
    let mut rd = BufReader::new(stream.try_clone().ok()?);
    let mut first = String::new();
    rd.read_line(&mut first).ok()?;
    let mut parts = first.split(' ');
    let method = parts.next()?.to_string();
    let target = parts.next()?.to_string();
    let mut headers = HashMap::new();
    loop {
        let mut line = String::new();
        if rd.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
            break;
        }
        if let Some((name, value)) = line.split_once(':') {
            headers.insert(name.trim().to_ascii_lowercase(), value.trim().to_string());
        }
    }
    let len = headers
        .get("content-length")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let mut body = vec![0; len];
    rd.read_exact(&mut body).ok()?;
    let (path, q) = target.split_once('?').unwrap_or((&target, ""));
    Some(Req {
        method,
        path: path.to_string(),
        query: pairs(q),
        headers,
        body,
    })
}

/// Serves 127.0.0.1 on a free port in a thread, each request answered by `handle` (given the
/// port too); the port.
pub(crate) fn serve(mut handle: impl FnMut(u16, &Req) -> String + Send + 'static) -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let Some(req) = read_req(&stream) else {
                continue;
            };
            let out = handle(port, &req);
            let _ = stream.write_all(out.as_bytes());
        }
    });
    port
}

/// A whole JSON response: `status` line, `extra` header lines (each ending in CRLF), `body`.
pub(crate) fn reply(status: &str, extra: &str, body: &str) -> String {
    format!(
        "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n{extra}\r\n{body}",
        body.len()
    )
}

/// The answer of an MCP server named `server` to the JSON-RPC message `body`: one read-only
/// tool, `whoami`, whose calls answer `said`; a notification is accepted with no body.
pub(crate) fn mcp_reply(body: &[u8], server: &str, said: &str) -> String {
    let req: serde_json::Value = serde_json::from_slice(body).unwrap_or_default();
    let id = req["id"].clone();
    let result = match req["method"].as_str().unwrap_or("") {
        "initialize" => serde_json::json!({
            "protocolVersion": req["params"]["protocolVersion"],
            "capabilities": {"tools": {}},
            "serverInfo": {"name": server, "version": "1"}
        }),
        "tools/list" => serde_json::json!({"tools": [{
            "name": "whoami", "description": "Says who is calling",
            "inputSchema": {"type": "object"},
            "annotations": {"readOnlyHint": true}
        }]}),
        "tools/call" => serde_json::json!({
            "content": [{"type": "text", "text": said}]
        }),
        _ => serde_json::Value::Null,
    };
    if id.is_null() {
        reply("202 Accepted", "", "")
    } else {
        let msg = serde_json::json!({"jsonrpc": "2.0", "id": id, "result": result});
        reply("200 OK", "Mcp-Session-Id: s1\r\n", &msg.to_string())
    }
}
