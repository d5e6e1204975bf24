//! `longtx scan` on a Rails application made in the test as a real git
//! repository: what it finds, what silences a finding without hiding it,
//! the SARIF code scanning reads, and diff mode against a base commit.

use longtx_testkit::GitRepo;
use serde_json::Value;
use std::process::Command;

const CONTROLLER: &str = "class OrdersController < ApplicationController
  def create
    @order = Order.new(params[:order])
    Order.transaction do
      @order.save!
    end
  end

  def show
    @order = Order.find(params[:id])
  end

  private

  def helper
  end
end
";

const MODEL: &str = "class Order < ApplicationRecord
  after_save :send_confirmation

  def send_confirmation
    OrderMailer.confirmation(self).deliver_now
  end
end
";

/// The lock is held on purpose around the partner's call: silenced by a
/// comment, still reported.
const WORKER: &str = "class PartnerSyncWorker
  include Sidekiq::Worker

  def perform(id)
    account = Account.find(id)
    account.with_lock do
      Faraday.post('https://partner.example/sync', account.to_json) # longtx:ignore the partner needs the row locked
    end
  end
end
";

const EXPORT: &str = "class ExportWorker
  include Sidekiq::Worker

  def perform
    Report.transaction do
      Net::HTTP.post(URI('https://reports.example/upload'), Report.all.to_json)
    end
  end
end
";

fn app() -> (GitRepo, String) {
    let repo = GitRepo::new("scan-app");
    let base = repo.commit(
        &[
            ("app/controllers/orders_controller.rb", CONTROLLER),
            ("app/models/order.rb", MODEL),
            ("app/workers/partner_sync_worker.rb", WORKER),
            ("app/workers/export_worker.rb", EXPORT),
            (
                "ignore-list.yaml",
                "- query_source: ExportWorker\n  reason: nightly, no migration runs then\n",
            ),
        ],
        "dev",
        "dev@example.com",
        3,
    );
    (repo, base)
}

fn scan(repo: &GitRepo, args: &[&str]) -> (i32, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_longtx"))
        .args(["scan", "--repo"])
        .arg(&repo.path)
        .args(args)
        .env(
            "LONGTX_PATTERNS_DIR",
            concat!(env!("CARGO_MANIFEST_DIR"), "/../../patterns"),
        )
        .output()
        .expect("the longtx binary runs");
    assert!(
        out.stderr.is_empty() || out.status.success() || out.status.code() == Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

fn findings(json: &str) -> Vec<Value> {
    let scan: Value = serde_json::from_str(json).expect("JSON");
    scan["findings"].as_array().unwrap().clone()
}

fn find<'a>(all: &'a [Value], kind: &str, path: &str) -> &'a Value {
    all.iter()
        .find(|f| f["kind"] == kind && f["path"] == path)
        .unwrap_or_else(|| panic!("no {kind} at {path} in {all:#?}"))
}

#[test]
fn every_site_with_slow_work_is_found_and_silenced_ones_are_reported_as_such() {
    let (repo, _) = app();
    let (status, json) = scan(&repo, &["--format", "json"]);
    assert_eq!(status, 0);
    let all = findings(&json);

    // The mail sent from a save callback, inside the save's transaction,
    // reached from the action that saves.
    let mail = find(&all, "a mail delivery", "app/models/order.rb");
    assert_eq!(mail["line"], 2, "the callback's declaration");
    assert_eq!(mail["slow"][0]["line"], 5);
    assert!(mail["entries"]
        .as_array()
        .unwrap()
        .contains(&Value::from("orders#create")));
    assert_eq!(mail["pattern"]["id"], "side-effects-after-commit");
    assert!(mail["silenced"].is_null());

    let partner = find(&all, "an HTTP call", "app/workers/partner_sync_worker.rb");
    assert_eq!(partner["silenced"]["by"], "comment");
    assert_eq!(
        partner["silenced"]["reason"],
        "the partner needs the row locked"
    );
    let export = find(&all, "an HTTP call", "app/workers/export_worker.rb");
    assert_eq!(export["silenced"]["by"], "ignore-list");
    assert!(export["silenced"]["reason"]
        .as_str()
        .unwrap()
        .contains("nightly"));
    assert!(
        !all.iter().any(|f| f["entries"]
            .as_array()
            .unwrap()
            .contains(&Value::from("orders#helper"))),
        "a private method is no entry point"
    );

    // Text for a person says the same, silenced last.
    let (_, text) = scan(&repo, &[]);
    assert!(
        text.starts_with("1 finding(s) of slow work inside a transaction, 2 silenced"),
        "{text}"
    );
    assert!(text.contains("app/models/order.rb:5: OrderMailer.confirmation(self).deliver_now"));
    assert!(text.contains("[silenced by comment: the partner needs the row locked]"));

    // --fail-on-findings fails on the one unsilenced finding only.
    assert_eq!(scan(&repo, &["--fail-on-findings"]).0, 1);
}

#[test]
fn sarif_has_what_code_scanning_reads() {
    let (repo, _) = app();
    let (_, sarif) = scan(&repo, &["--format", "sarif"]);
    let sarif: Value = serde_json::from_str(&sarif).unwrap();
    assert_eq!(sarif["version"], "2.1.0");
    let run = &sarif["runs"][0];
    assert_eq!(run["tool"]["driver"]["name"], "longtx");
    let rules: Vec<&str> = run["tool"]["driver"]["rules"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap())
        .collect();
    let results = run["results"].as_array().unwrap();
    assert_eq!(results.len(), 3);
    for result in results {
        let rule = result["ruleId"].as_str().unwrap();
        assert!(rules.contains(&rule), "{rule} is declared");
        let location = &result["locations"][0]["physicalLocation"];
        assert!(location["artifactLocation"]["uri"]
            .as_str()
            .unwrap()
            .starts_with("app/"));
        assert!(location["region"]["startLine"].as_u64().unwrap() >= 1);
        assert_eq!(
            result["partialFingerprints"]["longtxFinding/v1"]
                .as_str()
                .unwrap()
                .len(),
            16
        );
    }
    let suppressed: Vec<&str> = results
        .iter()
        .filter_map(|r| r["suppressions"][0]["kind"].as_str())
        .collect();
    assert_eq!(suppressed.len(), 2, "silenced, not dropped");
    assert!(suppressed.contains(&"inSource") && suppressed.contains(&"external"));
}

