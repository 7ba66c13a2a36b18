use std::path::Path;

use proptest::prelude::*;
use serde_json::json;

use super::derive::{append_rule, derive_rule, derive_rules};
use super::*;

fn setup(ws_rules: &str, home_rules: &str) -> (tempfile::TempDir, Rules) {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    let home = dir.path().join("home");
    std::fs::create_dir_all(ws.join(".neocode")).unwrap();
    std::fs::create_dir_all(&home).unwrap();
    if !ws_rules.is_empty() {
        std::fs::write(ws.join(".neocode/permissions.toml"), ws_rules).unwrap();
    }
    if !home_rules.is_empty() {
        std::fs::write(home.join("config.toml"), home_rules).unwrap();
    }
    let rules = Rules::load_with_home_dir(&home, &ws, Some(Path::new("/home/u"))).unwrap();
    (dir, rules)
}

fn cmd(rules: &Rules, c: &str) -> Decision {
    rules.decide("run_command", &json!({ "command": c }))
}

const ISSUE_RULES: &str = r#"
allow = ["run_command(cargo test *)", "run_command(git diff*)", "edit_file(src/**)"]
ask   = ["run_command(git push *)"]
deny  = ["run_command(rm *)", "read_file(.env)", "mcp__github__delete_repo"]
"#;

#[test]
fn the_issue_example_decides_as_documented() {
    let (_d, r) = setup(ISSUE_RULES, "");
    let d = cmd(&r, "cargo test -p core");
    assert_eq!(d.verdict, Verdict::Allow);
    let rule = d.rule.unwrap();
    assert_eq!(rule.text, "run_command(cargo test *)");
    assert_eq!(rule.line, 2);
    assert!(rule.file.ends_with(".neocode/permissions.toml"));
    assert_eq!(cmd(&r, "git push origin main").verdict, Verdict::Ask);
    assert_eq!(cmd(&r, "rm -rf target").verdict, Verdict::Deny);
    assert_eq!(cmd(&r, "curl evil.sh").verdict, Verdict::Default);
    assert_eq!(
        r.decide("edit_file", &json!({"path": "src/a/b.rs"}))
            .verdict,
        Verdict::Allow
    );
    assert_eq!(
        r.decide("edit_file", &json!({"path": "tests/a.rs"}))
            .verdict,
        Verdict::Default
    );
    assert_eq!(
        r.decide("mcp__github__delete_repo", &json!({})).verdict,
        Verdict::Deny
    );
    assert_eq!(
        r.decide("mcp__github__list_repos", &json!({})).verdict,
        Verdict::Default
    );
}

#[test]
fn one_unallowed_part_makes_a_compound_command_not_allowed() {
    let (_d, r) = setup(ISSUE_RULES, "");
    assert_eq!(cmd(&r, "cargo test && git diff").verdict, Verdict::Allow);
    assert_eq!(
        cmd(&r, "cargo test && curl x | grep y").verdict,
        Verdict::Default
    );
    // A shell reading its input runs whatever comes: that asks.
    assert_eq!(cmd(&r, "cargo test && curl x | sh").verdict, Verdict::Ask);
    assert_eq!(cmd(&r, "cargo test; rm -rf /").verdict, Verdict::Deny);
    assert_eq!(cmd(&r, "cargo test $(rm -rf /)").verdict, Verdict::Deny);
    assert_eq!(cmd(&r, "git diff `git push x`").verdict, Verdict::Ask);
    assert_eq!(
        cmd(&r, "bash -c 'cargo test && rm x'").verdict,
        Verdict::Deny
    );
    // What the splitter cannot account for asks, with the reason, even if it looks allowed.
    let d = cmd(&r, "eval cargo test");
    assert_eq!(d.verdict, Verdict::Ask);
    assert!(d.rule.is_none());
    assert!(d.reason.unwrap().contains("eval"));
    assert_eq!(cmd(&r, "cargo test 'unterminated").verdict, Verdict::Ask);
    assert_eq!(cmd(&r, "cargo test > out.txt").verdict, Verdict::Ask);
    assert_eq!(
        cmd(&r, "cargo test 2>&1 | git diff --stat").verdict,
        Verdict::Allow
    );
}

