//! What a file is by its first bytes, not its name: whether a path given as an output holds
//! a heap dump (which an output must not silently replace: it may be the only copy of a
//! leak) and whether the input is a zip (a package given where the dump goes).

use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

const HPROF_MAGIC: &[u8; 13] = b"JAVA PROFILE ";

/// How much of a gzip stream is read to reach its first bytes: a header with an extra
/// field and a name rarely takes a few hundred bytes; past this it is not a dump we name.
const GZIP_HEAD_LIMIT: u64 = 1 << 20;

/// Whether `path` is a heap dump: it starts with the HPROF magic, or it is gzip whose
/// content does (a `.hprof.gz`). False for what is not a regular file or cannot be read.
pub fn is_heap_dump(path: &Path) -> bool {
    let Ok(mut file) = hprof_shrink_core::hprof::open_regular(path) else {
        return false;
    };
    let mut head = [0u8; 13];
    let n = read_up_to(&mut file, &mut head);
    if n == head.len() && &head == HPROF_MAGIC {
        return true;
    }
    if n < 2 || head[..2] != [0x1f, 0x8b] || file.seek(SeekFrom::Start(0)).is_err() {
        return false;
    }
    let mut inflated = [0u8; 13];
    let mut gz = flate2::read::GzDecoder::new(file.take(GZIP_HEAD_LIMIT));
    read_up_to(&mut gz, &mut inflated) == inflated.len() && &inflated == HPROF_MAGIC
}

/// Whether `path` starts as a zip does (a local file header, or the end record of an
/// empty zip).
pub fn is_zip(path: &Path) -> bool {
    let Ok(mut file) = hprof_shrink_core::hprof::open_regular(path) else {
        return false;
    };
    let mut head = [0u8; 4];
    read_up_to(&mut file, &mut head) == head.len()
        && (&head == b"PK\x03\x04" || &head == b"PK\x05\x06")
}

/// Reads until `buf` is full or the input ends (or fails); how many bytes were read.
fn read_up_to(r: &mut impl Read, buf: &mut [u8]) -> usize {
    let mut n = 0;
    while n < buf.len() {
        match r.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => break,
        }
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn tells_heap_dumps_and_zips_by_content() {
        let dir = tempfile::tempdir().unwrap();
        let write = |name: &str, bytes: &[u8]| {
            let p = dir.path().join(name);
            std::fs::write(&p, bytes).unwrap();
            p
        };
        let hprof = write("a.bin", b"JAVA PROFILE 1.0.3\0\0\0\0\x04");
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(b"JAVA PROFILE 1.0.2\0rest").unwrap();
        let hprof_gz = write("b.bin", &gz.finish().unwrap());
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(b"a tarball, say").unwrap();
        let other_gz = write("c.bin", &gz.finish().unwrap());
        let zip = write("d.hprof", b"PK\x03\x04rest of a zip");
        let short = write("e.hprof", b"JAVA PROF");
        let text = write("f.hprof", b"notes\n");
        assert!(is_heap_dump(&hprof) && is_heap_dump(&hprof_gz));
        for p in [&other_gz, &zip, &short, &text, &dir.path().join("missing")] {
            assert!(!is_heap_dump(p), "{}", p.display());
        }
        assert!(!is_heap_dump(dir.path()), "a directory");
        assert!(is_zip(&zip));
        assert!(!is_zip(&hprof) && !is_zip(&text));
    }
}
