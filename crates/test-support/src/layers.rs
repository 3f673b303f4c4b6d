//! Source fences: which modules of a crate use which, read from the sources as text (the
//! `crate::` and `super::` paths of code, comments left out), so that a test can hold a
//! layer a leaf or a crate free of circles, and a new `use` that breaks the rule fails.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::Path;

/// The text with `//` comments (doc comments included) cut off each line, so prose that
/// names a path does not count as a use of it.
pub fn code_only(text: &str) -> String {
    text.lines()
        .map(|l| l.split("//").next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Where `prefix` starts a path in `code`: a whole segment, not the tail of a longer
/// identifier.
fn starts_of<'a>(code: &'a str, prefix: &'a str) -> impl Iterator<Item = usize> + 'a {
    code.match_indices(prefix).map(|(at, _)| at).filter(|at| {
        code[..*at]
            .chars()
            .next_back()
            .is_none_or(|c| !(c.is_alphanumeric() || c == '_'))
    })
}

/// Every path that starts with `prefix`, as the identifier that follows it.
pub fn paths_after<'a>(code: &'a str, prefix: &str) -> Vec<&'a str> {
    starts_of(code, prefix)
        .map(|at| {
            let rest = &code[at + prefix.len()..];
            // A group (`{a, b}`) is reported as its brace.
            let end = match rest.starts_with('{') {
                true => 1,
                false => rest
                    .find(|c: char| !(c.is_alphanumeric() || c == '_'))
                    .unwrap_or(rest.len()),
            };
            &rest[..end]
        })
        .collect()
}

/// The first segment of each path after `prefix`, a group's (`{a, b::c}`) each.
fn modules_after(code: &str, prefix: &str) -> Vec<String> {
    let mut out = Vec::new();
    for at in starts_of(code, prefix) {
        let seg = paths_after(&code[at..], prefix)[0];
        if seg != "{" {
            out.push(seg.to_string());
            continue;
        }
        let inner = &code[at + prefix.len() + 1..];
        let mut depth = 0;
        let mut first = true;
        for (i, c) in inner.char_indices() {
            match c {
                '{' => depth += 1,
                '}' if depth == 0 => break,
                '}' => depth -= 1,
                ',' if depth == 0 => first = true,
                c if first && (c.is_alphanumeric() || c == '_') => {
                    let rest = &inner[i..];
                    let end = rest
                        .find(|c: char| !(c.is_alphanumeric() || c == '_'))
                        .unwrap_or(rest.len());
                    out.push(rest[..end].to_string());
                    first = false;
                }
                _ => {}
            }
        }
    }
    out
}

/// The top-level modules of the crate whose sources are in `src` (`lib.rs` itself, which
/// declares them all, and those it declares under `#[cfg(test)]` left out), each with the
/// modules of the crate it uses: by `crate::` paths, and by `super::` paths that climb to
/// the crate's root. A module's files below its folder count as it; its `mod tests` not.
pub fn module_uses(src: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let lib = code_only(&fs::read_to_string(src.join("lib.rs")).expect("src/lib.rs is there"));
    let test_only: Vec<&str> = lib
        .split("#[cfg(test)]")
        .skip(1)
        .filter_map(|after| after.trim_start().strip_prefix("mod "))
        .map(|m| m.split(';').next().unwrap_or("").trim())
        .collect();
    let mut out = BTreeMap::new();
    for entry in fs::read_dir(src).expect("src is a directory") {
        let path = entry.unwrap().path();
        let Some(name) = path.file_stem().map(|s| s.to_string_lossy().into_owned()) else {
            continue;
        };
        let rust = path.extension().is_some_and(|x| x == "rs");
        if (!rust && !path.is_dir()) || name == "lib" || test_only.contains(&name.as_str()) {
            continue;
        }
        let uses: &mut BTreeSet<String> = out.entry(name.clone()).or_default();
        files_below(&path, 0, &mut |depth, text| {
            let code = code_only(text);
            let code = code.split("#[cfg(test)]\nmod tests").next().unwrap_or("");
            uses.extend(modules_after(code, "crate::"));
            // From a module's own file `super::` is the root; from a file below it, one
            // `super::` more a level.
            uses.extend(modules_after(code, &"super::".repeat(depth + 1)));
        });
        uses.remove(&name);
    }
    out
}

