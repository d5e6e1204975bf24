//! Callbacks of one save: one transaction, one lead.
//!
//! Active Record runs a save's validations and `before_*`/`after_*`
//! callbacks (and a destroy's) inside the transaction the save opens. Each
//! callback with slow work is a site, and the scan reports each; but shown
//! as leads of their own, three callbacks of one model's save fill a
//! prompt's leads with one transaction, and every other transaction the job
//! holds is pushed out (danbooru's expunge: three of the post's save
//! callbacks shown, its `after_destroy :delete_files` not). A prompt shows
//! the best-scored callback in full and the others of that save under it,
//! each with every slow call found in it, but no excerpt.

use super::super::callbacks::IN_TRANSACTION;
use super::{Alternative, Site, MAX_LISTED_CALLBACKS};

/// `sites` (likeliest first) with each callback site folded into the first
/// site that is a callback of the same save of the same model, reached by
/// the same route.
pub fn fold_one_save(sites: Vec<Site>) -> Vec<Site> {
    let mut kept: Vec<Site> = Vec::new();
    for site in sites {
        let key = save_of(&site);
        let lead = key
            .as_ref()
            .and_then(|key| kept.iter_mut().find(|k| save_of(k).as_ref() == Some(key)));
        match lead {
            Some(lead) if lead.same_save.len() < MAX_LISTED_CALLBACKS => {
                lead.same_save.push(Alternative::callback(site));
            }
            // Past the cap a callback is left out of the prompt (the scan
            // still reports it); twelve listed already say the save is busy.
            Some(_) => {}
            None => kept.push(site),
        }
    }
    kept
}

/// (the route to the save, the model, save or destroy) of a callback site:
/// `Post after_save :create_version` after `PostsController#update`.
fn save_of(site: &Site) -> Option<(&[String], &str, bool)> {
    let (label, route) = site.steps.split_last()?;
    let mut words = label.split_whitespace();
    let (class, kind) = (words.next()?, words.next()?);
    // A save's (create or update) or a destroy's; `after_touch` runs in
    // whichever save touched it, so it is left a lead of its own.
    let destroys = kind.contains("destroy");
    let folded = IN_TRANSACTION.contains(&kind) && kind != "after_touch";
    folded.then_some((route, class, destroys))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn site(line: usize, steps: &[&str]) -> Site {
        Site {
            line,
            ..super::super::test_site("app/models/post.rb", steps)
        }
    }

    #[test]
    fn a_saves_callbacks_are_one_lead_and_a_destroys_another() {
        let entry = "PostsController#expunge";
        let sites = vec![
            site(23, &[entry, "Post before_save :update_tag_post_counts"]),
            site(27, &[entry, "Post after_save :queue_backup"]),
            site(32, &[entry, "Post after_destroy :remove_iqdb_async"]),
            site(30, &[entry, "Post validate :tags_are_valid"]),
            site(33, &[entry, "Post after_destroy :delete_files"]),
            // Another model's save is another transaction.
            site(8, &[entry, "Tag after_save :update_posts"]),
            // So is a state machine's transition, and a transaction block.
            site(40, &[entry, "Post state_machine after_transition :notify"]),
            site(50, &[entry, "Post#expunge!"]),
        ];
        let folded = fold_one_save(sites);
        let leads: Vec<(usize, Vec<usize>)> = folded
            .iter()
            .map(|s| (s.line, s.same_save.iter().map(|a| a.line).collect()))
            .collect();
        assert_eq!(
            leads,
            [
                (23, vec![27, 30]),
                (32, vec![33]),
                (8, vec![]),
                (40, vec![]),
                (50, vec![]),
            ]
        );
        assert_eq!(
            folded[1].same_save[0].method,
            "Post after_destroy :delete_files"
        );
    }
}