#[test]
fn diff_mode_shows_only_what_the_head_adds_and_a_moved_line_is_no_new_finding() {
    let (repo, base) = app();
    let before = findings(&scan(&repo, &["--format", "json"]).1);
    // The head moves the model's lines down and adds an HTTP call inside
    // the controller's transaction.
    repo.commit(
        &[
            (
                "app/models/order.rb",
                &format!("# Orders.\n\n{MODEL}"),
            ),
            (
                "app/controllers/orders_controller.rb",
                &CONTROLLER.replace(
                    "      @order.save!\n",
                    "      @order.save!\n      Net::HTTP.post(URI('https://fraud.example/check'), @order.to_json)\n",
                ),
            ),
        ],
        "dev",
        "dev@example.com",
        1,
    );
    let after = findings(&scan(&repo, &["--format", "json"]).1);
    let mail = |all: &[Value]| find(all, "a mail delivery", "app/models/order.rb").clone();
    assert_eq!(mail(&after)["id"], mail(&before)["id"], "same identity");
    assert_eq!(mail(&after)["line"], 4, "at its new line");

    let (status, json) = scan(
        &repo,
        &["--format", "json", "--base", &base, "--fail-on-findings"],
    );
    let new = findings(&json);
    assert_eq!(new.len(), 1, "{new:#?}");
    assert_eq!(new[0]["kind"], "an HTTP call");
    assert_eq!(new[0]["path"], "app/controllers/orders_controller.rb");
    assert_eq!(status, 1);
    // Against itself, nothing is new.
    let (status, json) = scan(
        &repo,
        &["--format", "json", "--base", "HEAD", "--fail-on-findings"],
    );
    assert!(findings(&json).is_empty());
    assert_eq!(status, 0);
    // A base that is no commit is refused, saying so.
    let out = Command::new(env!("CARGO_BIN_EXE_longtx"))
        .args(["scan", "--repo"])
        .arg(&repo.path)
        .args(["--base", "no-such-branch"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--base no-such-branch: not a commit"));
}

#[tokio::test]
async fn alerting_from_prints_only_what_sources_with_jobs_reach() {
    let (repo, _) = app();
    let service = longtx_testkit::TestApp::spawn().await;
    let hook = longtx_testkit::payloads::AmWebhook::with(
        longtx_testkit::payloads::AmAlert::firing("orders#create").value(150.0),
    );
    assert_eq!(
        service
            .post_json("/webhooks/alertmanager", &hook.to_json())
            .await
            .status(),
        200
    );
    let url = service.url("");
    let path = repo.path.clone();
    let json = tokio::task::spawn_blocking(move || {
        let out = Command::new(env!("CARGO_BIN_EXE_longtx"))
            .args(["scan", "--format", "json", "--repo"])
            .arg(&path)
            .args(["--alerting-from", &url])
            .env_remove("LONGTX_WEBHOOK_TOKEN")
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    })
    .await
    .unwrap();
    let all = findings(&json);
    assert_eq!(all.len(), 1, "{all:#?}");
    assert_eq!(all[0]["kind"], "a mail delivery");
    assert_eq!(all[0]["entries"][0], "orders#create");
    service.shutdown().await;
}

#[test]
fn an_enqueue_to_a_queue_in_the_database_is_no_finding_and_a_lone_bulk_statement_still_is() {
    // vita-min runs Active Job on delayed_job's Active Record backend: an
    // enqueue inside the transaction is one INSERT on the same server.
    // Sidekiq's own API is Redis whatever the adapter. A lone `delete_all`
    // is a transaction of its own, reported as before.
    let repo = GitRepo::new("scan-local-queue");
    repo.commit(
        &[
            (
                "config/application.rb",
                "module Shop\n  class Application < Rails::Application\n    config.active_job.queue_adapter = :delayed_job\n  end\nend\n",
            ),
            (
                "app/workers/settle_worker.rb",
                "class SettleWorker\n  include Sidekiq::Worker\n\n  def perform(id)\n    Order.transaction do\n      ReceiptJob.perform_later(id)\n      LedgerWorker.perform_async(id)\n    end\n    Report.where(stale: true).delete_all\n  end\nend\n",
            ),
        ],
        "dev",
        "dev@example.com",
        3,
    );
    let (_, json) = scan(&repo, &["--format", "json"]);
    let all = findings(&json);
    let enqueue = find(&all, "a job enqueue", "app/workers/settle_worker.rb");
    let calls: Vec<&str> = enqueue["slow"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["code"].as_str().unwrap())
        .collect();
    assert_eq!(calls, ["LedgerWorker.perform_async(id)"], "{all:#?}");
    find(&all, "a batch write", "app/workers/settle_worker.rb");
}

#[test]
fn mail_queued_in_the_database_is_no_finding_wherever_the_call_ends_or_whatever_its_method_is_named(
) {
    // npq-registration runs Active Job on delayed_job (round 16): a mailer
    // call spread over lines ends `).deliver_later` lines below where it
    // starts, and a method named for the mail it queues says no more than
    // its body. Mail sent now, and a loop over a table, stay findings; a
    // loop over a list in capitals is as long as the code writes it.
    let repo = GitRepo::new("scan-local-mail");
    repo.commit(
        &[
            (
                "config/environments/production.rb",
                "Rails.application.configure do\n  config.active_job.queue_adapter = :delayed_job\nend\n",
            ),
            (
                "app/workers/withdraw_worker.rb",
                "class WithdrawWorker\n  include Sidekiq::Worker\n\n  MONTHS = [1, 2, 3].freeze\n\n  def perform(id)\n    Application.transaction do\n      application = Application.find(id)\n      application.update!(state: :withdrawn)\n      WithdrawnMailer.withdrawn_mail(\n        to: application.email,\n      ).deliver_later\n      send_email_notification(application)\n      MONTHS.each { |m| Statement.create!(month: m) }\n      ReceiptMailer.receipt(\n        to: application.email,\n      ).deliver_now\n      Statement.find_each { |s| s.update!(paid: false) }\n    end\n  end\n\n  def send_email_notification(application)\n    return if application.email.blank?\n\n    NotificationMailer.withdrawn(\n      to: application.email,\n    ).deliver_later\n  end\nend\n",
            ),
        ],
        "dev",
        "dev@example.com",
        3,
    );
    let (_, json) = scan(&repo, &["--format", "json"]);
    let all = findings(&json);
    let codes = |kind: &str| -> Vec<String> {
        all.iter()
            .filter(|f| f["kind"] == kind)
            .flat_map(|f| f["slow"].as_array().unwrap().clone())
            .map(|s| s["code"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(
        codes("a mail delivery"),
        ["ReceiptMailer.receipt(", ").deliver_now"],
        "only the mail sent now: {all:#?}"
    );
    assert!(codes("a notification").is_empty(), "{all:#?}");
    assert_eq!(
        codes("a batch over many rows"),
        ["Statement.find_each { |s| s.update!(paid: false) }"],
        "{all:#?}"
    );
    assert!(
        codes("a loop of writes or enqueues")
            .iter()
            .all(|c| !c.contains("MONTHS")),
        "{all:#?}"
    );
}

#[test]
fn work_as_long_as_its_rows_is_printed_as_a_notice_and_fails_no_ci_step_a_call_does() {
    // How many rows a statement meets, only production shows: the scan
    // prints it, SARIF marks it a note, and `--fail-on-findings` passes.
    let repo = GitRepo::new("scan-rows-notice");
    repo.commit(
        &[(
            "app/workers/purge_worker.rb",
            "class PurgeWorker\n  include Sidekiq::Worker\n\n  def perform\n    Report.where(stale: true).delete_all\n  end\nend\n",
        )],
        "dev",
        "dev@example.com",
        3,
    );
    let (code, text) = scan(&repo, &["--fail-on-findings"]);
    assert_eq!(code, 0, "{text}");
    assert!(
        text.contains("a batch write inside a transaction in PurgeWorker#perform [notice"),
        "{text}"
    );
    let (_, sarif) = scan(&repo, &["--format", "sarif"]);
    let sarif: Value = serde_json::from_str(&sarif).unwrap();
    assert_eq!(sarif["runs"][0]["results"][0]["level"], "note", "{sarif:#}");
    assert_eq!(
        sarif["runs"][0]["tool"]["driver"]["rules"][0]["defaultConfiguration"]["level"],
        "note"
    );

    repo.commit(
        &[(
            "app/workers/sync_worker.rb",
            "class SyncWorker\n  include Sidekiq::Worker\n\n  def perform(id)\n    Report.transaction do\n      Faraday.post('https://partner.example/sync', id)\n    end\n  end\nend\n",
        )],
        "dev",
        "dev@example.com",
        3,
    );
    let (code, text) = scan(&repo, &["--fail-on-findings"]);
    assert_eq!(code, 1, "a slow call fails the step: {text}");
    let (_, json) = scan(&repo, &["--format", "json"]);
    let all = findings(&json);
    let http = find(&all, "an HTTP call", "app/workers/sync_worker.rb");
    assert_eq!(http["depends_on_rows"], false);
    let bulk = find(&all, "a batch write", "app/workers/purge_worker.rb");
    assert_eq!(bulk["depends_on_rows"], true);
}

#[test]
fn jobs_kept_in_models_are_entry_points_and_each_rake_task_is_a_finding_of_its_own() {
    // whitehall kept a delayed_job job inside its model's file and
    // otwarchive a Resque job with `def self.perform` in app/models;
    // identity-idp's rake file had two tasks, each wrapping its batches in
    // one transaction, and both were fixed.
    let repo = GitRepo::new("scan-jobs-and-tasks");
    repo.commit(
        &[
            (
                "app/models/import.rb",
                "class Import < ApplicationRecord\n  def perform\n    Import.transaction do\n      rows.each do |row|\n        Faraday.post('https://legacy.example/rows', row.to_json)\n      end\n    end\n  end\n\n  class Job < Struct.new(:id)\n    def perform\n      Import.find(id).perform\n    end\n  end\nend\n",
            ),
            (
                "app/models/scheduled_tag_job.rb",
                "class ScheduledTagJob\n  def self.perform(kind)\n    Tag.transaction do\n      HTTParty.get(\"https://counts.example/#{kind}\")\n    end\n  end\nend\n",
            ),
            (
                "lib/tasks/backfill.rake",
                "namespace :sessions do\n  task backfill: :environment do\n    ActiveRecord::Base.transaction do\n      Session.where(kind: nil).in_batches(of: 1000) { |b| b.update_all(kind: 'a') }\n    end\n  end\n\n  task rollback: :environment do\n    ActiveRecord::Base.transaction do\n      Session.where.not(kind: nil).in_batches(of: 1000) { |b| b.update_all(kind: nil) }\n    end\n  end\nend\n",
            ),
        ],
        "dev",
        "dev@example.com",
        3,
    );
    let (_, json) = scan(&repo, &["--format", "json"]);
    let all = findings(&json);
    let import = find(&all, "an HTTP call", "app/models/import.rb");
    assert!(
        import["entries"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e == "Import::Job"),
        "{import:#?}"
    );
    let tags = find(&all, "an HTTP call", "app/models/scheduled_tag_job.rb");
    assert_eq!(tags["entries"][0], "ScheduledTagJob");
    let tasks: Vec<&str> = all
        .iter()
        .filter(|f| f["path"] == "lib/tasks/backfill.rake")
        .map(|f| f["method"].as_str().unwrap())
        .collect();
    assert!(tasks.contains(&"task backfill"), "{all:#?}");
    assert!(tasks.contains(&"task rollback"), "{all:#?}");
}

#[test]
fn a_wrapper_shows_where_it_opens_and_an_assigned_has_one_runs_its_callbacks() {
    // whitehall's publishing worker yields to a helper that opens the
    // transaction (the maintainers removed the helper's `transaction do`);
    // redmine's `WikiPage#save_with_content` assigns a has_one inside a
    // transaction, which saves the WikiContent and runs its after_save
    // mail; Claim for Crown Court Defence converted each upload with
    // LibreOffice in a before_create.
    let repo = GitRepo::new("scan-wrapper-and-has-one");
    repo.commit(
        &[
            (
                "app/workers/publishing_worker.rb",
                "class PublishingWorker\n  class Failure < StandardError; end\n\n  def perform(id)\n    atomically do\n      Edition.find(id).publish\n      Faraday.post('https://search.example/index', id: id)\n    end\n  end\n\n  def atomically(&block)\n    Edition.connection.execute 'set transaction isolation level serializable'\n    Edition.connection.transaction do\n      yield\n    end\n  end\nend\n",
            ),
            (
                "app/models/edition.rb",
                "class Edition < ApplicationRecord\nend\n",
            ),
            (
                "app/controllers/wiki_controller.rb",
                "class WikiController < ApplicationController\n  def update\n    @page = WikiPage.find(params[:id])\n    @page.save_with_content(WikiContent.new(text: params[:text]))\n  end\nend\n",
            ),
            (
                "app/models/wiki_page.rb",
                "class WikiPage < ApplicationRecord\n  has_one :content, class_name: 'WikiContent', foreign_key: 'page_id'\n\n  def save_with_content(content)\n    transaction do\n      save\n      self.content = content\n    end\n  end\nend\n",
            ),
            (
                "app/models/wiki_content.rb",
                "class WikiContent < ApplicationRecord\n  belongs_to :page, class_name: 'WikiPage'\n  after_save :send_notification\n\n  def send_notification\n    Mailer.wiki_content_updated(self).deliver\n  end\nend\n",
            ),
            (
                "app/controllers/documents_controller.rb",
                "class DocumentsController < ApplicationController\n  def create\n    @document = Document.new(params[:document])\n    @document.save\n  end\nend\n",
            ),
            (
                "app/models/document.rb",
                "class Document < ApplicationRecord\n  before_create :create_preview\n\n  def create_preview\n    Libreconv.convert(file_path, preview_path)\n  end\nend\n",
            ),
        ],
        "dev",
        "dev@example.com",
        3,
    );
    let (_, json) = scan(&repo, &["--format", "json"]);
    let all = findings(&json);
    let published = find(&all, "an HTTP call", "app/workers/publishing_worker.rb");
    assert_eq!(
        published["method"], "PublishingWorker#perform",
        "{published:#?}"
    );
    assert_eq!(published["opens"]["line"], 13, "{published:#?}");
    assert_eq!(
        published["opens"]["code"],
        "Edition.connection.transaction do"
    );
    let mailed = find(&all, "a mail delivery", "app/models/wiki_content.rb");
    assert!(
        mailed["entries"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e == "wiki#update"),
        "{mailed:#?}"
    );
    let converted = find(&all, "an external process", "app/models/document.rb");
    assert_eq!(
        converted["entries"][0], "documents#create",
        "{converted:#?}"
    );
    let (_, sarif) = scan(&repo, &["--format", "sarif"]);
    assert!(
        sarif.contains("where the transaction opens"),
        "the helper's line is a related location: {sarif}"
    );
}

#[test]
fn a_check_speaks_for_calls_not_for_names_of_slow_work() {
    // What round 7's reviewers judged not real (e-petitions, human-
    // essentials): a feature flag named like an API, a column named like a
    // notification, a job run inline whose body only enqueues into the
    // database's own queue. A job run inline whose body sends mail keeps
    // its line: it is what the fix moves.
    let repo = GitRepo::new("scan-names-and-calls");
    repo.commit(
        &[
            (
                "config/application.rb",
                "module App\n  class Application < Rails::Application\n    config.active_job.queue_adapter = :delayed_job\n  end\nend\n",
            ),
            (
                "app/controllers/requests_controller.rb",
                "class RequestsController < ApplicationController\n  def create\n    Request.transaction do\n      @request = Request.create!(params[:request])\n      return if Site.disable_partner_api?\n      Rails.logger.info(\"Twilio will not be told\")\n      NotifyPartnerJob.perform_now(@request.id)\n    end\n  end\n\n  def update\n    Request.transaction do\n      @request = Request.find(params[:id])\n      @request.update!(params[:request])\n      ConfirmJob.perform_now(@request.id)\n    end\n  end\nend\n",
            ),
            (
                "app/jobs/notify_partner_job.rb",
                "class NotifyPartnerJob < ApplicationJob\n  def perform(id)\n    PartnerMailer.notify(id).deliver_later\n  end\nend\n",
            ),
            (
                "app/jobs/confirm_job.rb",
                "class ConfirmJob < ApplicationJob\n  def perform(id)\n    PartnerMailer.confirm(id).deliver_now\n  end\nend\n",
            ),
            (
                "app/models/request.rb",
                "class Request < ApplicationRecord\n  validate do\n    errors.add(:show_notification, :blank) unless show_notification?\n  end\nend\n",
            ),
        ],
        "dev",
        "dev@example.com",
        3,
    );
    let (_, json) = scan(&repo, &["--format", "json"]);
    let all = findings(&json);
    let created: Vec<&Value> = all
        .iter()
        .filter(|f| f["method"] == "RequestsController#create")
        .collect();
    assert!(created.is_empty(), "{created:#?}");
    assert!(
        all.iter().all(|f| f["path"] != "app/models/request.rb"),
        "{all:#?}"
    );
    let confirmed: Vec<&str> = all
        .iter()
        .filter(|f| f["method"] == "RequestsController#update")
        .flat_map(|f| f["slow"].as_array().unwrap())
        .map(|s| s["code"].as_str().unwrap())
        .collect();
    assert!(
        confirmed.contains(&"ConfirmJob.perform_now(@request.id)")
            && confirmed.contains(&"PartnerMailer.confirm(id).deliver_now"),
        "{confirmed:?}"
    );
}

#[test]
fn a_method_already_on_the_route_is_not_read_again_inside_its_own_transaction() {
    // panoptes' ProjectCopier: `copy_project`, called inside `copy`'s
    // transaction, holds the word `copy` in a string; `copy` enqueues after
    // its transaction commits, which round 8's reviewer judged not inside.
    let repo = GitRepo::new("scan-route-once");
    repo.commit(
        &[
            (
                "app/workers/project_copy_worker.rb",
                "class ProjectCopyWorker\n  include Sidekiq::Worker\n\n  def perform(id)\n    ProjectCopier.new(id).copy\n  end\nend\n",
            ),
            (
                "lib/project_copier.rb",
                "class ProjectCopier\n  def initialize(id)\n    @id = id\n  end\n\n  def copy\n    copied = Project.transaction do\n      copied = copy_project\n      copied.save!\n      copied\n    end\n\n    TalkAdminCreateWorker.perform_async(copied.id)\n    copied\n  end\n\n  private\n\n  def copy_project\n    copied = Project.find(@id).dup\n    copied.display_name += \" (copy)\"\n    copied\n  end\nend\n",
            ),
        ],
        "dev",
        "dev@example.com",
        3,
    );
    let (_, json) = scan(&repo, &["--format", "json"]);
    let all = findings(&json);
    assert!(
        all.iter().all(|f| f["path"] != "lib/project_copier.rb"),
        "{all:#?}"
    );
}

#[test]
fn a_records_update_is_active_records_never_a_class_method_of_that_name() {
    // danbooru's ApplicationRecord defines a class method `update!` that
    // updates every row of a relation; `ip_geolocation.update!(...)` on a
    // record is Active Record's own, one row.
    let repo = GitRepo::new("scan-record-update");
    repo.commit(
        &[
            (
                "app/models/application_record.rb",
                "class ApplicationRecord < ActiveRecord::Base\n  self.abstract_class = true\n\n  concerning :ActiveRecordExtensions do\n    class_methods do\n      def update!(*args)\n        all.each { |record| record.update!(*args) }\n      end\n    end\n  end\nend\n",
            ),
            (
                "app/models/ip_geolocation.rb",
                "class IpGeolocation < ApplicationRecord\n  def self.refresh!(ip)\n    transaction do\n      ip_geolocation = IpGeolocation.find_by!(ip_addr: ip)\n      ip_geolocation.update!(checked_at: Time.now)\n    end\n  end\nend\n",
            ),
            (
                "app/controllers/ip_geolocations_controller.rb",
                "class IpGeolocationsController < ApplicationController\n  def update\n    IpGeolocation.refresh!(params[:ip])\n  end\nend\n",
            ),
        ],
        "dev",
        "dev@example.com",
        3,
    );
    let (_, json) = scan(&repo, &["--format", "json"]);
    let all = findings(&json);
    assert!(all.is_empty(), "{all:#?}");
}

/// Round 9's readings judged not real (manageiq, identity-idp): a YAML
/// import the application defines, a `deliver` of its own class, a lock
/// file's name. `activerecord-import` in the Gemfile makes `import` the
/// bulk insert again.
fn manifest_app(gemfile: &str) -> GitRepo {
    let repo = GitRepo::new("scan-manifests");
    repo.commit(
        &[
            ("Gemfile", gemfile),
            (
                "app/models/report.rb",
                "class Report < ApplicationRecord\n  include YamlImport\nend\n",
            ),
            (
                "app/models/concerns/yaml_import.rb",
                "module YamlImport\n  extend ActiveSupport::Concern\n\n  class_methods do\n    def import(fd)\n      YAML.load(fd.read).each { |attrs| create!(attrs) }\n    end\n  end\nend\n",
            ),
            (
                "lib/tasks/reports.rake",
                "namespace :reports do\n  task import: :environment do\n    Dir.glob('reports/*.yaml') do |name|\n      rows = YAML.load_file(name)\n      Report.import(rows)\n    end\n  end\nend\n",
            ),
            (
                "lib/tasks/release.rake",
                "task :release do\n  lock_release = Rails.root.join(\"Gemfile.lock.release\")\n  if lock_release.exist?\n    FileUtils.cp(lock_release, \"Gemfile.lock\")\n    system(\"git commit -am release\")\n  end\nend\n",
            ),
            (
                "app/services/push_event.rb",
                "class PushEvent\n  def self.deliver(event)\n    new(event).deliver\n  end\n\n  def initialize(event)\n    @event = event\n  end\n\n  def deliver\n    Rails.logger.info(@event.to_s)\n  end\nend\n",
            ),
            (
                "app/controllers/profiles_controller.rb",
                "class ProfilesController < ApplicationController\n  def update\n    Profile.transaction do\n      profile = Profile.find(params[:id])\n      profile.update!(params[:profile])\n      PushEvent.deliver(profile)\n    end\n  end\nend\n",
            ),
        ],
        "dev",
        "dev@example.com",
        3,
    );
    repo
}

#[test]
fn what_the_manifests_say_decides_what_a_line_cannot() {
    let (_, json) = scan(
        &manifest_app("source 'https://rubygems.org'\ngem 'rails'\n"),
        &["--format", "json"],
    );
    let all = findings(&json);
    assert!(all.is_empty(), "{all:#?}");

    let (_, json) = scan(
        &manifest_app("source 'https://rubygems.org'\ngem 'rails'\ngem 'activerecord-import'\n"),
        &["--format", "json"],
    );
    let all = findings(&json);
    find(&all, "a bulk import", "lib/tasks/reports.rake");
    assert_eq!(all.len(), 1, "{all:#?}");
}

#[test]
fn a_checkout_on_mongodb_has_no_transaction_to_report() {
    // workarea and errbit keep their data in MongoDB: Mongoid's delete_all
    // is a delete_many, and no save runs in a transaction.
    let repo = GitRepo::new("scan-mongoid");
    repo.commit(
        &[
            (
                "Gemfile",
                "source 'https://rubygems.org'\ngem 'rails'\ngem 'mongoid'\n",
            ),
            (
                "app/models/order.rb",
                "class Order\n  include Mongoid::Document\n  after_create :notify\n\n  def notify\n    OrderMailer.created(self).deliver_now\n  end\nend\n",
            ),
            (
                "app/workers/clean_orders.rb",
                "class CleanOrders\n  include Sidekiq::Worker\n\n  def perform\n    Order.where(:created_at.lt => 1.year.ago).delete_all\n  end\nend\n",
            ),
            (
                "app/controllers/orders_controller.rb",
                "class OrdersController < ApplicationController\n  def create\n    Order.create!(params[:order])\n  end\nend\n",
            ),
        ],
        "dev",
        "dev@example.com",
        3,
    );
    let (_, json) = scan(&repo, &["--format", "json"]);
    assert!(findings(&json).is_empty(), "{json}");
    let (_, text) = scan(&repo, &[]);
    assert!(text.contains("MongoDB"), "{text}");

    // The same code beside a SQL database of its own is scanned.
    repo.commit(
        &[(
            "config/database.yml",
            "production:\n  adapter: postgresql\n",
        )],
        "dev",
        "dev@example.com",
        2,
    );
    let (_, json) = scan(&repo, &["--format", "json"]);
    assert!(!findings(&json).is_empty(), "{json}");
}

#[test]
fn a_bare_with_lock_outside_a_model_is_the_applications_own_lock() {
    // signon's rake tasks take a Redis key through their own
    // `VolatileLock::DSL#with_lock` (round 11): no transaction is open in
    // the block. A model's bare `with_lock` is the record's row lock.
    let repo = GitRepo::new("scan-own-with-lock");
    repo.commit(
        &[
            (
                "lib/volatile_lock.rb",
                "class VolatileLock\n  module DSL\n    def with_lock(key)\n      yield if Redis.new.set(key, 1, nx: true, ex: 600)\n    end\n  end\nend\n",
            ),
            (
                "lib/tasks/organisations.rake",
                "namespace :organisations do\n  task fetch: :environment do\n    include VolatileLock::DSL\n\n    with_lock(\"organisations:fetch\") do\n      Faraday.get(\"https://api.example/organisations\")\n    end\n  end\nend\n",
            ),
            (
                "app/models/account.rb",
                "class Account < ApplicationRecord\n  def refresh!\n    with_lock do\n      Faraday.get(\"https://api.example/accounts/#{id}\")\n    end\n  end\nend\n",
            ),
            (
                "app/controllers/accounts_controller.rb",
                "class AccountsController < ApplicationController\n  def update\n    @account = Account.find(params[:id])\n    @account.refresh!\n  end\nend\n",
            ),
        ],
        "dev",
        "dev@example.com",
        3,
    );
    let (_, json) = scan(&repo, &["--format", "json"]);
    let all = findings(&json);
    find(&all, "an HTTP call", "app/models/account.rb");
    assert!(
        all.iter()
            .all(|f| f["path"] != "lib/tasks/organisations.rake"),
        "{all:#?}"
    );
}

#[test]
fn a_polymorphic_records_slow_work_is_listed_where_any_class_may_run_it() {
    // upcase's purchase, saved, mails its `purchaseable`: a Section or a
    // Product, whichever was bought. Both run inside the save's
    // transaction, so both classes' slow work is listed; a record one of
    // them saves is only a guess and opens no callback site of its own.
    let repo = GitRepo::new("scan-polymorphic");
    repo.commit(
        &[
            (
                "app/models/purchase.rb",
                "class Purchase < ApplicationRecord\n  belongs_to :purchaseable, polymorphic: true\n  after_save :send_receipt\n\n  def send_receipt\n    purchaseable.send_registration_emails(self)\n  end\nend\n",
            ),
            (
                "app/models/section.rb",
                "class Section < ApplicationRecord\n  def send_registration_emails(purchase)\n    Mailer.registration_notification(purchase).deliver_now\n  end\nend\n",
            ),
            (
                "app/models/product.rb",
                "class Product < ApplicationRecord\n  def send_registration_emails(purchase)\n    Audit.create!(purchase: purchase)\n    Faraday.post(\"https://crm.example/registrations\", purchase.id)\n  end\nend\n",
            ),
            (
                "app/models/audit.rb",
                "class Audit < ApplicationRecord\n  after_create :announce\n\n  def announce\n    Faraday.post(\"https://audit.example/\", id)\n  end\nend\n",
            ),
            (
                "app/controllers/purchases_controller.rb",
                "class PurchasesController < ApplicationController\n  def create\n    @purchase = Purchase.new(params[:purchase])\n    @purchase.save\n  end\nend\n",
            ),
        ],
        "dev",
        "dev@example.com",
        3,
    );
    let (_, json) = scan(&repo, &["--format", "json"]);
    let all = findings(&json);
    let listed: Vec<(String, u64)> = all
        .iter()
        .filter(|f| f["path"] == "app/models/purchase.rb")
        .flat_map(|f| f["slow"].as_array().unwrap().clone())
        .map(|c| {
            (
                c["path"].as_str().unwrap().to_owned(),
                c["line"].as_u64().unwrap(),
            )
        })
        .collect();
    assert!(
        listed.contains(&("app/models/section.rb".into(), 3)),
        "{all:#?}"
    );
    assert!(
        listed.contains(&("app/models/product.rb".into(), 4)),
        "{all:#?}"
    );
    assert!(
        all.iter().all(|f| f["path"] != "app/models/audit.rb"),
        "a guessed record's save opens no site: {all:#?}"
    );
}

#[test]
fn a_service_called_with_the_call_shorthand_is_read() {
    // exercism's commands are Mandate service objects, called as
    // `Payments::Stripe::Customer::CreateForUser.(user)`: Ruby's `.()` is
    // `.call()`, so the lock and the Stripe call inside are found.
    let repo = GitRepo::new("scan-call-shorthand");
    repo.commit(
        &[
            (
                "app/commands/customer/create_for_user.rb",
                "class Customer::CreateForUser\n  def self.call(*args)\n    new(*args).call\n  end\n\n  def initialize(user)\n    @user = user\n  end\n\n  def call\n    @user.with_lock do\n      Stripe::Customer.create(email: @user.email)\n    end\n  end\nend\n",
            ),
            (
                "app/controllers/payment_intents_controller.rb",
                "class PaymentIntentsController < ApplicationController\n  def create\n    Customer::CreateForUser.(current_user)\n  end\nend\n",
            ),
            (
                "app/models/user.rb",
                "class User < ApplicationRecord\nend\n",
            ),
        ],
        "dev",
        "dev@example.com",
        3,
    );
    let (_, json) = scan(&repo, &["--format", "json"]);
    let all = findings(&json);
    let stripe = find(
        &all,
        "a payment API call",
        "app/commands/customer/create_for_user.rb",
    );
    assert!(stripe["entries"]
        .as_array()
        .unwrap()
        .contains(&Value::from("payment_intents#create")));
}

#[test]
fn a_block_handed_to_a_services_instance_call_runs_inside_its_lock() {
    // exercism's `User::SendEmail.(notification) do ... end`: the class's
    // `self.call` only builds an instance and hands it the block, and the
    // instance's `call` yields inside `with_lock`, so the mail delivered
    // in the block is sent while the row is locked.
    let repo = GitRepo::new("scan-handed-block");
    repo.commit(
        &[
            (
                "app/commands/send_email.rb",
                "class SendEmail\n  def self.call(*args, &block)\n    new(*args).(&block)\n  end\n\n  def initialize(emailable)\n    @emailable = emailable\n  end\n\n  def call\n    @emailable.with_lock do\n      yield\n      @emailable.update!(sent: true)\n    end\n  end\nend\n",
            ),
            (
                "app/commands/notify.rb",
                "class Notify\n  def self.call(notification)\n    SendEmail.(notification) do\n      NotificationsMailer.with(notification:).welcome.deliver_later\n    end\n  end\nend\n",
            ),
            (
                "app/controllers/notifications_controller.rb",
                "class NotificationsController < ApplicationController\n  def create\n    Notify.call(Notification.find(params[:id]))\n  end\nend\n",
            ),
            (
                "app/models/notification.rb",
                "class Notification < ApplicationRecord\nend\n",
            ),
        ],
        "dev",
        "dev@example.com",
        3,
    );
    let (_, json) = scan(&repo, &["--format", "json"]);
    let all = findings(&json);
    let mail = find(&all, "a mail delivery", "app/commands/notify.rb");
    assert!(mail["entries"]
        .as_array()
        .unwrap()
        .contains(&Value::from("notifications#create")));
}

#[test]
fn an_event_fired_on_a_record_runs_its_transition_hooks_in_the_machines_transaction() {
    // solidus before cb1e1ff261: `@order.complete` fires a state_machine
    // event, which saves the order inside a transaction the machine opens;
    // the confirmation mail of its `after_transition` is sent in it. The
    // finding points at the machine's declaration, where the real fix
    // turned the transaction off with `:use_transactions => false`.
    let order = |options: &str| {
        format!(
            "class Order < ApplicationRecord\n  state_machine :state, :initial => :cart{options} do\n    after_transition :to => :complete, :do => :finalize!\n\n    event :complete do\n      transition :cart => :complete\n    end\n  end\n\n  def finalize!\n    OrderMailer.confirm(self).deliver_now\n  end\nend\n"
        )
    };
    let repo = GitRepo::new("scan-transition");
    repo.commit(
        &[
            (
                "app/controllers/checkouts_controller.rb",
                "class CheckoutsController < ApplicationController\n  def update\n    @order = Order.find(params[:id])\n    @order.complete\n    redirect_to @order\n  end\nend\n",
            ),
            ("app/models/order.rb", &order("")),
        ],
        "dev",
        "dev@example.com",
        3,
    );
    let (_, json) = scan(&repo, &["--format", "json"]);
    let all = findings(&json);
    let mail = find(&all, "a mail delivery", "app/models/order.rb");
    assert_eq!(mail["line"], 3, "{mail:#}");
    assert_eq!(mail["opens"]["line"], 2, "the machine opens it: {mail:#}");
    assert!(mail["why"]
        .as_str()
        .unwrap()
        .contains("inside the transition's transaction"));
    assert!(mail["entries"]
        .as_array()
        .unwrap()
        .contains(&Value::from("checkouts#update")));

    // With the machine's transactions off, in the old hash syntax too,
    // the hook runs outside any transaction.
    repo.commit(
        &[(
            "app/models/order.rb",
            &order(", :use_transactions => false"),
        )],
        "dev",
        "dev@example.com",
        2,
    );
    let (_, json) = scan(&repo, &["--format", "json"]);
    assert!(findings(&json).is_empty(), "{json}");

    // An event declared by a machine-level transition naming it (Solidus's
    // checkout: `transition(t.merge(:on => :next))`, no `event :next`
    // line) is fired the same way.
    repo.commit(
        &[(
            "app/models/order.rb",
            "class Order < ApplicationRecord\n  state_machine :state, :initial => :cart do\n    after_transition :to => :complete, :do => :finalize!\n\n    steps.each { |t| transition(t.merge(:on => :complete)) }\n  end\n\n  def finalize!\n    OrderMailer.confirm(self).deliver_now\n  end\nend\n",
        )],
        "dev",
        "dev@example.com",
        1,
    );
    let (_, json) = scan(&repo, &["--format", "json"]);
    let all = findings(&json);
    let mail = find(&all, "a mail delivery", "app/models/order.rb");
    assert_eq!(mail["line"], 3, "{mail:#}");
}

#[test]
fn calls_on_what_a_factory_method_returns_are_the_instances_and_the_adapters_are_not_the_apps() {
    // ekylibre (round 15): `FinancialYearClose.for_year(year, ...).execute`
    // runs the instance's `execute`, built by the class method; and
    // `connection.execute(sql)` is the database adapter's, never the one
    // `execute` the application defines.
    let repo = GitRepo::new("scan-factory-result");
    repo.commit(
        &[
            (
                "app/services/year_close.rb",
                "class YearClose\n  class << self\n    def for_year(year)\n      new(year)\n    end\n  end\n\n  def initialize(year)\n    @year = year\n  end\n\n  def execute\n    ApplicationRecord.transaction do\n      Faraday.post(\"https://archive.example/years\", @year.to_json)\n    end\n  end\nend\n",
            ),
            (
                "app/jobs/year_close_job.rb",
                "class YearCloseJob < ApplicationJob\n  def perform(year)\n    YearClose.for_year(year).execute\n  end\nend\n",
            ),
            (
                "app/models/account.rb",
                "class Account < ApplicationRecord\n  def merge_with(other)\n    Account.transaction do\n      connection = self.class.connection\n      connection.execute(\"UPDATE items SET account_id = #{id} WHERE account_id = #{other.id}\")\n      other.destroy!\n    end\n  end\nend\n",
            ),
            (
                "app/controllers/accounts_controller.rb",
                "class AccountsController < ApplicationController\n  def merge\n    account = Account.find(params[:id])\n    account.merge_with(Account.find(params[:other_id]))\n  end\nend\n",
            ),
        ],
        "dev",
        "dev@example.com",
        3,
    );
    let (_, json) = scan(&repo, &["--format", "json"]);
    let all = findings(&json);
    let http = find(&all, "an HTTP call", "app/services/year_close.rb");
    assert_eq!(
        http["entries"],
        serde_json::json!(["YearCloseJob"]),
        "{http:#}"
    );
    assert_eq!(all.len(), 1, "the merge runs no HTTP call: {all:#?}");
}

#[test]
fn a_gem_clients_method_is_not_the_applications_method_of_that_name() {
    // collections-publisher (round 14): `Services.publishing_api` builds a
    // GdsApi client, so its `publish` is the gem's HTTP call, never the one
    // `publish` the application defines, `TagPublisher#publish`.
    let repo = GitRepo::new("scan-gem-client");
    repo.commit(
        &[
            (
                "app/lib/services.rb",
                "module Services\n  def self.publishing_api\n    @publishing_api ||= GdsApi::PublishingApi.new(\n      Plek.find(\"publishing-api\"),\n    )\n  end\nend\n",
            ),
            (
                "app/jobs/scheduled_publish_job.rb",
                "class ScheduledPublishJob\n  include Sidekiq::Job\n\n  def perform(id)\n    page = Page.find(id)\n    page.with_lock do\n      Services.publishing_api.publish(page.content_id)\n    end\n  end\nend\n",
            ),
            (
                "app/services/tag_publisher.rb",
                "class TagPublisher\n  def initialize(tag)\n    @tag = tag\n  end\n\n  def publish\n    Tag.transaction do\n      SlackNotifier.ping(@tag.title)\n    end\n  end\nend\n",
            ),
            ("app/models/page.rb", "class Page < ApplicationRecord\nend\n"),
            ("app/models/tag.rb", "class Tag < ApplicationRecord\nend\n"),
        ],
        "dev",
        "dev@example.com",
        3,
    );
    let (_, json) = scan(&repo, &["--format", "json"]);
    let all = findings(&json);
    let at_job: Vec<&Value> = all
        .iter()
        .filter(|f| f["path"] == "app/jobs/scheduled_publish_job.rb")
        .collect();
    assert!(!at_job.is_empty(), "{all:#?}");
    for finding in at_job {
        for call in finding["slow"].as_array().unwrap() {
            assert_eq!(
                call["path"], "app/jobs/scheduled_publish_job.rb",
                "{finding:#?}"
            );
        }
    }
}

#[test]
fn a_query_on_the_records_own_class_is_active_records_and_a_class_method_it_defines_is_read() {
    // brave-intl publishers (round 16): `self.class.where(...)` in a
    // `Channel` validation was read as the one `where` the application
    // defines, an API client's, and the save seemed to call Uphold. A
    // class method the model defines itself is still read there.
    let repo = GitRepo::new("scan-self-class");
    repo.commit(
        &[
            (
                "app/models/channel.rb",
                "class Channel < ApplicationRecord\n  validate :public_name_unique\n  after_save :announce\n\n  def self.announce_to_partner(id)\n    Faraday.post('https://partner.example/channels', id)\n  end\n\n  def public_name_unique\n    matches = self.class.where(public_name: public_name)\n    errors.add(:public_name, :taken) if matches.exists?\n  end\n\n  def announce\n    self.class.announce_to_partner(id)\n  end\nend\n",
            ),
            (
                "app/services/uphold/card.rb",
                "module Uphold\n  class Card\n    def where(connection:)\n      Faraday.get(\"https://api.uphold.example/cards/#{connection.id}\")\n    end\n  end\nend\n",
            ),
            (
                "app/controllers/channels_controller.rb",
                "class ChannelsController < ApplicationController\n  def update\n    channel = Channel.find(params[:id])\n    channel.update!(public_name: params[:public_name])\n  end\nend\n",
            ),
        ],
        "dev",
        "dev@example.com",
        3,
    );
    let (_, json) = scan(&repo, &["--format", "json"]);
    let all = findings(&json);
    let calls: Vec<String> = all
        .iter()
        .filter(|f| f["kind"] == "an HTTP call")
        .flat_map(|f| f["slow"].as_array().unwrap().clone())
        .map(|s| format!("{}:{}", s["path"].as_str().unwrap(), s["line"]))
        .collect();
    assert!(
        calls.iter().all(|c| !c.starts_with("app/services/uphold")),
        "{all:#?}"
    );
    assert!(
        calls.contains(&"app/models/channel.rb:6".to_owned()),
        "the model's own class method is read: {all:#?}"
    );
}

#[test]
fn an_observers_save_callbacks_run_inside_the_save_and_its_after_commit_does_not() {
    // catarse (round 17): `ProjectObserver < ActiveRecord::Observer` (the
    // rails-observers gem) fetched a video's details over HTTP from
    // `after_validation`, and `UpdateObserver#after_create` mailed every
    // backer, both inside the INSERT's transaction. An observer observes
    // the model its name names, or those its `observe` line lists.
    let repo = GitRepo::new("scan-observers");
    repo.commit(
        &[
            (
                "app/controllers/projects_controller.rb",
                "class ProjectsController < ApplicationController\n  def create\n    Project.create!(params[:project])\n  end\nend\n",
            ),
            ("app/models/project.rb", "class Project < ApplicationRecord\nend\n"),
            ("app/models/user.rb", "class User < ApplicationRecord\nend\n"),
            (
                "app/observers/project_observer.rb",
                "class ProjectObserver < ActiveRecord::Observer\n  def after_create(project)\n    ProjectMailer.created(project).deliver\n  end\n\n  def after_commit(project)\n    ProjectMailer.committed(project).deliver\n  end\nend\n",
            ),
            (
                "app/observers/audit_observer.rb",
                "class AuditObserver < ActiveRecord::Observer\n  observe :project, :reward\n\n  def before_save(record)\n    Faraday.post('https://audit.example/records', record.id)\n  end\nend\n",
            ),
            (
                "app/observers/user_observer.rb",
                "class UserObserver < ActiveRecord::Observer\n  def after_create(user)\n    Faraday.post('https://crm.example/users', user.id)\n  end\nend\n",
            ),
        ],
        "dev",
        "dev@example.com",
        3,
    );
    let (_, json) = scan(&repo, &["--format", "json"]);
    let all = findings(&json);
    let mailed = find(&all, "a mail delivery", "app/observers/project_observer.rb");
    assert_eq!(mailed["entries"][0], "projects#create", "{mailed:#?}");
    let slow: Vec<u64> = mailed["slow"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["line"].as_u64().unwrap())
        .collect();
    assert_eq!(
        slow,
        [3],
        "the after_commit mail waits for the commit: {mailed:#?}"
    );
    let audited = find(&all, "an HTTP call", "app/observers/audit_observer.rb");
    assert_eq!(audited["entries"][0], "projects#create", "{audited:#?}");
    assert!(
        all.iter()
            .all(|f| f["path"] != "app/observers/user_observer.rb"),
        "no entry saves a user: {all:#?}"
    );
}

#[test]
fn a_block_handed_on_by_a_helper_to_one_that_opens_a_transaction_runs_inside_it() {
    // publishing-api (round 17): each command ran in
    // `response = with_event_logging(...) do`, whose helper handed the
    // block to `EventLogger.log_command`, which opens the transaction; the
    // content store was written over HTTP (gds-api-adapters) inside it.
    let repo = GitRepo::new("scan-handed-on-block");
    repo.commit(
        &[
            (
                "app/controllers/application_controller.rb",
                "class ApplicationController < ActionController::Base\n  def with_event_logging(name, payload, &block)\n    EventLogger.log_command(name, payload, &block)\n  end\nend\n",
            ),
            (
                "app/event_logger.rb",
                "module EventLogger\n  def self.log_command(name, payload)\n    Event.connection.transaction do\n      Event.create!(action: name, payload: payload)\n      yield\n    end\n  end\nend\n",
            ),
            ("app/models/event.rb", "class Event < ApplicationRecord\nend\n"),
            (
                "app/controllers/documents_controller.rb",
                "class DocumentsController < ApplicationController\n  def publish\n    response = with_event_logging('Publish', params) do\n      ContentStoreWriter.new.publish(params[:id])\n    end\n    render json: response\n  end\nend\n",
            ),
            (
                "app/services/content_store_writer.rb",
                "class ContentStoreWriter\n  def publish(id)\n    GdsApi.content_store.put_content_item(base_path: id)\n  end\nend\n",
            ),
        ],
        "dev",
        "dev@example.com",
        3,
    );
    let (_, json) = scan(&repo, &["--format", "json"]);
    let all = findings(&json);
    let written = find(
        &all,
        "an HTTP call",
        "app/controllers/documents_controller.rb",
    );
    assert_eq!(written["entries"][0], "documents#publish", "{written:#?}");
    assert_eq!(
        written["opens"]["path"], "app/event_logger.rb",
        "{written:#?}"
    );
    assert_eq!(written["opens"]["line"], 3, "{written:#?}");
    assert_eq!(
        written["slow"][0]["path"], "app/services/content_store_writer.rb",
        "{written:#?}"
    );
}

#[test]
fn a_form_made_in_either_branch_of_an_if_runs_its_own_update_not_active_records() {
    // caseflow (round 17): `form = if legacy ... LegacyHearingUpdateForm.new
    // ... else HearingUpdateForm.new ... end` then `form.update`, whose
    // transaction made the video conference call; the forms live in
    // `app/models` but are no records, so their `update` is their own.
    let repo = GitRepo::new("scan-conditional-form");
    repo.commit(
        &[
            (
                "app/controllers/hearings_controller.rb",
                "class HearingsController < ApplicationController\n  def update\n    form = if hearing.is_a?(LegacyHearing)\n             LegacyHearingUpdateForm.new(params)\n           else\n             HearingUpdateForm.new(params)\n           end\n    form.update\n    render json: form.hearing\n  end\nend\n",
            ),
            (
                "app/models/hearings/forms/base_hearing_update_form.rb",
                "class BaseHearingUpdateForm\n  def update\n    ActiveRecord::Base.transaction do\n      hearing.save!\n      Faraday.post('https://conference.example/rooms', id: hearing.id)\n    end\n  end\nend\n",
            ),
            (
                "app/models/hearings/forms/hearing_update_form.rb",
                "class HearingUpdateForm < BaseHearingUpdateForm\nend\n",
            ),
            (
                "app/models/hearings/forms/legacy_hearing_update_form.rb",
                "class LegacyHearingUpdateForm < BaseHearingUpdateForm\nend\n",
            ),
            ("app/models/hearing.rb", "class Hearing < ApplicationRecord\nend\n"),
        ],
        "dev",
        "dev@example.com",
        3,
    );
    let (_, json) = scan(&repo, &["--format", "json"]);
    let all = findings(&json);
    let called = find(
        &all,
        "an HTTP call",
        "app/models/hearings/forms/base_hearing_update_form.rb",
    );
    assert_eq!(called["entries"][0], "hearings#update", "{called:#?}");
}
