//! Recording a batch of received alerts: dedupe per `query_source` and the
//! audit trail, in one transaction on one connection.

use crate::{Store, StoreError};
use longtx_core::query_source::canonical;
use longtx_core::{AlertOrigin, Outcome};
use sqlx::{PgConnection, Row};
use std::time::Duration;

/// One received alert, as the intake hands it to the store.
#[derive(Debug, Clone)]
pub struct IntakeRecord {
    pub origin: AlertOrigin,
    pub query_source: Option<String>,
    pub table: Option<String>,
    pub duration_seconds: Option<f64>,
    pub link: Option<String>,
    /// The alert's JSON exactly as received.
    pub raw_payload: String,
    pub action: IntakeAction,
}

#[derive(Debug, Clone, PartialEq)]
pub enum IntakeAction {
    /// The outcome is already known (ignored, excluded, rejected...): only
    /// the audit trail is written.
    Record {
        outcome: Outcome,
        detail: Option<String>,
    },
    /// Create a job for the source, or join its active one.
    Enqueue,
}

#[derive(Debug, Clone, PartialEq)]
pub struct RecordedOutcome {
    pub outcome: Outcome,
    pub job_id: Option<i64>,
    pub detail: Option<String>,
}

/// Links and tables kept per job; repeated alerts must not grow rows forever.
const MAX_LINKS_PER_JOB: i32 = 20;
const MAX_TABLES_PER_JOB: i32 = 50;

