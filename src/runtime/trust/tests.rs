use std::path::{Path, PathBuf};

use super::*;
use crate::runtime::policy::permissions::List;
use crate::runtime::tools::sandbox::trust as folder;

struct W {
    _dir: tempfile::TempDir,
    home: PathBuf,
    root: PathBuf,
}

fn ws() -> W {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    let root = dir.path().join("ws");
    std::fs::create_dir_all(&root).unwrap();
    let root = root.canonicalize().unwrap();
    W {
        _dir: dir,
        home,
        root,
    }
}

fn write(root: &Path, rel: &str, text: &str) {
    let p = root.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

const HOOKS: &str =
    r#"{"hooks": {"SessionStart": [{"hooks": [{"type": "command", "command": "touch /tmp/x"}]}]}}"#;

#[test]
fn a_workspace_goes_from_untrusted_to_trusted_to_changed() {
    let w = ws();
    assert_eq!(
        Admission::check(&w.home, &w.root).state,
        TrustState::NothingDeclared
    );
    // Nothing is read or written for a workspace that declares nothing.
    assert!(!w.home.exists());

    write(&w.root, ".neocode/hooks.json", HOOKS);
    write(
        &w.root,
        ".neocode/permissions.toml",
        "allow = [\"*\"]\ndeny = [\"run_command(rm *)\"]\n",
    );
    write(
        &w.root,
        ".neocode/skills/x/SKILL.md",
        "---\nname: x\ndescription: d\n---\nbody\n",
    );
    let a = Admission::check(&w.home, &w.root);
    assert_eq!(
        a.state,
        TrustState::Untrusted {
            record_problem: None
        }
    );
    assert!(a.hooks(&w.home).unwrap().commands().is_empty());
    let rules = a.rules(&w.home).unwrap();
    assert_eq!(rules.rules().len(), 1, "only the deny rule");
    assert_eq!(rules.rules()[0].list, List::Deny);
    assert_eq!(rules.ignored().len(), 1);
    let skills = a.skills(&w.home);
    assert!(skills.skills.is_empty());
    assert!(skills.workspace_left_out.is_some());
    let why = a.left_out().unwrap();
    assert!(
        why.contains("not trusted") && why.contains("1 hook, 2 rules, 1 skill"),
        "{why}"
    );
    assert!(why.contains("--trust-workspace"), "{why}");

    let r = trust(&w.home, &w.root).unwrap();
    assert!(
        matches!(r.state, TrustState::Trusted { .. }),
        "{:?}",
        r.state
    );
    let a = Admission::check(&w.home, &w.root);
    assert_eq!(a.hooks(&w.home).unwrap().commands().len(), 1);
    assert_eq!(a.rules(&w.home).unwrap().rules().len(), 2);
    assert_eq!(a.skills(&w.home).skills.len(), 1);
    assert!(a.left_out().is_none());

    // A new hook: asked again, naming the file and the entry.
    write(
        &w.root,
        ".neocode/hooks.json",
        r#"{"hooks": {"SessionStart": [{"hooks": [{"type": "command", "command": "touch /tmp/x"}]}],
            "PreToolUse": [{"matcher": "run_command", "hooks": [{"type": "command", "command": "echo allow"}]}]}}"#,
    );
    write(&w.root, ".mcp.json", "{}");
    let a = Admission::check(&w.home, &w.root);
    let TrustState::Changed(c) = &a.state else {
        panic!("{:?}", a.state)
    };
    assert_eq!(c.modified, [".neocode/hooks.json"]);
    assert_eq!(c.added, [".mcp.json"]);
    assert_eq!(
        c.new_entries,
        [".neocode/hooks.json: PreToolUse run_command echo allow"]
    );
    assert!(a.hooks(&w.home).unwrap().commands().is_empty());
    let why = a.left_out().unwrap();
    assert!(why.contains("changed since you trusted it"), "{why}");
    assert!(why.contains("echo allow"), "{why}");

    // Removed files count too.
    trust(&w.home, &w.root).unwrap();
    std::fs::remove_file(w.root.join(".mcp.json")).unwrap();
    let TrustState::Changed(c) = Admission::check(&w.home, &w.root).state else {
        panic!()
    };
    assert_eq!(c.removed, [".mcp.json"]);

    // Revoked: untrusted again, and the folder record is cleared too.
    assert!(revoke(&w.home, &w.root).unwrap());
    assert!(matches!(
        Admission::check(&w.home, &w.root).state,
        TrustState::Untrusted { .. }
    ));
    assert!(!folder::is_trusted(&w.home, &w.root));
}

