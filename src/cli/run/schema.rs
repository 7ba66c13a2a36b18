//! `--output-schema FILE`: the final answer must be a JSON document valid against the schema.
//! The schema goes into the prompt; the answer is validated here whatever the model did.

use std::path::Path;

use serde_json::Value;

/// Why a schema or an answer was refused: one line each.
#[derive(Debug, thiserror::Error)]
pub(crate) enum SchemaError {
    #[error("cannot read the output schema {path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("the output schema {path} is not JSON: {source}")]
    NotJson {
        path: String,
        source: serde_json::Error,
    },
    #[error("the output schema {path} is not a valid JSON Schema: {message}")]
    Invalid { path: String, message: String },
    #[error("the answer is not a JSON document: {0}")]
    AnswerNotJson(serde_json::Error),
    #[error("the answer is not valid against the output schema: {0}")]
    AnswerInvalid(String),
}

/// A compiled output schema and its text (for the prompt).
pub(crate) struct OutputSchema {
    text: String,
    schema: Value,
    validator: jsonschema::Validator,
}

impl OutputSchema {
    /// Reads and compiles the schema in `path`.
    pub(crate) fn load(path: &Path) -> Result<OutputSchema, SchemaError> {
        let shown = path.display().to_string();
        let raw = std::fs::read_to_string(path).map_err(|source| SchemaError::Read {
            path: shown.clone(),
            source,
        })?;
        let schema: Value = serde_json::from_str(&raw).map_err(|source| SchemaError::NotJson {
            path: shown.clone(),
            source,
        })?;
        let validator = jsonschema::validator_for(&schema).map_err(|e| SchemaError::Invalid {
            path: shown,
            message: one_line(&e.to_string()),
        })?;
        Ok(OutputSchema {
            text: schema.to_string(),
            schema,
            validator,
        })
    }

    /// The schema itself, sent as the API's structured-output option.
    pub(crate) fn value(&self) -> &Value {
        &self.schema
    }

    /// What the prompt gains: answer with the document only.
    pub(crate) fn instruction(&self) -> String {
        format!(
            "\n\nYour final answer must be only a JSON document (no prose, no code fence) valid against this JSON Schema:\n{}",
            self.text
        )
    }

    /// The prompt of the one retry, naming what was wrong.
    pub(crate) fn fix_prompt(&self, err: &SchemaError) -> String {
        format!(
            "{err}. Reply with only the corrected JSON document, valid against the JSON Schema given before; no prose, no code fence."
        )
    }

    /// The answer as a JSON document valid against the schema (a surrounding code fence is
    /// taken off).
    pub(crate) fn check(&self, answer: &str) -> Result<Value, SchemaError> {
        let doc: Value =
            serde_json::from_str(unfence(answer)).map_err(SchemaError::AnswerNotJson)?;
        let errors: Vec<String> = self
            .validator
            .iter_errors(&doc)
            .take(3)
            .map(|e| {
                let at = e.instance_path().to_string();
                let at = if at.is_empty() { "/".to_string() } else { at };
                format!("at {at}: {}", one_line(&e.to_string()))
            })
            .collect();
        if errors.is_empty() {
            Ok(doc)
        } else {
            Err(SchemaError::AnswerInvalid(errors.join("; ")))
        }
    }
}

fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The text inside a ```` ``` ```` fence when the answer is one fenced block.
fn unfence(answer: &str) -> &str {
    let t = answer.trim();
    let Some(rest) = t.strip_prefix("```") else {
        return t;
    };
    let Some(body) = rest.strip_suffix("```") else {
        return t;
    };
    // The info string (`json`) ends at the first newline.
    body.split_once('\n').map_or(body, |(_, b)| b).trim()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schema() -> OutputSchema {
        // A folder of its own: the tests of this module run at once in one process.
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("s.json");
        std::fs::write(
            &p,
            r#"{"type":"object","required":["n"],"properties":{"n":{"type":"integer"}}}"#,
        )
        .unwrap();
        match OutputSchema::load(&p) {
            Ok(s) => s,
            Err(e) => panic!("{e}"),
        }
    }

    #[test]
    fn a_valid_answer_passes_fenced_or_not() {
        let s = schema();
        assert_eq!(
            s.check(r#"{"n": 3}"#).ok(),
            Some(serde_json::json!({"n": 3}))
        );
        assert!(s.check("```json\n{\"n\": 3}\n```").is_ok());
    }

    #[test]
    fn an_invalid_answer_names_where_and_why() {
        let s = schema();
        let e = s.check(r#"{"n": "three"}"#).err().map(|e| e.to_string());
        let e = e.unwrap_or_default();
        assert!(e.contains("at /n:"), "{e}");
        assert!(e.contains("integer"), "{e}");
        let e = s
            .check("three")
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(e.starts_with("the answer is not a JSON document"), "{e}");
    }
}
