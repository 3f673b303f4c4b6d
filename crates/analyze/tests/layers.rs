//! The analyzer's rooms depend one way: each folder of `src/` uses only the rooms below
//! it (lib.rs's doc lists them), never the crate root's re-exports, and no two files
//! import each other, directly or round a circle. Reads the sources, as
//! `dependencies.rs` asks cargo: a new `use` that breaks a rule fails here.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// The rooms, bottom first: a room may use the rooms of a lower rank and its own.
const RANKS: &[(&str, u8)] = &[
    ("base", 0),
    ("model", 1),
    ("heap", 2),
    ("knowledge", 3),
    ("sizes", 4),
    ("paths", 5),
    ("report", 6),
    ("run", 7),
    ("compare", 8),
    ("render", 9),
    ("gate", 10),
];

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// Every source file under `dir`, as (path from src/ without `.rs`, code without comments).
fn files(dir: &Path, out: &mut Vec<(String, String)>) {
    for e in fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            let rel = p.strip_prefix(src()).unwrap().with_extension("");
            let name = rel.to_string_lossy().replace('\\', "/");
            out.push((name, code_only(&fs::read_to_string(&p).unwrap())));
        }
    }
}

/// The text with `//` comments (doc comments included) cut off each line, so prose that
/// names a path does not count as a use of it.
fn code_only(text: &str) -> String {
    text.lines()
        .map(|l| l.split("//").next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Every `crate::` path in `code`, as its segments (a group `{a, b}` is cut at its brace).
fn crate_paths(code: &str) -> Vec<Vec<&str>> {
    code.match_indices("crate::")
        .filter(|(at, _)| {
            code[..*at]
                .chars()
                .next_back()
                .is_none_or(|c| !(c.is_alphanumeric() || c == '_'))
        })
        .map(|(at, _)| {
            let rest = &code[at + "crate::".len()..];
            let end = rest
                .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':'))
                .unwrap_or(rest.len());
            rest[..end].split("::").filter(|s| !s.is_empty()).collect()
        })
        .collect()
}

fn rank(room: &str) -> Option<u8> {
    RANKS.iter().find(|(r, _)| *r == room).map(|r| r.1)
}

/// The room of a file (`heap/graph` → `heap`); lib.rs is the front door, in none.
fn room_of(file: &str) -> Option<&str> {
    file.split_once('/').map(|(room, _)| room)
}

fn sources() -> Vec<(String, String)> {
    let mut out = Vec::new();
    files(&src(), &mut out);
    out.sort();
    assert!(out.len() > 40, "read too few files: {}", out.len());
    out
}

#[test]
fn every_room_is_ranked_and_uses_only_rooms_below_it() {
    let mut bad = Vec::new();
    for (file, code) in sources() {
        let Some(room) = room_of(&file) else {
            continue;
        };
        let mine = rank(room).unwrap_or_else(|| {
            panic!("src/{room}/ has no rank in tests/layers.rs: place it among the rooms")
        });
        for path in crate_paths(&code) {
            let first = path.first().copied().unwrap_or("");
            match rank(first) {
                Some(r) if r <= mine => {}
                Some(_) => bad.push(format!(
                    "{file}.rs uses crate::{} (a room above)",
                    path.join("::")
                )),
                None => bad.push(format!(
                    "{file}.rs uses crate::{} (the crate root's re-export, not a room)",
                    path.join("::")
                )),
            }
        }
        if code.contains("super::super::super::") {
            bad.push(format!("{file}.rs reaches three levels up with super::"));
        }
    }
    assert!(
        bad.is_empty(),
        "the rooms must depend one way:\n{}",
        bad.join("\n")
    );
}

/// The file a `crate::` path names: the longest prefix of its segments that is a file.
fn file_named<'a>(path: &[&str], known: &'a BTreeSet<String>) -> Option<&'a String> {
    (1..=path.len()).rev().find_map(|k| {
        let p = path[..k].join("/");
        known.get(&p).or_else(|| known.get(&format!("{p}/mod")))
    })
}

#[test]
fn no_two_files_import_each_other_round_a_circle() {
    let files = sources();
    let known: BTreeSet<String> = files.iter().map(|(f, _)| f.clone()).collect();
    let mut uses: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for (file, code) in &files {
        if room_of(file).is_none() {
            continue;
        }
        let to: BTreeSet<&str> = crate_paths(code)
            .iter()
            .filter_map(|p| file_named(p, &known))
            .map(String::as_str)
            // A room's mod.rs declares its files; that is not a use of them.
            .filter(|t| !file.ends_with("/mod") || room_of(t) != room_of(file))
            .filter(|t| *t != file)
            .collect();
        uses.insert(file, to);
    }
    // Depth-first search for a back edge.
    fn visit<'a>(
        f: &'a str,
        uses: &BTreeMap<&'a str, BTreeSet<&'a str>>,
        state: &mut BTreeMap<&'a str, u8>,
        stack: &mut Vec<&'a str>,
    ) -> Option<Vec<&'a str>> {
        match state.get(f) {
            Some(2) => return None,
            Some(1) => {
                let at = stack.iter().position(|s| *s == f).unwrap_or(0);
                let mut circle = stack[at..].to_vec();
                circle.push(f);
                return Some(circle);
            }
            _ => {}
        }
        state.insert(f, 1);
        stack.push(f);
        for &t in uses.get(f).into_iter().flatten() {
            if let Some(c) = visit(t, uses, state, stack) {
                return Some(c);
            }
        }
        stack.pop();
        state.insert(f, 2);
        None
    }
    let mut state = BTreeMap::new();
    for &f in uses.keys() {
        if let Some(circle) = visit(f, &uses, &mut state, &mut Vec::new()) {
            panic!(
                "files import each other round a circle: {}",
                circle.join(" -> ")
            );
        }
    }
}

#[test]
fn the_front_door_holds_no_pipeline() {
    let lib = fs::read_to_string(src().join("lib.rs")).unwrap();
    let lines = lib.lines().count();
    assert!(
        lines < 150,
        "lib.rs is {lines} lines: the pipeline belongs in src/run/"
    );
    let code = code_only(&lib);
    assert!(
        !code.contains("fn "),
        "lib.rs declares rooms and re-exports the public API; a function belongs in a room"
    );
}