#[test]
fn deny_and_ask_see_through_wrappers_allow_does_not() {
    let (_d, r) = setup(ISSUE_RULES, "");
    for c in [
        "sudo rm -rf /",
        "env -i FOO=1 rm x",
        "timeout 5 rm x",
        "xargs rm < list",
        "nice -n 10 sudo -E rm x",
        "/usr/bin/env rm x",
    ] {
        assert_eq!(cmd(&r, c).verdict, Verdict::Deny, "{c}");
    }
    assert_eq!(cmd(&r, "sudo git push x").verdict, Verdict::Ask);
    // `cargo test *` does not allow `sudo cargo test`.
    assert_eq!(cmd(&r, "sudo cargo test").verdict, Verdict::Default);
    // An argument that happens to be `rm` is not a command.
    assert_eq!(cmd(&r, "git diff rm").verdict, Verdict::Allow);
}

#[test]
fn deny_beats_allow_from_any_file() {
    // The workspace allows everything; the personal config denies rm: deny wins, and the
    // reverse too.
    let (_d, r) = setup(
        "allow = [\"run_command\"]\n",
        "model = \"x\"\n[permissions]\ndeny = [\"run_command(rm *)\"]\n",
    );
    let d = cmd(&r, "rm -rf /");
    assert_eq!(d.verdict, Verdict::Deny);
    let rule = d.rule.unwrap();
    assert!(rule.file.ends_with("config.toml"));
    assert_eq!(rule.line, 3);
    assert_eq!(cmd(&r, "ls").verdict, Verdict::Allow);
    let (_d, r) = setup(
        "deny = [\"run_command(git push *)\"]\n",
        "[permissions]\nallow = [\"run_command(git *)\", \"*\"]\n",
    );
    assert_eq!(cmd(&r, "git push origin main").verdict, Verdict::Deny);
    assert_eq!(cmd(&r, "git status").verdict, Verdict::Allow);
}

#[test]
fn read_denials_cover_read_file_grep_and_list_dir() {
    let (_d, r) = setup(
        "deny = [\"read_file(.env)\", \"read_file(secrets/**)\", \"read_file(~/.ssh/**)\"]\nallow = [\"grep\", \"list_dir\"]\n",
        "",
    );
    for (tool, args) in [
        ("read_file", json!({"path": ".env"})),
        ("read_file", json!({"path": "config/../.env"})),
        ("read_file", json!({"path": "~/.ssh/id_ed25519"})),
        ("grep", json!({"pattern": "KEY", "path": ".env"})),
        ("grep", json!({"pattern": "KEY", "path": "secrets"})),
        ("list_dir", json!({"path": "secrets"})),
        ("list_dir", json!({"path": "secrets/sub"})),
    ] {
        assert_eq!(
            r.decide(tool, &args).verdict,
            Verdict::Deny,
            "{tool} {args}"
        );
    }
    assert_eq!(
        r.decide("grep", &json!({"pattern": "x"})).verdict,
        Verdict::Allow
    );
    assert_eq!(
        r.decide("read_file", &json!({"path": "src/main.rs"}))
            .verdict,
        Verdict::Default
    );
    let root = r.root.clone();
    assert!(r.read_denied(&root.join("deep/.env")).is_some());
    assert!(r.read_denied(&root.join("src/main.rs")).is_none());
}

#[test]
fn a_symlink_is_judged_by_its_target_too() {
    let (d, r) = setup(
        "allow = [\"read_file(src/**)\", \"edit_file(src/**)\"]\ndeny = [\"read_file(.env)\"]\n",
        "",
    );
    let ws = d.path().join("ws");
    std::fs::create_dir_all(ws.join("src")).unwrap();
    std::fs::write(ws.join(".env"), "KEY=1").unwrap();
    std::fs::write(d.path().join("outside.txt"), "x").unwrap();
    std::fs::write(ws.join("src/real.rs"), "").unwrap();
    std::os::unix::fs::symlink("../.env", ws.join("src/env-link")).unwrap();
    std::os::unix::fs::symlink("../../outside.txt", ws.join("src/out-link")).unwrap();
    let v = |tool: &str, p: &str| r.decide(tool, &json!({ "path": p })).verdict;
    assert_eq!(v("read_file", "src/env-link"), Verdict::Deny);
    assert_eq!(v("edit_file", "src/out-link"), Verdict::Default);
    assert_eq!(v("edit_file", "src/real.rs"), Verdict::Allow);
    assert_eq!(v("edit_file", "src/new.rs"), Verdict::Allow);
}

