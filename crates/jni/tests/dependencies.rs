//! The JNI library ships inside apps, beside the core: its dependency tree must hold no
//! network, CLI, server or progress-bar crate, on any target and with any of its features,
//! nor any of the workspace's crates but the core. Asks cargo itself (`cargo tree`).

use hprof_shrink_test_support::fence::{Fence, CLI, NETWORK, SERVER, TERMINAL};

#[test]
fn the_jni_library_pulls_no_network_cli_server_or_progress_bar_crate() {
    Fence {
        package: "hprof-shrink-jni",
        families: &[NETWORK, SERVER, CLI, TERMINAL],
        crates: &[
            "hprof-shrink-analyze",
            "hprof-shrink-upload",
            "hprof-shrink-serve",
            "hprof-shrink",
        ],
        known: &["hprof-shrink-jni", "hprof-shrink-core", "jni"],
        why: "the JNI library is linked into apps: the Java side uploads, with the platform's HTTP client",
    }
    .check(env!("CARGO_MANIFEST_DIR").as_ref());
}
