//! Which patterns fit a job best: by how often their signals appear in the
//! code the job most likely runs, and in the alert itself.

use crate::pattern::Pattern;

/// What a job offers for matching signals.
#[derive(Debug, Clone, Default)]
pub struct Evidence {
    /// The code that runs inside the held transaction (the block, the
    /// callbacks of its saves, the methods it calls): the strongest.
    pub inside: Vec<String>,
    /// Shapes of that code longtx recognised (`loop-of-writes`,
    /// `network-call`, `llm-call`, `side-effect`), matched against the
    /// patterns' `shapes`.
    pub shapes: Vec<String>,
    /// The excerpted methods.
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

const INSIDE_WEIGHT: u32 = 5;
const EXCERPT_WEIGHT: u32 = 3;
/// A recognised shape weighs as much as a unique signal inside.
const SHAPE_SCORE: u32 = INSIDE_WEIGHT * UNIQUE_SIGNAL;
/// A call to another service inside the transaction weighs twice: that
/// service's latency, with no bound of the database's own, sets the
/// transaction's length, so it is the fix to make first when a mail or a
/// batch sits beside it.
const GRAVE_SHAPES: [&str; 2] = ["network-call", "llm-call"];
const ALERT_WEIGHT: u32 = 2;
const FILE_WEIGHT: u32 = 1;
/// Ten `Net::HTTP` calls are not ten times the evidence of one.
const MAX_HITS_PER_SIGNAL: u32 = 3;
/// A signal that only one pattern lists weighs this much; one that `k`
/// patterns share weighs `UNIQUE_SIGNAL / k` (at least 1), an IDF over the
/// catalogue: `transaction do`, listed by most patterns, tells them apart
/// little. A weak signal weighs [`WEAK_SIGNAL`] whatever its spread.
pub const UNIQUE_SIGNAL: u32 = 6;
pub const WEAK_SIGNAL: u32 = 1;

/// How much one hit of each pattern's signals weighs, per pattern.
fn signal_weights(patterns: &[Pattern]) -> Vec<Vec<(String, String, u32)>> {
    let mut spread: std::collections::HashMap<String, u32> = Default::default();
    for pattern in patterns {
        let mut own: Vec<String> = pattern
            .front
            .signals
            .iter()
            .chain(&pattern.front.weak_signals)
            .map(|s| s.trim().to_lowercase())
            .filter(|s| !s.is_empty())
            .collect();
        own.sort();
        own.dedup();
        for signal in own {
            *spread.entry(signal).or_default() += 1;
        }
    }
    patterns
        .iter()
        .map(|pattern| {
            let strong = pattern.front.signals.iter().map(|s| (s, false));
            let weak = pattern.front.weak_signals.iter().map(|s| (s, true));
            strong
                .chain(weak)
                .filter_map(|(signal, is_weak)| {
                    let needle = signal.trim().to_lowercase();
                    if needle.is_empty() {
                        return None;
                    }
                    let weight = if is_weak {
                        WEAK_SIGNAL
                    } else {
                        (UNIQUE_SIGNAL / spread[&needle].max(1)).max(1)
                    };
                    Some((signal.clone(), needle, weight))
                })
                .collect()
        })
        .collect()
}

/// How often `needle` occurs in `text` as a word: a signal that begins or
/// ends with a letter or digit must not run on into an identifier, so
/// `SSE` is not found in `session` nor `perform` in `perform_later`.
fn occurrences(text: &str, needle: &str) -> u32 {
    let is_word = |c: char| c.is_alphanumeric() || c == '_';
    let starts_word = needle.chars().next().is_some_and(is_word);
    let ends_word = needle.chars().last().is_some_and(is_word);
    text.match_indices(needle)
        .filter(|(at, _)| {
            let before = text[..*at].chars().next_back();
            let after = text[at + needle.len()..].chars().next();
            let runs_on = starts_word && before.is_some_and(is_word)
                || ends_word && after.is_some_and(is_word);
            !runs_on
        })
        .count() as u32
}

/// Every pattern with its score, best first; ties keep catalogue order.
pub fn rank(patterns: &[Pattern], evidence: &Evidence) -> Vec<Ranked> {
    let inside: Vec<String> = evidence.inside.iter().map(|e| e.to_lowercase()).collect();
    let excerpts: Vec<String> = evidence.excerpts.iter().map(|e| e.to_lowercase()).collect();
    let files: Vec<String> = evidence.files.iter().map(|e| e.to_lowercase()).collect();
    let alert = evidence.alert.to_lowercase();
    let hits = |texts: &[String], needle: &str| {
        texts
            .iter()
            .map(|t| occurrences(t, needle))
            .sum::<u32>()
            .min(MAX_HITS_PER_SIGNAL)
    };
    let mut ranked: Vec<Ranked> = signal_weights(patterns)
        .into_iter()
        .enumerate()
        .map(|(index, signals)| {
            let mut score = 0;
            let mut matched = Vec::new();
            for (signal, needle, weight) in signals {
                let place_score = hits(&inside, &needle) * INSIDE_WEIGHT
                    + hits(&excerpts, &needle) * EXCERPT_WEIGHT
                    + hits(&files, &needle) * FILE_WEIGHT
                    + hits(std::slice::from_ref(&alert), &needle) * ALERT_WEIGHT;
                if place_score > 0 {
                    matched.push(signal);
                    score += place_score * weight;
                }
            }
            for shape in &patterns[index].front.shapes {
                if evidence.shapes.contains(shape) {
                    matched.push(format!("shape: {shape}"));
                    score += if GRAVE_SHAPES.contains(&shape.as_str()) {
                        2 * SHAPE_SCORE
                    } else {
                        SHAPE_SCORE
                    };
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
        weak_pattern(id, signals, "[]")
    }

    fn weak_pattern(id: &str, signals: &str, weak: &str) -> Pattern {
        let text = format!(
            "---\nid: {id}\ntitle: {id}\napplies_to: any\nsignals: {signals}\nweak_signals: {weak}\n---\nbody\n"
        );
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
            ..Evidence::default()
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
        assert_eq!(
            ranked[0].score,
            MAX_HITS_PER_SIGNAL * EXCERPT_WEIGHT * UNIQUE_SIGNAL
        );
        assert_eq!(ranked[1].score, EXCERPT_WEIGHT * UNIQUE_SIGNAL);
    }

    #[test]
    fn signals_match_whole_words_only() {
        assert_eq!(occurrences("session; assessment", "sse"), 0);
        assert_eq!(occurrences("x.sse.write; SSE", "sse"), 1);
        assert_eq!(occurrences("perform_later; def perform(id)", "perform"), 1);
        assert_eq!(occurrences("net::http.post(", "net::http"), 1);
        assert_eq!(occurrences("record.with_lock do", "lock"), 0);
        assert_eq!(occurrences("foo.lock(true)", "lock("), 1);
    }

    #[test]
    fn shared_and_weak_signals_weigh_little() {
        // `transaction do` is in every pattern; `perform` is in every job.
        let patterns = vec![
            weak_pattern("lock", "[with_lock, transaction do]", "[perform]"),
            pattern("http", "[Faraday, transaction do]"),
            pattern("batch", "[update_all, transaction do]"),
        ];
        let evidence = Evidence {
            excerpts: vec![
                "def perform\n  Order.transaction do\n    Faraday.post(url)\n  end\nend".into(),
            ],
            ..Evidence::default()
        };
        let ranked = rank(&patterns, &evidence);
        assert_eq!(
            ranked[0].index, 1,
            "the HTTP call decides, not `perform`: {ranked:?}"
        );
        let shared = EXCERPT_WEIGHT * (UNIQUE_SIGNAL / 3);
        assert_eq!(ranked[0].score, EXCERPT_WEIGHT * UNIQUE_SIGNAL + shared);
        assert_eq!(ranked[1].index, 0);
        assert_eq!(ranked[1].score, shared + EXCERPT_WEIGHT * WEAK_SIGNAL);
    }

    #[test]
    fn code_inside_the_transaction_and_its_shapes_decide() {
        let mut batch = pattern("batch", "[update_all]");
        batch.front.shapes = vec!["loop-of-writes".into()];
        let patterns = vec![pattern("lock", "[StaleObjectError]"), batch];
        // A rescue outside the transaction against a loop inside it.
        let evidence = Evidence {
            inside: vec!["Order.transaction do\n  items.each { |i| i.save! }\nend".into()],
            shapes: vec!["loop-of-writes".into()],
            excerpts: vec!["rescue ActiveRecord::StaleObjectError".into()],
            ..Evidence::default()
        };
        let ranked = rank(&patterns, &evidence);
        assert_eq!(ranked[0].index, 1, "{ranked:?}");
        assert_eq!(ranked[0].matched, ["shape: loop-of-writes"]);
        assert_eq!(ranked[0].score, SHAPE_SCORE);
        assert_eq!(ranked[1].score, EXCERPT_WEIGHT * UNIQUE_SIGNAL);
    }

    #[test]
    fn a_network_call_inside_outweighs_a_mail_beside_it() {
        let mut http = pattern("http", "[Faraday]");
        http.front.shapes = vec!["network-call".into()];
        let mut mail = pattern("mail", "[deliver_later]");
        mail.front.shapes = vec!["side-effect".into()];
        let patterns = vec![mail, http];
        // Both inside the held transaction, the mail nearer its boundary.
        let evidence = Evidence {
            inside: vec!["OrderMailer.placed(order).deliver_later".into()],
            excerpts: vec!["Faraday.post(url, body)".into()],
            shapes: vec!["side-effect".into(), "network-call".into()],
            ..Evidence::default()
        };
        let ranked = rank(&patterns, &evidence);
        assert_eq!(ranked[0].index, 1, "{ranked:?}");
        assert_eq!(
            ranked[0].score,
            EXCERPT_WEIGHT * UNIQUE_SIGNAL + 2 * SHAPE_SCORE
        );
        assert_eq!(ranked[1].score, INSIDE_WEIGHT * UNIQUE_SIGNAL + SHAPE_SCORE);
    }
}