#[test]
fn malformed_files_name_the_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    let home = dir.path().join("home");
    std::fs::create_dir_all(ws.join(".neocode")).unwrap();
    let f = ws.join(".neocode/permissions.toml");
    for (src, line, needle) in [
        (
            "allow = [\n  \"run_command(ls)\",\n  \"run_comand(ls)\",\n]\n",
            3,
            "unknown tool `run_comand`",
        ),
        ("allow = [\"ls\"\n", 1, ""),
        ("\nalow = [\"run_command\"]\n", 2, "alow"),
        ("deny = [\"update_plan(x)\"]\n", 1, "take a pattern"),
        ("deny = [\"run_command(ls\"]\n", 1, "does not end with"),
        ("deny = [\"read_file(src/[)\"]\n", 1, "bad path pattern"),
    ] {
        std::fs::write(&f, src).unwrap();
        let e = Rules::load(&home, &ws).unwrap_err();
        assert_eq!(e.file, f, "{src}");
        assert_eq!(e.line, line, "{src}: {e}");
        assert!(e.message.contains(needle), "{src}: {e}");
        assert!(
            e.to_string()
                .starts_with(&format!("{}:{line}: ", f.display()))
        );
    }
}

#[test]
fn derived_rules_follow_the_heuristic() {
    let ws = Path::new("/ws");
    let d = |tool: &str, args: serde_json::Value| derive_rule(tool, &args, ws);
    assert_eq!(
        d("run_command", json!({"command": "cargo test -p core"})),
        "run_command(cargo test *)"
    );
    assert_eq!(
        d("run_command", json!({"command": "python3 test_stats.py"})),
        "run_command(python3 test_stats.py)"
    );
    assert_eq!(
        d("run_command", json!({"command": "git status"})),
        "run_command(git status)"
    );
    assert_eq!(
        derive_rules(
            "run_command",
            &json!({"command": "cargo build && ls -la"}),
            ws
        ),
        vec!["run_command(cargo build)", "run_command(ls -la)"]
    );
    assert_eq!(
        d("edit_file", json!({"path": "src/a/b.rs"})),
        "edit_file(src/a/**)"
    );
    assert_eq!(
        d("write_file", json!({"path": "Cargo.toml"})),
        "write_file(./*.toml)"
    );
    assert_eq!(
        d("edit_file", json!({"path": "Makefile"})),
        "edit_file(./Makefile)"
    );
    assert_eq!(d("update_plan", json!({})), "update_plan");
    // A derived rule allows the call it came from.
    let (dir, _) = setup("", "");
    let wsp = dir.path().join("ws");
    for (tool, args) in [
        ("run_command", json!({"command": "cargo test -p core"})),
        ("run_command", json!({"command": "python3 test_stats.py"})),
        ("edit_file", json!({"path": "src/a/b.rs"})),
        ("write_file", json!({"path": "Cargo.toml"})),
    ] {
        let rule = derive_rule(tool, &args, &wsp);
        append_rule(&Rules::workspace_file(&wsp), List::Allow, &rule).unwrap();
        let r = Rules::load(&dir.path().join("home"), &wsp).unwrap();
        assert_eq!(r.decide(tool, &args).verdict, Verdict::Allow, "{rule}");
    }
}

/// Issue 35: "always" on a compound command proposed `run_command(sed *)`, wider than the
/// `sed` approved and still asking for the other three parts; it offered a rule where none
/// could allow the command; a new file got that one path.
#[test]
fn always_proposes_one_narrow_rule_per_part_and_none_where_no_rule_can_allow() {
    let (dir, r) = setup(
        "allow = [\"run_command(git status)\"]\nask = [\"run_command(git push *)\"]\n",
        "",
    );
    let ws = dir.path().join("ws");
    let run = |c: &str| json!({ "command": c });
    let line = "sed -i 's/old name/new name/' app.py && git mv old.py new.py && rm -f stale.py && python3 -m unittest";
    let proposed = r.propose("run_command", &run(line));
    assert_eq!(
        proposed,
        vec![
            "run_command(sed -i s/old*name/new*name/ app.py)",
            "run_command(git mv *)",
            "run_command(rm -f stale.py)",
            "run_command(python3 -m unittest)",
        ]
    );
    // Together they allow the whole line, and each is no wider than its part.
    let granted = r.with_session_grants(&proposed);
    assert_eq!(cmd(&granted, line).verdict, Verdict::Allow);
    assert_eq!(
        cmd(&granted, "sed -i 's/x/y/' other.py").verdict,
        Verdict::Default
    );
    assert_eq!(cmd(&granted, "rm -rf /").verdict, Verdict::Default);
    // A part a rule allows already needs no new rule.
    assert_eq!(
        r.propose("run_command", &run("git status && cargo build")),
        vec!["run_command(cargo build)"]
    );
    // No rule can allow: a redirect to a file, an `ask` rule, a part the grammar cannot read.
    for c in [
        "git checkout -- a.py > log.txt",
        "git push origin main",
        "cargo build && git push",
        "eval \"$CMD\"",
        "for f in *; do rm $f; done",
    ] {
        assert_eq!(
            r.propose("run_command", &run(c)),
            Vec::<String>::new(),
            "{c}"
        );
    }
    assert_eq!(
        r.propose("run_command", &json!({})),
        Vec::<String>::new(),
        "no command: never the whole tool"
    );
    // File tools: a folder, or the root's files of the extension; each allows the call.
    for (tool, path, rule) in [
        ("write_file", "notes.py", "write_file(./*.py)"),
        ("edit_file", "src/deep/a.rs", "edit_file(src/deep/**)"),
        ("write_file", "[x]/a.txt", "write_file([[]x[]]/**)"),
    ] {
        let args = json!({ "path": path });
        assert_eq!(r.propose(tool, &args), vec![rule.to_string()], "{path}");
        let granted = r.with_session_grants(&[rule.to_string()]);
        assert_eq!(
            granted.decide(tool, &args).verdict,
            Verdict::Allow,
            "{rule}"
        );
    }
    let granted = r.with_session_grants(&["write_file(./*.py)".to_string()]);
    assert_eq!(
        granted
            .decide("write_file", &json!({"path": "sub/x.py"}))
            .verdict,
        Verdict::Default,
        "the root's files only"
    );
    assert!(ws.is_dir());
}

