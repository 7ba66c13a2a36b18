//! `run_command`: `bash -c` (`sh -c` where bash is missing: [`Interpreter`](crate::runtime::tools::interpreter::Interpreter)) in the
//! workspace root, confined by the sandbox helper, with a time limit, an output cap (head
//! and tail kept), cancellation, and every process it started killed when it ends, times
//! out, is cancelled, or neocode dies (the helper's PID namespace or subreaper; the process
//! group as a last resort).

mod argv;
mod child;
mod report;
mod temp;
mod tool;

pub(super) use tool::SPEC;

#[cfg(test)]
mod tests {
    use super::child::Capture;
    use super::temp::{owner_pid, sweep_stale};

    #[test]
    fn only_exact_command_folder_names_have_an_owner() {
        assert_eq!(owner_pid("neocode-cmd-1234-0-0badf00d"), Some(1234));
        assert_eq!(owner_pid("neocode-cmd-77-12-1a2b3c4d"), Some(77));
        for name in [
            "neocode-cmd-",
            "neocode-cmd-1234",
            "neocode-cmd-1234-0",
            "neocode-cmd-1234-0-",
            "neocode-cmd-0-0-00000000",
            "neocode-cmd--1-0-00000000",
            "neocode-cmd-12x-0-00000000",
            "neocode-cmd-1234-0-0badf00d-extra",
            "neocode-cmd-1234-0-nothex",
            "neocode-cmd-99999999999-0-00000000",
            "other-1234-0-00000000",
        ] {
            assert_eq!(owner_pid(name), None, "{name}");
        }
    }

    #[test]
    fn sweep_removes_folders_of_dead_owners_only() {
        let base = tempfile::tempdir().unwrap();
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let dead = child.id();
        child.wait().unwrap();
        let mkdir = |name: String| {
            let p = base.path().join(name);
            std::fs::create_dir(&p).unwrap();
            std::fs::write(p.join("left.txt"), "x").unwrap();
            p
        };
        let gone = mkdir(format!("neocode-cmd-{dead}-0-00000000"));
        let mine = mkdir(format!("neocode-cmd-{}-0-00000000", std::process::id()));
        // pid 1 is alive and, for a test user, not ours to signal (EPERM): kept.
        let init = mkdir("neocode-cmd-1-0-00000000".into());
        let other = mkdir(format!("neocode-cmd-{dead}-notes"));
        let file = base.path().join(format!("neocode-cmd-{dead}-1-00000000"));
        std::fs::write(&file, "a file, not a folder").unwrap();
        let link = base.path().join(format!("neocode-cmd-{dead}-2-00000000"));
        std::os::unix::fs::symlink(&mine, &link).unwrap();
        sweep_stale(base.path());
        assert!(!gone.exists(), "the dead owner's folder stays");
        for kept in [&mine, &init, &other, &file, &link] {
            assert!(
                kept.symlink_metadata().is_ok(),
                "{} was removed",
                kept.display()
            );
        }
        assert!(mine.join("left.txt").exists());
    }

    #[test]
    fn capture_keeps_head_and_tail() {
        let mut c = Capture::new(1024);
        for i in 0..1000 {
            c.push(format!("line {i:04}\n").as_bytes());
        }
        let t = c.text();
        assert!(t.starts_with("line 0000\n"), "{t}");
        assert!(t.ends_with("line 0999\n"), "{t}");
        assert!(t.contains("bytes cut"));
        assert_eq!(c.total, 10_000);
        assert_eq!(c.cut(), 10_000 - 1024);
    }
}
