//! Transaction sites end to end: a Rails tree built in each test, the
//! shipped catalogue and template, and the prompt's leads ("where the
//! transaction may be held") read back: where the transaction is held, not where the request
//! enters.

use longtx_prompt::{JobFacts, PromptSources, DEFAULT_BUDGET_BYTES};
use std::path::{Path, PathBuf};

/// A Rails application written into a folder of its own, removed when the
/// test ends, failed or not.
struct App(PathBuf);

impl App {
    fn new(name: &str, files: &[(&str, &str)]) -> App {
        let root =
            std::env::temp_dir().join(format!("longtx-tmp-sites-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        for (path, text) in files {
            let path = root.join(path);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        App(root)
    }

    fn prompt(&self, source: &str, tables: &[&str]) -> String {
        let repo_root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let sources = PromptSources {
            patterns_dir: repo_root.join("patterns"),
            template: repo_root.join("patterns/_prompt.md.tera"),
            repo: Some(self.0.clone()),
            budget_bytes: DEFAULT_BUDGET_BYTES,
        };
        let job = JobFacts {
            query_source: source.into(),
            tables: tables.iter().map(|t| t.to_string()).collect(),
            threshold_seconds: 100.0,
            ..JobFacts::default()
        };
        sources.build(&job).unwrap().text
    }
}

impl Drop for App {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The sites section: from its heading to the entry point's.
fn sites(prompt: &str) -> &str {
    let start = prompt
        .find("## Leads: where the transaction may be held")
        .expect("a sites section");
    let end = prompt
        .find("## Where the request enters")
        .expect("the entry point stays");
    &prompt[start..end]
}

/// The first site's heading, `path` line `n`.
fn first_site(prompt: &str) -> &str {
    let section = sites(prompt);
    let at = section.find("### ").expect("a site");
    section[at + 4..].lines().next().unwrap()
}

/// The first lead whole: from its heading to the next lead's.
fn first_lead(prompt: &str) -> &str {
    let section = sites(prompt);
    let lead = &section[section.find("\n### ").expect("a site") + 1..];
    let end = lead[4..].find("\n### ").map_or(lead.len(), |at| at + 4);
    &lead[..end]
}

/// The first pattern printed in full.
fn top_pattern(prompt: &str) -> &str {
    let at = prompt.find("Pattern `").expect("a pattern in full");
    let rest = &prompt[at + "Pattern `".len()..];
    &rest[..rest.find('`').unwrap()]
}

#[test]
fn a_transaction_two_calls_from_the_action_is_the_first_site() {
    let app = App::new(
        "service",
        &[
            (
                "app/controllers/orders_controller.rb",
                "class OrdersController < ApplicationController\n  def create\n    order = Order.new(order_params)\n    Checkout::Place.new(order).call\n    redirect_to order\n  end\nend\n",
            ),
            (
                "app/services/checkout/place.rb",
                "module Checkout\n  class Place\n    def initialize(order)\n      @order = order\n    end\n\n    def call\n      persist\n    end\n\n    private\n\n    def persist\n      Order.transaction do\n        @order.save!\n        Faraday.post(\"https://payments.example/charge\", amount: @order.total)\n      end\n    end\n  end\nend\n",
            ),
            ("app/models/order.rb", "class Order < ApplicationRecord\nend\n"),
        ],
    );
    let prompt = app.prompt("orders#create", &["orders"]);
    assert_eq!(
        first_site(&prompt),
        "`app/services/checkout/place.rb` line 14",
        "{prompt}"
    );
    let section = sites(&prompt);
    assert!(
        section.contains(
            "Route: OrdersController#create → Checkout::Place#call → Checkout::Place#persist."
        ),
        "{section}"
    );
    assert!(
        section.contains("Order.transaction do\n        @order.save!\n        Faraday.post"),
        "{section}"
    );
    assert!(
        section.contains("- an HTTP call: `Faraday.post(\"https://payments.example/charge\", amount: @order.total)` (app/services/checkout/place.rb line 16)"),
        "every slow call is listed with its line: {section}"
    );
    let entry = &prompt[prompt.find("## Where the request enters").unwrap()..];
    assert!(
        entry.contains("### `app/controllers/orders_controller.rb` line 2"),
        "the entry point stays as context: {entry}"
    );
    assert_eq!(top_pattern(&prompt), "external-http-call-in-transaction");
}

#[test]
fn a_callback_of_an_sti_subclass_on_the_alerted_table_is_a_site() {
    let app = App::new(
        "sti",
        &[
            (
                "app/controllers/vehicles_controller.rb",
                "class VehiclesController < ApplicationController\n  def update\n    @vehicle = Vehicle.find(params[:id])\n    @vehicle.update(vehicle_params)\n  end\nend\n",
            ),
            ("app/models/vehicle.rb", "class Vehicle < ApplicationRecord\n  validates :name, presence: true\nend\n"),
            (
                "app/models/truck.rb",
                "class Truck < Vehicle\n  after_save :sync_fleet\n\n  def sync_fleet\n    FleetApi::Client.new.push(id: id, plate: plate)\n    Net::HTTP.post(URI(\"https://fleet.example/trucks\"), to_json)\n  end\nend\n",
            ),
        ],
    );
    let prompt = app.prompt("vehicles#update", &["vehicles"]);
    assert_eq!(
        first_site(&prompt),
        "`app/models/truck.rb` line 2",
        "{prompt}"
    );
    let section = sites(&prompt);
    assert!(
        section.contains("Route: VehiclesController#update → Truck after_save :sync_fleet."),
        "{section}"
    );
    assert!(
        section.contains("runs inside the save's transaction"),
        "{section}"
    );
    assert!(
        section.contains("# app/models/truck.rb line 4\n  def sync_fleet"),
        "{section}"
    );
}

#[test]
fn a_block_form_callback_is_read_whole() {
    let app = App::new(
        "block",
        &[
            (
                "app/controllers/shipments_controller.rb",
                "class ShipmentsController < ApplicationController\n  def update\n    @shipment = Shipment.find(params[:id])\n    @shipment.update!(state: \"shipped\")\n  end\nend\n",
            ),
            (
                "app/models/shipment.rb",
                "class Shipment < ApplicationRecord\n  before_save :normalize\n  after_update do\n    ShipmentMailer.shipped(self).deliver_now\n  end\n  after_commit :refresh_cache\n\n  def normalize\n    self.state = state.downcase\n  end\n\n  def refresh_cache\n    Rails.cache.delete(cache_key)\n  end\nend\n",
            ),
        ],
    );
    let prompt = app.prompt("shipments#update", &["shipments"]);
    assert_eq!(
        first_site(&prompt),
        "`app/models/shipment.rb` line 3",
        "{prompt}"
    );
    let section = sites(&prompt);
    assert!(
        section.contains("after_update do\n    ShipmentMailer.shipped(self).deliver_now\n  end"),
        "{section}"
    );
    assert!(
        section.contains("- a mail delivery: `ShipmentMailer.shipped(self).deliver_now` (app/models/shipment.rb line 4)"),
        "{section}"
    );
    assert!(
        prompt.contains("- `Shipment after_commit :refresh_cache`: `app/models/shipment.rb` line 12, after commit"),
        "{prompt}"
    );
    assert_eq!(top_pattern(&prompt), "side-effects-after-commit");
}

#[test]
fn an_aasm_after_hook_of_the_fired_event_is_a_site() {
    let app = App::new(
        "aasm",
        &[
            (
                "app/controllers/refunds_controller.rb",
                "class RefundsController < ApplicationController\n  def approve\n    @refund = Refund.find(params[:id])\n    @refund.approve!\n    redirect_to @refund\n  end\nend\n",
            ),
            (
                "app/models/refund.rb",
                "class Refund < ApplicationRecord\n  include AASM\n\n  aasm column: :state do\n    state :pending, initial: true\n    state :approved\n    state :voided\n\n    event :approve do\n      transitions from: :pending, to: :approved\n      after do\n        Stripe::Refund.create(charge: charge_id, amount: amount)\n      end\n    end\n\n    event :void do\n      transitions from: :pending, to: :voided\n      after do\n        AuditLog.record(self)\n      end\n    end\n  end\nend\n",
            ),
        ],
    );
    let prompt = app.prompt("refunds#approve", &["refunds"]);
    assert_eq!(
        first_site(&prompt),
        "`app/models/refund.rb` line 11",
        "{prompt}"
    );
    let section = sites(&prompt);
    assert!(section.contains("Refund AASM after do … end"), "{section}");
    assert!(
        section.contains("event :approve do\n  # …\n      after do\n        Stripe::Refund.create"),
        "the event the hook belongs to is shown: {section}"
    );
    assert!(
        section.contains("- a payment API call: `Stripe::Refund.create(charge: charge_id, amount: amount)` (app/models/refund.rb line 12)"),
        "{section}"
    );
    assert!(
        !section.contains("AuditLog"),
        "nothing slow in the void hook: {section}"
    );
}

#[test]
fn a_stale_object_rescue_outside_does_not_outrank_the_mail_inside() {
    let app = App::new(
        "stale",
        &[
            (
                "app/controllers/invoices_controller.rb",
                "class InvoicesController < ApplicationController\n  def update\n    @invoice = Invoice.find(params[:id])\n    begin\n      @invoice.update!(invoice_params)\n    rescue ActiveRecord::StaleObjectError\n      @invoice.reload\n      render :edit, status: :conflict\n    end\n  end\nend\n",
            ),
            (
                "app/models/invoice.rb",
                "class Invoice < ApplicationRecord\n  after_save :send_receipt\n\n  def send_receipt\n    InvoiceMailer.receipt(self).deliver_now\n  end\nend\n",
            ),
        ],
    );
    let prompt = app.prompt("invoices#update", &["invoices"]);
    assert_eq!(
        first_site(&prompt),
        "`app/models/invoice.rb` line 2",
        "{prompt}"
    );
    assert_eq!(
        top_pattern(&prompt),
        "side-effects-after-commit",
        "the mail inside the save's transaction decides, not the rescue around it"
    );
}

#[test]
fn a_destroy_callback_is_no_site_of_a_job_that_destroys_nothing() {
    let app = App::new(
        "destroy",
        &[
            (
                "app/controllers/comments_controller.rb",
                "class CommentsController < ApplicationController\n  def create\n    @comment = Comment.new(comment_params)\n    @comment.save!\n  end\nend\n",
            ),
            (
                "app/models/comment.rb",
                "class Comment < ApplicationRecord\n  after_destroy :purge_everywhere\n  after_create :notify_author\n\n  def purge_everywhere\n    Notification.where(target: self).destroy_all\n    Net::HTTP.post(URI(\"https://search.example/purge\"), id.to_s)\n  end\n\n  def notify_author\n    CommentMailer.new_comment(self).deliver_now\n  end\nend\n",
            ),
        ],
    );
    let prompt = app.prompt("comments#create", &["comments"]);
    let section = sites(&prompt);
    assert!(
        !section.contains("purge_everywhere"),
        "a create runs no after_destroy: {section}"
    );
    assert_eq!(
        first_site(&prompt),
        "`app/models/comment.rb` line 3",
        "{prompt}"
    );
}

#[test]
fn a_lock_helper_of_another_class_around_a_client_bound_in_an_initializer_is_a_site() {
    let app = App::new(
        "bound",
        &[
            (
                "app/jobs/sync_application_job.rb",
                "class SyncApplicationJob < ApplicationJob\n  def perform(application)\n    RowLocker.hold(application) do\n      ApplicationsTable.create(\"id\" => application.id)\n    end\n  end\nend\n",
            ),
            (
                "app/services/row_locker.rb",
                "class RowLocker\n  def self.hold(record)\n    record.with_lock do\n      yield\n    end\n  end\nend\n",
            ),
            (
                "config/initializers/airrecord.rb",
                "Airrecord.api_key = ENV[\"AIRTABLE_KEY\"]\nApplicationsTable = Airrecord.table(ENV[\"AIRTABLE_KEY\"], \"app1\", \"tbl1\")\n",
            ),
            ("app/models/application.rb", "class Application < ApplicationRecord\nend\n"),
        ],
    );
    let prompt = app.prompt("SyncApplicationJob", &["applications"]);
    assert_eq!(
        first_site(&prompt),
        "`app/jobs/sync_application_job.rb` line 3",
        "{prompt}"
    );
    let section = sites(&prompt);
    assert!(
        section.contains("- an Airtable API call: `ApplicationsTable`, bound to `Airrecord` in config/initializers, called at app/jobs/sync_application_job.rb line 4"),
        "{section}"
    );
    assert_eq!(top_pattern(&prompt), "external-http-call-in-transaction");
}

#[test]
fn a_statesman_after_transition_runs_inside_the_transition_and_is_a_site() {
    let app = App::new(
        "statesman",
        &[
            (
                "app/jobs/confirm_order_job.rb",
                "class ConfirmOrderJob < ApplicationJob\n  def perform(order)\n    order.state_machine.transition_to!(:confirmed)\n  end\nend\n",
            ),
            (
                "app/state_machines/order_state_machine.rb",
                "class OrderStateMachine\n  include Statesman::Machine\n\n  state :pending, initial: true\n  state :confirmed\n  transition from: :pending, to: [:confirmed]\n\n  after_transition(to: :confirmed) do |order|\n    OrderMailer.confirmed(order).deliver_now\n  end\n\n  after_transition(to: :confirmed, after_commit: true) do |order|\n    Net::HTTP.post(URI(\"https://crm.example/orders\"), order.id.to_s)\n  end\nend\n",
            ),
            ("app/models/order.rb", "class Order < ApplicationRecord\nend\n"),
        ],
    );
    let prompt = app.prompt("ConfirmOrderJob", &["order_transitions"]);
    assert_eq!(
        first_site(&prompt),
        "`app/state_machines/order_state_machine.rb` line 8",
        "{prompt}"
    );
    let section = sites(&prompt);
    assert!(
        !section.contains("line 12"),
        "an after_commit: true hook runs after the commit: {section}"
    );
    assert_eq!(top_pattern(&prompt), "side-effects-after-commit");
}

#[test]
fn a_save_on_an_unknown_receiver_is_the_models_not_a_plain_class_of_that_name() {
    let app = App::new(
        "record-method",
        &[
            (
                "app/controllers/publishers_controller.rb",
                "class PublishersController < ApplicationController\n  def create\n    record = current_user.publishers.new(publisher_params)\n    if record.save\n      redirect_to record\n    end\n  end\nend\n",
            ),
            (
                "app/services/pusher.rb",
                "class Pusher\n  def save\n    Version.transaction do\n      Faraday.post(\"https://index.example/push\", body)\n      versions.each { |v| v.update!(indexed: true) }\n    end\n  end\nend\n",
            ),
            (
                "app/models/publisher.rb",
                "class Publisher < ApplicationRecord\n  before_validation :find_owner_id\n\n  def find_owner_id\n    self.owner_id = Octokit::Client.new.user(owner_name).id\n  end\nend\n",
            ),
        ],
    );
    let prompt = app.prompt("publishers#create", &["publishers"]);
    let section = sites(&prompt);
    assert!(
        !section.contains("Pusher"),
        "`record.save` is Active Record's save, not Pusher#save: {section}"
    );
    assert_eq!(
        first_site(&prompt),
        "`app/models/publisher.rb` line 2",
        "{prompt}"
    );
    assert_eq!(top_pattern(&prompt), "external-http-call-in-transaction");
}

#[test]
fn an_http_call_deep_under_a_lock_outranks_hooks_the_job_never_fires() {
    let app = App::new(
        "deep-lock",
        &[
            (
                "app/jobs/backorder_job.rb",
                "class BackorderJob < ApplicationJob\n  def perform(order)\n    OrderLocker.lock_order(order) do\n      place_backorder(order)\n    end\n  end\n\n  def place_backorder(order)\n    orderer = RemoteOrderer.new(order.supplier)\n    orderer.send_order(order.line_items)\n  end\nend\n",
            ),
            (
                "app/services/order_locker.rb",
                "class OrderLocker\n  def self.lock_order(order)\n    order.with_lock do\n      yield\n    end\n  end\nend\n",
            ),
            (
                "app/services/remote_orderer.rb",
                "class RemoteOrderer\n  def initialize(supplier)\n    @supplier = supplier\n  end\n\n  def send_order(items)\n    RemoteRequest.new(@supplier).submit(items.to_json)\n  end\nend\n",
            ),
            (
                "app/services/remote_request.rb",
                "class RemoteRequest\n  def initialize(supplier)\n    @supplier = supplier\n  end\n\n  def submit(body)\n    Faraday.new(url: @supplier.api_url).post(\"/orders\", body)\n  end\nend\n",
            ),
            (
                "app/models/order.rb",
                "class Order < ApplicationRecord\n  state_machine :state, initial: :cart do\n    after_transition to: :complete, do: :finalize!\n\n    event :complete do\n      transition cart: :complete\n    end\n  end\n\n  def finalize!\n    line_items.each { |item| item.update!(price: item.variant.price) }\n    adjustments.update_all(state: \"closed\")\n    OrderMailer.confirm(self).deliver_later\n    OrderMailer.notify_shop(self).deliver_later\n    save!\n  end\nend\n",
            ),
        ],
    );
    let prompt = app.prompt("BackorderJob", &["orders"]);
    assert_eq!(
        first_site(&prompt),
        "`app/jobs/backorder_job.rb` line 3",
        "the job never completes an order: {prompt}"
    );
    assert!(
        sites(&prompt).contains("- an HTTP call: `Faraday.new(url: @supplier.api_url).post(\"/orders\", body)` (app/services/remote_request.rb line 7)"),
        "{prompt}"
    );
    assert_eq!(top_pattern(&prompt), "external-http-call-in-transaction");
}

#[test]
fn a_transition_lists_the_gateway_call_beside_the_confirmation_mail() {
    // The hard case of the agent benchmark that prompted issue 41: the
    // transition to `complete` mails a confirmation and captures payments
    // through a gateway; a prompt naming only the mail steered the agent
    // away from the capture.
    let app = App::new(
        "transition",
        &[
            (
                "app/controllers/checkouts_controller.rb",
                "class CheckoutsController < ApplicationController\n  def update\n    @order = Order.find(params[:id])\n    @order.complete\n    redirect_to @order\n  end\nend\n",
            ),
            (
                "app/models/order.rb",
                "class Order < ApplicationRecord\n  has_many :payments\n\n  state_machine :state, initial: :cart do\n    after_transition to: :complete, do: :finalize!\n\n    event :complete do\n      transition cart: :complete\n    end\n  end\n\n  def finalize!\n    OrderMailer.confirm(self).deliver_now\n    capture_payments\n  end\n\n  def capture_payments\n    payments.each { |payment| payment.capture! }\n  end\nend\n",
            ),
            (
                "app/models/payment.rb",
                "class Payment < ApplicationRecord\n  belongs_to :order\n\n  def capture!\n    response = gateway.purchase(amount_cents, source_token)\n    update!(state: \"captured\", response_code: response.authorization)\n  end\n\n  def gateway\n    ActiveMerchant::Billing::StripeGateway.new(login: ENV.fetch(\"STRIPE_KEY\"))\n  end\nend\n",
            ),
        ],
    );
    let prompt = app.prompt("checkouts#update", &["orders"]);
    let section = sites(&prompt);
    let first = &section[section.find("### ").expect("a site")..];
    let first = &first[..first[4..].find("### ").map_or(first.len(), |at| at + 4)];
    assert!(
        first.contains("- a mail delivery: `OrderMailer.confirm(self).deliver_now` (app/models/order.rb line 13)"),
        "the mail is listed: {section}"
    );
    assert!(
        first.contains("- a payment gateway call: `response = gateway.purchase(amount_cents, source_token)` (app/models/payment.rb line 5)"),
        "the gateway call sits in the same transition and is listed beside the mail: {section}"
    );
    assert!(
        first.contains("- the walk stopped 4 calls deep at `Payment#capture!` (app/models/payment.rb line 4): what it calls (`Payment#gateway`) was not read"),
        "where the walk stopped is said: {section}"
    );
    assert!(
        prompt.contains("every slow call in it (network and payment gateways"),
        "the standing instructions ask for every slow call: {prompt}"
    );
}

#[test]
fn a_transition_hook_whose_walk_stopped_before_any_slow_call_stays_a_lead() {
    // Solidus before cb1e1ff2: the hook's block reaches the gateway only
    // past the walk's depth (`process_payments!` -> `process!` ->
    // `purchase!` -> `gateway_action`). With nothing slow seen, the hook
    // is still a lead, and says where the walk stopped, as one calling a
    // gem or a method chosen at run time does.
    let app = App::new(
        "stopped-hook",
        &[
            (
                "app/controllers/checkouts_controller.rb",
                "class CheckoutsController < ApplicationController\n  def update\n    @order = Order.find(params[:id])\n    @order.next\n    redirect_to @order\n  end\nend\n",
            ),
            (
                "app/models/order.rb",
                "class Order < ApplicationRecord\n  has_many :payments\n\n  state_machine :state, initial: :cart do\n    transition(from: :cart, to: :complete, on: :next)\n\n    before_transition to: :complete do |order|\n      order.process_payments!\n    end\n  end\n\n  def process_payments!\n    payments.each { |payment| payment.process! }\n  end\nend\n",
            ),
            (
                "app/models/payment.rb",
                "class Payment < ApplicationRecord\n  belongs_to :order\n\n  def process!\n    purchase! if amount.positive?\n  end\n\n  def purchase!\n    gateway_action(:purchase, :complete)\n  end\nend\n",
            ),
        ],
    );
    let prompt = app.prompt("checkouts#update", &["orders"]);
    assert_eq!(
        first_site(&prompt),
        "`app/models/order.rb` line 7",
        "the hook is a lead: {prompt}"
    );
    let section = sites(&prompt);
    assert!(
        section.contains("no slow call was recognised inside it"),
        "it says nothing slow was seen: {section}"
    );
    assert!(
        section.contains("- the walk stopped 4 calls deep at `Payment#process!` (app/models/payment.rb line 4): what it calls (`Payment#purchase!`) was not read"),
        "and where the walk stopped: {section}"
    );
}

#[test]
fn a_bulk_delete_with_no_transaction_around_it_is_a_site_of_its_own() {
    let app = App::new(
        "bulk",
        &[
            (
                "lib/tasks/reports.rake",
                "namespace :reports do\n  task expire: :environment do\n    Report.expire\n  end\nend\n",
            ),
            (
                "app/models/report.rb",
                "class Report < ApplicationRecord\n  def self.expire\n    cutoff = 1.week.ago\n    Report.where(\"reported_at < ?\", cutoff).delete_all\n  end\n\n  def self.touch_one(id)\n    where(id: id).update_all(seen: true)\n  end\nend\n",
            ),
        ],
    );
    let prompt = app.prompt("rake:reports:expire", &["reports"]);
    assert_eq!(
        first_site(&prompt),
        "`app/models/report.rb` line 4",
        "{prompt}"
    );
    let section = sites(&prompt);
    assert!(
        section.contains("`delete_all` in `Report#expire` is one statement, and so one transaction over every row it touches"),
        "{section}"
    );
    assert!(
        !section.contains("line 8"),
        "a one-row update_all is no bulk statement: {section}"
    );
}

#[test]
fn a_service_base_class_that_wraps_call_in_a_transaction_is_a_site() {
    let app = App::new(
        "service-base",
        &[
            (
                "app/controllers/charges_controller.rb",
                "class ChargesController < ApplicationController\n  def create\n    Charges::Collect.call(current_order)\n    head :created\n  end\nend\n",
            ),
            (
                "app/services/application_service.rb",
                "class ApplicationService\n  def self.call(*args)\n    ActiveRecord::Base.transaction do\n      new(*args).call\n    end\n  end\nend\n",
            ),
            (
                "app/services/charges/collect.rb",
                "module Charges\n  class Collect < ApplicationService\n    def initialize(order)\n      @order = order\n    end\n\n    def call\n      @order.update!(state: \"charging\")\n      Stripe::Charge.create(amount: @order.total_cents, customer: @order.customer_token)\n    end\n  end\nend\n",
            ),
            ("app/models/order.rb", "class Order < ApplicationRecord\nend\n"),
        ],
    );
    let prompt = app.prompt("charges#create", &["orders"]);
    assert_eq!(
        first_site(&prompt),
        "`app/controllers/charges_controller.rb` line 3",
        "{prompt}"
    );
    let section = sites(&prompt);
    assert!(
        section.contains("calls `Charges::Collect.call`, whose `ApplicationService.call` (app/services/application_service.rb line 2) wraps the service's own `#call` in it, which opens a transaction"),
        "{section}"
    );
    assert!(
        section.contains("- a payment API call: `Stripe::Charge.create(amount: @order.total_cents, customer: @order.customer_token)` (app/services/charges/collect.rb line 9)"),
        "{section}"
    );
    let entry = &prompt[prompt.find("## Where the request enters").unwrap()..];
    assert!(
        entry.contains("its code is shown with a lead above")
            && !entry.contains("Charges::Collect.call(current_order)"),
        "the entry's method is not shown twice: {entry}"
    );
}

#[test]
fn transitions_of_a_machine_without_transactions_hold_nothing() {
    let app = App::new(
        "no-transactions",
        &[
            (
                "app/controllers/orders_controller.rb",
                "class OrdersController < ApplicationController\n  def ship\n    @order = Order.find(params[:id])\n    @order.ship\n  end\nend\n",
            ),
            (
                "app/models/order.rb",
                "class Order < ApplicationRecord\n  state_machine :state, initial: :paid, use_transactions: false do\n    after_transition to: :shipped, do: :notify_customer\n\n    event :ship do\n      transition paid: :shipped\n    end\n  end\n\n  def notify_customer\n    OrderMailer.shipped(self).deliver_now\n  end\nend\n",
            ),
        ],
    );
    let prompt = app.prompt("orders#ship", &["orders"]);
    assert!(
        !prompt.contains("## Leads: where the transaction may be held\n\nlongtx followed"),
        "use_transactions: false runs the hook outside any transaction: {prompt}"
    );
}

#[test]
fn a_destroy_is_not_led_by_the_save_callbacks_of_the_model_it_destroys() {
    let app = App::new(
        "destroy-action",
        &[
            (
                "app/controllers/api/restful_controller.rb",
                "module Api\n  class RestfulController < ApplicationController\n    def destroy_action\n      resource.destroy\n    end\n  end\nend\n",
            ),
            (
                "app/controllers/api/discussions_controller.rb",
                "module Api\n  class DiscussionsController < RestfulController\n    def destroy\n      destroy_action\n    end\n  end\nend\n",
            ),
            (
                "app/models/discussion.rb",
                "class Discussion < ApplicationRecord\n  has_many :comments, dependent: :destroy\n  before_save :notify_watchers\n  after_destroy :purge_search\n\n  def notify_watchers\n    WatcherMailer.changed(self).deliver_now\n  end\n\n  def purge_search\n    SearchIndex.client.delete(id)\n    Faraday.post(\"https://search.example/purge\", id: id)\n  end\nend\n",
            ),
        ],
    );
    let prompt = app.prompt("api/discussions#destroy", &["discussions"]);
    let section = sites(&prompt);
    assert!(
        !section.contains("before_save :notify_watchers"),
        "a destroy never runs before_save: {section}"
    );
    assert!(
        section.contains("after_destroy :purge_search"),
        "the destroy's own callback is the lead: {section}"
    );
}

#[test]
fn an_event_record_created_in_a_callback_runs_its_own_callbacks_inside_the_save() {
    // loomio's shape: the discussion's `after_create` publishes an event
    // whose class method calls a bare `create!`; the event's own
    // `after_create` mails every member inside the discussion's INSERT.
    let app = App::new(
        "event",
        &[
            (
                "app/controllers/discussions_controller.rb",
                "class DiscussionsController < ApplicationController\n  def create\n    @discussion = Discussion.new(params[:discussion])\n    @discussion.save\n    redirect_to @discussion\n  end\nend\n",
            ),
            (
                "app/models/discussion.rb",
                "class Discussion < ApplicationRecord\n  after_create :fire_new_discussion_event\n\n  def fire_new_discussion_event\n    Events::NewDiscussion.publish!(self)\n  end\nend\n",
            ),
            (
                "app/models/events/new_discussion.rb",
                "class Events::NewDiscussion < ApplicationRecord\n  after_create :notify_users!\n\n  def self.publish!(discussion)\n    create!(kind: 'new_discussion', eventable: discussion)\n  end\n\n  def notify_users!\n    raise 'could not create a notification' unless eventable\n    DiscussionMailer.new_discussion_created(eventable).deliver\n  end\nend\n",
            ),
        ],
    );
    let prompt = app.prompt("discussions#create", &["discussions"]);
    assert_eq!(
        first_site(&prompt),
        "`app/models/events/new_discussion.rb` line 2",
        "{prompt}"
    );
    assert!(
        sites(&prompt).contains("DiscussionMailer.new_discussion_created(eventable).deliver"),
        "{prompt}"
    );
    assert_eq!(top_pattern(&prompt), "side-effects-after-commit");
}

#[test]
fn a_form_object_named_by_its_receiver_is_followed_to_its_transaction() {
    // identity-idp's shape: the action builds a form in a helper, calls
    // `@verify_form.submit`, and the form reaches the profile through
    // `pending_profile&.`; the profile's method opens the transaction.
    let app = App::new(
        "form",
        &[
            (
                "app/controllers/verify_controller.rb",
                "class VerifyController < ApplicationController\n  def create\n    @verify_form = build_verify_form\n    result = @verify_form.submit\n    redirect_to root_url if result\n  end\n\n  def build_verify_form\n    VerifyForm.new(user: current_user)\n  end\nend\n",
            ),
            (
                "app/forms/verify_form.rb",
                "class VerifyForm\n  def initialize(user:)\n    @user = user\n  end\n\n  def submit\n    pending_profile&.schedule_enrollment\n  end\n\n  def pending_profile\n    @user.pending_profile\n  end\nend\n",
            ),
            (
                "app/models/profile.rb",
                "class Profile < ApplicationRecord\n  def schedule_enrollment\n    transaction do\n      update!(active: false)\n      UspsProofer.new.request_enroll(self)\n      Faraday.post(ENROLL_URL, id: id)\n    end\n  end\nend\n",
            ),
        ],
    );
    let prompt = app.prompt("verify#create", &["profiles"]);
    assert_eq!(
        first_site(&prompt),
        "`app/models/profile.rb` line 3",
        "{prompt}"
    );
    assert!(
        sites(&prompt).contains("Faraday.post(ENROLL_URL, id: id)"),
        "{prompt}"
    );
}

#[test]
fn a_callback_whose_method_is_a_gems_stays_a_lead_after_the_slow_ones() {
    // hyrax's shape: `before_destroy :remove_file!` names an uploader's
    // method no file of the app defines; nothing slow is seen, so it is
    // shown last and says what was not read, never dropped.
    let app = App::new(
        "gem-callback",
        &[
            (
                "app/controllers/uploads_controller.rb",
                "class UploadsController < ApplicationController\n  def destroy\n    @upload = UploadedFile.find(params[:id])\n    @upload.destroy\n    head :no_content\n  end\nend\n",
            ),
            (
                "app/models/uploaded_file.rb",
                "class UploadedFile < ApplicationRecord\n  mount_uploader :file, UploadedFileUploader\n  before_destroy :remove_file!\nend\n",
            ),
        ],
    );
    let prompt = app.prompt("uploads#destroy", &["uploaded_files"]);
    let section = sites(&prompt);
    assert!(
        section.contains("### `app/models/uploaded_file.rb` line 3"),
        "{section}"
    );
    assert!(
        section.contains(
            "calls code outside this repository (a gem or SDK), not read: `remove_file!`"
        ),
        "{section}"
    );
}

#[test]
fn a_transaction_the_walk_cannot_reach_that_writes_the_table_is_a_lead_of_last_resort() {
    // The action reaches its service only through a name built at run
    // time; the service's transaction writes `orders` around an HTTP call.
    // An agent searching the code for it would find it: so does the prompt.
    let app = App::new(
        "elsewhere",
        &[
            (
                "app/controllers/orders_controller.rb",
                "class OrdersController < ApplicationController\n  def create\n    handler = \"#{params[:kind]}_handler\".camelize.constantize\n    handler.new(params).run\n    head :created\n  end\nend\n",
            ),
            (
                "app/models/order.rb",
                "class Order < ApplicationRecord\nend\n",
            ),
            (
                "app/handlers/card_handler.rb",
                "class CardHandler\n  def run\n    Order.transaction do\n      order = Order.create!(state: 'new')\n      Faraday.post(CHARGE_URL, id: order.id)\n    end\n  end\nend\n",
            ),
            (
                "app/handlers/report_handler.rb",
                "class ReportHandler\n  def run\n    Invoice.transaction do\n      Faraday.post(REPORT_URL)\n    end\n  end\nend\n",
            ),
        ],
    );
    let prompt = app.prompt("orders#create", &["orders"]);
    let section = sites(&prompt);
    assert_eq!(
        first_site(&prompt),
        "`app/handlers/card_handler.rb` line 3",
        "{prompt}"
    );
    assert!(
        section.contains("the walk did not reach it from the entry point"),
        "{section}"
    );
    assert!(
        !section.contains("report_handler.rb"),
        "a transaction that never names an alerted model is no lead: {section}"
    );
}

#[test]
fn a_destroy_that_cascades_is_one_site_at_the_call_with_every_association_and_row_callback() {
    // loomio's shape: the action calls a service whose `destroy!` takes
    // the discussion's comments and polls with it in one transaction; a
    // comment's own destroy callback mails its author, once per row.
    let app = App::new(
        "destroy-cascade",
        &[
            (
                "app/controllers/discussions_controller.rb",
                "class DiscussionsController < ApplicationController\n  def destroy\n    DiscussionService.destroy(discussion: Discussion.find(params[:id]))\n    head :ok\n  end\nend\n",
            ),
            (
                "app/services/discussion_service.rb",
                "class DiscussionService\n  def self.destroy(discussion:)\n    discussion.destroy!\n  end\nend\n",
            ),
            (
                "app/models/discussion.rb",
                "class Discussion < ApplicationRecord\n  has_many :comments, dependent: :destroy\n  has_many :polls, dependent: :destroy\n  has_many :tags\nend\n",
            ),
            (
                "app/models/comment.rb",
                "class Comment < ApplicationRecord\n  belongs_to :discussion\n  after_destroy :tell_author\n\n  def tell_author\n    CommentMailer.removed(self).deliver_now\n  end\nend\n",
            ),
            ("app/models/poll.rb", "class Poll < ApplicationRecord\nend\n"),
        ],
    );
    let prompt = app.prompt("discussions#destroy", &["discussions"]);
    let section = sites(&prompt);
    assert_eq!(
        first_site(&prompt),
        "`app/services/discussion_service.rb` line 3",
        "the call holds the transaction: {section}"
    );
    assert!(
        section.contains("`comments`, `polls`") && !section.contains("`tags`"),
        "the site names what it cascades over, and only that: {section}"
    );
    assert!(
        section.contains("app/models/comment.rb line 6"),
        "each comment's mail is slow work of the same transaction: {section}"
    );
    assert!(
        !section.contains("### `app/models/discussion.rb` line 2"),
        "the associations are the site's work, not sites of their own: {section}"
    );
}

#[test]
fn a_destroy_action_whose_call_is_not_seen_gets_one_cascade_lead_that_says_so() {
    let app = App::new(
        "destroy-cascade-unseen",
        &[
            (
                "app/controllers/discussions_controller.rb",
                "class DiscussionsController < ApplicationController\n  def destroy\n    service.destroy(resource)\n  end\nend\n",
            ),
            (
                "app/models/discussion.rb",
                "class Discussion < ApplicationRecord\n  has_many :comments, dependent: :destroy\n  has_many :polls, dependent: :destroy\nend\n",
            ),
        ],
    );
    let prompt = app.prompt("discussions#destroy", &["discussions"]);
    let section = sites(&prompt);
    assert_eq!(section.matches("\n### ").count(), 1, "one lead: {section}");
    assert!(
        section.contains("did not see where the entry calls the destroy"),
        "the lead says what the walk did not see: {section}"
    );
}

#[test]
fn methods_declared_on_one_callback_line_share_one_site_with_all_their_slow_work() {
    // whitehall's shape: `after_save :a, :b` declares two callbacks on one
    // line; the second's API call must not vanish behind the first's site.
    let app = App::new(
        "one-line-callbacks",
        &[
            (
                "app/controllers/appointments_controller.rb",
                "class AppointmentsController < ApplicationController\n  def create\n    Appointment.new(params[:appointment]).save!\n  end\nend\n",
            ),
            (
                "app/models/appointment.rb",
                "class Appointment < ApplicationRecord\n  after_save :republish_role, :republish_organisation\n\n  def republish_role\n    RoleRepublishJob.perform_async(role_id)\n  end\n\n  def republish_organisation\n    Faraday.post(\"https://publishing.example/organisations\", id: organisation_id)\n  end\nend\n",
            ),
        ],
    );
    let prompt = app.prompt("appointments#create", &["appointments"]);
    let section = sites(&prompt);
    assert_eq!(
        section.matches("\n### ").count(),
        1,
        "one declaration, one site: {section}"
    );
    assert!(
        section.contains("app/models/appointment.rb line 5")
            && section.contains("app/models/appointment.rb line 9"),
        "both methods' slow calls are listed: {section}"
    );
}

#[test]
fn a_library_objects_method_is_not_taken_for_the_one_model_method_of_that_name() {
    // OpenStreetMap's DiffReader calls LibXML's `@doc.import(node)`; the
    // application's only `def import` is Trace's, which reads a GPX file
    // and bulk-deletes points. The upload never runs it.
    let app = App::new(
        "library-object",
        &[
            (
                "app/controllers/uploads_controller.rb",
                "class UploadsController < ApplicationController\n  def create\n    Changeset.transaction do\n      DiffReader.new(request.raw_post).commit\n    end\n  end\nend\n",
            ),
            (
                "lib/diff_reader.rb",
                "class DiffReader\n  def initialize(xml)\n    @doc = XML::Document.new\n    @xml = xml\n  end\n\n  def commit\n    node = @doc.import(@xml)\n    Node.create!(data: node.to_s)\n  end\nend\n",
            ),
            (
                "app/models/trace.rb",
                "class Trace < ApplicationRecord\n  def import\n    Tracepoint.where(trace: id).delete_all\n    File.open(path).each_line { |l| Tracepoint.create!(line: l) }\n  end\nend\n",
            ),
            ("app/models/node.rb", "class Node < ApplicationRecord\nend\n"),
            ("app/models/changeset.rb", "class Changeset < ApplicationRecord\nend\n"),
        ],
    );
    let prompt = app.prompt("uploads#create", &["nodes"]);
    let section = sites(&prompt);
    assert!(
        !section.contains("Tracepoint.where") && !section.contains("Trace#import"),
        "LibXML's import is not Trace's: {section}"
    );
}

#[test]
fn an_error_class_declared_on_one_line_at_the_top_of_a_model_does_not_own_the_rest_of_it() {
    // danbooru's `User` opens with `class PrivilegeError < StandardError;
    // end`; the methods below it are `User`'s, and so are their callbacks.
    let app = App::new(
        "nested-error",
        &[
            (
                "app/controllers/passwords_controller.rb",
                "class PasswordsController < ApplicationController\n  def update\n    @user = User.find(params[:id])\n    @user.change_password(params[:password])\n  end\nend\n",
            ),
            (
                "app/models/user.rb",
                "class User < ApplicationRecord\n  class PrivilegeError < StandardError; end\n\n  after_save :sync_directory\n\n  def change_password(password)\n    with_lock do\n      update!(password: password)\n    end\n  end\n\n  def sync_directory\n    Net::HTTP.post(URI(\"https://directory.example/users\"), id.to_s)\n  end\nend\n",
            ),
        ],
    );
    let prompt = app.prompt("passwords#update", &["users"]);
    let section = sites(&prompt);
    assert!(section.contains("User#change_password"), "{section}");
    assert!(!section.contains("PrivilegeError"), "{section}");
}

#[test]
fn a_method_sent_through_delay_runs_in_a_worker_not_in_the_transaction() {
    // iNaturalist's callbacks enqueue with delayed_job's proxy:
    // `Identification.delay(...).run_update_curator_identification(id)`
    // runs later, in a worker; the job's `unique_hash` names the method
    // too, in a string the walk would otherwise read as a call.
    let app = App::new(
        "delay-proxy",
        &[
            (
                "app/controllers/guides_controller.rb",
                "class GuidesController < ApplicationController\n  def update\n    @guide = Guide.find(params[:id])\n    @guide.update!(guide_params)\n  end\nend\n",
            ),
            (
                "app/models/guide.rb",
                "class Guide < ApplicationRecord\n  after_save :update_curators\n\n  def update_curators\n    Guide.\n      delay(\n        priority: 1,\n        unique_hash: { \"Guide::run_update_curators\": id }\n      ).\n      run_update_curators( id )\n  end\n\n  def self.run_update_curators(id)\n    Net::HTTP.post(URI(\"https://archive.example/ngz\"), id.to_s)\n  end\nend\n",
            ),
        ],
    );
    let prompt = app.prompt("guides#update", &["guides"]);
    assert!(prompt.contains("update_curators"), "{prompt}");
    assert!(
        !prompt.contains("archive.example"),
        "the upload runs in the job, not in the save: {prompt}"
    );
}

#[test]
fn a_records_own_update_is_not_a_concerns_class_method_of_that_name() {
    // danbooru's ApplicationRecord defines, in a concern's `class_methods`
    // block, a relation-wide `update!` that loops over every record. A
    // model's bare `update!(status: ...)` is Active Record's own.
    let app = App::new(
        "class-methods",
        &[
            (
                "app/controllers/requests_controller.rb",
                "class RequestsController < ApplicationController\n  def approve\n    @request = Request.find(params[:id])\n    @request.approve!\n  end\nend\n",
            ),
            (
                "app/models/application_record.rb",
                "class ApplicationRecord < ActiveRecord::Base\n  self.abstract_class = true\n\n  concerning :BulkMethods do\n    class_methods do\n      def update!(*args)\n        all.each { |record| record.update!(*args) }\n      end\n    end\n  end\nend\n",
            ),
            (
                "app/models/request.rb",
                "class Request < ApplicationRecord\n  def approve!\n    transaction do\n      update!(status: \"approved\")\n    end\n  end\nend\n",
            ),
        ],
    );
    let prompt = app.prompt("requests#approve", &["requests"]);
    assert!(
        !prompt.contains("all.each { |record| record.update!(*args) }"),
        "{prompt}"
    );
}

#[test]
fn mail_sent_after_commit_and_work_in_an_after_commit_block_are_not_in_the_transaction() {
    // otwarchive sends mail with its own `deliver_after_commit`, built on
    // the after_commit_everywhere gem, whose `after_commit { }` runs the
    // block once the outermost transaction commits.
    let app = App::new(
        "after-commit-helpers",
        &[
            (
                "app/controllers/comments_controller.rb",
                "class CommentsController < ApplicationController\n  def create\n    @comment = Comment.new(comment_params)\n    @comment.save!\n  end\nend\n",
            ),
            (
                "app/models/comment.rb",
                "class Comment < ApplicationRecord\n  after_create :notify_parent\n\n  def notify_parent\n    CommentMailer.reply_sent(id).deliver_after_commit\n    after_commit do\n      push_to_archive\n    end\n  end\n\n  def push_to_archive\n    Net::HTTP.post(URI(\"https://archive.example/c\"), id.to_s)\n  end\nend\n",
            ),
        ],
    );
    let prompt = app.prompt("comments#create", &["comments"]);
    assert!(prompt.contains("notify_parent"), "{prompt}");
    let leads = &prompt[prompt.find("## Leads").unwrap()..prompt.find("## Around it").unwrap()];
    assert!(
        !leads.contains("app/models/comment.rb"),
        "nothing in the callback runs before the commit: {leads}"
    );
}

#[test]
fn work_under_a_redis_lock_is_no_transaction_site() {
    // bike_index serialises a job with the redlock gem:
    // `lock_manager.lock(key, ttl)` takes a lock in Redis, and no
    // database transaction is open under it.
    let app = App::new(
        "redis-lock",
        &[(
            "app/jobs/enrich_activities_job.rb",
            "class EnrichActivitiesJob < ApplicationJob\n  def perform(id)\n    lock_manager = Redlock::Client.new([ENV[\"REDIS_URL\"]])\n    redlock = lock_manager.lock(\"enrich-#{id}\", 300_000)\n    return unless redlock\n    Net::HTTP.get(URI(\"https://strava.example/activities/#{id}\"))\n  ensure\n    lock_manager.unlock(redlock) if redlock\n  end\nend\n",
        )],
    );
    let prompt = app.prompt("EnrichActivitiesJob", &["activities"]);
    assert!(prompt.contains("EnrichActivitiesJob"), "{prompt}");
    assert!(!prompt.contains("takes a row lock"), "{prompt}");
}

#[test]
fn a_password_change_that_only_updates_the_user_sends_no_welcome_mail() {
    // An action whose name says nothing of create or update (`change`)
    // updates the user inside a transaction: Rails runs the update and save
    // callbacks there, never the `after_create` ones. (Each callback is
    // still a lead of its own, ranked by whether it agrees with the entry.)
    let app = App::new(
        "update-only-save",
        &[
            (
                "app/controllers/passwords_controller.rb",
                "class PasswordsController < ApplicationController\n  def change\n    @user = User.find(params[:id])\n    User.transaction do\n      @user.update!(password: params[:password])\n      @user.touch(:password_changed_at)\n    end\n  end\nend\n",
            ),
            (
                "app/models/user.rb",
                "class User < ApplicationRecord\n  after_create :send_welcome\n  after_update :push_profile\n\n  def send_welcome\n    UserMailer.welcome(self).deliver_now\n  end\n\n  def push_profile\n    Faraday.post(\"https://crm.example/users\", to_json)\n  end\nend\n",
            ),
        ],
    );
    let prompt = app.prompt("passwords#change", &["users"]);
    let leads = sites(&prompt);
    let at = leads
        .find("### `app/controllers/passwords_controller.rb`")
        .unwrap_or_else(|| panic!("the transaction is a lead: {leads}"));
    let transaction = &leads[at..];
    let transaction = &transaction[..transaction[4..]
        .find("### ")
        .map_or(transaction.len(), |n| n + 4)];
    assert!(transaction.contains("crm.example"), "{transaction}");
    assert!(!transaction.contains("UserMailer.welcome"), "{transaction}");
    assert!(
        !prompt.contains("`crm.example`"),
        "a URL in a string is no call on an unknown object: {prompt}"
    );
}

#[test]
fn a_service_object_made_in_the_method_is_read_for_every_call_on_it() {
    // danbooru's `processor = UploadService::Replacer.new(...)` then
    // `processor.process!`: the object's class is on the line that made it,
    // so the prompt must not say it could not tell, and a second call on
    // the same object is read as well as the first.
    let app = App::new(
        "assigned-service",
        &[
            (
                "app/controllers/replacements_controller.rb",
                "class ReplacementsController < ApplicationController\n  def create\n    @post = Post.find(params[:post_id])\n    @post.replace!(params[:url])\n  end\nend\n",
            ),
            (
                "app/models/post.rb",
                "class Post < ApplicationRecord\n  def replace!(url)\n    transaction do\n      processor = Replacer.new(post: self, url: url)\n      processor.prepare\n      processor.process!\n    end\n  end\nend\n",
            ),
            (
                "app/logical/replacer.rb",
                "class Replacer\n  def initialize(post:, url:)\n    @post = post\n    @url = url\n  end\n\n  def prepare\n    @post.touch\n  end\n\n  def process!\n    Faraday.get(@url)\n  end\nend\n",
            ),
        ],
    );
    let prompt = app.prompt("replacements#create", &["posts"]);
    let leads = sites(&prompt);
    assert!(
        leads.contains("`Faraday.get(@url)` (app/logical/replacer.rb line 12)"),
        "{leads}"
    );
    assert!(
        leads
            .lines()
            .filter(|l| l.contains("`processor.process!`"))
            .all(|l| l.contains("reached from `processor.process!` (app/models/post.rb line 6)")),
        "named only as the line that reaches the call, never as unread: {leads}"
    );
}

/// A Redmine-shaped repository model: `kinds` subclasses, each with its own
/// `fetch_changesets` holding a transaction over a fetch and a loop of
/// inserts.
fn repository_subclasses(kinds: &[&str]) -> Vec<(String, String)> {
    kinds
        .iter()
        .map(|kind| {
            (
                format!("app/models/repository/{}.rb", kind.to_lowercase()),
                format!("class Repository::{kind} < Repository\n  def fetch_changesets\n    transaction do\n      revisions = Net::HTTP.get(URI(url))\n      JSON.parse(revisions).each do |revision|\n        Changeset.create!(repository: self, revision: revision['id'])\n      end\n    end\n  end\nend\n"),
            )
        })
        .collect()
}

#[test]
fn every_subclass_version_of_the_called_method_is_listed_under_one_lead() {
    // Redmine's `@repository.fetch_changesets` runs the override of the
    // row's class (`type`): Bazaar, CVS, ... or Subversion, the seventh by
    // name, whose transaction was the real fix (`7bd4590c`). The versions
    // are one lead, and the other site the action reaches stays shown.
    const KINDS: [&str; 8] = [
        "Bazaar",
        "Cvs",
        "Darcs",
        "Filesystem",
        "Git",
        "Mercurial",
        "Perforce",
        "Subversion",
    ];
    let models = repository_subclasses(&KINDS);
    let mut files: Vec<(&str, &str)> = models
        .iter()
        .map(|(p, t)| (p.as_str(), t.as_str()))
        .collect();
    files.extend([
        (
            "app/controllers/repositories_controller.rb",
            "class RepositoriesController < ApplicationController\n  def show\n    @repository = Repository.find(params[:id])\n    @repository.fetch_changesets\n    Visit.record!(@repository)\n  end\nend\n",
        ),
        (
            "app/models/repository.rb",
            "class Repository < ApplicationRecord\n  has_many :changesets\nend\n",
        ),
        ("app/models/changeset.rb", "class Changeset < ApplicationRecord\nend\n"),
        (
            "app/models/visit.rb",
            "class Visit < ApplicationRecord\n  def self.record!(repository)\n    transaction do\n      create!(repository_id: repository.id)\n      VisitMailer.noticed(repository).deliver_now\n    end\n  end\nend\n",
        ),
    ]);
    let app = App::new("overrides", &files);
    let prompt = app.prompt("repositories#show", &["changesets"]);
    let leads = sites(&prompt);
    assert_eq!(leads.matches("\n### ").count(), 2, "{leads}");
    assert!(
        leads.contains("The first is one of several classes' versions of one method"),
        "{leads}"
    );
    let listed: Vec<&str> = KINDS
        .iter()
        .copied()
        .filter(|kind| {
            leads.contains(&format!(
                "- `Repository::{kind}#fetch_changesets` (app/models/repository/{}.rb line 3): an HTTP call (line 4); a loop of writes or enqueues (line 5)",
                kind.to_lowercase()
            ))
        })
        .collect();
    assert_eq!(listed.len(), KINDS.len() - 1, "all but the lead: {leads}");
    assert!(
        leads.contains("`app/models/visit.rb` line 3"),
        "the other transaction is not pushed out: {leads}"
    );
}

#[test]
fn a_saves_callbacks_are_one_lead_so_the_destroys_transaction_is_shown_too() {
    // danbooru's expunge (`b27f98dc`): the post is updated, then destroyed.
    // Its three save callbacks run in one transaction; shown as three leads
    // they hid the destroy's, whose `after_destroy :delete_files` was fixed.
    let app = App::new(
        "one-save",
        &[
            (
                "app/controllers/posts_controller.rb",
                "class PostsController < ApplicationController\n  def expunge\n    @post = Post.find(params[:id])\n    @post.expunge!\n  end\nend\n",
            ),
            (
                "app/models/post.rb",
                "class Post < ApplicationRecord\n  after_save :queue_backup\n  after_save :notify_followers\n  after_save :sync_mirror\n  after_destroy :delete_files\n\n  def expunge!\n    update!(is_deleted: true)\n    destroy\n  end\n\n  def queue_backup\n    BackupJob.perform_later(id)\n  end\n\n  def notify_followers\n    PostMailer.changed(self).deliver_now\n  end\n\n  def sync_mirror\n    Faraday.post(\"https://mirror.example/posts\", id: id)\n  end\n\n  def delete_files\n    Net::SFTP.start(\"files.example\", \"post\") { |sftp| sftp.remove!(file_path) }\n  end\nend\n",
            ),
        ],
    );
    let prompt = app.prompt("posts#expunge", &["posts"]);
    let leads = sites(&prompt);
    assert!(
        leads.contains("The same save runs these callbacks too, inside the same transaction"),
        "{leads}"
    );
    let save_leads = (2..=4)
        .filter(|line| leads.contains(&format!("### `app/models/post.rb` line {line}\n")))
        .count();
    assert_eq!(save_leads, 1, "the save is one lead: {leads}");
    for callback in ["queue_backup", "notify_followers", "sync_mirror"] {
        assert!(
            leads.contains(&format!("→ Post after_save :{callback}."))
                || leads.contains(&format!(
                    "- `Post after_save :{callback}` (app/models/post.rb"
                )),
            "each save callback, as the lead or under it: {leads}"
        );
    }
    assert!(
        leads.contains("### `app/models/post.rb` line 5"),
        "the destroy's callback is a lead: {leads}"
    );
    for call in [
        "a mail delivery: `PostMailer.changed(self).deliver_now` (app/models/post.rb line 17)",
        "a job enqueue: `BackupJob.perform_later(id)` (app/models/post.rb line 13)",
        "an HTTP call: `Faraday.post(\"https://mirror.example/posts\", id: id)` (app/models/post.rb line 21)",
    ] {
        assert!(leads.contains(call), "every slow call of the save is listed: {leads}");
    }
}

#[test]
fn one_method_name_called_on_two_records_follows_both_classes() {
    // `order.finalize!` then `invoice.finalize!`: the same name, two
    // classes, two transactions. The second was once taken for the first.
    let app = App::new(
        "two-receivers",
        &[
            (
                "app/controllers/checkouts_controller.rb",
                "class CheckoutsController < ApplicationController\n  def complete\n    order = Order.find(params[:id])\n    invoice = order.invoice\n    order.finalize!\n    invoice.finalize!\n  end\nend\n",
            ),
            (
                "app/models/order.rb",
                "class Order < ApplicationRecord\n  def finalize!\n    transaction do\n      update!(state: 'complete')\n      OrderMailer.confirmation(self).deliver_now\n    end\n  end\nend\n",
            ),
            (
                "app/models/invoice.rb",
                "class Invoice < ApplicationRecord\n  def finalize!\n    with_lock do\n      Faraday.post(\"https://billing.example/invoices\", id: id)\n      update!(state: 'sent')\n    end\n  end\nend\n",
            ),
        ],
    );
    let prompt = app.prompt("checkouts#complete", &["orders"]);
    let leads = sites(&prompt);
    assert!(
        leads.contains("### `app/models/order.rb` line 3"),
        "{leads}"
    );
    assert!(
        leads.contains("### `app/models/invoice.rb` line 3"),
        "the invoice's own transaction: {leads}"
    );
}

#[test]
fn a_callback_of_a_record_saved_inside_a_lock_is_listed_under_the_lock_that_holds_its_call() {
    // spree's refunds (`d30512b6`): the controller builds a refund through
    // the payment's association and saves it inside `with_lock`; the
    // refund's `after_create` credits the gateway, so the order's row lock
    // is held across the call. The lock is the lead, holding that call.
    let app = App::new(
        "saved-inside",
        &[
            (
                "app/controllers/refunds_controller.rb",
                "class RefundsController < ApplicationController\n  def create\n    order = Order.find(params[:order_id])\n    order.with_lock do\n      payment = order.payments.find(params[:payment_id])\n      @resource = payment.refunds.build(amount: params[:amount])\n      @resource.save\n    end\n  end\nend\n",
            ),
            ("app/models/order.rb", "class Order < ApplicationRecord\n  has_many :payments\nend\n"),
            ("app/models/payment.rb", "class Payment < ApplicationRecord\n  has_many :refunds\nend\n"),
            (
                "app/models/refund.rb",
                "class Refund < ApplicationRecord\n  belongs_to :payment\n  after_create :perform!\n\n  def perform!\n    response = credit\n    update_columns(transaction_id: response)\n  end\n\n  def credit\n    Stripe::Refund.create(amount: amount, payment_intent: payment.intent_id)\n  end\nend\n",
            ),
        ],
    );
    let prompt = app.prompt("refunds#create", &["orders"]);
    let leads = sites(&prompt);
    assert_eq!(
        first_site(&prompt),
        "`app/controllers/refunds_controller.rb` line 4",
        "{leads}"
    );
    let lock = first_lead(&prompt);
    assert!(
        lock.contains("`Stripe::Refund.create(amount: amount, payment_intent: payment.intent_id)` (app/models/refund.rb line 11)"),
        "the lock holds the gateway call: {lock}"
    );
    assert!(
        lock.contains("Saves made inside it run these callbacks in its transaction")
            && lock.contains("- `Refund after_create :perform!` (app/models/refund.rb line 3): "),
        "the refund's callback is listed under the lock: {lock}"
    );
    assert!(
        !leads.contains("### `app/models/refund.rb` line 3"),
        "and is no lead of its own: {leads}"
    );
    assert_eq!(top_pattern(&prompt), "external-http-call-in-transaction");
}

#[test]
fn a_record_saved_by_a_callback_inside_a_lock_runs_its_own_callbacks_in_that_lock_too() {
    // The subscription saved inside the account's lock opens an invoice
    // from its `after_create`; the invoice's own `after_create` posts it
    // to the billing service. All of it runs before the lock is released.
    let app = App::new(
        "saved-inside-twice",
        &[
            (
                "app/controllers/subscriptions_controller.rb",
                "class SubscriptionsController < ApplicationController\n  def create\n    account = Account.find(params[:account_id])\n    account.with_lock do\n      @subscription = account.subscriptions.build(plan: params[:plan])\n      @subscription.save!\n    end\n  end\nend\n",
            ),
            ("app/models/account.rb", "class Account < ApplicationRecord\n  has_many :subscriptions\nend\n"),
            (
                "app/models/subscription.rb",
                "class Subscription < ApplicationRecord\n  after_create :open_invoice\n\n  def open_invoice\n    invoice = Invoice.new(subscription: self)\n    invoice.save!\n  end\nend\n",
            ),
            (
                "app/models/invoice.rb",
                "class Invoice < ApplicationRecord\n  after_create :send_to_billing\n\n  def send_to_billing\n    Faraday.post(\"https://billing.example/invoices\", id: id)\n  end\nend\n",
            ),
        ],
    );
    let prompt = app.prompt("subscriptions#create", &["accounts"]);
    let leads = sites(&prompt);
    assert_eq!(
        first_site(&prompt),
        "`app/controllers/subscriptions_controller.rb` line 4",
        "{leads}"
    );
    let lock = first_lead(&prompt);
    assert!(
        lock.contains("`Faraday.post(\"https://billing.example/invoices\", id: id)` (app/models/invoice.rb line 5)"),
        "the lock holds the invoice's call: {lock}"
    );
}

#[test]
fn a_slow_call_methods_below_the_transaction_names_the_line_of_the_transaction_that_reaches_it() {
    // publishing-api (round 17): the content store was written over HTTP
    // two calls below the command's transaction; the maintainers moved
    // the command's own `Adapters::ContentStore.call(...)` line, which
    // the list named nowhere. The mail reached through the same line is
    // not told twice.
    let app = App::new(
        "reached-from",
        &[
            (
                "app/controllers/documents_controller.rb",
                "class DocumentsController < ApplicationController\n  def publish\n    Document.transaction do\n      document = Document.find(params[:id])\n      document.update!(state: 'published')\n      Adapters::ContentStore.call(document)\n    end\n  end\nend\n",
            ),
            (
                "app/adapters/content_store.rb",
                "module Adapters\n  class ContentStore\n    def self.call(document)\n      Faraday.put(\"https://content-store.example/#{document.id}\", document.to_json)\n      PublishMailer.published(document).deliver_now\n    end\n  end\nend\n",
            ),
            ("app/models/document.rb", "class Document < ApplicationRecord\nend\n"),
        ],
    );
    let prompt = app.prompt("documents#publish", &["documents"]);
    let section = sites(&prompt);
    assert!(
        section.contains("(app/adapters/content_store.rb line 4), reached from `Adapters::ContentStore.call(document)` (app/controllers/documents_controller.rb line 6)"),
        "{section}"
    );
    assert_eq!(
        section.matches("reached from").count(),
        1,
        "said once for the calls one line leads to: {section}"
    );
}
