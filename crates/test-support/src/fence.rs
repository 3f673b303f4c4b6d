//! Dependency fences: each library crate's test asks cargo itself (`cargo tree`) for the
//! crate's normal dependency tree, on every target and with each feature set, and fails
//! naming any crate of a family it must not reach. A dependency added anywhere below the
//! crate counts.

use std::path::Path;
use std::process::Command;

/// Network clients and servers, TLS.
#[rustfmt::skip] // several names a line
pub const NETWORK: &[&str] = &[
    "reqwest", "hyper", "h2", "tokio", "ureq", "curl", "isahc", "surf", "attohttpc",
    "openssl", "native-tls", "rustls",
];

/// Web frameworks, databases, object stores: what a server is made of. (Not tower-http:
/// reqwest's redirects use it, on the client side.)
#[rustfmt::skip]
pub const SERVER: &[&str] = &[
    "axum", "actix", "warp", "rocket", "sqlx", "rusqlite", "libsqlite3", "postgres",
    "rusty-s3", "multer", "matchit",
];

/// Command-line parsers.
pub const CLI: &[&str] = &["clap", "structopt", "argh", "pico-args", "lexopt"];

/// Progress bars and terminal styling.
pub const TERMINAL: &[&str] = &["indicatif", "console", "pbr", "linya"];

/// Whether `name` is of one of `families`: an entry exactly, or with a `-`/`_` suffix
/// (`tokio-util`, `clap_builder`), not any name that merely starts the same (`h2o`).
pub fn in_family(name: &str, families: &[&[&str]]) -> bool {
    families.iter().flat_map(|f| f.iter()).any(|f| {
        name == *f
            || name
                .strip_prefix(f)
                .is_some_and(|rest| rest.starts_with('-') || rest.starts_with('_'))
    })
}

/// Package names in `package`'s normal (non-dev, non-build) dependency tree, all targets,
/// with `extra_args` (feature flags) given to `cargo tree`; `dir` is any directory of the
/// workspace.
pub fn normal_tree(dir: &Path, package: &str, extra_args: &[&str]) -> Vec<String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .args(["tree", "-p", package, "-e", "normal"])
        .args(["--prefix", "none", "--format", "{p}", "--target", "all"])
        .args(extra_args)
        .current_dir(dir)
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

/// What one crate must not reach: families (matched as [`in_family`] does) and workspace
/// crates (matched by exact name: `hprof-shrink`, the CLI, is not the family of
/// `hprof-shrink-core`).
pub struct Fence<'a> {
    /// The crate fenced.
    pub package: &'a str,
    /// Families it must not reach.
    pub families: &'a [&'a [&'a str]],
    /// Crates of the workspace it must not reach.
    pub crates: &'a [&'a str],
    /// Names that must be in its tree: proof the listing was read.
    pub known: &'a [&'a str],
    /// Why, for the failure message.
    pub why: &'a str,
}

impl Fence<'_> {
    /// The forbidden names in `names`.
    pub fn violations<'n>(&self, names: &'n [String]) -> Vec<&'n String> {
        names
            .iter()
            .filter(|n| in_family(n, self.families) || self.crates.contains(&n.as_str()))
            .collect()
    }

    /// Asks cargo for the tree with no features, all features and no default features, and
    /// fails naming what it finds that it must not.
    pub fn check(&self, dir: &Path) {
        for args in [
            &[][..],
            &["--all-features"][..],
            &["--no-default-features"][..],
        ] {
            let names = normal_tree(dir, self.package, args);
            for known in self.known {
                assert!(
                    names.iter().any(|n| n == known),
                    "{known} not in `cargo tree -p {} {args:?}`: {names:?}",
                    self.package
                );
            }
            let bad = self.violations(&names);
            assert!(
                bad.is_empty(),
                "{} ({args:?}) depends on {bad:?}: {}",
                self.package,
                self.why
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_families_match_whole_names_not_substrings() {
        let all: &[&[&str]] = &[NETWORK, SERVER, CLI, TERMINAL];
        for name in [
            "tokio",
            "tokio-util",
            "clap_builder",
            "hyper-util",
            "indicatif",
            "sqlx-core",
            "libsqlite3-sys",
        ] {
            assert!(in_family(name, all), "{name}");
        }
        for name in ["h2o", "clapper", "tokionet", "zip", "axumite"] {
            assert!(!in_family(name, all), "{name}");
        }
    }

    #[test]
    fn workspace_crates_are_matched_exactly() {
        let fence = Fence {
            package: "x",
            families: &[],
            crates: &["hprof-shrink"],
            known: &[],
            why: "",
        };
        let names = vec!["hprof-shrink-core".to_string(), "hprof-shrink".to_string()];
        assert_eq!(fence.violations(&names), [&names[1]]);
    }
}
