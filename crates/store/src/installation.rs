//! This database's installation id (`longtx_core::installation`), read
//! once and kept: it never changes after the migration made it.

use crate::{Store, StoreError};
use longtx_core::installation::Installation;

impl Store {
    pub async fn installation(&self) -> Result<Installation, StoreError> {
        if let Some(known) = self.installation.get() {
            return Ok(known.clone());
        }
        let (id, legacy_jobs_upto): (String, i64) =
            sqlx::query_as("SELECT id, legacy_jobs_upto FROM installation")
                .fetch_one(self.pool())
                .await?;
        let installation = Installation::new(&id, legacy_jobs_upto)
            .map_err(|e| StoreError::Database(sqlx::Error::Decode(Box::new(e))))?;
        Ok(self.installation.get_or_init(|| installation).clone())
    }
}
