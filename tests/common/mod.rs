//! Helpers the command-line tests share.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

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
