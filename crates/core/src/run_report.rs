//! What an agent run cost: dollars and turns (Claude Code's execution
//! file), tokens (Codex's session file, priced by the workflow when the
//! repository sets prices), or Devin's ACUs (read by longtx from Devin's
//! API). The figures come from the result of the run longtx dispatched
//! (`longtx-result`), never from a POST; longtx keeps one report per run.

use serde::Deserialize;

/// The cost figures a run's result carries, all optional.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub struct RunCost {
    /// `claude`, `codex`, `devin`...
    #[serde(default)]
    pub agent: Option<String>,
    #[serde(default)]
    pub cost_usd: Option<f64>,
    #[serde(default)]
    pub turns: Option<u32>,
    #[serde(default)]
    pub acus: Option<f64>,
    /// Tokens, for agents that report no dollar figure (Codex's session
    /// file): input (cached included), of which cached, and output.
    #[serde(default)]
    pub input_tokens: Option<u64>,
    #[serde(default)]
    pub cached_input_tokens: Option<u64>,
    #[serde(default)]
    pub output_tokens: Option<u64>,
}

/// One run's cost, tied to the run longtx dispatched.
#[derive(Debug, Clone, PartialEq)]
pub struct RunReport {
    /// The id of the run longtx dispatched (never the result's word).
    pub run_id: i64,
    /// 0 for the job's first run; the revision round otherwise.
    pub round: u32,
    pub cost: RunCost,
}

/// One run costing more than this is a unit mistake (cents as dollars), not a run.
pub const MAX_RUN_COST_USD: f64 = 10_000.0;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RunReportError {
    #[error("run_id must be a positive GitHub run id")]
    RunId,
    #[error("cost_usd and acus must be finite numbers from 0 to {MAX_RUN_COST_USD}")]
    Amount,
    #[error("agent is at most 40 characters of a-z, 0-9 and -")]
    Agent,
    #[error("round is at most 100")]
    Round,
    #[error("token counts are at most a billion a run")]
    Tokens,
}

impl RunCost {
    /// The cost as the report of run `run_id`, round `round`, when its
    /// figures are believable (not negative, under the unit-mistake bound).
    pub fn report(&self, run_id: u64, round: u32) -> Result<RunReport, RunReportError> {
        let report = RunReport {
            run_id: run_id as i64,
            round,
            cost: self.clone(),
        };
        report.validate()?;
        Ok(report)
    }
}

impl RunCost {
    /// The cost as longtx records it for a run whose budget is
    /// `budget_usd`: a reported dollar figure within the budget is kept,
    /// one above it is cut to it, and a missing or implausible one (not a
    /// finite number from 0 up) counts as the whole budget. What the agent
    /// reports is shown, never trusted past what longtx gave the run.
    pub fn within_budget(&self, budget_usd: f64) -> (RunCost, Option<String>) {
        let mut cost = self.clone();
        let (kept, note) = match self.cost_usd {
            Some(v) if v.is_finite() && (0.0..=budget_usd).contains(&v) => (v, None),
            Some(v) if v.is_finite() && v > budget_usd => (
                budget_usd,
                Some(format!(
                    "reported ${v:.2}, over its ${budget_usd:.2} budget: counted as the budget"
                )),
            ),
            Some(_) => (
                budget_usd,
                Some(
                    "reported a cost that is not a number of dollars: counted as its budget".into(),
                ),
            ),
            None => (
                budget_usd,
                Some("reported no cost: counted as its budget".into()),
            ),
        };
        cost.cost_usd = Some(kept);
        (cost, note)
    }
}

impl RunReport {
    pub fn validate(&self) -> Result<(), RunReportError> {
        let cost = &self.cost;
        if self.run_id <= 0 {
            return Err(RunReportError::RunId);
        }
        let amount_ok = |v: Option<f64>| {
            v.is_none_or(|v| v.is_finite() && (0.0..=MAX_RUN_COST_USD).contains(&v))
        };
        if !amount_ok(cost.cost_usd) || !amount_ok(cost.acus) {
            return Err(RunReportError::Amount);
        }
        if cost.agent.as_deref().is_some_and(|a| {
            a.len() > 40
                || !a
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        }) {
            return Err(RunReportError::Agent);
        }
        // More than a billion tokens in one run is a unit mistake too.
        if [
            cost.input_tokens,
            cost.cached_input_tokens,
            cost.output_tokens,
        ]
        .iter()
        .flatten()
        .any(|t| *t > 1_000_000_000)
        {
            return Err(RunReportError::Tokens);
        }
        if self.round > 100 {
            return Err(RunReportError::Round);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(json: serde_json::Value) -> Result<RunReport, RunReportError> {
        let cost: RunCost = serde_json::from_value(json).unwrap();
        cost.report(9001, 0)
    }

    #[test]
    fn a_reported_cost_is_kept_within_the_budget_and_a_missing_one_is_the_budget() {
        let claimed = |v: Option<f64>| RunCost {
            cost_usd: v,
            ..RunCost::default()
        };
        assert_eq!(
            claimed(Some(4.87)).within_budget(5.0).0.cost_usd,
            Some(4.87)
        );
        let (over, why) = claimed(Some(10_000.0)).within_budget(5.0);
        assert_eq!(over.cost_usd, Some(5.0));
        assert!(why.unwrap().contains("over its $5.00 budget"));
        assert_eq!(claimed(None).within_budget(5.0).0.cost_usd, Some(5.0));
        assert_eq!(claimed(Some(-3.0)).within_budget(5.0).0.cost_usd, Some(5.0));
        assert_eq!(
            claimed(Some(f64::NAN)).within_budget(5.0).0.cost_usd,
            Some(5.0)
        );
        // Zero is a believable figure for a run that did nothing: it is
        // shown as zero, while the caps count the budget regardless.
        assert_eq!(claimed(Some(0.0)).within_budget(5.0).0.cost_usd, Some(0.0));
    }

    #[test]
    fn reports_are_checked_before_they_count_against_the_cap() {
        let ok =
            report(serde_json::json!({"agent": "claude", "cost_usd": 1.25, "turns": 17})).unwrap();
        assert_eq!((ok.run_id, ok.round, ok.cost.turns), (9001, 0, Some(17)));
        assert_eq!(RunCost::default().report(0, 0), Err(RunReportError::RunId));
        assert_eq!(
            report(serde_json::json!({"cost_usd": -1})),
            Err(RunReportError::Amount)
        );
        assert_eq!(
            report(serde_json::json!({"cost_usd": 125000})),
            Err(RunReportError::Amount)
        );
        assert_eq!(
            report(serde_json::json!({"agent": "Claude Code"})),
            Err(RunReportError::Agent)
        );
        assert_eq!(
            RunCost::default().report(1, 101),
            Err(RunReportError::Round)
        );
        let codex = report(serde_json::json!({"agent": "codex", "input_tokens": 26549,
            "cached_input_tokens": 24448, "output_tokens": 1590}))
        .unwrap();
        assert_eq!(codex.cost.output_tokens, Some(1590));
        assert_eq!(
            report(serde_json::json!({"output_tokens": 5_000_000_000u64})),
            Err(RunReportError::Tokens)
        );
    }
}
