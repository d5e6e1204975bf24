//! Which patterns fit a job best: by how often their signals appear in the
//! code the job most likely runs, and in the alert itself.

use crate::pattern::Pattern;

/// What a job offers for matching signals.
#[derive(Debug, Clone, Default)]
pub struct Evidence {
    /// The excerpted methods: the strongest evidence.
    pub excerpts: Vec<String>,
    /// Whole candidate files: weaker (the method may not use them).
    pub files: Vec<String>,
    /// query_source, tables and other alert text.
    pub alert: String,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Ranked {
    /// Index into the slice given to [`rank`].
    pub index: usize,
    pub score: u32,
    pub matched: Vec<String>,
}

const EXCERPT_WEIGHT: u32 = 3;
const ALERT_WEIGHT: u32 = 2;
const FILE_WEIGHT: u32 = 1;
/// Ten `Net::HTTP` calls are not ten times the evidence of one.
const MAX_HITS_PER_SIGNAL: u32 = 3;

/// Every pattern with its score, best first; ties keep catalogue order.
pub fn rank(patterns: &[Pattern], evidence: &Evidence) -> Vec<Ranked> {
    let excerpts: Vec<String> = evidence.excerpts.iter().map(|e| e.to_lowercase()).collect();
    let files: Vec<String> = evidence.files.iter().map(|e| e.to_lowercase()).collect();
    let alert = evidence.alert.to_lowercase();
    let mut ranked: Vec<Ranked> = patterns
        .iter()
        .enumerate()
        .map(|(index, pattern)| {
            let mut score = 0;
            let mut matched = Vec::new();
            for signal in &pattern.front.signals {
                let needle = signal.trim().to_lowercase();
                if needle.is_empty() {
                    continue;
                }
                let hits = |texts: &[String]| {
                    texts
                        .iter()
                        .map(|t| t.matches(&needle).count() as u32)
                        .sum::<u32>()
                        .min(MAX_HITS_PER_SIGNAL)
                };
                let signal_score = hits(&excerpts) * EXCERPT_WEIGHT
                    + hits(&files) * FILE_WEIGHT
                    + alert
                        .matches(&needle)
                        .count()
                        .min(MAX_HITS_PER_SIGNAL as usize) as u32
                        * ALERT_WEIGHT;
                if signal_score > 0 {
                    matched.push(signal.clone());
                    score += signal_score;
                }
            }
            Ranked {
                index,
                score,
                matched,
            }
        })
        .collect();
    ranked.sort_by(|a, b| b.score.cmp(&a.score).then(a.index.cmp(&b.index)));
    ranked
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pattern::parse_pattern;
    use std::path::Path;

    fn pattern(id: &str, signals: &str) -> Pattern {
        let text =
            format!("---\nid: {id}\ntitle: {id}\napplies_to: any\nsignals: {signals}\n---\nbody\n");
        parse_pattern(Path::new("x.md"), &text).unwrap()
    }

    #[test]
    fn code_in_the_method_outweighs_the_rest_of_the_file() {
        let patterns = vec![
            pattern("http", "[Net::HTTP, Faraday]"),
            pattern("mail", "[deliver_now]"),
            pattern("batch", "[update_all, find_each]"),
        ];
        let evidence = Evidence {
            excerpts: vec!["User.transaction do\n  Faraday.post(url)\nend".into()],
            files: vec!["def other; UserMailer.welcome.deliver_now; end".into()],
            alert: "admin/users#update users".into(),
        };
        let ranked = rank(&patterns, &evidence);
        assert_eq!(ranked[0].index, 0);
        assert_eq!(ranked[0].matched, ["Faraday"]);
        assert_eq!(ranked[1].index, 1);
        assert_eq!(ranked[2].score, 0);
    }

    #[test]
    fn matching_ignores_case_and_caps_repeats() {
        let patterns = vec![pattern("llm", "[openai]"), pattern("lock", "[with_lock]")];
        let evidence = Evidence {
            excerpts: vec![
                "OpenAI::Client.new; openai; OPENAI; openai; openai".into(),
                "with_lock".into(),
            ],
            ..Evidence::default()
        };
        let ranked = rank(&patterns, &evidence);
        assert_eq!(ranked[0].score, MAX_HITS_PER_SIGNAL * EXCERPT_WEIGHT);
        assert_eq!(ranked[1].score, EXCERPT_WEIGHT);
    }
}
