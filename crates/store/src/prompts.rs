//! Storing each job's prompt. Rendering happens between these calls, with
//! no connection held.

use crate::{Store, StoreError};
use serde::Serialize;

/// A job's prompt as stored.
#[derive(Debug, Clone, Serialize, sqlx::FromRow)]
pub struct StoredPrompt {
    pub prompt: Option<String>,
    pub prompt_revision: Option<String>,
    pub prompt_sha256: Option<String>,
    pub prompt_truncation: Option<String>,
    pub prompt_error: Option<String>,
    /// Checked, never shown.
    #[serde(skip)]
    pub prompt_token: Option<String>,
}

impl Store {
    /// Records a rendered prompt unless the job already has one (a retried
    /// render must not replace what a dispatch may already have used).
    pub async fn save_prompt(
        &self,
        id: i64,
        text: &str,
        revision: &str,
        sha256: &str,
        truncation: Option<&str>,
        located: &[String],
    ) -> Result<bool, StoreError> {
        let updated = sqlx::query(
            "UPDATE jobs SET prompt = $2, prompt_revision = $3, prompt_sha256 = $4, prompt_truncation = $5, \
                 located_paths = $6, prompt_error = NULL, prompt_rendered_at = now(), updated_at = now() \
             WHERE id = $1 AND prompt IS NULL",
        )
        .bind(id)
        .bind(text)
        .bind(revision)
        .bind(sha256)
        .bind(truncation)
        .bind(located)
        .execute(self.pool())
        .await?
        .rows_affected();
        Ok(updated == 1)
    }

    /// Records why the prompt could not be made (a broken template, say).
    pub async fn save_prompt_error(&self, id: i64, error: &str) -> Result<(), StoreError> {
        sqlx::query(
            "UPDATE jobs SET prompt_error = $2, prompt_rendered_at = now(), updated_at = now() \
             WHERE id = $1 AND prompt IS NULL",
        )
        .bind(id)
        .bind(error)
        .execute(self.pool())
        .await?;
        Ok(())
    }

    pub async fn job_prompt(&self, id: i64) -> Result<Option<StoredPrompt>, StoreError> {
        Ok(sqlx::query_as::<_, StoredPrompt>(
            "SELECT prompt, prompt_revision, prompt_sha256, prompt_truncation, prompt_error, prompt_token FROM jobs WHERE id = $1",
        )
        .bind(id)
        .fetch_optional(self.pool())
        .await?)
    }

    /// Jobs that still wait for a prompt, oldest first.
    pub async fn jobs_awaiting_prompt(&self, limit: i64) -> Result<Vec<i64>, StoreError> {
        let ids: Vec<(i64,)> = sqlx::query_as(
            "SELECT id FROM jobs WHERE prompt IS NULL AND prompt_error IS NULL ORDER BY id LIMIT $1",
        )
        .bind(limit)
        .fetch_all(self.pool())
        .await?;
        Ok(ids.into_iter().map(|(id,)| id).collect())
    }

    /// Clears a failed prompt so the renderer tries again (after the
    /// template or catalogue was fixed).
    pub async fn retry_prompt(&self, id: i64) -> Result<bool, StoreError> {
        let updated = sqlx::query("UPDATE jobs SET prompt_error = NULL WHERE id = $1 AND prompt IS NULL AND prompt_error IS NOT NULL")
            .bind(id)
            .execute(self.pool())
            .await?
            .rows_affected();
        Ok(updated == 1)
    }
}
