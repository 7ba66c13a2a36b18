//! Typed verification receipts: what a test, build, lint or typecheck command established.
//! `run_command` attaches one to its result's metadata (`verification`) when the command is a
//! known check; the nonoka dialect of the bridge sends it as nonoka's
//! `NonokaVerificationReceipt` and validates the ones the host sends with its own results.
//!
//! Classification is by known programs, not by running anything: the first segment of the
//! command line (split at `&&`, `||`, `;` and `|`, quotes respected) whose program, after
//! `NAME=value` assignments and `timeout`/`env`/`time`/`npx`/`uv run`/… wrappers, is a
//! known checker. `NONOKA_VERIFY=focused` or `=full` in front sets the level; without it a
//! check that names what it runs (a path or a filter after the runner) is `focused`, a bare
//! runner `full`.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// How the check came out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Status {
    /// It ran and succeeded (a test run: at least one test executed).
    Passed,
    /// It ran and failed (exit code not 0, killed, timed out).
    Failed,
    /// It ran, but its outcome does not show the check (no test ran, no count in the output,
    /// the exit status is another program's in a pipeline).
    Unavailable,
    /// It did not run to an end (cancelled).
    NotRun,
}

/// A focused check of the change, or a broad suite.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Level {
    Focused,
    Full,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Kind {
    Test,
    Build,
    Lint,
    Typecheck,
    Custom,
}

/// Whether the output the receipt describes was seen whole.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Completeness {
    Complete,
    Partial,
    Unknown,
}

/// nonoka's `NonokaVerificationReceipt`, field for field. Unknown fields of a receipt the
/// host sends are ignored; the required ones must be there with their types.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Receipt {
    pub status: Status,
    pub level: Level,
    pub kind: Kind,
    pub command: String,
    pub cwd: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i64>,
    pub timed_out: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_seconds: Option<f64>,
    /// Output was cut before it was kept.
    pub truncated: bool,
    pub completeness: Completeness,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub collected_tests: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub executed_tests: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deselected_tests: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure_summary: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub artifact_ref: Option<String>,
}

/// How a finished command ended, as `run_command` saw it.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub(crate) struct Ended {
    /// `None`: killed by a signal (or no status).
    pub exit_code: Option<i32>,
    pub timed_out: bool,
    pub cancelled: bool,
    /// Output bytes cut from the kept text.
    pub truncated: bool,
    pub timeout_secs: u64,
}

fn lower(s: &str) -> String {
    s.to_ascii_lowercase()
}

/// A receipt that does not read: the field and what is wrong with it.
#[derive(Debug, thiserror::Error)]
#[error("at `{path}`: {problem}")]
pub(crate) struct ReceiptError {
    path: String,
    problem: serde_json::Error,
}

impl Receipt {
    /// Checks a receipt the host sent (`result.verification`): the message names the field.
    pub(crate) fn parse(value: &Value) -> Result<Receipt, ReceiptError> {
        serde_path_to_error::deserialize::<_, Receipt>(value.clone()).map_err(|e| ReceiptError {
            path: e.path().to_string(),
            problem: e.into_inner(),
        })
    }

    /// One line for the model and the views: `[verification: test (focused) passed: 3
    /// passed, 0 failed: cargo test -p core]`.
    pub(crate) fn line(&self) -> String {
        let mut s = format!(
            "[verification: {} ({}) {}",
            word(&self.kind),
            word(&self.level),
            word(&self.status)
        );
        if let Some(summary) = self.summary.as_deref().filter(|t| !t.trim().is_empty()) {
            s.push_str(&format!(": {}", crate::sanitize::line(summary.trim())));
        }
        if self.truncated {
            s.push_str(" (output truncated)");
        }
        let command = crate::sanitize::line(&self.command);
        s.push_str(&format!("; `{command}`]"));
        s
    }
}

/// A unit variant's wire name (`passed`, `focused`, ...).
fn word<T: Serialize>(v: &T) -> String {
    match serde_json::to_value(v) {
        Ok(Value::String(s)) => s,
        _ => String::new(),
    }
}

