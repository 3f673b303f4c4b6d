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
/// missing).
///
/// The directory is made whole beside `dir`, then put in its place: a failure (a full
/// disk) leaves no half result, and a result written over another leaves none of the
/// other's pictures.
pub fn write_dir(
    dir: &Path,
    a: &Analysis,
    pictures: &[(String, Vec<u8>)],
    duration_ms: u64,
) -> std::io::Result<()> {
    let parent = match dir.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    std::fs::create_dir_all(parent)?;
    let staged = tempfile::Builder::new()
        .prefix(".matrix-")
        .tempdir_in(parent)?;
    let at = staged.path();
    std::fs::create_dir(at.join("buffer_contents"))?;
    let mut text = serde_json::to_string_pretty(&result_json(a, duration_ms)).expect("serializes");
    text.push('\n');
    std::fs::write(at.join("result.json"), text)?;
    for (name, bytes) in pictures {
        std::fs::write(at.join("buffer_contents").join(name), bytes)?;
    }
    if std::fs::symlink_metadata(dir).is_ok_and(|m| m.is_dir()) {
        // The old result moves aside (a directory cannot be renamed over a full one),
        // and goes once the new one is in place.
        let old = tempfile::Builder::new()
            .prefix(".matrix-old-")
            .tempdir_in(parent)?;
        let aside = old.path().join("result");
        std::fs::rename(dir, &aside)?;
        if let Err(e) = std::fs::rename(at, dir) {
            // Put back as it was.
            let _ = std::fs::rename(&aside, dir);
            return Err(e);
        }
        drop(old);
    } else {
        std::fs::rename(at, dir)?;
    }
    // Renamed away: nothing is left for the guard to remove.
    drop(staged);
    Ok(())
}
