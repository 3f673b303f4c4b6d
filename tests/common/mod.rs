//! Helpers the command-line tests share.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

#[allow(unused_imports)] // not every test file checks entry names
pub use hprof_shrink_test_support::entry_names::NOT_PLAIN_ENTRY_NAMES;

pub const BIN: &str = env!("CARGO_BIN_EXE_hprof-shrink");

pub fn bin() -> Command {
    let mut c = Command::new(BIN);
    // Requests go straight to loopback whatever the environment says about proxies, and
    // no token leaks in from the environment unless a test sets one.
    for v in [
        "HTTP_PROXY",
        "http_proxy",
        "HTTPS_PROXY",
        "https_proxy",
        "ALL_PROXY",
        "all_proxy",
        "HPROF_SHRINK_TOKEN",
    ] {
        c.env_remove(v);
    }
    c.env("NO_PROXY", "*");
    c
}

pub fn run(args: &[&str]) -> Output {
    bin().args(args).output().expect("run hprof-shrink")
}

pub fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures")
        .join(name)
}

/// A path as the &str an argument list wants.
pub fn s(p: &Path) -> &str {
    p.to_str().expect("a UTF-8 path")
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// The names in a directory, sorted (to check that nothing partial was left).
pub fn names_in(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .expect("read dir")
        .map(|e| {
            e.expect("dir entry")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    v.sort();
    v
}

/// Asserts that `o` exited with `code` and said each of `wants` on stderr; returns stderr.
pub fn failed_with(o: &Output, code: i32, wants: &[&str]) -> String {
    let err = stderr(o);
    assert_eq!(o.status.code(), Some(code), "{err}");
    for want in wants {
        assert!(err.contains(want), "{want:?} not in: {err}");
    }
    err
}

/// Asserts that nothing is left in `dir` (no output, no temporary file), naming what is.
pub fn assert_empty(dir: &Path) {
    let left = names_in(dir);
    assert!(
        left.is_empty(),
        "left behind in {}: {left:?}",
        dir.display()
    );
}

/// A tmpfs of `size` mounted at `dir/tiny`, unmounted when dropped; `None` (with the
/// reason printed) where this process cannot mount one.
pub struct Tiny(pub PathBuf);

impl Tiny {
    pub fn mount(dir: &Path, size: &str) -> Option<Tiny> {
        let mnt = dir.join("tiny");
        std::fs::create_dir(&mnt).unwrap();
        let ok = Command::new("mount")
            .args([
                "-t",
                "tmpfs",
                "-o",
                &format!("size={size}"),
                "tmpfs",
                s(&mnt),
            ])
            .stderr(std::process::Stdio::null())
            .status()
            .is_ok_and(|st| st.success());
        if !ok {
            eprintln!("skipping: cannot mount a small tmpfs here (not root?)");
            return None;
        }
        Some(Tiny(mnt))
    }
}

impl Drop for Tiny {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

/// Compiles `tests/java/NAME.java` with javac into a temporary directory and runs it with
/// `args`: Java's own readers (zip, Properties) checking what the tool writes. Java is
/// required, as for the fixtures (scripts/gen-fixtures.sh).
pub fn run_java(name: &str, args: &[&str]) -> Output {
    let classes = tempfile::tempdir().unwrap();
    let src = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/java")
        .join(format!("{name}.java"));
    let javac = Command::new("javac")
        .arg("-d")
        .arg(classes.path())
        .arg(&src)
        .output()
        .expect("javac (a JDK, 11 or later) is needed for this test");
    assert!(javac.status.success(), "javac: {}", stderr(&javac));
    Command::new("java")
        .arg("-cp")
        .arg(classes.path())
        .arg(name)
        .args(args)
        .output()
        .expect("run java")
}

pub fn md5_hex(bytes: &[u8]) -> String {
    use md5::Digest;
    md5::Md5::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// A dump of 24 MiB of incompressible byte arrays: kept whole (`--strip none`) and
/// deflated at level 9, it takes a few seconds to shrink, time enough to signal it.
pub fn big_dump(path: &Path) {
    use hprof_fixtures::{ArtBuilder, Heap, Options};
    let mut b = ArtBuilder::new(Options::default());
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    for _ in 0..24 {
        let bytes: Vec<u8> = (0..1 << 20)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect();
        b.byte_array(Heap::App, &bytes);
    }
    std::fs::write(path, b.finish()).unwrap();
}

/// A zip of these entries, in order (hprof-shrink's own writer, deflated at `level`, 0
/// stores): a package made by hand, a trace's or a hostile one.
pub fn zip_of(entries: &[(&str, &[u8])], level: u32) -> Vec<u8> {
    use std::io::{Read, Seek};
    let mut f = tempfile::tempfile().unwrap();
    let mut w =
        hprof_shrink_core::package::PackageWriter::new(&mut f, level, 1_500_000_000_000).unwrap();
    for (name, bytes) in entries {
        w.add_bytes(name, bytes).unwrap();
    }
    w.finish("").unwrap();
    let mut out = Vec::new();
    f.rewind().unwrap();
    f.read_to_end(&mut out).unwrap();
    out
}

/// A `result.info` whose `hprofEntry` is `entry`.
pub fn result_info(entry: &str) -> Vec<u8> {
    format!("#\nsdkVersion=35\nmanufacturer=acme\nhprofEntry={entry}\nleakedActivityKey=unknown\n")
        .into_bytes()
}
