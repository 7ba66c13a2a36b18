//! Terminal safety: a corpus of escape sequences inside titles, messages, tool calls, tool
//! output and asset metadata, printed by `--list`, `show`, `search`, `export --format markdown`
//! and drawn by the TUI in a real pseudo-terminal. The terminal's title, clipboard and bell are
//! never touched, no raw control byte reaches it, and the text shows as visible characters.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::support::Env;
use crate::support::pty::Pty;
use neocode::session::{AppendMeta, NewMessage, NewSession, Part, Role, ToolCall};

/// Escape sequences a hostile model or tool output could carry.
const CORPUS: &[&str] = &[
    "\x1b[2J\x1b[H",                                          // CSI: clear screen, home
    "\x1b]0;pwned-title\x07",                                 // OSC 0: window title, BEL
    "\x1b]2;pwned-title2\x1b\\",                              // OSC 2: title, ST
    "\x1b]8;;https://evil.invalid/\x1b\\click\x1b]8;;\x1b\\", // OSC 8: hyperlink
    "\x1b]52;c;cHduZWQ=\x07",                                 // OSC 52: clipboard write
    "\x1bP1$tpwned\x1b\\",                                    // DCS
    "\x07\x07",                                               // BEL
    "\u{9b}31mred",                                           // C1 CSI
    "\u{9d}0;c1-title\u{9c}",                                 // C1 OSC .. ST
    "\u{202e}fdp.exe",                                        // bidi override (RLO)
    "\u{2066}isolate\u{2069}",                                // bidi isolates
    "\x1b[?1049l\x1b[6n",                                     // leave alt screen, report cursor
];

fn hostile() -> String {
    CORPUS.join(" | ")
}

/// Byte-level check: nothing that a terminal would act on beyond plain text (and, for the
/// TUI, the CSI sequences the app itself emits).
fn assert_inert(bytes: &[u8], allow_csi: bool, what: &str) {
    let text = String::from_utf8_lossy(bytes);
    for (i, c) in text.char_indices() {
        let bad = match c {
            '\x1b' => {
                let next = text[i + 1..].chars().next();
                // The TUI's own output: CSI (ESC [), charset and keypad selections. Never OSC
                // (ESC ]), DCS (ESC P), APC (ESC _), PM (ESC ^) or SOS (ESC X).
                !(allow_csi && matches!(next, Some('[' | '(' | ')' | '=' | '>' | '7' | '8' | 'M')))
            }
            '\x07' => true,
            '\u{80}'..='\u{9f}' => true,
            '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{200e}' | '\u{200f}' => true,
            '\x00'..='\x1f' => !matches!(c, '\n' | '\r' | '\t' | '\x08'),
            _ => false,
        };
        assert!(
            !bad,
            "{what}: raw {c:?} at byte {i}: …{}…",
            &text[text.floor_char_boundary(i.saturating_sub(40))
                ..text.floor_char_boundary((i + 40).min(text.len()))]
        );
    }
}

/// A workspace with one hostile session; returns its id.
fn hostile_session(env: &Env) -> String {
    let rt = env.sessions();
    let h = rt
        .new_session(NewSession {
            title: format!("pwn {}", hostile()),
            model: format!("model{}", CORPUS[1]),
            ..NewSession::default()
        })
        .unwrap();
    let assistant = NewMessage {
        role: Some(Role::Assistant),
        parts: vec![Part::text(format!("assistant says {}", hostile()))],
        tool_calls: vec![ToolCall {
            id: "call-1".into(),
            name: format!("bash{}", CORPUS[4]),
            arguments: serde_json::json!({ "cmd": hostile() }).to_string(),
        }],
        ..NewMessage::default()
    };
    rt.append(
        &h.id,
        &[
            NewMessage::text(Role::User, format!("searchable {}", hostile())),
            assistant,
            NewMessage::tool_result("call-1", format!("tool output {}", hostile()), true),
        ],
        &AppendMeta::default(),
    )
    .unwrap();
    rt.save_asset(&h.id, &format!("image/png{}", CORPUS[5]), b"\x89PNG")
        .unwrap();
    h.id
}

