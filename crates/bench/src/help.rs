//! `--help` for every bench binary: the book tells people to run them, so
//! each answers with what it measures and how to call it, and exits 0,
//! before reading any other argument.

/// Prints `usage` and exits 0 when the command line asks for help.
pub fn answer_help(usage: &str) {
    if std::env::args().skip(1).any(|a| a == "--help" || a == "-h") {
        println!("{}", usage.trim());
        std::process::exit(0);
    }
}
