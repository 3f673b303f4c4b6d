//! What kind of file this is, by its first bytes, never its name: the one sniffer that the
//! CLI, the batch, the analyzer, the server and [`crate::verify`] ask before they pick a
//! reader. It says what the start claims; the reader chosen still checks the rest.

use crate::hprof::record::MAGIC;

/// A Perfetto trace's first byte: `Trace.packet` (field 1, length-delimited).
pub const TRACE_PACKET_TAG: u8 = 0x0a;

/// What a file's first bytes say it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileKind {
    /// A heap dump: `JAVA PROFILE ` (its version and NUL follow).
    Hprof,
    /// A gzip stream (`1f 8b`): a `.hprof.gz`, perhaps, or anything else gzipped.
    Gzip,
    /// A zip that starts with a local file header (`PK 03 04`): a package, perhaps.
    Zip,
    /// A zip with no entry: nothing but its end record (`PK 05 06`).
    EmptyZip,
    /// A Perfetto trace, perhaps (a heap graph's, Android's route for heap dumps since
    /// API 35): its first byte is `Trace.packet`'s tag (`0a`). A trace has no magic: the
    /// analyzer's trace reader decides.
    Trace,
    /// None of these, or too few bytes to tell.
    Other,
}

impl FileKind {
    /// The bytes [`FileKind::of`] needs to tell every kind: the HPROF magic's. A shorter
    /// prefix is enough for the shorter magics (gzip's 2 bytes, zip's 4).
    pub const PREFIX_LEN: usize = MAGIC.len();

    /// The kind that `prefix`, a file's first bytes (as many as it has, up to
    /// [`FileKind::PREFIX_LEN`]; more are not looked at), says.
    pub fn of(prefix: &[u8]) -> FileKind {
        if prefix.starts_with(MAGIC) {
            FileKind::Hprof
        } else if prefix.starts_with(&[0x1f, 0x8b]) {
            FileKind::Gzip
        } else if prefix.starts_with(b"PK\x03\x04") {
            FileKind::Zip
        } else if prefix.starts_with(b"PK\x05\x06") {
            FileKind::EmptyZip
        } else if prefix.first() == Some(&TRACE_PACKET_TAG) {
            FileKind::Trace
        } else {
            FileKind::Other
        }
    }

    /// A zip, with entries or without.
    pub fn is_zip(self) -> bool {
        matches!(self, FileKind::Zip | FileKind::EmptyZip)
    }
}

#[cfg(test)]
mod tests {
    use super::FileKind;

    #[test]
    fn each_kind_by_its_first_bytes_and_no_guess_from_too_few() {
        for (start, kind) in [
            (&b"JAVA PROFILE 1.0.2\0\0\0\0\x04"[..], FileKind::Hprof),
            (b"JAVA PROFILE ", FileKind::Hprof),
            (b"JAVA PROFILE", FileKind::Other),
            (b"JAVA PROFILEX1.0.2", FileKind::Other),
            (b"\x1f\x8b\x08\0", FileKind::Gzip),
            (b"\x1f", FileKind::Other),
            (b"PK\x03\x04rest", FileKind::Zip),
            (b"PK\x05\x06", FileKind::EmptyZip),
            (b"PK\x03", FileKind::Other),
            (b"", FileKind::Other),
            (b"notes\n", FileKind::Other),
            (b"\x0a\x02\x40\x0a", FileKind::Trace),
            (b"\x0a", FileKind::Trace),
        ] {
            assert_eq!(
                FileKind::of(start),
                kind,
                "{:?}",
                String::from_utf8_lossy(start)
            );
        }
        assert!(FileKind::Zip.is_zip() && FileKind::EmptyZip.is_zip());
        assert!(!FileKind::Gzip.is_zip());
        assert_eq!(FileKind::PREFIX_LEN, b"JAVA PROFILE ".len());
    }
}
