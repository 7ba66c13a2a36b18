//! The cost of language-server diagnostics per edit (issue 41), for docs/PERFORMANCE.md:
//!
//! ```text
//! lsp_cost PYRIGHT_LANGSERVER|CLANGD [EDITS]
//! ```
//!
//! In a scratch workspace: the first edit of a Python file (starts and initialises pyright,
//! then waits for the file's diagnostics) or, when the program is named `clangd`, of a C
//! file, then EDITS (default 20) edits on the warm server,
//! alternating a type error and its fix; each is timed from the sync to the diagnostics.
//! Then the same call for a file no server serves (the cost a workspace without servers pays).
// Tests, benchmarks and examples may unwrap: a failure there is the report.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use neocode::runtime::extensions::lsp::{LspManager, LspSettings};

fn main() {
    let mut args = std::env::args().skip(1);
    let server = args
        .next()
        .expect("usage: lsp_cost PYRIGHT_LANGSERVER|CLANGD [EDITS]");
    let edits: usize = args.next().map_or(20, |n| n.parse().unwrap());
    let root = std::env::temp_dir().join(format!("neocode-lsp-cost-{}", std::process::id()));
    std::fs::create_dir_all(&root).unwrap();
    let root = root.canonicalize().unwrap();
    let c = server.ends_with("clangd");
    let (name, file, broken, fixed) = if c {
        let broken = "int add(int a, int b) { return a + b; }\n\nint main(void) {\n    int total = add(1);\n    return total;\n}\n";
        (
            "clangd",
            "main.c",
            broken.to_string(),
            broken.replace("add(1)", "add(1, 2)"),
        )
    } else {
        std::fs::write(root.join("pyproject.toml"), "[project]\nname = \"cost\"\n").unwrap();
        let broken =
            "def add(a: int, b: int) -> int:\n    return a + b\n\n\ntotal: int = add(1, \"two\")\n";
        (
            "pyright",
            "calc.py",
            broken.to_string(),
            broken.replace("\"two\"", "2"),
        )
    };
    let mut settings = LspSettings {
        diagnostics_wait: Duration::from_secs(60),
        ..LspSettings::default()
    };
    settings
        .servers
        .iter_mut()
        .find(|s| s.name == name)
        .unwrap()
        .command = server;
    let m = LspManager::new(settings, &root);
    let edit = |text: &str| {
        std::fs::write(root.join(file), text).unwrap();
        let t = Instant::now();
        let d = m.after_edit(&[file]).expect("diagnostics");
        (t.elapsed(), d)
    };
    let (cold, d) = edit(&broken);
    println!(
        "first edit (start + initialise + diagnostics): {:.0} ms:{}",
        ms(cold),
        d.text
    );
    let mut warm: Vec<Duration> = (0..edits)
        .map(|i| {
            let (t, d) = edit(if i % 2 == 0 { &fixed } else { &broken });
            assert_eq!(d.report.errors, usize::from(i % 2 == 1));
            t
        })
        .collect();
    warm.sort();
    println!(
        "warm edits ({edits}): min {:.1} ms, median {:.1} ms, max {:.1} ms",
        ms(warm[0]),
        ms(warm[warm.len() / 2]),
        ms(warm[warm.len() - 1])
    );
    std::fs::write(root.join("notes.txt"), "x\n").unwrap();
    let t = Instant::now();
    for _ in 0..1000 {
        assert!(m.after_edit(&["notes.txt"]).is_none());
    }
    println!(
        "a file no server serves: {:.2} µs per edit",
        t.elapsed().as_secs_f64() * 1e6 / 1000.0
    );
    drop(m);
    std::fs::remove_dir_all(&root).unwrap();
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}
