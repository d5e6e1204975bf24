//! The dashboard's pages, rendered on the server: tera templates with
//! autoescaping (every value from alerts or GitHub is escaped) and inline
//! SVG charts, no JavaScript. This crate turns the store's read models into
//! HTML; it knows nothing of HTTP or SQL.

mod backlog;
pub mod charts;
mod timeline;
mod view;
mod what_if;

pub use view::PageSettings;

use longtx_core::backlog::BranchScan;
use longtx_core::what_if::WhatIf;
use longtx_store::{Dashboard, JobPage, QueuePlace};

#[derive(Debug, thiserror::Error)]
#[error("rendering the {page} page: {source}")]
pub struct RenderError {
    page: &'static str,
    #[source]
    source: tera::Error,
}

/// The compiled templates; build once and share.
pub struct Pages {
    tera: tera::Tera,
}

impl Pages {
    pub fn new() -> Self {
        let mut tera = tera::Tera::default();
        // Names ending in .html are autoescaped by tera.
        tera.add_raw_templates([
            ("base.html", include_str!("../templates/base.html")),
            (
                "dashboard.html",
                include_str!("../templates/dashboard.html"),
            ),
            ("job.html", include_str!("../templates/job.html")),
            ("message.html", include_str!("../templates/message.html")),
        ])
        .expect("the shipped templates compile");
        Pages { tera }
    }

    /// `queue`: the first queued jobs in the dispatcher's order.
    pub fn dashboard(
        &self,
        data: &Dashboard,
        what_if: &WhatIf,
        queue: &[QueuePlace],
        backlog: Option<&(BranchScan, Option<BranchScan>)>,
        settings: &PageSettings,
    ) -> Result<String, RenderError> {
        let mut context = view::dashboard_context(data, settings);
        context.insert("what_if", &what_if::view(what_if));
        context.insert(
            "backlog",
            &backlog
                .map(|(latest, baseline)| backlog::view(latest, baseline.as_ref(), &data.what_if)),
        );
        context.insert("queue", &view::queue_rows(queue));
        self.render("dashboard.html", "dashboard", &context)
    }

    /// `queue`: the job's impact and place, when it has them.
    pub fn job(
        &self,
        page: &JobPage,
        queue: Option<&QueuePlace>,
        settings: &PageSettings,
    ) -> Result<String, RenderError> {
        let mut context = view::job_context(page, settings);
        context.insert("impact", &queue.map(view::impact_line));
        self.render("job.html", "job", &context)
    }

    /// A short page for errors (401, 404), escaped like the rest.
    pub fn message(&self, title: &str, detail: &str) -> String {
        let mut context = tera::Context::new();
        context.insert("title", title);
        context.insert("detail", detail);
        self.tera
            .render("message.html", &context)
            .unwrap_or_else(|_| "longtx: error".to_owned())
    }

    fn render(
        &self,
        name: &str,
        page: &'static str,
        context: &tera::Context,
    ) -> Result<String, RenderError> {
        self.tera
            .render(name, context)
            .map_err(|source| RenderError { page, source })
    }
}

impl Default for Pages {
    fn default() -> Self {
        Self::new()
    }
}
