//! Code location in modular monoliths, each layout a tree built in the
//! test: an engine controller inheriting its action from a parent in the
//! same engine, a packwerk pack's job, a worker whose `perform` is its base
//! class's, a path gem's rake task, and an enterprise module prepended
//! over an action. Every answer names the root the code lives in.

use longtx_prompt::locate;
use std::path::{Path, PathBuf};

/// A Rails tree in a folder of its own, removed when the test ends.
struct Tree(PathBuf);

impl Tree {
    fn new(name: &str, files: &[(&str, &str)]) -> Tree {
        let root = std::env::temp_dir().join(format!(
            "longtx-tmp-modular-{name}-{}-0",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&root);
        for (path, text) in files {
            let path = root.join(path);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        Tree(root)
    }

    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for Tree {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// `path:line` of the best candidate.
fn best(tree: &Tree, source: &str) -> (String, Option<usize>, String) {
    let found = locate(tree.path(), source);
    let first = found
        .first()
        .unwrap_or_else(|| panic!("nothing found for {source}"));
    (first.path.clone(), first.line, first.reason.clone())
}

#[test]
fn an_engine_controller_inherits_its_action_from_a_parent_in_the_same_engine() {
    // A commerce platform's layout: no root app/, engines core/ and backend/.
    let tree = Tree::new(
        "engine-inherited",
        &[
            ("core/lib/spree/core/engine.rb", "module Spree\n  module Core\n    class Engine < ::Rails::Engine\n    end\n  end\nend\n"),
            ("backend/lib/spree/backend/engine.rb", "module Spree\n  module Backend\n    class Engine < ::Rails::Engine\n    end\n  end\nend\n"),
            ("backend/app/controllers/spree/admin/base_controller.rb", "module Spree\n  module Admin\n    class BaseController < Spree::BaseController\n    end\n  end\nend\n"),
            ("core/app/controllers/spree/base_controller.rb", "module Spree\n  class BaseController < ApplicationController\n  end\nend\n"),
            ("backend/app/controllers/spree/admin/resource_controller.rb", "class Spree::Admin::ResourceController < Spree::Admin::BaseController\n  def new\n  end\n\n  def update\n    @object.with_lock { Webhook.deliver!(@object) }\n  end\nend\n"),
            ("backend/app/controllers/spree/admin/products_controller.rb", "module Spree\n  module Admin\n    class ProductsController < ResourceController\n      def show\n      end\n    end\n  end\nend\n"),
            // A class-level `update` in a callbacks module is no action.
            ("backend/lib/spree/backend/callbacks.rb", "module Spree\n  module Backend\n    module Callbacks\n      module ClassMethods\n        def update(*methods)\n        end\n      end\n    end\n  end\nend\n"),
        ],
    );
    let (path, line, why) = best(&tree, "spree/admin/products#update");
    assert_eq!(
        (path.as_str(), line),
        (
            "backend/app/controllers/spree/admin/resource_controller.rb",
            Some(5)
        )
    );
    assert!(
        why.contains("inherited from Spree::Admin::ResourceController"),
        "{why}"
    );
    assert!(why.contains("the engine `backend`"), "{why}");
    // An action nobody in the engines defines can only come from the host
    // application's ApplicationController, outside this repository.
    let (path, line, why) = best(&tree, "spree/admin/products#archive");
    assert_eq!(
        (path.as_str(), line),
        (
            "backend/app/controllers/spree/admin/products_controller.rb",
            None
        )
    );
    assert!(
        why.contains("ApplicationController, which is not in this repository"),
        "{why}"
    );
    assert!(
        locate(tree.path(), "spree/admin/orders#update").is_empty(),
        "no such controller"
    );
}

#[test]
fn a_packs_job_is_found_in_its_pack() {
    let tree = Tree::new(
        "pack-job",
        &[
            ("app/controllers/application_controller.rb", "class ApplicationController < ActionController::Base\nend\n"),
            ("packs/billing/package.yml", "enforce_dependencies: true\n"),
            ("packs/billing/app/jobs/billing/invoice_sync_job.rb", "module Billing\n  class InvoiceSyncJob < ApplicationJob\n    def perform(id)\n      Invoice.transaction { Stripe::Invoice.retrieve(id) }\n    end\n  end\nend\n"),
        ],
    );
    let (path, line, why) = best(&tree, "Billing::InvoiceSyncJob");
    assert_eq!(
        (path.as_str(), line),
        (
            "packs/billing/app/jobs/billing/invoice_sync_job.rb",
            Some(3)
        )
    );
    assert!(why.contains("the pack `packs/billing`"), "{why}");
}

#[test]
fn a_worker_inheriting_perform_points_at_the_base_and_names_its_own_hooks() {
    let tree = Tree::new(
        "inherited-perform",
        &[
            ("app/workers/notifier_base.rb", "class NotifierBase\n  include Sidekiq::Worker\n\n  def perform(id)\n    Notification.transaction do\n      deliver(recipients(id))\n    end\n  end\nend\n"),
            ("app/workers/liked.rb", "class Liked < NotifierBase\n  def recipients(id)\n    Like.find(id).post.author\n  end\n\n  def deliver(user)\n    Mailer.liked(user).deliver_now\n  end\nend\n"),
        ],
    );
    let (path, line, why) = best(&tree, "Liked");
    assert_eq!(
        (path.as_str(), line),
        ("app/workers/notifier_base.rb", Some(4))
    );
    assert!(why.contains("inherited from NotifierBase"), "{why}");
    assert!(
        why.contains("`recipients` (app/workers/liked.rb:2)")
            && why.contains("`deliver` (app/workers/liked.rb:6)"),
        "{why}"
    );
}

#[test]
fn a_path_gem_engines_rake_task_is_found_in_its_lib_tasks() {
    let tree = Tree::new(
        "path-gem-rake",
        &[
            ("Gemfile", "source 'https://rubygems.org'\ngem 'rails'\ngem 'reporting', path: 'engines/reporting'\n"),
            ("lib/tasks/app.rake", "namespace :app do\n  task seed: :environment do\n  end\nend\n"),
            ("engines/reporting/lib/tasks/reporting/monthly.rake", "namespace :reporting do\n  namespace :monthly do\n    task build: :environment do\n      Report.transaction { Report.build_all }\n    end\n  end\n  task 'exports:purge' do\n  end\nend\n"),
        ],
    );
    let (path, line, why) = best(&tree, "rake:reporting:monthly:build");
    assert_eq!(
        (path.as_str(), line),
        (
            "engines/reporting/lib/tasks/reporting/monthly.rake",
            Some(3)
        )
    );
    assert!(why.contains("the path gem `engines/reporting`"), "{why}");
    let (_, line, _) = best(&tree, "rake:reporting:exports:purge");
    assert_eq!(line, Some(7), "a string task name holds its own namespaces");
}

#[test]
fn a_prepended_enterprise_module_overrides_the_action() {
    let tree = Tree::new(
        "ee-prepend",
        &[
            ("app/controllers/application_controller.rb", "class ApplicationController < ActionController::Base\nend\n"),
            ("app/controllers/projects_controller.rb", "class ProjectsController < ApplicationController\n  prepend EE::ProjectsController\n\n  def update\n    @project.update!(project_params)\n  end\nend\n"),
            ("ee/app/controllers/ee/projects_controller.rb", "module EE\n  module ProjectsController\n    def update\n      Project.transaction { super; AuditEvent.push!(@project) }\n    end\n  end\nend\n"),
        ],
    );
    let (path, line, why) = best(&tree, "projects#update");
    assert_eq!(
        (path.as_str(), line),
        ("ee/app/controllers/ee/projects_controller.rb", Some(3))
    );
    assert!(why.contains("prepends"), "{why}");
    assert!(why.contains("the overlay `ee`"), "{why}");
}

/// Roots are folders of the checkout: a symlinked engine leading out of
/// it, an absolute path gem and a `..` path are never read.
#[test]
fn no_root_leads_outside_the_checkout() {
    let outside = Tree::new(
        "outside",
        &[
            (
                "lib/evil/engine.rb",
                "module Evil\n  class Engine < ::Rails::Engine\n  end\nend\n",
            ),
            (
                "app/controllers/secrets_controller.rb",
                "class SecretsController < ApplicationController\n  def show\n  end\nend\n",
            ),
        ],
    );
    let tree = Tree::new(
        "symlinked-engine",
        &[(
            "Gemfile",
            &format!(
                "gem 'evil', path: '{}'\ngem 'up', path: '../outside'\n",
                outside.path().display()
            ),
        )],
    );
    std::fs::create_dir_all(tree.path().join("engines")).unwrap();
    std::os::unix::fs::symlink(outside.path(), tree.path().join("engines/evil")).unwrap();
    assert!(locate(tree.path(), "secrets#show").is_empty());
}