/// Calls `each` with every `.rs` file at or below `path` and how deep below it is.
fn files_below(path: &Path, depth: usize, each: &mut dyn FnMut(usize, &str)) {
    if path.is_dir() {
        for entry in fs::read_dir(path).unwrap() {
            let p = entry.unwrap().path();
            let below = match p.file_stem() {
                Some(s) if s == "mod" => depth,
                _ => depth + 1,
            };
            files_below(&p, below, each);
        }
    } else if path.extension().is_some_and(|x| x == "rs") {
        each(depth, &fs::read_to_string(path).unwrap());
    }
}

/// A circle among `uses` (each module with those it uses), as the modules on it, the first
/// again at the end; None when the modules depend one way.
pub fn circle(uses: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    // 0: not seen, 1: on the path being walked, 2: done (no circle through it).
    let mut state: BTreeMap<&str, u8> = BTreeMap::new();
    fn walk<'a>(
        m: &'a str,
        uses: &'a BTreeMap<String, BTreeSet<String>>,
        state: &mut BTreeMap<&'a str, u8>,
        path: &mut Vec<&'a str>,
    ) -> Option<Vec<String>> {
        match state.get(m) {
            Some(2) => return None,
            Some(1) => {
                let from = path.iter().position(|p| *p == m).unwrap_or(0);
                let mut found: Vec<String> = path[from..].iter().map(|s| s.to_string()).collect();
                found.push(m.to_string());
                return Some(found);
            }
            _ => {}
        }
        state.insert(m, 1);
        path.push(m);
        for next in uses.get(m).into_iter().flatten() {
            // Only the crate's own modules: `crate::` may also name a macro or a re-export.
            if uses.contains_key(next) {
                if let Some(c) = walk(next, uses, state, path) {
                    return Some(c);
                }
            }
        }
        path.pop();
        state.insert(m, 2);
        None
    }
    uses.keys()
        .find_map(|m| walk(m, uses, &mut state, &mut Vec::new()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fence_sees_a_reach_into_the_core() {
        let code = code_only(
            "use crate::control::Ticker; // crate::error in prose\nuse crate::hprof::tags;",
        );
        assert_eq!(paths_after(&code, "crate::"), ["control", "hprof"]);
        assert_eq!(
            paths_after("pub(crate) fn f() {}", "crate::"),
            Vec::<&str>::new()
        );
        assert_eq!(paths_after("use super::{a, b};", "super::"), ["{"]);
    }

    #[test]
    fn groups_are_read_and_a_circle_is_found() {
        assert_eq!(
            modules_after("use crate::{a, b::{c, d}, e::F};", "crate::"),
            ["a", "b", "e"]
        );
        let dir = tempfile_dir();
        let write = |name: &str, text: &str| {
            let p = dir.join(name);
            fs::create_dir_all(p.parent().unwrap()).unwrap();
            fs::write(p, text).unwrap();
        };
        write(
            "lib.rs",
            "mod app;\nmod views;\nmod kept;\n#[cfg(test)]\nmod rows;",
        );
        write("app.rs", "use crate::kept::Kept;");
        write("kept.rs", "pub mod inner;\n// crate::app in prose");
        write("kept/inner.rs", "use super::super::views::page;");
        write("views.rs", "use super::{app::App, kept};");
        write("rows.rs", "use crate::app::App;");
        let uses = module_uses(&dir);
        assert_eq!(uses.keys().collect::<Vec<_>>(), ["app", "kept", "views"]);
        assert_eq!(
            circle(&uses),
            Some(["app", "kept", "views", "app"].map(String::from).to_vec())
        );
        write(
            "kept/inner.rs",
            "use super::Kept;\nfn f() {}\n#[cfg(test)]\nmod tests { use crate::views; }",
        );
        assert_eq!(circle(&module_uses(&dir)), None);
        fs::remove_dir_all(&dir).unwrap();
    }

    /// A directory of this test's own (no tempfile: this crate depends on nothing).
    fn tempfile_dir() -> std::path::PathBuf {
        let d = std::env::temp_dir().join(format!("layers-test-{}", std::process::id()));
        let _ = fs::remove_dir_all(&d);
        fs::create_dir_all(&d).unwrap();
        d
    }
}
