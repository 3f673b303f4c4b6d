//! `result.info`, the manifest Matrix's server-side analyzer reads from the package: a `#`
//! comment line, then `sdkVersion`, `manufacturer`, `hprofEntry` and `leakedActivityKey`.
//! Values come from the caller; where absent, from the dump; otherwise a placeholder that
//! the report warns about.

use serde::Serialize;

use super::properties;

/// The manifest entry's name.
pub const RESULT_INFO: &str = "result.info";
/// The name of the entry with the caller's extra properties.
pub const EXTRA_INFO: &str = "extra.info";
/// Matrix's own first line, kept word for word: the analyzer's users know it.
pub const COMMENT: &str =
    "Resource Canary Result Infomation. THIS FILE IS IMPORTANT FOR THE ANALYZER !!";
/// The keys of `result.info`, in the order they are written.
pub const KEYS: [&str; 4] = [
    "sdkVersion",
    "manufacturer",
    "hprofEntry",
    "leakedActivityKey",
];

/// The `leakedActivityKey` written when no key was given and the dump names none: the
/// analyzer reads it as "no key" and looks for every leak.
pub const PLACEHOLDER_KEY: &str = "unknown";

/// Values the caller gives; `None` means "read it from the dump".
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ManifestValues {
    /// `sdkVersion`: the Android API level.
    pub sdk_version: Option<String>,
    /// `manufacturer`: the device maker.
    pub manufacturer: Option<String>,
    /// `leakedActivityKey`: the key of the leaked Activity.
    pub leaked_activity_key: Option<String>,
}

/// Where a manifest value came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Source {
    /// Given by the caller.
    Caller,
    /// Read from the dump.
    Dump,
    /// Neither: a placeholder, with a warning.
    Placeholder,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
/// `result.info` as written: every value, and where each came from.
pub struct Manifest {
    /// `sdkVersion`.
    pub sdk_version: String,
    /// `manufacturer`.
    pub manufacturer: String,
    /// `hprofEntry`: the name of the hprof entry in the zip.
    pub hprof_entry: String,
    /// `leakedActivityKey`.
    pub leaked_activity_key: String,
    /// Where the three values that can come from the dump came from.
    pub sources: Sources,
    /// A private package: `private=true` follows the four keys (Matrix's reader ignores a
    /// key it does not know).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub private: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
/// Where each manifest value came from.
pub struct Sources {
    /// Of `sdkVersion`.
    pub sdk_version: Source,
    /// Of `manufacturer`.
    pub manufacturer: Source,
    /// Of `leakedActivityKey`.
    pub leaked_activity_key: Source,
}

impl Manifest {
    /// The file's text: Matrix's comment line, then the four keys.
    pub fn render(&self) -> String {
        let mut pairs: Vec<(&str, &str)> = vec![
            ("sdkVersion", &self.sdk_version),
            ("manufacturer", &self.manufacturer),
            ("hprofEntry", &self.hprof_entry),
            ("leakedActivityKey", &self.leaked_activity_key),
        ];
        if self.private {
            pairs.push(("private", "true"));
        }
        properties::render(Some(COMMENT), &pairs)
    }
}

/// Chooses each value: the caller's, else the dump's, else the placeholder (with a
/// warning naming the key and how to supply it).
pub fn resolve(
    given: &ManifestValues,
    from_dump: &ManifestValues,
    hprof_entry: String,
    warnings: &mut Vec<String>,
) -> Manifest {
    let mut pick = |key: &str,
                    flag: &str,
                    given: &Option<String>,
                    dump: &Option<String>,
                    placeholder: &str,
                    hint: &str| {
        if let Some(v) = given {
            (v.clone(), Source::Caller)
        } else if let Some(v) = dump {
            (v.clone(), Source::Dump)
        } else {
            warnings.push(format!(
                "{key}: not given and {hint}; wrote the placeholder {placeholder:?} (pass {flag})"
            ));
            (placeholder.to_string(), Source::Placeholder)
        }
    };
    let (sdk_version, sdk_src) = pick(
        "sdkVersion",
        "--sdk-version",
        &given.sdk_version,
        &from_dump.sdk_version,
        "0",
        "android.os.Build$VERSION.SDK_INT is not in the dump",
    );
    let (manufacturer, man_src) = pick(
        "manufacturer",
        "--manufacturer",
        &given.manufacturer,
        &from_dump.manufacturer,
        "unknown",
        "android.os.Build.MANUFACTURER is not in the dump",
    );
    let (leaked_activity_key, key_src) = pick(
        "leakedActivityKey",
        "--leaked-activity-key",
        &given.leaked_activity_key,
        &from_dump.leaked_activity_key,
        PLACEHOLDER_KEY,
        "the dump has no single DestroyedActivityInfo to read mKey from",
    );
    Manifest {
        sdk_version,
        manufacturer,
        hprof_entry,
        leaked_activity_key,
        sources: Sources {
            sdk_version: sdk_src,
            manufacturer: man_src,
            leaked_activity_key: key_src,
        },
        private: false,
    }
}

/// Why a name cannot be the hprof entry's.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("hprof entry name {name:?} {why}")]
pub struct BadEntryName {
    /// The name.
    pub name: String,
    /// What is wrong with it.
    pub why: &'static str,
}

/// Checks that `name` can be the hprof entry's name: a plain file name, which every reader
/// extracts where it expects and which is not one of the manifest entries.
pub fn check_entry_name(name: &str) -> Result<(), BadEntryName> {
    let bad = |why: &'static str| {
        Err(BadEntryName {
            name: name.to_string(),
            why,
        })
    };
    if name.is_empty() {
        return bad("is empty");
    }
    if name.contains(['/', '\\']) {
        return bad("is not a plain file name: it has / or \\");
    }
    if name == "." || name == ".." {
        return bad("is not a plain file name");
    }
    if name.chars().any(char::is_control) {
        return bad("has a control character");
    }
    if name == RESULT_INFO || name == EXTRA_INFO {
        return bad("is the name of a manifest entry");
    }
    Ok(())
}

/// The default hprof entry name for a dump at `input`: its stem + `_shrink.hprof`.
pub fn entry_name(input: &std::path::Path) -> String {
    let name = input
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "dump.hprof".into());
    let stem = name
        .strip_suffix(".gz")
        .unwrap_or(&name)
        .strip_suffix(".hprof")
        .unwrap_or(&name)
        .to_string();
    let stem: String = stem
        .chars()
        .map(|c| {
            if c == '/' || c == '\\' || c.is_control() {
                '_'
            } else {
                c
            }
        })
        .collect();
    format!("{stem}_shrink.hprof")
}
