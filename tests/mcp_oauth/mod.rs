//! OAuth-protected remote MCP, end to end: an authorization server and an MCP server in one
//! small loopback HTTP server written here (protected-resource and authorization-server
//! metadata, dynamic registration that can be switched off, an authorize endpoint that
//! approves at once and redirects, a token endpoint that verifies PKCE, the redirect URI and
//! the resource, and refresh tokens), driven through `neocode mcp login` (loopback redirect
//! and `--paste`), `run`, `mcp list` and `mcp logout`.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};

use base64::Engine;
use sha2::{Digest, Sha256};

use super::support::agent::Env;
use super::support::mcp_http::{Req, mcp_reply, pairs, reply, serve};
use super::{npm_entry, walk};
use neocode::testkit::scripted::Reply;

/// What the authorization server knows and did.
#[derive(Default)]
pub(crate) struct AsState {
    /// Offer `registration_endpoint`.
    pub(crate) registration: bool,
    /// `expires_in` of every access token.
    pub(crate) lifetime: i64,
    clients: Vec<String>,
    /// code -> (client, challenge, redirect_uri, resource)
    codes: HashMap<String, (String, String, String, String)>,
    access: Vec<String>,
    refresh: Vec<String>,
    /// Grants issued, in order: `authorization_code` / `refresh_token`; and `register`.
    pub(crate) log: Vec<String>,
    /// Authorization headers the MCP endpoint saw.
    pub(crate) seen: Vec<String>,
    next: u32,
}

pub(crate) struct OAuthServer {
    pub(crate) port: u16,
    pub(crate) state: Arc<Mutex<AsState>>,
}

impl OAuthServer {
    pub(crate) fn start(registration: bool, lifetime: i64) -> OAuthServer {
        let state = Arc::new(Mutex::new(AsState {
            registration,
            lifetime,
            ..AsState::default()
        }));
        let st = state.clone();
        let port = serve(move |port, req| handle(&mut st.lock().unwrap(), port, req));
        OAuthServer { port, state }
    }

    pub(crate) fn url(&self) -> String {
        format!("http://127.0.0.1:{}/mcp", self.port)
    }

    /// Forgets every access token (as an authorization server that revoked them).
    pub(crate) fn revoke_access(&self) {
        self.state.lock().unwrap().access.clear();
    }

    pub(crate) fn revoke_all(&self) {
        let mut s = self.state.lock().unwrap();
        s.access.clear();
        s.refresh.clear();
    }

    pub(crate) fn log(&self) -> Vec<String> {
        self.state.lock().unwrap().log.clone()
    }
}

fn issue(s: &mut AsState) -> String {
    s.next += 1;
    let (at, rt) = (format!("at-{}-x9", s.next), format!("rt-{}-y7", s.next));
    s.access.push(at.clone());
    s.refresh.push(rt.clone());
    serde_json::json!({
        "access_token": at, "token_type": "Bearer", "expires_in": s.lifetime,
        "refresh_token": rt,
    })
    .to_string()
}

fn token(s: &mut AsState, mcp: &str, f: &HashMap<String, String>) -> String {
    let bad = |e: &str| reply("400 Bad Request", "", &format!("{{\"error\":\"{e}\"}}"));
    let get = |k: &str| f.get(k).cloned().unwrap_or_default();
    if get("resource") != mcp {
        return bad("invalid_target");
    }
    match get("grant_type").as_str() {
        "authorization_code" => {
            let Some((client, challenge, redirect, _)) = s.codes.remove(&get("code")) else {
                return bad("invalid_grant");
            };
            let computed = base64::engine::general_purpose::URL_SAFE_NO_PAD
                .encode(Sha256::digest(get("code_verifier").as_bytes()));
            if computed != challenge
                || redirect != get("redirect_uri")
                || client != get("client_id")
            {
                return bad("invalid_grant");
            }
            s.log.push("authorization_code".into());
            reply("200 OK", "", &issue(s))
        }
        "refresh_token" => {
            let rt = get("refresh_token");
            if !s.refresh.contains(&rt) {
                return bad("invalid_grant");
            }
            s.refresh.retain(|r| *r != rt);
            s.log.push("refresh_token".into());
            reply("200 OK", "", &issue(s))
        }
        _ => bad("unsupported_grant_type"),
    }
}