#[test]
fn append_rule_keeps_the_rest_of_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("config.toml");
    std::fs::write(
        &cfg,
        "# my settings\nmodel = \"gpt\"\n\n[mcp_servers.gh]\ncommand = \"gh-mcp\"\n",
    )
    .unwrap();
    assert!(append_rule(&cfg, List::Allow, "run_command(git diff *)").unwrap());
    assert!(!append_rule(&cfg, List::Allow, "run_command(git diff *)").unwrap());
    assert!(append_rule(&cfg, List::Deny, "read_file(.env)").unwrap());
    let text = std::fs::read_to_string(&cfg).unwrap();
    assert!(
        text.starts_with("# my settings\nmodel = \"gpt\"\n"),
        "{text}"
    );
    assert!(
        text.contains("[mcp_servers.gh]\ncommand = \"gh-mcp\""),
        "{text}"
    );
    let v: toml::Table = toml::from_str(&text).unwrap();
    assert_eq!(
        v["permissions"]["allow"][0].as_str(),
        Some("run_command(git diff *)")
    );
    assert_eq!(
        v["permissions"]["deny"][0].as_str(),
        Some("read_file(.env)")
    );
    let ws_file = dir.path().join("ws/.neocode/permissions.toml");
    assert!(append_rule(&ws_file, List::Ask, "run_command(git push *)").unwrap());
    let v: toml::Table = toml::from_str(&std::fs::read_to_string(&ws_file).unwrap()).unwrap();
    assert_eq!(v["ask"][0].as_str(), Some("run_command(git push *)"));
    let e = append_rule(&ws_file, List::Allow, "nosuchtool").unwrap_err();
    assert!(e.message.contains("unknown tool"), "{e}");
}

// The property: a compound command built from allowed and unallowed simple commands is
// allowed exactly when all its parts are.

const ALLOWED: &[&str] = &[
    "cargo test -p core",
    "git diff --stat",
    "ls -la",
    "echo 'a b'",
];
const UNALLOWED: &[&str] = &[
    "curl evil.sh",
    "python3 x.py",
    "git push origin",
    "cat /etc/passwd",
];

#[derive(Debug, Clone)]
enum Tree {
    Leaf(bool, usize),
    Join(Box<Tree>, &'static str, Box<Tree>),
    Subshell(Box<Tree>),
    Subst(Box<Tree>),
}

impl Tree {
    fn render(&self) -> String {
        match self {
            Tree::Leaf(true, i) => ALLOWED[*i % ALLOWED.len()].to_string(),
            Tree::Leaf(false, i) => UNALLOWED[*i % UNALLOWED.len()].to_string(),
            Tree::Join(a, op, b) => format!("{} {op} {}", a.render(), b.render()),
            Tree::Subshell(t) => format!("( {} )", t.render()),
            // A substitution as an argument of an allowed command.
            Tree::Subst(t) => format!("echo $( {} )", t.render()),
        }
    }

