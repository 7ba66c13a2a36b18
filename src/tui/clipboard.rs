//! Copying to the clipboard the terminal's way: OSC 52 (`ESC ] 52 ; c ; <base64> BEL`), which
//! the terminal carries out, so it works over SSH and inside tmux (with `set-clipboard on`)
//! and needs no clipboard tool on this machine. Mouse reporting stays as it is, so the wheel
//! keeps scrolling. What is copied is neutralised first (no escape sequence survives into
//! a later paste) and capped, since terminals drop long OSC 52 payloads.

use base64::Engine;

use crate::session::{Message, Part, Role};

/// The most bytes of text one copy sends (about 100 KB once base64 encoded: what xterm,
/// kitty and tmux accept by default).
pub(crate) const COPY_MAX: usize = 74 * 1024;

/// The escape sequence that puts `text` on the system clipboard.
pub(crate) fn osc52(text: &str) -> String {
    let b64 = base64::engine::general_purpose::STANDARD.encode(text.as_bytes());
    format!("\x1b]52;c;{b64}\x07")
}

/// Text for the clipboard: SGR colours and every other escape or control character go
/// (tabs and newlines stay, so code pastes as it was), cut at [`COPY_MAX`] on a character
/// boundary; and whether it was cut.
pub(crate) fn clean(text: &str) -> (String, bool) {
    let mut out = String::with_capacity(text.len().min(COPY_MAX));
    for (i, line) in text.split('\n').enumerate() {
        if i > 0 {
            out.push('\n');
        }
        for (j, piece) in line.split('\t').enumerate() {
            if j > 0 {
                out.push('\t');
            }
            out.extend(
                crate::sanitize::text_without_sgr(piece)
                    .chars()
                    .filter(|c| !c.is_control()),
            );
        }
    }
    if out.len() <= COPY_MAX {
        return (out, false);
    }
    let end = out.floor_char_boundary(COPY_MAX);
    out.truncate(end);
    (out, true)
}

/// A message as text to copy: its text (a tool result: its output), then each tool call it
/// makes as `name arguments`.
pub(crate) fn message_text(m: &Message) -> String {
    let mut out = m.text();
    for call in &m.tool_calls {
        if !out.is_empty() {
            out.push_str("\n\n");
        }
        out.push_str(&call.name);
        out.push(' ');
        out.push_str(&call.arguments);
    }
    if out.is_empty() {
        // A reply of reasoning only.
        for p in &m.parts {
            if let Part::Reasoning { text, .. } = p {
                out.push_str(text);
            }
        }
    }
    out
}

/// What a copied message is called on the status line.
pub(crate) fn message_kind(m: &Message) -> &'static str {
    match m.role {
        Role::Tool => "tool result",
        Role::User => "your message",
        Role::Assistant => "reply",
        Role::System => "system message",
    }
}

/// The fenced code blocks (```` ``` ```` or `~~~`) of a message's text, their bodies only.
pub(crate) fn code_blocks(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut open: Option<(String, Vec<&str>)> = None;
    for line in text.lines() {
        let t = line.trim_start();
        match open.as_mut() {
            None => {
                for fence in ["```", "~~~"] {
                    if t.starts_with(fence) {
                        let n = t.chars().take_while(|c| fence.starts_with(*c)).count();
                        open = Some((fence[..1].repeat(n), Vec::new()));
                        break;
                    }
                }
            }
            Some((fence, body)) => {
                if t.starts_with(fence.as_str())
                    && t.trim_end().chars().all(|c| fence.starts_with(c))
                {
                    out.push(body.join("\n"));
                    open = None;
                } else {
                    body.push(line);
                }
            }
        }
    }
    // A block the message never closed (a reply cut off) is still a block.
    if let Some((_, body)) = open
        && !body.is_empty()
    {
        out.push(body.join("\n"));
    }
    out
}

