//! What a shrink keeps and how it removes the rest.

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
    pub fn name(self) -> &'static str {
        match self {
            StripMode::Bitmaps => "bitmaps",
            StripMode::Duplicates => "duplicates",
            StripMode::Strings => "strings",
            StripMode::None => "none",
        }
    }

    pub fn parse(s: &str) -> Option<StripMode> {
        Some(match s {
            "bitmaps" => StripMode::Bitmaps,
            "duplicates" => StripMode::Duplicates,
            "strings" => StripMode::Strings,
            "none" => StripMode::None,
            _ => return None,
        })
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
    pub fn name(self) -> &'static str {
        match self {
            DroppedMode::Remove => "remove",
            DroppedMode::Empty => "empty",
            DroppedMode::Zero => "zero",
        }
    }

    pub fn parse(s: &str) -> Option<DroppedMode> {
        Some(match s {
            "remove" => DroppedMode::Remove,
            "empty" => DroppedMode::Empty,
            "zero" => DroppedMode::Zero,
            _ => return None,
        })
    }
}
