//! Every entry point of a Rails checkout, as the `query_source` the
//! collector would report for it: each public action of a controller
//! (`admin/users#update`), each job or worker with a `perform`
//! (`Billing::SyncWorker`), each rake task (`rake:ns:task`).
//!
//! Read from the files' text, as the analysis does: no Ruby runs.

use std::path::{Path, PathBuf};

/// Folders never scanned: dependencies, generated and test code.
const SKIPPED_DIRS: [&str; 8] = [
    ".git",
    "node_modules",
    "vendor",
    "tmp",
    "log",
    "spec",
    "test",
    "public",
];
const WORKER_DIRS: [&str; 3] = ["app/workers", "app/sidekiq", "app/jobs"];
/// Files bigger than this are generated code, not entry points.
const MAX_FILE_BYTES: u64 = 1024 * 1024;

/// The entry points of the checkout, sorted and without repeats.
pub fn entry_points(repo: &Path) -> Vec<String> {
    let mut files = Vec::new();
    ruby_files(repo, repo, &mut files);
    let mut sources: Vec<String> = Vec::new();
    for (relative, path) in files {
        let Some(text) = read(&path) else { continue };
        if let Some(controller) = controller_path(&relative) {
            sources.extend(
                public_methods(&text)
                    .into_iter()
                    .map(|action| format!("{controller}#{action}")),
            );
        } else if let Some(class) = worker_class(&relative) {
            if text.lines().any(defines_perform) {
                sources.push(class);
            }
        } else if relative.ends_with(".rake") {
            sources.extend(rake_tasks(&text));
        } else if relative.starts_with("app/") || relative.starts_with("lib/") {
            sources.extend(job_classes(&text));
        }
    }
    sources.sort();
    sources.dedup();
    sources
}

fn read(path: &Path) -> Option<String> {
    let meta = std::fs::symlink_metadata(path).ok()?;
    if !meta.is_file() || meta.len() > MAX_FILE_BYTES {
        return None;
    }
    std::fs::read_to_string(path).ok()
}

/// `.rb` and `.rake` files under `dir`, with their path relative to the
/// checkout; symlinks are not followed (they may lead out of it).
fn ruby_files(root: &Path, dir: &Path, out: &mut Vec<(String, PathBuf)>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<_> = entries.flatten().collect();
    entries.sort_by_key(|e| e.file_name());
    for entry in entries {
        let path = entry.path();
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        let name = entry.file_name().to_string_lossy().into_owned();
        if kind.is_dir() {
            if !SKIPPED_DIRS.contains(&name.as_str()) {
                ruby_files(root, &path, out);
            }
        } else if kind.is_file() && (name.ends_with(".rb") || name.ends_with(".rake")) {
            if let Ok(relative) = path.strip_prefix(root) {
                out.push((relative.to_string_lossy().replace('\\', "/"), path));
            }
        }
    }
}

/// `app/controllers/admin/users_controller.rb` -> `admin/users`, also
/// inside an engine or pack (`engines/billing/app/controllers/...`).
fn controller_path(relative: &str) -> Option<String> {
    let (_, inside) = relative.rsplit_once("app/controllers/")?;
    let path = inside.strip_suffix("_controller.rb")?;
    (!path.is_empty() && path.rsplit('/').next() != Some("application")).then(|| path.to_owned())
}

/// `app/workers/billing/sync_worker.rb` -> `Billing::SyncWorker`.
fn worker_class(relative: &str) -> Option<String> {
    let inside = WORKER_DIRS.iter().find_map(|dir| {
        relative
            .rsplit_once(&format!("{dir}/"))
            .map(|(_, inside)| inside)
    })?;
    let path = inside.strip_suffix(".rb")?;
    let class: Vec<String> = path.split('/').map(longtx_analysis::camelize).collect();
    (!class.is_empty()).then(|| class.join("::"))
}

/// `def perform`, or Resque's class method `def self.perform`.
fn defines_perform(line: &str) -> bool {
    let line = line.trim_start();
    line.starts_with("def perform") || line.starts_with("def self.perform")
}

