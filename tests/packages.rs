//! Packages read by `verify` and re-packaged by `batch`: packages other readers would read
//! differently are refused, manifests and unpacking are bounded, and text and names come
//! out as they went in. Test zips are made at run time with the `zip` crate (a second zip
//! implementation); the large ones are runs of one byte, a few KB on disk.

mod common;

use common::*;

use std::io::{Read, Write};
use std::path::Path;
use std::process::Output;

const MANIFEST_HEAD: &str = "# Resource Canary Result Infomation. THIS FILE IS IMPORTANT FOR THE ANALYZER !!\nsdkVersion=23\nmanufacturer=OPPO\nleakedActivityKey=k\n";

/// A zip with `result.info` (the head above plus `extra`), then `entries` in order.
fn zip_of(path: &Path, result_info_tail: &str, entries: &[(&str, &[u8])]) {
    let mut w = zip::ZipWriter::new(std::fs::File::create(path).unwrap());
    let opts = zip::write::SimpleFileOptions::default();
    w.start_file("result.info", opts).unwrap();
    w.write_all(MANIFEST_HEAD.as_bytes()).unwrap();
    w.write_all(result_info_tail.as_bytes()).unwrap();
    for (name, bytes) in entries {
        w.start_file(*name, opts).unwrap();
        w.write_all(bytes).unwrap();
    }
    w.finish().unwrap();
}

fn verify(zip: &Path) -> Output {
    run(&["verify", s(zip)])
}

/// Runs `hprof-shrink ARGS` from bash with a file size limit of `kib` KiB (SIGXFSZ ignored,
/// so a write past it fails with EFBIG).
fn run_limited(kib: u32, args: &[&str]) -> Output {
    std::process::Command::new("bash")
        .arg("-c")
        .arg(format!("trap '' XFSZ; ulimit -f {kib}; exec \"$0\" \"$@\""))
        .arg(BIN)
        .args(args)
        .output()
        .unwrap()
}

fn dump() -> Vec<u8> {
    std::fs::read(fixture("art-api25.hprof")).unwrap()
}

#[test]
fn verify_refuses_what_other_readers_read_differently() {
    let dir = tempfile::tempdir().unwrap();
    let dump = dump();
    let good = dir.path().join("good.zip");
    zip_of(
        &good,
        "hprofEntry=a_shrink.hprof\n",
        &[("a_shrink.hprof", &dump)],
    );
    let o = verify(&good);
    assert!(o.status.success(), "{}", stderr(&o));

    // Two entries named a_shrink.hprof: written under two names of one length, then the
    // second renamed in the local header and the central directory alike.
    let dup = dir.path().join("dup-entry.zip");
    zip_of(
        &dup,
        "hprofEntry=a_shrink.hprof\n",
        &[("a_shrink.hprof", &dump), ("b_shrink.hprof", &dump)],
    );
    let mut bytes = std::fs::read(&dup).unwrap();
    let from = b"b_shrink.hprof";
    let mut renamed = 0;
    let mut i = 0;
    while let Some(at) = bytes[i..].windows(from.len()).position(|w| w == from) {
        bytes[i + at] = b'a';
        renamed += 1;
        i += at + 1;
    }
    assert_eq!(renamed, 2);
    std::fs::write(&dup, &bytes).unwrap();
    let o = verify(&dup);
    failed_with(&o, 1, &["more than one entry named \"a_shrink.hprof\""]);

    // hprofEntry twice: we would read the first, Java's Properties the last.
    let dup_key = dir.path().join("dup-key.zip");
    zip_of(
        &dup_key,
        "hprofEntry=a_shrink.hprof\nhprofEntry=b_shrink.hprof\n",
        &[("a_shrink.hprof", &dump), ("b_shrink.hprof", &dump)],
    );
    let o = verify(&dup_key);
    failed_with(&o, 1, &["hprofEntry is given more than once"]);

    // Names an extracting reader would write somewhere else.
    for (i, name) in ["../evil.hprof", "/abs.hprof", "dir/x.hprof", "a\\b.hprof"]
        .iter()
        .enumerate()
    {
        let zip = dir.path().join(format!("name{i}.zip"));
        zip_of(
            &zip,
            &format!("hprofEntry={}\n", name.replace('\\', "\\\\")),
            &[(name, &dump)],
        );
        let o = verify(&zip);
        failed_with(&o, 1, &["not a plain file name"]);
    }
}