#[test]
fn printed_output_is_inert() {
    let env = Env::new();
    let id = hostile_session(&env);
    let cases: Vec<Vec<&str>> = vec![
        vec!["--list"],
        vec!["--list", "--json"],
        vec!["show", &id],
        vec!["show", &id, "--json"],
        vec!["search", "searchable"],
        vec!["search", "searchable", "--json"],
        vec!["export", &id, "--format", "markdown"],
        vec!["export", &id],
    ];
    for args in cases {
        let o = env.neocode().args(&args).output().unwrap();
        assert!(
            o.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        assert_inert(&o.stdout, false, &format!("{args:?} stdout"));
        assert_inert(&o.stderr, false, &format!("{args:?} stderr"));
        let out = String::from_utf8_lossy(&o.stdout);
        assert!(
            out.contains("pwned-title") || out.contains("searchable"),
            "{args:?}: text lost: {out}"
        );
    }
    // JSON stays lossless: the escapes come back exactly when parsed.
    let o = env.neocode().args(["--list", "--json"]).output().unwrap();
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v[0]["title"], format!("pwn {}", hostile()));
}

#[derive(Default)]
struct Seen {
    titles: Vec<Vec<u8>>,
    clipboard: Vec<Vec<u8>>,
    bells: usize,
    osc: usize,
}

#[derive(Clone, Default)]
struct Watch(Arc<Mutex<Seen>>);

impl vt100::Callbacks for Watch {
    fn audible_bell(&mut self, _: &mut vt100::Screen) {
        self.0.lock().unwrap().bells += 1;
    }
    fn set_window_title(&mut self, _: &mut vt100::Screen, title: &[u8]) {
        self.0.lock().unwrap().titles.push(title.to_vec());
    }
    fn set_window_icon_name(&mut self, _: &mut vt100::Screen, name: &[u8]) {
        self.0.lock().unwrap().titles.push(name.to_vec());
    }
    fn copy_to_clipboard(&mut self, _: &mut vt100::Screen, _ty: &[u8], data: &[u8]) {
        self.0.lock().unwrap().clipboard.push(data.to_vec());
    }
    fn unhandled_osc(&mut self, _: &mut vt100::Screen, _params: &[&[u8]]) {
        self.0.lock().unwrap().osc += 1;
    }
}

/// Runs the TUI in a 120x35 pty, types `keys` once the screen shows `ready`, quits with
/// Ctrl-C (in the conversation view `q` is text), and returns every byte it wrote, the last
/// screen, and what the terminal saw.
fn run_tui(env: &Env, extra: &[&str], ready: &str, keys: &[&str]) -> (Vec<u8>, String, Watch) {
    let mut pty = Pty::spawn(&env.home, &env.workdir, extra, &[], 35, 120);
    pty.wait_for(ready);
    for k in keys {
        pty.keys(k);
    }
    let final_screen = pty.screen();
    pty.keys("\x03");
    pty.wait_exit(Duration::from_secs(10), "the TUI did not quit on Ctrl-C");
    let watch = Watch::default();
    pty.replay(watch.clone());
    (pty.bytes(), final_screen, watch)
}

fn assert_terminal_untouched(bytes: &[u8], watch: &Watch, what: &str) {
    let seen = watch.0.lock().unwrap();
    assert!(
        seen.titles.is_empty(),
        "{what}: window title set to {:?}",
        seen.titles
    );
    assert!(seen.clipboard.is_empty(), "{what}: clipboard written");
    assert_eq!(seen.bells, 0, "{what}: bell rung");
    assert_eq!(seen.osc, 0, "{what}: OSC sequence reached the terminal");
    assert_inert(bytes, true, what);
}

#[test]
fn tui_draws_hostile_text_as_visible_characters() {
    let env = Env::new();
    let id = hostile_session(&env);
    // The list, then every detail tab.
    let (bytes, screen, watch) = run_tui(&env, &[], "pwn", &["j", "]", "]", "]", "]", "]"]);
    assert_terminal_untouched(&bytes, &watch, "list and detail tabs");
    assert!(screen.contains("pwn"), "{screen}");
    // The conversation view of the hostile session.
    // (PgUp scrolls; typed text would be cleared by the first Ctrl-C instead of quitting.)
    let (bytes, screen, watch) = run_tui(
        &env,
        &["--resume", &id],
        "searchable",
        &["\x1b[5~", "\x1b[5~"],
    );
    assert_terminal_untouched(&bytes, &watch, "conversation view");
    assert!(
        screen.contains("^[") || screen.contains("pwned"),
        "escapes not shown as text:\n{screen}"
    );
}
