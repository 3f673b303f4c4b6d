//! Where the test dumps are: the committed fixtures and the shared corpus of real dumps.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

#[allow(unused_imports)] // only the C ABI tests check entry names
pub use hprof_shrink_test_support::entry_names::NOT_PLAIN_ENTRY_NAMES;

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

/// The facts written beside a fixture (`NAME.facts.json`), if any.
pub fn facts(hprof: &Path) -> Option<serde_json::Value> {
    let path = hprof.with_extension("facts.json");
    let text = std::fs::read_to_string(path).ok()?;
    Some(serde_json::from_str(&text).expect("facts parse"))
}

/// Reads one entry of a zip.
pub fn zip_entry(zip: &Path, name: &str) -> Vec<u8> {
    use std::io::Read;
    let mut z = zip::ZipArchive::new(std::fs::File::open(zip).unwrap()).unwrap();
    let mut e = z.by_name(name).unwrap();
    let mut out = Vec::new();
    e.read_to_end(&mut out).unwrap();
    out
}

/// Files left in a directory (to check that nothing partial or temporary remains).
pub fn files_in(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// `out` as the one output of a shrink: the package when it ends in `.zip`, else the raw
/// hprof.
pub fn one_output(out: &Path) -> hprof_shrink_core::Outputs<'_> {
    let zip = out.extension().is_some_and(|e| e == "zip");
    hprof_shrink_core::Outputs {
        zip: zip.then_some(out),
        hprof: (!zip).then_some(out),
    }
}
