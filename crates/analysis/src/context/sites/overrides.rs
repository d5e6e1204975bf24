//! Sibling overrides: one call, several classes' versions of its method.
//!
//! `@repository.fetch_changesets` runs `Repository::Cvs#fetch_changesets`
//! for a CVS repository and `Repository::Subversion#fetch_changesets` for
//! a Subversion one. The walk reads every version, and each holds a
//! transaction of its own, so each is a site (and a scan finding). But the
//! record's class picks one at run time, and nothing in the code says
//! which: ranking the versions one after another would fill a prompt's
//! leads with one call's variants, the first "most likely" by the words in
//! it, and push the other sites out. A prompt lists them as one lead: the
//! best-scored version in full, the others under it in a line each.

use super::{ClassIndex, Site, SlowCall};
use serde::Serialize;

/// A site listed under a lead rather than shown as one: another class's
/// version of the lead's method, which the same call runs instead when the
/// record is of that class; another callback of the lead's save; or a
/// callback of a save made inside the lead.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Alternative {
    /// `Repository::Subversion#fetch_changesets`, or for a callback its
    /// label (`Post after_save :notify`).
    pub method: String,
    pub path: String,
    pub line: usize,
    /// Its slow calls: for a version, the first few (a line says what it
    /// holds); for a callback of the same save, all the site listed.
    pub slow: Vec<SlowCall>,
    /// Slow calls it holds beyond those.
    pub more_slow: usize,
    /// Its code inside the transaction, as [`Site::inside`]: evidence for
    /// the patterns as much as when it was a lead of its own.
    #[serde(skip)]
    pub inside: Vec<(String, u32)>,
    /// It was a lead of last resort, no evidence for choosing a pattern.
    #[serde(skip)]
    pub last_resort: bool,
}

impl Alternative {
    /// `site`, listed under another lead as `method` with its first
    /// `listed` slow calls.
    pub(super) fn of(site: Site, method: String, listed: usize) -> Alternative {
        let more_slow = site.slow.len().saturating_sub(listed);
        Alternative {
            method,
            path: site.path,
            line: site.line,
            slow: site.slow.into_iter().take(listed).collect(),
            more_slow: more_slow + site.more_slow,
            inside: site.inside,
            last_resort: site.last_resort,
        }
    }

    /// A callback site listed under the lead whose transaction it runs in,
    /// by its label and with every slow call: its slow work is that
    /// transaction's.
    pub(super) fn callback(site: Site) -> Alternative {
        let label = site.steps.last().cloned().unwrap_or_default();
        let listed = site.slow.len();
        Alternative::of(site, label, listed)
    }
}

/// Slow calls named per alternative; its own file shows the rest.
const SLOW_PER_ALTERNATIVE: usize = 3;
/// Alternatives listed per lead (`descendants` reads at most this many).
pub const MAX_ALTERNATIVES: usize = 12;

/// `sites` (likeliest first) with each site that is another class's
/// version of an earlier site's method folded into that site.
pub fn fold_overrides(index: &ClassIndex, sites: Vec<Site>) -> Vec<Site> {
    fold_by(&|class| index.model_ancestors(class), sites)
}

/// [`fold_overrides`], a model's ancestors told by `ancestors`.
fn fold_by(ancestors: &dyn Fn(&str) -> Vec<String>, sites: Vec<Site>) -> Vec<Site> {
    let mut kept: Vec<Site> = Vec::new();
    for site in sites {
        let lead = kept
            .iter_mut()
            .find_map(|k| sibling_step(ancestors, k, &site).map(|step| (k, step)));
        match lead {
            Some((lead, method)) if lead.alternatives.len() < MAX_ALTERNATIVES => {
                lead.alternatives
                    .push(Alternative::of(site, method, SLOW_PER_ALTERNATIVE));
            }
            // A twelfth sibling is dropped from the prompt: its lead says
            // the class decides, and the agent reads the rest itself.
            Some(_) => {}
            None => kept.push(site),
        }
    }
    kept
}

