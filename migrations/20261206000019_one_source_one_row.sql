-- One source, one row: the dashboard's per-source views and the what-if
-- group by the canonical form of a source, as jobs do (migration 9), so an
-- Alertmanager alert for `admin/users#update` and a Datadog alert for
-- `admin/users_update` are one source everywhere, not only on the job.
--
-- The key is the one `jobs.source_key` holds, as a function the daily
-- tables can share; a test holds it equal to the Rust function
-- (`longtx_core::query_source::canonical`), as it does the jobs column.
-- Two expressions where the jobs column has three: a run of characters
-- outside the kept set, `_` included, becomes one `_`, which is the same
-- as turning each into `_` and folding the runs after. Non-ASCII goes
-- first, before lower(), so no collation can turn it into a kept letter.
-- Every roll-up computes it for each daily row it touches.
CREATE FUNCTION longtx_source_key(source TEXT) RETURNS TEXT
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
    SELECT COALESCE(NULLIF(rtrim(
        regexp_replace(lower(regexp_replace(btrim(source), '[^\x01-\x7F]', '_', 'g')),
                       '[^a-z0-9:./-]+', '_', 'g'),
        '_'), ''), '_')
$$;

-- The rows keep the spelling that was sent (the dashboard lists the
-- spellings seen); the stored key is what they are grouped by. Adding a
-- stored generated column computes it for every existing row: the history
-- already rolled up is regrouped at once, with nothing to backfill by hand.
ALTER TABLE alert_daily ADD COLUMN source_key TEXT
    GENERATED ALWAYS AS (longtx_source_key(query_source)) STORED;
-- No index on it: every read filters by day first (alert_daily_by_day)
-- and groups the window's rows, and each roll-up would pay for one.

ALTER TABLE observed_daily ADD COLUMN source_key TEXT
    GENERATED ALWAYS AS (longtx_source_key(query_source)) STORED;