/// The command line in segments: words of each, and whether a `|` follows it.
fn segments(command: &str) -> Vec<(Vec<String>, bool)> {
    let mut out = Vec::new();
    let mut words: Vec<String> = Vec::new();
    let mut word = String::new();
    let mut quote: Option<char> = None;
    let mut chars = command.chars().peekable();
    let end_word = |word: &mut String, words: &mut Vec<String>| {
        if !word.is_empty() {
            words.push(std::mem::take(word));
        }
    };
    while let Some(c) = chars.next() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => word.push(c),
            (None, '\'' | '"') => quote = Some(c),
            (None, '\\') => {
                if let Some(n) = chars.next() {
                    word.push(n);
                }
            }
            (None, c) if c.is_whitespace() => end_word(&mut word, &mut words),
            (None, ';' | '&' | '|' | '\n') => {
                end_word(&mut word, &mut words);
                let doubled = chars.peek() == Some(&c);
                if doubled {
                    chars.next();
                }
                // `&` alone sends to the background; `|` alone pipes.
                let piped = c == '|' && !doubled;
                out.push((std::mem::take(&mut words), piped));
            }
            (None, c) => word.push(c),
        }
    }
    end_word(&mut word, &mut words);
    out.push((words, false));
    out.retain(|(w, _)| !w.is_empty());
    out
}

/// The program words after assignments and wrappers, and the level an assignment names.
fn program(words: &[String]) -> (Vec<String>, Option<Level>) {
    let mut level = None;
    let mut i = 0;
    while i < words.len() {
        let w = &words[i];
        if let Some((name, value)) = w.split_once('=')
            && !name.is_empty()
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        {
            if name == "NONOKA_VERIFY" {
                level = match lower(value).as_str() {
                    "focused" => Some(Level::Focused),
                    "full" => Some(Level::Full),
                    _ => level,
                };
            }
            i += 1;
            continue;
        }
        match w.as_str() {
            "env" | "time" | "nice" | "npx" | "exec" | "command" => i += 1,
            "timeout" => {
                i += 1;
                while i < words.len() && words[i].starts_with('-') {
                    i += 1;
                }
                i += 1;
            }
            "uv" | "poetry" | "pdm" | "pipenv" | "bundle" | "rye" | "hatch"
                if words.get(i + 1).is_some_and(|n| n == "run" || n == "exec") =>
            {
                i += 2;
            }
            _ => break,
        }
    }
    (words[i.min(words.len())..].to_vec(), level)
}

/// What a program invocation checks, and how many words name the runner (the rest are its
/// arguments).
fn kind_of(p: &[String]) -> Option<(Kind, usize)> {
    let name = p
        .first()?
        .rsplit('/')
        .next()
        .unwrap_or_default()
        .to_string();
    let sub = p.get(1).map(String::as_str).unwrap_or_default();
    let script = |at: usize| -> Option<(Kind, usize)> {
        let s = p.get(at).map(String::as_str).unwrap_or_default();
        let k = match s {
            "test" | "tests" | "t" => Kind::Test,
            "build" => Kind::Build,
            "lint" => Kind::Lint,
            "typecheck" | "type-check" | "tsc" | "check-types" => Kind::Typecheck,
            _ => return None,
        };
        Some((k, at + 1))
    };
    match name.as_str() {
        "cargo" => match sub {
            "test" | "nextest" => Some((Kind::Test, 2)),
            "build" | "check" => Some((Kind::Build, 2)),
            "clippy" => Some((Kind::Lint, 2)),
            "fmt" if p.iter().any(|w| w == "--check") => Some((Kind::Lint, 2)),
            _ => None,
        },
        "pytest" | "py.test" | "jest" | "vitest" | "rspec" | "phpunit" | "tox" | "nox" => {
            Some((Kind::Test, 1))
        }
        "mypy" | "pyright" | "tsc" | "vue-tsc" => Some((Kind::Typecheck, 1)),
        "ruff" | "flake8" | "pylint" | "eslint" | "golangci-lint" | "shellcheck" => {
            Some((Kind::Lint, 1))
        }
        n if n.starts_with("python") || n.starts_with("pypy") => {
            let m = p.iter().position(|w| w == "-m")?;
            let (k, used) = kind_of(&p[m + 1..])?;
            Some((k, m + 1 + used))
        }
        "npm" | "pnpm" | "yarn" | "bun" => {
            if sub == "run" {
                script(2)
            } else {
                script(1)
            }
        }
        "go" => match sub {
            "test" => Some((Kind::Test, 2)),
            "build" => Some((Kind::Build, 2)),
            "vet" => Some((Kind::Lint, 2)),
            _ => None,
        },
        "make" | "just" => match sub {
            "test" | "tests" | "check" => Some((Kind::Test, 2)),
            "lint" => Some((Kind::Lint, 2)),
            "build" | "" => Some((Kind::Build, 2)),
            _ => None,
        },
        "dotnet" | "mvn" | "gradle" | "gradlew" | "./gradlew" => match sub {
            "test" => Some((Kind::Test, 2)),
            "build" | "compile" | "package" => Some((Kind::Build, 2)),
            _ => None,
        },
        _ => None,
    }
}