#[test]
fn verify_caps_result_info() {
    let dir = tempfile::tempdir().unwrap();
    let zip = dir.path().join("big-manifest.zip");
    // A valid manifest, then a 32 MB comment line: ~32 KB deflated.
    let tail = format!("hprofEntry=a_shrink.hprof\n#{}\n", "#".repeat(32 << 20));
    zip_of(&zip, &tail, &[("a_shrink.hprof", &dump())]);
    assert!(std::fs::metadata(&zip).unwrap().len() < 1 << 20);
    let o = verify(&zip);
    failed_with(&o, 1, &["result.info is", "over the limit"]);
}

#[test]
fn verify_checks_the_hprof_magic_before_unpacking_it() {
    let dir = tempfile::tempdir().unwrap();
    let zip = dir.path().join("zeros.zip");
    // 64 MiB of zeros under the hprof name; with a file size limit of 1 MiB, unpacking it
    // would fail, so an answer about the magic shows nothing was unpacked.
    zip_of(
        &zip,
        "hprofEntry=a_shrink.hprof\n",
        &[("a_shrink.hprof", &vec![0u8; 64 << 20])],
    );
    let o = run_limited(1024, &["verify", s(&zip)]);
    let err = failed_with(&o, 1, &["not an HPROF file"]);
    assert_eq!(err.lines().count(), 1, "{err}");
}

#[test]
fn verify_says_a_local_write_failure_is_local_not_a_damaged_package() {
    let dir = tempfile::tempdir().unwrap();
    let zip = dir.path().join("ok.zip");
    // Deflated (zip_of's default): verify unpacks it beside the zip, which a 64 KiB file
    // size limit stops (as a full disk would).
    zip_of(
        &zip,
        "hprofEntry=a_shrink.hprof\n",
        &[("a_shrink.hprof", &dump())],
    );
    let o = run_limited(64, &["verify", s(&zip)]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(!err.contains("does not decompress"), "{err}");
    assert!(
        err.contains("unpacking a_shrink.hprof to check it") && err.contains(s(dir.path())),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");
    // The same zip with room verifies.
    let o = verify(&zip);
    assert!(o.status.success(), "{}", stderr(&o));
}

/// `name`'s bytes in the zip at `zip`.
fn entry(zip: &Path, name: &str) -> Vec<u8> {
    let mut a = zip::ZipArchive::new(std::fs::File::open(zip).unwrap()).unwrap();
    let mut out = Vec::new();
    a.by_name(name).unwrap().read_to_end(&mut out).unwrap();
    out
}

fn batch(input: &Path, out: &Path) -> Output {
    run(&["batch", s(input), "--out-dir", s(out), "-q"])
}

#[test]
fn batch_keeps_a_long_non_ascii_extra_info_whole() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in");
    std::fs::create_dir(&input).unwrap();
    // 3-byte characters after a 1-byte prefix: every 8 KiB boundary falls inside one.
    let value = "中".repeat(12_000);
    let extra = format!("note={value}\nuin=7\n");
    zip_of(
        &input.join("m.zip"),
        "hprofEntry=dump_shrink.hprof\n",
        &[
            ("dump_shrink.hprof", &dump()),
            ("extra.info", extra.as_bytes()),
        ],
    );
    let out = dir.path().join("out");
    let o = batch(&input, &out);
    assert!(o.status.success(), "{}", stderr(&o));
    let back = String::from_utf8(entry(&out.join("m.zip"), "extra.info")).unwrap();
    assert!(!back.contains('\u{FFFD}'));
    // Every character, written as Properties.store writes it.
    let escaped = "\\u4E2D".repeat(12_000);
    assert!(
        back.contains(&format!("note={escaped}\n")),
        "{}",
        &back[..200]
    );
    assert!(back.contains("uin=7\n"), "{back}");
}

#[test]
fn a_gz_input_names_its_entry_after_itself_and_repackages_identically() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in");
    std::fs::create_dir(&input).unwrap();
    let mut enc = flate2::write::GzEncoder::new(
        std::fs::File::create(input.join("x.hprof.gz")).unwrap(),
        flate2::Compression::fast(),
    );
    enc.write_all(&dump()).unwrap();
    enc.finish().unwrap();
    let (one, two) = (dir.path().join("one"), dir.path().join("two"));
    for out in [&one, &two] {
        let o = batch(&input, out);
        assert!(o.status.success(), "{}", stderr(&o));
    }
    let zip = one.join("x.zip");
    let info = String::from_utf8(entry(&zip, "result.info")).unwrap();
    assert!(info.contains("\nhprofEntry=x_shrink.hprof\n"), "{info}");
    assert!(!entry(&zip, "x_shrink.hprof").is_empty());
    assert!(std::fs::read(&zip).unwrap() == std::fs::read(two.join("x.zip")).unwrap());
}

