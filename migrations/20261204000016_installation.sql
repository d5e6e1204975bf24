-- A random id for this database, carried in the branches and PR markers
-- of its jobs, so that the branches and PRs of a lost database (whose job
-- ids a new one would reuse from 1) never match a new job.
--
-- legacy_jobs_upto: the highest job id when this migration ran. Those jobs
-- keep their `longtx/<job>` branch and `<!-- longtx-job: <job> -->` marker;
-- every later job is `longtx/<installation>/<job>`. A new database has no
-- jobs, so 0: no bare name ever matches.
CREATE TABLE installation (
    singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    id text NOT NULL CHECK (id ~ '^[a-z0-9]{8}$'),
    legacy_jobs_upto bigint NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);

-- md5 of randomness and the clock: not a secret, only unlikely to repeat
-- (gen_random_uuid needs PostgreSQL 13; this runs on older servers too).
INSERT INTO installation (id, legacy_jobs_upto)
SELECT substr(md5(random()::text || clock_timestamp()::text || pg_backend_pid()::text), 1, 8),
       COALESCE((SELECT max(id) FROM jobs), 0);
