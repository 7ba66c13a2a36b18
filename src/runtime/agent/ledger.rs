//! The runtime ledger (seed 000 §3.3): budgets and what was spent, stored with the session.
//! Resume restores it, never recreates it, so restarting cannot bypass a budget; only an
//! explicit user action (a flag) changes a limit.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use crate::session::{RuntimeLedger, RuntimeLimits, Usage, now_ms};

/// A ledger limit forbids the model call or tool call asked for: which one, in words (as
/// [`model_call_blocked`] and [`tool_call_blocked`] say it).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub(crate) struct LimitReached(pub String);

/// One ledger shared by turns running at once (the steps of a plan run with a width above 1).
/// Each turn reserves a model call or a tool call here before making it, under one lock, so
/// the limit counts what every in-flight turn already started, not what each saw when it
/// began. What cannot be reserved: the tokens of a response, known only once it has streamed,
/// so a token limit can still be passed by at most one response per turn in flight.
#[derive(Clone, Debug)]
pub(crate) struct SharedBudget(Arc<Mutex<RuntimeLedger>>);

impl SharedBudget {
    /// A budget starting from `ledger` (its limits, deadline and what was spent).
    pub(crate) fn new(ledger: &RuntimeLedger) -> SharedBudget {
        SharedBudget(Arc::new(Mutex::new(ledger.clone())))
    }

    fn lock(&self) -> MutexGuard<'_, RuntimeLedger> {
        // A turn that panicked holding the lock left counts, not a broken invariant.
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Counts a model call about to be made, or says which limit forbids it.
    pub(crate) fn reserve_model_call(&self) -> Result<(), LimitReached> {
        self.reserve(model_call_blocked, |u| &mut u.turns)
    }

    /// Adds tokens spent (a response once it has streamed, a compaction).
    pub(crate) fn add_tokens(&self, usage: Usage) {
        let mut l = self.lock();
        l.usage.input_tokens += usage.input_tokens;
        l.usage.output_tokens += usage.output_tokens;
    }

    /// Counts a tool call about to run, or says which limit forbids it.
    pub(crate) fn reserve_tool_call(&self) -> Result<(), LimitReached> {
        self.reserve(tool_call_blocked, |u| &mut u.tool_calls)
    }

    /// Adds one to the `count` of usage unless `blocked` names a limit, under one lock.
    fn reserve(
        &self,
        blocked: fn(&RuntimeLedger) -> Option<String>,
        count: fn(&mut crate::session::RuntimeUsage) -> &mut u64,
    ) -> Result<(), LimitReached> {
        let mut l = self.lock();
        if let Some(why) = blocked(&l) {
            return Err(LimitReached(why));
        }
        *count(&mut l.usage) += 1;
        Ok(())
    }

    /// The limit that forbids another tool call, if one is reached.
    pub(crate) fn tool_blocked(&self) -> Option<String> {
        tool_call_blocked(&self.lock())
    }

    /// The limit that forbids starting anything more, if one is reached.
    pub(crate) fn blocked(&self) -> Option<String> {
        model_call_blocked(&self.lock())
    }

    /// What was spent so far, reservations included.
    pub(crate) fn usage(&self) -> crate::session::RuntimeUsage {
        self.lock().usage.clone()
    }
}

pub(crate) use crate::runtime::config::caps::PromptCaps;

impl PromptCaps {
    /// The cap that forbids another model call, `start` being the usage when the prompt began.
    pub(crate) fn model_call_blocked(
        &self,
        ledger: &RuntimeLedger,
        start: &crate::session::RuntimeUsage,
    ) -> Option<String> {
        let (now, start) = (ledger.usage.turns, start.turns);
        prompt_cap_reached(
            self.turns,
            now,
            start,
            "max_turns_per_prompt",
            "model calls",
        )
    }

    /// The cap that forbids another tool call.
    pub(crate) fn tool_call_blocked(
        &self,
        ledger: &RuntimeLedger,
        start: &crate::session::RuntimeUsage,
    ) -> Option<String> {
        let (now, start) = (ledger.usage.tool_calls, start.tool_calls);
        prompt_cap_reached(
            self.tool_calls,
            now,
            start,
            "max_tool_calls_per_prompt",
            "tool calls",
        )
    }
}