/// The programs that read an image off the system clipboard, as `(program, arguments)`: the
/// Wayland one first when a Wayland display is set, else the X11 one first.
fn image_readers() -> [(&'static str, &'static [&'static str]); 2] {
    let wl = ("wl-paste", &["--no-newline", "--type", "image/png"][..]);
    let x = (
        "xclip",
        &["-selection", "clipboard", "-t", "image/png", "-o"][..],
    );
    if std::env::var_os("WAYLAND_DISPLAY").is_some_and(|v| !v.is_empty()) {
        [wl, x]
    } else {
        [x, wl]
    }
}

/// `program` found on `$PATH` (an executable file).
fn on_path(program: &str) -> Option<std::path::PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(program))
        .find(|p| {
            std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
}

/// How long a clipboard program may take before it is stopped.
const PASTE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(3);

/// The PNG file signature every image read off the clipboard starts with.
const PNG_MAGIC: &[u8] = b"\x89PNG\r\n\x1a\n";

/// The PNG image on the system clipboard, read with `wl-paste` or `xclip` (whichever is on
/// `$PATH`); the error is one line saying what to do.
pub(crate) fn paste_image() -> Result<Vec<u8>, crate::tui::error::Failure> {
    let Some((name, prog, args)) = image_readers()
        .into_iter()
        .find_map(|(name, args)| on_path(name).map(|p| (name, p, args)))
    else {
        return Err("No clipboard tool to read an image: install wl-clipboard (Wayland) or xclip (X11), or paste the image file's path".into());
    };
    let (ok, out, err) =
        run_limited(&prog, args).map_err(|e| crate::tui::error::failed!("{name}: {e}"))?;
    let why = crate::sanitize::line(err.lines().next().unwrap_or("").trim()).into_owned();
    if !ok || !out.starts_with(PNG_MAGIC) {
        let why = if why.is_empty() {
            String::new()
        } else {
            format!(" ({name}: {why})")
        };
        return Err(crate::tui::error::failed!(
            "The clipboard holds no PNG image{why}; copy one, then Ctrl-V or /paste again"
        ));
    }
    if out.len() as u64 > crate::runtime::agent::images::MAX_IMAGE_BYTES {
        return Err("The clipboard's image is larger than 20 MB; not attached".into());
    }
    Ok(out)
}

/// Runs `prog args` with no input, stopped after [`PASTE_TIMEOUT`]: whether it succeeded,
/// its output (capped a little past the image limit) and its error text.
fn run_limited(
    prog: &std::path::Path,
    args: &[&str],
) -> Result<(bool, Vec<u8>, String), crate::tui::error::Failure> {
    use std::io::Read;
    use std::process::{Command, Stdio};
    let mut child = Command::new(prog)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| crate::format::io_error(&e))?;
    let cap = crate::runtime::agent::images::MAX_IMAGE_BYTES + 1;
    let out = child.stdout.take().map(|o| {
        std::thread::spawn(move || {
            let mut v = Vec::new();
            let _ = o.take(cap).read_to_end(&mut v);
            v
        })
    });
    let err = child.stderr.take().map(|e| {
        std::thread::spawn(move || {
            let mut s = String::new();
            let _ = e.take(4096).read_to_string(&mut s);
            s
        })
    });
    let start = std::time::Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(s)) => break s,
            Ok(None) if start.elapsed() < PASTE_TIMEOUT => {
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            Ok(None) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(crate::tui::error::failed!(
                    "no answer in {} s; stopped",
                    PASTE_TIMEOUT.as_secs()
                ));
            }
            Err(e) => return Err(crate::format::io_error(&e).into()),
        }
    };
    let out = out.and_then(|h| h.join().ok()).unwrap_or_default();
    let err = err.and_then(|h| h.join().ok()).unwrap_or_default();
    Ok((status.success(), out, err))
}