fn handle(s: &mut AsState, port: u16, req: &Req) -> String {
    let base = format!("http://127.0.0.1:{port}");
    let mcp = format!("{base}/mcp");
    match (req.method.as_str(), req.path.as_str()) {
        ("GET", "/.well-known/oauth-protected-resource/mcp") => reply(
            "200 OK",
            "",
            &serde_json::json!({
                "resource": mcp, "authorization_servers": [base], "scopes_supported": ["mcp"],
            })
            .to_string(),
        ),
        ("GET", "/.well-known/oauth-authorization-server") => {
            let mut m = serde_json::json!({
                "issuer": base,
                "authorization_endpoint": format!("{base}/authorize"),
                "token_endpoint": format!("{base}/token"),
                "code_challenge_methods_supported": ["S256"],
            });
            if s.registration {
                m["registration_endpoint"] = format!("{base}/register").into();
            }
            reply("200 OK", "", &m.to_string())
        }
        ("POST", "/register") if s.registration => {
            let body: serde_json::Value = serde_json::from_slice(&req.body).unwrap_or_default();
            let id = format!("client-{}", s.clients.len() + 1);
            s.clients.push(id.clone());
            s.log.push("register".into());
            assert_eq!(body["token_endpoint_auth_method"], "none");
            reply(
                "201 Created",
                "",
                &serde_json::json!({"client_id": id}).to_string(),
            )
        }
        ("GET", "/authorize") => {
            let q = &req.query;
            let get = |k: &str| q.get(k).cloned().unwrap_or_default();
            let known = s.clients.contains(&get("client_id")) || get("client_id") == "pre-1";
            if get("response_type") != "code"
                || get("code_challenge_method") != "S256"
                || get("resource") != mcp
                || get("scope") != "mcp"
                || !known
            {
                return reply("400 Bad Request", "", "{\"error\":\"invalid_request\"}");
            }
            let code = format!("code-{}", s.codes.len() + s.log.len());
            s.codes.insert(
                code.clone(),
                (
                    get("client_id"),
                    get("code_challenge"),
                    get("redirect_uri"),
                    get("resource"),
                ),
            );
            let to = format!("{}?code={code}&state={}", get("redirect_uri"), get("state"));
            reply("302 Found", &format!("Location: {to}\r\n"), "")
        }
        ("POST", "/token") => token(s, &mcp, &pairs(&String::from_utf8_lossy(&req.body))),
        ("POST", "/mcp") => {
            let auth = req.header("authorization");
            s.seen.push(auth.to_string());
            let ok = auth
                .strip_prefix("Bearer ")
                .is_some_and(|t| s.access.iter().any(|a| a == t));
            if !ok {
                return reply(
                    "401 Unauthorized",
                    &format!(
                        "WWW-Authenticate: Bearer resource_metadata=\"{base}/.well-known/oauth-protected-resource/mcp\"\r\n"
                    ),
                    "{}",
                );
            }
            mcp_reply(&req.body, "oauth-loopback", "you are logged in")
        }
        _ => reply("404 Not Found", "", "{}"),
    }
}

/// The whole response to a GET of `url` (no redirect followed).
fn get(url: &str) -> String {
    let u = reqwest::Url::parse(url).unwrap();
    let mut s = std::net::TcpStream::connect(("127.0.0.1", u.port().unwrap())).unwrap();
    let path = match u.query() {
        Some(q) => format!("{}?{q}", u.path()),
        None => u.path().to_string(),
    };
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut text = String::new();
    s.read_to_string(&mut text).unwrap();
    text
}

/// GET `url` (no redirect followed): the `Location` it answers with.
fn location_of(url: &str) -> String {
    let text = get(url);
    text.lines()
        .find_map(|l| l.strip_prefix("Location: "))
        .unwrap_or_else(|| panic!("no redirect: {text}"))
        .trim()
        .to_string()
}

/// The body of a GET to `url`.
fn get_body(url: &str) -> String {
    get(url)
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_string())
        .unwrap_or_default()
}

