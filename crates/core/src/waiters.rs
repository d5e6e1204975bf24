//! The sessions stuck behind a long transaction's lock, by kind: what the
//! alert's duration does not say, and what actually hurts. A blocked
//! `ALTER TABLE` is a migration that cannot ship; blocked DML is traffic
//! queueing behind that migration's pending exclusive lock.

use serde::{Deserialize, Serialize};

/// What a waiting session was trying to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum WaiterKind {
    /// A schema change: ALTER, CREATE INDEX, DROP, RENAME, TRUNCATE, OPTIMIZE.
    Ddl,
    /// Reads and writes of rows.
    Dml,
    Other,
}

impl WaiterKind {
    pub const ALL: [WaiterKind; 3] = [WaiterKind::Ddl, WaiterKind::Dml, WaiterKind::Other];

    /// The `kind` label value.
    pub fn as_str(self) -> &'static str {
        match self {
            WaiterKind::Ddl => "ddl",
            WaiterKind::Dml => "dml",
            WaiterKind::Other => "other",
        }
    }
}

/// Counts of waiting sessions per kind.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Waiters {
    #[serde(default)]
    pub ddl: u32,
    #[serde(default)]
    pub dml: u32,
    #[serde(default)]
    pub other: u32,
}

impl Waiters {
    pub fn of(kind: WaiterKind) -> Self {
        let mut w = Waiters::default();
        w.add(kind, 1);
        w
    }

    pub fn add(&mut self, kind: WaiterKind, n: u32) {
        let slot = self.slot(kind);
        *slot = slot.saturating_add(n);
    }

    pub fn get(&self, kind: WaiterKind) -> u32 {
        match kind {
            WaiterKind::Ddl => self.ddl,
            WaiterKind::Dml => self.dml,
            WaiterKind::Other => self.other,
        }
    }

    fn slot(&mut self, kind: WaiterKind) -> &mut u32 {
        match kind {
            WaiterKind::Ddl => &mut self.ddl,
            WaiterKind::Dml => &mut self.dml,
            WaiterKind::Other => &mut self.other,
        }
    }

    pub fn total(&self) -> u32 {
        self.ddl.saturating_add(self.dml).saturating_add(self.other)
    }

    pub fn is_empty(&self) -> bool {
        self.total() == 0
    }

    /// Kind by kind, the larger: alerts about one source are snapshots of
    /// the same queue, so they are not summed.
    pub fn max(self, other: Waiters) -> Waiters {
        Waiters {
            ddl: self.ddl.max(other.ddl),
            dml: self.dml.max(other.dml),
            other: self.other.max(other.other),
        }
    }

    /// Kind by kind, the sum: sessions of different tables folded into one
    /// series.
    pub fn plus(self, other: Waiters) -> Waiters {
        Waiters {
            ddl: self.ddl.saturating_add(other.ddl),
            dml: self.dml.saturating_add(other.dml),
            other: self.other.saturating_add(other.other),
        }
    }

    /// For people: "3 ALTERs and 12 queries waited behind it"; `None` when
    /// nothing waited.
    pub fn describe(&self) -> Option<String> {
        let plural =
            |n: u32, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
        let mut parts = Vec::new();
        if self.ddl > 0 {
            parts.push(plural(self.ddl, "schema change", "schema changes"));
        }
        if self.dml > 0 {
            parts.push(plural(self.dml, "query", "queries"));
        }
        if self.other > 0 {
            parts.push(plural(self.other, "other statement", "other statements"));
        }
        (!parts.is_empty()).then(|| format!("{} waited behind it", parts.join(" and ")))
    }
}

/// The alert label's form, `ddl=3,dml=12,other=0` (kinds in any order, any
/// left out count 0; `:` for `=` and `;` or spaces between pairs also
/// read). A bare number counts as `other`: the kind is unknown.
impl std::str::FromStr for Waiters {
    type Err = String;

    fn from_str(raw: &str) -> Result<Self, String> {
        let raw = raw.trim();
        let count = |text: &str| -> Result<u32, String> {
            let value: f64 = text
                .trim()
                .parse()
                .map_err(|_| format!("{text:?} is not a count"))?;
            if !value.is_finite() || value < 0.0 {
                return Err(format!("{text:?} is not a count"));
            }
            Ok(value.min(u32::MAX as f64) as u32)
        };
        if raw.is_empty() {
            return Ok(Waiters::default());
        }
        if let Ok(n) = count(raw) {
            return Ok(Waiters {
                other: n,
                ..Waiters::default()
            });
        }
        // `dml: 2` reads as `dml:2`: no space around the separator.
        let mut tight = String::with_capacity(raw.len());
        for part in raw.split_inclusive(['=', ':']) {
            tight.push_str(part.trim());
        }
        let mut waiters = Waiters::default();
        for pair in tight
            .split([',', ';', ' '])
            .map(str::trim)
            .filter(|p| !p.is_empty())
        {
            let (kind, n) = pair
                .split_once(['=', ':'])
                .ok_or_else(|| format!("expected kind=count, got {pair:?}"))?;
            let kind = match kind.trim().to_ascii_lowercase().as_str() {
                "ddl" => WaiterKind::Ddl,
                "dml" => WaiterKind::Dml,
                "other" => WaiterKind::Other,
                other => return Err(format!("unknown kind {other:?}: ddl, dml or other")),
            };
            waiters.add(kind, count(n)?);
        }
        Ok(waiters)
    }
}

