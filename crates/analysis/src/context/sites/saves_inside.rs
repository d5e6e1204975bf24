//! A callback of a save made inside another site: that site's lead.
//!
//! Active Record opens no transaction of its own for a save made inside
//! one already open: the save's callbacks run in the outer transaction, and
//! the outer lock is held until that transaction commits (even an
//! `after_commit` waits for it). spree's refunds controller builds and
//! saves a refund inside `with_order_lock`; the refund's `after_create`
//! credits the payment gateway, so the order's row lock is held across the
//! gateway call, and the real fix moved the save out of the lock. The walk
//! reads such a callback inside the outer site, whose slow work it then
//! is; shown as a lead of its own too, the callback outranked the lock
//! that holds it. A prompt shows the outer site as the lead, at the better
//! of the two ranks, and lists the callback under it with every slow call.

use super::{Alternative, Site, MAX_LISTED_CALLBACKS};

/// `sites` (likeliest first) with each callback site whose save was made
/// inside another site folded into that site, which takes the better rank.
pub fn fold_saves_inside(sites: Vec<Site>) -> Vec<Site> {
    let outer_of: Vec<Option<usize>> = sites
        .iter()
        .map(|site| {
            let within = site.within.as_ref()?;
            sites.iter().position(|outer| {
                outer.within.is_none() && outer.path == within.path && outer.line == within.line
            })
        })
        .collect();
    // Each lead at the first rank of itself or of a callback folded in.
    let mut order: Vec<usize> = Vec::new();
    for (at, outer) in outer_of.iter().enumerate() {
        let lead = outer.unwrap_or(at);
        if !order.contains(&lead) {
            order.push(lead);
        }
    }
    let mut slots: Vec<Option<Site>> = sites.into_iter().map(Some).collect();
    for (at, outer) in outer_of.iter().enumerate() {
        let Some(outer) = *outer else { continue };
        let Some(callback) = slots[at].take() else {
            continue;
        };
        let Some(lead) = slots[outer].as_mut() else {
            continue;
        };
        lead.score = lead.score.max(callback.score);
        if lead.saves_inside.len() < MAX_LISTED_CALLBACKS {
            lead.saves_inside.push(Alternative::callback(callback));
        }
        // Past the cap a callback is left out of the prompt (the scan
        // still reports it): its slow work is the lead's own already.
    }
    order
        .into_iter()
        .filter_map(|at| slots[at].take())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::context::sites::SiteLine;

    fn site(path: &str, line: usize, steps: &[&str], within: Option<(&str, usize)>) -> Site {
        Site {
            line,
            within: within.map(|(path, line)| SiteLine {
                path: path.into(),
                line,
            }),
            ..super::super::test_site(path, steps)
        }
    }

    #[test]
    fn a_callback_of_a_save_made_inside_a_lock_is_listed_under_the_lock_at_its_rank() {
        let entry = "RefundsController#create";
        let controller = "app/controllers/refunds_controller.rb";
        let sites = vec![
            site(
                "app/models/refund.rb",
                30,
                &[entry, "Refund after_create :perform!"],
                Some((controller, 11)),
            ),
            site(
                "app/models/order.rb",
                223,
                &[entry, "Order before_update :fix"],
                None,
            ),
            site(controller, 11, &[entry], None),
            // A save made elsewhere stays a lead of its own.
            site(
                "app/models/payment.rb",
                8,
                &[entry, "Payment after_save :notify"],
                Some(("app/controllers/payments_controller.rb", 4)),
            ),
        ];
        let folded = fold_saves_inside(sites);
        let leads: Vec<(&str, usize)> = folded.iter().map(|s| (s.path.as_str(), s.line)).collect();
        assert_eq!(
            leads,
            [
                (controller, 11),
                ("app/models/order.rb", 223),
                ("app/models/payment.rb", 8)
            ]
        );
        assert_eq!(folded[0].saves_inside.len(), 1);
        assert_eq!(
            folded[0].saves_inside[0].method,
            "Refund after_create :perform!"
        );
    }
}
