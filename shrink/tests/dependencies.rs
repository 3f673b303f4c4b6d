//! The core is what a phone links: its dependency tree must hold no network, CLI or
//! progress-bar crate, on any target (Android's included) and with any of its features, nor
//! any of the workspace's crates above it. Asks cargo itself (`cargo tree`), so a dependency
//! added anywhere below the core counts.

use hprof_shrink_test_support::fence::{Fence, CLI, NETWORK, TERMINAL};

#[test]
fn the_core_pulls_no_network_cli_or_progress_bar_crate() {
    Fence {
        package: "hprof-shrink-core",
        families: &[NETWORK, CLI, TERMINAL],
        crates: &[
            "hprof-shrink-analyze",
            "hprof-shrink-upload",
            "hprof-shrink-serve",
            "hprof-shrink",
        ],
        known: &["hprof-shrink-core", "rawzip", "memmap2"],
        why: "the core is linked into apps and must stay free of network, CLI and progress-bar crates",
    }
    .check(env!("CARGO_MANIFEST_DIR").as_ref());
}
