-- Every source's longest transaction per day and table, under the
-- threshold too: what the what-if reads to say what a lower threshold
-- would bring. Filled by the collector (in-process, or `longtx collect
-- --push`) and by the alert roll-up; a row only ever grows (GREATEST), so a
-- push or a roll-up applied twice changes nothing.
CREATE TABLE observed_daily (
    day          DATE NOT NULL,
    -- '' when the alert named no table.
    table_name   TEXT NOT NULL DEFAULT '',
    query_source TEXT NOT NULL,
    max_seconds  DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (day, table_name, query_source),
    CONSTRAINT observed_daily_bounded CHECK (
        length(table_name) <= 128 AND length(query_source) BETWEEN 1 AND 256 AND max_seconds >= 0
    )
);

-- The alerts already received count as observations: the what-if has the
-- last 30 days at once after the upgrade.
INSERT INTO observed_daily (day, table_name, query_source, max_seconds)
SELECT (received_at AT TIME ZONE 'UTC')::date, left(COALESCE(table_name, ''), 128),
       query_source, max(duration_seconds)
FROM alert_events
WHERE query_source IS NOT NULL AND duration_seconds >= 0
  AND outcome NOT IN ('resolved', 'rejected')
  AND received_at >= now() - interval '30 days'
GROUP BY 1, 2, 3;
