//! From lock holders to gauge series: per table the longest transaction,
//! its source read from the statement's Query Logs comment, and bounded
//! label cardinality. Pure; the database adapters produce the holders.

use longtx_core::query_logs::{looks_like_comment, query_source_from_comment, query_source_in_sql};
use longtx_core::waiters::{kind_of, Waiters};
use longtx_core::QuerySource;
use std::collections::{BTreeMap, HashSet};

/// The source label of a holder whose statement names none.
pub const UNKNOWN: &str = "unknown";
/// The label that sources (or tables) past the caps are folded into.
pub const OTHER: &str = "other";
/// The table label of an `ALTER TABLE` in progress (MySQL's `#sql-...`
/// work table, or a DDL statement holding PostgreSQL's exclusive lock).
pub const DDL_IN_PROGRESS: &str = "ddl_in_progress";

/// A transaction holding a lock on a table, as a database reports it.
#[derive(Debug, Clone, PartialEq)]
pub struct Holder {
    pub table: String,
    /// The holder's current or last statement; never becomes a label.
    pub statement: String,
    /// PostgreSQL's `application_name`, tried when the statement names no
    /// source.
    pub application_name: Option<String>,
    pub seconds: f64,
}

/// A session waiting for a lock on a table, as a database reports it.
#[derive(Debug, Clone, PartialEq)]
pub struct Waiting {
    pub table: String,
    /// The statement that waits; only its kind is kept.
    pub statement: String,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    pub table: String,
    pub query_source: String,
    pub seconds: f64,
    /// The sessions waiting on the table's lock, behind this holder.
    pub waiters: Waiters,
}

#[derive(Debug, Clone, Copy)]
pub struct Caps {
    pub max_sources: usize,
    pub max_tables: usize,
}

/// The source a holder's statement names, normalised as the intake does.
pub fn source_of(holder: &Holder) -> String {
    let from_app = || {
        holder
            .application_name
            .as_deref()
            .filter(|name| looks_like_comment(name))
            .and_then(query_source_from_comment)
    };
    query_source_in_sql(&holder.statement)
        .or_else(from_app)
        .and_then(|raw| QuerySource::parse(&raw).ok())
        .map_or_else(|| UNKNOWN.to_owned(), |s| s.as_str().to_owned())
}

