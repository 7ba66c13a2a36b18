//! The navigation tools the language servers answer: `definition`, `references`, `hover`
//! (a file and a 1-based line and column) and `symbols` (a workspace symbol search). They
//! only read, so they never ask. Positions are characters for the model and UTF-16 units
//! for the server; this file converts both ways.

use std::path::{Component, Path};
use std::time::Duration;

use lsp_types::{
    GotoDefinitionResponse, Hover, HoverContents, Location, MarkedString, WorkspaceSymbolResponse,
};
use serde::Deserialize;
use serde_json::{Value, json};

use super::manager::LspManager;

/// How long one navigation request may take.
const NAV_TIMEOUT: Duration = Duration::from_secs(15);
/// Locations or symbols listed at most.
const MAX_LISTED: usize = 50;
/// Bytes of hover text kept.
const MAX_HOVER: usize = 4000;

/// One navigation tool as the model sees it.
#[derive(Debug, Clone, Copy)]
pub struct NavTool {
    /// Its name.
    pub name: &'static str,
    /// What the model reads.
    pub description: &'static str,
}

/// The navigation tools, in the order the model sees them.
pub const NAV_TOOLS: [NavTool; 4] = [
    NavTool {
        name: "definition",
        description: "Where the symbol at path:line:column is defined (language server).",
    },
    NavTool {
        name: "references",
        description: "Every reference to the symbol at path:line:column (language server).",
    },
    NavTool {
        name: "hover",
        description: "Type and documentation of the symbol at path:line:column (language server).",
    },
    NavTool {
        name: "symbols",
        description: "Search the workspace's symbols by name (language server); path picks the language.",
    },
];

/// The JSON schema of `name`'s arguments.
pub fn schema(name: &str) -> Value {
    if name == "symbols" {
        return json!({
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "Symbol name or part of it."},
                "path": {"type": "string", "description": "A file of the language to search."}
            },
            "required": ["query", "path"]
        });
    }
    json!({
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": "File path."},
            "line": {"type": "integer", "description": "1-based line."},
            "column": {"type": "integer", "description": "1-based column (characters)."}
        },
        "required": ["path", "line", "column"]
    })
}

#[derive(Deserialize)]
struct At {
    path: String,
    line: u32,
    column: u32,
}

#[derive(Deserialize)]
struct Query {
    query: String,
    path: String,
}

/// Why a navigation call failed: the text of its error result.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct NavError(String);

fn err(e: impl std::fmt::Display) -> NavError {
    NavError(e.to_string())
}

/// `p` when it is a relative path that stays inside the workspace (no `..`, not absolute)
/// and no read denial covers it.
fn confined<'a>(
    p: &'a str,
    denied: &dyn Fn(&Path) -> bool,
    root: &Path,
) -> Result<&'a str, NavError> {
    let path = Path::new(p);
    let inside = path
        .components()
        .all(|c| matches!(c, Component::Normal(_) | Component::CurDir));
    if p.is_empty() || !inside {
        return Err(NavError(format!(
            "{p}: give a path relative to the workspace, without `..`"
        )));
    }
    if denied(&root.join(p)) {
        return Err(NavError(format!(
            "{p}: a permission rule denies reading it"
        )));
    }
    Ok(p)
}

/// UTF-16 offset of the 1-based character `column` in `line`.
fn utf16_of(line: &str, column: u32) -> u32 {
    let n = column.saturating_sub(1) as usize;
    line.chars().take(n).map(|c| c.len_utf16() as u32).sum()
}

/// 1-based character column of UTF-16 offset `units` in `line`.
fn column_of(line: &str, units: u32) -> u32 {
    let mut seen = 0;
    let mut col = 1;
    for c in line.chars() {
        if seen >= units {
            break;
        }
        seen += c.len_utf16() as u32;
        col += 1;
    }
    col
}

impl LspManager {
    /// Carries out navigation tool `name`; `None` when `name` is not one.
    /// `denied`: whether a read denial (`read_file(...)`) covers an absolute path: such a
    /// file is not asked about, and a location in it is listed without its text.
    pub fn navigate(
        &self,
        name: &str,
        arguments: &str,
        denied: &dyn Fn(&Path) -> bool,
    ) -> Option<Result<String, NavError>> {
        let args = if arguments.trim().is_empty() {
            "{}"
        } else {
            arguments
        };
        Some(match name {
            "definition" | "references" | "hover" => serde_json::from_str::<At>(args)
                .map_err(|e| NavError(format!("{name}: bad arguments: {e}")))
                .and_then(|a| self.at(name, &a, denied)),
            "symbols" => serde_json::from_str::<Query>(args)
                .map_err(|e| NavError(format!("symbols: bad arguments: {e}")))
                .and_then(|q| self.symbols(&q, denied)),
            _ => return None,
        })
    }