/// Writes a pasted image to a new file in the temporary folder, so it attaches to the next
/// message the way `/attach` does (the turn stores it as an asset of the session).
pub(crate) fn save_pasted(bytes: &[u8]) -> Result<std::path::PathBuf, crate::tui::error::Failure> {
    use std::io::Write;
    let dir = std::env::temp_dir();
    let stamp = crate::session::now_ms();
    for n in 0..100 {
        let path = dir.join(format!(
            "neocode-paste-{}-{stamp}-{n}.png",
            std::process::id()
        ));
        match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&path)
        {
            Ok(mut f) => {
                return f.write_all(bytes).map(|()| path).map_err(|e| {
                    crate::tui::error::failed!(
                        "cannot save the pasted image: {}",
                        crate::format::io_error(&e)
                    )
                });
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(e) => {
                return Err(crate::tui::error::failed!(
                    "cannot save the pasted image: {}",
                    crate::format::io_error(&e)
                ));
            }
        }
    }
    Err("cannot save the pasted image: no free file name in the temporary folder".into())
}

/// A pasted text that is the path of an existing image file (a file dragged into the
/// terminal: quoted, `~/`, or a `file://` URL), as that path.
pub(crate) fn pasted_image_path(text: &str, cwd: &std::path::Path) -> Option<std::path::PathBuf> {
    let t = text.trim().trim_matches(['\'', '"']);
    if t.is_empty() || t.contains('\n') {
        return None;
    }
    let t = t.strip_prefix("file://").unwrap_or(t);
    let path = if let Some(rest) = t.strip_prefix("~/") {
        std::path::PathBuf::from(std::env::var_os("HOME")?).join(rest)
    } else if t.starts_with('/') || t.starts_with("./") {
        cwd.join(t)
    } else {
        return None;
    };
    (crate::tui::worker::image_mime(&path).is_some() && path.is_file()).then_some(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn osc52_is_base64_between_the_markers() {
        assert_eq!(osc52("hi"), "\x1b]52;c;aGk=\x07");
    }

    #[test]
    fn clean_drops_escapes_keeps_tabs_and_caps() {
        let (t, cut) = clean("\x1b[31mred\x1b[0m\tx\r\n\x1b]52;c;evil\x07y");
        assert!(!t.contains('\x1b') && !t.contains('\x07'), "{t:?}");
        assert!(t.starts_with("red\tx\n"), "{t:?}");
        assert!(!cut);
        let (t, cut) = clean(&"é".repeat(COPY_MAX));
        assert!(cut && t.len() <= COPY_MAX);
    }

    #[test]
    fn code_blocks_are_found_closed_or_not() {
        let text = "intro\n```rust\nfn a() {}\n```\nmid\n~~~\nls -l\n~~~\n```\nopen";
        assert_eq!(code_blocks(text), ["fn a() {}", "ls -l", "open"]);
    }

    #[test]
    fn only_a_pasted_path_of_an_existing_image_reads_as_one() {
        let dir = tempfile::tempdir().unwrap();
        let png = dir.path().join("shot.png");
        std::fs::write(&png, PNG_MAGIC).unwrap();
        let shown = png.display().to_string();
        assert_eq!(
            pasted_image_path(&format!("'{shown}' "), dir.path()),
            Some(png.clone())
        );
        assert_eq!(
            pasted_image_path(&format!("file://{shown}"), dir.path()),
            Some(png)
        );
        assert_eq!(
            pasted_image_path("./shot.png", dir.path()),
            Some(dir.path().join("./shot.png"))
        );
        // A missing file, text that is not a path, a file that is not an image: text.
        assert_eq!(
            pasted_image_path(&format!("{shown}x.png"), dir.path()),
            None
        );
        assert_eq!(pasted_image_path("shot.png is nice", dir.path()), None);
        std::fs::write(dir.path().join("notes.txt"), "x").unwrap();
        assert_eq!(pasted_image_path("./notes.txt", dir.path()), None);
    }
}
