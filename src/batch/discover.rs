//! Finding the inputs of a batch: files, directories (recursively) and glob patterns;
//! each file is told apart by its first bytes, not its name, and what is not a heap dump
//! is reported and skipped.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::Read;
use std::path::{Path, PathBuf};

use hprof_shrink_core::kind::FileKind;
use md5::{Digest, Md5};

use super::InputsError;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Hprof,
    /// A gzipped dump: decompressed to a temporary file first.
    HprofGz,
    /// A package (ours or Matrix's): its hprof entry is shrunk again, its manifest kept.
    Zip,
}

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Kind::Hprof => "hprof",
            Kind::HprofGz => "hprof.gz",
            Kind::Zip => "zip",
        }
    }
}

#[derive(Debug, Clone)]
pub struct Input {
    pub path: PathBuf,
    pub kind: Kind,
    pub bytes: u64,
    /// Where its package goes, relative to the output directory.
    pub out_rel: PathBuf,
}

#[derive(Debug, Clone)]
pub struct Skipped {
    pub path: PathBuf,
    pub reason: String,
}

#[derive(Debug, Default)]
pub struct Found {
    pub inputs: Vec<Input>,
    pub skipped: Vec<Skipped>,
    /// Entries that could not be read (a dangling symlink, a loop, an unreadable file or
    /// directory): failures of that entry alone, the rest of the batch runs.
    pub failed: Vec<Skipped>,
}

/// What the first bytes of a file say it is.
enum Class {
    Dump(Kind),
    NotADump(String),
    Unreadable(String),
}

/// Reads the first bytes of a file to see what it is.
fn classify(path: &Path) -> Class {
    let mut head = [0u8; FileKind::PREFIX_LEN];
    // Without blocking: a FIFO matched by a glob is refused, not waited on.
    let read = hprof_shrink_core::hprof::open_regular(path).and_then(|mut f| f.read(&mut head));
    let n = match read {
        Ok(n) => n,
        Err(e) => return Class::Unreadable(format!("cannot read it: {e}")),
    };
    match FileKind::of(&head[..n]) {
        FileKind::Hprof => Class::Dump(Kind::Hprof),
        FileKind::Gzip => Class::Dump(Kind::HprofGz),
        FileKind::Zip => Class::Dump(Kind::Zip),
        // An empty zip holds no dump to shrink; a trace's heap graph is analyzed, not shrunk.
        FileKind::EmptyZip | FileKind::Trace | FileKind::Other if n > 0 => {
            Class::NotADump("not a heap dump (no HPROF, gzip or zip header)".into())
        }
        FileKind::EmptyZip | FileKind::Trace | FileKind::Other => {
            Class::NotADump("empty file".into())
        }
    }
}

/// The output name for an input: its path below the root it was found under, with the
/// dump extensions replaced by `.zip`.
fn out_name(rel: &Path) -> PathBuf {
    let name = rel
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let stem = [".hprof.gz", ".gz", ".hprof", ".zip"]
        .iter()
        .find_map(|ext| name.strip_suffix(ext))
        .unwrap_or(&name);
    rel.with_file_name(format!("{stem}.zip"))
}

fn has_glob_chars(s: &str) -> bool {
    s.contains(['*', '?', '['])
}

/// The shard a path falls in: MD5 of its text, as a number, modulo `n`.
pub fn shard_of(path: &Path, n: u32) -> u32 {
    let d = Md5::digest(path.to_string_lossy().as_bytes());
    let v = u64::from_be_bytes([d[0], d[1], d[2], d[3], d[4], d[5], d[6], d[7]]);
    (v % n as u64) as u32
}

