//! Where the test dumps are: the committed fixtures and the shared corpus of real dumps.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// Every `*.hprof` in `dir`, sorted; empty when the directory is absent.
pub fn hprofs_in(dir: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|x| x == "hprof"))
                .collect()
        })
        .unwrap_or_default();
    out.sort();
    out
}

/// The committed fixtures; there must be some.
pub fn fixtures() -> Vec<PathBuf> {
    let found = hprofs_in(&repo_root().join("fixtures"));
    assert!(
        !found.is_empty(),
        "no fixtures/*.hprof: run scripts/gen-fixtures.sh"
    );
    found
}

/// The real dumps in ../shared/corpus, or none (with the reason printed) when absent.
pub fn corpus() -> Vec<PathBuf> {
    let dir = repo_root().join("../shared/corpus");
    let found = hprofs_in(&dir);
    if found.is_empty() {
        eprintln!("skipping the shared corpus: no dumps at {}", dir.display());
    }
    found
}
