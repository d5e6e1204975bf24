-- The agent answers its reviews: revision rounds on the fix branch, started
-- by a `revise` verdict of the AI pre-review or by a person.

-- A writer's `/longtx stop`: no more automatic rounds or closes on this PR.
ALTER TABLE jobs
    ADD COLUMN revisions_stopped_by TEXT,
    ADD COLUMN revisions_stopped_at TIMESTAMPTZ;

-- People's requests, recorded by the webhook in the delivery's transaction
-- and answered by a worker (the permission check and the inline comments
-- are GitHub calls). One row per review or comment: a redelivery, or a
-- second delivery of the same review, finds it.
CREATE TABLE revision_requests (
    id           BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    job_id       BIGINT NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
    source       TEXT NOT NULL CHECK (source IN ('review', 'comment')),
    github_id    BIGINT NOT NULL,
    kind         TEXT NOT NULL CHECK (kind IN ('revise', 'stop')),
    login        TEXT NOT NULL,
    body         TEXT NOT NULL,
    -- pending: to be judged; decided: the answer is to be posted; answered.
    state        TEXT NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'decided', 'answered')),
    answer       TEXT,
    round        INTEGER,
    lease_until  TIMESTAMPTZ,
    attempts     INTEGER NOT NULL DEFAULT 0,
    created_at   TIMESTAMPTZ NOT NULL DEFAULT now(),
    answered_at  TIMESTAMPTZ,
    UNIQUE (source, github_id)
);
CREATE INDEX revision_requests_open ON revision_requests (id) WHERE state <> 'answered';

-- Round 1, 2, ... of a job (round 0 is its first run, in `jobs`).
CREATE TABLE revision_rounds (
    job_id            BIGINT NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
    round             INTEGER NOT NULL CHECK (round >= 1),
    trigger           TEXT NOT NULL CHECK (trigger IN ('pre_review', 'changes_requested', 'comment')),
    request_id        BIGINT REFERENCES revision_requests (id) ON DELETE SET NULL,
    requested_by      TEXT,
    -- The pre-review mode when the round began: what a round that pushes
    -- nothing leads to.
    mode              TEXT NOT NULL CHECK (mode IN ('on', 'off', 'advisory')),
    head_before       TEXT NOT NULL,
    findings          JSONB NOT NULL,
    request           TEXT NOT NULL DEFAULT '',
    -- Rendered when the round is first claimed (it needs the PR's files).
    prompt            TEXT,
    prompt_sha256     TEXT,
    -- queued -> dispatching -> running -> checking (the run ended well; the
    -- branch head is read) -> pushed | no_change; or failed, expired,
    -- cancelled (the PR closed, or /longtx stop, before it started).
    state             TEXT NOT NULL DEFAULT 'queued' CHECK (state IN (
        'queued', 'dispatching', 'running', 'checking', 'pushed', 'no_change', 'failed', 'expired', 'cancelled')),
    state_reason      TEXT,
    lease_until       TIMESTAMPTZ,
    dispatch_attempts INTEGER NOT NULL DEFAULT 0,
    dispatched_at     TIMESTAMPTZ,
    run_id            BIGINT,
    run_url           TEXT,
    head_after        TEXT,
    created_at        TIMESTAMPTZ NOT NULL DEFAULT now(),
    ended_at          TIMESTAMPTZ,
    PRIMARY KEY (job_id, round)
);
-- One round at a time per PR.
CREATE UNIQUE INDEX revision_rounds_one_open ON revision_rounds (job_id)
    WHERE state IN ('queued', 'dispatching', 'running', 'checking');
CREATE INDEX revision_rounds_active ON revision_rounds (state, job_id)
    WHERE state IN ('queued', 'dispatching', 'running', 'checking');
CREATE INDEX revision_rounds_dispatched_at ON revision_rounds (dispatched_at) WHERE dispatched_at IS NOT NULL;

-- Which recorded verdicts were acted on (not repeats, stale heads or
-- verdicts for an ended job): the rounds' history in comments and prompts.
ALTER TABLE pre_review_verdicts ADD COLUMN acted BOOLEAN NOT NULL DEFAULT false;
UPDATE pre_review_verdicts SET acted = (outcome LIKE 'moved%' OR outcome = 'recorded');
