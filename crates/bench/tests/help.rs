//! Every bench binary the book tells people to run answers `--help` with
//! its usage and exit status 0, before it starts any work.

fn help_of(binary: &str) -> (bool, String) {
    let output = std::process::Command::new(binary)
        .arg("--help")
        .output()
        .expect("the bench binary runs");
    (
        output.status.success(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
    )
}

#[test]
fn every_bench_binary_answers_help() {
    let binaries = [
        ("intake-bench", env!("CARGO_BIN_EXE_intake-bench")),
        ("prompt-bench", env!("CARGO_BIN_EXE_prompt-bench")),
        ("history-bench", env!("CARGO_BIN_EXE_history-bench")),
        ("dashboard-bench", env!("CARGO_BIN_EXE_dashboard-bench")),
        ("locate-bench", env!("CARGO_BIN_EXE_locate-bench")),
        ("realfix-bench", env!("CARGO_BIN_EXE_realfix-bench")),
        ("scan-bench", env!("CARGO_BIN_EXE_scan-bench")),
        ("door-bench", env!("CARGO_BIN_EXE_door-bench")),
    ];
    for (name, binary) in binaries {
        let (ok, text) = help_of(binary);
        assert!(ok, "{name} --help exits 0");
        assert!(
            text.starts_with(&format!("{name}: ")) && text.contains("Usage: "),
            "{name} --help says what it is and how to call it: {text}"
        );
    }
}
