//! Plans (a DAG of steps) and the merge of step updates onto them.
//!
//! Step progress is stored as small updates keyed by (session, step, kind). They are merged in
//! write order (a monotonic sequence, never a timestamp) by the lifecycle seed's three rules:
//! a terminal status is never overwritten by a non-terminal one; a result clears an earlier
//! failure; an error clears an earlier result.

use std::collections::{BTreeMap, HashMap, HashSet};

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A plan: steps with dependencies.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Plan {
    /// The steps, in authoring order.
    pub steps: Vec<Step>,
}

/// One step of a plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Step {
    /// Step id, unique within the plan.
    pub id: String,
    /// What the step does.
    pub title: String,
    /// Steps that must complete first.
    #[serde(default)]
    pub depends_on: Vec<String>,
}

/// Status of a step.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum StepStatus {
    /// Not started.
    #[default]
    Pending,
    /// In progress.
    Running,
    /// Done.
    Completed,
    Failed,
}

impl StepStatus {
    /// Completed and failed are terminal.
    pub(crate) fn is_terminal(self) -> bool {
        matches!(self, StepStatus::Completed | StepStatus::Failed)
    }

    /// Lower-case name.
    pub fn as_str(self) -> &'static str {
        match self {
            StepStatus::Pending => "pending",
            StepStatus::Running => "running",
            StepStatus::Completed => "completed",
            StepStatus::Failed => "failed",
        }
    }

    /// The one-character mark `show` and the TUI both draw.
    pub(crate) fn symbol(self) -> &'static str {
        match self {
            StepStatus::Pending => "□",
            StepStatus::Running => "◐",
            StepStatus::Completed => "✔",
            StepStatus::Failed => "✗",
        }
    }

    /// Parses the lower-case name.
    pub fn parse(s: &str) -> Option<StepStatus> {
        [
            StepStatus::Pending,
            StepStatus::Running,
            StepStatus::Completed,
            StepStatus::Failed,
        ]
        .into_iter()
        .find(|st| st.as_str() == s)
    }
}

/// Why a step failed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StepFailure {
    /// Error class, e.g. `ToolError`.
    pub error_type: String,
    /// Human message.
    pub message: String,
    /// Optional traceback or detail.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub traceback: Option<String>,
}

/// One step update, as written by the runtime.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum StepUpdate {
    /// A status change.
    Status { status: StepStatus },
    /// The step completed with this output.
    Result {
        /// Output data.
        result: Value,
    },
    /// The step failed.
    Error { error: StepFailure },
}

impl StepUpdate {
    /// The storage key kind: `status`, `result` or `error`.
    pub(crate) fn kind(&self) -> &'static str {
        match self {
            StepUpdate::Status { .. } => "status",
            StepUpdate::Result { .. } => "result",
            StepUpdate::Error { .. } => "error",
        }
    }
}

/// Merged progress of a plan's steps.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct PlanProgress {
    /// Current status per step (absent = pending).
    pub statuses: BTreeMap<String, StepStatus>,
    /// Output of completed steps.
    pub results: BTreeMap<String, Value>,
    /// Failures of failed steps.
    pub failures: BTreeMap<String, StepFailure>,
}

impl PlanProgress {
    /// Applies one update by the seed's three rules.
    pub(crate) fn apply(&mut self, step_id: &str, update: &StepUpdate) {
        match update {
            StepUpdate::Status { status } => {
                let current = self.statuses.get(step_id).copied();
                if current.is_some_and(StepStatus::is_terminal) && !status.is_terminal() {
                    return;
                }
                self.statuses.insert(step_id.to_string(), *status);
            }
            StepUpdate::Result { result } => {
                self.statuses
                    .insert(step_id.to_string(), StepStatus::Completed);
                self.results.insert(step_id.to_string(), result.clone());
                self.failures.remove(step_id);
            }
            StepUpdate::Error { error } => {
                self.statuses
                    .insert(step_id.to_string(), StepStatus::Failed);
                self.failures.insert(step_id.to_string(), error.clone());
                self.results.remove(step_id);
            }
        }
    }

