-- What each dispatched agent run counts against the daily caps: its
-- configured budget (LONGTX_RUN_BUDGET_USD, LONGTX_PRE_REVIEW_BUDGET_USD),
-- never the figure the run reports, which the agent could set. One row per
-- run longtx sent: a fix run (round 0), a revision round, or a pre-review of
-- one head (a head is judged once).
CREATE TABLE run_budgets (
    job_id     BIGINT NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
    kind       TEXT NOT NULL CHECK (kind IN ('fix', 'round', 'pre_review')),
    round      INTEGER NOT NULL DEFAULT 0,
    head_sha   TEXT NOT NULL DEFAULT '',
    budget_usd DOUBLE PRECISION NOT NULL CHECK (budget_usd >= 0),
    counted_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    PRIMARY KEY (job_id, kind, round, head_sha)
);
CREATE INDEX run_budgets_counted_at ON run_budgets (counted_at);

-- Runs dispatched before this migration counted what they reported; they
-- keep counting it for today, so an upgrade never frees a spent cap.
INSERT INTO run_budgets (job_id, kind, round, head_sha, budget_usd, counted_at)
SELECT job_id, CASE WHEN round = 0 THEN 'fix' ELSE 'round' END, round, 'run:' || run_id,
       LEAST(GREATEST(COALESCE(cost_usd, 0), 0), 10000), reported_at
FROM run_reports
WHERE reported_at >= date_trunc('day', now())
ON CONFLICT DO NOTHING;

-- A reader (no write access) is told once per PR that a revise needs write
-- access; their later commands on it are dropped without a permission
-- lookup or a reply.
ALTER TABLE revision_requests ADD COLUMN refused_for_permission BOOLEAN NOT NULL DEFAULT false;

-- A round whose result longtx could not apply is retried with a backoff
-- and ends, with the reason, after a bounded number of attempts instead of
-- looping until its artifact expires.
ALTER TABLE revision_rounds ADD COLUMN apply_attempts INTEGER NOT NULL DEFAULT 0;
ALTER TABLE revision_rounds ADD COLUMN apply_next_at TIMESTAMPTZ;