/// "`name` reached" once the calls counted since the prompt began (`now` - `start`) reach
/// `cap`, with the session's count `now`.
fn prompt_cap_reached(
    cap: Option<u64>,
    now: u64,
    start: u64,
    name: &str,
    unit: &str,
) -> Option<String> {
    let used = now.saturating_sub(start);
    match cap {
        Some(m) if used >= m => Some(format!(
            "{name} reached ({used}/{m} {unit} for this prompt; {now} in the session)"
        )),
        _ => None,
    }
}

/// The flag that raises the limit `why` names (a message of this module), for hints.
pub(crate) fn flag_for(why: &str) -> &'static str {
    if why.starts_with("max_tool_calls") {
        "--max-tool-calls"
    } else if why.starts_with("max_input_tokens") {
        "--max-input-tokens"
    } else if why.starts_with("max_output_tokens") {
        "--max-output-tokens"
    } else if why.starts_with("max_wall_secs") {
        "--max-wall-secs"
    } else if why.starts_with("max_cost_usd") {
        "--max-cost"
    } else {
        "--max-turns"
    }
}

/// A new session's ledger: limits from the settings, the clock started now.
pub(crate) fn fresh(limits: &RuntimeLimits) -> RuntimeLedger {
    let now = now_ms();
    RuntimeLedger {
        limits: limits.clone(),
        started_at_ms: Some(now),
        deadline_at_ms: limits.max_wall_secs.map(|s| now + s as i64 * 1000),
        ..RuntimeLedger::default()
    }
}

/// A session's ledger: the stored one, else a fresh one whose token usage starts from what
/// the session's messages spent (an imported session's lifetime usage is not dropped when
/// neocode first runs it; the store keeps a ledger session's token totals equal to it).
pub(crate) fn of(h: &crate::session::SessionHeader, limits: &RuntimeLimits) -> RuntimeLedger {
    h.ledger.clone().unwrap_or_else(|| {
        let mut l = fresh(limits);
        l.usage.input_tokens = h.token_input_total;
        l.usage.output_tokens = h.token_output_total;
        l
    })
}

/// Applies limits the user set explicitly for this run (flags); unset ones stay as stored.
pub(crate) fn apply_user_limits(ledger: &mut RuntimeLedger, set: &RuntimeLimits) {
    let l = &mut ledger.limits;
    if set.max_turns.is_some() {
        l.max_turns = set.max_turns;
    }
    if set.max_tool_calls.is_some() {
        l.max_tool_calls = set.max_tool_calls;
    }
    if set.max_input_tokens.is_some() {
        l.max_input_tokens = set.max_input_tokens;
    }
    if set.max_output_tokens.is_some() {
        l.max_output_tokens = set.max_output_tokens;
    }
    if set.max_cost_usd.is_some() {
        l.max_cost_usd = set.max_cost_usd;
    }
    if let Some(secs) = set.max_wall_secs {
        l.max_wall_secs = Some(secs);
        let start = *ledger.started_at_ms.get_or_insert_with(now_ms);
        ledger.deadline_at_ms = Some(start + secs as i64 * 1000);
    }
}

/// Records one model call.
pub(crate) fn add_model_call(ledger: &mut RuntimeLedger, usage: Usage) {
    ledger.usage.turns += 1;
    ledger.usage.input_tokens += usage.input_tokens;
    ledger.usage.output_tokens += usage.output_tokens;
}