/// Job classes declared outside the job folders, with a `perform` of their
/// own: a class named `...Job` or `...Worker`, or one that is an Active
/// Job or includes Sidekiq's or Resque's module, named with the modules and
/// classes it is nested in (whitehall's `Import::Job < Struct.new(:id)`,
/// a delayed_job job kept in `app/models/import.rb`).
fn job_classes(text: &str) -> Vec<String> {
    let lines: Vec<&str> = text.lines().collect();
    let mut nesting: Vec<(usize, String)> = Vec::new();
    let mut jobs = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let indent = line.len() - line.trim_start().len();
        let trimmed = line.trim();
        let Some(rest) = trimmed
            .strip_prefix("class ")
            .or_else(|| trimmed.strip_prefix("module "))
        else {
            continue;
        };
        let name: String = rest
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == ':')
            .collect();
        if name.is_empty() || name.starts_with(':') {
            continue;
        }
        nesting.retain(|(depth, _)| *depth < indent);
        nesting.push((indent, name.clone()));
        // A module, or a class closed on its own line (`class Error < X; end`).
        if !trimmed.starts_with("class ") || trimmed.ends_with("end") {
            continue;
        }
        // The class's body: the lines before its `end`, indented as it is.
        let body: Vec<&str> = lines[i + 1..]
            .iter()
            .take_while(|l| {
                let depth = l.len() - l.trim_start().len();
                !(l.trim() == "end" && depth <= indent)
            })
            .copied()
            .collect();
        let performs = body.iter().any(|l| defines_perform(l));
        let is_job = name.ends_with("Job")
            || name.ends_with("Worker")
            || rest.contains("ApplicationJob")
            || rest.contains("ActiveJob::Base")
            || body.iter().any(|l| {
                let l = l.trim_start();
                l.starts_with("include Sidekiq::") || l.starts_with("@queue =")
            });
        if performs && is_job {
            let path: Vec<&str> = nesting.iter().map(|(_, n)| n.as_str()).collect();
            jobs.push(path.join("::"));
        }
    }
    jobs
}

/// The methods a controller declares before `private` or `protected`:
/// the ones a route can name.
fn public_methods(text: &str) -> Vec<String> {
    let mut methods = Vec::new();
    for line in text.lines() {
        let trimmed = line.trim();
        if trimmed == "private" || trimmed == "protected" {
            break;
        }
        let Some(rest) = trimmed.strip_prefix("def ") else {
            continue;
        };
        let name: String = rest
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        if name.is_empty() || rest.starts_with("self.") {
            continue;
        }
        methods.push(name);
    }
    methods
}

/// `rake:ns:task` for each `task` in a rake file, inside the `namespace`
/// blocks indented around it.
fn rake_tasks(text: &str) -> Vec<String> {
    let mut namespaces: Vec<(usize, String)> = Vec::new();
    let mut tasks = Vec::new();
    for line in text.lines() {
        let indent = line.len() - line.trim_start().len();
        let trimmed = line.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        namespaces.retain(|(depth, _)| *depth < indent);
        if let Some(name) = trimmed.strip_prefix("namespace ").and_then(symbol) {
            namespaces.push((indent, name));
        } else if let Some(name) = trimmed.strip_prefix("task ").and_then(symbol) {
            let mut path: Vec<&str> = namespaces.iter().map(|(_, n)| n.as_str()).collect();
            path.push(&name);
            tasks.push(format!("rake:{}", path.join(":")));
        }
    }
    tasks
}

/// The name a `namespace`/`task` line gives: `:name`, `"name"`, `name:`
/// or `name: [:deps]`.
pub(crate) fn symbol(rest: &str) -> Option<String> {
    let rest = rest.trim_start_matches('(').trim_start();
    let name: String = if let Some(s) = rest.strip_prefix(':') {
        s.chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect()
    } else if let Some(s) = rest.strip_prefix(['"', '\'']) {
        s.chars().take_while(|c| !matches!(c, '"' | '\'')).collect()
    } else {
        let name: String = rest
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        rest[name.len()..].starts_with(':').then_some(name)?
    };
    (!name.is_empty()).then_some(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn controllers_workers_and_tasks_are_named_as_query_logs_names_them() {
        assert_eq!(
            controller_path("app/controllers/admin/users_controller.rb").as_deref(),
            Some("admin/users")
        );
        assert_eq!(
            controller_path("engines/shop/app/controllers/shop/carts_controller.rb").as_deref(),
            Some("shop/carts")
        );
        assert_eq!(
            controller_path("app/controllers/application_controller.rb"),
            None
        );
        assert_eq!(
            worker_class("app/workers/billing/sync_worker.rb").as_deref(),
            Some("Billing::SyncWorker")
        );
        assert_eq!(
            public_methods("class A\n  def index\n  end\n  def self.x; end\n  private\n  def helper\n  end\nend\n"),
            vec!["index"]
        );
        let model = "class Import < ActiveRecord::Base\n  def perform\n  end\n\n  class Job < Struct.new(:id)\n    def perform(options = {})\n      import.perform options\n    end\n  end\nend\nmodule Billing\n  class Sync\n    include Sidekiq::Job\n    def perform(id); end\n  end\n  class Ledger\n    def perform; end\n  end\nend\nclass ScheduledTagJob\n  def self.perform(job_type)\n  end\nend\n";
        assert_eq!(
            job_classes(model),
            vec!["Import::Job", "Billing::Sync", "ScheduledTagJob"]
        );
        let rake = "namespace :users do\n  desc 'x'\n  task reindex: :environment do\n  end\n  namespace \"mail\" do\n    task :digest do\n    end\n  end\nend\ntask :top\n";
        assert_eq!(
            rake_tasks(rake),
            vec!["rake:users:reindex", "rake:users:mail:digest", "rake:top"]
        );
    }
}