impl std::fmt::Display for Waiters {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ddl={},dml={},other={}", self.ddl, self.dml, self.other)
    }
}

/// The kind of a waiting session's statement, read from its first keyword
/// after any leading comments (Rails Query Logs may prepend them).
pub fn kind_of(statement: &str) -> WaiterKind {
    let mut words = keywords(statement);
    let Some(first) = words.next() else {
        return WaiterKind::Other;
    };
    match first.as_str() {
        "ALTER" | "DROP" | "RENAME" | "TRUNCATE" | "OPTIMIZE" | "REINDEX" | "CLUSTER" => {
            WaiterKind::Ddl
        }
        "CREATE" => {
            // CREATE [UNIQUE|FULLTEXT|SPATIAL] INDEX, CREATE TRIGGER; other
            // CREATEs take no lock on an existing table.
            let schema_change = words.take(3).any(|w| w == "INDEX" || w == "TRIGGER");
            if schema_change {
                WaiterKind::Ddl
            } else {
                WaiterKind::Other
            }
        }
        "SELECT" | "INSERT" | "UPDATE" | "DELETE" | "REPLACE" | "WITH" | "MERGE" | "TABLE"
        | "VALUES" => WaiterKind::Dml,
        _ => WaiterKind::Other,
    }
}

/// Upper-cased words of a statement, comments (`/* */`, `-- `, `#`) and
/// opening parentheses skipped.
fn keywords(statement: &str) -> impl Iterator<Item = String> + '_ {
    let mut rest = statement;
    std::iter::from_fn(move || loop {
        rest = rest.trim_start_matches(|c: char| c.is_whitespace() || c == '(');
        if let Some(after) = rest.strip_prefix("/*") {
            rest = after.split_once("*/").map_or("", |(_, r)| r);
            continue;
        }
        if rest.starts_with("--") || rest.starts_with('#') {
            rest = rest.split_once('\n').map_or("", |(_, r)| r);
            continue;
        }
        let end = rest
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(rest.len());
        if end == 0 {
            return None;
        }
        let word = rest[..end].to_ascii_uppercase();
        rest = &rest[end..];
        return Some(word);
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statements_are_sorted_into_ddl_dml_and_other() {
        let cases = [
            ("ALTER TABLE orders ADD COLUMN note INT", WaiterKind::Ddl),
            (
                "  /*application:Shop*/ alter table orders drop x",
                WaiterKind::Ddl,
            ),
            ("CREATE UNIQUE INDEX i ON orders (id)", WaiterKind::Ddl),
            (
                "create index concurrently i on orders (id)",
                WaiterKind::Ddl,
            ),
            ("CREATE TABLE t (id int)", WaiterKind::Other),
            ("DROP TABLE orders", WaiterKind::Ddl),
            ("RENAME TABLE a TO b", WaiterKind::Ddl),
            ("TRUNCATE orders", WaiterKind::Ddl),
            ("OPTIMIZE TABLE orders", WaiterKind::Ddl),
            ("-- migration\nALTER TABLE x", WaiterKind::Ddl),
            ("SELECT * FROM orders", WaiterKind::Dml),
            ("(SELECT 1) UNION (SELECT 2)", WaiterKind::Dml),
            ("insert into orders values (1)", WaiterKind::Dml),
            (
                "UPDATE orders SET a = 1 /*sidekiq_worker:W*/",
                WaiterKind::Dml,
            ),
            ("WITH x AS (SELECT 1) DELETE FROM orders", WaiterKind::Dml),
            ("LOCK TABLES orders WRITE", WaiterKind::Other),
            ("", WaiterKind::Other),
            ("/* never closed", WaiterKind::Other),
        ];
        for (statement, kind) in cases {
            assert_eq!(kind_of(statement), kind, "{statement:?}");
        }
    }

    #[test]
    fn the_label_form_reads_pairs_or_a_bare_count() {
        let w: Waiters = "ddl=3,dml=12".parse().unwrap();
        assert_eq!((w.ddl, w.dml, w.other), (3, 12, 0));
        let w: Waiters = "dml: 2; DDL: 1 other=4".parse().unwrap();
        assert_eq!((w.ddl, w.dml, w.other), (1, 2, 4));
        let w: Waiters = "5".parse().unwrap();
        assert_eq!((w.ddl, w.dml, w.other), (0, 0, 5));
        assert_eq!("".parse::<Waiters>().unwrap(), Waiters::default());
        for bad in ["ddl=-1", "ddl=x", "locks=3", "ddl"] {
            assert!(bad.parse::<Waiters>().is_err(), "{bad:?} accepted");
        }
        assert_eq!(w.to_string().parse::<Waiters>().unwrap(), w);
    }

    #[test]
    fn snapshots_take_the_larger_and_folds_add_up() {
        let a = Waiters {
            ddl: 1,
            dml: 5,
            other: 0,
        };
        let b = Waiters {
            ddl: 2,
            dml: 1,
            other: 1,
        };
        assert_eq!(
            a.max(b),
            Waiters {
                ddl: 2,
                dml: 5,
                other: 1
            }
        );
        assert_eq!(
            a.plus(b),
            Waiters {
                ddl: 3,
                dml: 6,
                other: 1
            }
        );
        assert_eq!(
            a.describe().as_deref(),
            Some("1 schema change and 5 queries waited behind it")
        );
        assert_eq!(Waiters::default().describe(), None);
    }
}
