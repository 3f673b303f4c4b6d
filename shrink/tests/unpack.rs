//! Inflating a package's hprof to check it, within a server's bounds: a zip that declares
//! more than the limit is refused before a byte is written, a stream that holds more than
//! its zip declares is cut at the declared size (sizes in a zip can lie), and a disk that
//! would be left with less than the space to keep free is said to be full.

use std::io::{ErrorKind, Write};
use std::path::Path;

use hprof_shrink_core::space::Unpack;
use hprof_shrink_core::verify::{verify_path, verify_path_within};
use hprof_shrink_core::{Control, Error};

/// An HPROF header followed by `zeros` zero bytes: a dump that compresses to nearly nothing.
fn bomb_hprof(zeros: usize) -> Vec<u8> {
    let mut v = b"JAVA PROFILE 1.0.2\0".to_vec();
    v.extend_from_slice(&4u32.to_be_bytes());
    v.extend_from_slice(&0u64.to_be_bytes());
    v.resize(v.len() + zeros, 0);
    v
}

/// A package (result.info first, then the hprof, deflated by the zip crate) at `path`.
fn package(path: &Path, hprof: &[u8]) {
    let mut w = zip::ZipWriter::new(std::fs::File::create(path).unwrap());
    let opts = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated);
    w.start_file("result.info", opts).unwrap();
    w.write_all(
        b"# test\nsdkVersion=26\nmanufacturer=x\nhprofEntry=dump.hprof\nleakedActivityKey=k\n",
    )
    .unwrap();
    w.start_file("dump.hprof", opts).unwrap();
    w.write_all(hprof).unwrap();
    w.finish().unwrap();
}

/// The kind of the I/O error in `e`, if it is one.
fn io_kind(e: &Error) -> Option<ErrorKind> {
    match e {
        Error::Io(f) => Some(f.source.kind()),
        _ => None,
    }
}

/// Rewrites every little-endian u32 `from` in the file to `to` (the uncompressed size in
/// the local header and in the central directory); there must be exactly two.
fn patch_size(path: &Path, from: u32, to: u32) {
    let mut bytes = std::fs::read(path).unwrap();
    let at: Vec<usize> = bytes
        .windows(4)
        .enumerate()
        .filter(|(_, w)| *w == from.to_le_bytes())
        .map(|(i, _)| i)
        .collect();
    assert_eq!(at.len(), 2, "the size appears in both headers only");
    for i in at {
        bytes[i..i + 4].copy_from_slice(&to.to_le_bytes());
    }
    std::fs::write(path, bytes).unwrap();
}

#[test]
fn a_package_declaring_more_than_the_limit_is_refused_before_it_is_inflated() {
    let dir = tempfile::tempdir().unwrap();
    let zip = dir.path().join("bomb.zip");
    let hprof = bomb_hprof(32 << 20);
    package(&zip, &hprof);
    assert!(std::fs::metadata(&zip).unwrap().len() < 1 << 20);
    let unpack = Unpack {
        max_bytes: Some(8 << 20),
        keep_free: 0,
        dir: Some(dir.path().to_path_buf()),
    };
    let e = verify_path_within(&zip, None, None, &unpack, &Control::default()).unwrap_err();
    assert_eq!(io_kind(&e), Some(ErrorKind::FileTooLarge), "{e}");
    assert!(
        e.to_string().contains(&format!("{} bytes", hprof.len())),
        "{e}"
    );
    assert!(e.to_string().contains(&(8u64 << 20).to_string()), "{e}");

    // The same zip claiming 4 GB: still refused up front, not inflated to find out.
    let liar = dir.path().join("liar.zip");
    std::fs::copy(&zip, &liar).unwrap();
    patch_size(&liar, hprof.len() as u32, 4_000_000_000);
    let t0 = std::time::Instant::now();
    let e = verify_path_within(&liar, None, None, &unpack, &Control::default()).unwrap_err();
    assert_eq!(io_kind(&e), Some(ErrorKind::FileTooLarge), "{e}");
    assert!(t0.elapsed() < std::time::Duration::from_secs(5));
}

#[test]
fn a_stream_holding_more_than_its_zip_declares_is_cut_at_the_declared_size() {
    let dir = tempfile::tempdir().unwrap();
    let zip = dir.path().join("liar.zip");
    let hprof = bomb_hprof(16 << 20);
    package(&zip, &hprof);
    // It says 1 MiB; it holds 16.
    patch_size(&zip, hprof.len() as u32, 1 << 20);
    for unpack in [
        Unpack::default(),
        Unpack {
            max_bytes: Some(4 << 20),
            ..Unpack::default()
        },
    ] {
        let e = verify_path_within(&zip, None, None, &unpack, &Control::default()).unwrap_err();
        cut_at_the_declared_size(&e);
    }
    // verify_path, unbounded, cuts it the same way.
    cut_at_the_declared_size(&verify_path(&zip, None, None, &Control::default()).unwrap_err());
}

/// The zip reader's own size check or ours, whichever sees the excess first: both stop
/// at the first read past 1 MiB.
fn cut_at_the_declared_size(e: &Error) {
    let m = e.to_string();
    assert!(
        m.contains("inflates to more than the 1048576 bytes the zip declares")
            || m.contains("expected 1048576, got 10486"),
        "{m}"
    );
}

#[test]
fn a_disk_that_would_be_left_too_full_is_said_to_be_full() {
    let dir = tempfile::tempdir().unwrap();
    let zip = dir.path().join("p.zip");
    package(&zip, &bomb_hprof(1 << 20));
    let Some(free) = hprof_shrink_core::space::available_at(dir.path()) else {
        return; // the platform cannot tell
    };
    let unpack = Unpack {
        max_bytes: None,
        keep_free: free,
        dir: Some(dir.path().to_path_buf()),
    };
    let e = verify_path_within(&zip, None, None, &unpack, &Control::default()).unwrap_err();
    assert_eq!(io_kind(&e), Some(ErrorKind::StorageFull), "{e}");
    // Within bounds, the same package gets as far as its hprof (zeros are no records).
    let fits = Unpack {
        max_bytes: Some(2 << 20),
        keep_free: 0,
        dir: Some(dir.path().to_path_buf()),
    };
    let e = verify_path_within(&zip, None, None, &fits, &Control::default()).unwrap_err();
    assert_eq!(io_kind(&e), None, "{e}");
}

#[test]
fn a_bounded_writer_stops_at_its_limit() {
    let dir = tempfile::tempdir().unwrap();
    let file = tempfile::tempfile_in(dir.path()).unwrap();
    let unpack = Unpack {
        max_bytes: Some(1000),
        ..Unpack::default()
    };
    let mut w = unpack.bounded("x", &file, None);
    w.write_all(&[1u8; 600]).unwrap();
    let e = w.write_all(&[1u8; 600]).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::FileTooLarge);
    assert_eq!(w.written(), 600);
    assert_eq!(file.metadata().unwrap().len(), 600);
    // A tighter bound of the caller's wins.
    let mut w = unpack.bounded("x", &file, Some(10));
    assert!(w.write_all(&[0u8; 11]).is_err());
}
