//! Results out as JSON: reports written to a file (`--report`), results printed (`--json`).
//! Where `-o` of analyze, diff and growth goes is `report_out`'s.

use std::io::Write;
use std::path::Path;

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
