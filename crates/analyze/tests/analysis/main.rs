//! The analyzer through its API (`analyze_path`) on the workspace's fixtures and generated
//! scenarios, against LeakCanary's Shark's committed answers: one test binary, a module per
//! subject. The `hprof-shrink analyze` command's own tests are the CLI's (the root
//! `tests/`).

use std::path::{Path, PathBuf};

mod android;
mod big;
mod collection_paths;
mod diff;
mod growth;
mod hostile_values;
mod paths;
mod scenarios;
mod signatures;
mod triage;

/// The workspace's root, where `fixtures/` is (and `../shared/corpus` beside it).
fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Generated scenario `name`, or None (the reason printed) when this machine cannot make
/// it.
fn scenario(name: &str) -> Option<hprof_fixtures::scenarios::Scenario> {
    hprof_fixtures::scenarios::Generator::shared(
        Path::new(env!("CARGO_TARGET_TMPDIR")).join("scenarios"),
    )
    .get_or_skip(name)
}

/// Shark's committed answer for scenario `name` (`fixtures/scenarios/NAME.shark.json`).
fn committed_shark(name: &str) -> serde_json::Value {
    let path = repo()
        .join("fixtures/scenarios")
        .join(format!("{name}.shark.json"));
    serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap()
}

/// Writes `bytes` to `dir/name`, giving its path.
fn write(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, bytes).unwrap();
    path
}