/// The step of `other`'s route that names its version of `lead`'s method,
/// when the two routes are the same call but for the class whose method
/// runs there (`Repository::Cvs#fetch_changesets` against
/// `Repository::Bazaar#fetch_changesets`), and those classes are models
/// of one hierarchy (single-table inheritance: one table, the row's `type`
/// choosing the class).
fn sibling_step(
    ancestors: &dyn Fn(&str) -> Vec<String>,
    lead: &Site,
    other: &Site,
) -> Option<String> {
    let lead_steps = without_dispatch_hops(ancestors, &lead.steps);
    let other_steps = without_dispatch_hops(ancestors, &other.steps);
    if lead_steps.len() != other_steps.len() || (lead.path == other.path && lead.line == other.line)
    {
        return None;
    }
    let mut differing = lead_steps.iter().zip(&other_steps).filter(|(a, b)| a != b);
    let (a, b) = differing.next()?;
    if differing.next().is_some() {
        return None;
    }
    let (class_a, method_a) = method_step(a)?;
    let (class_b, method_b) = method_step(b)?;
    (method_a == method_b && one_hierarchy(ancestors, class_a, class_b)).then(|| (*b).clone())
}

/// `steps` without a step whose method the next step runs in a class of
/// its hierarchy: `Repository#fetch_changesets → Repository::Cvs#fetch_changesets`
/// is one call, the parent's method read on the way to the subclass's
/// (the walk may reach one version through it and another directly).
fn without_dispatch_hops<'s>(
    ancestors: &dyn Fn(&str) -> Vec<String>,
    steps: &'s [String],
) -> Vec<&'s String> {
    steps
        .iter()
        .enumerate()
        .filter(|(i, step)| {
            let hop = steps.get(i + 1).and_then(|next| {
                let (class, method) = method_step(step)?;
                let (next_class, next_method) = method_step(next)?;
                Some(method == next_method && one_hierarchy(ancestors, class, next_class))
            });
            !hop.unwrap_or(false)
        })
        .map(|(_, step)| step)
        .collect()
}

/// `Repository::Cvs#fetch_changesets` as (class, method); `None` for a
/// step that is no instance method (`Order after_save :notify`).
fn method_step(step: &str) -> Option<(&str, &str)> {
    let (class, method) = step.rsplit_once('#')?;
    let plain = |s: &str| !s.is_empty() && !s.contains(char::is_whitespace);
    (plain(class) && plain(method)).then_some((class, method))
}

/// Whether two model classes share an ancestor below Active Record's base
/// (or one descends from the other).
fn one_hierarchy(ancestors: &dyn Fn(&str) -> Vec<String>, a: &str, b: &str) -> bool {
    let line = |class: &str| {
        let mut all = ancestors(class);
        all.push(class.to_owned());
        all
    };
    let of_a = line(a);
    a != b && line(b).iter().any(|c| of_a.contains(c))
}

#[cfg(test)]
mod tests {
    use super::*;

    use super::super::test_site as site;

    #[test]
    fn only_one_hierarchys_versions_of_a_method_fold_into_one_lead() {
        // Git and Cvs are `Repository`s; Order and Invoice stand alone.
        let ancestors = |class: &str| -> Vec<String> {
            match class {
                "Repository::Git" | "Repository::Cvs" | "Repository::Svn" => {
                    vec!["Repository".to_owned()]
                }
                _ => Vec::new(),
            }
        };
        let entry = "ReposController#show";
        let sites = vec![
            site(
                "app/models/repository/git.rb",
                &[entry, "Repository::Git#fetch"],
            ),
            site("app/models/order.rb", &[entry, "Order#fetch"]),
            // Reached through the parent's own method: the same call.
            site(
                "app/models/repository/svn.rb",
                &[entry, "Repository#fetch", "Repository::Svn#fetch"],
            ),
            site(
                "app/models/repository/cvs.rb",
                &[entry, "Repository::Cvs#fetch"],
            ),
            site("app/models/invoice.rb", &[entry, "Invoice#fetch"]),
            // Another method of the same class is a site of its own.
            site(
                "app/models/repository/cvs.rb",
                &[entry, "Repository::Cvs#prune"],
            ),
            // So is the same version reached by another route.
            site(
                "app/models/repository/cvs.rb",
                &[entry, "Audit#run", "Repository::Cvs#fetch"],
            ),
        ];
        let folded = fold_by(&ancestors, sites);
        let leads: Vec<(&str, Vec<&str>)> = folded
            .iter()
            .map(|s| {
                let alternatives = s.alternatives.iter().map(|a| a.method.as_str()).collect();
                (s.steps.last().unwrap().as_str(), alternatives)
            })
            .collect();
        assert_eq!(
            leads,
            [
                (
                    "Repository::Git#fetch",
                    vec!["Repository::Svn#fetch", "Repository::Cvs#fetch"]
                ),
                ("Order#fetch", vec![]),
                ("Invoice#fetch", vec![]),
                ("Repository::Cvs#prune", vec![]),
                ("Repository::Cvs#fetch", vec![]),
            ]
        );
    }
}
