//! What a workflow run reports about its agent when it ends: cost in US
//! dollars and turns (Claude Code's execution file), tokens (Codex's
//! session file, priced by the workflow when the repository sets prices),
//! or Devin's ACUs. The
//! workflow posts it to `POST /api/jobs/{id}/run-report` with the job's
//! token; longtx keeps one report per run.

use serde::Deserialize;

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunReport {
    /// `github.run_id` of the reporting run.
    pub run_id: i64,
    /// 0 for the job's first run; the revision round otherwise.
    #[serde(default)]
    pub round: u32,
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

impl RunReport {
    pub fn validate(&self) -> Result<(), RunReportError> {
        if self.run_id <= 0 {
            return Err(RunReportError::RunId);
        }
        let amount_ok = |v: Option<f64>| {
            v.is_none_or(|v| v.is_finite() && (0.0..=MAX_RUN_COST_USD).contains(&v))
        };
        if !amount_ok(self.cost_usd) || !amount_ok(self.acus) {
            return Err(RunReportError::Amount);
        }
        if self.agent.as_deref().is_some_and(|a| {
            a.len() > 40
                || !a
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        }) {
            return Err(RunReportError::Agent);
        }
        // More than a billion tokens in one run is a unit mistake too.
        if [
            self.input_tokens,
            self.cached_input_tokens,
            self.output_tokens,
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

    fn report(json: serde_json::Value) -> Result<RunReport, String> {
        let r: RunReport = serde_json::from_value(json).map_err(|e| e.to_string())?;
        r.validate().map_err(|e| e.to_string())?;
        Ok(r)
    }

    #[test]
    fn reports_are_checked_before_they_count_against_the_cap() {
        let ok = report(
            serde_json::json!({"run_id": 9001, "agent": "claude", "cost_usd": 1.25, "turns": 17}),
        )
        .unwrap();
        assert_eq!(ok.round, 0);
        assert!(report(serde_json::json!({"run_id": 0})).is_err());
        assert!(report(serde_json::json!({"run_id": 1, "cost_usd": -1})).is_err());
        assert!(report(serde_json::json!({"run_id": 1, "cost_usd": 125000})).is_err());
        assert!(report(serde_json::json!({"run_id": 1, "agent": "Claude Code"})).is_err());
        assert!(report(serde_json::json!({"run_id": 1, "surprise": true})).is_err());
        let codex = report(
            serde_json::json!({"run_id": 2, "agent": "codex", "input_tokens": 26549,
            "cached_input_tokens": 24448, "output_tokens": 1590}),
        )
        .unwrap();
        assert_eq!(codex.output_tokens, Some(1590));
        assert!(
            report(serde_json::json!({"run_id": 1, "output_tokens": 5_000_000_000u64})).is_err()
        );
    }
}
