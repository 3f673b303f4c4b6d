//! Results out: reports written to a file (`--report`), results printed (`--json`), a
//! command's output to `-o FILE` or stdout, and the default name of a page it writes.

use std::io::Write;
use std::path::{Path, PathBuf};

use hprof_shrink_core::output::PendingFile;
use serde::Serialize;

use crate::error::HostError;

/// Writes `value` as pretty JSON to `path`; the file appears only when complete.
pub fn write(path: &Path, value: &impl Serialize) -> Result<(), HostError> {
    write_text(path, &(serde_json::to_string_pretty(value)? + "\n"))
}

/// Writes `text` to `path`; the file appears only when complete.
pub fn write_text(path: &Path, text: &str) -> Result<(), HostError> {
    let mut f = PendingFile::create(path)?;
    f.file()
        .write_all(text.as_bytes())
        .map_err(|e| HostError::io(path, e))?;
    f.commit()?;
    Ok(())
}

/// Writes `value` as pretty JSON to `path` through `file`, made for it beforehand.
pub fn write_pending(
    mut file: PendingFile,
    path: &Path,
    value: &impl Serialize,
) -> Result<(), HostError> {
    let json = serde_json::to_string_pretty(value)? + "\n";
    file.file()
        .write_all(json.as_bytes())
        .map_err(|e| HostError::io(path, e))?;
    file.commit()?;
    Ok(())
}

/// Prints `value` as pretty JSON on stdout.
pub fn print(value: &impl Serialize) -> Result<(), HostError> {
    crate::say::out(&(serde_json::to_string_pretty(value)? + "\n"))?;
    Ok(())
}

/// `-o -`: standard output, as most tools read it.
pub fn is_stdout(out: &Path) -> bool {
    out.as_os_str() == "-"
}

/// `text` to `out` (complete or not at all) or, without one or with `-`, to stdout.
pub fn emit(out: Option<&Path>, text: &str) -> Result<(), HostError> {
    match out {
        Some(path) if !is_stdout(path) => write_text(path, text),
        _ => Ok(crate::say::out(text)?),
    }
}

/// Where a page (HTML) goes: `out`, or without one `default()`; `None` for stdout (`-o -`).
pub fn page_path(out: Option<&Path>, default: impl FnOnce() -> PathBuf) -> Option<PathBuf> {
    match out {
        Some(p) if is_stdout(p) => None,
        Some(p) => Some(p.to_path_buf()),
        None => Some(default()),
    }
}

/// A page (HTML) to `path` (see [`page_path`]), saying where, or to stdout.
pub fn emit_page(path: Option<&Path>, text: &str) -> Result<(), HostError> {
    let Some(path) = path else {
        return Ok(crate::say::out(text)?);
    };
    write_text(path, text)?;
    crate::say!("wrote {}", path.display());
    Ok(())
}

/// Refuses, before any work, an output file that is one of the `inputs` (through
/// symlinks, `./` and hard links: the report would replace a heap dump), or that cannot
/// be written (a directory or device in its place, or its directory missing). Finding
/// that after an analysis of minutes would waste them.
pub fn check_output(out: Option<&Path>, inputs: &[&Path]) -> Result<(), HostError> {
    let Some(out) = out.filter(|o| !is_stdout(o)) else {
        return Ok(());
    };
    if let Some(input) = inputs
        .iter()
        .find(|i| hprof_shrink_core::output::same_file(i, out))
    {
        return Err(HostError::Core(hprof_shrink_core::Error::Invalid(format!(
            "the output {} is the input {}: it would be overwritten",
            out.display(),
            input.display()
        ))));
    }
    hprof_shrink_core::output::check_destination(out)?;
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
