//! Which longtx database a branch or a PR belongs to.
//!
//! Job ids come from a database sequence. Were the database lost (the
//! embedded one deleted, a new server pointed at an empty one), they would
//! start again at 1, and the old `longtx/1` branch and its PR would be
//! taken for the new job 1. So each database gets a random installation id
//! when it is migrated: branches are `longtx/<installation>/<job>`, PR
//! bodies carry `<!-- longtx-job: <installation>/<job> -->`, and only names
//! with this database's id match its jobs.
//!
//! Jobs made before the installation id existed keep their `longtx/<job>`
//! branch and marker: the migration records the highest job id of that
//! time, and a bare name matches a job up to it and no later one. A new
//! database records 0, so no bare name ever matches its jobs.

use crate::github_events::BRANCH_PREFIX;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Installation {
    id: String,
    legacy_jobs_upto: i64,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("installation id {0:?} is not 8 lowercase letters or digits")]
pub struct BadInstallationId(pub String);

/// The marker's opening, shared by every form.
const MARKER_OPEN: &str = "<!-- longtx-job:";

impl Installation {
    pub fn new(id: &str, legacy_jobs_upto: i64) -> Result<Self, BadInstallationId> {
        let valid = id.len() == 8
            && id
                .bytes()
                .all(|b| b.is_ascii_digit() || b.is_ascii_lowercase());
        if !valid {
            return Err(BadInstallationId(id.to_owned()));
        }
        Ok(Installation {
            id: id.to_owned(),
            legacy_jobs_upto,
        })
    }

    pub fn id(&self) -> &str {
        &self.id
    }

    fn is_legacy(&self, job_id: i64) -> bool {
        job_id > 0 && job_id <= self.legacy_jobs_upto
    }

    /// `longtx/<installation>/<job>`, or `longtx/<job>` for a job made
    /// before installation ids.
    pub fn branch_of(&self, job_id: i64) -> String {
        if self.is_legacy(job_id) {
            format!("{BRANCH_PREFIX}{job_id}")
        } else {
            format!("{BRANCH_PREFIX}{}/{job_id}", self.id)
        }
    }

    /// The hidden marker a fix PR's body carries.
    pub fn body_marker(&self, job_id: i64) -> String {
        if self.is_legacy(job_id) {
            format!("{MARKER_OPEN} {job_id} -->")
        } else {
            format!("{MARKER_OPEN} {}/{job_id} -->", self.id)
        }
    }

    /// The job a name (`<installation>/<job>` or a legacy `<job>`) stands
    /// for in this database, if any.
    fn job_of_name(&self, name: &str) -> Option<i64> {
        let (installation, job) = match name.split_once('/') {
            Some((installation, job)) => (Some(installation), job),
            None => (None, name),
        };
        if job.is_empty() || !job.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        let job: i64 = job.parse().ok()?;
        match installation {
            Some(installation) if installation == self.id => Some(job),
            Some(_) => None,
            None => self.is_legacy(job).then_some(job),
        }
    }

    /// The job of this database a branch name belongs to.
    pub fn job_of_branch(&self, branch: &str) -> Option<i64> {
        self.job_of_name(branch.strip_prefix(BRANCH_PREFIX)?)
    }

    /// Every job of this database a PR body's markers name (there should
    /// be one); markers of other installations are not this database's.
    pub fn jobs_in_body(&self, body: &str) -> Vec<i64> {
        let mut ids = Vec::new();
        let mut rest = body;
        while let Some(start) = rest.find(MARKER_OPEN) {
            rest = &rest[start + MARKER_OPEN.len()..];
            let Some(end) = rest.find("-->") else { break };
            if let Some(id) = self.job_of_name(rest[..end].trim()) {
                ids.push(id);
            }
            rest = &rest[end..];
        }
        ids.sort_unstable();
        ids.dedup();
        ids
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_carry_the_installation_and_only_this_ones_match() {
        let here = Installation::new("k3x9q2ab", 0).unwrap();
        assert_eq!(here.branch_of(42), "longtx/k3x9q2ab/42");
        assert_eq!(here.body_marker(42), "<!-- longtx-job: k3x9q2ab/42 -->");
        assert_eq!(here.job_of_branch("longtx/k3x9q2ab/42"), Some(42));
        assert_eq!(here.jobs_in_body(&here.body_marker(42)), vec![42]);
        // The branch and PR of a lost database's job 42, old style or new.
        for other in [
            "longtx/42",
            "longtx/zz000000/42",
            "longtx/k3x9q2ab/4x",
            "longtx/k3x9q2ab/",
        ] {
            assert_eq!(here.job_of_branch(other), None, "{other}");
        }
        assert!(here
            .jobs_in_body("<!-- longtx-job: 42 --> <!-- longtx-job: zz000000/42 -->")
            .is_empty());
    }

    #[test]
    fn jobs_from_before_installation_ids_keep_their_bare_names() {
        let upgraded = Installation::new("k3x9q2ab", 17).unwrap();
        assert_eq!(upgraded.branch_of(17), "longtx/17");
        assert_eq!(upgraded.job_of_branch("longtx/17"), Some(17));
        assert_eq!(upgraded.jobs_in_body("<!-- longtx-job: 17 -->"), vec![17]);
        // A later job never answers to a bare name.
        assert_eq!(upgraded.branch_of(18), "longtx/k3x9q2ab/18");
        assert_eq!(upgraded.job_of_branch("longtx/18"), None);
        assert!(upgraded.jobs_in_body("<!-- longtx-job: 18 -->").is_empty());
    }

    #[test]
    fn an_id_is_eight_lowercase_letters_or_digits() {
        for bad in ["", "K3X9Q2AB", "k3x9q2a", "k3x9/2ab", "k3x9q2ab0"] {
            assert!(Installation::new(bad, 0).is_err(), "{bad}");
        }
    }
}
