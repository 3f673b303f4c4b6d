//! The analyzer through its API (`analyze_path`) on the workspace's fixtures and generated
//! scenarios, against LeakCanary's Shark's committed answers: one test binary, a module per
//! subject. The `hprof-shrink analyze` command's own tests are the CLI's (the root
//! `tests/`).

use std::path::{Path, PathBuf};

mod android;
mod big;
mod diff;
mod growth;
mod paths;
mod scenarios;
mod signatures;

/// The workspace's root, where `fixtures/` is (and `../shared/corpus` beside it).
fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Writes `bytes` to `dir/name`, giving its path.
fn write(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, bytes).unwrap();
    path
}
