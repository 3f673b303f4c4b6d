//! The server: no CLI or terminal crate in its tree (the binary parses arguments and prints),
//! and not the CLI's package.
//! Asks cargo itself (`cargo tree`, every target, each feature set), so a dependency added
//! anywhere below this crate counts.

use hprof_shrink_test_support::fence::{Fence, CLI, TERMINAL};

#[test]
fn the_server_pulls_no_cli_or_terminal_crate() {
    Fence {
        package: "hprof-shrink-serve",
        families: &[CLI, TERMINAL],
        crates: &["hprof-shrink"],
        known: &[
            "hprof-shrink-serve",
            "hprof-shrink-analyze",
            "hprof-shrink-upload",
            "axum",
            "sqlx",
        ],
        why: "the server is a library the CLI starts; arguments and terminal output are the CLI's",
    }
    .check(env!("CARGO_MANIFEST_DIR").as_ref());
}