/// The env of a user whose config names `server` as the OAuth MCP server `oa` (`extra` more
/// lines of its table).
fn oa_env(server: &OAuthServer, extra: &str) -> Env {
    Env::new(
        "sk-test",
        &format!(
            "[mcp_servers.oa]\nurl = \"{}\"\noauth = true\n{extra}",
            server.url()
        ),
    )
}

/// `login` (a `neocode mcp login`) started, its output and errors piped: the child, its
/// output, and the first line it prints (the address to open).
fn start_login(
    mut login: Command,
) -> (
    std::process::Child,
    BufReader<std::process::ChildStdout>,
    String,
) {
    let mut child = login
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut url = String::new();
    out.read_line(&mut url).unwrap();
    (child, out, url)
}

/// `neocode mcp login NAME` as over SSH (the address printed, no browser): the test plays the
/// browser, following the authorize redirect to neocode's loopback listener.
fn login_loopback(env: &Env, name: &str) -> (String, String) {
    let mut login = env.cmd(None, &["mcp", "login", name]);
    login.env("SSH_CONNECTION", "10.0.0.1 1 10.0.0.2 22");
    let (child, mut out, url) = start_login(login);
    let back = location_of(url.trim());
    assert!(
        back.starts_with("http://127.0.0.1:") && back.contains("/callback?"),
        "{back}"
    );
    let page = get_body(&back);
    assert!(page.contains("logged in"), "{page}");
    let mut rest = String::new();
    out.read_to_string(&mut rest).unwrap();
    let o = child.wait_with_output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    (url, rest)
}

fn run_who(env: &Env) -> (String, String) {
    let (_, srv) = Env::new("sk-test", "").with_server(vec![
        Reply::tool_calls(&[("c1", "mcp__oa__whoami", "{}")]),
        Reply::text("done"),
    ]);
    let o = env.cmd(Some(&srv), &["run", "who am I"]).output().unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr).to_string();
    assert!(o.status.success(), "{stderr}");
    let tool = srv
        .requests()
        .get(1)
        .map(|r| {
            r.json()["messages"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|m| m["role"] == "tool")
                .map(|m| m["content"].as_str().unwrap_or("").to_string())
                .collect::<Vec<_>>()
                .join("|")
        })
        .unwrap_or_default();
    (tool, stderr)
}

fn list(env: &Env) -> String {
    let o = env.cmd(None, &["mcp", "list"]).output().unwrap();
    String::from_utf8_lossy(&o.stdout).to_string()
}

