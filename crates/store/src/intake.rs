//! Recording a batch of received alerts: dedupe per `query_source` and the
//! audit trail, in one transaction on one connection.

use crate::{Store, StoreError};
use longtx_core::query_source::canonical;
use longtx_core::{AlertOrigin, Outcome};
use sqlx::{PgConnection, Row};
use std::collections::BTreeMap;
use std::time::Duration;

/// One received alert, as the intake hands it to the store.
#[derive(Debug, Clone)]
pub struct IntakeRecord {
    pub origin: AlertOrigin,
    pub query_source: Option<String>,
    pub table: Option<String>,
    pub duration_seconds: Option<f64>,
    pub link: Option<String>,
    /// The sessions the alert saw waiting behind the holder.
    pub waiters: Option<longtx_core::waiters::Waiters>,
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

/// Distinct sources one request may create or join jobs for; the alerts of
/// further sources are recorded `rejected` (Alertmanager sends them again
/// at the group's next `repeat_interval`). A real batch holds one group's
/// alerts: one source, a few tables.
pub const MAX_SOURCES_PER_REQUEST: usize = 500;

/// Joins the active job of the source, or creates one unless a job of that
/// source ended less than `cooldown` ago: one statement per source of the
/// batch (its alerts folded in memory first), atomic across concurrent
/// requests and replicas through the partial unique index on `source_key`.
/// The audit rows are written afterwards, for the whole batch at once.
const ENQUEUE_SQL: &str = r#"
WITH cooling AS (
    SELECT id FROM jobs
    WHERE source_key = $9
      AND ended_at > now() - make_interval(secs => $5::float8)
      AND NOT EXISTS (
          SELECT 1 FROM jobs active
          WHERE active.source_key = $9
            AND active.state IN ('queued', 'dispatching', 'agent_running', 'pre_review', 'in_review'))
    ORDER BY ended_at DESC
    LIMIT 1
),
upsert AS (
    INSERT INTO jobs (query_source, tables, max_duration_seconds, alert_links, alert_count,
                      waiters_ddl, waiters_dml, waiters_other)
    SELECT $1::text, COALESCE($2::text[], '{}'), $3::float8, COALESCE($4::text[], '{}'), $8::int,
           $10::int, $11::int, $12::int
    WHERE NOT EXISTS (SELECT 1 FROM cooling)
    ON CONFLICT (source_key) WHERE state IN ('queued', 'dispatching', 'agent_running', 'pre_review', 'in_review')
    DO UPDATE SET
        alert_count = jobs.alert_count + $8::int,
        -- The most informative form wins: a form that is its own key
        -- (Datadog's, lowercased and flattened) gives way to one that is not.
        query_source = CASE
            WHEN jobs.query_source = jobs.source_key AND EXCLUDED.query_source <> jobs.source_key
            THEN EXCLUDED.query_source ELSE jobs.query_source END,
        max_duration_seconds = GREATEST(jobs.max_duration_seconds, EXCLUDED.max_duration_seconds),
        waiters_ddl = GREATEST(jobs.waiters_ddl, EXCLUDED.waiters_ddl),
        waiters_dml = GREATEST(jobs.waiters_dml, EXCLUDED.waiters_dml),
        waiters_other = GREATEST(jobs.waiters_other, EXCLUDED.waiters_other),
        tables = CASE
            WHEN EXCLUDED.tables <@ jobs.tables OR cardinality(jobs.tables) >= $6::int THEN jobs.tables
            ELSE ARRAY(SELECT DISTINCT t FROM unnest(jobs.tables || EXCLUDED.tables) AS t ORDER BY t LIMIT $6::int)
        END,
        alert_links = CASE
            WHEN EXCLUDED.alert_links <@ jobs.alert_links OR cardinality(jobs.alert_links) >= $7::int THEN jobs.alert_links
            ELSE (jobs.alert_links || EXCLUDED.alert_links)[1:$7::int]
        END,
        first_seen_at = LEAST(jobs.first_seen_at, EXCLUDED.first_seen_at),
        last_seen_at = GREATEST(jobs.last_seen_at, EXCLUDED.last_seen_at),
        updated_at = now()
    RETURNING id, (xmax = 0) AS created
),
recurrence AS (
    -- An alert for a source whose job ended is counted against that job.
    UPDATE jobs SET recurrence_count = jobs.recurrence_count + $8::int,
        recurrence_max_seconds = GREATEST(jobs.recurrence_max_seconds, $3::float8),
        first_recurrence_at = COALESCE(jobs.first_recurrence_at, now()),
        last_recurrence_at = now()
    FROM cooling WHERE jobs.id = cooling.id
    RETURNING jobs.id
)
SELECT id, created, NULL::text AS detail FROM upsert
UNION ALL
SELECT id, false, format('job %s for this source ended less than the cooldown ago; counted as a recurrence', id) FROM recurrence
"#;

/// The source's merged job still under verification, if any: counted as a
/// recurrence; after the deploy grace, the fix did not hold (`regressed`).
/// Returns (job, regressed now, regressions of the source so far).
const MERGED_SQL: &str = r#"
WITH merged AS (
    SELECT id, ended_at + make_interval(secs => $2::float8) <= now() AS past_grace FROM jobs
    WHERE source_key = $1 AND state = 'merged'
      AND NOT EXISTS (
          SELECT 1 FROM jobs active
          WHERE active.source_key = $1
            AND active.state IN ('queued', 'dispatching', 'agent_running', 'pre_review', 'in_review'))
    ORDER BY id DESC LIMIT 1
    FOR UPDATE
)
UPDATE jobs SET recurrence_count = jobs.recurrence_count + $3::int,
    recurrence_max_seconds = GREATEST(jobs.recurrence_max_seconds, $4::float8),
    first_recurrence_at = COALESCE(jobs.first_recurrence_at, now()),
    last_recurrence_at = now(),
    state = CASE WHEN merged.past_grace THEN 'regressed' ELSE jobs.state END,
    regressed_at = CASE WHEN merged.past_grace THEN now() ELSE jobs.regressed_at END,
    state_reason = CASE WHEN merged.past_grace
        THEN format('an alert over the threshold (%s s) came after the deploy grace: the fix did not hold', COALESCE($4::float8::text, 'no duration'))
        ELSE jobs.state_reason END,
    updated_at = now()
FROM merged WHERE jobs.id = merged.id
RETURNING jobs.id, merged.past_grace AS regressed,
    -- The statement's snapshot does not see this row's own change: + 1.
    (SELECT count(*) FROM jobs r WHERE r.source_key = $1 AND r.state = 'regressed') + 1 AS regressions
"#;

const INSERT_EVENTS_SQL: &str = r#"
INSERT INTO alert_events
    (origin, query_source, table_name, duration_seconds, outcome, detail, job_id, raw_payload)
SELECT origin, query_source, table_name, duration_seconds, outcome, detail, job_id, raw::jsonb
FROM unnest($1::text[], $2::text[], $3::text[], $4::float8[], $5::text[], $6::text[], $7::int8[], $8::text[])
    AS e(origin, query_source, table_name, duration_seconds, outcome, detail, job_id, raw)
"#;

impl Store {
    /// Records a batch atomically, in one short transaction on one
    /// connection: one upsert per distinct source (in key order, so two
    /// concurrent batches lock job rows in the same order and cannot
    /// deadlock), then every alert's audit row in one statement.
    pub async fn record_alerts(
        &self,
        records: &[IntakeRecord],
        cooldown: Duration,
        deploy_grace: Duration,
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
        // The alerts of one source, by key (two spellings of a source meet).
        let mut groups: BTreeMap<String, Vec<usize>> = BTreeMap::new();
        for (i, record) in records.iter().enumerate() {
            if record.action == IntakeAction::Enqueue {
                let source = record
                    .query_source
                    .as_deref()
                    .expect("an enqueued alert has a validated query_source");
                groups.entry(canonical(source)).or_default().push(i);
            }
        }
        for indices in groups.values().skip(MAX_SOURCES_PER_REQUEST) {
            for &i in indices {
                outcomes[i] = Some(RecordedOutcome {
                    outcome: Outcome::Rejected,
                    job_id: None,
                    detail: Some(format!(
                        "more than {MAX_SOURCES_PER_REQUEST} sources in one request; sent again at the next repeat"
                    )),
                });
            }
        }
        if records.is_empty() {
            return Ok(Vec::new());
        }
        let mut tx = self.begin().await?;
        for indices in groups.values().take(MAX_SOURCES_PER_REQUEST) {
            let (job_id, created, detail) =
                enqueue(&mut tx, records, indices, cooldown, deploy_grace).await?;
            for (n, &i) in indices.iter().enumerate() {
                outcomes[i] = Some(RecordedOutcome {
                    outcome: if created && n == 0 {
                        Outcome::Created
                    } else {
                        Outcome::Deduped
                    },
                    job_id: Some(job_id),
                    detail: detail.clone(),
                });
            }
        }
        let outcomes: Vec<RecordedOutcome> = outcomes
            .into_iter()
            .map(|o| o.expect("every record has an outcome"))
            .collect();
        insert_events(&mut tx, records, &outcomes).await?;
        tx.commit().await?;
        Ok(outcomes)
    }
}

/// One source's alerts folded into one upsert: (job, created, why not). A
/// merged fix under verification comes first: within the deploy grace the
/// alerts only count; after it, the fix regressed and a new job starts at
/// once, whatever the cooldown (held for a person on a second regression).
async fn enqueue(
    conn: &mut PgConnection,
    records: &[IntakeRecord],
    indices: &[usize],
    cooldown: Duration,
    deploy_grace: Duration,
) -> Result<(i64, bool, Option<String>), StoreError> {
    let group: Vec<&IntakeRecord> = indices.iter().map(|&i| &records[i]).collect();
    // The richest spelling names a new job: one that is not its own key.
    let display = group
        .iter()
        .filter_map(|r| r.query_source.as_deref())
        .max_by_key(|s| canonical(s) != *s)
        .expect("a group has a source");
    let mut tables: Vec<String> = group.iter().filter_map(|r| r.table.clone()).collect();
    tables.sort();
    tables.dedup();
    tables.truncate(MAX_TABLES_PER_JOB as usize);
    let mut links: Vec<String> = Vec::new();
    for link in group.iter().filter_map(|r| r.link.clone()) {
        if !links.contains(&link) && links.len() < MAX_LINKS_PER_JOB as usize {
            links.push(link);
        }
    }
    let longest = group
        .iter()
        .filter_map(|r| r.duration_seconds)
        .fold(None, |m: Option<f64>, d| Some(m.map_or(d, |m| m.max(d))));
    let waiters = group
        .iter()
        .filter_map(|r| r.waiters)
        .fold(longtx_core::waiters::Waiters::default(), |a, b| a.max(b));
    let count = |n: u32| i32::try_from(n).unwrap_or(i32::MAX);
    let merged = sqlx::query(MERGED_SQL)
        .bind(canonical(display))
        .bind(deploy_grace.as_secs_f64())
        .bind(group.len() as i32)
        .bind(longest)
        .fetch_optional(&mut *conn)
        .await?;
    let mut regressed_from = None;
    if let Some(merged) = merged {
        let merged_id: i64 = merged.try_get("id")?;
        if !merged.try_get::<bool, _>("regressed")? {
            return Ok((
                merged_id,
                false,
                Some(format!(
                    "job {merged_id} was merged within the deploy grace: counted as a recurrence (the old code may still run)"
                )),
            ));
        }
        regressed_from = Some((merged_id, merged.try_get::<i64, _>("regressions")?));
    }
    let cooldown = if regressed_from.is_some() {
        Duration::ZERO
    } else {
        cooldown
    };
    let row = sqlx::query(ENQUEUE_SQL)
        .bind(display)
        .bind((!tables.is_empty()).then_some(tables))
        .bind(longest)
        .bind((!links.is_empty()).then_some(links))
        .bind(cooldown.as_secs_f64())
        .bind(MAX_TABLES_PER_JOB)
        .bind(MAX_LINKS_PER_JOB)
        .bind(group.len() as i32)
        .bind(canonical(display))
        .bind(count(waiters.ddl))
        .bind(count(waiters.dml))
        .bind(count(waiters.other))
        .fetch_one(&mut *conn)
        .await?;
    let (id, created, detail): (i64, bool, Option<String>) = (
        row.try_get("id")?,
        row.try_get("created")?,
        row.try_get("detail")?,
    );
    if let (Some((from, regressions)), true) = (regressed_from, created) {
        // A source whose fixes regressed twice is for a person to look at.
        let hold = (regressions >= 2).then(|| {
            format!("held for a person: this source's merged fixes regressed {regressions} times (last: job {from})")
        });
        sqlx::query(
            "UPDATE jobs SET regressed_from = $2, hold_reason = $3, state_reason = COALESCE($3, state_reason) WHERE id = $1",
        )
        .bind(id)
        .bind(from)
        .bind(&hold)
        .execute(&mut *conn)
        .await?;
        let detail = format!("job {from}'s merged fix regressed: a new job starts at once");
        return Ok((id, created, Some(detail)));
    }
    Ok((id, created, detail))
}

/// Every alert's audit row, in one statement.
async fn insert_events(
    conn: &mut PgConnection,
    records: &[IntakeRecord],
    outcomes: &[RecordedOutcome],
) -> Result<(), StoreError> {
    let rows = || records.iter().zip(outcomes);
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
