//! Rails Query Logs comments and the `query_source` they stand for.
//!
//! Rails tags each SQL statement with a comment naming where it came from.
//! Two formats exist:
//! - legacy: `/*namespaced_controller:admin/users,action:update*/`
//! - sqlcommenter: `/*action='update',namespaced_controller='admin%2Fusers'*/`
//!
//! Both are reduced to one `query_source` string:
//! `admin/users#update`, `FooWorker`, `rake:ns:task`.

/// Key/value tags read from one Query Logs comment, in their order.
pub fn parse_tags(comment: &str) -> Vec<(String, String)> {
    let body = strip_comment_markers(comment);
    if body.contains("='") {
        parse_sqlcommenter(body)
    } else {
        parse_legacy(body)
    }
}

/// The normalised `query_source` a comment names, or `None` when the
/// comment carries none of the tags that identify a code path.
pub fn query_source_from_comment(comment: &str) -> Option<String> {
    source_from_tags(&parse_tags(comment))
}

/// The `query_source` named by the first Query Logs comment inside a whole
/// SQL statement (Rails appends the comment, or prepends it with
/// `query_log_tags_prepend_comment`). The collector reads holders'
/// statements with this; the intake reads labels with
/// [`query_source_from_comment`]; both end in [`source_from_tags`].
pub fn query_source_in_sql(sql: &str) -> Option<String> {
    let mut rest = sql;
    while let Some(start) = rest.find("/*") {
        let after = &rest[start + 2..];
        let Some(end) = after.find("*/") else { break };
        if let Some(source) = query_source_from_comment(&after[..end]) {
            return Some(source);
        }
        rest = &after[end + 2..];
    }
    None
}

/// Picks the code path from tags, preferring the most specific one.
pub fn source_from_tags(tags: &[(String, String)]) -> Option<String> {
    let get = |key: &str| {
        tags.iter()
            .find(|(k, v)| k == key && !v.is_empty())
            .map(|(_, v)| v.as_str())
    };
    let action = get("action");
    if let (Some(controller), Some(action)) = (get("namespaced_controller"), action) {
        return Some(format!("{}#{action}", controller_path(controller)));
    }
    if let (Some(controller), Some(action)) = (get("controller"), action) {
        return Some(format!("{}#{action}", controller_path(controller)));
    }
    if let Some(worker) = get("sidekiq_worker").or_else(|| get("job")) {
        return Some(worker.to_owned());
    }
    if let Some(task) = get("rake_task") {
        return Some(if task.starts_with("rake:") {
            task.to_owned()
        } else {
            format!("rake:{task}")
        });
    }
    None
}

/// Tag keys that mark a string as a Query Logs comment rather than a plain
/// `query_source` such as `rake:db:migrate` or `Billing::SyncWorker`.
const SOURCE_KEYS: [&str; 5] = [
    "namespaced_controller",
    "controller",
    "sidekiq_worker",
    "job",
    "rake_task",
];

/// True when the text is a Query Logs comment with a code-path tag.
pub fn looks_like_comment(text: &str) -> bool {
    parse_tags(text)
        .iter()
        .any(|(k, _)| SOURCE_KEYS.contains(&k.as_str()))
}

fn strip_comment_markers(comment: &str) -> &str {
    let s = comment.trim();
    let s = s.strip_prefix("/*").unwrap_or(s);
    let s = s.strip_suffix("*/").unwrap_or(s);
    s.trim()
}

fn parse_legacy(body: &str) -> Vec<(String, String)> {
    body.split(',')
        .filter_map(|pair| {
            let (k, v) = pair.split_once(':')?;
            Some((k.trim().to_owned(), v.trim().to_owned()))
        })
        .collect()
}

fn parse_sqlcommenter(body: &str) -> Vec<(String, String)> {
    let mut tags = Vec::new();
    let mut rest = body;
    while let Some(eq) = rest.find("='") {
        let key = rest[..eq].trim().trim_start_matches(',').trim();
        let after = &rest[eq + 2..];
        // Values end at the first quote that is not escaped with a backslash.
        let mut value = String::new();
        let mut chars = after.char_indices();
        let mut end = after.len();
        while let Some((i, c)) = chars.next() {
            match c {
                '\\' => {
                    if let Some((_, escaped)) = chars.next() {
                        value.push(escaped);
                    }
                }
                '\'' => {
                    end = i + 1;
                    break;
                }
                _ => value.push(c),
            }
        }
        tags.push((percent_decode(key), percent_decode(&value)));
        rest = &after[end.min(after.len())..];
    }
    tags
}

