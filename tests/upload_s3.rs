//! `--method put` against an S3-compatible server: moto's standalone server on loopback,
//! driven by boto3 through tests/s3/s3ctl.py (a bucket, a pre-signed PUT URL, reading the
//! object back).
//!
//! The Python environment comes from scripts/setup-python.sh, which scripts/test.sh runs,
//! exporting HPROF_SHRINK_PYTHON. Without it these tests say why and pass, unless CI is set.
//!
//! moto (5.2.5) does not check a PUT's body against its Content-MD5: it stores whatever
//! arrives and answers 200 with the body's MD5 as ETag. The tests show that, and that
//! hprof-shrink catches a damaged body through the ETag instead. (A server that does check
//! Content-MD5 refusing a damaged body is tested in upload_http.rs.)

mod support;

use std::fs;
use std::path::PathBuf;

use support::moto::{python, Moto};
use support::*;

fn put_args<'a>(url: &'a str, rest: &[&'a str]) -> Vec<&'a str> {
    let mut v = vec![
        "upload",
        "--method",
        "put",
        "--url",
        url,
        "--backoff-ms",
        "10",
    ];
    v.extend_from_slice(rest);
    v
}

#[test]
fn put_to_a_presigned_url_stores_the_zip_byte_for_byte() {
    let Some(py) = python() else { return };
    let moto = Moto::start(py);
    let dir = tempfile::tempdir().unwrap();
    let zip = make_zip(dir.path(), "dump.zip");
    let want = fs::read(&zip).unwrap();
    let url = moto.presign(&moto.endpoint(), "android/dump.zip");
    assert!(url.contains("X-Amz-Signature="), "{url}");

    let o = run(&put_args(&url, &[s(&zip)]));
    let err = stderr(&o);
    assert!(o.status.success(), "{err}");
    assert!(err.contains("uploaded") && err.contains(": 200"), "{err}");
    assert!(
        !err.contains("X-Amz-Signature"),
        "the signature was printed: {err}"
    );

    let (got, etag) = moto.get("android/dump.zip", dir.path());
    assert!(got == want, "the object differs from the zip");
    assert_eq!(etag, format!("\"{}\"", md5_hex(&want)));
}

/// An outbox holding one package, `dump.zip`, and a pre-signed PUT URL for it that goes
/// through a proxy damaging the first `damaged` request bodies on their way to moto.
struct DamagedPut {
    dir: tempfile::TempDir,
    outbox: PathBuf,
    want: Vec<u8>,
    proxy: CorruptingProxy,
    url: String,
}

fn damaged_put(moto: &Moto, damaged: usize) -> DamagedPut {
    let dir = tempfile::tempdir().unwrap();
    let outbox = dir.path().join("outbox");
    fs::create_dir(&outbox).unwrap();
    let want = fs::read(make_zip(&outbox, "dump.zip")).unwrap();
    let proxy = CorruptingProxy::start(moto.addr(), damaged);
    let url = moto.presign(&format!("http://{}", proxy.addr), "dump.zip");
    DamagedPut {
        dir,
        outbox,
        want,
        proxy,
        url,
    }
}

#[test]
fn moto_ignores_content_md5_and_a_damaged_body_is_caught_by_the_etag_and_sent_again() {
    let Some(py) = python() else { return };
    let moto = Moto::start(py);
    // The first request's body is damaged between client and server.
    let put = damaged_put(&moto, 1);

    let o = run(&put_args(&put.url, &["--outbox", s(&put.outbox)]));
    let err = stderr(&o);
    assert!(o.status.success(), "{err}");
    assert_eq!(put.proxy.corrupted(), 1);
    // moto took the damaged body with a 200; its ETag gave it away.
    assert!(
        err.contains("attempt 1 failed: 200 OK") && err.contains("is not the MD5"),
        "{err}"
    );
    assert!(err.contains("after 2 attempts"), "{err}");
    let (got, etag) = moto.get("dump.zip", put.dir.path());
    assert!(got == put.want, "the object differs from the zip");
    assert_eq!(etag, format!("\"{}\"", md5_hex(&put.want)));
    assert_eq!(names_in(&put.outbox.join("sent")), ["dump.zip"]);
}

#[test]
fn when_every_attempt_is_damaged_the_upload_fails_and_the_zip_stays() {
    let Some(py) = python() else { return };
    let moto = Moto::start(py);
    let put = damaged_put(&moto, usize::MAX);

    let o = run(&put_args(
        &put.url,
        &["--outbox", s(&put.outbox), "--retries", "1"],
    ));
    assert_eq!(o.status.code(), Some(1));
    let err = stderr(&o);
    assert!(
        err.contains("gave up after 2 attempts") && err.contains("is not the MD5"),
        "{err}"
    );
    assert!(err.contains("1 of 1 packages not uploaded"), "{err}");
    assert_eq!(put.proxy.corrupted(), 2);
    assert_eq!(names_in(&put.outbox), ["dump.zip"]);
    // What moto kept: the damaged bytes, although the request's Content-MD5 was the MD5 of
    // the zip. It does not verify Content-MD5.
    let (got, etag) = moto.get("dump.zip", put.dir.path());
    assert_eq!(got.len(), put.want.len());
    assert!(got != put.want);
    assert_eq!(etag, format!("\"{}\"", md5_hex(&got)));
}
