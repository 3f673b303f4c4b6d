//! Where a report of `analyze`, `diff` and `growth` goes (`-o`), decided before the work:
//! stdout, a device or pipe written through, a file that appears complete or not at all,
//! or (Matrix's output) a directory. Nothing the user had is put at risk by a report: an
//! input, a heap dump or a package is never replaced, another existing file only with
//! `--force`, and a Matrix directory keeps every entry but its own two.

use std::io::Write;
use std::path::{Path, PathBuf};

use hprof_shrink_core::output::same_file;

use crate::error::HostError;
use crate::sniff;

/// What a Matrix result directory holds; any other entry is the user's.
const MATRIX_ENTRIES: [&str; 2] = ["result.json", "buffer_contents"];

/// Where a report goes, as [`dest`] found it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Dest {
    Stdout,
    /// A character device or pipe (`/dev/null`, `/dev/stdout`, `>(cmd)`): written
    /// through, since a rename would replace the device itself.
    Through(PathBuf),
    /// A regular file, written beside and renamed into place.
    File(PathBuf),
}

/// `-o -`: standard output, as most tools read it.
pub fn is_stdout(out: &Path) -> bool {
    out.as_os_str() == "-"
}

/// Where a page (HTML) goes: `out`, or without one `default()`; `None` for stdout (`-o -`).
pub fn page_path(out: Option<&Path>, default: impl FnOnce() -> PathBuf) -> Option<PathBuf> {
    match out {
        Some(p) if is_stdout(p) => None,
        Some(p) => Some(p.to_path_buf()),
        None => Some(default()),
    }
}

/// Decides, before any work, where the report named `out` goes (`None` or `-`: stdout).
/// Refused: one of the `inputs` by any name (symlinks, `./`, hard links), an existing heap
/// dump or package (it may be the only copy of a leak: not even with `force`), another
/// existing file without `force`, and what cannot take a report (a directory, a socket, a
/// missing directory). Finding that after an analysis of minutes would waste them.
pub fn dest(out: Option<&Path>, inputs: &[&Path], force: bool) -> Result<Dest, HostError> {
    let Some(out) = out.filter(|o| !is_stdout(o)) else {
        return Ok(Dest::Stdout);
    };
    if let Some(input) = inputs.iter().find(|i| same_file(i, out)) {
        return Err(HostError::Core(hprof_shrink_core::Error::Invalid(format!(
            "the output {} is the input {}: it would be overwritten",
            out.display(),
            input.display()
        ))));
    }
    let meta = match std::fs::metadata(out) {
        Ok(m) => m,
        // Absent, or a symlink to nowhere (the rename replaces the link itself).
        Err(_) => {
            hprof_shrink_core::output::check_destination(out)?;
            return Ok(Dest::File(out.to_path_buf()));
        }
    };
    if meta.is_dir() {
        return Err(HostError::Usage(format!(
            "the output {} is a directory: give a file name (or - for stdout)",
            out.display()
        )));
    }
    if written_through(out, &meta) {
        return Ok(Dest::Through(out.to_path_buf()));
    }
    if !meta.is_file() {
        return Err(HostError::Usage(format!(
            "the output {} is neither a file, a character device nor a pipe",
            out.display()
        )));
    }
    if sniff::is_heap_dump(out) || sniff::is_zip(out) {
        return Err(HostError::ReportOverDump(out.to_path_buf()));
    }
    if !force {
        return Err(HostError::Exists(out.to_path_buf()));
    }
    Ok(Dest::File(out.to_path_buf()))
}

/// A character device or pipe, or a name under `/dev/` or `/proc/` (`/dev/stdout` leads to
/// whatever stdout is, a regular file too, which only writing through reaches).
fn written_through(out: &Path, meta: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::FileTypeExt;
    let t = meta.file_type();
    t.is_char_device() || t.is_fifo() || out.starts_with("/dev") || out.starts_with("/proc")
}

/// `text` to where [`dest`] decided: complete or not at all for a file.
pub fn emit(dest: &Dest, text: &str) -> Result<(), HostError> {
    match dest {
        Dest::Stdout => Ok(crate::say::out(text)?),
        Dest::Through(path) => {
            let mut f = std::fs::OpenOptions::new()
                .append(true)
                .open(path)
                .map_err(|e| HostError::io(path, e))?;
            f.write_all(text.as_bytes())
                .map_err(|e| HostError::io(path, e))
        }
        Dest::File(path) => crate::json::write_text(path, text),
    }
}

/// A page (HTML) to `dest`, saying where when it is a file.
pub fn emit_page(dest: &Dest, text: &str) -> Result<(), HostError> {
    emit(dest, text)?;
    if let Dest::File(path) | Dest::Through(path) = dest {
        crate::say!("wrote {}", path.display());
    }
    Ok(())
}

/// `NAME.EXT` in the current directory, NAME being the input's file name up to its first
/// dot (`dump.hprof.gz` → `dump.html`), `fallback` when it has none.
pub fn beside(input: &Path, ext: &str, fallback: &str) -> PathBuf {
    let name = input
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| fallback.into());
    let stem = name
        .split('.')
        .next()
        .filter(|s| !s.is_empty())
        .unwrap_or(fallback);
    PathBuf::from(format!("{stem}.{ext}"))
}

