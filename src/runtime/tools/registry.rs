//! The registry: the tools in the order the model sees them, and running, summarising and
//! previewing a call by the tool's name.

use serde_json::Value;

use super::spec::{Preview, ToolContext, ToolKind, ToolOutput, ToolSpec};
use super::{edit_file, grep, list_dir, read_file, run_command, web_fetch, write_file};

fn plan_schema() -> Value {
    serde_json::json!({
        "type": "object",
        "properties": {
            "steps": {
                "type": "array",
                "description": "The whole plan: steps with id, title, depends_on (step ids), status.",
                "items": {
                    "type": "object",
                    "properties": {
                        "id": {"type": "string"},
                        "title": {"type": "string"},
                        "depends_on": {"type": "array", "items": {"type": "string"}},
                        "status": {"type": "string", "enum": ["pending", "running", "completed", "failed"]}
                    },
                    "required": ["id", "title"]
                }
            }
        },
        "required": ["steps"]
    })
}

fn plan_not_here(_arguments: &str, _ctx: &ToolContext) -> ToolOutput {
    ToolOutput::error("update_plan is carried out by the agent turn, not here")
}

const UPDATE_PLAN: ToolSpec = ToolSpec {
    name: "update_plan",
    description: "Set the task's plan (a DAG of steps) and report progress. Send the whole plan each time.",
    parameters: plan_schema,
    kind: ToolKind::Plan,
    run: plan_not_here,
    summary: Some(plan_summary),
    preview: None,
};

fn plan_summary(v: &Value) -> String {
    let n = v.get("steps").and_then(Value::as_array).map_or(0, Vec::len);
    format!("update_plan ({n} steps)")
}

/// The registry, in the order the model sees it.
pub fn specs() -> &'static [ToolSpec] {
    const SPECS: &[ToolSpec] = &[
        read_file::SPEC,
        list_dir::SPEC,
        grep::SPEC,
        write_file::SPEC,
        edit_file::SPEC,
        run_command::SPEC,
        web_fetch::SPEC,
        UPDATE_PLAN,
    ];
    SPECS
}

/// The tool called `name`.
pub fn spec(name: &str) -> Option<&'static ToolSpec> {
    specs().iter().find(|s| s.name == name)
}

/// Runs one call (blocking). Unknown tools and bad arguments are error results; a panic
/// inside a tool becomes an error result too, so a tool bug never ends the turn.
pub fn run(name: &str, arguments: &str, ctx: &ToolContext) -> ToolOutput {
    let Some(s) = spec(name) else {
        return ToolOutput::error(format!("unknown tool `{name}`"));
    };
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| (s.run)(arguments, ctx))) {
        Ok(out) => out,
        Err(_) => ToolOutput::error(format!(
            "tool `{name}` failed internally (a bug in neocode)"
        )),
    }
}

/// One line saying what a call does (path, command, pattern), for cards and logs: the
/// tool's own [`ToolSpec::summary`], else its name and `path`. Not yet sanitised: views
/// sanitise everything they print.
pub fn summary(name: &str, arguments: &str) -> String {
    let v: Value = serde_json::from_str(arguments).unwrap_or(Value::Null);
    if let Some(f) = spec(name).and_then(|s| s.summary) {
        return f(&v);
    }
    match v.get("path").and_then(Value::as_str) {
        Some(p) => format!("{name} {p}"),
        None => name.to_string(),
    }
}

/// The change a call makes ([`ToolSpec::preview`]); `None` for other tools and arguments
/// that are not JSON.
pub fn preview(name: &str, arguments: &str) -> Option<Preview> {
    let f = spec(name)?.preview?;
    let v: Value = serde_json::from_str(arguments).ok()?;
    Some(f(&v))
}

#[cfg(test)]
mod tests {
    use super::specs;
    use crate::runtime::provider::quirks::estimate_tokens;

    /// The built-in tools are sent with every request: on a 2,048-token local server their
    /// definitions must leave room (issue 24). Counted as the `prompt_large` warning counts
    /// them; docs/PERFORMANCE.md has the tokenizer's figure.
    #[test]
    fn the_built_in_tool_definitions_stay_lean() {
        let tokens: u64 = specs()
            .iter()
            .map(|t| {
                estimate_tokens(t.name)
                    + estimate_tokens(t.description)
                    + estimate_tokens(&(t.parameters)().to_string())
            })
            .sum();
        println!("built-in tool definitions: ~{tokens} tokens");
        assert_eq!(specs().len(), 8);
        // 992 before the descriptions were trimmed, 833 after, 852 with web_fetch.
        assert!(tokens <= 900, "~{tokens} tokens");
    }
}
