//! The entry names a package must refuse: the core's C ABI tests and the CLI's tests check
//! the same rule.

/// Hprof entry names a package must refuse: a manifest entry's own name, or one an
/// extracting reader would write somewhere else. (The empty name is refused too, with a
/// message of its own at each interface.)
pub const NOT_PLAIN_ENTRY_NAMES: &[&str] = &[
    "result.info",
    "extra.info",
    "../../evil.hprof",
    "/abs.hprof",
    "dir/",
    "a\\b",
    ".",
    "..",
];