    /// Merges updates given in write order.
    #[cfg(test)]
    pub(crate) fn merge<'a>(updates: impl IntoIterator<Item = (&'a str, &'a StepUpdate)>) -> Self {
        let mut p = PlanProgress::default();
        for (step, u) in updates {
            p.apply(step, u);
        }
        p
    }

    /// Status of a step (pending when nothing was written).
    pub fn status(&self, step_id: &str) -> StepStatus {
        self.statuses.get(step_id).copied().unwrap_or_default()
    }

    /// Done / failed / total for `plan`.
    pub(crate) fn counts(&self, plan: &Plan) -> PlanCounts {
        let mut c = PlanCounts {
            total: plan.steps.len() as u64,
            ..Default::default()
        };
        for s in &plan.steps {
            match self.status(&s.id) {
                StepStatus::Completed => c.done += 1,
                StepStatus::Failed => c.failed += 1,
                StepStatus::Pending | StepStatus::Running => {}
            }
        }
        c
    }
}

/// A plan that is not a DAG.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlanError {
    /// Two steps share an id.
    #[error("plan has two steps with id '{0}'")]
    DuplicateStep(String),
    /// A dependency names no step.
    #[error("step '{step}' depends on unknown step '{missing}'")]
    UnknownDependency { step: String, missing: String },
    /// The dependencies form a cycle.
    #[error("plan has a dependency cycle through: {}", .0.join(" -> "))]
    Cycle(Vec<String>),
    /// A step id is empty.
    #[error("plan has a step with an empty id")]
    EmptyId,
}

impl Plan {
    /// Checks the plan is a DAG with known, unique ids.
    pub fn validate(&self) -> Result<(), PlanError> {
        self.layers().map(|_| ())
    }

    /// Steps layered in topological order: every step's dependencies are in earlier layers.
    /// Within a layer, steps keep authoring order.
    pub(crate) fn layers(&self) -> Result<Vec<Vec<&Step>>, PlanError> {
        let mut index: HashMap<&str, usize> = HashMap::new();
        for (i, s) in self.steps.iter().enumerate() {
            if s.id.is_empty() {
                return Err(PlanError::EmptyId);
            }
            if index.insert(s.id.as_str(), i).is_some() {
                return Err(PlanError::DuplicateStep(s.id.clone()));
            }
        }
        let mut indegree = vec![0usize; self.steps.len()];
        let mut dependents: Vec<Vec<usize>> = vec![Vec::new(); self.steps.len()];
        for (i, s) in self.steps.iter().enumerate() {
            let mut seen = HashSet::new();
            for d in &s.depends_on {
                let Some(&j) = index.get(d.as_str()) else {
                    return Err(PlanError::UnknownDependency {
                        step: s.id.clone(),
                        missing: d.clone(),
                    });
                };
                if seen.insert(j) {
                    indegree[i] += 1;
                    dependents[j].push(i);
                }
            }
        }
        let mut layers = Vec::new();
        let mut current: Vec<usize> = (0..self.steps.len())
            .filter(|&i| indegree[i] == 0)
            .collect();
        let mut placed = 0;
        while !current.is_empty() {
            placed += current.len();
            let mut next = Vec::new();
            for &i in &current {
                for &k in &dependents[i] {
                    indegree[k] -= 1;
                    if indegree[k] == 0 {
                        next.push(k);
                    }
                }
            }
            next.sort_unstable();
            layers.push(current.iter().map(|&i| &self.steps[i]).collect());
            current = next;
        }
        if placed < self.steps.len() {
            return Err(PlanError::Cycle(self.cycle(&indegree)));
        }
        Ok(layers)
    }

