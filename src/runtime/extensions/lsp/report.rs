//! The diagnostics an edit brings back to the model: errors and warnings only, most severe
//! first, then by line, capped, each with its 1-based line and column.

use lsp_types::{Diagnostic, DiagnosticSeverity, NumberOrString};
use serde::{Deserialize, Serialize};

/// Diagnostics listed per file at most.
pub(crate) const MAX_LISTED: usize = 20;
/// Characters of one message kept.
const MAX_MESSAGE: usize = 300;

/// One listed diagnostic of an edited file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DiagnosticItem {
    /// The file, relative to the workspace root.
    pub path: String,
    /// 1-based.
    pub line: u32,
    /// 1-based, in UTF-16 code units as the server counts them.
    pub column: u32,
    /// `error` or `warning`.
    pub severity: String,
    /// On one line, cut at 300 characters.
    pub message: String,
    /// The server's name in the `[lsp]` table.
    pub server: String,
}

/// What a tool result's language servers reported: its metadata's `diagnostics`, the
/// `diagnostics` of a `tool_result` wire event and of `show --json`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DiagnosticReport {
    /// Errors in all the files the call changed (listed or not).
    pub errors: usize,
    /// Warnings in all those files.
    pub warnings: usize,
    /// The listed ones: per file most severe first, then by line, 20 at most.
    pub items: Vec<DiagnosticItem>,
}

impl DiagnosticReport {
    /// The report a stored result's metadata carries, if any.
    pub fn of_metadata(meta: Option<&serde_json::Value>) -> Option<DiagnosticReport> {
        serde::Deserialize::deserialize(meta?.get("diagnostics")?).ok()
    }

    /// "2 errors, 1 warning" (`None` when there are neither).
    pub fn counts(&self) -> Option<String> {
        let plural = |n: usize, w: &str| format!("{n} {w}{}", if n == 1 { "" } else { "s" });
        match (self.errors, self.warnings) {
            (0, 0) => None,
            (e, 0) => Some(plural(e, "error")),
            (0, w) => Some(plural(w, "warning")),
            (e, w) => Some(format!("{}, {}", plural(e, "error"), plural(w, "warning"))),
        }
    }
}

/// The diagnostics of the files one call changed.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Diagnosed {
    /// Appended to the tool result (starts with a blank line).
    pub text: String,
    /// The counts and the listed items, for the stored result's metadata.
    pub report: DiagnosticReport,
}

impl Diagnosed {
    /// The `diagnostics` object of a result's metadata.
    pub fn metadata(&self) -> serde_json::Value {
        serde_json::to_value(&self.report).unwrap_or_default()
    }
}

fn rank(d: &Diagnostic) -> Option<u8> {
    match d.severity {
        None | Some(DiagnosticSeverity::ERROR) => Some(0),
        Some(DiagnosticSeverity::WARNING) => Some(1),
        _ => None,
    }
}

fn one_line(s: &str) -> String {
    let flat = s.split_whitespace().collect::<Vec<_>>().join(" ");
    let mut out: String = flat.chars().take(MAX_MESSAGE).collect();
    if out.len() < flat.len() {
        out.push('…');
    }
    out
}

/// Adds `rel`'s diagnostics from `server` to `out`.
pub(crate) fn add(out: &mut Diagnosed, server: &str, rel: &str, diags: &[Diagnostic]) {
    let mut kept: Vec<(u8, &Diagnostic)> = diags
        .iter()
        .filter_map(|d| rank(d).map(|r| (r, d)))
        .collect();
    kept.sort_by_key(|(r, d)| (*r, d.range.start.line, d.range.start.character));
    let errors = kept.iter().filter(|(r, _)| *r == 0).count();
    let warnings = kept.len() - errors;
    out.report.errors += errors;
    out.report.warnings += warnings;
    let plural = |n: usize, w: &str| {
        if n == 1 {
            format!("1 {w}")
        } else {
            format!("{n} {w}s")
        }
    };
    if kept.is_empty() {
        out.text
            .push_str(&format!("\n\n{server}: no errors or warnings in {rel}"));
        return;
    }
    out.text.push_str(&format!(
        "\n\n{server} reports {} and {} in {rel}:",
        plural(errors, "error"),
        plural(warnings, "warning")
    ));
    for (r, d) in kept.iter().take(MAX_LISTED) {
        let severity = if *r == 0 { "error" } else { "warning" };
        let line = d.range.start.line + 1;
        let column = d.range.start.character + 1;
        let code = match &d.code {
            Some(NumberOrString::String(s)) => format!(" ({})", one_line(s)),
            Some(NumberOrString::Number(n)) => format!(" ({n})"),
            None => String::new(),
        };
        let message = one_line(&d.message);
        out.text.push_str(&format!(
            "\n  {rel}:{line}:{column}: {severity}: {message}{code}"
        ));
        out.report.items.push(DiagnosticItem {
            path: rel.to_string(),
            line,
            column,
            severity: severity.to_string(),
            message,
            server: server.to_string(),
        });
    }
    if kept.len() > MAX_LISTED {
        out.text
            .push_str(&format!("\n  … {} more", kept.len() - MAX_LISTED));
    }
}

#[cfg(test)]
mod tests {
    use super::{Diagnosed, add};
    use lsp_types::{Diagnostic, DiagnosticSeverity, Position, Range};

    fn d(line: u32, sev: DiagnosticSeverity, msg: &str) -> Diagnostic {
        Diagnostic {
            range: Range::new(Position::new(line, 4), Position::new(line, 9)),
            severity: Some(sev),
            message: msg.to_string(),
            ..Diagnostic::default()
        }
    }

    #[test]
    fn errors_come_first_with_one_based_lines_and_hints_are_left_out() {
        let mut out = Diagnosed::default();
        let diags = [
            d(0, DiagnosticSeverity::WARNING, "unused\nimport"),
            d(7, DiagnosticSeverity::ERROR, "bad type"),
            d(2, DiagnosticSeverity::HINT, "style"),
        ];
        add(&mut out, "pyright", "a.py", &diags);
        assert_eq!(
            out.text,
            "\n\npyright reports 1 error and 1 warning in a.py:\n  a.py:8:5: error: bad type\n  a.py:1:5: warning: unused import"
        );
        assert_eq!((out.report.errors, out.report.warnings), (1, 1));
        assert_eq!(out.report.counts().as_deref(), Some("1 error, 1 warning"));
        let mut clean = Diagnosed::default();
        add(
            &mut clean,
            "pyright",
            "a.py",
            &[d(2, DiagnosticSeverity::HINT, "style")],
        );
        assert_eq!(clean.text, "\n\npyright: no errors or warnings in a.py");
    }
}
