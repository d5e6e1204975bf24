//! The locator corpus (`corpus/locate/*.yaml`) stays well-formed: what the
//! bench measures is only as good as its labels. The checkouts are not
//! here (CI has no network); `locate-bench` runs against them by hand.

use longtx_prompt::corpus::CorpusFile;
use std::path::Path;

fn well_formed_expect(expect: &str) -> bool {
    if expect == "none" {
        return true;
    }
    let (path, line) = expect.rsplit_once(':').unwrap_or((expect, "1"));
    (path.ends_with(".rb") || path.ends_with(".rake")) && line.parse::<usize>().is_ok_and(|l| l > 0)
}

/// Reads every corpus file of `dir` (under the repository root), checking
/// what each file must hold whatever its set: named after its repository,
/// a full commit, well-formed `expect`s and pattern ids the catalogue has.
fn read_corpus(dir: &str) -> Vec<CorpusFile> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let catalogue = longtx_catalog::Catalogue::load(&root.join("patterns")).unwrap();
    let mut files: Vec<_> = std::fs::read_dir(root.join(dir))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    files.sort();
    let mut read = Vec::new();
    for file in &files {
        let corpus: CorpusFile = serde_yaml::from_str(&std::fs::read_to_string(file).unwrap())
            .unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        let name = file.file_stem().unwrap().to_string_lossy();
        assert_eq!(
            name,
            corpus.repository.replace('/', "+"),
            "file named after its repository"
        );
        assert!(corpus.commit.len() == 40 && corpus.commit.bytes().all(|b| b.is_ascii_hexdigit()));
        for case in &corpus.cases {
            assert!(!case.query_source.is_empty());
            assert!(
                well_formed_expect(&case.expect),
                "{}: {}",
                name,
                case.expect
            );
        }
        for case in &corpus.patterns {
            assert!(
                well_formed_expect(&case.expect),
                "{}: {}",
                case.query_source,
                case.expect
            );
            assert!(
                catalogue
                    .patterns
                    .iter()
                    .any(|p| p.id() == case.expect_pattern),
                "{} names no pattern of the catalogue",
                case.expect_pattern
            );
        }
        read.push(corpus);
    }
    read
}

#[test]
fn the_corpus_has_enough_labelled_cases_from_enough_applications() {
    let files = read_corpus("corpus/locate");
    let (mut cases, mut nones, mut ranked) = (0, 0, 0);
    let mut forms = std::collections::BTreeSet::new();
    for corpus in &files {
        for case in &corpus.cases {
            forms.insert(case.form.clone());
            nones += (case.expect == "none") as usize;
        }
        cases += corpus.cases.len();
        ranked += corpus.patterns.len();
    }
    assert!(files.len() >= 3, "at least three applications");
    assert!(cases >= 80, "at least 80 cases, not {cases}");
    assert!(
        nones >= 10,
        "sources that do not exist are covered: {nones}"
    );
    assert!(ranked >= 10, "a ranking subset: {ranked}");
    for form in [
        "controller-namespaced",
        "controller-default-tag",
        "controller-class-form",
        "controller-inherited",
        "job-usual",
        "rake-namespaced",
        "missing",
    ] {
        assert!(forms.contains(form), "no {form} case: {forms:?}");
    }
}

/// The held-out ranking set was labelled blind (the labeller never saw what
/// the ranking answers) on applications the corpus does not hold; each
/// file's header says whether its round later served to develop the rules
/// or was measured once. It stays apart from the corpus so that its figure
/// keeps meaning "on code the signals were not tuned on".
#[test]
fn the_held_out_ranking_set_shares_no_application_with_the_corpus() {
    let tuned: Vec<String> = read_corpus("corpus/locate")
        .into_iter()
        .map(|c| c.repository)
        .collect();
    let held_out = read_corpus("corpus/heldout");
    assert!(held_out.len() >= 2);
    assert!(held_out.iter().map(|c| c.patterns.len()).sum::<usize>() >= 10);
    for corpus in &held_out {
        assert!(
            !tuned.contains(&corpus.repository),
            "{} is in both sets",
            corpus.repository
        );
    }
}

/// The modular set: engines, packs and overlays from applications neither
/// other set holds, enough of each layout to mean something.
#[test]
fn the_modular_corpus_covers_engines_from_three_new_applications() {
    let modular = read_corpus("corpus/modular");
    let elsewhere: Vec<String> = read_corpus("corpus/locate")
        .into_iter()
        .chain(read_corpus("corpus/heldout"))
        .map(|c| c.repository)
        .collect();
    assert!(modular.len() >= 3, "at least three applications");
    let cases: Vec<_> = modular.iter().flat_map(|c| &c.cases).collect();
    assert!(cases.len() >= 60, "at least 60 cases, not {}", cases.len());
    for corpus in &modular {
        assert!(
            !elsewhere.contains(&corpus.repository),
            "{} is in another set",
            corpus.repository
        );
    }
    let forms: std::collections::BTreeSet<&str> = cases.iter().map(|c| c.form.as_str()).collect();
    for form in [
        "engine-controller",
        "engine-controller-inherited",
        "engine-extension-controller",
        "engine-rake",
        "missing",
    ] {
        assert!(forms.contains(form), "no {form} case: {forms:?}");
    }
}

/// The real fixes stay well-formed: full commits, sites as `path:line`,
/// and patterns the catalogue has (or `none`).
#[test]
fn the_real_fixes_are_well_formed() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let catalogue = longtx_catalog::Catalogue::load(&root.join("patterns")).unwrap();
    let mut cases = 0;
    for entry in std::fs::read_dir(root.join("corpus/real-fixes"))
        .unwrap()
        .flatten()
    {
        let path = entry.path();
        if path.extension().is_none_or(|e| e != "yaml") {
            continue;
        }
        let file: longtx_prompt::corpus::RealFixFile =
            serde_yaml::from_str(&std::fs::read_to_string(&path).unwrap())
                .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert_eq!(
            path.file_stem().unwrap().to_string_lossy(),
            file.repository.replace('/', "+")
        );
        for fix in &file.cases {
            for commit in [&fix.fix_commit, &fix.parent_commit] {
                assert!(
                    commit.len() == 40 && commit.bytes().all(|b| b.is_ascii_hexdigit()),
                    "{commit}"
                );
            }
            for site in [&fix.entry, &fix.fixed_site] {
                assert!(well_formed_expect(site) && site != "none", "{site}");
            }
            assert!(
                fix.pattern == "none" || catalogue.patterns.iter().any(|p| p.id() == fix.pattern),
                "{} names no pattern of the catalogue",
                fix.pattern
            );
            cases += 1;
        }
    }
    assert!(cases >= 30, "at least 30 real fixes, not {cases}");
}
