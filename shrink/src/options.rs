//! What a shrink keeps and how it removes the rest.

use std::fmt;
use std::str::FromStr;

use serde::Serialize;

/// Which primitive arrays survive.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum StripMode {
    /// String values and every live Bitmap buffer, identical buffers merged into one.
    #[default]
    Bitmaps,
    /// Exactly what Matrix keeps: String values and one copy of each Bitmap buffer that
    /// has a duplicate; buffers without a duplicate go.
    Duplicates,
    /// String values only.
    Strings,
    /// Nothing dropped: the hprof is the input, byte for byte.
    None,
}

impl StripMode {
    /// Every mode, in the order `--help` lists them.
    pub const ALL: [StripMode; 4] = [
        StripMode::Bitmaps,
        StripMode::Duplicates,
        StripMode::Strings,
        StripMode::None,
    ];

    /// The name the CLI, the report and the zip comment use.
    pub fn name(self) -> &'static str {
        match self {
            StripMode::Bitmaps => "bitmaps",
            StripMode::Duplicates => "duplicates",
            StripMode::Strings => "strings",
            StripMode::None => "none",
        }
    }

    /// One line for `--help`: the variant's doc comment above, which it must repeat.
    pub fn help(self) -> &'static str {
        match self {
            StripMode::Bitmaps => {
                "String values and every live Bitmap buffer, identical buffers merged into one."
            }
            StripMode::Duplicates => {
                "Exactly what Matrix keeps: String values and one copy of each Bitmap buffer \
                 that has a duplicate; buffers without a duplicate go."
            }
            StripMode::Strings => "String values only.",
            StripMode::None => "Nothing dropped: the hprof is the input, byte for byte.",
        }
    }
}

/// How a dropped array disappears.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum DroppedMode {
    /// The record goes; references to it dangle (ahat and Matrix read them as null,
    /// LeakCanary's Shark throws).
    #[default]
    Remove,
    /// A zero-length array of the same id and type stays, so every reference resolves.
    Empty,
    /// The elements are zeroed: sizes stay true, the zip stays small.
    Zero,
}

impl DroppedMode {
    /// Every mode, in the order `--help` lists them.
    pub const ALL: [DroppedMode; 3] = [DroppedMode::Remove, DroppedMode::Empty, DroppedMode::Zero];

    /// The name the CLI, the report and the zip comment use.
    pub fn name(self) -> &'static str {
        match self {
            DroppedMode::Remove => "remove",
            DroppedMode::Empty => "empty",
            DroppedMode::Zero => "zero",
        }
    }

    /// One line for `--help`: the variant's doc comment above, which it must repeat.
    pub fn help(self) -> &'static str {
        match self {
            DroppedMode::Remove => {
                "The record goes; references to it dangle (ahat and Matrix read them as null, \
                 LeakCanary's Shark throws)."
            }
            DroppedMode::Empty => {
                "A zero-length array of the same id and type stays, so every reference resolves."
            }
            DroppedMode::Zero => "The elements are zeroed: sizes stay true, the zip stays small.",
        }
    }
}

/// A mode name that is not one of the known ones.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown {what} {given:?} (expected one of: {expected})")]
pub struct UnknownMode {
    what: &'static str,
    given: String,
    expected: String,
}

/// Parses `name` as one of `all`, by the names [`fmt::Display`] writes.
fn by_name<T: Copy + fmt::Display>(
    what: &'static str,
    all: &[T],
    name: &str,
) -> Result<T, UnknownMode> {
    all.iter()
        .copied()
        .find(|m| m.to_string() == name)
        .ok_or_else(|| UnknownMode {
            what,
            given: name.to_string(),
            expected: all.iter().map(T::to_string).collect::<Vec<_>>().join(", "),
        })
}

impl FromStr for StripMode {
    type Err = UnknownMode;
    fn from_str(s: &str) -> Result<Self, UnknownMode> {
        by_name("strip mode", &StripMode::ALL, s)
    }
}

impl FromStr for DroppedMode {
    type Err = UnknownMode;
    fn from_str(s: &str) -> Result<Self, UnknownMode> {
        by_name("dropped mode", &DroppedMode::ALL, s)
    }
}

impl fmt::Display for StripMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl fmt::Display for DroppedMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_read_back_and_match_serde() {
        for m in StripMode::ALL {
            assert_eq!(m.to_string().parse::<StripMode>(), Ok(m));
            assert_eq!(serde_json::to_value(m).unwrap(), m.name());
        }
        for m in DroppedMode::ALL {
            assert_eq!(m.to_string().parse::<DroppedMode>(), Ok(m));
            assert_eq!(serde_json::to_value(m).unwrap(), m.name());
        }
        let e = "all".parse::<StripMode>().unwrap_err().to_string();
        assert!(e.contains("bitmaps, duplicates, strings, none"), "{e}");
    }
}
