//! Sources that came through Datadog, which lowercases tags and turns `#`
//! (and every character but letters, digits, `_ - : . /`) into `_`:
//! `billing::syncworker` for `Billing::SyncWorker`, `api/v1/rubygems_create`
//! for `api/v1/rubygems#create`. The code is found anyway: a worker by its
//! file path compared without case or `_`, a controller by trying each `_`
//! as the `#` that names an existing controller and action. When two
//! readings fit, both are listed with the reason.

use super::{
    find_def, read_small, relative_to, ruby_files, worker_candidate, Candidate, WORKER_DIRS,
};
use std::path::Path;

/// True for a source that is its own canonical form: nothing left to tell
/// `Billing::SyncWorker` from `billing::syncworker`.
pub(super) fn looks_flattened(source: &str) -> bool {
    longtx_core::query_source::canonical(source) == source
}

pub(super) fn locate_flattened(repo: &Path, source: &str) -> Vec<Candidate> {
    let mut found = controller_readings(repo, source);
    found.extend(worker_readings(repo, source));
    if found.len() > 1 {
        for candidate in &mut found {
            candidate
                .reason
                .push_str(" (one of several readings of a source Datadog flattened)");
        }
    }
    found
}

/// `api/v1/rubygems_create`: each `_` may be the `#` Datadog replaced.
fn controller_readings(repo: &Path, source: &str) -> Vec<Candidate> {
    let mut found = Vec::new();
    for (at, _) in source.match_indices('_') {
        let (controller, action) = (&source[..at], &source[at + 1..]);
        let plausible = !controller.is_empty()
            && !action.is_empty()
            && action
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !plausible {
            continue;
        }
        let relative = format!("app/controllers/{controller}_controller.rb");
        let Some(text) = read_small(repo, &repo.join(&relative)) else {
            continue;
        };
        if let Some((line, excerpt)) = find_def(&text, action) {
            found.push(Candidate {
                path: relative,
                line: Some(line),
                reason: format!(
                    "controller for {controller}, action method `{action}`: read from {source:?}, whose `#` Datadog turned into `_`"
                ),
                excerpt: Some(excerpt),
                file_text: text,
            });
        }
    }
    found
}

/// `billing::syncworker`: a worker or job file whose path, without case
/// and `_`, spells the same constant path.
fn worker_readings(repo: &Path, source: &str) -> Vec<Candidate> {
    let squash = |text: &str| text.replace('_', "").to_ascii_lowercase();
    let wanted = squash(source);
    let mut found = Vec::new();
    for dir in WORKER_DIRS {
        let root = repo.join(dir);
        for file in ruby_files(&root, "rb") {
            let Ok(inside) = file.strip_prefix(&root) else {
                continue;
            };
            let constant_path = inside
                .with_extension("")
                .display()
                .to_string()
                .replace('/', "::");
            if squash(&constant_path) != wanted {
                continue;
            }
            let Some(text) = read_small(repo, &file) else {
                continue;
            };
            found.push(worker_candidate(
                relative_to(repo, &file),
                text,
                format!("{constant_path} matches {source:?} without case or `_` (Datadog lowercases tags)"),
            ));
        }
    }
    found
}
