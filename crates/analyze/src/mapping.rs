//! R8/ProGuard `mapping.txt`: obfuscated class and field names back to the source's, so
//! traces read as the code and signatures stay the same across releases.
//!
//! The format: `original.Class -> obfuscated.a:` starts a class; indented lines under it
//! are its members, `type name -> a` for a field and `…(args) -> b` for a method; `#`
//! starts a comment.

use std::collections::HashMap;
use std::io::Read;
use std::path::Path;

use hprof_shrink_core::hprof::open_regular;

use super::error::AnalyzeError;

/// The largest mapping file read (the mapping of a very large app is a few hundred MB);
/// its tables take about as much memory again.
pub const MAX_MAPPING_BYTES: u64 = 1 << 30;

#[derive(Debug, Default, Clone)]
pub struct Mapping {
    /// obfuscated class → original class
    classes: HashMap<String, String>,
    /// (obfuscated class, obfuscated field) → original field
    fields: HashMap<(String, String), String>,
}

impl Mapping {
    /// Reads a mapping file: a regular file (a FIFO or a device is refused before
    /// anything is read, as every input is), of at most [`MAX_MAPPING_BYTES`].
    pub fn read(path: &Path) -> Result<Mapping, AnalyzeError> {
        let io = |source| AnalyzeError::Io {
            path: path.to_path_buf(),
            source,
        };
        // Said here: the opening's own words are a heap dump's.
        if path.is_dir() {
            return Err(io(std::io::Error::other(
                "is a directory, not an R8/ProGuard mapping.txt",
            )));
        }
        let file = open_regular(path).map_err(io)?;
        let len = file.metadata().map_err(io)?.len();
        if len > MAX_MAPPING_BYTES {
            return Err(AnalyzeError::MappingTooLarge {
                path: path.to_path_buf(),
                bytes: len,
                max: MAX_MAPPING_BYTES,
            });
        }
        // The file may grow while it is read: the cap holds all the same.
        let mut text = String::with_capacity(len as usize);
        file.take(MAX_MAPPING_BYTES + 1)
            .read_to_string(&mut text)
            .map_err(io)?;
        if text.len() as u64 > MAX_MAPPING_BYTES {
            return Err(AnalyzeError::MappingTooLarge {
                path: path.to_path_buf(),
                bytes: text.len() as u64,
                max: MAX_MAPPING_BYTES,
            });
        }
        Mapping::parse(&text).map_err(|(line, what)| AnalyzeError::Mapping {
            path: path.to_path_buf(),
            line,
            what,
        })
    }

    /// Parses the text; an error names the line (1-based) and what is wrong with it.
    pub fn parse(text: &str) -> Result<Mapping, (usize, String)> {
        let mut m = Mapping::default();
        let mut current: Option<String> = None;
        for (i, line) in text.lines().enumerate() {
            let trimmed = line.trim();
            if trimmed.is_empty() || trimmed.starts_with('#') {
                continue;
            }
            let Some((left, right)) = trimmed.split_once(" -> ") else {
                return Err((
                    i + 1,
                    format!("expected `name -> obfuscated`, found {trimmed:?}"),
                ));
            };
            if !line.starts_with(char::is_whitespace) {
                let obf = right
                    .strip_suffix(':')
                    .ok_or((i + 1, "a class line ends with ':'".to_string()))?;
                m.classes
                    .insert(obf.trim().to_string(), left.trim().to_string());
                current = Some(obf.trim().to_string());
            } else if !left.contains('(') {
                // A field: `type name -> obf`.
                let Some(class) = &current else {
                    return Err((i + 1, "a member before any class".into()));
                };
                let Some(name) = left.split_whitespace().nth(1) else {
                    return Err((
                        i + 1,
                        format!("expected `type name` before ->, found {left:?}"),
                    ));
                };
                m.fields
                    .insert((class.clone(), right.trim().to_string()), name.to_string());
            }
        }
        Ok(m)
    }

    /// The original name of an obfuscated class (arrays too: `a.b[]` → `com.x.Y[]`).
    pub fn class(&self, obfuscated: &str) -> Option<String> {
        let base = obfuscated.trim_end_matches("[]");
        let dims = &obfuscated[base.len()..];
        self.classes.get(base).map(|c| format!("{c}{dims}"))
    }

    /// The original name of a field, given the obfuscated name of its declaring class.
    pub fn field(&self, obfuscated_class: &str, obfuscated_field: &str) -> Option<String> {
        self.fields
            .get(&(obfuscated_class.to_string(), obfuscated_field.to_string()))
            .cloned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = "\
# compiler: R8
com.example.LeakyActivity -> a.a:
    android.content.Context mContext -> a
    int[] mBigState -> b
    void onCreate(android.os.Bundle) -> onCreate
    1:3:void leak():10:12 -> c
com.example.Holder -> a.b:
    java.lang.Object sLeaked -> a
";

    #[test]
    fn classes_and_fields_map_back() {
        let m = Mapping::parse(TEXT).unwrap();
        assert_eq!(m.class("a.a").as_deref(), Some("com.example.LeakyActivity"));
        assert_eq!(m.class("a.b[]").as_deref(), Some("com.example.Holder[]"));
        assert_eq!(m.class("java.lang.String"), None);
        assert_eq!(m.field("a.a", "b").as_deref(), Some("mBigState"));
        assert_eq!(m.field("a.b", "a").as_deref(), Some("sLeaked"));
        // Methods are not fields.
        assert_eq!(m.field("a.a", "c"), None);
    }

    #[test]
    fn a_bad_line_is_named() {
        let err = Mapping::parse("com.example.A -> a:\n    int x y z\n").unwrap_err();
        assert_eq!(err.0, 2);
    }
}