/// Joins the active job of the source, or creates one unless a job of that
/// source ended less than `cooldown` ago, and appends the alert event: one
/// statement, so a lone alert costs one round trip and is atomic without an
/// explicit transaction. The partial unique index makes the insert-or-update
/// atomic across concurrent requests and replicas.
const ENQUEUE_SQL: &str = r#"
WITH cooling AS (
    SELECT id FROM jobs
    WHERE source_key = $11
      AND ended_at > now() - make_interval(secs => $5::float8)
      AND NOT EXISTS (
          SELECT 1 FROM jobs active
          WHERE active.source_key = $11
            AND active.state IN ('queued', 'dispatching', 'agent_running', 'pre_review', 'in_review'))
    ORDER BY ended_at DESC
    LIMIT 1
),
upsert AS (
    INSERT INTO jobs (query_source, tables, max_duration_seconds, alert_links)
    SELECT $1::text, COALESCE($2::text[], '{}'), $3::float8, COALESCE($4::text[], '{}')
    WHERE NOT EXISTS (SELECT 1 FROM cooling)
    ON CONFLICT (source_key) WHERE state IN ('queued', 'dispatching', 'agent_running', 'pre_review', 'in_review')
    DO UPDATE SET
        alert_count = jobs.alert_count + 1,
        -- The most informative form wins: a form that is its own key
        -- (Datadog's, lowercased and flattened) gives way to one that is not.
        query_source = CASE
            WHEN jobs.query_source = jobs.source_key AND EXCLUDED.query_source <> jobs.source_key
            THEN EXCLUDED.query_source ELSE jobs.query_source END,
        max_duration_seconds = GREATEST(jobs.max_duration_seconds, EXCLUDED.max_duration_seconds),
        tables = CASE
            WHEN EXCLUDED.tables <@ jobs.tables OR cardinality(jobs.tables) >= $6::int THEN jobs.tables
            ELSE ARRAY(SELECT DISTINCT t FROM unnest(jobs.tables || EXCLUDED.tables) AS t ORDER BY t)
        END,
        alert_links = CASE
            WHEN EXCLUDED.alert_links <@ jobs.alert_links OR cardinality(jobs.alert_links) >= $7::int THEN jobs.alert_links
            ELSE jobs.alert_links || EXCLUDED.alert_links
        END,
        first_seen_at = LEAST(jobs.first_seen_at, EXCLUDED.first_seen_at),
        last_seen_at = GREATEST(jobs.last_seen_at, EXCLUDED.last_seen_at),
        updated_at = now()
    RETURNING id, (xmax = 0) AS created
),
decided AS (
    SELECT id, created, NULL::text AS detail FROM upsert
    UNION ALL
    SELECT id, false, format('job %s for this source ended less than the cooldown ago', id) FROM cooling
),
event AS (
    INSERT INTO alert_events
        (origin, query_source, table_name, duration_seconds, outcome, detail, job_id, raw_payload)
    SELECT $8::text, $1::text, $9::text, $3::float8,
           CASE WHEN created THEN 'created' ELSE 'deduped' END, detail, id, $10::jsonb
    FROM decided
)
SELECT id, created, detail FROM decided
"#;

const INSERT_EVENTS_SQL: &str = r#"
INSERT INTO alert_events
    (origin, query_source, table_name, duration_seconds, outcome, detail, job_id, raw_payload)
SELECT origin, query_source, table_name, duration_seconds, outcome, detail, job_id, raw::jsonb
FROM unnest($1::text[], $2::text[], $3::text[], $4::float8[], $5::text[], $6::text[], $7::int8[], $8::text[])
    AS e(origin, query_source, table_name, duration_seconds, outcome, detail, job_id, raw)
"#;

impl Store {
    /// Records a batch atomically. A lone alert is one statement; a batch is
    /// one short transaction in which enqueues run in `query_source` order,
    /// so that two concurrent batches naming the same sources lock their
    /// rows in the same order and cannot deadlock.
    pub async fn record_alerts(
        &self,
        records: &[IntakeRecord],
        cooldown: Duration,
    ) -> Result<Vec<RecordedOutcome>, StoreError> {
        let mut outcomes: Vec<Option<RecordedOutcome>> = records
            .iter()
            .map(|r| match &r.action {
                IntakeAction::Record { outcome, detail } => Some(RecordedOutcome {
                    outcome: *outcome,
                    job_id: None,
                    detail: detail.clone(),
                }),
                IntakeAction::Enqueue => None,
            })
            .collect();
        let mut enqueue_order: Vec<usize> = (0..records.len())
            .filter(|&i| records[i].action == IntakeAction::Enqueue)
            .collect();
        // By key, the order rows are locked in (two forms of one source
        // lock the same row).
        enqueue_order.sort_by_cached_key(|&i| records[i].query_source.as_deref().map(canonical));
        let known: Vec<usize> = (0..records.len())
            .filter(|&i| outcomes[i].is_some())
            .collect();

        if records.len() == 1 {
            let mut conn = self.acquire().await?;
            match enqueue_order.first() {
                Some(&i) => outcomes[i] = Some(enqueue(&mut conn, &records[i], cooldown).await?),
                None => insert_known_events(&mut conn, records, &outcomes, &known).await?,
            }
        } else if !records.is_empty() {
            let mut tx = self.begin().await?;
            for &i in &enqueue_order {
                outcomes[i] = Some(enqueue(&mut tx, &records[i], cooldown).await?);
            }
            insert_known_events(&mut tx, records, &outcomes, &known).await?;
            tx.commit().await?;
        }
        Ok(outcomes
            .into_iter()
            .map(|o| o.expect("every record has an outcome"))
            .collect())
    }
}

async fn enqueue(
    conn: &mut PgConnection,
    record: &IntakeRecord,
    cooldown: Duration,
) -> Result<RecordedOutcome, StoreError> {
    let source = record
        .query_source
        .as_deref()
        .expect("an enqueued alert has a validated query_source");
    let tables: Option<Vec<String>> = record.table.clone().map(|t| vec![t]);
    let links: Option<Vec<String>> = record.link.clone().map(|l| vec![l]);
    let row = sqlx::query(ENQUEUE_SQL)
        .bind(source)
        .bind(tables)
        .bind(record.duration_seconds)
        .bind(links)
        .bind(cooldown.as_secs_f64())
        .bind(MAX_TABLES_PER_JOB)
        .bind(MAX_LINKS_PER_JOB)
        .bind(record.origin.as_str())
        .bind(record.table.as_deref())
        .bind(&record.raw_payload)
        .bind(canonical(source))
        .fetch_one(&mut *conn)
        .await?;
    let created: bool = row.try_get("created")?;
    Ok(RecordedOutcome {
        outcome: if created {
            Outcome::Created
        } else {
            Outcome::Deduped
        },
        job_id: Some(row.try_get("id")?),
        detail: row.try_get("detail")?,
    })
}

/// The audit rows of alerts whose outcome was known without a job.
async fn insert_known_events(
    conn: &mut PgConnection,
    records: &[IntakeRecord],
    outcomes: &[Option<RecordedOutcome>],
    known: &[usize],
) -> Result<(), StoreError> {
    if known.is_empty() {
        return Ok(());
    }
    let rows = || {
        known
            .iter()
            .map(|&i| (&records[i], outcomes[i].as_ref().expect("known outcome")))
    };
    sqlx::query(INSERT_EVENTS_SQL)
        .bind(rows().map(|(r, _)| r.origin.as_str()).collect::<Vec<_>>())
        .bind(
            rows()
                .map(|(r, _)| r.query_source.as_deref())
                .collect::<Vec<_>>(),
        )
        .bind(rows().map(|(r, _)| r.table.as_deref()).collect::<Vec<_>>())
        .bind(rows().map(|(r, _)| r.duration_seconds).collect::<Vec<_>>())
        .bind(rows().map(|(_, o)| o.outcome.as_str()).collect::<Vec<_>>())
        .bind(rows().map(|(_, o)| o.detail.as_deref()).collect::<Vec<_>>())
        .bind(rows().map(|(_, o)| o.job_id).collect::<Vec<_>>())
        .bind(
            rows()
                .map(|(r, _)| r.raw_payload.as_str())
                .collect::<Vec<_>>(),
        )
        .execute(&mut *conn)
        .await?;
    Ok(())
}