#[test]
fn a_damaged_record_trusts_nothing() {
    let w = ws();
    write(&w.root, ".neocode/hooks.json", HOOKS);
    trust(&w.home, &w.root).unwrap();
    std::fs::write(record::path(&w.home), "{\"version\": 1, \"workspaces\": ").unwrap();
    let a = Admission::check(&w.home, &w.root);
    let TrustState::Untrusted {
        record_problem: Some(p),
    } = &a.state
    else {
        panic!("{:?}", a.state)
    };
    assert!(p.contains("damaged"), "{p}");
    assert!(a.hooks(&w.home).unwrap().commands().is_empty());
}

#[test]
fn a_record_under_another_root_does_not_count() {
    let w = ws();
    let other = w.root.parent().unwrap().join("other");
    std::fs::create_dir_all(&other).unwrap();
    write(&w.root, ".neocode/hooks.json", HOOKS);
    write(&other, ".neocode/hooks.json", HOOKS);
    trust(&w.home, &other).unwrap();
    assert!(!Admission::check(&w.home, &w.root).uses_workspace());
    assert!(Admission::check(&w.home, &other).uses_workspace());
}

#[test]
fn an_own_write_refreshes_only_what_was_trusted() {
    let w = ws();
    // Nothing declared before: the user's own rule file is trusted after the write.
    let own = OwnWrite::begin(&w.home, &w.root);
    write(
        &w.root,
        ".neocode/permissions.toml",
        "allow = [\"run_command(ls)\"]\n",
    );
    assert!(own.done(".neocode/permissions.toml").unwrap());
    assert!(Admission::check(&w.home, &w.root).uses_workspace());

    // Trusted before, but another file changed meanwhile: left for the user to review.
    let own = OwnWrite::begin(&w.home, &w.root);
    write(
        &w.root,
        ".neocode/permissions.toml",
        "allow = [\"run_command(ls *)\"]\n",
    );
    write(&w.root, ".neocode/hooks.json", HOOKS);
    assert!(!own.done(".neocode/permissions.toml").unwrap());
    assert!(!Admission::check(&w.home, &w.root).uses_workspace());

    // Untrusted before: nothing is recorded.
    let own = OwnWrite::begin(&w.home, &w.root);
    assert!(!own.was_trusted());
    write(
        &w.root,
        ".neocode/permissions.toml",
        "allow = [\"run_command(ls)\"]\n",
    );
    assert!(!own.done(".neocode/permissions.toml").unwrap());
    assert!(!Admission::check(&w.home, &w.root).uses_workspace());
}

#[test]
fn the_review_lists_every_entry() {
    let w = ws();
    write(&w.root, ".neocode/hooks.json", HOOKS);
    write(
        &w.root,
        ".neocode/permissions.toml",
        "ask = [\"run_command(git push *)\"]\n",
    );
    write(
        &w.root,
        ".neocode/skills/x/SKILL.md",
        "---\nname: deploy\ndescription: d\n---\n",
    );
    write(&w.root, ".neocode/skills/bad/SKILL.md", "no front matter");
    write(&w.root, ".claude/commands/c.md", "c");
    let r = review(&w.home, &w.root);
    assert!(r.needs_answer());
    assert_eq!(r.declared.hooks.len(), 1);
    assert_eq!(r.declared.hooks[0].command, "touch /tmp/x");
    assert_eq!(r.declared.hooks[0].matcher, "*");
    assert_eq!(r.declared.rules[0].text, "run_command(git push *)");
    assert_eq!(r.declared.rules[0].line, 1);
    let names: Vec<&str> = r.declared.skills.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["bad", "deploy"]);
    assert_eq!(r.declared.problems.len(), 1);
    assert_eq!(r.declared.other, [".claude/commands/c.md"]);
    assert_eq!(r.files.len(), 5);
}
