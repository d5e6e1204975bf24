-- The coding agent's prompt, rendered once when the job is created and
-- stored with what it was made from.
ALTER TABLE jobs
    ADD COLUMN prompt             TEXT,
    ADD COLUMN prompt_revision    TEXT,
    ADD COLUMN prompt_sha256      TEXT,
    ADD COLUMN prompt_truncation  TEXT,
    ADD COLUMN prompt_error       TEXT,
    ADD COLUMN prompt_rendered_at TIMESTAMPTZ;

-- The renderer's sweep: jobs still waiting for a prompt.
CREATE INDEX jobs_awaiting_prompt ON jobs (id)
    WHERE prompt IS NULL AND prompt_error IS NULL;
