//! prompt-bench: how long rendering one prompt takes with a 50-pattern
//! catalogue (goal: under 5 ms).
//!
//! The catalogue is the shipped one, copied under new ids until it holds 50
//! patterns. "render" is what repeats per job once the template is
//! compiled; "build" is the whole of `PromptSources::build` as the service
//! runs it (read the catalogue and template, compile, find the code, render).
//!
//! Run: `cargo run --release -p longtx-bench --bin prompt-bench -- [--renders 2000]`

mod help;
use longtx_catalog::Catalogue;
use longtx_prompt::{locate, JobFacts, PromptRenderer, PromptSources, DEFAULT_BUDGET_BYTES};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

const PATTERNS: usize = 50;

const USAGE: &str = "prompt-bench: how long rendering one prompt takes with a 50-pattern catalogue (goal: under 5 ms).

Usage: prompt-bench [--renders N]
  --renders  how many prompts to render (default 2000)";

fn main() -> anyhow::Result<()> {
    help::answer_help(USAGE);
    let renders: usize = match std::env::args().nth(1).as_deref() {
        Some("--renders") => std::env::args().nth(2).unwrap_or_default().parse()?,
        Some(other) => anyhow::bail!("unknown flag {other}; use --renders N"),
        None => 2000,
    };
    let shipped = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../patterns");
    let work = std::env::temp_dir().join(format!("longtx-prompt-bench-{}", std::process::id()));
    let patterns_dir = fifty_patterns(&shipped, &work.join("patterns"))?;
    let repo = rails_checkout(&work.join("repo"))?;
    let template = std::fs::read_to_string(shipped.join("_prompt.md.tera"))?;

    let catalogue = Catalogue::load(&patterns_dir)?;
    anyhow::ensure!(
        catalogue.patterns.len() == PATTERNS,
        "expected {PATTERNS} patterns"
    );
    let renderer = PromptRenderer::new(&template, DEFAULT_BUDGET_BYTES)?;
    let job = job();
    let candidates = locate(&repo, &job.query_source);
    anyhow::ensure!(
        !candidates.is_empty(),
        "the benchmark checkout has the controller"
    );

    let mut render_times = Vec::with_capacity(renders);
    let mut bytes = 0;
    for _ in 0..renders {
        let t = Instant::now();
        let prompt = renderer.render(&job, &candidates, &catalogue)?;
        render_times.push(t.elapsed());
        bytes = prompt.text.len();
    }
    let sources = PromptSources {
        patterns_dir: patterns_dir.clone(),
        template: shipped.join("_prompt.md.tera"),
        repo: Some(repo),
        budget_bytes: DEFAULT_BUDGET_BYTES,
    };
    let builds = (renders / 10).max(10);
    let mut build_times = Vec::with_capacity(builds);
    for _ in 0..builds {
        let t = Instant::now();
        sources.build(&job).map_err(anyhow::Error::msg)?;
        build_times.push(t.elapsed());
    }
    println!("prompt-bench: {PATTERNS} patterns, prompt of {bytes} bytes");
    report("render (compiled template)", &mut render_times);
    report("build (load, compile, locate, render)", &mut build_times);
    let p99 = percentile(&render_times, 0.99);
    println!(
        "  goal: render under 5 ms: {} (p99 {:.3} ms)",
        if p99 < Duration::from_millis(5) {
            "met"
        } else {
            "MISSED"
        },
        p99.as_secs_f64() * 1000.0
    );
    std::fs::remove_dir_all(&work).ok();
    Ok(())
}

fn report(label: &str, times: &mut [Duration]) {
    times.sort_unstable();
    let mean = times.iter().sum::<Duration>() / times.len() as u32;
    println!(
        "  {label:<40} mean {:>7.3} ms   p50 {:>7.3} ms   p99 {:>7.3} ms   ({} runs)",
        ms(mean),
        ms(percentile(times, 0.50)),
        ms(percentile(times, 0.99)),
        times.len()
    );
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// The shipped patterns, then copies under new ids, up to 50.
fn fifty_patterns(shipped: &Path, dir: &Path) -> anyhow::Result<PathBuf> {
    std::fs::create_dir_all(dir)?;
    let originals = longtx_catalog::pattern_files(shipped)?;
    for i in 0..PATTERNS {
        let source = &originals[i % originals.len()];
        let text = std::fs::read_to_string(source)?;
        let id = source.file_stem().unwrap().to_str().unwrap();
        let (new_id, text) = if i < originals.len() {
            (id.to_owned(), text)
        } else {
            let new_id = format!("{id}-copy-{i}");
            // Copies relate to nothing, so every related id still resolves.
            let text = text
                .replacen(&format!("id: {id}"), &format!("id: {new_id}"), 1)
                .lines()
                .filter(|l| !l.starts_with("related:"))
                .collect::<Vec<_>>()
                .join("\n");
            (new_id, text)
        };
        std::fs::write(dir.join(format!("{new_id}.md")), text)?;
    }
    Ok(dir.to_owned())
}

fn rails_checkout(root: &Path) -> anyhow::Result<PathBuf> {
    let file = root.join("app/controllers/admin/users_controller.rb");
    std::fs::create_dir_all(file.parent().unwrap())?;
    let mut text = String::from("module Admin\n  class UsersController < ApplicationController\n");
    for i in 0..40 {
        text.push_str(&format!(
            "    def helper_{i}\n      User.where(id: {i}).first\n    end\n\n"
        ));
    }
    text.push_str("    def update\n      @user = User.find(params[:id])\n      @user.with_lock do\n        @user.update!(user_params)\n        Faraday.post(CRM_URL, @user.to_json)\n        UserMailer.changed(@user).deliver_now\n      end\n    end\n  end\nend\n");
    std::fs::write(file, text)?;
    Ok(root.to_owned())
}

fn job() -> JobFacts {
    JobFacts {
        id: Some(1),
        query_source: "admin/users#update".into(),
        tables: vec!["users".into()],
        max_duration_seconds: Some(184.0),
        alert_count: 3,
        first_seen_at: Some("2026-12-02T09:58:15Z".into()),
        last_seen_at: Some("2026-12-02T10:04:15Z".into()),
        threshold_seconds: 100.0,
        alert_links: vec!["https://app.datadoghq.com/monitors/1".into()],
        previous_rejection: Vec::new(),
        previous_fix: None,
    }
}
