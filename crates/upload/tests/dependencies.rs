//! The upload client and outbox: no server, CLI or terminal crate in its tree (the caller
//! draws progress through `Meter`), and none of the workspace's crates above it.
//! Asks cargo itself (`cargo tree`, every target, each feature set), so a dependency added
//! anywhere below this crate counts.

use hprof_shrink_test_support::fence::{Fence, CLI, SERVER, TERMINAL};

#[test]
fn the_upload_crate_pulls_no_server_cli_or_terminal_crate() {
    Fence {
        package: "hprof-shrink-upload",
        families: &[CLI, SERVER, TERMINAL],
        crates: &["hprof-shrink-analyze", "hprof-shrink-serve", "hprof-shrink"],
        known: &["hprof-shrink-upload", "hprof-shrink-core", "reqwest", "rustls"],
        why: "the upload client is linked by tools that send packages; it serves nothing and draws no terminal",
    }
    .check(env!("CARGO_MANIFEST_DIR").as_ref());
}