/// Expands `args` into inputs (sorted by path, each once), skipped files and entries that
/// could not be read. An argument that matches nothing is an error naming it. Directories
/// in `exclude` (the batch's own output directory and outbox) are not searched, so a batch
/// never takes its own packages for inputs.
pub fn discover(args: &[String], exclude: &[PathBuf]) -> Result<Found, InputsError> {
    let exclude: Vec<PathBuf> = exclude
        .iter()
        .filter_map(|d| d.canonicalize().ok())
        .collect();
    let excluded =
        |p: &Path| !exclude.is_empty() && p.canonicalize().is_ok_and(|c| exclude.contains(&c));
    // path → name below its root
    let mut files: BTreeMap<PathBuf, PathBuf> = BTreeMap::new();
    let mut failed: Vec<Skipped> = Vec::new();
    let mut add_dir = |dir: &Path, files: &mut BTreeMap<PathBuf, PathBuf>| {
        let walk = walkdir::WalkDir::new(dir)
            .follow_links(true)
            .sort_by_file_name()
            .into_iter()
            .filter_entry(|e| !(e.file_type().is_dir() && excluded(e.path())));
        for entry in walk {
            match entry {
                Ok(entry) if entry.file_type().is_file() => {
                    let rel = entry.path().strip_prefix(dir).unwrap_or(entry.path());
                    files
                        .entry(entry.path().to_path_buf())
                        .or_insert_with(|| rel.to_path_buf());
                }
                Ok(_) => {}
                // One bad entry (a dangling symlink, a loop, an unreadable directory) fails
                // alone.
                Err(e) => {
                    let path = e.path().unwrap_or(dir).to_path_buf();
                    let reason = match (e.loop_ancestor(), e.io_error()) {
                        (Some(a), _) => format!("a symlink loop back to {}", a.display()),
                        (None, Some(io)) if io.kind() == std::io::ErrorKind::NotFound => {
                            "a dangling symlink (its target does not exist)".to_string()
                        }
                        (None, Some(io)) => format!("cannot read it: {io}"),
                        (None, None) => e.to_string(),
                    };
                    failed.push(Skipped { path, reason });
                }
            }
        }
    };
    for arg in args {
        let path = PathBuf::from(arg);
        if path.is_dir() {
            add_dir(&path, &mut files);
        } else if path.is_file() {
            let name = PathBuf::from(path.file_name().unwrap_or_default());
            files.entry(path).or_insert(name);
        } else if has_glob_chars(arg) {
            let matches = glob::glob(arg).map_err(|e| InputsError::Pattern(arg.clone(), e))?;
            let mut any = false;
            for m in matches {
                let m = m.map_err(|e| InputsError::Glob(arg.clone(), e))?;
                any = true;
                if m.is_dir() {
                    add_dir(&m, &mut files);
                } else {
                    let name = PathBuf::from(m.file_name().unwrap_or_default());
                    files.entry(m).or_insert(name);
                }
            }
            if !any {
                return Err(InputsError::NoMatch { arg: arg.clone() });
            }
        } else {
            return Err(InputsError::NoSuchPath { arg: arg.clone() });
        }
    }

    let mut found = Found {
        failed,
        ..Found::default()
    };
    let mut seen = HashSet::new();
    for (path, rel) in files {
        // The same file reached twice (a directory and a glob, a symlink) counts once.
        let canonical = path.canonicalize().unwrap_or_else(|_| path.clone());
        if !seen.insert(canonical) {
            continue;
        }
        let name = rel
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        if name.starts_with('.')
            && (name.ends_with(hprof_shrink_core::output::TEMP_SUFFIX)
                || name.ends_with(super::state::SUFFIX))
        {
            continue; // a temporary file or a package's state, of ours
        }
        match classify(&path) {
            Class::Dump(kind) => {
                let bytes = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
                found.inputs.push(Input {
                    out_rel: out_name(&rel),
                    path,
                    kind,
                    bytes,
                });
            }
            Class::NotADump(reason) => found.skipped.push(Skipped { path, reason }),
            Class::Unreadable(reason) => found.failed.push(Skipped { path, reason }),
        }
    }
    Ok(found)
}

