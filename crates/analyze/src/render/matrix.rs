//! Matrix's output (`CLIMain`): `result.json` with `activityLeakResult`,
//! `duplicatedBitmapResult` and `extraInfo`, and each duplicated buffer's picture under
//! `buffer_contents/`, in a directory.

use std::path::Path;

use serde_json::{json, Value};

use crate::model::{Analysis, Trace};

/// Matrix's reference chain: one `Class field` string per reference, then the object; the
/// steps a long trace leaves out stand as one string, `… N steps left out …`.
fn chain(t: &Trace) -> Vec<String> {
    t.shown_steps()
        .into_iter()
        .map(|s| match s {
            Some(s) => match &s.reference {
                Some(r) => format!("{} {}", s.class_name, r.name),
                None => s.class_name.clone(),
            },
            None => super::omitted_steps_text(t.omitted_steps),
        })
        .collect()
}

/// Matrix's `result.json` for the analysis: its first leak, its duplicate bitmaps and the
/// package's `extra.info`; `duration_ms` is written as both results' duration.
pub fn result_json(a: &Analysis, duration_ms: u64) -> Value {
    let leak = a.leaks.first();
    let activity = json!({
        "leakFound": leak.is_some(),
        "excludedLeak": leak.is_some_and(|l| l.library_leak.is_some()),
        "className": leak.map(|l| l.class_name.clone()).unwrap_or_default(),
        "referenceChain": leak.map(|l| chain(&l.trace)).unwrap_or_default(),
        "retainedSize": leak.map(|l| l.retained_bytes),
        "signature": leak.map(|l| l.signature.clone()),
        "analysisDurationMs": duration_ms,
        "failure": Value::Null,
    });
    let entries: Vec<Value> = a
        .duplicate_bitmaps
        .iter()
        .map(|g| {
            json!({
                "bufferHash": g.hash,
                "width": g.width,
                "height": g.height,
                "bufferSize": g.buffer_bytes,
                "count": g.count,
                "referenceChains": g.instances.iter().filter_map(|i| i.trace.as_ref().map(chain)).collect::<Vec<_>>(),
            })
        })
        .collect();
    let bitmaps = json!({
        "targetFound": !entries.is_empty(),
        "duplicatedBitmapEntries": entries,
        "analyzeDurationMs": duration_ms,
        "mFailure": Value::Null,
    });
    let extra: serde_json::Map<String, Value> = a
        .input
        .extra
        .iter()
        .map(|(k, v)| (k.clone(), Value::String(v.clone())))
        .collect();
    json!({
        "activityLeakResult": activity,
        "duplicatedBitmapResult": bitmaps,
        "extraInfo": extra,
    })
}

/// Writes `result.json` and `buffer_contents/*` into `dir` (made, with its parents, if
/// missing), touching nothing else there.
///
/// Both are made whole first: a failure (a full disk) leaves no half result, and a result
/// written over another keeps none of the other's pictures. A missing `dir` is made beside
/// and renamed into place; an existing one is never moved (it may hold the user's files,
/// or be the current directory): its two entries are replaced one by one.
pub fn write_dir(
    dir: &Path,
    a: &Analysis,
    pictures: &[(String, Vec<u8>)],
    duration_ms: u64,
) -> std::io::Result<()> {
    let result = Made {
        analysis: a,
        pictures,
        duration_ms,
    };
    if std::fs::metadata(dir).is_ok_and(|m| m.is_dir()) {
        return replace_in(dir, &result);
    }
    let parent = match dir.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    std::fs::create_dir_all(parent)?;
    let staged = tempfile::Builder::new()
        .prefix(".matrix-")
        .tempdir_in(parent)?;
    result.write(staged.path())?;
    std::fs::rename(staged.path(), dir)?;
    // Renamed away: nothing is left for the guard to remove.
    drop(staged);
    Ok(())
}

/// A result to write: what `write_dir` was given.
struct Made<'a> {
    analysis: &'a Analysis,
    pictures: &'a [(String, Vec<u8>)],
    duration_ms: u64,
}

impl Made<'_> {
    /// `result.json` and `buffer_contents/` into the empty directory `at`.
    fn write(&self, at: &Path) -> std::io::Result<()> {
        std::fs::create_dir(at.join("buffer_contents"))?;
        let json = result_json(self.analysis, self.duration_ms);
        let mut text = serde_json::to_string_pretty(&json).expect("serializes");
        text.push('\n');
        std::fs::write(at.join("result.json"), text)?;
        for (name, bytes) in self.pictures {
            std::fs::write(at.join("buffer_contents").join(name), bytes)?;
        }
        Ok(())
    }
}

/// Replaces `dir/buffer_contents` and `dir/result.json` with a result made inside `dir`
/// (one file system, so each step is a rename); the old pictures are put back if the new
/// ones cannot go in.
fn replace_in(dir: &Path, result: &Made<'_>) -> std::io::Result<()> {
    let staged = tempfile::Builder::new()
        .prefix(".matrix-new-")
        .tempdir_in(dir)?;
    result.write(staged.path())?;
    let pictures = dir.join("buffer_contents");
    let old = staged.path().join("old");
    let had_old = match std::fs::rename(&pictures, &old) {
        Ok(()) => true,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => false,
        Err(e) => return Err(e),
    };
    if let Err(e) = std::fs::rename(staged.path().join("buffer_contents"), &pictures) {
        if had_old {
            let _ = std::fs::rename(&old, &pictures);
        }
        return Err(e);
    }
    std::fs::rename(staged.path().join("result.json"), dir.join("result.json"))?;
    // The old pictures go with the staging directory.
    drop(staged);
    Ok(())
}
