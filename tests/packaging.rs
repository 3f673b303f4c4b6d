//! Every published crate of the workspace (the CLI, the core, the analyzer, the upload
//! client, the server) carries what `cargo publish` wants, and each packages offline: the
//! metadata a registry page shows, a version on every path dependency, the files that go.

use std::process::Command;

fn cargo() -> Command {
    let mut c = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    c.current_dir(env!("CARGO_MANIFEST_DIR"));
    c
}

fn metadata() -> serde_json::Value {
    let o = cargo()
        .args([
            "metadata",
            "--no-deps",
            "--format-version",
            "1",
            "--offline",
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    serde_json::from_slice(&o.stdout).unwrap()
}

/// The crates published (the rest say `publish = false`).
const PUBLISHED: &[&str] = &[
    "hprof-shrink",
    "hprof-shrink-core",
    "hprof-shrink-analyze",
    "hprof-shrink-upload",
    "hprof-shrink-serve",
];

#[test]
fn every_published_crate_carries_the_metadata_a_publish_needs() {
    let m = metadata();
    let packages = m["packages"].as_array().unwrap();
    // A new member is either listed above or says it is not published.
    for p in packages {
        let name = p["name"].as_str().unwrap();
        let unpublished = p["publish"].as_array().is_some_and(Vec::is_empty);
        assert!(
            PUBLISHED.contains(&name) || unpublished,
            "{name}: add it to PUBLISHED or give it publish = false"
        );
    }
    for &name in PUBLISHED {
        let p = packages.iter().find(|p| p["name"] == name).unwrap();
        for field in [
            "description",
            "license",
            "repository",
            "readme",
            "rust_version",
        ] {
            let v = p[field].as_str().unwrap_or("");
            assert!(!v.is_empty(), "{name}: no {field}");
        }
        for field in ["keywords", "categories"] {
            let n = p[field].as_array().map_or(0, Vec::len);
            assert!((1..=5).contains(&n), "{name}: {n} {field}");
        }
        let readme = std::path::Path::new(p["manifest_path"].as_str().unwrap())
            .parent()
            .unwrap()
            .join(p["readme"].as_str().unwrap());
        assert!(readme.is_file(), "{name}: {}", readme.display());
    }
    // What a published crate depends on among its siblings: a version, not only a path
    // (dev-dependencies are dropped from a published manifest).
    for &name in PUBLISHED {
        let p = packages.iter().find(|p| p["name"] == name).unwrap();
        for d in p["dependencies"].as_array().unwrap() {
            let sibling = d["name"].as_str().unwrap().starts_with("hprof-shrink");
            if sibling && d["kind"].is_null() {
                assert_ne!(d["req"], "*", "{name} -> {d}");
            }
        }
    }
}

/// The files `cargo package -p name` would publish.
fn package_list(name: &str) -> String {
    let o = cargo()
        .args([
            "package",
            "-p",
            name,
            "--list",
            "--offline",
            "--allow-dirty",
        ])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(!err.contains("warning"), "{err}");
    String::from_utf8_lossy(&o.stdout).into_owned()
}

#[test]
fn the_library_crates_package_with_the_files_they_include() {
    for (name, wants) in [
        (
            "hprof-shrink-analyze",
            &["src/knowledge/library_leaks.json"][..],
        ),
        ("hprof-shrink-upload", &[][..]),
        (
            "hprof-shrink-serve",
            &[
                "src/migrations/sqlite/0001_init.sql",
                "src/migrations/postgres/0001_init.sql",
            ][..],
        ),
    ] {
        let files = package_list(name);
        for want in ["src/lib.rs", "README.md", "Cargo.toml"]
            .iter()
            .chain(wants)
        {
            assert!(
                files.lines().any(|l| l == *want),
                "{name}: {want} not in:\n{files}"
            );
        }
        assert!(!files.contains(".hprof"), "{name}: {files}");
    }
}

#[test]
fn the_core_packages_with_its_sources_and_header_and_without_fixtures() {
    let o = cargo()
        .args([
            "package",
            "-p",
            "hprof-shrink-core",
            "--list",
            "--offline",
            "--allow-dirty",
        ])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(!err.contains("warning"), "{err}");
    let files = String::from_utf8_lossy(&o.stdout);
    for want in [
        "src/lib.rs",
        "include/hprof_shrink.h",
        "README.md",
        "Cargo.toml",
    ] {
        assert!(files.lines().any(|l| l == want), "{want} not in:\n{files}");
    }
    assert!(!files.contains(".hprof"), "{files}");
}