#[test]
fn a_gz_with_trailing_garbage_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in");
    std::fs::create_dir(&input).unwrap();
    let mut gz = Vec::new();
    for _ in 0..2 {
        // Two members are one stream, as gzip -d reads them.
        let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        enc.write_all(&dump()[..0]).unwrap();
        gz.extend(enc.finish().unwrap());
    }
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    enc.write_all(&dump()).unwrap();
    gz.extend(enc.finish().unwrap());
    std::fs::write(input.join("ok.hprof.gz"), &gz).unwrap();
    gz.extend_from_slice(b"garbage after the end");
    std::fs::write(input.join("bad.hprof.gz"), &gz).unwrap();
    let out = dir.path().join("out");
    let o = batch(&input, &out);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(3), "{err}");
    let bad: Vec<&str> = err.lines().filter(|l| l.contains("bad.hprof.gz")).collect();
    assert_eq!(bad.len(), 1, "{err}");
    assert!(
        bad[0].contains("trailing data after the gzip stream"),
        "{err}"
    );
    assert!(!err.contains("ok.hprof.gz"), "{err}");
    assert!(out.join("ok.zip").exists());
}

#[test]
fn batch_names_the_manifest_cap_it_hit() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in");
    std::fs::create_dir(&input).unwrap();
    let tail = format!("hprofEntry=a_shrink.hprof\n#{}\n", "#".repeat(2 << 20));
    zip_of(&input.join("m.zip"), &tail, &[("a_shrink.hprof", &dump())]);
    let o = batch(&input, &dir.path().join("out"));
    let err = stderr(&o);
    assert!(!o.status.success(), "{err}");
    assert!(!err.contains("--max-input-size"), "{err}");
    assert!(
        err.contains("result.info is") && err.contains("over the limit"),
        "{err}"
    );
}

/// An HPROF header, then `zeros` zero bytes: passes the magic check, unpacks big.
fn header_then_zeros(zeros: usize) -> Vec<u8> {
    let mut v = dump()[..31].to_vec();
    v.resize(31 + zeros, 0);
    v
}

#[test]
fn verify_refuses_up_front_what_the_disk_beside_the_zip_cannot_hold() {
    let dir = tempfile::tempdir().unwrap();
    let Some(tiny) = Tiny::mount(dir.path(), "1m") else {
        return;
    };
    let zip = tiny.0.join("big.zip");
    zip_of(
        &zip,
        "hprofEntry=a_shrink.hprof\n",
        &[("a_shrink.hprof", &header_then_zeros(64 << 20))],
    );
    let o = verify(&zip);
    let err = stderr(&o);
    let left = names_in(&tiny.0);
    drop(tiny);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("no room for the hprof entry a_shrink.hprof") && err.contains("/tiny"),
        "{err}"
    );
    assert!(!err.contains("does not decompress"), "{err}");
    assert_eq!(left, ["big.zip"]);
}

