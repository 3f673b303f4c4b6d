//! What is known about a zip (or a Perfetto heap-graph trace, sent as it is) before it is
//! sent: its size and MD5 (computed once, so every attempt announces the same digest), its
//! kind by its first bytes and, for a package sent by the multipart protocol, the
//! `result.info` properties that become form fields.

use std::fs::File;
use std::io::{self, Read};
use std::path::Path;

use base64::Engine;
use hprof_shrink_core::kind::FileKind;
use hprof_shrink_core::package::{PackageError, PackageReader};
use md5::{Digest, Md5};

/// A zip's size and MD5, read once before its first attempt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Digested {
    /// Size in bytes.
    pub len: u64,
    /// MD5 of its bytes.
    pub md5: [u8; 16],
    /// What its first bytes say it is.
    pub kind: FileKind,
}

impl Digested {
    /// Lower-case hex, as the multipart `md5` field carries it.
    pub fn md5_hex(&self) -> String {
        hex::encode(self.md5)
    }

    /// Base64, as the `Content-MD5` header carries it.
    pub fn md5_base64(&self) -> String {
        base64::engine::general_purpose::STANDARD.encode(self.md5)
    }

    /// A Perfetto trace (a heap graph, the server checks), sent as it is, with no
    /// `result.info` fields.
    pub fn is_trace(&self) -> bool {
        self.kind == FileKind::Trace
    }

    /// The body's media type.
    pub fn mime(&self) -> &'static str {
        if self.is_trace() {
            "application/octet-stream"
        } else {
            "application/zip"
        }
    }
}

/// Reads the whole file once: its length, MD5 and kind.
pub fn digest(file: &mut File) -> io::Result<Digested> {
    let mut h = Md5::new();
    let mut buf = vec![0u8; 256 * 1024];
    let mut len = 0u64;
    let mut head = Vec::with_capacity(FileKind::PREFIX_LEN);
    loop {
        let n = match file.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        h.update(&buf[..n]);
        let want = FileKind::PREFIX_LEN.saturating_sub(head.len()).min(n);
        head.extend_from_slice(&buf[..want]);
        len += n as u64;
    }
    let mut md5 = [0u8; 16];
    md5.copy_from_slice(&h.finalize());
    Ok(Digested {
        len,
        md5,
        kind: FileKind::of(&head),
    })
}

/// The `result.info` properties of a package, in file order. The error says why the file
/// is not a package.
pub fn result_info(path: &Path) -> Result<Vec<(String, String)>, PackageError> {
    PackageReader::open(path).and_then(|p| p.manifest())
}

#[cfg(test)]
mod tests {
    use super::*;
    use hprof_shrink_core::package::RESULT_INFO;
    use std::io::{Seek, Write};

    #[test]
    fn digest_of_known_bytes() {
        let mut f = tempfile::tempfile().unwrap();
        f.write_all(b"The quick brown fox jumps over the lazy dog")
            .unwrap();
        f.rewind().unwrap();
        let d = digest(&mut f).unwrap();
        assert_eq!(d.len, 43);
        assert_eq!(d.md5_hex(), "9e107d9d372bb6826bd81d3542a419d6");
        assert_eq!(d.md5_base64(), "nhB9nTcrtoJr2B01QqQZ1g==");
        assert_eq!((d.kind, d.mime()), (FileKind::Other, "application/zip"));
        // A trace's first byte, in a read of one byte: the kind from the start, not a read.
        let mut f = tempfile::tempfile().unwrap();
        f.write_all(b"\x0a\x02\x40\x0a").unwrap();
        f.rewind().unwrap();
        let d = digest(&mut f).unwrap();
        assert!(d.is_trace());
        assert_eq!(d.mime(), "application/octet-stream");
    }

    #[test]
    fn result_info_of_a_zip_and_of_non_packages() {
        let dir = tempfile::tempdir().unwrap();
        let good = dir.path().join("good.zip");
        let mut w = zip::ZipWriter::new(File::create(&good).unwrap());
        let opts = zip::write::SimpleFileOptions::default();
        w.start_file(RESULT_INFO, opts).unwrap();
        w.write_all(b"# c\nsdkVersion=25\nmanufacturer=ACME\n")
            .unwrap();
        w.finish().unwrap();
        assert_eq!(
            result_info(&good).unwrap(),
            [
                ("sdkVersion".to_string(), "25".to_string()),
                ("manufacturer".to_string(), "ACME".to_string())
            ]
        );

        let other = dir.path().join("other.zip");
        let mut w = zip::ZipWriter::new(File::create(&other).unwrap());
        w.start_file("readme.txt", opts).unwrap();
        w.finish().unwrap();
        assert!(result_info(&other)
            .unwrap_err()
            .to_string()
            .contains("no result.info"));

        let junk = dir.path().join("junk.zip");
        std::fs::write(&junk, b"not a zip at all").unwrap();
        assert!(result_info(&junk)
            .unwrap_err()
            .to_string()
            .starts_with("not a zip"));
    }
}
