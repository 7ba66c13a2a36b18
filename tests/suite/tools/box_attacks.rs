//! Issue 34's attacks on the command box, each run in both boxes where it applies (the
//! fallback by `simulate_no_userns`): a git filter planted for the snapshot, a `.git` file
//! naming a repository outside, writes to the workspace's control files, unix sockets
//! outside the workspace, socket addresses in the environment, set-uid bits.

use crate::support::process::Succeeds;
use crate::support::text::has;
use crate::support::tools as tool_support;

use std::io::ErrorKind;
use std::os::linux::net::SocketAddrExt;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::{SocketAddr, UnixDatagram, UnixListener};
use std::path::Path;

use neocode::runtime::tools::sandbox;
use neocode::runtime::tools::{SandboxSettings, ToolOutput};
use tool_support::{SECRETS, SIDE_DOORS, Space, ctx_in, exists, modes, namespaced, sh};

fn git(dir: &Path, args: &[&str]) -> String {
    let o = std::process::Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@example.com")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@example.com")
        .succeeds();
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Whether the sandbox is enforced here; otherwise says why (the attacks need it).
fn enforced(test: &str) -> bool {
    tool_support::init();
    let status = sandbox::status(&SandboxSettings::default());
    if !status.is_enforced() {
        eprintln!(
            "NOTE: {test}: {} — the box is not tested here",
            status.describe()
        );
    }
    status.is_enforced()
}

/// Each sandbox mode with a new [`Space`], when the sandbox is enforced here (none
/// otherwise: see [`enforced`]).
fn boxes(test: &str) -> Vec<(&'static str, SandboxSettings, Space)> {
    if !enforced(test) {
        return Vec::new();
    }
    modes()
        .into_iter()
        .map(|(name, settings)| (name, settings, Space::new()))
        .collect()
}

/// Asserts the command (`who`) ran to its last line, which printed `end`, and its result says
/// `says`.
#[track_caller]
fn assert_ran_saying(out: &ToolOutput, who: &str, end: &str, says: &str) {
    assert!(out.text.contains(end), "{who}: {}", out.text);
    assert!(
        out.text.contains(says),
        "{who}: the result does not say {says:?}: {}",
        out.text
    );
}

