-- One source, one job, whatever sent it: jobs are keyed by the canonical
-- form of their query_source (Datadog's tag normalisation: lowercase, every
-- character but ASCII letters, digits and _ - : . / turned into _, runs of _
-- folded, trailing _ dropped; `longtx_core::query_source::canonical`), so an
-- Alertmanager alert for `Billing::SyncWorker` and a Datadog alert for
-- `billing::syncworker` meet on one job. `query_source` keeps the most
-- informative form seen, for people and the code locator.
-- Computed by the database itself, so every writer (intake, tests, tools)
-- gets the same key; non-ASCII characters become _ before lower(), so the
-- collation cannot turn one into an ASCII letter (a test holds this equal
-- to the Rust function).
ALTER TABLE jobs ADD COLUMN source_key TEXT GENERATED ALWAYS AS (
    COALESCE(NULLIF(rtrim(
        regexp_replace(
            regexp_replace(lower(regexp_replace(btrim(query_source), '[^\x01-\x7F]', '_', 'g')),
                           '[^a-z0-9_:./-]', '_', 'g'),
            '_+', '_', 'g'),
        '_'), ''), '_')
) STORED;

-- Two active jobs whose sources now share a key (one from each sender):
-- the older one stays, the newer ends, saying where its source went.
WITH ranked AS (
    SELECT id, source_key, first_value(id) OVER (PARTITION BY source_key ORDER BY id) AS kept,
           row_number() OVER (PARTITION BY source_key ORDER BY id) AS n
    FROM jobs
    WHERE state IN ('queued', 'dispatching', 'agent_running', 'pre_review', 'in_review')
)
UPDATE jobs SET state = 'failed', ended_at = now(), updated_at = now(), lease_until = NULL,
       state_reason = format('merged into job %s: the same source in another form (migration 9)', ranked.kept)
FROM ranked WHERE jobs.id = ranked.id AND ranked.n > 1;

DROP INDEX jobs_one_active_per_source;
CREATE UNIQUE INDEX jobs_one_active_per_source ON jobs (source_key)
    WHERE state IN ('queued', 'dispatching', 'agent_running', 'pre_review', 'in_review');
DROP INDEX jobs_ended_by_source;
CREATE INDEX jobs_ended_by_source ON jobs (source_key, ended_at DESC) WHERE ended_at IS NOT NULL;
CREATE INDEX jobs_by_source_key ON jobs (source_key, id DESC);
