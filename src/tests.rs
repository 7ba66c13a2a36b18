//! Checks of house rules that hold for every file of `src/` (CONTRIBUTING.md).

/// The error type of every `Result<T, E>` written in `text` (nested generics matched).
fn error_types(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    for (at, _) in text.match_indices("Result<") {
        let rest = &text[at + "Result<".len()..];
        let (mut depth, mut comma) = (0usize, None);
        for (i, c) in rest.char_indices() {
            match c {
                '<' | '(' => depth += 1,
                ')' => depth = depth.saturating_sub(1),
                ',' if depth == 0 => comma = Some(i),
                '>' if depth == 0 => {
                    if let Some(k) = comma {
                        found.push(rest[k + 1..i].trim().to_string());
                    }
                    break;
                }
                '>' => depth -= 1,
                _ => {}
            }
        }
    }
    found
}

/// The `.rs` files under `dir`, leaving out test-only files (`tests.rs`).
fn sources(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs")
            && path.file_name().is_some_and(|n| n != "tests.rs")
        {
            out.push(path);
        }
    }
}

#[test]
fn no_function_outside_tests_fails_with_a_bare_string() {
    assert_eq!(
        error_types("fn a() -> Result<(bool, Vec<u8>, String), String> {}"),
        ["String"]
    );
    assert_eq!(
        error_types("fn a() -> std::result::Result<Vec<String>, Error> {}"),
        ["Error"]
    );
    let mut files = Vec::new();
    sources(
        &std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src"),
        &mut files,
    );
    assert!(files.len() > 200, "{files:?}");
    let mut bare = Vec::new();
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap();
        let code = text.split("#[cfg(test)]").next().unwrap_or_default();
        if error_types(code).iter().any(|e| e == "String") {
            bare.push(f.display().to_string());
        }
    }
    assert!(bare.is_empty(), "Result<_, String> in {bare:?}");
}