/// Every file below `dir` (relative, sorted): what a repository's object folder holds.
fn listing(dir: &Path) -> Vec<String> {
    fn walk(base: &Path, dir: &Path, out: &mut Vec<String>) {
        for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let p = e.path();
            if e.file_type().unwrap().is_dir() {
                walk(base, &p, out);
            } else {
                out.push(p.strip_prefix(base).unwrap().display().to_string());
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, dir, &mut out);
    out.sort();
    out
}

/// A command writes `.git/config.worktree` (read once `extensions.worktreeConfig` is set)
/// naming a clean filter, and `.gitattributes` applying it to every file; the commands after
/// it take a rewind snapshot each. The filter would touch a file outside the workspace and
/// dump the environment there: neither may ever happen, since no git runs outside the box.
#[test]
fn a_git_filter_a_command_plants_never_runs_outside_the_box() {
    for (name, settings, s) in boxes("git_filter") {
        git(&s.root, &["init", "-q"]);
        s.write("a.txt", "a\n");
        let marker = s.outside.join("filter-ran");
        let dump = s.outside.join("env.txt");
        let ctx = ctx_in(&s, &settings);
        let plant = format!(
            "git config extensions.worktreeConfig true; \
             printf '[filter \"x\"]\\n\\tclean = \"touch {m}; env > {e}; cat\"\\n' > .git/config.worktree; \
             echo '* filter=x' > .gitattributes; echo planted",
            m = marker.display(),
            e = dump.display()
        );
        let planting = sh(&ctx, &plant);
        assert!(
            planting.text.contains("planted"),
            "{name}: {}",
            planting.text
        );
        let out = sh(&ctx, "echo b > a.txt; echo changed");
        assert!(out.text.contains("changed"), "{name}: {}", out.text);
        sh(&ctx, "echo c > a.txt");
        assert!(
            !exists(&marker),
            "{name}: the planted filter ran outside the box"
        );
        assert!(
            !exists(&dump),
            "{name}: the planted filter dumped the environment"
        );
        if namespaced(name) {
            assert!(
                !exists(&s.root.join(".git/config.worktree")),
                "{name}: {}",
                planting.text
            );
            assert!(
                !git(&s.root, &["config", "--list", "--local"]).contains("worktreeconfig"),
                "{name}: the command changed .git/config"
            );
            assert!(
                planting.text.contains(".git/config.worktree"),
                "{name}: the result does not say what was removed: {}",
                planting.text
            );
        } else {
            // The fallback keeps no control file read-only (docs/SECURITY.md): the filter is
            // in place, and real git outside would run it — neocode never does.
            git(&s.root, &["add", "-A"]);
            assert!(
                exists(&marker),
                "{name}: the planted filter is not a real one"
            );
        }
    }
}

/// A `.git` *file* naming a repository outside the workspace: the snapshot writes nothing
/// there (nor anywhere else), and in the box the file itself cannot be changed.
#[test]
fn a_git_file_naming_a_repository_outside_gets_nothing_written_there() {
    for (name, settings, s) in boxes("git_file") {
        git(&s.outside, &["init", "-q", "repo"]);
        let objects = s.outside.join("repo/.git/objects");
        let before = listing(&objects);
        let pointer = format!("gitdir: {}\n", s.outside.join("repo/.git").display());
        s.write(".git", &pointer);
        s.write("a.txt", "a\n");
        let ctx = ctx_in(&s, &settings);
        let out = sh(&ctx, "echo b > a.txt; echo new > b.txt; echo done");
        assert_ran_saying(&out, name, "done", "not restorable");
        assert_eq!(
            listing(&objects),
            before,
            "{name}: objects were written outside"
        );
        if namespaced(name) {
            let out = sh(
                &ctx,
                "echo 'gitdir: /tmp' > .git; rm -f .git; mv .git g; echo end",
            );
            assert!(out.text.contains("end"), "{name}: {}", out.text);
            assert_eq!(s.read(".git"), pointer, "{name}: the .git file changed");
        }
    }
}

/// A repository with `.neocode/` and the usual `.git` folder; each attack is one command.
fn protected_workspace() -> Space {
    let s = Space::new();
    git(&s.root, &["init", "-q"]);
    s.write(".neocode/hooks.json", "{\"hooks\":{}}\n");
    s.write(".neocode/permissions.toml", "deny = []\n");
    s.write("a.txt", "a\n");
    s
}

/// What the attacks may not change: the control files' bytes and the hooks folder's names.
fn control_state(s: &Space) -> Vec<(String, Option<Vec<u8>>)> {
    let mut out = Vec::new();
    for rel in [
        ".neocode/hooks.json",
        ".neocode/permissions.toml",
        ".git/config",
        ".git/info/exclude",
        ".git/config.worktree",
        ".git/commondir",
        ".git/hooks/pre-commit",
    ] {
        out.push((rel.to_string(), std::fs::read(s.root.join(rel)).ok()));
    }
    out.push((
        ".git/hooks/".into(),
        Some(listing(&s.root.join(".git/hooks")).join("\n").into_bytes()),
    ));
    out.push((
        ".neocode/".into(),
        Some(listing(&s.root.join(".neocode")).join("\n").into_bytes()),
    ));
    out
}

#[test]
fn the_workspace_control_files_are_read_only_in_the_box() {
    if !enforced("control_files") || !namespaced("namespaces") {
        return;
    }
    let s = protected_workspace();
    let ctx = ctx_in(&s, &SandboxSettings::default());
    let before = control_state(&s);
    let outside = s.outside.join("hook-ran");
    for attack in [
        "echo '{\"hooks\":{\"SessionStart\":[]}}' > .neocode/hooks.json".to_string(),
        "echo 'allow = [\"*\"]' >> .neocode/permissions.toml".into(),
        "rm -f .neocode/hooks.json".into(),
        "mv .neocode/hooks.json .neocode/old.json".into(),
        "touch .neocode/commands.toml".into(),
        "mv .neocode .neocode-old && mkdir .neocode && echo '{}' > .neocode/hooks.json".into(),
        "rm -rf .neocode".into(),
        "printf '[core]\\n\\tfsmonitor = touch /tmp/x\\n' >> .git/config".into(),
        "git config core.hooksPath .".into(),
        "ln -sf ../evil.cfg .git/config".into(),
        format!(
            "printf '#!/bin/sh\\ntouch {}\\n' > .git/hooks/pre-commit && chmod +x .git/hooks/pre-commit",
            outside.display()
        ),
        "rm -rf .git/hooks".into(),
        "mv .git/hooks .git/hooks-old && mkdir .git/hooks".into(),
        "echo '* filter=x' > .git/info/attributes".into(),
        "mv .git .git2 && mkdir .git && echo '[core]' > .git/config".into(),
        "rm -rf .git/info".into(),
    ] {
        let out = sh(&ctx, &format!("{attack}; echo attempted"));
        assert_ran_saying(&out, &attack, "attempted", "not its control files");
        assert_eq!(
            control_state(&s),
            before,
            "{attack} changed a control file: {}",
            out.text
        );
        assert!(!exists(&s.root.join(".git2")), "{attack}");
        assert!(!exists(&s.root.join(".neocode-old")), "{attack}");
    }
    // What neither exists nor can be a mount point is put back after the command.
    let out = sh(
        &ctx,
        "echo /tmp/elsewhere > .git/commondir; printf '[core]\\n\\tfsmonitor = x\\n' > .git/config.worktree; echo planted",
    );
    assert!(out.text.contains("planted"), "{}", out.text);
    assert_eq!(control_state(&s), before, "{}", out.text);
    assert!(out.text.contains("created .git/commondir"), "{}", out.text);
    has(&out.text, "created .git/config.worktree");
    // A hooks folder the repository lacks cannot be created with a hook in it.
    std::fs::remove_dir_all(s.root.join(".git/hooks")).unwrap();
    let out = sh(
        &ctx,
        &format!(
            "mkdir -p .git/hooks && printf '#!/bin/sh\\ntouch {}\\n' > .git/hooks/pre-commit && chmod +x .git/hooks/pre-commit && echo planted",
            outside.display()
        ),
    );
    assert!(out.text.contains("planted"), "{}", out.text);
    assert!(!exists(&s.root.join(".git/hooks")), "{}", out.text);
    assert!(out.text.contains("created .git/hooks"), "{}", out.text);
    // git still works: objects, refs, the index and HEAD are writable.
    let out = sh(
        &ctx,
        "git add a.txt && git -c user.email=t@example.com -c user.name=t commit -qm first && git log --oneline | wc -l",
    );
    assert!(out.text.starts_with("1\n"), "{}", out.text);
    assert!(!exists(&outside), "a hook ran");
    // The rest of the workspace stays writable.
    let out = sh(
        &ctx,
        "echo ok > .neocode-notes && mkdir -p src && echo x > src/y && echo fine",
    );
    assert!(out.text.contains("fine"), "{}", out.text);
}

/// The fallback keeps no control file read-only (docs/SECURITY.md): it is `partial`, so
/// every command asks first.
#[test]
fn the_fallback_says_it_does_not_protect_control_files() {
    let (_, fallback) = modes().remove(1);
    tool_support::init();
    assert!(sandbox::must_ask(&fallback));
    assert!(!sandbox::walls(&fallback).control_files);
}

/// A python3 client in the box: connects to `path` and to the abstract name `abstract_name`,
/// sends a datagram to `dgram` from a datagram pair, and checks that a stream pair works.
fn socket_client(path: &Path, abstract_name: &str, dgram: &Path) -> String {
    format!(
        r#"python3 - <<'EOF'
import socket
for target in ["{path}", "\0{abstract_name}"]:
    try:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(target)
        s.send(b"hello")
        print("reached", repr(target))
    except OSError as e:
        print("refused", repr(target), e)
try:
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
    a.sendto(b"hello", "{dgram}")
    print("reached datagram")
except OSError as e:
    print("refused datagram", e)
a, b = socket.socketpair()
a.send(b"ok")
print("stream pair", b.recv(2))
EOF"#,
        path = path.display(),
        dgram = dgram.display()
    )
}

fn no_connection(l: &UnixListener) -> bool {
    l.set_nonblocking(true).unwrap();
    matches!(l.accept(), Err(e) if e.kind() == ErrorKind::WouldBlock)
}

/// A unix socket listening outside the workspace (as a tmux server, D-Bus or Docker do), an
/// abstract one and a datagram one: a command reaches none of them while the network is
/// denied, in either box; with the network allowed the path socket is reached (which shows
/// the client works).
#[test]
fn unix_sockets_outside_are_reached_only_with_the_network_allowed() {
    if !enforced("unix_sockets") {
        return;
    }
    if std::process::Command::new("python3")
        .arg("-c")
        .arg("1")
        .output()
        .is_err()
    {
        eprintln!("NOTE: unix_sockets: no python3 here; not tested");
        return;
    }
    for (name, settings) in modes() {
        let s = Space::new();
        let path = s.outside.join("server.sock");
        let listener = UnixListener::bind(&path).unwrap();
        let abstract_name = format!("neocode-test-{}-{name}", std::process::id());
        let addr = SocketAddr::from_abstract_name(abstract_name.as_bytes()).unwrap();
        let abstract_listener = UnixListener::bind_addr(&addr).unwrap();
        let dgram_path = s.outside.join("dgram.sock");
        let dgram = UnixDatagram::bind(&dgram_path).unwrap();
        dgram.set_nonblocking(true).unwrap();
        let client = socket_client(&path, &abstract_name, &dgram_path);
        let out = sh(&ctx_in(&s, &settings), &client);
        assert!(
            out.text.contains("stream pair b'ok'"),
            "{name}: {}",
            out.text
        );
        assert!(!out.text.contains("reached"), "{name}: {}", out.text);
        assert!(
            no_connection(&listener),
            "{name}: the path socket was reached"
        );
        assert!(
            no_connection(&abstract_listener),
            "{name}: the abstract socket was reached"
        );
        let mut buf = [0u8; 16];
        assert!(dgram.recv(&mut buf).is_err(), "{name}: a datagram arrived");
        assert!(
            out.text.contains("Permission denied"),
            "{name}: {}",
            out.text
        );

        let mut open = ctx_in(&s, &settings);
        open.sandbox.network = true;
        let out = sh(&open, &client);
        assert!(
            out.text.contains(&format!("reached '{}'", path.display())),
            "{name}: {}",
            out.text
        );
    }
}

#[test]
fn socket_addresses_in_the_environment_do_not_reach_commands() {
    tool_support::init();
    for (name, settings) in modes().into_iter().chain([(
        "off",
        SandboxSettings {
            mode: neocode::runtime::tools::SandboxMode::Off,
            ..SandboxSettings::default()
        },
    )]) {
        let s = Space::new();
        let mut ctx = ctx_in(&s, &settings);
        let out = sh(&ctx, "env");
        for (k, v) in SIDE_DOORS {
            assert_eq!(std::env::var(k).unwrap(), *v, "the parent holds {k}");
            assert!(
                !out.text.lines().any(|l| l.starts_with(&format!("{k}="))),
                "{name}: {k} reached the command:\n{}",
                out.text
            );
        }
        has(&out.text, "NEOCODE_TEST_VISIBLE=visible-value");
        ctx.sandbox.env_allow = vec!["DISPLAY".into()];
        let out = sh(&ctx, "env");
        assert!(out.text.contains("DISPLAY=:0"), "{name}: {}", out.text);
        assert!(!out.text.contains("TMUX="), "{name}: {}", out.text);
        assert!(!out.text.contains(SECRETS[0].1), "{name}");
    }
}

fn mode_of(p: &Path) -> u32 {
    std::fs::metadata(p).unwrap().permissions().mode() & 0o7777
}

/// `chmod u+s`, `g+s`, `6755` on a file, `g+s` on a folder, `install -m 4755` and a file
/// created with mode 04755 all fail or leave no set-id bit, in both boxes; `chmod +x` works.
#[test]
fn set_uid_and_set_gid_bits_cannot_be_set() {
    for (name, settings, s) in boxes("setid") {
        s.write("prog", "#!/bin/sh\necho hi\n");
        let out = sh(
            &ctx_in(&s, &settings),
            "chmod u+s prog; chmod g+s prog; chmod 6755 prog; mkdir d; chmod g+s d; \
             install -m 4755 prog prog2; chmod +x prog; \
             python3 -c \"import os; os.close(os.open('made', os.O_CREAT | os.O_WRONLY, 0o4755))\" 2>&1 || touch made; \
             echo end",
        );
        assert_ran_saying(&out, name, "end", "Operation not permitted");
        assert_eq!(
            mode_of(&s.root.join("prog")) & 0o6000,
            0,
            "{name}: {}",
            out.text
        );
        assert_eq!(
            mode_of(&s.root.join("prog")) & 0o100,
            0o100,
            "{name}: chmod +x failed"
        );
        assert_eq!(mode_of(&s.root.join("d")) & 0o6000, 0, "{name}");
        assert_eq!(mode_of(&s.root.join("made")) & 0o6000, 0, "{name}");
        if exists(&s.root.join("prog2")) {
            assert_eq!(mode_of(&s.root.join("prog2")) & 0o6000, 0, "{name}");
        }
    }
}