    /// Names one cycle among the steps left with unmet dependencies.
    fn cycle(&self, indegree: &[usize]) -> Vec<String> {
        let index: HashMap<&str, usize> = self
            .steps
            .iter()
            .enumerate()
            .map(|(i, s)| (s.id.as_str(), i))
            .collect();
        let Some(start) = (0..self.steps.len()).find(|&i| indegree[i] > 0) else {
            return Vec::new();
        };
        // Walk dependencies that are themselves stuck until a step repeats.
        let mut path = vec![start];
        let mut pos: HashMap<usize, usize> = HashMap::from([(start, 0)]);
        let mut cur = start;
        loop {
            let next = self.steps[cur]
                .depends_on
                .iter()
                .filter_map(|d| index.get(d.as_str()).copied())
                .find(|&j| indegree[j] > 0);
            let Some(n) = next else {
                return path.iter().map(|&i| self.steps[i].id.clone()).collect();
            };
            if let Some(&p) = pos.get(&n) {
                let mut ids: Vec<String> = path[p..]
                    .iter()
                    .map(|&i| self.steps[i].id.clone())
                    .collect();
                ids.push(self.steps[n].id.clone());
                return ids;
            }
            pos.insert(n, path.len());
            path.push(n);
            cur = n;
        }
    }
}

/// Done / failed / total steps of a plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct PlanCounts {
    /// Completed steps.
    pub done: u64,
    /// Failed steps.
    pub failed: u64,
    /// All steps.
    pub total: u64,
}

/// A step for tests: titled by its id in capitals.
#[cfg(test)]
pub(crate) fn step(id: &str, deps: &[&str]) -> Step {
    Step {
        id: id.into(),
        title: id.to_uppercase(),
        depends_on: deps.iter().map(ToString::to_string).collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layers_follow_dependencies() {
        let plan = Plan {
            steps: vec![
                step("test", &["build", "lint"]),
                step("build", &["fetch"]),
                step("fetch", &[]),
                step("lint", &[]),
            ],
        };
        let ids: Vec<Vec<&str>> = plan
            .layers()
            .unwrap()
            .iter()
            .map(|l| l.iter().map(|s| s.id.as_str()).collect())
            .collect();
        assert_eq!(
            ids,
            vec![vec!["fetch", "lint"], vec!["build"], vec!["test"]]
        );
    }

    #[test]
    fn cycle_and_unknown_dependency_are_errors() {
        let plan = Plan {
            steps: vec![step("a", &["c"]), step("b", &["a"]), step("c", &["b"])],
        };
        match plan.validate() {
            Err(PlanError::Cycle(ids)) => {
                assert_eq!(ids.first(), ids.last());
                assert_eq!(ids.len(), 4);
            }
            other => panic!("expected a cycle, got {other:?}"),
        }
        let plan = Plan {
            steps: vec![step("a", &["ghost"])],
        };
        assert_eq!(
            plan.validate(),
            Err(PlanError::UnknownDependency {
                step: "a".into(),
                missing: "ghost".into()
            })
        );
        let plan = Plan {
            steps: vec![step("a", &[]), step("a", &[])],
        };
        assert_eq!(plan.validate(), Err(PlanError::DuplicateStep("a".into())));
    }

    #[test]
    fn merge_rules() {
        let running = StepUpdate::Status {
            status: StepStatus::Running,
        };
        let result = StepUpdate::Result {
            result: Value::from("ok"),
        };
        let error = StepUpdate::Error {
            error: StepFailure {
                error_type: "ToolError".into(),
                message: "boom".into(),
                traceback: None,
            },
        };
        // Rule 1: a later non-terminal status never reopens a terminal step.
        let p = PlanProgress::merge([("s", &result), ("s", &running)]);
        assert_eq!(p.status("s"), StepStatus::Completed);
        // Rule 2: a result clears an earlier failure.
        let p = PlanProgress::merge([("s", &error), ("s", &result)]);
        assert_eq!(p.status("s"), StepStatus::Completed);
        assert!(p.failures.is_empty());
        assert_eq!(p.results["s"], Value::from("ok"));
        // Rule 3: an error clears an earlier result.
        let p = PlanProgress::merge([("s", &result), ("s", &error)]);
        assert_eq!(p.status("s"), StepStatus::Failed);
        assert!(p.results.is_empty());
        assert_eq!(p.failures["s"].message, "boom");
    }
}