#[test]
fn batch_caps_a_gz_at_the_free_space_beside_the_outputs() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in");
    std::fs::create_dir(&input).unwrap();
    let mut enc = flate2::write::GzEncoder::new(
        std::fs::File::create(input.join("big.hprof.gz")).unwrap(),
        flate2::Compression::fast(),
    );
    enc.write_all(&header_then_zeros(64 << 20)).unwrap();
    enc.finish().unwrap();
    let Some(tiny) = Tiny::mount(dir.path(), "1m") else {
        return;
    };
    let o = batch(&input, &tiny.0);
    let err = stderr(&o);
    drop(tiny);
    assert!(!o.status.success(), "{err}");
    assert!(
        err.contains("the decompressed dump is larger than the limit of")
            && err.contains("bytes free in")
            && err.contains("/tiny"),
        "{err}"
    );
}

/// Every entry of `zip` as the `zip` crate reads it: name, stored or deflated, bytes.
fn entries_of(zip: &Path) -> Vec<(String, &'static str, Vec<u8>)> {
    let mut z = zip::ZipArchive::new(std::fs::File::open(zip).unwrap()).unwrap();
    (0..z.len())
        .map(|i| {
            let mut e = z.by_index(i).unwrap();
            let method = match e.compression() {
                zip::CompressionMethod::Stored => "stored",
                _ => "deflated",
            };
            let mut bytes = Vec::new();
            e.read_to_end(&mut bytes).unwrap();
            (e.name().unwrap().to_string(), method, bytes)
        })
        .collect()
}

#[test]
fn java_zip_input_stream_and_zip_file_read_every_level() {
    let dir = tempfile::tempdir().unwrap();
    let input = fixture("art-api25.hprof");
    let mut zips = Vec::new();
    let mut want = Vec::new();
    for level in ["0", "1", "6", "9"] {
        let zip = dir.path().join(format!("l{level}.zip"));
        let raw = dir.path().join(format!("l{level}.hprof"));
        let o = run(&[
            s(&input),
            s(&zip),
            "--hprof-out",
            s(&raw),
            "--level",
            level,
            "--extra",
            "uin=7",
            "-q",
        ]);
        assert!(o.status.success(), "{}", stderr(&o));
        let entries = entries_of(&zip);
        assert_eq!(entries.len(), 3);
        assert!(
            entries[1].2 == std::fs::read(&raw).unwrap(),
            "level {level}"
        );
        for (name, method, bytes) in entries {
            assert_eq!(method, if level == "0" { "stored" } else { "deflated" });
            want.push(format!(
                "{}\t{name}\t{method}\t{}\t{}",
                s(&zip),
                bytes.len(),
                md5_hex(&bytes)
            ));
        }
        zips.push(zip);
    }
    let args: Vec<&str> = zips.iter().map(|z| s(z)).collect();
    let o = run_java("StreamEntries", &args);
    assert!(o.status.success(), "java: {}", stderr(&o));
    let out = stdout(&o);
    for reader in ["stream", "file"] {
        let got: Vec<&str> = out
            .lines()
            .filter_map(|l| l.strip_prefix(reader)?.strip_prefix('\t'))
            .collect();
        assert_eq!(got, want, "{reader}: {out}");
    }
    // Python's zipfile checks every CRC too.
    let py = std::process::Command::new("python3")
        .args([
            "-c",
            "import sys, zipfile\nfor p in sys.argv[1:]:\n    assert zipfile.ZipFile(p).testzip() is None, p",
        ])
        .args(&args)
        .output()
        .expect("python3");
    assert!(py.status.success(), "python: {}", stderr(&py));
}

fn unhex(h: &str) -> String {
    let bytes: Vec<u8> = (0..h.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&h[i..i + 2], 16).unwrap())
        .collect();
    String::from_utf8(bytes).unwrap()
}

