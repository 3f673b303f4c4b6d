//! The analyzer is a library for anyone who reads heap dumps: no network, server, CLI or
//! terminal crate in its tree, and none of the workspace's crates above it.
//! Asks cargo itself (`cargo tree`, every target, each feature set), so a dependency added
//! anywhere below this crate counts.

use hprof_shrink_test_support::fence::{Fence, CLI, NETWORK, SERVER, TERMINAL};

#[test]
fn the_analyzer_pulls_no_network_server_cli_or_terminal_crate() {
    Fence {
        package: "hprof-shrink-analyze",
        families: &[CLI, NETWORK, SERVER, TERMINAL],
        crates: &["hprof-shrink-upload", "hprof-shrink-serve", "hprof-shrink"],
        known: &["hprof-shrink-analyze", "hprof-shrink-core", "rayon"],
        why: "the analyzer reads dumps and renders results; sending, serving and the command line are other crates'",
    }
    .check(env!("CARGO_MANIFEST_DIR").as_ref());
}