/// One series per table: the longest holder, its source, and the sessions
/// waiting on the table (a waiter queues behind every holder of the table;
/// it is counted once, against the longest). Waiters on a table with no
/// holder in sight are not counted: nobody could be asked to fix them.
/// Past the caps (by duration, longest kept), sources and tables become
/// `other`, their waiters added up.
pub fn fold(holders: &[Holder], waiting: &[Waiting], caps: Caps) -> Vec<Series> {
    let mut waiters_on: BTreeMap<&str, Waiters> = BTreeMap::new();
    for w in waiting {
        waiters_on
            .entry(w.table.as_str())
            .or_default()
            .add(kind_of(&w.statement), 1);
    }
    let mut longest: BTreeMap<&str, (&Holder, f64)> = BTreeMap::new();
    for holder in holders {
        let entry = longest
            .entry(holder.table.as_str())
            .or_insert((holder, holder.seconds));
        if holder.seconds > entry.1 {
            *entry = (holder, holder.seconds);
        }
    }
    let mut series: Vec<Series> = longest
        .into_iter()
        .map(|(table, (holder, seconds))| Series {
            table: table.to_owned(),
            query_source: source_of(holder),
            seconds,
            waiters: waiters_on.get(table).copied().unwrap_or_default(),
        })
        .collect();
    series.sort_by(|a, b| {
        b.seconds
            .total_cmp(&a.seconds)
            .then_with(|| a.table.cmp(&b.table))
    });

    let mut sources = HashSet::new();
    let mut tables = 0;
    let mut folded: BTreeMap<(String, String), (f64, Waiters)> = BTreeMap::new();
    for s in series {
        let source = if sources.contains(&s.query_source) || sources.len() < caps.max_sources {
            sources.insert(s.query_source.clone());
            s.query_source
        } else {
            OTHER.to_owned()
        };
        let table = if tables < caps.max_tables {
            tables += 1;
            s.table
        } else {
            OTHER.to_owned()
        };
        let (seconds, waiters) = folded.entry((table, source)).or_default();
        *seconds = seconds.max(s.seconds);
        *waiters = waiters.plus(s.waiters);
    }
    folded
        .into_iter()
        .map(|((table, query_source), (seconds, waiters))| Series {
            table,
            query_source,
            seconds,
            waiters,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn holder(table: &str, statement: &str, seconds: f64) -> Holder {
        Holder {
            table: table.into(),
            statement: statement.into(),
            application_name: None,
            seconds,
        }
    }

    const CAPS: Caps = Caps {
        max_sources: 100,
        max_tables: 100,
    };

    #[test]
    fn each_table_reports_its_longest_holder_and_that_holders_source() {
        let series = fold(
            &[
                holder("orders", "SELECT 1 /*namespaced_controller:admin/orders,action:update*/", 120.0),
                holder("orders", "SELECT 1 /*sidekiq_worker:QuickWorker*/", 3.0),
                holder("users", "UPDATE users SET a = 1 /*controller='Admin::UsersController',action='update'*/", 40.0),
                holder("carts", "SELECT 1", 9.0),
            ],
            &[],
            CAPS,
        );
        let got: Vec<_> = series
            .iter()
            .map(|s| (s.table.as_str(), s.query_source.as_str(), s.seconds))
            .collect();
        assert_eq!(
            got,
            [
                ("carts", "unknown", 9.0),
                ("orders", "admin/orders#update", 120.0),
                ("users", "admin/users#update", 40.0)
            ]
        );
    }

    #[test]
    fn sources_past_the_cap_fold_into_other_keeping_the_longest() {
        let holders: Vec<Holder> = (0..10)
            .map(|i| {
                holder(
                    &format!("t{i}"),
                    &format!("SELECT 1 /*sidekiq_worker:W{i}*/"),
                    i as f64,
                )
            })
            .collect();
        let series = fold(
            &holders,
            &[],
            Caps {
                max_sources: 3,
                max_tables: 100,
            },
        );
        let named: HashSet<_> = series.iter().map(|s| s.query_source.as_str()).collect();
        assert_eq!(named, HashSet::from(["W9", "W8", "W7", "other"]));
        assert_eq!(series.len(), 10, "every table still reports");
        let capped = fold(
            &holders,
            &[],
            Caps {
                max_sources: 100,
                max_tables: 2,
            },
        );
        let other: Vec<_> = capped.iter().filter(|s| s.table == "other").collect();
        assert_eq!(
            capped.len(),
            2 + 8,
            "two named tables, the other eight as `other`, one per source"
        );
        assert!(other.iter().all(|s| s.seconds < 8.0));
    }

    #[test]
    fn hostile_or_oversized_comments_become_unknown_and_sql_never_a_label() {
        let long = format!("SELECT 1 /*sidekiq_worker:{}*/", "W".repeat(300));
        let control = "SELECT 1 /*sidekiq_worker:Bad\u{7}Worker*/";
        assert_eq!(source_of(&holder("t", &long, 1.0)), "unknown");
        assert_eq!(source_of(&holder("t", control, 1.0)), "unknown");
        let series = fold(
            &[holder("t", "SELECT secret FROM t WHERE token = 'x'", 5.0)],
            &[],
            CAPS,
        );
        assert_eq!(series[0].query_source, "unknown");
    }

    #[test]
    fn waiters_count_against_their_tables_longest_holder_by_kind() {
        let waiting = |table: &str, statement: &str| Waiting {
            table: table.into(),
            statement: statement.into(),
        };
        let series = fold(
            &[
                holder("orders", "SELECT 1 /*sidekiq_worker:SlowWorker*/", 300.0),
                holder("orders", "SELECT 1 /*sidekiq_worker:QuickWorker*/", 2.0),
                holder("users", "SELECT 1 /*sidekiq_worker:UserWorker*/", 50.0),
            ],
            &[
                waiting("orders", "ALTER TABLE orders ADD COLUMN x INT"),
                waiting("orders", "SELECT * FROM orders /*action:show*/"),
                waiting("orders", "UPDATE orders SET a = 1"),
                waiting("nobody_holds_this", "ALTER TABLE nobody_holds_this DROP y"),
            ],
            CAPS,
        );
        let orders = series.iter().find(|s| s.table == "orders").unwrap();
        assert_eq!(orders.query_source, "SlowWorker");
        assert_eq!(
            (orders.waiters.ddl, orders.waiters.dml, orders.waiters.other),
            (1, 2, 0)
        );
        assert!(series
            .iter()
            .find(|s| s.table == "users")
            .unwrap()
            .waiters
            .is_empty());
        assert_eq!(series.len(), 2, "a table nobody holds makes no series");
        let folded = fold(
            &[
                holder("a", "SELECT 1 /*sidekiq_worker:W*/", 9.0),
                holder("b", "SELECT 1 /*sidekiq_worker:W*/", 5.0),
                holder("c", "SELECT 1 /*sidekiq_worker:W*/", 4.0),
            ],
            &[waiting("b", "ALTER TABLE b"), waiting("c", "ALTER TABLE c")],
            Caps {
                max_sources: 10,
                max_tables: 1,
            },
        );
        let other = folded.iter().find(|s| s.table == "other").unwrap();
        assert_eq!(other.waiters.ddl, 2, "folded tables add their waiters up");
    }

    #[test]
    fn application_name_is_tried_when_the_statement_has_no_comment() {
        let h = Holder {
            application_name: Some("sidekiq_worker:AppNameWorker".into()),
            ..holder("t", "SELECT 1", 2.0)
        };
        assert_eq!(source_of(&h), "AppNameWorker");
        let plain = Holder {
            application_name: Some("psql".into()),
            ..holder("t", "SELECT 1", 2.0)
        };
        assert_eq!(source_of(&plain), "unknown");
    }
}
