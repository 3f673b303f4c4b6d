//! `result.info`, the manifest Matrix's server-side analyzer reads from the package: a `#`
//! comment line, then `sdkVersion`, `manufacturer`, `hprofEntry` and `leakedActivityKey`.
//! Values come from the caller; where absent, from the dump; otherwise a placeholder that
//! the report warns about.

use serde::Serialize;

use super::properties;

pub const RESULT_INFO: &str = "result.info";
pub const EXTRA_INFO: &str = "extra.info";
/// Matrix's own first line, kept word for word: the analyzer's users know it.
pub const COMMENT: &str =
    "Resource Canary Result Infomation. THIS FILE IS IMPORTANT FOR THE ANALYZER !!";
pub const KEYS: [&str; 4] = [
    "sdkVersion",
    "manufacturer",
    "hprofEntry",
    "leakedActivityKey",
];

/// Values the caller gives; `None` means "read it from the dump".
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ManifestValues {
    pub sdk_version: Option<String>,
    pub manufacturer: Option<String>,
    pub leaked_activity_key: Option<String>,
}

/// Where a manifest value came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Source {
    Caller,
    Dump,
    Placeholder,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Manifest {
    pub sdk_version: String,
    pub manufacturer: String,
    pub hprof_entry: String,
    pub leaked_activity_key: String,
    pub sources: Sources,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Sources {
    pub sdk_version: Source,
    pub manufacturer: Source,
    pub leaked_activity_key: Source,
}

impl Manifest {
    pub fn render(&self) -> String {
        properties::render(
            Some(COMMENT),
            &[
                ("sdkVersion", &self.sdk_version),
                ("manufacturer", &self.manufacturer),
                ("hprofEntry", &self.hprof_entry),
                ("leakedActivityKey", &self.leaked_activity_key),
            ],
        )
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
        "unknown",
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
    }
}

/// The name of the hprof entry for an input file: its stem with `_shrink.hprof`, as Matrix
/// names its shrunk dumps.
/// Checks that `name` can be the hprof entry's name: a plain file name, which every reader
/// extracts where it expects and which is not one of the manifest entries.
pub fn check_entry_name(name: &str) -> Result<(), String> {
    let bad = |why: &str| Err(format!("hprof entry name {name:?} {why}"));
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