/// Decodes `%XX` escapes; invalid escapes are kept literally.
fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            let (hi, lo) = (hex_value(bytes[i + 1]), hex_value(bytes[i + 2]));
            if let (Some(hi), Some(lo)) = (hi, lo) {
                out.push(hi * 16 + lo);
                i += 3;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn hex_value(b: u8) -> Option<u8> {
    (b as char).to_digit(16).map(|d| d as u8)
}

/// `Admin::UsersController` → `admin/users`; `admin/users` stays as it is.
pub fn controller_path(controller: &str) -> String {
    if !controller.contains("::") && !controller.ends_with("Controller") {
        return controller.to_owned();
    }
    let trimmed = controller.strip_suffix("Controller").unwrap_or(controller);
    trimmed
        .split("::")
        .map(underscore)
        .collect::<Vec<_>>()
        .join("/")
}

/// ActiveSupport's `underscore` for one constant segment:
/// `UsersController` → `users_controller`, `HTMLParser` → `html_parser`.
pub fn underscore(segment: &str) -> String {
    let chars: Vec<char> = segment.chars().collect();
    let mut out = String::with_capacity(segment.len() + 4);
    for (i, &c) in chars.iter().enumerate() {
        if c.is_uppercase() && i > 0 {
            let prev = chars[i - 1];
            let next_is_lower = chars.get(i + 1).is_some_and(|n| n.is_lowercase());
            if prev.is_lowercase()
                || prev.is_ascii_digit()
                || (prev.is_uppercase() && next_is_lower)
            {
                out.push('_');
            }
        }
        out.extend(c.to_lowercase());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_statement_is_searched_for_its_tags_comment() {
        let appended =
            "SELECT `orders`.* FROM `orders` WHERE `orders`.`id` = 1 LIMIT 1 FOR UPDATE \
                        /*application:Shop,namespaced_controller:admin/orders,action:update*/";
        assert_eq!(
            query_source_in_sql(appended).as_deref(),
            Some("admin/orders#update")
        );
        let prepended = "/*controller='checkouts',action='create'*/ UPDATE carts SET x = 1";
        assert_eq!(
            query_source_in_sql(prepended).as_deref(),
            Some("checkouts#create")
        );
        let two = "/* plain note */ SELECT 1 /*sidekiq_worker:Billing::SyncWorker*/";
        assert_eq!(
            query_source_in_sql(two).as_deref(),
            Some("Billing::SyncWorker")
        );
        assert_eq!(
            query_source_in_sql("SELECT 1 /*rake_task:reports:monthly*/").as_deref(),
            Some("rake:reports:monthly")
        );
        assert_eq!(
            query_source_in_sql("SELECT 1 /*job='ExportJob'*/").as_deref(),
            Some("ExportJob")
        );
        assert_eq!(query_source_in_sql("SELECT 1 /* unterminated"), None);
        assert_eq!(query_source_in_sql("SELECT '/*' || x FROM t"), None);
        assert_eq!(query_source_in_sql("SELECT 1"), None);
    }

    #[test]
    fn legacy_namespaced_controller() {
        assert_eq!(
            query_source_from_comment("/*namespaced_controller:admin/users,action:update*/")
                .as_deref(),
            Some("admin/users#update")
        );
    }

    #[test]
    fn sqlcommenter_with_url_encoding() {
        let c = "/*action='update',controller='users',namespaced_controller='admin%2Fusers'*/";
        assert_eq!(
            query_source_from_comment(c).as_deref(),
            Some("admin/users#update")
        );
    }

    #[test]
    fn sqlcommenter_escaped_quote_does_not_end_value() {
        let tags = parse_tags(r"/*job='Weird\'Job',application='App'*/");
        assert_eq!(tags[0], ("job".into(), "Weird'Job".into()));
        assert_eq!(tags[1], ("application".into(), "App".into()));
    }

    #[test]
    fn workers_jobs_and_rake() {
        assert_eq!(
            query_source_from_comment("sidekiq_worker:Billing::SyncWorker").as_deref(),
            Some("Billing::SyncWorker")
        );
        assert_eq!(
            query_source_from_comment("job:MailJob").as_deref(),
            Some("MailJob")
        );
        assert_eq!(
            query_source_from_comment("/*rake_task:db:seed_users*/").as_deref(),
            Some("rake:db:seed_users")
        );
    }

    #[test]
    fn class_name_controllers_become_paths() {
        assert_eq!(controller_path("Admin::UsersController"), "admin/users");
        assert_eq!(
            controller_path("API::V1::HTMLReportsController"),
            "api/v1/html_reports"
        );
        assert_eq!(underscore("OAuth2Callback"), "o_auth2_callback");
    }

    #[test]
    fn plain_sources_are_not_comments() {
        assert!(!looks_like_comment("rake:db:migrate"));
        assert!(!looks_like_comment("Billing::SyncWorker"));
        assert!(!looks_like_comment("admin/users#update"));
        assert!(looks_like_comment("controller:users,action:index"));
    }

    #[test]
    fn broken_percent_escapes_are_kept() {
        assert_eq!(percent_decode("a%2"), "a%2");
        assert_eq!(percent_decode("a%zz"), "a%zz");
        assert_eq!(percent_decode("a%2F"), "a/");
    }
}
