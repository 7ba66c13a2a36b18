//! Re-importing a grown transcript replaces its session in one transaction, images included:
//! the session keeps exactly the images of the new read (byte for byte), the folder beside
//! the database holds no file of an image that is gone, and a session continued in neocode
//! since is left alone.

use std::fs;
use std::io::Write;
use std::path::Path;

use crate::support::cli::{Ws, ok_stdout};
use base64::Engine;
use neocode::session::{AppendMeta, NewMessage, Role};
use serde_json::{Value, json};

fn line(uuid: &str, parent: Option<&str>, message: Value) -> String {
    let v = json!({
        "type": "user", "uuid": uuid, "parentUuid": parent, "sessionId": "imgs-1",
        "cwd": "/work/x", "version": "1.0.99", "isSidechain": false,
        "timestamp": "2026-01-01T00:00:00.000Z", "message": message,
    });
    format!("{v}\n")
}

fn image_turn(uuid: &str, parent: Option<&str>, bytes: &[u8]) -> String {
    let data = base64::engine::general_purpose::STANDARD.encode(bytes);
    line(
        uuid,
        parent,
        json!({"role": "user", "content": [
            {"type": "text", "text": format!("look at {uuid}")},
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": data}}]}),
    )
}

fn write(path: &Path, lines: &[String]) {
    let mut f = fs::File::create(path).unwrap();
    for l in lines {
        f.write_all(l.as_bytes()).unwrap();
    }
}

fn import(ws: &Ws, path: &Path) -> String {
    let mut c = ws.cmd();
    c.args(["import", "--from", "claude-code"]).arg(path);
    ok_stdout(&mut c)
}

/// The asset files of a session on disk, sorted.
fn files(ws: &Ws, id: &str) -> Vec<Vec<u8>> {
    let dir = ws.db().parent().unwrap().join("assets").join(id);
    let mut out: Vec<Vec<u8>> = fs::read_dir(&dir)
        .map(|rd| rd.flatten().map(|e| fs::read(e.path()).unwrap()).collect())
        .unwrap_or_default();
    out.sort();
    out
}

fn stored(ws: &Ws, id: &str) -> Vec<Vec<u8>> {
    let rt = ws.sessions();
    let mut out: Vec<Vec<u8>> = rt
        .assets(id)
        .unwrap()
        .iter()
        .map(|a| rt.asset_bytes(id, &a.id).unwrap().1)
        .collect();
    out.sort();
    out
}

#[test]
fn a_grown_transcript_replaces_its_images_and_leaves_no_stale_file() {
    let src = tempfile::tempdir().unwrap();
    let path = src.path().join("imgs-1.jsonl");
    let (a, b, c) = (
        b"first image".to_vec(),
        b"second image".to_vec(),
        b"third image".to_vec(),
    );
    write(
        &path,
        &[image_turn("u1", None, &a), image_turn("u2", Some("u1"), &b)],
    );
    let ws = Ws::new();
    let out = import(&ws, &path);
    assert!(out.starts_with("imported 1, updated 0,"), "{out}");
    let mut want = vec![a.clone(), b.clone()];
    want.sort();
    assert_eq!(stored(&ws, "imgs-1"), want);
    assert_eq!(files(&ws, "imgs-1"), want);

    // Rewritten and grown: the second image is gone, a third came.
    std::thread::sleep(std::time::Duration::from_millis(20));
    write(
        &path,
        &[
            image_turn("u1", None, &a),
            image_turn("u3", Some("u1"), &c),
            line(
                "u4",
                Some("u3"),
                json!({"role": "user", "content": "and more"}),
            ),
        ],
    );
    let out = import(&ws, &path);
    assert!(out.starts_with("imported 0, updated 1,"), "{out}");
    let mut want = vec![a.clone(), c];
    want.sort();
    assert_eq!(stored(&ws, "imgs-1"), want);
    assert_eq!(
        files(&ws, "imgs-1"),
        want,
        "a file of a dropped image stayed"
    );
    let rt = ws.sessions();
    assert_eq!(rt.header("imgs-1").unwrap().message_count, 3);

    // Continued in neocode: the next grown read is refused and nothing changes.
    rt.append(
        "imgs-1",
        &[NewMessage::text(Role::User, "continued here")],
        &AppendMeta::default(),
    )
    .unwrap();
    let before = rt.export("imgs-1").unwrap();
    std::thread::sleep(std::time::Duration::from_millis(20));
    write(
        &path,
        &[image_turn("u1", None, &a), image_turn("u5", Some("u1"), &b)],
    );
    let mut cmd = ws.cmd();
    cmd.args(["import", "--from", "claude-code"]).arg(&path);
    let out = cmd.output().unwrap();
    assert!(!out.status.success());
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("continued in neocode"), "{stdout}");
    assert_eq!(rt.export("imgs-1").unwrap(), before);
    assert_eq!(files(&ws, "imgs-1"), want);
}
