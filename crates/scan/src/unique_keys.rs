//! The unique indexes a checkout's schema declares, so a bulk statement
//! narrowed to one of them (`UserRole.where(user: u, role: r).delete_all`,
//! `User.where(email: e).update_all(...)`) is read as the one row the
//! database guarantees, not as a long statement. A reviewer judged such
//! statements "not slow" in round 2 of the precision review.
//!
//! Read from `db/schema.rb` (`t.index [...], unique: true` and the older
//! `add_index "t", [...], unique: true`) or `db/structure.sql`
//! (PostgreSQL's `CREATE UNIQUE INDEX ... ON t (...)`, MySQL's
//! `UNIQUE KEY ... (...)` inside `CREATE TABLE`). A partial index
//! (`WHERE is_deleted = false`) is left out: it is unique only among the
//! rows its condition keeps, which a `where` need not name. A model that
//! names its table (`self.table_name = "unreads"`) has that table's keys.

use std::collections::BTreeMap;
use std::path::Path;

/// Each table's unique column sets, keyed by the table's class name
/// squashed to lower case (`user_roles` -> `userrole`), so a receiver
/// `UserRole` or `Admin::UserRole` finds it without the model index.
#[derive(Debug, Default)]
pub(crate) struct UniqueKeys {
    by_class: BTreeMap<String, Vec<Vec<String>>>,
}

impl UniqueKeys {
    pub(crate) fn read(repo: &Path) -> UniqueKeys {
        let mut keys = UniqueKeys::default();
        if let Ok(text) = std::fs::read_to_string(repo.join("db/schema.rb")) {
            keys.add_schema_rb(&text);
        }
        if let Ok(text) = std::fs::read_to_string(repo.join("db/structure.sql")) {
            keys.add_structure_sql(&text);
        }
        for (table, class) in longtx_analysis::explicit_table_names(repo) {
            keys.add_table_name(&table, &class);
        }
        keys
    }

    /// A model that names its table (`self.table_name = "unreads"` in
    /// feedbin's `UnreadEntry`) has that table's keys under its own name.
    fn add_table_name(&mut self, table: &str, class: &str) {
        let from = squashed(table);
        let to = class.rsplit("::").next().unwrap_or(class).to_lowercase();
        if from == to {
            return;
        }
        if let Some(indexes) = self.by_class.get(&from).cloned() {
            self.by_class.entry(to).or_default().extend(indexes);
        }
    }

    fn add(&mut self, table: &str, columns: Vec<String>) {
        let table = table.rsplit('.').next().unwrap_or(table);
        let table = table.trim_matches(['"', '`']);
        if columns.is_empty() {
            return;
        }
        self.by_class
            .entry(squashed(table))
            .or_default()
            .push(columns);
    }

    fn add_schema_rb(&mut self, text: &str) {
        let mut table: Option<String> = None;
        for line in text.lines().map(str::trim) {
            if let Some(rest) = line.strip_prefix("create_table ") {
                table = first_quoted(rest);
            } else if line.contains("unique: true") && !line.contains("where:") {
                if let Some(rest) = line.strip_prefix("t.index ") {
                    if let Some(t) = &table {
                        let t = t.clone();
                        self.add(&t, quoted_list(rest));
                    }
                } else if let Some(rest) = line.strip_prefix("add_index ") {
                    if let Some(t) = first_quoted(rest) {
                        let after = rest.split_once(',').map_or("", |(_, a)| a);
                        self.add(&t, quoted_list(after));
                    }
                }
            }
        }
    }