pub(crate) fn oauth_login_turn_refresh_and_logout() {
    // Tokens live 90 s: more than the minute ahead of expiry at which neocode renews them.
    let server = OAuthServer::start(true, 90);
    let env = oa_env(&server, "");

    // Before a login: `mcp list` says so, a turn names the login once and goes on.
    assert!(
        list(&env).contains("  oauth: not logged in"),
        "{}",
        list(&env)
    );
    let (tool, stderr) = run_who(&env);
    assert!(
        stderr.contains("MCP server `oa`") && stderr.contains("run `neocode mcp login oa`"),
        "{stderr}"
    );
    assert!(!tool.contains("you are logged in"), "{tool}");

    let (url, said) = login_loopback(&env, "oa");
    assert!(
        url.contains("code_challenge_method=S256") && url.contains("resource="),
        "{url}"
    );
    assert!(
        said.contains("logged in to `oa`") && said.contains("client registered"),
        "{said}"
    );
    assert_eq!(server.log(), ["register", "authorization_code"]);
    let file = env.home.join("mcp-tokens").join("oa.json");
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&file).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
    }
    let mut first: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert!(
        list(&env).contains("  oauth: logged in (expires "),
        "{}",
        list(&env)
    );
    assert_eq!(server.log(), ["register", "authorization_code"]);

    // Time passes: the token expires in 10 s. A turn calls the tool; the token is renewed
    // first, once.
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    first["expires_at"] = (now + 10).into();
    std::fs::write(&file, first.to_string()).unwrap();
    let (tool, stderr) = run_who(&env);
    assert_eq!(tool, "you are logged in", "{stderr}");
    assert_eq!(
        server.log(),
        ["register", "authorization_code", "refresh_token"]
    );
    let renewed: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_ne!(first["access_token"], renewed["access_token"]);
    let at = renewed["access_token"].as_str().unwrap().to_string();
    assert!(
        server
            .state
            .lock()
            .unwrap()
            .seen
            .contains(&format!("Bearer {at}"))
    );

    // No token is in the store, an export or `mcp list`: only in the token file.
    let exported = env.cmd(None, &["export", "last"]).output().unwrap();
    let exported = String::from_utf8_lossy(&exported.stdout).to_string();
    let json = env.cmd(None, &["mcp", "list", "--json"]).output().unwrap();
    let json = String::from_utf8_lossy(&json.stdout).to_string();
    assert!(json.contains("\"oauth\":\"logged in (expires"), "{json}");
    for text in [&exported, &json, &list(&env), &stderr] {
        assert!(!text.contains("at-") && !text.contains("rt-"), "{text}");
    }
    for entry in walk(&env.home).iter().filter(|p| **p != file) {
        let bytes = std::fs::read(entry).unwrap_or_default();
        for secret in [&at, "rt-"] {
            assert!(
                !bytes.windows(secret.len()).any(|w| w == secret.as_bytes()),
                "a token is in {}",
                entry.display()
            );
        }
    }

    // Revoked refresh tokens: the next start says to log in again, the turn goes on.
    server.revoke_all();
    let (_, stderr) = run_who(&env);
    assert!(
        stderr.contains("could not be renewed")
            && stderr.contains("run `neocode mcp login oa`")
            && !stderr.contains("check its bearer token"),
        "{stderr}"
    );

    // Logout deletes the tokens.
    let o = env.cmd(None, &["mcp", "logout", "oa"]).output().unwrap();
    assert!(String::from_utf8_lossy(&o.stdout).contains("logged out of `oa`"));
    assert!(!file.exists());
    assert!(list(&env).contains("  oauth: not logged in"));
}

pub(crate) fn oauth_challenge_without_an_oauth_table_is_explained() {
    let server = OAuthServer::start(true, 90);
    // Without `oauth = true`, the server's challenge is read: the table is what to change.
    let (plain, _plain_srv) = Env::new(
        "sk-test",
        &format!("[mcp_servers.plain]\nurl = \"{}\"\n", server.url()),
    )
    .with_server(vec![]);
    assert!(
        list(&plain).contains(
            "add `oauth = true` to [mcp_servers.plain] and run `neocode mcp login plain`"
        ),
        "{}",
        list(&plain)
    );
}

pub(crate) fn oauth_renews_once_after_a_401() {
    use neocode::runtime::extensions::mcp::OAuthSettings;
    use neocode::runtime::extensions::mcp::{McpManager, ServerConfig};
    let server = OAuthServer::start(true, 3600);
    let env = oa_env(&server, "");
    login_loopback(&env, "oa");
    let mut cfg = ServerConfig::http("oa", &server.url());
    if let Some(r) = cfg.remote.as_mut() {
        r.oauth = Some(OAuthSettings {
            token_file: Some(env.home.join("mcp-tokens").join("oa.json")),
            ..OAuthSettings::default()
        });
    }
    let m = McpManager::new(vec![cfg], env.workdir.as_path()).unwrap();
    let cancel = neocode::runtime::tools::CancelFlag::default();
    assert_eq!(m.tools().len(), 1, "{:?}", m.statuses());
    assert_eq!(
        m.call("mcp__oa__whoami", "{}", &cancel).text,
        "you are logged in"
    );
    assert_eq!(server.log(), ["register", "authorization_code"]);
    server.revoke_access();
    let out = m.call("mcp__oa__whoami", "{}", &cancel);
    assert_eq!(out.text, "you are logged in", "{out:?}");
    assert_eq!(
        server.log(),
        ["register", "authorization_code", "refresh_token"]
    );
}

