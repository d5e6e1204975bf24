//! The prompt end to end: a small Rails-shaped tree built in the test, the
//! shipped catalogue and template, hostile values and the size budget.

use longtx_catalog::Catalogue;
use longtx_prompt::{locate, JobFacts, PromptRenderer, DEFAULT_BUDGET_BYTES};
use std::path::{Path, PathBuf};

/// A tree built for a test, removed when the test ends, passed or failed.
struct Tree(PathBuf);

impl std::ops::Deref for Tree {
    type Target = PathBuf;
    fn deref(&self) -> &PathBuf {
        &self.0
    }
}

impl Drop for Tree {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn shipped_template() -> String {
    std::fs::read_to_string(repo_root().join("patterns/_prompt.md.tera")).unwrap()
}

fn shipped_catalogue() -> Catalogue {
    Catalogue::load(&repo_root().join("patterns")).unwrap()
}

/// A tiny Rails app: a namespaced controller, workers in two places, a job
/// with a custom inflection, and nested rake namespaces.
fn rails_tree(name: &str) -> Tree {
    let root =
        std::env::temp_dir().join(format!("longtx-tmp-rails-{name}-{}-0", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    let files = [
        (
            "app/controllers/admin/users_controller.rb",
            "module Admin\n  class UsersController < ApplicationController\n    def index\n    end\n\n    def update\n      @user = User.find(params[:id])\n      @user.with_lock do\n        @user.update!(user_params)\n        Faraday.post(CRM_URL, @user.to_json)\n      end\n    end\n  end\nend\n",
        ),
        (
            "app/workers/billing/invoice_sync_worker.rb",
            "module Billing\n  class InvoiceSyncWorker\n    include Sidekiq::Worker\n\n    def perform(id)\n      Invoice.transaction do\n        InvoiceMailer.sync(id).deliver_now\n      end\n    end\n  end\nend\n",
        ),
        (
            "app/jobs/oauth2_refresh_job.rb",
            "class OAuth2RefreshJob < ApplicationJob\n  def perform(account)\n    account.with_lock { account.refresh! }\n  end\nend\n",
        ),
        (
            "app/sidekiq/api/html_report_worker.rb",
            "module API\n  class HTMLReportWorker\n    def perform\n    end\n  end\nend\n",
        ),
        (
            "lib/tasks/billing.rake",
            "namespace :billing do\n  namespace :invoices do\n    desc 'Backfill'\n    task backfill: :environment do\n      Invoice.transaction do\n        Invoice.find_each { |i| i.update!(x: 1) }\n      end\n    end\n  end\nend\n",
        ),
    ];
    for (path, text) in files {
        let path = root.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    Tree(root)
}

/// Writes `files` into `root` (a Rails application made in the test) and
/// points the shipped catalogue and template at it.
fn app_sources(root: &std::path::Path, files: &[(&str, &str)]) -> longtx_prompt::PromptSources {
    for (path, text) in files {
        let path = root.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    longtx_prompt::PromptSources {
        patterns_dir: repo_root().join("patterns"),
        template: repo_root().join("patterns/_prompt.md.tera"),
        repo: Some(root.to_owned()),
        budget_bytes: DEFAULT_BUDGET_BYTES,
    }
}

fn facts(source: &str) -> JobFacts {
    JobFacts {
        id: Some(42),
        query_source: source.into(),
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

#[test]
fn sources_datadog_flattened_are_found_by_their_readings() {
    let repo = rails_tree("flattened");
    let w = locate(&repo, "billing::invoicesyncworker");
    assert_eq!(w.len(), 1, "{w:?}");
    assert_eq!(w[0].path, "app/workers/billing/invoice_sync_worker.rb");
    assert_eq!(w[0].line, Some(5));
    assert!(w[0].reason.contains("without case"), "{}", w[0].reason);

    let c = locate(&repo, "admin/users_update");
    assert_eq!(c.len(), 1, "{c:?}");
    assert_eq!(c[0].path, "app/controllers/admin/users_controller.rb");
    assert_eq!(c[0].line, Some(6));
    assert!(
        c[0].reason.contains("action method `update`"),
        "{}",
        c[0].reason
    );

    // Two readings fit: `admin/users#bulk_update` and `admin/users_bulk#update`.
    let bulk = repo.join("app/controllers/admin/users_bulk_controller.rb");
    std::fs::write(&bulk, "module Admin\n  class UsersBulkController < ApplicationController\n    def update\n    end\n  end\nend\n").unwrap();
    let users = repo.join("app/controllers/admin/users_controller.rb");
    let text = std::fs::read_to_string(&users).unwrap();
    std::fs::write(
        &users,
        text.replace(
            "    def index\n",
            "    def bulk_update\n    end\n\n    def index\n",
        ),
    )
    .unwrap();
    let both = locate(&repo, "admin/users_bulk_update");
    let paths: Vec<&str> = both.iter().map(|c| c.path.as_str()).collect();
    assert_eq!(
        paths,
        [
            "app/controllers/admin/users_controller.rb",
            "app/controllers/admin/users_bulk_controller.rb"
        ]
    );
    assert!(both
        .iter()
        .all(|c| c.reason.contains("one of several readings")));
}

#[test]
fn a_source_can_never_name_a_file_outside_the_checkout() {
    let repo = rails_tree("outside");
    let outside = repo
        .parent()
        .unwrap()
        .join(format!("longtx-tmp-secret-{}-0", std::process::id()));
    std::fs::create_dir_all(outside.join("app/controllers")).unwrap();
    std::fs::write(
        outside.join("app/controllers/x_controller.rb"),
        "def show\n  SECRET\nend\n",
    )
    .unwrap();
    for hostile in [
        "../../etc/passwd#show",
        "../longtx-secret/x#show",
        "/etc/x#show",
        "a\\..\\b#show",
        "rake:..:x",
    ] {
        assert!(locate(&repo, hostile).is_empty(), "{hostile}");
        assert!(
            longtx_prompt::locate::explain_none(hostile).contains("outside"),
            "{hostile}"
        );
    }
    // A symlink inside the checkout that leads out is not followed.
    std::os::unix::fs::symlink(
        outside.join("app/controllers/x_controller.rb"),
        repo.join("app/controllers/leak_controller.rb"),
    )
    .unwrap();
    assert!(locate(&repo, "leak#show").is_empty());
    std::fs::remove_dir_all(&outside).ok();
}

#[test]
fn controllers_workers_jobs_and_rake_tasks_are_found_with_reasons() {
    let repo = rails_tree("locate");
    let c = locate(&repo, "admin/users#update");
    assert_eq!(c.len(), 1);
    assert_eq!(c[0].path, "app/controllers/admin/users_controller.rb");
    assert_eq!(c[0].line, Some(6));
    assert!(c[0].excerpt.as_deref().unwrap().contains("Faraday.post"));
    assert!(
        c[0].reason.contains("action method `update`"),
        "{}",
        c[0].reason
    );

    let w = locate(&repo, "Billing::InvoiceSyncWorker");
    assert_eq!(w[0].path, "app/workers/billing/invoice_sync_worker.rb");
    assert_eq!(w[0].line, Some(5));

    let acronyms = locate(&repo, "API::HTMLReportWorker");
    assert_eq!(acronyms[0].path, "app/sidekiq/api/html_report_worker.rb");

    let inflected = locate(&repo, "OAuth2RefreshJob");
    assert_eq!(inflected[0].path, "app/jobs/oauth2_refresh_job.rb");
    assert!(inflected[0]
        .reason
        .contains("declares `class OAuth2RefreshJob`"));

    let rake = locate(&repo, "rake:billing:invoices:backfill");
    assert_eq!(rake[0].path, "lib/tasks/billing.rake");
    assert_eq!(rake[0].line, Some(4));

    assert!(locate(&repo, "admin/orders#update").is_empty());
    assert!(locate(&repo, "unknown").is_empty());
}

#[test]
fn the_prompt_names_the_code_and_ranks_the_fitting_pattern_first() {
    let repo = rails_tree("render");
    let catalogue = shipped_catalogue();
    let renderer = PromptRenderer::new(&shipped_template(), DEFAULT_BUDGET_BYTES).unwrap();
    let candidates = locate(&repo, "admin/users#update");
    let prompt = renderer
        .render(&facts("admin/users#update"), &candidates, &catalogue)
        .unwrap();
    let text = &prompt.text;
    assert!(
        text.contains("`app/controllers/admin/users_controller.rb` line 6"),
        "{text}"
    );
    assert!(text.contains("Faraday.post(CRM_URL"), "{text}");
    let first_full = text.find("Pattern `").unwrap();
    assert!(
        text[first_full..].starts_with("Pattern `external-http-call-in-transaction`"),
        "{}",
        &text[first_full..first_full + 80]
    );
    assert!(text.contains("Other patterns in the catalogue"));
    assert!(text.contains("add a new file under\n   `patterns/`"));
    assert!(prompt.truncation.is_none());
    assert!(prompt.revision.starts_with("patterns sha256:"));
    assert_eq!(prompt.sha256.len(), 64);

    let mail = renderer
        .render(
            &facts("Billing::InvoiceSyncWorker"),
            &locate(&repo, "Billing::InvoiceSyncWorker"),
            &catalogue,
        )
        .unwrap();
    let first_full = mail.text.find("Pattern `").unwrap();
    assert!(mail.text[first_full..].starts_with("Pattern `side-effects-after-commit`"));
}

#[test]
fn nothing_found_is_said_plainly() {
    let renderer = PromptRenderer::new(&shipped_template(), DEFAULT_BUDGET_BYTES).unwrap();
    let prompt = renderer
        .render(&facts("unknown"), &[], &shipped_catalogue())
        .unwrap();
    assert!(
        prompt.text.contains("The query_source is unknown"),
        "{}",
        prompt.text
    );
    let prompt = renderer
        .render(&facts("Missing::Worker"), &[], &shipped_catalogue())
        .unwrap();
    assert!(prompt
        .text
        .contains("No worker or job was found for Missing::Worker"));
}

#[test]
fn hostile_values_are_data_not_template_code() {
    let renderer = PromptRenderer::new(&shipped_template(), DEFAULT_BUDGET_BYTES).unwrap();
    let mut job = facts("{{ 7*7 }}{% for x in [1] %}loop{% endfor %}\u{1b}[2J");
    job.tables = vec!["users\u{7}".into(), "t".repeat(500)];
    let prompt = renderer.render(&job, &[], &shipped_catalogue()).unwrap();
    assert!(
        prompt
            .text
            .contains("`{{ 7*7 }}{% for x in [1] %}loop{% endfor %}[2J`"),
        "{}",
        &prompt.text[..400]
    );
    assert!(!prompt.text.contains("49"));
    assert!(!prompt.text.contains('\u{1b}') && !prompt.text.contains('\u{7}'));
    assert!(
        !prompt.text.contains(&"t".repeat(129)),
        "table names are capped"
    );
}

#[test]
fn the_budget_is_kept_and_the_truncation_said() {
    let repo = rails_tree("budget");
    let huge = format!(
        "class HugeWorker\n  def perform\n{}  end\nend\n",
        "    Net::HTTP.get(URI(url)) # filler line to make the method long\n".repeat(110)
    );
    std::fs::write(repo.join("app/workers/huge_worker.rb"), huge).unwrap();
    let candidates = locate(&repo, "HugeWorker");
    for budget in [12 * 1024, 6 * 1024, 1024] {
        let renderer = PromptRenderer::new(&shipped_template(), budget).unwrap();
        let prompt = renderer
            .render(&facts("HugeWorker"), &candidates, &shipped_catalogue())
            .unwrap();
        assert!(
            prompt.text.len() <= budget,
            "{} > {budget}",
            prompt.text.len()
        );
        let note = prompt.truncation.expect("the truncation is reported");
        assert!(
            prompt.text.contains("shortened to fit") || prompt.text.contains("cut here"),
            "{note}"
        );
    }
}

#[test]
fn a_broken_template_is_an_error_not_a_panic() {
    let err = PromptRenderer::new("{% for x in %}", DEFAULT_BUDGET_BYTES)
        .err()
        .unwrap();
    assert!(err.to_string().contains("does not parse"), "{err}");
    let renderer =
        PromptRenderer::new("{{ job.no_such_field.deeper }}", DEFAULT_BUDGET_BYTES).unwrap();
    let err = renderer
        .render(&facts("X"), &[], &shipped_catalogue())
        .unwrap_err();
    assert!(err.to_string().contains("failed to render"), "{err}");
}

#[test]
fn a_previous_rejection_is_in_the_next_prompt_and_absent_otherwise() {
    let repo = rails_tree("rejection");
    let catalogue = shipped_catalogue();
    let renderer = PromptRenderer::new(&shipped_template(), DEFAULT_BUDGET_BYTES).unwrap();
    let candidates = locate(&repo, "admin/users#update");
    let first = renderer
        .render(&facts("admin/users#update"), &candidates, &catalogue)
        .unwrap();
    assert!(!first.text.contains("The previous attempt was rejected"));
    let mut again = facts("admin/users#update");
    again.previous_rejection = vec!["wrapped the whole action in a new transaction".into()];
    let second = renderer.render(&again, &candidates, &catalogue).unwrap();
    let at = second
        .text
        .find("## The previous attempt was rejected")
        .expect("the section");
    assert!(
        second.text[at..].contains("- wrapped the whole action in a new transaction\n"),
        "{}",
        &second.text[at..]
    );
}

/// A Rails app as they really are: actions in parents and concerns,
/// un-namespaced controller tags, jobs outside the usual folders, compact
/// class names, one-line and endless methods.
fn real_world_tree(name: &str) -> Tree {
    let root = std::env::temp_dir().join(format!(
        "longtx-tmp-rails-real-{name}-{}-0",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&root);
    let files = [
        ("app/controllers/application_controller.rb", "class ApplicationController < ActionController::Base\nend\n"),
        ("app/controllers/api/base_controller.rb", "module Api\n  class BaseController < ApplicationController\n    def destroy\n      record.with_lock { Webhook.notify!(record) }\n    end\n  end\nend\n"),
        ("app/controllers/api/v1/rubygems_controller.rb", "module Api\n  module V1\n    class RubygemsController < Api::BaseController\n      include Pushable\n\n      def index; end\n\n      def show = render(json: gem)\n\n      def create\n        Rubygem.transaction { Pusher.new(params).process }\n      end\n    end\n  end\nend\n"),
        ("app/controllers/concerns/pushable.rb", "module Pushable\n  extend ActiveSupport::Concern\n\n  def update\n    Rubygem.transaction { Mailer.deliver_now }\n  end\nend\n"),
        ("app/controllers/rubygems_controller.rb", "class RubygemsController < ApplicationController\n  def index\n  end\nend\n"),
        ("app/controllers/sessions_controller.rb", "class SessionsController < Devise::SessionsController\nend\n"),
        ("app/commands/billing/sync_worker.rb", "module Billing\n  class SyncWorker\n    def perform\n      Invoice.transaction { Stripe.sync! }\n    end\n  end\nend\n"),
        ("app/commands/crm/sync_worker_alias.rb", "module Crm\n  class SyncWorker\n    def perform; end\n  end\nend\n"),
        ("config/initializers/oauth_jobs.rb", "class OAuth::TokenRefreshJob < ApplicationJob\n  def perform(account)\n    account.with_lock { account.refresh! }\n  end\nend\n"),
    ];
    for (path, text) in files {
        let path = root.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    Tree(root)
}

#[test]
fn actions_in_parents_and_concerns_are_found_where_they_are_defined() {
    let repo = real_world_tree("inherited");
    let parent = locate(&repo, "api/v1/rubygems#destroy");
    assert_eq!(
        parent[0].path, "app/controllers/api/base_controller.rb",
        "{parent:?}"
    );
    assert_eq!(parent[0].line, Some(3));
    assert!(
        parent[0]
            .reason
            .contains("inherited from its parent Api::BaseController"),
        "{}",
        parent[0].reason
    );
    let concern = locate(&repo, "api/v1/rubygems#update");
    assert_eq!(concern[0].path, "app/controllers/concerns/pushable.rb");
    assert!(
        concern[0].reason.contains("concern Pushable"),
        "{}",
        concern[0].reason
    );
    let gem = locate(&repo, "sessions#create");
    assert_eq!(gem[0].line, None);
    assert!(
        gem[0]
            .reason
            .contains("Devise::SessionsController, which is not in this repository (a gem)"),
        "{}",
        gem[0].reason
    );
}

#[test]
fn an_un_namespaced_controller_tag_finds_the_namespaced_controller_that_defines_the_action() {
    let repo = real_world_tree("unnamespaced");
    let found = locate(&repo, "rubygems#create");
    assert_eq!(
        found[0].path, "app/controllers/api/v1/rubygems_controller.rb",
        "{found:?}"
    );
    assert_eq!(found[0].line, Some(10));
    assert!(
        found[0].reason.contains(":namespaced_controller"),
        "{}",
        found[0].reason
    );
    assert_eq!(
        found.len(),
        1,
        "the top-level RubygemsController neither defines nor inherits create: {found:?}"
    );
}

#[test]
fn an_action_that_rails_bases_cannot_provide_is_not_found_at_all() {
    let repo = real_world_tree("missing-action");
    // The file exists, but neither it, its concerns nor its parents up to
    // ActionController::Base define `purge`: naming the file would be a
    // wrong answer, not a partial one.
    assert!(
        locate(&repo, "rubygems#purge").is_empty(),
        "{:?}",
        locate(&repo, "rubygems#purge")
    );
    assert!(locate(&repo, "api/v1/rubygems#purge").is_empty());
    // Behind a gem's parent the action may exist: the file is named.
    assert_eq!(locate(&repo, "sessions#refresh").len(), 1);
}

#[test]
fn classes_are_found_anywhere_by_their_namespace_and_one_line_methods_end_on_their_line() {
    let repo = real_world_tree("classes");
    let worker = locate(&repo, "Billing::SyncWorker");
    assert_eq!(worker.len(), 1, "not Crm::SyncWorker: {worker:?}");
    assert_eq!(worker[0].path, "app/commands/billing/sync_worker.rb");
    assert_eq!(worker[0].line, Some(3));
    let compact = locate(&repo, "OAuth::TokenRefreshJob");
    assert_eq!(compact[0].path, "config/initializers/oauth_jobs.rb");
    let index = locate(&repo, "api/v1/rubygems#index");
    assert_eq!(index[0].excerpt.as_deref(), Some("      def index; end"));
    let show = locate(&repo, "api/v1/rubygems#show");
    assert_eq!(
        show[0].excerpt.as_deref(),
        Some("      def show = render(json: gem)")
    );
}

#[test]
fn only_matching_patterns_are_printed_in_full_under_the_prompt_s_own_headings() {
    let repo = rails_tree("full-patterns");
    let catalogue = shipped_catalogue();
    let renderer = PromptRenderer::new(&shipped_template(), DEFAULT_BUDGET_BYTES).unwrap();
    let fitting = renderer
        .render(
            &facts("admin/users#update"),
            &locate(&repo, "admin/users#update"),
            &catalogue,
        )
        .unwrap()
        .text;
    // The pattern's own `## Problem` section nests under the prompt's sections.
    assert!(fitting.contains("\n#### "), "{fitting}");
    let top_level: Vec<&str> = fitting.lines().filter(|l| l.starts_with("## ")).collect();
    assert!(
        top_level
            .iter()
            .all(|h| !h.contains("Problem") && !h.contains("Fix")
                || h.contains("Fix patterns that fit")),
        "pattern headings leak to the top level: {top_level:?}"
    );
    // A source whose code matches no signal gets the index only.
    let mut plain = facts("unknown");
    plain.tables = vec!["widgets".into()];
    let nothing = renderer.render(&plain, &[], &catalogue).unwrap().text;
    assert!(
        !nothing.contains("Pattern `"),
        "no arbitrary pattern in full: {nothing}"
    );
    assert!(nothing.contains("Other patterns in the catalogue"));
    assert!(nothing.contains("If you find no transaction or lock to shorten"));
}

#[test]
fn rake_tasks_in_every_form_and_past_a_heredoc() {
    let root = std::env::temp_dir().join(format!("longtx-tmp-rake-forms-{}-0", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    let root = Tree(root);
    std::fs::create_dir_all(root.join("lib/tasks")).unwrap();
    std::fs::write(
        root.join("lib/tasks/maintenance.rake"),
        "namespace(:maintenance) do\n  task(:vacuum => :environment) do\n    sql = <<~SQL\n      SELECT 1\nend\n    SQL\n    ActiveRecord::Base.transaction { run(sql) }\n  end\n\n  task :all => [:vacuum]\nend\n",
    )
    .unwrap();
    let vacuum = locate(&root, "rake:maintenance:vacuum");
    assert_eq!(vacuum[0].line, Some(2), "{vacuum:?}");
    let all = locate(&root, "rake:maintenance:all");
    assert_eq!(
        all[0].line,
        Some(10),
        "the heredoc's `end` closed no namespace: {all:?}"
    );
    assert_eq!(
        all[0].excerpt.as_deref(),
        Some("  task :all => [:vacuum]"),
        "a block-less task is its line"
    );
}

#[test]
fn the_prompt_names_the_tables_models_and_the_calls_one_level_deep() {
    let root =
        std::env::temp_dir().join(format!("longtx-tmp-rails-context-{}-0", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    let root = Tree(root);
    let files = [
        (
            "app/controllers/orders_controller.rb",
            "class OrdersController < ApplicationController\n  def update\n    order = Order.find(params[:id])\n    Checkout::Finalize.new(order).call\n    notify_warehouse(order)\n  end\n\n  private\n\n  def notify_warehouse(order)\n    Rails.logger.info(order.id)\n  end\nend\n",
        ),
        (
            "app/services/checkout/finalize.rb",
            "module Checkout\n  class Finalize\n    def initialize(order)\n      @order = order\n    end\n\n    def call\n      @order.with_lock { Faraday.post(URL) }\n    end\n  end\nend\n",
        ),
        ("app/models/order.rb", "class Order < ApplicationRecord\nend\n"),
        (
            "app/models/shipment.rb",
            "class Shipment < ApplicationRecord\n  self.table_name = \"legacy_shipments\"\nend\n",
        ),
    ];
    let sources = app_sources(&root, &files);
    let mut job = facts("orders#update");
    job.tables = vec![
        "orders".into(),
        "legacy_shipments".into(),
        "nothing_here".into(),
    ];
    let prompt = sources.build(&job).unwrap().text;
    let around = &prompt[prompt.find("## Around it").expect("a context section")..];
    let around = &around[..around.find("## Fix patterns").unwrap()];
    assert!(
        around.contains("- `orders`: `Order` in `app/models/order.rb` line 1\n"),
        "{around}"
    );
    assert!(
        around.contains("- `legacy_shipments`: `Shipment` in `app/models/shipment.rb` line 1 (it sets `self.table_name`)"),
        "{around}"
    );
    assert!(!around.contains("nothing_here"));
    assert!(
        around.contains("- `Checkout::Finalize.call`: `app/services/checkout/finalize.rb` line 7"),
        "{around}"
    );
    assert!(
        around.contains("- `notify_warehouse`: `app/controllers/orders_controller.rb` line 10"),
        "{around}"
    );
    assert!(
        !around.contains("Rails.logger"),
        "only calls into the repository"
    );
}

/// `@org.update(params)` shows no transaction, but Active Record runs the
/// model's validations and save callbacks inside one: a credentials check
/// against an API there, or a geocoding lookup from a concern, holds the
/// table. The prompt names them, and they rank the HTTP pattern first.
#[test]
fn callbacks_and_validations_of_the_alerted_model_are_named_and_ranked() {
    let root = std::env::temp_dir().join(format!(
        "longtx-tmp-rails-callbacks-{}-0",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&root);
    let root = Tree(root);
    let files = [
        (
            "app/controllers/orgs_controller.rb",
            "class OrgsController < ApplicationController\n  def update\n    @org = Org.find(params[:id])\n    @org.update(org_params)\n    redirect_to @org\n  end\nend\n",
        ),
        (
            "app/models/org.rb",
            "class Org < ApplicationRecord\n  include Geocodable\n  before_create :set_slug\n  validate :check_sms_credentials, if: :sms_enabled, on: :update\n  after_commit :refresh_cache\n\n  def set_slug\n    self.slug = name.parameterize\n  end\n\n  def check_sms_credentials\n    Twilio::REST::Client.new(sid, secret).messages.list(limit: 1)\n  end\n\n  def refresh_cache\n    Rails.cache.delete(cache_key)\n  end\nend\n",
        ),
        (
            "app/models/concerns/geocodable.rb",
            "module Geocodable\n  extend ActiveSupport::Concern\n\n  included do\n    geocoded_by :address\n    after_validation :geocode, if: ->(o) { o.address_changed? }\n  end\nend\n",
        ),
    ];
    let sources = app_sources(&root, &files);
    let mut job = facts("orgs#update");
    job.tables = vec!["orgs".into()];
    let prompt = sources.build(&job).unwrap().text;
    let around = &prompt[prompt.find("## Around it").expect("a context section")..];
    let around = &around[..around.find("## Fix patterns").unwrap()];
    assert!(
        !around.contains("before_create"),
        "an update runs no create callbacks: {around}"
    );
    for line in [
        "- `Org validate :check_sms_credentials`: `app/models/org.rb` line 11",
        "- `Org after_validation :geocode`: `app/models/concerns/geocodable.rb` line 6",
    ] {
        assert!(around.contains(line), "{line} in\n{around}");
    }
    assert!(
        around.contains(
            "- `Org after_commit :refresh_cache`: `app/models/org.rb` line 15, after commit"
        ),
        "after_commit is listed as running after the transaction: {around}"
    );
    assert!(
        around.contains("`app/models/org.rb` line 11, inside the transaction"),
        "{around}"
    );
    let fit = &prompt[prompt.find("## Fix patterns").unwrap()..];
    assert!(
        fit.find("Pattern `external-http-call-in-transaction`")
            .is_some_and(|at| fit[..at].matches("Pattern `").count() == 0),
        "the HTTP pattern comes first:\n{fit}"
    );
}

#[test]
fn a_job_handing_its_record_to_the_model_names_the_models_method() {
    let files = [
        (
            "app/jobs/sync_job.rb",
            "class SyncJob < ApplicationJob\n  def perform(sync)\n    sync.perform\n    sync.destroy\n  end\nend\n",
        ),
        (
            "app/models/sync.rb",
            "class Sync < ApplicationRecord\n  def perform\n    transaction do\n      lock!\n      Importer.new(self).run\n    end\n  end\nend\n",
        ),
    ];
    let around = around_it("named", &files, "SyncJob", &["syncs"]);
    assert!(
        around.contains("- `sync.perform`: `app/models/sync.rb` line 2"),
        "the parameter named after the model is taken for it:\n{around}"
    );
    assert!(
        !around.contains("sync.destroy"),
        "a method the model only inherits points nowhere:\n{around}"
    );
}

/// The "Around it" section of the prompt `files` give for `source`.
fn around_it(name: &str, files: &[(&str, &str)], source: &str, tables: &[&str]) -> String {
    let root =
        std::env::temp_dir().join(format!("longtx-tmp-rails-{name}-{}-0", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    let root = Tree(root);
    let sources = app_sources(&root, files);
    let mut job = facts(source);
    job.tables = tables.iter().map(|t| t.to_string()).collect();
    let prompt = sources.build(&job).unwrap().text;
    let around = &prompt[prompt.find("## Around it").expect("a context section")..];
    around[..around.find("## Fix patterns").unwrap()].to_owned()
}

const USER_MODEL: (&str, &str) = (
    "app/models/user.rb",
    "class User < ApplicationRecord\n  has_many :posts, dependent: :destroy\n  after_create :welcome\n  after_destroy :forget\n  mount_uploader :export, ExportUploader\n\n  def welcome\n    Net::HTTP.get(URI('https://example.com'))\n  end\n\n  def forget\n    Audit.where(user_id: id).delete_all\n  end\nend\n",
);
/// A module file that reopens `User`: the model is still `user.rb`.
const USER_CONCERN: (&str, &str) = (
    "app/models/user/connecting.rb",
    "class User\n  module Connecting\n    def share_with(person)\n    end\n  end\nend\n",
);

#[test]
fn a_create_lists_the_create_callbacks_and_a_destroy_the_destroy_ones() {
    let controller = (
        "app/controllers/users_controller.rb",
        "class UsersController < ApplicationController\n  def create\n    User.create!(user_params)\n  end\n\n  def destroy\n    User.find(params[:id]).destroy\n  end\nend\n",
    );
    let files = [USER_CONCERN, controller, USER_MODEL];
    let create = around_it("create", &files, "users#create", &["users"]);
    assert!(
        create.contains("`users`: `User` in `app/models/user.rb` line 1"),
        "the model is in its Zeitwerk file, not in the module reopening it:\n{create}"
    );
    assert!(create.contains("User after_create :welcome"), "{create}");
    assert!(!create.contains("after_destroy"), "{create}");
    assert!(!create.contains("dependent: :destroy"), "{create}");
    assert!(
        !create.contains("mount_uploader"),
        "the upload runs only when the column is assigned:\n{create}"
    );

    let destroy = around_it("destroy", &files, "users#destroy", &["users"]);
    assert!(destroy.contains("User after_destroy :forget"), "{destroy}");
    assert!(
        destroy.contains(
            "User has_many :posts, dependent: :destroy (each row destroyed in the destroy's transaction)`: `app/models/user.rb` line 2"
        ),
        "{destroy}"
    );
    assert!(!destroy.contains("after_create"), "{destroy}");
}

#[test]
fn an_assigned_uploader_column_and_a_custom_inflection_model_are_named() {
    let controller = (
        "app/controllers/users_controller.rb",
        "class UsersController < ApplicationController\n  def update\n    @user = current_user\n    attach_export(params[:file])\n  end\n\n  private\n\n  def attach_export(file)\n    @user.export = file\n    @user.save\n  end\nend\n",
    );
    let inflected = (
        "app/models/oidc/trusted_publisher/github_action.rb",
        "class OIDC::TrustedPublisher::GitHubAction < ApplicationRecord\n  before_validation :find_owner\n\n  def find_owner\n    Octokit::Client.new.user(owner)\n  end\nend\n",
    );
    let files = [controller, USER_MODEL, inflected];
    let around = around_it(
        "upload",
        &files,
        "users#update",
        &["users", "oidc_trusted_publisher_github_actions"],
    );
    assert!(
        around.contains(
            "User mount_uploader :export (CarrierWave uploads the file in after_save)`: `app/models/user.rb` line 5"
        ),
        "{around}"
    );
    assert!(
        around.contains(
            "`oidc_trusted_publisher_github_actions`: `OIDC::TrustedPublisher::GitHubAction`"
        ),
        "{around}"
    );
    assert!(
        around.contains("OIDC::TrustedPublisher::GitHubAction before_validation :find_owner"),
        "{around}"
    );
}