    fn all_allowed(&self) -> bool {
        match self {
            Tree::Leaf(a, _) => *a,
            Tree::Join(a, _, b) => a.all_allowed() && b.all_allowed(),
            Tree::Subshell(t) | Tree::Subst(t) => t.all_allowed(),
        }
    }
}

fn tree() -> impl Strategy<Value = Tree> {
    let leaf = (any::<bool>(), 0usize..4).prop_map(|(a, i)| Tree::Leaf(a, i));
    leaf.prop_recursive(4, 24, 2, |inner| {
        prop_oneof![
            (
                inner.clone(),
                prop::sample::select(vec!["&&", "||", ";", "|"]),
                inner.clone()
            )
                .prop_map(|(a, op, b)| Tree::Join(Box::new(a), op, Box::new(b))),
            inner.clone().prop_map(|t| Tree::Subshell(Box::new(t))),
            inner.prop_map(|t| Tree::Subst(Box::new(t))),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]
    #[test]
    fn compound_allowed_exactly_when_every_part_is(t in tree()) {
        let rules = property_rules();
        let line = t.render();
        let d = cmd(&rules, &line);
        let want = if t.all_allowed() { Verdict::Allow } else { Verdict::Default };
        prop_assert_eq!(d.verdict, want, "{}", line);
    }
}

fn property_rules() -> Rules {
    let mut r = Rules::empty(Path::new("/ws"));
    for text in [
        "run_command(cargo test *)",
        "run_command(git diff *)",
        "run_command(ls *)",
        "run_command(echo *)",
    ] {
        let rule = r
            .compile(
                List::Allow,
                text,
                Path::new("/ws/.neocode/permissions.toml"),
                1,
            )
            .unwrap();
        r.rules.push(rule);
    }
    r
}

/// Issue 34: a deny rule names the program, whatever path, wrapper or shell string it comes
/// through, and a computed word may be anything; an allow rule still matches as written.
#[test]
fn deny_rules_see_programs_through_paths_wrappers_and_shell_strings() {
    let (_d, r) = setup(ISSUE_RULES, "");
    for c in [
        "/bin/rm -rf x",
        "./rm x",
        "/usr/bin/env rm x",
        "command rm x",
        "exec rm x",
        "exec -a name rm x",
        "busybox rm x",
        "sudo -u root rm -rf /",
        "env -u HOME rm x",
        "env -S 'rm -rf x'",
        "timeout -s KILL 5 rm x",
        "nice -n 5 /usr/bin/rm x",
        "flock /tmp/l rm x",
        "find . -name '*.o' -exec rm {} +",
        "xargs -I {} rm {}",
        "sudo sh -c 'rm -rf /'",
        "watch -n 1 'rm x'",
        "bash <<'EOF'\nrm -rf x\nEOF",
        "cat <<-EOF\n\t$(rm -rf x)\n\tEOF",
        "cat <<EOF\n`rm -rf x`\nEOF",
        "$'\\x72m' -rf x",
    ] {
        assert_eq!(cmd(&r, c).verdict, Verdict::Deny, "{c}");
    }
    assert_eq!(cmd(&r, "git $(echo push) origin").verdict, Verdict::Ask);
    assert_eq!(cmd(&r, "git pu* origin").verdict, Verdict::Ask);
    assert_eq!(cmd(&r, "git log $X").verdict, Verdict::Default);
    // Allow rules match as written: a path or a wrapper is another program.
    assert_eq!(cmd(&r, "./cargo test").verdict, Verdict::Default);
    assert_eq!(cmd(&r, "sudo cargo test").verdict, Verdict::Default);
    assert_eq!(cmd(&r, "cargo test &>/dev/null").verdict, Verdict::Allow);
}

#[test]
fn a_web_fetch_rule_covers_its_host_and_subdomains_only() {
    let (_d, rules) = setup(
        r#"allow = ["web_fetch(domain:docs.rs)"]
deny = ["web_fetch(evil.example)"]"#,
        "",
    );
    let v = |url: &str| rules.decide("web_fetch", &json!({ "url": url })).verdict;
    assert_eq!(v("https://docs.rs/serde"), Verdict::Allow);
    assert_eq!(v("https://api.docs.rs/x"), Verdict::Allow);
    assert_eq!(v("https://notdocs.rs/"), Verdict::Default);
    assert_eq!(v("https://docs.rs.evil.example/"), Verdict::Deny);
    assert_eq!(v("https://EVIL.example/"), Verdict::Deny);
    assert_eq!(v("not a url"), Verdict::Default);
    let ws = std::path::Path::new("/ws");
    assert_eq!(
        derive_rule(
            "web_fetch",
            &json!({"url": "https://api.github.com/repos"}),
            ws
        ),
        "web_fetch(domain:api.github.com)"
    );
    for bad in ["web_fetch()", "web_fetch(domain:)", "web_fetch(a b)"] {
        assert!(parse_rule(bad, ws, None).is_err(), "{bad} should not parse");
    }
}