/// The check a command line runs: its kind, level, and whether a pipe takes its exit status.
pub(crate) fn classify(command: &str) -> Option<(Kind, Level, bool)> {
    for (words, piped) in segments(command) {
        let (p, level) = program(&words);
        if let Some((kind, used)) = kind_of(&p) {
            let targeted = p[used.min(p.len())..]
                .iter()
                .any(|a| !a.starts_with('-') || a.starts_with("-k") || a == "--exact");
            let level = level.unwrap_or(if targeted {
                Level::Focused
            } else {
                Level::Full
            });
            return Some((kind, level, piped));
        }
    }
    None
}

/// Test counts the output reports.
#[derive(Debug, Default, PartialEq)]
struct Counts {
    passed: u64,
    failed: u64,
    skipped: u64,
    deselected: u64,
    collected: Option<u64>,
    /// A count or a runner's own "no tests" was seen.
    seen: bool,
    /// `go test` package lines (`ok  pkg  0.1s`).
    go_ok: u64,
}

/// A count word: digits, with the punctuation runners put around them (`3`, `(3`, `3,`).
fn number(w: &str) -> Option<u64> {
    let digits = w.trim_matches(|c: char| matches!(c, ',' | ';' | '.' | ':' | '(' | ')' | '='));
    if digits.is_empty() || !digits.chars().all(|c| c.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

fn counts(output: &str) -> Counts {
    let mut c = Counts::default();
    for line in output.lines() {
        let t = line.trim();
        if t.starts_with("Test Suites:") || t.starts_with("Snapshots:") {
            continue;
        }
        if t.starts_with("ok ") || t.starts_with("ok\t") {
            c.go_ok += 1;
        }
        if t.contains("no tests ran") || t.contains("running 0 tests") {
            c.seen = true;
        }
        let words: Vec<&str> = t.split_whitespace().collect();
        for (i, w) in words.iter().enumerate() {
            let next = words
                .get(i + 1)
                .map(|n| n.trim_end_matches([',', ';', '.']));
            let Some(n) = number(w) else {
                continue;
            };
            if i > 0 && words[i - 1] == "collected" {
                c.collected = Some(c.collected.unwrap_or(0) + n);
                c.seen = true;
                continue;
            }
            match next {
                Some("passed") => c.passed += n,
                Some("failed" | "errors" | "error") => c.failed += n,
                Some("skipped" | "ignored") => c.skipped += n,
                Some("deselected") => c.deselected += n,
                Some("filtered") if words.get(i + 2).is_some_and(|o| o.starts_with("out")) => {
                    c.deselected += n
                }
                _ => continue,
            }
            c.seen = true;
        }
    }
    c
}

/// Up to three lines saying what failed.
fn failures(output: &str) -> Option<String> {
    let lines: Vec<&str> = output
        .lines()
        .map(str::trim)
        .filter(|l| {
            l.starts_with("FAILED")
                || l.starts_with("--- FAIL")
                || l.starts_with("error")
                || l.contains("panicked at")
                || l.starts_with("test result: FAILED")
        })
        .take(3)
        .collect();
    (!lines.is_empty()).then(|| crate::sanitize::line(&lines.join(" | ")).into_owned())
}

/// The receipt of a command `run_command` ran in `cwd`, if the command is a known check.
pub(crate) fn receipt(command: &str, cwd: &str, output: &str, ended: Ended) -> Option<Receipt> {
    let (kind, level, piped) = classify(command)?;
    let c = (kind == Kind::Test).then(|| counts(output));
    let executed = c.as_ref().filter(|c| c.seen).map(|c| c.passed + c.failed);
    let (status, summary) = if ended.cancelled {
        (Status::NotRun, "cancelled".to_string())
    } else if ended.timed_out {
        (
            Status::Failed,
            format!("timed out after {} s", ended.timeout_secs),
        )
    } else if piped {
        (
            Status::Unavailable,
            "its exit status is hidden by a pipe (the last command's counts)".to_string(),
        )
    } else {
        match ended.exit_code {
            None => (Status::Failed, "killed by a signal".to_string()),
            Some(code) if code != 0 => (Status::Failed, format!("exit code {code}")),
            Some(_) => match &c {
                None => (Status::Passed, "exit code 0".to_string()),
                Some(c) if c.passed > 0 && c.failed == 0 => (Status::Passed, String::new()),
                Some(c) if c.failed > 0 => (
                    Status::Unavailable,
                    "exit code 0, but the output reports failures".to_string(),
                ),
                Some(c) if c.seen => (Status::Unavailable, "no test ran".to_string()),
                Some(c) if c.go_ok > 0 => (Status::Passed, format!("{} package(s) ok", c.go_ok)),
                Some(_) => (
                    Status::Unavailable,
                    "exit code 0, but the output reports no test count".to_string(),
                ),
            },
        }
    };
    let summary = match (&c, summary.is_empty()) {
        (Some(c), _) if c.seen => {
            let mut s = format!("{} passed, {} failed", c.passed, c.failed);
            if c.skipped > 0 {
                s.push_str(&format!(", {} skipped", c.skipped));
            }
            if c.deselected > 0 {
                s.push_str(&format!(", {} deselected", c.deselected));
            }
            if !summary.is_empty() {
                s = format!("{summary}; {s}");
            }
            s
        }
        _ => summary,
    };
    let collected = c.as_ref().filter(|c| c.seen).map(|c| {
        c.collected
            .unwrap_or(c.passed + c.failed + c.skipped + c.deselected)
    });
    Some(Receipt {
        status,
        level,
        kind,
        command: command.to_string(),
        cwd: cwd.to_string(),
        exit_code: ended.exit_code.map(i64::from),
        timed_out: ended.timed_out,
        timeout_seconds: Some(ended.timeout_secs as f64),
        truncated: ended.truncated,
        completeness: if ended.truncated {
            Completeness::Partial
        } else {
            Completeness::Complete
        },
        collected_tests: collected,
        executed_tests: executed,
        deselected_tests: c
            .as_ref()
            .filter(|c| c.deselected > 0)
            .map(|c| c.deselected),
        summary: Some(summary),
        failure_summary: (status == Status::Failed)
            .then(|| failures(output))
            .flatten(),
        artifact_ref: None,
    })
}

/// Adds the receipt of `command` (if it is a check) to `run_command`'s result metadata as
/// `verification`.
pub(crate) fn attach(metadata: &mut Value, command: &str, cwd: &str, output: &str, ended: Ended) {
    if let Some(r) = receipt(command, cwd, output, ended)
        && let Ok(v) = serde_json::to_value(r)
        && let Some(m) = metadata.as_object_mut()
    {
        m.insert("verification".into(), v);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok() -> Ended {
        Ended {
            exit_code: Some(0),
            timeout_secs: 600,
            ..Ended::default()
        }
    }

    #[test]
    fn known_checks_are_classified_with_their_level() {
        use Kind::{Build, Lint, Test, Typecheck};
        use Level::{Focused, Full};
        let cases = [
            ("cargo test", Some((Test, Full, false))),
            ("cargo test -p core parse::", Some((Test, Focused, false))),
            (
                "NONOKA_VERIFY=focused pytest -q",
                Some((Test, Focused, false)),
            ),
            (
                "cd app && timeout 60 python3 -m pytest tests/test_a.py",
                Some((Test, Focused, false)),
            ),
            ("pytest -q | tail -20", Some((Test, Full, true))),
            ("npm run lint", Some((Lint, Full, false))),
            ("npx tsc --noEmit", Some((Typecheck, Full, false))),
            ("cargo clippy --all-targets", Some((Lint, Full, false))),
            ("go build ./...", Some((Build, Focused, false))),
            ("make", Some((Build, Full, false))),
            ("ls -la", None),
            ("echo 'cargo test'", None),
            ("cargo run", None),
        ];
        for (command, want) in cases {
            assert_eq!(classify(command), want, "{command}");
        }
    }

    #[test]
    fn cargo_test_counts_add_up_over_its_binaries() {
        let out = "running 3 tests\n...\ntest result: ok. 3 passed; 0 failed; 1 ignored; 0 measured; 2 filtered out; finished in 0.01s\n\
                   running 1 test\ntest result: ok. 1 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out\n";
        let r = receipt("cargo test parse", "/w", out, ok()).unwrap();
        assert_eq!(r.status, Status::Passed);
        assert_eq!(r.kind, Kind::Test);
        assert_eq!(r.level, Level::Focused);
        assert_eq!(
            (r.collected_tests, r.executed_tests, r.deselected_tests),
            (Some(7), Some(4), Some(2))
        );
        assert_eq!(
            r.summary.as_deref(),
            Some("4 passed, 0 failed, 1 skipped, 2 deselected")
        );
        assert_eq!(r.completeness, Completeness::Complete);
    }

    #[test]
    fn failures_no_tests_pipes_and_timeouts_are_not_passes() {
        let failed = receipt(
            "pytest -q",
            "/w",
            "FAILED tests/test_a.py::test_x - assert 1 == 2\n1 failed, 2 passed in 0.1s\n",
            Ended {
                exit_code: Some(1),
                ..ok()
            },
        )
        .unwrap();
        assert_eq!(failed.status, Status::Failed);
        assert_eq!(failed.executed_tests, Some(3));
        assert!(failed.failure_summary.unwrap().contains("test_x"));
        let none = receipt("pytest", "/w", "no tests ran in 0.01s\n", ok()).unwrap();
        assert_eq!(none.status, Status::Unavailable);
        let piped = receipt("pytest | tail -3", "/w", "2 passed\n", ok()).unwrap();
        assert_eq!(piped.status, Status::Unavailable);
        let slow = receipt(
            "cargo test",
            "/w",
            "",
            Ended {
                exit_code: None,
                timed_out: true,
                truncated: true,
                ..ok()
            },
        )
        .unwrap();
        assert_eq!(
            (slow.status, slow.completeness),
            (Status::Failed, Completeness::Partial)
        );
        let silent = receipt("cargo test", "/w", "", ok()).unwrap();
        assert_eq!(silent.status, Status::Unavailable);
        let odd = receipt("pytest", "/w", "test_1 passed\n", ok()).unwrap();
        assert_eq!(odd.status, Status::Unavailable, "test_1 is no count");
        let mixed = receipt("pytest", "/w", "1 failed, 2 passed\n", ok()).unwrap();
        assert_eq!(mixed.status, Status::Unavailable);
        let jest = receipt(
            "npx jest",
            "/w",
            "Test Suites: 1 passed, 1 total\nTests:       4 passed, 4 total\n",
            ok(),
        )
        .unwrap();
        assert_eq!(
            (jest.status, jest.executed_tests),
            (Status::Passed, Some(4))
        );
        let build = receipt("cargo build", "/w", "Finished", ok()).unwrap();
        assert_eq!((build.status, build.executed_tests), (Status::Passed, None));
    }

    #[test]
    fn a_host_receipt_is_validated_and_summarised_in_one_line() {
        let v = serde_json::json!({"status": "passed", "level": "focused", "kind": "test",
            "command": "NONOKA_VERIFY=focused pytest -q tests/test_api.py", "cwd": "/w",
            "exit_code": 0, "timed_out": false, "truncated": false, "completeness": "complete",
            "collected_tests": 2, "executed_tests": 2, "summary": "2 passed", "extra": 1});
        let r = Receipt::parse(&v).unwrap();
        assert_eq!(
            r.line(),
            "[verification: test (focused) passed: 2 passed; `NONOKA_VERIFY=focused pytest -q tests/test_api.py`]"
        );
        let mut bad = v.clone();
        bad["status"] = "green".into();
        assert!(
            Receipt::parse(&bad)
                .unwrap_err()
                .to_string()
                .contains("status")
        );
        let mut missing = v;
        missing.as_object_mut().unwrap().remove("timed_out");
        assert!(
            Receipt::parse(&missing)
                .unwrap_err()
                .to_string()
                .contains("timed_out")
        );
    }
}
