//! The zip comment of a package hprof-shrink made: `hprof-shrink VERSION strip=X
//! dropped=Y`, and the word `private` for a private package. The verifier reads the modes back to know what the shrink was allowed to
//! drop; zips made elsewhere have no such comment.

use crate::options::{DroppedMode, StripMode};

const TOOL: &str = "hprof-shrink";

/// What the comment says; a mode this version does not know reads as `None`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolComment {
    /// The tool and version that wrote the zip (`hprof-shrink 0.1.0`).
    pub version: String,
    /// The strip mode it was made with.
    pub strip: Option<StripMode>,
    /// The dropped mode it was made with.
    pub dropped: Option<DroppedMode>,
    /// A private package (`--private`).
    pub private: bool,
}

/// What a package was made with, as its comment says it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Modes {
    /// `--strip`.
    pub strip: StripMode,
    /// `--dropped`.
    pub dropped: DroppedMode,
    /// `--private`.
    pub private: bool,
}

/// The comment this version writes for a package made with these modes.
pub fn render(m: &Modes) -> String {
    let private = if m.private { " private" } else { "" };
    format!(
        "{TOOL} {} strip={} dropped={}{private}",
        env!("CARGO_PKG_VERSION"),
        m.strip,
        m.dropped
    )
}

/// Reads a comment [`render`] wrote; `None` for any other comment.
pub fn parse(comment: &[u8]) -> Option<ToolComment> {
    let text = String::from_utf8_lossy(comment);
    let rest = text.strip_prefix(TOOL)?.strip_prefix(' ')?;
    let mut words = rest.split_whitespace();
    let version = words.next().unwrap_or_default().to_string();
    let find = |key: &str| {
        rest.split_whitespace()
            .find_map(|w| w.strip_prefix(key).map(str::to_string))
    };
    Some(ToolComment {
        version,
        strip: find("strip=").and_then(|s| s.parse().ok()),
        dropped: find("dropped=").and_then(|s| s.parse().ok()),
        private: rest.split_whitespace().any(|w| w == "private"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_is_written_reads_back() {
        let mut m = Modes {
            strip: StripMode::Duplicates,
            dropped: DroppedMode::Zero,
            private: false,
        };
        let c = parse(render(&m).as_bytes()).unwrap();
        assert_eq!(c.version, env!("CARGO_PKG_VERSION"));
        assert_eq!(c.strip, Some(StripMode::Duplicates));
        assert_eq!(c.dropped, Some(DroppedMode::Zero));
        assert!(!c.private);
        m.private = true;
        assert!(parse(render(&m).as_bytes()).unwrap().private);
    }

    #[test]
    fn other_comments_and_unknown_modes() {
        assert_eq!(parse(b"made by 7-Zip"), None);
        assert_eq!(parse(b"hprof-shrinker 1.0"), None);
        let c = parse(b"hprof-shrink 9.9 strip=everything").unwrap();
        assert_eq!(c.version, "9.9");
        assert_eq!((c.strip, c.dropped), (None, None));
    }
}
