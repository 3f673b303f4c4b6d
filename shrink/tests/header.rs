//! The committed C header is what cbindgen makes of src/ffi.rs today, and it declares every
//! exported function. Generated rather than hand-written so that a changed signature cannot
//! leave a stale prototype behind; the C test (tests/c) then compiles against it with
//! -Werror. `UPDATE_HEADER=1` rewrites the header instead of failing.
#![cfg(feature = "ffi")]

use std::path::PathBuf;

fn crate_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn generate() -> String {
    let dir = crate_dir();
    let config = cbindgen::Config::from_file(dir.join("cbindgen.toml")).expect("cbindgen.toml");
    // Only ffi.rs: the C ABI lives there whole, and parsing one file needs no cargo
    // metadata.
    let bindings = cbindgen::Builder::new()
        .with_config(config)
        .with_src(dir.join("src/ffi.rs"))
        .generate()
        .expect("cbindgen parses src/ffi.rs");
    let mut out = Vec::new();
    bindings.write(&mut out);
    String::from_utf8(out).expect("UTF-8 header")
}

fn header_path() -> PathBuf {
    crate_dir().join("include/hprof_shrink.h")
}

#[test]
fn committed_header_is_what_cbindgen_generates() {
    let generated = generate();
    let path = header_path();
    if std::env::var_os("UPDATE_HEADER").is_some() {
        std::fs::write(&path, &generated).unwrap();
        return;
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    if committed != generated {
        let first = committed
            .lines()
            .zip(generated.lines())
            .position(|(a, b)| a != b)
            .unwrap_or_else(|| committed.lines().count().min(generated.lines().count()));
        panic!(
            "{} is stale (first difference at line {}): run UPDATE_HEADER=1 cargo test -p hprof-shrink-core --test header\n--- generated ---\n{generated}",
            path.display(),
            first + 1
        );
    }
}

/// Names of the `#[no_mangle]` functions in a Rust source.
fn exported_functions(source: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut lines = source.lines();
    while let Some(line) = lines.next() {
        if line.trim() != "#[no_mangle]" {
            continue;
        }
        let decl = lines.next().unwrap_or_default();
        let name = decl
            .split("fn ")
            .nth(1)
            .and_then(|rest| rest.split('(').next())
            .unwrap_or_else(|| panic!("#[no_mangle] not followed by a fn: {decl}"));
        names.push(name.trim().to_string());
    }
    names
}

#[test]
fn header_declares_every_exported_function() {
    // cbindgen skips, with only a log line, a function whose types it cannot express.
    let source = std::fs::read_to_string(crate_dir().join("src/ffi.rs")).unwrap();
    let exported = exported_functions(&source);
    assert!(
        exported.len() >= 9,
        "found only {exported:?} in ffi.rs: the scan is broken"
    );
    // The generated text: the other test holds it equal to the committed file.
    let header = generate();
    for name in &exported {
        let prototype = format!("{name}(");
        assert!(
            header.contains(&prototype),
            "{name} is exported but cbindgen does not declare it in the header"
        );
    }
}
