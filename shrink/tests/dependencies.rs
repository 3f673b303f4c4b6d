//! The core is what a phone links: its dependency tree must hold no network, CLI or
//! progress-bar crate, on any target (Android's included) and with any of its features.
//! Asks cargo itself (`cargo tree`), so a dependency added anywhere below the core counts.

use std::process::Command;

/// Crates a phone library must not pull, by family. A name matches an entry exactly or
/// with a `-`/`_` suffix (`tokio-util`, `clap_builder`).
#[rustfmt::skip] // grouped by kind, several names a line
const FORBIDDEN: &[&str] = &[
    // network
    "reqwest", "hyper", "h2", "tokio", "ureq", "curl", "isahc", "surf", "attohttpc",
    "openssl", "native-tls", "rustls",
    // command line
    "clap", "structopt", "argh", "pico-args", "lexopt",
    // progress bars and terminal styling
    "indicatif", "console", "pbr", "linya",
];

fn forbidden(name: &str) -> bool {
    FORBIDDEN.iter().any(|f| {
        name == *f
            || name
                .strip_prefix(f)
                .is_some_and(|rest| rest.starts_with('-') || rest.starts_with('_'))
    })
}

/// Package names in the core's normal (non-dev, non-build) dependency tree.
fn tree(extra_args: &[&str]) -> Vec<String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .args(["tree", "-p", "hprof-shrink-core", "-e", "normal"])
        .args(["--prefix", "none", "--format", "{p}", "--target", "all"])
        .args(extra_args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo runs");
    assert!(
        out.status.success(),
        "cargo tree failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut names: Vec<String> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .filter_map(|l| l.split_whitespace().next().map(str::to_owned))
        .collect();
    names.sort();
    names.dedup();
    names
}

#[test]
fn the_core_pulls_no_network_cli_or_progress_bar_crate() {
    for args in [
        &[][..],
        &["--all-features"][..],
        &["--no-default-features"][..],
    ] {
        let names = tree(args);
        // The listing was read: the core and its known dependencies are in it.
        for known in ["hprof-shrink-core", "rawzip", "memmap2"] {
            assert!(
                names.iter().any(|n| n == known),
                "{known} not in `cargo tree {args:?}`: {names:?}"
            );
        }
        let bad: Vec<&String> = names.iter().filter(|n| forbidden(n)).collect();
        assert!(
            bad.is_empty(),
            "hprof-shrink-core ({args:?}) depends on {bad:?}: the core is linked into apps and must stay free of network, CLI and progress-bar crates"
        );
    }
}

#[test]
fn the_forbidden_list_matches_families_not_substrings() {
    for name in [
        "tokio",
        "tokio-util",
        "clap_builder",
        "hyper-util",
        "indicatif",
    ] {
        assert!(forbidden(name), "{name}");
    }
    for name in ["h2o", "clapper", "tokionet", "zip"] {
        assert!(!forbidden(name), "{name}");
    }
}
