//! `web_fetch` through `neocode run`: a page on a loopback server the user allowed comes back
//! as Markdown, asked before it runs; loopback the user did not allow, and a redirect from an
//! allowed host to one that is not, are refused before any connection to them.

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};

use crate::support::agent::{Env, tool_result_in};
use crate::support::{last_tool_text, stderr, stdout};
use neocode::testkit::scripted::{Reply, ScriptedServer};

const KEY: &str = "sk-web-fetch-test-31c9";

/// A web server on 127.0.0.1 answering each path with a canned response; it records the
/// paths asked.
struct Site {
    port: u16,
    asked: Arc<Mutex<Vec<String>>>,
}

impl Site {
    fn start(pages: Vec<(&'static str, String)>) -> Site {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let asked = Arc::new(Mutex::new(Vec::new()));
        let seen = asked.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut s) = stream else { continue };
                let mut line = String::new();
                let mut r = BufReader::new(s.try_clone().unwrap());
                if r.read_line(&mut line).is_err() {
                    continue;
                }
                let path = line.split_whitespace().nth(1).unwrap_or("/").to_string();
                loop {
                    let mut h = String::new();
                    if r.read_line(&mut h).unwrap_or(0) == 0 || h == "\r\n" {
                        break;
                    }
                }
                seen.lock().unwrap().push(path.clone());
                let resp = pages
                    .iter()
                    .find(|(p, _)| *p == path)
                    .map_or_else(not_found, |(_, r)| r.replace("{PORT}", &port.to_string()));
                let _ = s.write_all(resp.as_bytes());
            }
        });
        Site { port, asked }
    }

    fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    fn asked(&self) -> Vec<String> {
        self.asked.lock().unwrap().clone()
    }
}

fn not_found() -> String {
    "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".into()
}

fn page(content_type: &str, body: &str) -> String {
    format!(
        "HTTP/1.1 200 OK\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
}

fn redirect(to: &str) -> String {
    format!(
        "HTTP/1.1 302 Found\r\nLocation: {to}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
    )
}

fn fetch_call(url: &str) -> Reply {
    Reply::tool_calls(&[("f1", "web_fetch", &format!(r#"{{"url":"{url}"}}"#))])
}

/// The text of the tool result the model received in its second request.
fn result_seen(srv: &ScriptedServer) -> String {
    tool_result_in(srv, 1)
}

const DOC: &str = r"<!doctype html><html><head><title>Guide</title>
<script>steal()</script></head><body><h1>Build</h1><p>Run <code>make</code>.</p></body></html>";

#[test]
fn an_allowed_page_comes_back_as_markdown_once_approved() {
    let site = Site::start(vec![("/guide", page("text/html; charset=utf-8", DOC))]);
    let env = Env::new(KEY, "[web_fetch]\nallow_hosts = [\"127.0.0.1\"]\n");
    let srv = ScriptedServer::start(vec![
        fetch_call(&site.url("/guide")),
        Reply::text("I could not fetch it."),
        fetch_call(&site.url("/guide")),
        Reply::text("It says run make."),
    ])
    .unwrap();
    // Without a terminal and under `ask`, the fetch is refused and the flag named.
    let o = env
        .cmd(Some(&srv), &["run", "read the guide"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("--approve never-ask"), "{}", stderr(&o));
    assert!(site.asked().is_empty(), "nothing fetched before approval");
    let o = env
        .cmd(
            Some(&srv),
            &["run", "--continue", "--approve", "never-ask", "again"],
        )
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o), "It says run make.\n");
    assert_eq!(site.asked(), vec!["/guide"]);
    let seen = srv.requests()[3].json();
    let text = last_tool_text(&seen);
    assert!(text.contains("Title: Guide"), "{text}");
    assert!(text.contains("# Build"), "{text}");
    assert!(text.contains("Run `make`."), "{text}");
    assert!(!text.contains("steal"), "{text}");
}

/// Runs one prompt with `--approve never-ask` whose model fetches `url` once; the tool
/// result the model then read.
fn fetched_under_never_ask(env: &Env, url: &str) -> String {
    let srv = ScriptedServer::start(vec![fetch_call(url), Reply::text("Done.")]).unwrap();
    let o = env
        .cmd(Some(&srv), &["run", "--approve", "never-ask", "fetch"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    result_seen(&srv)
}

#[test]
fn loopback_is_refused_unless_the_user_named_the_host() {
    let site = Site::start(vec![("/", page("text/plain", "secret"))]);
    let env = Env::new(KEY, "");
    let text = fetched_under_never_ask(&env, &site.url("/"));
    assert!(text.contains("not a public address"), "{text}");
    assert!(text.contains("allow_hosts"), "{text}");
    assert!(site.asked().is_empty(), "no connection was made");
}

#[test]
fn a_redirect_to_a_host_not_allowed_is_checked_again_and_refused() {
    // The allowed host redirects to `localhost` on the same port: same server, other name.
    let site = Site::start(vec![
        ("/start", redirect("http://localhost:{PORT}/inner")),
        ("/inner", page("text/plain", "inner secret")),
    ]);
    let env = Env::new(KEY, "[web_fetch]\nallow_hosts = [\"127.0.0.1\"]\n");
    let text = fetched_under_never_ask(&env, &site.url("/start"));
    assert!(text.contains("`localhost`"), "{text}");
    assert!(text.contains("not a public address"), "{text}");
    assert_eq!(
        site.asked(),
        vec!["/start"],
        "the redirect was not followed"
    );
}

#[test]
fn a_deny_rule_on_a_domain_stops_the_fetch_and_other_schemes_are_refused() {
    let env = Env::new(
        KEY,
        "[permissions]\ndeny = [\"web_fetch(domain:example.com)\"]\n",
    );
    let srv = ScriptedServer::start(vec![
        Reply::tool_calls(&[
            ("f1", "web_fetch", r#"{"url":"https://docs.example.com/x"}"#),
            ("f2", "web_fetch", r#"{"url":"file:///etc/passwd"}"#),
        ]),
        Reply::text("Both refused."),
    ])
    .unwrap();
    let o = env
        .cmd(Some(&srv), &["run", "--approve", "never-ask", "fetch"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let second = srv.requests()[1].json();
    let tools: Vec<String> = second["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap().to_string())
        .collect();
    assert!(
        tools[0].contains("web_fetch(domain:example.com)"),
        "{tools:?}"
    );
    assert!(tools[1].contains("only http and https"), "{tools:?}");
}