    fn at(&self, name: &str, a: &At, denied: &dyn Fn(&Path) -> bool) -> Result<String, NavError> {
        let rel = confined(&a.path, denied, self.root())?;
        let (client, uri) = self.client_for(rel).map_err(err)?;
        let text = std::fs::read_to_string(self.root().join(rel)).map_err(|e| {
            NavError(format!(
                "cannot read {rel}: {}",
                crate::session::io_error(&e)
            ))
        })?;
        let line_text = text
            .lines()
            .nth(a.line.saturating_sub(1) as usize)
            .unwrap_or("");
        let position =
            json!({"line": a.line.saturating_sub(1), "character": utf16_of(line_text, a.column)});
        let mut params = json!({"textDocument": {"uri": uri}, "position": position});
        let method = match name {
            "definition" => "textDocument/definition",
            "references" => {
                params["context"] = json!({"includeDeclaration": true});
                "textDocument/references"
            }
            _ => "textDocument/hover",
        };
        let result = client.request(method, params, NAV_TIMEOUT).map_err(err)?;
        let here = format!("{rel}:{}:{}", a.line, a.column);
        match name {
            "hover" => {
                Ok(hover_text(result).unwrap_or_else(|| format!("nothing known about {here}")))
            }
            "definition" => {
                let locs = match serde_json::from_value::<Option<GotoDefinitionResponse>>(result) {
                    Ok(Some(GotoDefinitionResponse::Scalar(l))) => vec![l],
                    Ok(Some(GotoDefinitionResponse::Array(v))) => v,
                    Ok(Some(GotoDefinitionResponse::Link(v))) => v
                        .into_iter()
                        .map(|l| Location::new(l.target_uri, l.target_selection_range))
                        .collect(),
                    Ok(None) | Err(_) => Vec::new(),
                };
                Ok(self.locations(&locs, &format!("no definition found for {here}"), denied))
            }
            _ => {
                let locs: Vec<Location> = serde_json::from_value::<Option<Vec<Location>>>(result)
                    .ok()
                    .flatten()
                    .unwrap_or_default();
                Ok(self.locations(&locs, &format!("no references found for {here}"), denied))
            }
        }
    }

    fn symbols(&self, q: &Query, denied: &dyn Fn(&Path) -> bool) -> Result<String, NavError> {
        let rel = confined(&q.path, denied, self.root())?;
        let (client, _) = self.client_for(rel).map_err(err)?;
        let result = client
            .request("workspace/symbol", json!({"query": q.query}), NAV_TIMEOUT)
            .map_err(err)?;
        let found: Vec<(String, Location)> =
            match serde_json::from_value::<Option<WorkspaceSymbolResponse>>(result) {
                Ok(Some(WorkspaceSymbolResponse::Flat(v))) => {
                    v.into_iter().map(|s| (s.name, s.location)).collect()
                }
                Ok(Some(WorkspaceSymbolResponse::Nested(v))) => v
                    .into_iter()
                    .filter_map(|s| match s.location {
                        lsp_types::OneOf::Left(l) => Some((s.name, l)),
                        lsp_types::OneOf::Right(_) => None,
                    })
                    .collect(),
                Ok(None) | Err(_) => Vec::new(),
            };
        if found.is_empty() {
            return Ok(format!("no symbol matches `{}`", q.query));
        }
        let mut out: Vec<String> = found
            .iter()
            .take(MAX_LISTED)
            .map(|(name, l)| format!("{name}  {}", self.place(l, denied)))
            .collect();
        if found.len() > MAX_LISTED {
            out.push(format!("… {} more", found.len() - MAX_LISTED));
        }
        Ok(out.join("\n"))
    }

    /// `path:line:column: text of the line` for each location, capped.
    fn locations(&self, locs: &[Location], none: &str, denied: &dyn Fn(&Path) -> bool) -> String {
        if locs.is_empty() {
            return none.to_string();
        }
        let mut out: Vec<String> = locs
            .iter()
            .take(MAX_LISTED)
            .map(|l| self.place(l, denied))
            .collect();
        if locs.len() > MAX_LISTED {
            out.push(format!("… {} more", locs.len() - MAX_LISTED));
        }
        out.join("\n")
    }

    fn place(&self, l: &Location, denied: &dyn Fn(&Path) -> bool) -> String {
        let Some(abs) = super::uri::to_path(l.uri.as_str()) else {
            return l.uri.as_str().to_string();
        };
        let shown = abs
            .strip_prefix(self.root())
            .map_or_else(|_| abs.display().to_string(), |r| r.display().to_string());
        let line_no = l.range.start.line;
        let text = std::fs::read_to_string(&abs)
            .ok()
            .filter(|_| !denied(&abs))
            .and_then(|t| t.lines().nth(line_no as usize).map(str::to_string))
            .unwrap_or_default();
        let column = column_of(&text, l.range.start.character);
        let snippet: String = text.trim().chars().take(160).collect();
        format!("{shown}:{}:{column}: {snippet}", line_no + 1)
    }
}

fn marked(m: MarkedString) -> String {
    match m {
        MarkedString::String(s) => s,
        MarkedString::LanguageString(l) => l.value,
    }
}

fn hover_text(result: Value) -> Option<String> {
    let h: Hover = serde_json::from_value::<Option<Hover>>(result).ok()??;
    let text = match h.contents {
        HoverContents::Scalar(m) => marked(m),
        HoverContents::Array(v) => v.into_iter().map(marked).collect::<Vec<_>>().join("\n"),
        HoverContents::Markup(m) => m.value,
    };
    let text = text.trim();
    if text.is_empty() {
        return None;
    }
    let mut cut: String = text.chars().take(MAX_HOVER).collect();
    if cut.len() < text.len() {
        cut.push('…');
    }
    Some(cut)
}

#[cfg(test)]
mod tests {
    use super::{column_of, confined, utf16_of};

    #[test]
    fn columns_convert_between_characters_and_utf16_units() {
        let line = "é😀x = 1";
        assert_eq!(utf16_of(line, 3), 3);
        assert_eq!(column_of(line, 3), 3);
        assert_eq!(utf16_of(line, 1), 0);
        let root = std::path::Path::new("/w");
        let no = |_: &std::path::Path| false;
        assert!(confined("../x.py", &no, root).is_err() && confined("/etc/x", &no, root).is_err());
        assert!(confined("src/a.py", &no, root).is_ok());
        let env = |p: &std::path::Path| p.ends_with(".env");
        assert!(confined(".env", &env, root).is_err());
    }
}
