//! Unit tests of the rewind: the paths it refuses, modes, and rewound titles.

mod paths {
    use super::super::*;

    #[test]
    fn control_files_the_home_and_escapes_are_refused_and_modes_masked() {
        let t = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let root = t.path().canonicalize().unwrap_or_else(|e| panic!("{e}"));
        std::fs::create_dir_all(root.join(".git/hooks")).unwrap_or_else(|e| panic!("{e}"));
        std::fs::create_dir_all(root.join("home")).unwrap_or_else(|e| panic!("{e}"));
        std::os::unix::fs::symlink(".git", root.join("g")).unwrap_or_else(|e| panic!("{e}"));
        let home = Some(root.join("home"));
        let r = |rel: &str| refusal(&root, home.as_deref(), rel);
        for rel in [
            ".git/config",
            ".git/hooks/pre-commit",
            ".neocode/hooks.json",
            "sub/.git",
            "g/hooks/post-checkout",
            "home/config.toml",
            "../x",
            "/etc/passwd",
        ] {
            assert!(r(rel).is_some(), "{rel}");
        }
        assert!(r("src/main.rs").is_none());
        assert!(r(".gitignore").is_none());
        assert_eq!(safe_mode(0o4755), 0o755);
        assert_eq!(safe_mode(0o2777), 0o755);
        assert_eq!(safe_mode(0o1666), 0o644);
        assert_eq!(safe_mode(0o600), 0o600);
    }
}

mod titles {
    use super::super::rewound_title;

    #[test]
    fn a_rewound_session_says_where_it_went_back_to_once() {
        assert_eq!(
            rewound_title("Fix the tests", 12),
            "↺ before #12 · Fix the tests"
        );
        assert_eq!(
            rewound_title("↺ before #12 · Fix the tests", 5),
            "↺ before #5 · Fix the tests"
        );
        assert_eq!(
            rewound_title("before #x · Notes", 3),
            "↺ before #3 · before #x · Notes"
        );
    }
}
