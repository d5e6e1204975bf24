//! Where a transaction is opened or a row lock taken, and how far it
//! reaches: `transaction do … end`, `with_lock do … end` to their `end`;
//! `lock!`, `.lock` and `FOR UPDATE` to the end of the method (the lock is
//! held until the surrounding transaction commits).

use super::slow::occurrences;

#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Opener {
    Transaction,
    RowLock,
}

impl Opener {
    pub fn describe(self) -> &'static str {
        match self {
            Opener::Transaction => "opens a transaction",
            Opener::RowLock => "takes a row lock, held to the transaction's end",
        }
    }
}

/// What a line of code opens, if anything. The words are read in code
/// only: `root.join("Gemfile.lock.release")` names a file, it takes no
/// lock (manageiq's release task, read as a row lock held to its end). A
/// `FOR UPDATE` is SQL, so it counts in a string.
pub(super) fn opener(line: &str) -> Option<Opener> {
    let raw = line.trim();
    if raw.starts_with('#') || raw.starts_with("def ") {
        return None;
    }
    let code = super::walk::text::code_only(raw);
    let code = code.trim();
    let opens_block = code.ends_with(" do") || code.contains(" do |") || code.contains('{');
    let transaction = code.match_indices("transaction").any(|(at, _)| {
        let before = code[..at].chars().next_back();
        let after = &code[at + "transaction".len()..];
        !before.is_some_and(|c| c.is_alphanumeric() || c == '_')
            && (after.starts_with(" do") || after.starts_with('(') || after.starts_with(" {"))
    });
    if transaction && opens_block {
        return Some(Opener::Transaction);
    }
    if occurrences(code, "with_lock") > 0 {
        return Some(Opener::RowLock);
    }
    let relation_lock =
        (occurrences(code, ".lock") > 0 || code.contains(".lock(")) && !lock_outside_database(code);
    let row_lock = occurrences(code, "lock!") > 0 || relation_lock || raw.contains("FOR UPDATE");
    row_lock.then_some(Opener::RowLock)
}

/// What a line of the file at `path` opens: [`opener`], less a `with_lock`
/// called on no receiver (`with_lock("tasks:fetch") do`) outside a model's
/// file. Active Record's is a record's method, so there (a rake task, a
/// service, a job) a bare one is the application's own: signon's
/// `VolatileLock::DSL#with_lock` takes a Redis key and yields, with no
/// transaction open. Inside a model it is the record's own row lock.
pub(super) fn opener_in(path: &str, line: &str) -> Option<Opener> {
    opener(line).filter(|_| path.contains("models/") || !bare_with_lock(line))
}

fn bare_with_lock(line: &str) -> bool {
    let code = super::walk::text::code_only(line);
    code.match_indices("with_lock").any(|(at, _)| {
        let before = code[..at].chars().next_back();
        let after = code[at + "with_lock".len()..].chars().next();
        !before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '.')
            && !after.is_some_and(|c| c.is_alphanumeric() || c == '_')
    })
}

/// A `.lock` that takes no database lock: a Redis lock manager's
/// (`lock_manager.lock(key, ttl)` with the redlock gem) or a Ruby mutex's.
/// It holds no transaction open, so what runs under it is no site.
fn lock_outside_database(code: &str) -> bool {
    let lower = code.to_ascii_lowercase();
    ["lock_manager", "redlock", "redis", "mutex", "semaphore"]
        .iter()
        .any(|name| lower.contains(name))
}

/// The 0-based last line of what `opener` at the 0-based `at` holds:
/// its block's `end` (or `}`), else the last line of `lines`.
pub(super) fn reach(lines: &[&str], at: usize) -> usize {
    let first = lines[at];
    let code = first.trim_end();
    let opens_do = code.ends_with(" do") || code.contains(" do |");
    if !opens_do {
        if code.contains('{') && code.contains('}') {
            return at;
        }
        return lines.len().saturating_sub(1);
    }
    let indent = first.len() - first.trim_start().len();
    for (i, line) in lines.iter().enumerate().skip(at + 1) {
        let this = line.len() - line.trim_start().len();
        let trimmed = line.trim();
        if this <= indent
            && (trimmed == "end"
                || trimmed.starts_with("end ")
                || trimmed.starts_with("end.")
                || trimmed.starts_with("end)"))
        {
            return i;
        }
        if this < indent && !trimmed.is_empty() {
            return i.saturating_sub(1);
        }
    }
    lines.len().saturating_sub(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn openers_are_recognised_and_reach_their_end() {
        assert_eq!(opener("Order.transaction do"), Some(Opener::Transaction));
        assert_eq!(
            opener("ActiveRecord::Base.transaction(requires_new: true) do"),
            Some(Opener::Transaction)
        );
        assert_eq!(opener("transaction do"), Some(Opener::Transaction));
        assert_eq!(opener("@order.with_lock do"), Some(Opener::RowLock));
        assert_eq!(opener("lock!"), Some(Opener::RowLock));
        assert_eq!(opener("Order.lock.find(id)"), Some(Opener::RowLock));
        assert_eq!(
            opener("redlock = lock_manager.lock(key, 5.minutes.in_milliseconds)"),
            None,
            "a Redis lock holds no transaction"
        );
        assert_eq!(opener("@mutex.lock"), None);
        assert_eq!(
            opener("order = Order.lock(true).find(id)"),
            Some(Opener::RowLock)
        );
        assert_eq!(opener("def with_transaction_returning_status"), None);
        assert_eq!(opener("transactions.each do |t|"), None);
        assert_eq!(opener("lock_version = 1"), None);
        assert!(bare_with_lock(
            r#"    with_lock("signon:organisations:fetch") do"#
        ));
        assert!(!bare_with_lock("    @order.with_lock do"));
        assert!(!bare_with_lock("    with_lock_retry do"));
        let own = r#"    with_lock("signon:organisations:fetch") do"#;
        assert_eq!(opener_in("lib/tasks/organisations.rake", own), None);
        assert_eq!(
            opener_in("app/models/account.rb", "    with_lock do"),
            Some(Opener::RowLock)
        );
        assert_eq!(
            opener(r#"if root.join("Gemfile.lock.release").exist?"#),
            None,
            "a file's name takes no lock"
        );
        assert_eq!(
            opener(r#"Order.lock("FOR UPDATE SKIP LOCKED").first"#),
            Some(Opener::RowLock)
        );
        assert_eq!(
            opener(r#"find_by_sql("SELECT * FROM jobs FOR UPDATE")"#),
            Some(Opener::RowLock)
        );
        let lines = [
            "  def x",
            "    Order.transaction do",
            "      a",
            "    end",
            "    b",
            "  end",
        ];
        assert_eq!(reach(&lines, 1), 3);
        assert_eq!(reach(&["lock!", "a", "b"], 0), 2);
    }
}
