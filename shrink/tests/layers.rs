//! The format layer (`src/hprof/`) is a leaf: it imports nothing from the rest of the core,
//! so whatever reads dumps (the shrink passes, the analyzer) builds on it alone. Inside it,
//! modules depend one way, from the views down to the bytes. Reads the sources, as
//! `dependencies.rs` asks cargo: a new `use` that breaks either rule fails here.

use std::fs;
use std::path::{Path, PathBuf};

use hprof_shrink_test_support::layers::{code_only, paths_after};

fn hprof_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src/hprof")
}

/// The format layer's source files: (module name, code without comments).
fn sources() -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = fs::read_dir(hprof_dir())
        .expect("src/hprof is there")
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "rs"))
        .map(|p| {
            let name = p.file_stem().unwrap().to_string_lossy().into_owned();
            let text = fs::read_to_string(&p).unwrap();
            (name, code_only(&text))
        })
        .collect();
    out.sort();
    out
}

#[test]
fn the_format_layer_imports_nothing_from_the_rest_of_the_core() {
    let files = sources();
    assert!(files.len() > 5, "read too few files: {files:?}");
    let mut bad = Vec::new();
    for (name, code) in &files {
        for seg in paths_after(code, "crate::") {
            if seg != "hprof" {
                bad.push(format!("{name}.rs: crate::{seg}"));
            }
        }
        // `super` above the layer: from mod.rs it is the crate root.
        let above = if name == "mod" {
            "super::"
        } else {
            "super::super::"
        };
        for seg in paths_after(code, above) {
            bad.push(format!("{name}.rs: {above}{seg}"));
        }
    }
    assert!(
        bad.is_empty(),
        "src/hprof/ must stay a leaf (the analyzer builds on it), but it reaches into the core: {bad:?}"
    );
}

/// The modules of the layer, bottom first: each may use only modules of a lower rank.
const RANKS: &[(&str, u8)] = &[
    ("tags", 0),
    ("bytes", 0),
    ("mapguard", 0),
    ("error", 1),
    ("javastring", 1),
    ("cursor", 2),
    ("tick", 2),
    ("heap", 3),
    ("record", 4),
    ("classes", 5),
    ("visitor", 5),
    ("reader", 6),
    ("writer", 6),
    ("events", 7),
];

fn rank(name: &str) -> u8 {
    RANKS
        .iter()
        .find(|(n, _)| *n == name)
        .unwrap_or_else(|| panic!("src/hprof/{name}.rs has no rank in tests/layers.rs: place it"))
        .1
}

#[test]
fn modules_inside_the_format_layer_depend_one_way() {
    let mut bad = Vec::new();
    for (name, code) in sources() {
        if name == "mod" {
            continue;
        }
        let own = rank(&name);
        for seg in paths_after(&code, "super::") {
            if seg.starts_with('{') {
                bad.push(format!("{name}.rs: super::{{…}} (name one module a path)"));
            } else if seg != "super" && rank(seg) >= own {
                bad.push(format!("{name}.rs uses {seg}"));
            }
        }
    }
    assert!(
        bad.is_empty(),
        "modules of src/hprof/ must only use those below them ({RANKS:?}): {bad:?}"
    );
}

#[test]
fn the_format_layer_walks_a_dump_on_its_own() {
    use hprof_shrink_core::hprof::{FormatError, Hprof, HprofWriter, Truncation, Unwatched};
    for (name, dump, _) in hprof_fixtures::android::all() {
        let hprof = Hprof::new(&dump).unwrap();
        // Its own error type and a ticker of its own: nothing of the core's.
        let mut writer = HprofWriter::new(Vec::new(), &dump, hprof.id_size());
        let walked: Result<(), FormatError> = hprof.accept(&mut writer, &mut Unwatched);
        walked.unwrap();
        assert!(
            writer.into_inner().unwrap() == dump,
            "{name}: not copied as it was"
        );
        // Cut inside its last record: the records say so in a field, not in words.
        let cut = Hprof::new(&dump[..dump.len() - 1]).unwrap();
        let err = cut
            .records()
            .find_map(Result::err)
            .expect("the cut is seen");
        assert!(
            matches!(
                err,
                FormatError::Truncated {
                    kind: Truncation::FileEnd,
                    ..
                }
            ),
            "{name}: {err}"
        );
        assert!(err.is_cut_off(), "{name}: {err}");
    }
}
