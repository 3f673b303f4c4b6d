//! What a file is by its first bytes, not its name: whether a path given as an output holds
//! a heap dump (which an output must not silently replace: it may be the only copy of a
//! leak) and whether the input is a zip (a package given where the dump goes).

use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

use hprof_shrink_core::kind::FileKind;

/// How much of a gzip stream is read to reach its first bytes: a header with an extra
/// field and a name rarely takes a few hundred bytes; past this it is not a dump we name.
const GZIP_HEAD_LIMIT: u64 = 1 << 20;

/// Whether `path` is a heap dump: it starts with the HPROF magic, or it is gzip whose
/// content does (a `.hprof.gz`). False for what is not a regular file or cannot be read.
pub fn is_heap_dump(path: &Path) -> bool {
    let Ok(mut file) = hprof_shrink_core::hprof::open_regular(path) else {
        return false;
    };
    match kind_at_start(&mut file) {
        FileKind::Hprof => true,
        FileKind::Gzip if file.seek(SeekFrom::Start(0)).is_ok() => {
            let mut gz = flate2::read::GzDecoder::new(file.take(GZIP_HEAD_LIMIT));
            kind_at_start(&mut gz) == FileKind::Hprof
        }
        _ => false,
    }
}

/// Whether `path` starts as a zip does (a local file header, or the end record of an
/// empty zip).
pub fn is_zip(path: &Path) -> bool {
    hprof_shrink_core::hprof::open_regular(path).is_ok_and(|mut f| kind_at_start(&mut f).is_zip())
}

/// Whether `path` starts as a Perfetto trace does (its first byte `Trace.packet`'s tag):
/// a trace given where a dump goes is packaged, not shrunk (its reader checks the rest).
pub fn is_trace(path: &Path) -> bool {
    hprof_shrink_core::hprof::open_regular(path)
        .is_ok_and(|mut f| kind_at_start(&mut f) == FileKind::Trace)
}

/// What the first bytes read from `r` say it is.
fn kind_at_start(r: &mut impl Read) -> FileKind {
    let mut head = [0u8; FileKind::PREFIX_LEN];
    let n = read_up_to(r, &mut head);
    FileKind::of(&head[..n])
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