/// Decides, before any work, the directory Matrix's output goes to, resolved once (its
/// name followed through links and `..`) so that what is checked is what is written.
/// Refused: `-`, what exists and is no directory, a directory holding an input (always),
/// and one holding anything besides `result.json` and `buffer_contents/` without
/// `force`; with it, only those two entries are replaced.
pub fn matrix_dir(dir: &Path, inputs: &[&Path], force: bool) -> Result<PathBuf, HostError> {
    if is_stdout(dir) {
        return Err(HostError::Usage(
            "--format matrix writes a directory (result.json and pictures): give -o DIR, not -o -"
                .into(),
        ));
    }
    let resolved = resolve(dir).map_err(|e| HostError::io(dir, e))?;
    for input in inputs {
        let inside = input.canonicalize().is_ok_and(|i| i.starts_with(&resolved));
        if inside
            || MATRIX_ENTRIES
                .iter()
                .any(|e| same_file(input, &resolved.join(e)))
        {
            return Err(HostError::Core(hprof_shrink_core::Error::Invalid(format!(
                "the output directory {} holds the input {}: not writing into it",
                dir.display(),
                input.display()
            ))));
        }
    }
    let entries = match std::fs::read_dir(&resolved) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(resolved),
        Err(e) if e.kind() == std::io::ErrorKind::NotADirectory => {
            return Err(HostError::Usage(format!(
                "the output {} exists and is not a directory: --format matrix writes a directory",
                dir.display()
            )))
        }
        Err(e) => return Err(HostError::io(dir, e)),
    };
    let mut others = Vec::new();
    for entry in entries {
        let name = entry.map_err(|e| HostError::io(dir, e))?.file_name();
        if !MATRIX_ENTRIES.iter().any(|m| name == *m) {
            others.push(name.to_string_lossy().into_owned());
        }
    }
    if !others.is_empty() && !force {
        others.sort();
        let shown = others.len().min(3);
        return Err(HostError::NotMatrixDir {
            dir: dir.to_path_buf(),
            others: format!(
                "{}{}",
                others[..shown].join(", "),
                if others.len() > shown {
                    format!(" and {} more", others.len() - shown)
                } else {
                    String::new()
                }
            ),
        });
    }
    Ok(resolved)
}

/// `dir` made absolute and followed where it exists; where it does not, its nearest
/// existing ancestor is followed and the rest appended.
fn resolve(dir: &Path) -> std::io::Result<PathBuf> {
    let absolute = std::path::absolute(dir)?;
    let mut missing = Vec::new();
    let mut at = absolute.as_path();
    loop {
        match at.canonicalize() {
            Ok(found) => {
                return Ok(missing
                    .iter()
                    .rev()
                    .fold(found, |p: PathBuf, name| p.join(name)))
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
        match (at.parent(), at.file_name()) {
            (Some(parent), Some(name)) => {
                missing.push(name.to_os_string());
                at = parent;
            }
            // `..` past a missing directory: nothing to follow; taken as written.
            _ => return Ok(absolute),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn devices_and_pipes_are_written_through_and_directories_refused_as_usage() {
        assert_eq!(
            dest(Some(Path::new("/dev/null")), &[], false).unwrap(),
            Dest::Through("/dev/null".into())
        );
        let dir = tempfile::tempdir().unwrap();
        let e = dest(Some(dir.path()), &[], false).unwrap_err();
        assert_eq!(e.exit_code(), crate::error::EXIT_USAGE, "{e}");
    }

    #[test]
    fn an_existing_report_needs_force_and_a_dump_or_package_is_never_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let report = dir.path().join("old.json");
        std::fs::write(&report, "{}").unwrap();
        assert!(matches!(
            dest(Some(&report), &[], false),
            Err(HostError::Exists(_))
        ));
        assert_eq!(
            dest(Some(&report), &[], true).unwrap(),
            Dest::File(report.clone())
        );
        let dump = dir.path().join("other.hprof");
        std::fs::write(&dump, b"JAVA PROFILE 1.0.2\0rest").unwrap();
        let zip = dir.path().join("some.zip");
        std::fs::write(&zip, b"PK\x03\x04rest").unwrap();
        for p in [&dump, &zip] {
            assert!(
                matches!(dest(Some(p), &[], true), Err(HostError::ReportOverDump(_))),
                "{}",
                p.display()
            );
        }
    }

    #[test]
    fn a_matrix_directory_with_other_entries_or_an_input_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out");
        std::fs::create_dir_all(out.join("buffer_contents")).unwrap();
        std::fs::write(out.join("result.json"), "{}").unwrap();
        let input = dir.path().join("x.hprof");
        std::fs::write(&input, b"JAVA PROFILE 1.0.2\0").unwrap();
        // An earlier result: replaced without --force.
        assert_eq!(
            matrix_dir(&out, &[&input], false).unwrap(),
            out.canonicalize().unwrap()
        );
        std::fs::write(out.join("notes.txt"), "mine").unwrap();
        assert!(matches!(
            matrix_dir(&out, &[&input], false),
            Err(HostError::NotMatrixDir { .. })
        ));
        assert!(matrix_dir(&out, &[&input], true).is_ok());
        // The directory holding the input: never, by any name.
        for name in [dir.path().to_path_buf(), out.join("..")] {
            let e = matrix_dir(&name, &[&input], true).unwrap_err();
            assert!(e.to_string().contains("holds the input"), "{e}");
        }
    }

    #[test]
    fn a_missing_matrix_directory_resolves_under_its_existing_ancestor() {
        let dir = tempfile::tempdir().unwrap();
        let want = dir.path().canonicalize().unwrap().join("a").join("b");
        assert_eq!(
            matrix_dir(&dir.path().join("a/./b"), &[], false).unwrap(),
            want
        );
    }
}
