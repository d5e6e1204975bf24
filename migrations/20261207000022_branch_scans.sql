-- The backlog: scans of the default branch (or of LONGTX_REPO_PATH's
-- checkout when longtx has no GitHub), kept so the dashboard can say what
-- is new since the scan of a week before. A scan is recorded when the
-- branch moved or a day has passed; the newest 120 are kept.
CREATE TABLE branch_scans (
    id BIGSERIAL PRIMARY KEY,
    branch TEXT NOT NULL,
    commit_sha TEXT NOT NULL,
    scanned_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    entry_points INTEGER NOT NULL,
    -- longtx_core::backlog::BacklogFinding, as a JSON array.
    findings JSONB NOT NULL
);
CREATE INDEX branch_scans_by_time ON branch_scans (scanned_at DESC);
