//! Steps of one layer side by side in git worktrees. When a layer has more than one step to
//! run, the run's width is above 1 and the workspace is a git repository with a commit, the
//! workspace as it is at the start of the layer (`HEAD` plus every change not committed,
//! which holds what the layers before merged) is committed (a commit no branch points at,
//! made in a scratch index: the repository's index, `HEAD` and branches are untouched), and
//! each step runs in a worktree of its own on a branch `neocode/step-<child id>` from that
//! commit. When a step ends, its changes are committed on its branch and its folder removed.
//! Once every step of the layer has ended, the completed steps' changes are applied to the
//! workspace in step order (`git apply`, all of a step's diff or nothing); a step whose diff
//! no longer applies (an earlier step changed the same lines) fails with error type
//! [`CONFLICT`], its branch kept, the steps merged before it staying merged, and the run
//! stops with the stable code `plan_conflict` once the layer is merged. A step that failed or
//! was stopped is not merged (its changes, if any, are on its branch). With a width of 1 the
//! steps run one after another in the workspace itself; without git they work in the
//! workspace itself too, up to the width at once (no isolation: what `--width` did before).

use super::*;
use crate::runtime::agent::subagent::worktree::{folder, short_id};
use crate::runtime::tools::worktree::{self, ApplyError, Worktree};

impl Run {
    /// The width the layer runs at and the commit its steps' worktrees start from (`None`:
    /// the steps work in the workspace itself).
    pub(super) fn layer_mode(
        &mut self,
        steps: usize,
    ) -> Result<(usize, Option<String>), FinishReason> {
        let width = self.req.width.max(1);
        if width == 1 || steps <= 1 {
            return Ok((width, None));
        }
        let root = self.sessions().workspace_root().to_path_buf();
        if !worktree::has_commit(&root) {
            // Without git the steps share the workspace, as `--width` always let them.
            self.emit(TurnEvent::Warning {
                code: WarningCode::LayerUnisolated,
                message: format!(
                    "--width {width}: {} is not a git repository with a commit, so this layer's {steps} steps run side by side in the workspace itself, not isolated (they may overwrite each other's changes); commit it to a git repository for a worktree each, or use --width 1 to run them one after another",
                    root.display()
                ),
            });
            return Ok((width, None));
        }
        let under = folder(self.sessions());
        let failed = |m: String| FinishReason::Failed {
            code: FailCode::PlanFailed,
            message: format!("cannot prepare the layer's worktrees: {m}"),
        };
        std::fs::create_dir_all(&under).map_err(|e| failed(crate::session::io_error(&e)))?;
        let ignore = under.join(".gitignore");
        if !ignore.exists() {
            std::fs::write(&ignore, "*\n").map_err(|e| failed(crate::session::io_error(&e)))?;
        }
        let scratch = under.join(format!(".index-{}", short_id(&self.id)));
        let message = format!("neocode plan {}: the workspace before a layer", self.id);
        worktree::snapshot(&root, &scratch, &message)
            .map(|c| (width, Some(c)))
            .map_err(|e| failed(e.to_string()))
    }

    /// The agent a step runs with: in a worktree from `base` when there is one.
    pub(super) fn step_agent(
        &self,
        child_id: &str,
        base: Option<&str>,
    ) -> Result<(Agent, Option<Worktree>), FinishReason> {
        let Some(base) = base else {
            return Ok((self.agent.clone(), None));
        };
        let short = short_id(child_id);
        let wt = worktree::create_at(
            self.sessions().workspace_root(),
            &folder(self.sessions()),
            &format!("step-{short}"),
            &format!("neocode/step-{short}"),
            base,
        )
        .map_err(|e| FinishReason::Failed {
            code: FailCode::PlanFailed,
            message: format!("cannot make the step's worktree: {e}"),
        })?;
        Ok((self.agent.rooted_at(&wt.path), Some(wt)))
    }

    /// Commits what the step changed on its branch and removes its folder (kept when the
    /// commit failed, so nothing is lost).
    pub(super) fn close_worktree(wt: &Worktree, step_id: &str) -> Result<Closed, Uncommitted> {
        let diff = wt
            .commit(&format!("neocode plan step {step_id}"))
            .map_err(|source| Uncommitted {
                source,
                path: wt.path.clone(),
            })?;
        // A folder left behind costs space, not work: the branch holds the changes.
        let _ = wt.remove();
        Ok(match diff {
            None => Closed::Nothing,
            Some(diff) => Closed::Changed {
                branch: wt.branch.clone(),
                diff,
            },
        })
    }

    /// Applies the layer's completed steps' changes to the workspace in step order and
    /// stores their outcomes; a conflict fails its step and makes the run stop.
    pub(super) fn merge_layer(&mut self) -> Result<Option<FinishReason>, FinishReason> {
        let mut merges = std::mem::take(&mut self.merges);
        merges.sort_by_key(|m| m.order);
        let root = self.sessions().workspace_root().to_path_buf();
        let mut conflicts: Vec<String> = Vec::new();
        for m in merges {
            let (update, outcome) = match worktree::apply(&root, &m.diff) {
                Ok(()) => (m.update, Ok(m.answer)),
                Err(e) => {
                    let what = match &e {
                        ApplyError::Conflict(files) => format!(
                            "its changes conflict with the steps merged before it in {}",
                            files.join(", ")
                        ),
                        ApplyError::Git(g) => format!("its changes could not be merged: {g}"),
                    };
                    let message = format!(
                        "{what}; they are on branch {} (merge it by hand, or resume the plan run to run the step again)",
                        m.branch
                    );
                    conflicts.push(format!("step {}: {message}", m.step_id));
                    let f = StepFailure {
                        error_type: CONFLICT.into(),
                        message,
                        traceback: None,
                    };
                    (StepUpdate::Error { error: f.clone() }, Err(f))
                }
            };
            self.record(&m.step_id, &update)?;
            self.emit(TurnEvent::StepFinished {
                step_id: m.step_id,
                outcome,
                usage: m.usage,
                elapsed_ms: m.elapsed_ms,
            });
        }
        Ok((!conflicts.is_empty()).then(|| FinishReason::Failed {
            code: FailCode::PlanConflict,
            message: conflicts.join("; "),
        }))
    }
}

/// A step's changes that could not be committed on its branch: they stay in its worktree.
#[derive(Debug, thiserror::Error)]
#[error("its changes could not be committed ({source}); they are in {}", path.display())]
pub(super) struct Uncommitted {
    source: worktree::WorktreeError,
    path: std::path::PathBuf,
}