    fn add_structure_sql(&mut self, text: &str) {
        let mut table: Option<String> = None;
        for line in text.lines().map(str::trim) {
            if let Some(rest) = line.strip_prefix("CREATE TABLE ") {
                table = rest.split_whitespace().next().map(str::to_owned);
            } else if let Some(rest) = line.strip_prefix("UNIQUE KEY ") {
                if let (Some(t), Some(cols)) = (&table, parenthesised(rest)) {
                    let t = t.clone();
                    self.add(&t, cols);
                }
            } else if line.starts_with("CREATE UNIQUE INDEX ") && !line.contains(" WHERE ") {
                let Some((_, on)) = line.split_once(" ON ") else {
                    continue;
                };
                let on = on.trim_start_matches("ONLY ");
                if let (Some(t), Some(cols)) = (on.split_whitespace().next(), parenthesised(on)) {
                    self.add(t, cols);
                }
            }
        }
    }

    /// Whether `code`'s bulk statement before byte `at` is narrowed by a
    /// `where` naming every column of one of its table's unique indexes,
    /// each to one value.
    pub(crate) fn one_row(&self, code: &str, at: usize) -> bool {
        let before = &code[..at];
        let Some(w) = before.find(".where(") else {
            return false;
        };
        let receiver: String = before[..w]
            .rsplit(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == ':'))
            .next()
            .unwrap_or("")
            .rsplit("::")
            .next()
            .unwrap_or("")
            .to_lowercase();
        let Some(indexes) = self.by_class.get(&receiver) else {
            return false;
        };
        let Some(narrowed) = equality_columns(&before[w + ".where(".len()..]) else {
            return false;
        };
        indexes.iter().any(|index| {
            index.iter().all(|column| {
                narrowed
                    .iter()
                    .any(|n| n == column || format!("{n}_id") == *column)
            })
        })
    }
}

/// The columns a `where(...)` hash sets to single values: `user: @user`,
/// `:role => @role`, `"email" => e`. None when any value may be a list
/// (a plural name, a literal array, a range) or the argument is SQL.
fn equality_columns(args: &str) -> Option<Vec<String>> {
    let mut depth = 0i32;
    let end = args.char_indices().find_map(|(i, c)| {
        match c {
            '(' | '[' | '{' => depth += 1,
            ')' | ']' | '}' if depth == 0 => return Some(i),
            ')' | ']' | '}' => depth -= 1,
            _ => {}
        }
        None
    })?;
    let inner = args[..end]
        .trim()
        .trim_start_matches('{')
        .trim_end_matches('}');
    let mut columns = Vec::new();
    for pair in split_top_level(inner) {
        let pair = pair.trim();
        let (key, value) = if let Some((k, v)) = pair.split_once("=>") {
            (
                k.trim().trim_start_matches(':').trim_matches(['"', '\'']),
                v.trim(),
            )
        } else {
            let (k, v) = pair.split_once(':')?;
            (k.trim(), v.trim())
        };
        if key.is_empty() || !key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return None;
        }
        let last = value
            .rsplit(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .find(|w| !w.is_empty())
            .unwrap_or(key);
        let many = value.starts_with('[')
            || value.contains("..")
            || (last.ends_with('s') && !last.ends_with("ss") && last != "status");
        if many {
            return None;
        }
        columns.push(key.to_owned());
    }
    (!columns.is_empty()).then_some(columns)
}

/// `user_roles` -> `userrole`: a table's class name, squashed to lower case.
fn squashed(table: &str) -> String {
    longtx_analysis::singularize(table).replace('_', "")
}

