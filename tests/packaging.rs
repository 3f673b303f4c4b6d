//! Both crates carry what `cargo publish` wants, and the core packages offline: the
//! metadata a registry page shows, a version on the path dependency, the files that go.

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

#[test]
fn both_crates_carry_the_metadata_a_publish_needs() {
    let m = metadata();
    let packages = m["packages"].as_array().unwrap();
    for name in ["hprof-shrink", "hprof-shrink-core"] {
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
    // What a published hprof-shrink depends on: a version, not only a path.
    let root = packages
        .iter()
        .find(|p| p["name"] == "hprof-shrink")
        .unwrap();
    let core = root["dependencies"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["name"] == "hprof-shrink-core")
        .unwrap();
    assert_ne!(core["req"], "*", "{core}");
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