pub(crate) fn oauth_paste_login_with_a_preregistered_client() {
    let server = OAuthServer::start(false, 3600);
    // No registration offered and no client_id: the error says what to set.
    let env = oa_env(&server, "");
    let o = env
        .cmd(None, &["mcp", "login", "oa", "--paste"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr).to_string();
    assert!(!o.status.success());
    assert!(
        stderr.contains("set `client_id` in [mcp_servers.oa]"),
        "{stderr}"
    );

    let env = oa_env(&server, "client_id = \"pre-1\"\n");
    let mut login = env.cmd(None, &["mcp", "login", "oa", "--paste"]);
    login.stdin(Stdio::piped());
    let (mut child, mut out, url) = start_login(login);
    assert!(url.contains("client_id=pre-1"), "{url}");
    // The browser would end on the loopback address, which nothing serves: it is pasted.
    let back = location_of(url.trim());
    let mut stdin = child.stdin.take().unwrap();
    writeln!(stdin, "{back}").unwrap();
    drop(stdin);
    let mut rest = String::new();
    out.read_to_string(&mut rest).unwrap();
    let o = child.wait_with_output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(
        rest.contains("logged in to `oa`") && !rest.contains("registered"),
        "{rest}"
    );
    assert_eq!(server.log(), ["authorization_code"]);
    let (tool, stderr) = run_who(&env);
    assert_eq!(tool, "you are logged in", "{stderr}");
    let _ = Command::new("true").status();
}

/// The official MCP TypeScript SDK's example server (`scripts/mcp-servers.sh
/// --oauth-example`), or `None` (said loudly) when npm cannot provide it.
fn sdk_example() -> Option<String> {
    npm_entry(&["--oauth-example"], "MCP TypeScript SDK")
}

struct Node(std::process::Child);

impl Drop for Node {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// The SDK's example with `--oauth --oauth-strict`: its demo authorization server registers
/// clients, approves at once and accepts only tokens issued for its MCP server's resource.
/// It names itself `localhost` (the loopback address) in its metadata.
pub(crate) fn oauth_against_the_sdk_example_from_npm() {
    let Some(entry) = sdk_example() else {
        return;
    };
    let (mcp_port, auth_port) = (free_port(), free_port());
    let _node = Node(
        Command::new("node")
            .arg(&entry)
            .args(["--oauth", "--oauth-strict"])
            .env("MCP_PORT", mcp_port.to_string())
            .env("MCP_AUTH_PORT", auth_port.to_string())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let t0 = std::time::Instant::now();
    while [mcp_port, auth_port]
        .iter()
        .any(|p| std::net::TcpStream::connect(("127.0.0.1", *p)).is_err())
    {
        assert!(
            t0.elapsed().as_secs() < 30,
            "the SDK example did not listen"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let url = format!("http://127.0.0.1:{mcp_port}/mcp");
    let (env, _srv) = Env::new(
        "sk-test",
        &format!("[mcp_servers.sdk]\nurl = \"{url}\"\noauth = true\n"),
    )
    .with_server(vec![]);
    let (authorize, said) = login_loopback(&env, "sdk");
    assert!(
        authorize.starts_with(&format!("http://localhost:{auth_port}/authorize?")),
        "{authorize}"
    );
    assert!(
        said.contains("logged in to `sdk`") && said.contains("client registered"),
        "{said}"
    );
    let listed = list(&env);
    assert!(
        listed.contains("sdk  ready") && listed.contains("  oauth: logged in (expires "),
        "{listed}"
    );
    let (_, srv) = Env::new("sk-test", "").with_server(vec![
        Reply::tool_calls(&[("c1", "mcp__sdk__greet", r#"{"name":"neocode"}"#)]),
        Reply::text("done"),
    ]);
    let o = env
        .cmd(Some(&srv), &["run", "--approve", "never-ask", "greet"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr).to_string();
    assert!(o.status.success(), "{stderr}");
    let second = srv.requests()[1].json().to_string();
    assert!(second.contains("Hello, neocode"), "{second}\n{stderr}");

    let o = env.cmd(None, &["mcp", "logout", "sdk"]).output().unwrap();
    assert!(o.status.success());
    assert!(!env.home.join("mcp-tokens").join("sdk.json").exists());
    assert!(list(&env).contains("sdk  failed"), "{}", list(&env));
}
