//! The texts a plan run stores: the drafting instructions, a step's context and prompt, a
//! step result as text.

use serde_json::Value;

use crate::session::{Plan, PlanProgress, Step};

/// The drafting turn's instructions, stored as a system message before the goal (so the
/// session's first prompt, which lists and filters show, is the goal itself).
pub(super) const DRAFT_INSTRUCTIONS: &str = "The user's next message is a goal to plan before any of it \
     is done. Call update_plan once with the whole plan: steps with short ids, one-line titles \
     and depends_on naming the steps each needs first (no cycles, no unknown ids, unique ids); \
     steps that do not depend on each other may run in parallel. Each step will be carried out \
     later by a separate agent that sees the goal, the plan and the results of the steps it \
     depends on. Do not carry out the steps now; reply with one line when the plan is stored.";

/// A step's context, stored as the system message its conversation starts with: the goal, the
/// plan, the results of the steps it depends on, and what its answer is for.
pub(super) fn step_context(
    goal: &str,
    plan: &Plan,
    progress: &PlanProgress,
    step: &Step,
) -> String {
    let mut p =
        format!("You carry out one step of a plan.\n\nGoal of the plan: {goal}\n\nThe plan:\n");
    for s in &plan.steps {
        let mark = if s.id == step.id {
            "this step".to_string()
        } else {
            progress.status(&s.id).as_str().to_string()
        };
        let deps = if s.depends_on.is_empty() {
            String::new()
        } else {
            format!(" (after {})", s.depends_on.join(", "))
        };
        p.push_str(&format!("- {}: {}{deps} [{mark}]\n", s.id, s.title));
    }
    if !step.depends_on.is_empty() {
        p.push_str("\nResults of the steps this one depends on:\n");
        for d in &step.depends_on {
            let r = progress.results.get(d).map(result_text).unwrap_or_default();
            p.push_str(&format!("\n### {d}\n{r}\n"));
        }
    }
    p.push_str(
        "\nDo the step the user names, and only that one, with the tools you need. Your final \
         answer is the step's result, read by the steps that come after: state what you did and \
         what they need to know. If the step cannot be done, answer with a first line starting \
         with `FAILED:` and the reason.",
    );
    p
}

/// A step's prompt (the conversation's first user message).
pub(super) fn step_prompt(step: &Step) -> String {
    format!("Your step: {} — {}", step.id, step.title)
}

/// The text of a stored step result (`{"answer": ...}` or any other JSON).
pub(crate) fn result_text(v: &Value) -> String {
    match v.get("answer").and_then(Value::as_str) {
        Some(a) => a.to_string(),
        None => match v {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        },
    }
}
