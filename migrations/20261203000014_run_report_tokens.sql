-- Tokens per run, for agents that report no dollar figure (Codex).
ALTER TABLE run_reports
    ADD COLUMN input_tokens        BIGINT,
    ADD COLUMN cached_input_tokens BIGINT,
    ADD COLUMN output_tokens       BIGINT;