/// The limit that forbids another model call, in words.
pub(crate) fn model_call_blocked(ledger: &RuntimeLedger) -> Option<String> {
    let (l, u) = (&ledger.limits, &ledger.usage);
    if let Some(m) = l.max_turns
        && u.turns >= m
    {
        return Some(format!("max_turns reached ({}/{m} model calls)", u.turns));
    }
    if let Some(m) = l.max_input_tokens
        && u.input_tokens >= m
    {
        return Some(format!("max_input_tokens reached ({}/{m})", u.input_tokens));
    }
    if let Some(m) = l.max_output_tokens
        && u.output_tokens >= m
    {
        return Some(format!(
            "max_output_tokens reached ({}/{m})",
            u.output_tokens
        ));
    }
    if let (Some(m), Some(spent)) = (l.max_cost_usd, u.cost_usd)
        && spent >= m
    {
        return Some(format!("max_cost_usd reached (${spent:.4} of ${m:.2})"));
    }
    wall_blocked(ledger)
}

/// The limit that forbids another tool call, in words.
pub(crate) fn tool_call_blocked(ledger: &RuntimeLedger) -> Option<String> {
    if let Some(m) = ledger.limits.max_tool_calls
        && ledger.usage.tool_calls >= m
    {
        return Some(format!(
            "max_tool_calls reached ({}/{m})",
            ledger.usage.tool_calls
        ));
    }
    wall_blocked(ledger)
}

fn wall_blocked(ledger: &RuntimeLedger) -> Option<String> {
    match (ledger.deadline_at_ms, ledger.limits.max_wall_secs) {
        (Some(d), Some(secs)) if now_ms() >= d => Some(format!(
            "max_wall_secs reached ({secs} s since the session's runtime started)"
        )),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_block_and_flags_raise_them() {
        let mut l = fresh(&RuntimeLimits {
            max_turns: Some(1),
            ..RuntimeLimits::default()
        });
        assert!(model_call_blocked(&l).is_none());
        add_model_call(
            &mut l,
            Usage {
                input_tokens: 5,
                output_tokens: 1,
            },
        );
        assert!(model_call_blocked(&l).unwrap().starts_with("max_turns"));
        apply_user_limits(
            &mut l,
            &RuntimeLimits {
                max_turns: Some(3),
                ..Default::default()
            },
        );
        assert!(model_call_blocked(&l).is_none());
        assert_eq!(l.usage.turns, 1, "usage is never reset");
        apply_user_limits(
            &mut l,
            &RuntimeLimits {
                max_wall_secs: Some(0),
                ..Default::default()
            },
        );
        assert!(model_call_blocked(&l).unwrap().starts_with("max_wall_secs"));
    }

    #[test]
    fn turns_racing_for_a_shared_budget_never_pass_it() {
        let b = SharedBudget::new(&fresh(&RuntimeLimits {
            max_turns: Some(5),
            max_tool_calls: Some(7),
            ..RuntimeLimits::default()
        }));
        let threads: Vec<_> = (0..8)
            .map(|_| {
                let b = b.clone();
                std::thread::spawn(move || {
                    let calls = (0..10).filter(|_| b.reserve_model_call().is_ok()).count();
                    let tools = (0..10).filter(|_| b.reserve_tool_call().is_ok()).count();
                    (calls, tools)
                })
            })
            .collect();
        let (calls, tools) = threads
            .into_iter()
            .map(|t| t.join().unwrap())
            .fold((0, 0), |a, x| (a.0 + x.0, a.1 + x.1));
        assert_eq!((calls, tools), (5, 7));
        assert_eq!(b.usage().turns, 5);
        assert!(b.blocked().unwrap().starts_with("max_turns"));
        assert!(b.tool_blocked().unwrap().starts_with("max_tool_calls"));
    }

    #[test]
    fn a_refused_reservation_names_the_limit_in_words() {
        let b = SharedBudget::new(&fresh(&RuntimeLimits {
            max_turns: Some(0),
            max_tool_calls: Some(0),
            ..RuntimeLimits::default()
        }));
        let model = b.reserve_model_call().unwrap_err();
        assert_eq!(Some(model.to_string()), b.blocked());
        assert!(model.0.starts_with("max_turns"), "{model}");
        let tool = b.reserve_tool_call().unwrap_err();
        assert_eq!(Some(tool.to_string()), b.tool_blocked());
        assert!(tool.0.starts_with("max_tool_calls"), "{tool}");
        assert_eq!(b.usage().turns, 0, "a refused call is not counted");
    }
}