fn split_top_level(text: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let (mut depth, mut start) = (0i32, 0);
    for (i, c) in text.char_indices() {
        match c {
            '(' | '[' | '{' => depth += 1,
            ')' | ']' | '}' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&text[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&text[start..]);
    parts
}

fn first_quoted(text: &str) -> Option<String> {
    let start = text.find(['"', '\''])? + 1;
    let len = text[start..].find(['"', '\''])?;
    Some(text[start..start + len].to_owned())
}

/// `["user_id", "role"], name: ...` -> `[user_id, role]`; a single
/// `"email"` too.
fn quoted_list(text: &str) -> Vec<String> {
    let text = text.trim_start();
    let list = if text.starts_with('[') {
        &text[..text.find(']').unwrap_or(text.len())]
    } else {
        text.split(',').next().unwrap_or("")
    };
    list.split(',').filter_map(first_quoted).collect()
}

/// `... (user_id, role);` -> `[user_id, role]`, unquoted.
fn parenthesised(text: &str) -> Option<Vec<String>> {
    let open = text.find('(')?;
    let close = open + text[open..].find(')')?;
    Some(
        text[open + 1..close]
            .split(',')
            .map(|c| c.trim().trim_matches(['"', '`']).to_owned())
            .filter(|c| !c.is_empty())
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(schema_rb: &str, structure_sql: &str) -> UniqueKeys {
        let mut k = UniqueKeys::default();
        k.add_schema_rb(schema_rb);
        k.add_structure_sql(structure_sql);
        k
    }

    fn one_row(k: &UniqueKeys, code: &str) -> bool {
        let at = code
            .find(".delete_all")
            .or(code.find(".update_all"))
            .unwrap();
        k.one_row(code, at)
    }

    #[test]
    fn a_where_on_every_column_of_a_unique_index_is_one_row() {
        let k = keys(
            "create_table \"users\", force: :cascade do |t|\n  t.string \"email\"\n  t.index [\"email\"], name: \"index_users_on_email\", unique: true\nend\nadd_index \"memberships\", [\"user_id\", \"team_id\"], unique: true\n",
            "CREATE UNIQUE INDEX user_roles_id_role_unique ON public.user_roles USING btree (user_id, role);\nCREATE UNIQUE INDEX v ON public.votes USING btree (user_id, comment_id) WHERE (is_deleted = false);\nCREATE TABLE `follows` (\n  `id` bigint,\n  UNIQUE KEY `pair` (`follower_id`,`followed_id`),\n",
        );
        assert!(one_row(
            &k,
            "User.where(email: email).update_all(mail_fails: n)"
        ));
        assert!(one_row(
            &k,
            "UserRole.where(:user => @user, :role => @role).delete_all"
        ));
        assert!(one_row(
            &k,
            "Membership.where(user_id: u.id, team_id: t.id).delete_all"
        ));
        assert!(one_row(
            &k,
            "Follow.where(follower: a, followed: b).delete_all"
        ));
    }

    #[test]
    fn a_model_that_names_its_table_has_that_tables_keys() {
        let mut k = keys(
            "",
            "CREATE UNIQUE INDEX index_unreads_on_user_id_and_entry_id ON public.unreads USING btree (user_id, entry_id);\n",
        );
        k.add_table_name("unreads", "UnreadEntry");
        assert!(one_row(
            &k,
            "UnreadEntry.where(user: @user, entry_id: params[:id]).delete_all"
        ));
        assert!(!one_row(
            &k,
            "UnreadEntry.where(user_id: user_id, feed_id: feed_id).delete_all"
        ));
    }

    #[test]
    fn a_where_short_of_a_unique_index_or_over_a_list_is_not() {
        let k = keys(
            "create_table \"users\" do |t|\n  t.index [\"email\"], unique: true\n  t.index [\"state\"]\nend\nadd_index \"memberships\", [\"user_id\", \"team_id\"], unique: true\n",
            "",
        );
        assert!(!one_row(&k, "User.where(state: state).update_all(x: 1)"));
        assert!(!one_row(&k, "User.where(email: emails).update_all(x: 1)"));
        assert!(!one_row(&k, "Membership.where(user_id: u.id).delete_all"));
        assert!(!one_row(
            &k,
            "User.where(\"email = ?\", e).update_all(x: 1)"
        ));
        assert!(!one_row(&k, "Order.where(email: e).update_all(x: 1)"));
        let partial = keys(
            "",
            "CREATE UNIQUE INDEX v ON public.votes USING btree (user_id, comment_id) WHERE (is_deleted = false);\n",
        );
        assert!(!one_row(
            &partial,
            "Vote.where(user: u, comment: c).delete_all"
        ));
    }
}