/// Gives every input its own package name. A name belongs to the input the existing
/// package there was made from (`owner` reads that from the package's state, as a
/// canonical path): another input that would write it (`x.hprof` and `x.hprof.gz`, the
/// same name below two roots, or an input that came after the owner was deleted) gets a
/// suffix from its own path instead. Without a package there, the first by path takes the
/// name. So a name never moves to another input when inputs come or go.
pub fn resolve_collisions(inputs: &mut [Input], owner: impl Fn(&Path) -> Option<PathBuf>) {
    let mut groups: HashMap<PathBuf, Vec<usize>> = HashMap::new();
    for (i, input) in inputs.iter().enumerate() {
        groups.entry(input.out_rel.clone()).or_default().push(i);
    }
    for (rel, members) in groups {
        let recorded = owner(&rel);
        let canonical = |i: usize| inputs[i].path.canonicalize().ok();
        let keeper = match &recorded {
            Some(o) => members
                .iter()
                .copied()
                .find(|&i| canonical(i).as_deref() == Some(o.as_path()) || inputs[i].path == *o),
            None => members.first().copied(),
        };
        for i in members.into_iter().filter(|&i| Some(i) != keeper) {
            let d = Md5::digest(inputs[i].path.to_string_lossy().as_bytes());
            let stem = rel
                .file_stem()
                .unwrap_or_default()
                .to_string_lossy()
                .into_owned();
            inputs[i].out_rel = rel.with_file_name(format!("{stem}-{}.zip", hex::encode(&d[..4])));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input(path: &str) -> Input {
        Input {
            path: PathBuf::from(path),
            kind: Kind::Hprof,
            bytes: 0,
            out_rel: out_name(Path::new(Path::new(path).file_name().unwrap())),
        }
    }

    #[test]
    fn a_package_name_stays_with_its_owner_when_inputs_are_added() {
        // Run 1: only b/leak.hprof; it gets the plain name.
        let mut one = vec![input("b/leak.hprof")];
        resolve_collisions(&mut one, |_| None);
        assert_eq!(one[0].out_rel, Path::new("leak.zip"));
        // Run 2: a/leak.hprof sorts first, but leak.zip's state names b/leak.hprof.
        let mut two = vec![input("a/leak.hprof"), input("b/leak.hprof")];
        resolve_collisions(&mut two, |_| Some(PathBuf::from("b/leak.hprof")));
        // Run 3: the owner is gone; the other input does not take its name.
        let mut alone = vec![input("a/leak.hprof")];
        resolve_collisions(&mut alone, |_| Some(PathBuf::from("b/leak.hprof")));
        assert_ne!(alone[0].out_rel, Path::new("leak.zip"));
        assert_eq!(two[1].out_rel, Path::new("leak.zip"));
        assert_ne!(two[0].out_rel, Path::new("leak.zip"));
        // The suffix depends only on the input's own path.
        let mut three = vec![
            input("a/leak.hprof"),
            input("b/leak.hprof"),
            input("c/leak.hprof"),
        ];
        resolve_collisions(&mut three, |_| Some(PathBuf::from("b/leak.hprof")));
        assert_eq!(three[0].out_rel, two[0].out_rel);
        assert_eq!(three[1].out_rel, Path::new("leak.zip"));
        let names: HashSet<_> = three.iter().map(|i| i.out_rel.clone()).collect();
        assert_eq!(names.len(), 3);
    }

    #[test]
    fn output_names() {
        assert_eq!(out_name(Path::new("a/b.hprof")), Path::new("a/b.zip"));
        assert_eq!(out_name(Path::new("b.hprof.gz")), Path::new("b.zip"));
        assert_eq!(
            out_name(Path::new("x/result.zip")),
            Path::new("x/result.zip")
        );
        assert_eq!(out_name(Path::new("dump")), Path::new("dump.zip"));
    }

    #[test]
    fn shards_split_paths_and_are_stable() {
        let paths: Vec<PathBuf> = (0..1000)
            .map(|i| PathBuf::from(format!("d/{i}.hprof")))
            .collect();
        let mut sizes = [0; 4];
        for p in &paths {
            let s = shard_of(p, 4);
            assert_eq!(s, shard_of(p, 4));
            sizes[s as usize] += 1;
        }
        assert!(sizes.iter().all(|&n| n > 200), "{sizes:?}");
    }
}