#[test]
fn java_properties_load_reads_every_value_as_it_was_given() {
    let dir = tempfile::tempdir().unwrap();
    let zip = dir.path().join("out.zip");
    let manufacturer = "Señor Ünïcode 中文 😀 = a:b #!";
    let extra = [
        ("clé", "välue 🎉 past U+FFFF"),
        ("cjk", "华为技术有限公司"),
        ("eq", "a=b=c"),
        ("lines", "first\nsecond\r\nthird"),
        ("lead", "  two leading spaces"),
        ("slash", "C:\\path\\ and a trailing \\"),
        ("key with space", "#not a comment"),
    ];
    let mut args = vec![
        s(&fixture("art-api25.hprof")).to_string(),
        s(&zip).to_string(),
        "--manufacturer".into(),
        manufacturer.into(),
        "-q".into(),
    ];
    for (k, v) in extra {
        args.push("--extra".into());
        args.push(format!("{k}={v}"));
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let o = run(&args);
    assert!(o.status.success(), "{}", stderr(&o));
    let mut files = Vec::new();
    for (name, _, bytes) in entries_of(&zip) {
        if name.ends_with(".info") {
            // What Properties.store writes: ASCII only, whatever the values hold.
            assert!(
                bytes.is_ascii(),
                "{name}: {}",
                String::from_utf8_lossy(&bytes)
            );
            let path = dir.path().join(&name);
            std::fs::write(&path, bytes).unwrap();
            files.push(path);
        }
    }
    assert_eq!(files.len(), 2);
    let paths: Vec<&str> = files.iter().map(|p| s(p)).collect();
    let o = run_java("LoadProperties", &paths);
    assert!(o.status.success(), "java: {}", stderr(&o));
    let mut got: Vec<(String, String, String)> = stdout(&o)
        .lines()
        .map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            let file = Path::new(f[0])
                .file_name()
                .unwrap()
                .to_string_lossy()
                .into_owned();
            (file, unhex(f[1]), unhex(f[2]))
        })
        .collect();
    got.sort();
    let mut want: Vec<(String, String, String)> = extra
        .iter()
        .map(|(k, v)| ("extra.info".into(), k.to_string(), v.to_string()))
        .collect();
    want.push((
        "result.info".into(),
        "manufacturer".into(),
        manufacturer.into(),
    ));
    want.push(("result.info".into(), "sdkVersion".into(), "25".into()));
    want.push((
        "result.info".into(),
        "hprofEntry".into(),
        "art-api25_shrink.hprof".into(),
    ));
    let key = got
        .iter()
        .find(|(_, k, _)| k == "leakedActivityKey")
        .expect("leakedActivityKey")
        .2
        .clone();
    want.push(("result.info".into(), "leakedActivityKey".into(), key));
    want.sort();
    assert_eq!(got, want);
    // Our own reader reads them back the same way: verify accepts the package.
    let o = verify(&zip);
    assert!(o.status.success(), "{}", stderr(&o));
}

#[test]
fn verify_inflates_a_package_of_many_blocks_and_refuses_one_damaged_inside() {
    let dir = tempfile::tempdir().unwrap();
    let zip = dir.path().join("whole.zip");
    // Nothing dropped: the 2.7 MB dump makes a deflate stream of three 1 MiB blocks, which
    // verify inflates side by side.
    let o = run(&[
        s(&fixture("hotspot-android.hprof")),
        s(&zip),
        "--strip",
        "none",
        "-q",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let o = verify(&zip);
    assert!(o.status.success(), "{}", stderr(&o));
    // One byte changed in the middle of the zip, inside the deflated dump.
    let mut bytes = std::fs::read(&zip).unwrap();
    let at = bytes.len() / 2;
    bytes[at] ^= 0x20;
    let bad = dir.path().join("bad.zip");
    std::fs::write(&bad, &bytes).unwrap();
    let o = verify(&bad);
    let err = failed_with(&o, 1, &["does not decompress"]);
    assert_eq!(err.lines().count(), 1, "{err}");
}
