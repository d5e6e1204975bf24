-- longtx's own scan of an agent's patch, before the PR opens: whether the
-- alerted source still reaches slow work inside a transaction in the
-- patched code, and what slow work the patch added
-- (`longtx_core::patch_check::PatchCheck`, as JSON). Set for each round's
-- patch longtx commits; NULL when no patch was checked (jobs from before
-- this migration, a patch whose scan failed).
ALTER TABLE jobs ADD COLUMN patch_check JSONB;
