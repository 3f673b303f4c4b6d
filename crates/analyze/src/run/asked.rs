//! What the options and the package ask of an analysis: which heap dump of the file, which
//! key to look for, and what the analysis says of its input.

use std::path::Path;

use super::Options;
use crate::base::error::AnalyzeError;
use crate::heap::input;
use crate::model::InputSummary;

/// What the analysis says of its input.
pub fn input_summary(input: &input::Input, path: &Path) -> InputSummary {
    InputSummary {
        path: path.display().to_string(),
        kind: input.kind.into(),
        manifest: input.manifest.clone(),
        extra: input.extra.clone(),
        shrunk: input.shrunk,
        private: input.private,
    }
}

/// Which of the file's `found` heap dumps to analyze, from 1: the one `asked`, else the
/// last; a note says so when there are several.
pub fn choose_dump(
    found: usize,
    asked: Option<usize>,
    notes: &mut Vec<String>,
) -> Result<usize, AnalyzeError> {
    let chosen = match asked {
        Some(k) if k == 0 || k > found.max(1) => {
            return Err(AnalyzeError::NoSuchDump { asked: k, found })
        }
        Some(k) => k,
        None => found.max(1),
    };
    if found > 1 {
        notes.push(format!(
            "the file holds {} heap dumps, one after another; this is dump {chosen}{}",
            found,
            if asked.is_none() { ", the last" } else { "" }
        ));
    }
    Ok(chosen)
}

/// What the options and the package ask to look for.
pub struct Asked {
    /// The key (see [`leak_key`]).
    pub key: Option<String>,
    /// Every leaking object, whatever LeakCanary watched (`--all-leaks`).
    pub all_leaks: bool,
    /// Said when the package's key is the placeholder.
    pub note: Option<String>,
}

/// The key to look for, and a note when the package's key is the placeholder its writer
/// puts when it knew none: `--key`; else, unless `--all-leaks`, the package's
/// `leakedActivityKey`. No key, or the placeholder, finds leaks LeakCanary's way (the
/// placeholder noted, but for a heap graph's package, which never knows a key);
/// `--all-leaks` every leaking object.
pub fn leak_key(options: &Options, input: &input::Input) -> Asked {
    let asked = |key: Option<String>, all_leaks, note| Asked {
        key,
        all_leaks,
        note,
    };
    if options.all_leaks {
        return asked(options.key.clone(), true, None);
    }
    if let Some(k) = &options.key {
        return asked(Some(k.clone()).filter(|k| !k.is_empty()), false, None);
    }
    let placeholder = hprof_shrink_core::package::manifest::PLACEHOLDER_KEY;
    match input.manifest_value("leakedActivityKey") {
        // A heap graph's package has the placeholder by nature (a trace names no key, and
        // holds no key to match): nothing to note.
        Some(k) if k == placeholder && !input.field_values => asked(None, false, None),
        Some(k) if k == placeholder => asked(
            None,
            false,
            Some(format!(
                "the package's leakedActivityKey is the placeholder {k:?} (no key was known when it was made): leaks are looked for as in a dump without a key (--all-leaks finds every leaking object)"
            )),
        ),
        Some(k) if !k.is_empty() => asked(Some(k.to_string()), false, None),
        _ => asked(None, false, None),
    }
}
