//! Uploads against a real HTTP server on loopback (tests/support): the multipart and PUT
//! protocols, retries through injected faults, the outbox, redirects, TLS and the token.
//! End-to-end cases run the real binary; a few use the library API.

mod support;

use std::fs::{self, File};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use hprof_shrink_upload::{self as upload, AfterUpload, Outbox, UploadConfig, Uploader};
use support::*;

/// `upload` arguments with a short backoff, so retries do not make the suite slow.
fn upload_args<'a>(url: &'a str, rest: &[&'a str]) -> Vec<&'a str> {
    let mut v = vec!["upload", "--url", url, "--backoff-ms", "10"];
    v.extend_from_slice(rest);
    v
}

fn outbox_with(dir: &Path, names: &[&str]) -> (PathBuf, Vec<u8>) {
    let outbox = dir.join("outbox");
    fs::create_dir(&outbox).unwrap();
    let first = make_zip(&outbox, names[0]);
    for n in &names[1..] {
        fs::copy(&first, outbox.join(n)).unwrap();
    }
    let bytes = fs::read(&first).unwrap();
    (outbox, bytes)
}

fn statuses(r: &[Received]) -> Vec<Option<u16>> {
    r.iter().map(|r| r.status).collect()
}

#[test]
fn post_retries_two_503s_and_the_server_stores_the_zip_byte_for_byte() {
    let dir = tempfile::tempdir().unwrap();
    let (outbox, want) = outbox_with(dir.path(), &["dump.zip"]);
    let info = upload::package::result_info(&outbox.join("dump.zip")).unwrap();
    let server = Server::start(vec![
        Fault::Status(503, "busy".into()),
        Fault::Status(503, "still busy".into()),
    ]);
    server.watch(&outbox);
    let url = server.url("/upload");
    let o = run(&upload_args(&url, &["--outbox", s(&outbox)]));
    let err = stderr(&o);
    assert!(o.status.success(), "{err}");

    let stored = server.stored();
    assert_eq!(stored.len(), 1);
    assert!(stored[0].bytes == want, "stored bytes differ from the zip");
    assert_eq!(stored[0].file_name, "dump.zip");
    assert_eq!(stored[0].content_type.as_deref(), Some("application/zip"));
    // A text part per result.info key, in order, then the MD5.
    let mut fields = info.clone();
    fields.push(("md5".into(), md5_hex(&want)));
    assert_eq!(stored[0].fields, fields);
    for key in [
        "sdkVersion",
        "manufacturer",
        "hprofEntry",
        "leakedActivityKey",
    ] {
        assert!(stored[0].field(key).is_some(), "no {key} field");
    }

    let received = server.received();
    assert_eq!(statuses(&received), [Some(503), Some(503), Some(200)]);
    // The zip was in the outbox during every request, up to the moment the 2xx went out.
    for r in &received {
        assert!(
            r.watched_on_arrival.contains(&"dump.zip".to_string()),
            "{r:?}"
        );
        assert!(
            r.watched_at_answer.contains(&"dump.zip".to_string()),
            "{r:?}"
        );
    }
    assert_eq!(names_in(&outbox), ["sent"]);
    assert_eq!(names_in(&outbox.join("sent")), ["dump.zip"]);
    assert!(fs::read(outbox.join("sent/dump.zip")).unwrap() == want);
    assert!(
        err.contains("attempt 1 failed: HTTP 503 Service Unavailable"),
        "{err}"
    );
    assert!(
        err.contains("uploaded") && err.contains("after 3 attempts"),
        "{err}"
    );
}

#[test]
fn retry_after_in_seconds_and_as_a_date_is_honoured() {
    let dir = tempfile::tempdir().unwrap();
    let zip = make_zip(dir.path(), "a.zip");
    let server = Server::start(vec![
        Fault::RetryAfter(429, "1".into()),
        Fault::RetryAfterDate(503, 2),
    ]);
    let url = server.url("/upload");
    let o = run(&upload_args(&url, &[s(&zip)]));
    assert!(o.status.success(), "{}", stderr(&o));
    let r = server.received();
    assert_eq!(statuses(&r), [Some(429), Some(503), Some(200)]);
    // The backoff is 10 ms: only the server's Retry-After explains these waits. The date
    // has whole seconds, 2 s ahead when written, so it means 1 to 2 s.
    let gap1 = r[1].at - r[0].at;
    let gap2 = r[2].at - r[1].at;
    assert!(gap1 >= Duration::from_secs(1), "{gap1:?}");
    assert!(gap2 >= Duration::from_millis(900), "{gap2:?}");
    assert!(gap1 < Duration::from_secs(5) && gap2 < Duration::from_secs(5));
    assert!(server.stored()[0].bytes == fs::read(&zip).unwrap());
}

#[test]
fn a_retry_after_longer_than_allowed_leaves_the_zip_for_later() {
    let dir = tempfile::tempdir().unwrap();
    let (outbox, _) = outbox_with(dir.path(), &["a.zip"]);
    let server = Server::start(vec![Fault::RetryAfter(503, "3600".into())]);
    let url = server.url("/upload");
    let t = Instant::now();
    let o = run(&upload_args(&url, &["--outbox", s(&outbox)]));
    assert_eq!(o.status.code(), Some(1));
    assert!(t.elapsed() < Duration::from_secs(10));
    let err = stderr(&o);
    assert!(
        err.contains("retry after 3600 s, more than the 120 s allowed"),
        "{err}"
    );
    assert_eq!(server.received().len(), 1);
    assert_eq!(names_in(&outbox), ["a.zip"]);
}

#[test]
fn a_connection_reset_mid_body_is_retried() {
    let dir = tempfile::tempdir().unwrap();
    let zip = make_zip(dir.path(), "a.zip");
    let want = fs::read(&zip).unwrap();
    assert!(
        want.len() > 200_000,
        "the body must be far longer than the cut"
    );
    let server = Server::start(vec![Fault::Reset(16 * 1024)]);
    let url = server.url("/upload");
    let o = run(&upload_args(&url, &[s(&zip)]));
    let err = stderr(&o);
    assert!(o.status.success(), "{err}");
    // The client saw the connection die (a reset, or a broken pipe if it was writing).
    assert!(
        err.contains("attempt 1 failed")
            && (err.contains("reset by peer") || err.contains("Broken pipe")),
        "{err}"
    );
    let r = server.received();
    assert_eq!(r.len(), 2);
    assert!(matches!(r[0].fault, Some(Fault::Reset(_))));
    let stored = server.stored();
    assert_eq!(stored.len(), 1);
    assert!(stored[0].bytes == want);
}

#[test]
fn an_answer_slower_than_the_timeout_is_retried_with_the_same_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let zip = make_zip(dir.path(), "a.zip");
    let want = fs::read(&zip).unwrap();
    // The server stores, then answers too late: the client cannot know it was stored,
    // sends again, and the server gets the same bytes and the same MD5 twice.
    let server = Server::start(vec![Fault::SlowStore(Duration::from_secs(10))]);
    let url = server.url("/upload");
    let t = Instant::now();
    let o = run(&upload_args(&url, &["--timeout", "1", s(&zip)]));
    let err = stderr(&o);
    assert!(o.status.success(), "{err}");
    // Well under the slow answer, with room for a loaded machine.
    assert!(t.elapsed() < Duration::from_secs(8), "{:?}", t.elapsed());
    assert!(
        err.contains("no complete answer") && err.contains("within 1 s"),
        "{err}"
    );
    let stored = server.stored();
    assert_eq!(stored.len(), 2);
    for s in &stored {
        assert!(s.bytes == want);
        assert_eq!(s.field("md5"), Some(md5_hex(&want).as_str()));
    }
}

#[test]
fn a_permanent_400_fails_at_once_and_the_zip_waits_for_the_next_run() {
    let dir = tempfile::tempdir().unwrap();
    let (outbox, want) = outbox_with(dir.path(), &["dump.zip"]);
    let body = format!(
        "<Error>\n  <Code>InvalidArgument</Code>\n</Error> {} TAIL-PAST-200",
        "x".repeat(300)
    );
    let server = Server::start(vec![Fault::Status(400, body)]);
    server.watch(&outbox);
    let url = server.url("/upload");
    let o = run(&upload_args(
        &url,
        &["--outbox", s(&outbox), "--retries", "5"],
    ));
    assert_eq!(o.status.code(), Some(1));
    let err = stderr(&o);
    assert!(
        err.contains("HTTP 400 Bad Request from")
            && err.contains("<Error> <Code>InvalidArgument</Code> </Error> xxx"),
        "{err}"
    );
    assert!(
        !err.contains("TAIL-PAST-200"),
        "more than the body's start: {err}"
    );
    assert!(
        err.contains("1 of 1 packages not uploaded") && err.contains("dump.zip"),
        "{err}"
    );
    assert_eq!(server.received().len(), 1, "a 400 is not retried");
    assert!(server.stored().is_empty());
    assert_eq!(names_in(&outbox), ["dump.zip"]);

    // The next run finds it and, the server now willing, sends it.
    let o = run(&upload_args(&url, &["--outbox", s(&outbox)]));
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(server.stored()[0].bytes == want);
    assert_eq!(names_in(&outbox.join("sent")), ["dump.zip"]);
}

#[test]
fn retries_run_out_and_the_failure_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let (outbox, _) = outbox_with(dir.path(), &["a.zip", "b.zip"]);
    let now = SystemTime::now();
    for (name, age) in [("a.zip", 20), ("b.zip", 10)] {
        File::options()
            .write(true)
            .open(outbox.join(name))
            .unwrap()
            .set_modified(now - Duration::from_secs(age))
            .unwrap();
    }
    // a.zip (the older) meets three 503s; b.zip goes through.
    let server = Server::start(vec![
        Fault::Status(503, String::new()),
        Fault::Status(503, String::new()),
        Fault::Status(503, String::new()),
    ]);
    let url = server.url("/upload");
    let o = run(&upload_args(
        &url,
        &["--outbox", s(&outbox), "--retries", "2"],
    ));
    assert_eq!(o.status.code(), Some(1));
    let err = stderr(&o);
    assert!(err.contains("a.zip: gave up after 3 attempts"), "{err}");
    assert!(err.contains("1 of 2 packages not uploaded"), "{err}");
    assert_eq!(server.received().len(), 4);
    assert_eq!(names_in(&outbox), ["a.zip", "sent"]);
    assert_eq!(names_in(&outbox.join("sent")), ["b.zip"]);
}

#[test]
fn the_outbox_goes_oldest_first_and_never_takes_temporary_or_hidden_files() {
    let dir = tempfile::tempdir().unwrap();
    let (outbox, _) = outbox_with(
        dir.path(),
        &[
            "mid.zip",
            "new.zip",
            "old.zip",
            ".hidden.zip",
            ".x.zip.Ab12Cd.hprof-shrink-tmp",
        ],
    );
    fs::write(outbox.join("notes.txt"), b"not a zip").unwrap();
    let now = SystemTime::now();
    for (name, age) in [("old.zip", 300), ("mid.zip", 200), ("new.zip", 100)] {
        File::options()
            .write(true)
            .open(outbox.join(name))
            .unwrap()
            .set_modified(now - Duration::from_secs(age))
            .unwrap();
    }
    let server = Server::start(Vec::new());
    let url = server.url("/upload");
    let o = run(&upload_args(&url, &["--outbox", s(&outbox)]));
    assert!(o.status.success(), "{}", stderr(&o));
    let order: Vec<String> = server.stored().into_iter().map(|s| s.file_name).collect();
    assert_eq!(order, ["old.zip", "mid.zip", "new.zip"]);
    assert_eq!(
        names_in(&outbox),
        [
            ".hidden.zip",
            ".x.zip.Ab12Cd.hprof-shrink-tmp",
            "notes.txt",
            "sent"
        ]
    );
}

#[test]
fn delete_after_upload_removes_instead_of_moving() {
    let dir = tempfile::tempdir().unwrap();
    let (outbox, want) = outbox_with(dir.path(), &["a.zip"]);
    let server = Server::start(Vec::new());
    let url = server.url("/upload");
    let o = run(&upload_args(
        &url,
        &["--outbox", s(&outbox), "--delete-after-upload"],
    ));
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(server.stored()[0].bytes == want);
    assert!(names_in(&outbox).is_empty());
}

#[test]
fn a_zip_locked_by_another_run_is_skipped() {
    let dir = tempfile::tempdir().unwrap();
    let (outbox, _) = outbox_with(dir.path(), &["a.zip", "b.zip"]);
    // This process plays the other run, holding a.zip's lock.
    let held = File::open(outbox.join("a.zip")).unwrap();
    held.try_lock().unwrap();
    let server = Server::start(Vec::new());
    let url = server.url("/upload");
    let o = run(&upload_args(&url, &["--outbox", s(&outbox)]));
    let err = stderr(&o);
    assert!(o.status.success(), "{err}");
    assert!(
        err.contains("a.zip: being uploaded by another run; skipped"),
        "{err}"
    );
    let names: Vec<String> = server.stored().into_iter().map(|s| s.file_name).collect();
    assert_eq!(names, ["b.zip"]);
    assert_eq!(names_in(&outbox), ["a.zip", "sent"]);
    drop(held);
    let o = run(&upload_args(&url, &["--outbox", s(&outbox)]));
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(names_in(&outbox.join("sent")), ["a.zip", "b.zip"]);
}

fn once_each(stored: &[Stored], names: &[&str]) {
    let mut got: Vec<&str> = stored.iter().map(|s| s.file_name.as_str()).collect();
    got.sort();
    assert_eq!(got, names, "each zip exactly once");
}

#[test]
fn two_concurrent_runs_send_each_zip_once() {
    let dir = tempfile::tempdir().unwrap();
    let names = ["a.zip", "b.zip", "c.zip", "d.zip", "e.zip", "f.zip"];
    let (outbox, _) = outbox_with(dir.path(), &names);
    let server = Server::start(Vec::new());
    // Slow answers keep both runs busy at the same time.
    server.delay(Duration::from_millis(150));
    let url = server.url("/upload");
    let args = upload_args(&url, &["--outbox", s(&outbox)]);
    let runs: Vec<_> = (0..2)
        .map(|_| {
            bin()
                .args(&args)
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for r in runs {
        let o = r.wait_with_output().unwrap();
        assert!(o.status.success(), "{}", stderr(&o));
    }
    once_each(&server.stored(), &names);
    assert_eq!(names_in(&outbox), ["sent"]);
    assert_eq!(names_in(&outbox.join("sent")), names);
}

#[test]
fn two_threads_draining_one_outbox_send_each_zip_once() {
    let dir = tempfile::tempdir().unwrap();
    let names = ["a.zip", "b.zip", "c.zip", "d.zip"];
    let (outbox, _) = outbox_with(dir.path(), &names);
    let server = Server::start(Vec::new());
    server.delay(Duration::from_millis(150));
    let cfg = UploadConfig::new(server.url("/upload").parse().unwrap());
    let ob = Outbox::new(&outbox);
    let reports: Vec<_> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..2)
            .map(|_| {
                let (cfg, ob) = (cfg.clone(), ob.clone());
                scope.spawn(move || {
                    let up = Uploader::new(cfg).unwrap();
                    ob.drain(&up, AfterUpload::MoveToSent).unwrap()
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    once_each(&server.stored(), &names);
    let sent: usize = reports.iter().map(|r| r.sent.len()).sum();
    assert_eq!(sent, names.len());
    assert!(reports.iter().all(|r| r.failed.is_empty()));
    assert_eq!(names_in(&outbox.join("sent")), names);
}

#[test]
fn put_sends_the_raw_zip_with_content_md5() {
    let dir = tempfile::tempdir().unwrap();
    let zip = make_zip(dir.path(), "dump.zip");
    let want = fs::read(&zip).unwrap();
    let server = Server::start(vec![Fault::Status(502, String::new())]);
    let url = server.url("/bucket/dump.zip?X-Amz-Signature=abc");
    let o = run(&upload_args(&url, &["--method", "put", s(&zip)]));
    let err = stderr(&o);
    assert!(o.status.success(), "{err}");
    let stored = server.stored();
    assert_eq!(stored.len(), 1);
    assert_eq!(stored[0].method, "PUT");
    assert!(stored[0].bytes == want);
    assert_eq!(stored[0].content_type.as_deref(), Some("application/zip"));
    let r = server.received();
    assert_eq!(r.len(), 2);
    for req in &r {
        assert_eq!(req.header("content-md5"), Some(md5_base64(&want).as_str()));
        assert_eq!(
            req.header("content-length"),
            Some(want.len().to_string().as_str())
        );
        assert_eq!(req.path, "/bucket/dump.zip?X-Amz-Signature=abc");
    }
    // The signature in the query is not printed.
    assert!(!err.contains("X-Amz-Signature=abc"), "{err}");
}

#[test]
fn a_body_damaged_on_the_way_is_refused_by_its_content_md5_and_reported() {
    let dir = tempfile::tempdir().unwrap();
    let zip = make_zip(dir.path(), "dump.zip");
    let server = Server::start(Vec::new());
    let proxy = CorruptingProxy::start(server.addr, 1);
    let url = format!("http://{}/bucket/dump.zip", proxy.addr);
    let o = run(&upload_args(&url, &["--method", "put", s(&zip)]));
    assert_eq!(o.status.code(), Some(1));
    let err = stderr(&o);
    assert!(
        err.contains("HTTP 400 Bad Request") && err.contains("BadDigest"),
        "{err}"
    );
    assert_eq!(proxy.corrupted(), 1);
    assert!(server.stored().is_empty());
    assert_eq!(server.received().len(), 1);
}

#[test]
fn shrink_then_upload_and_the_zip_stays_when_the_upload_fails() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out.zip");
    let server = Server::start(vec![Fault::Status(403, "forbidden".into())]);
    let url = server.url("/upload");
    let input = fixture("art-api25.hprof");
    let args = [
        s(&input),
        s(&out),
        "--upload",
        &url,
        "--backoff-ms",
        "10",
        "-q",
    ];
    let o = run(&args);
    assert_eq!(o.status.code(), Some(1));
    let err = stderr(&o);
    assert!(
        err.contains("HTTP 403 Forbidden") && err.contains("stays at"),
        "{err}"
    );
    let first = fs::read(&out).unwrap();

    // The zip from the failed run is there: replaced on purpose.
    let o = run(&[&args[..], &["--force"]].concat());
    assert!(o.status.success(), "{}", stderr(&o));
    let stored = server.stored();
    assert_eq!(stored.len(), 1);
    assert!(stored[0].bytes == fs::read(&out).unwrap());
    // The same input and options give the same zip: a re-run sends identical bytes.
    assert!(first == stored[0].bytes);
    assert_eq!(stored[0].field("sdkVersion"), Some("25"));
}

#[test]
fn shrink_into_an_outbox_then_drain_it() {
    let dir = tempfile::tempdir().unwrap();
    let outbox = dir.path().join("outbox");
    fs::create_dir(&outbox).unwrap();
    let input = fixture("art-api25.hprof");
    for _ in 0..2 {
        let o = run(&[s(&input), "--outbox", s(&outbox), "-q"]);
        assert!(o.status.success(), "{}", stderr(&o));
    }
    // Two dumps of the same name: the second does not replace the first.
    assert_eq!(names_in(&outbox), ["art-api25-2.zip", "art-api25.zip"]);
    let v = run(&[
        "verify",
        s(&outbox.join("art-api25-2.zip")),
        "--against",
        s(&input),
    ]);
    assert!(v.status.success(), "{}", stderr(&v));

    let server = Server::start(Vec::new());
    let url = server.url("/upload");
    let report = dir.path().join("report.json");
    let o = run(&[
        s(&input),
        "--outbox",
        s(&outbox),
        "--upload",
        &url,
        "--report",
        s(&report),
    ]);
    let err = stderr(&o);
    assert!(o.status.success(), "{err}");
    assert_eq!(server.stored().len(), 3);
    assert_eq!(names_in(&outbox), ["sent"]);
    assert_eq!(
        names_in(&outbox.join("sent")),
        ["art-api25-2.zip", "art-api25-3.zip", "art-api25.zip"]
    );
    // The report names where the zip went, not its temporary name.
    let json = fs::read_to_string(&report).unwrap();
    assert!(json.contains("art-api25-3.zip") && !json.contains("hprof-shrink-tmp"));
}

#[test]
fn usage_errors_exit_2() {
    for args in [
        &["upload", "a.zip"][..],
        &["upload", "--url", "http://127.0.0.1:9/"],
        &["upload", "--url", "ftp://127.0.0.1/x", "a.zip"],
        &[
            "upload",
            "--url",
            "http://127.0.0.1:9/",
            "a.zip",
            "--outbox",
            "d",
        ],
        &[
            "upload",
            "--url",
            "http://127.0.0.1:9/",
            "a.zip",
            "--header",
            "NoColon",
        ],
        &[
            "upload",
            "--url",
            "http://127.0.0.1:9/",
            "a.zip",
            "--delete-after-upload",
        ],
        &["in.hprof", "out.zip", "--method", "put"],
        &["in.hprof", "out.zip", "--outbox", "d"],
    ] {
        let o = run(args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
    }
}

#[test]
fn post_needs_a_package_but_put_takes_any_file() {
    let dir = tempfile::tempdir().unwrap();
    let other = dir.path().join("other.zip");
    fs::write(&other, b"PK\x05\x06 not really").unwrap();
    let server = Server::start(Vec::new());
    let url = server.url("/up/other.zip");
    let o = run(&upload_args(&url, &[s(&other)]));
    failed_with(&o, 1, &["not an upload package"]);
    assert_eq!(server.received().len(), 0);
    let o = run(&upload_args(&url, &["--method", "put", s(&other)]));
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(server.stored()[0].bytes, b"PK\x05\x06 not really");
}

const TOKEN: &str = "hs-TEST-TOKEN-8f1c2e9d";

fn with_token(args: &[&str]) -> std::process::Output {
    bin()
        .args(args)
        .env(upload::TOKEN_ENV, TOKEN)
        .output()
        .unwrap()
}

fn no_token(o: &std::process::Output) {
    for (what, text) in [("stdout", &o.stdout), ("stderr", &o.stderr)] {
        let text = String::from_utf8_lossy(text);
        assert!(!text.contains(TOKEN), "token in {what}: {text}");
    }
}

#[test]
fn a_redirect_to_another_host_drops_the_token_and_the_same_host_keeps_it() {
    let dir = tempfile::tempdir().unwrap();
    let zip = make_zip(dir.path(), "a.zip");
    let want = fs::read(&zip).unwrap();
    let other = Server::start(Vec::new());
    // 127.0.0.1 → localhost: another host to the client, though the same machine.
    let first = Server::start(vec![Fault::Redirect(307, other.url_localhost("/final"))]);
    let url = first.url("/upload");
    let o = with_token(&upload_args(&url, &["--verbose", s(&zip)]));
    no_token(&o);
    let err = stderr(&o);
    assert!(o.status.success(), "{err}");
    assert!(
        err.contains("another origin: credentials not sent"),
        "{err}"
    );
    let bearer = format!("Bearer {TOKEN}");
    assert_eq!(
        first.received()[0].header("authorization"),
        Some(bearer.as_str())
    );
    let r = other.received();
    assert_eq!(r.len(), 1);
    assert_eq!(r[0].header("authorization"), None);
    assert_eq!(r[0].path, "/final");
    assert!(other.stored()[0].bytes == want);

    // A 302 on the same origin keeps the token, and the method: the upload is sent again
    // as a POST, never turned into a GET.
    let same = Server::start(vec![Fault::Redirect(302, "/moved".into())]);
    let url = same.url("/upload");
    let o = with_token(&upload_args(&url, &[s(&zip)]));
    no_token(&o);
    assert!(o.status.success(), "{}", stderr(&o));
    let r = same.received();
    assert_eq!(r.len(), 2);
    for req in &r {
        assert_eq!(req.method, "POST");
        assert_eq!(req.header("authorization"), Some(bearer.as_str()));
    }
    assert!(same.stored()[0].bytes == want);
}

#[test]
fn the_token_appears_nowhere_in_the_output() {
    let dir = tempfile::tempdir().unwrap();
    let zip = make_zip(dir.path(), "a.zip");

    // A success, with every request logged.
    let server = Server::start(Vec::new());
    let url = server.url("/upload");
    let o = with_token(&upload_args(&url, &["--verbose", s(&zip)]));
    no_token(&o);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("authorization (from HPROF_SHRINK_TOKEN)"),
        "{}",
        stderr(&o)
    );
    let bearer = format!("Bearer {TOKEN}");
    assert_eq!(
        server.received()[0].header("authorization"),
        Some(bearer.as_str())
    );

    // A server that quotes the token back in its error body.
    let server = Server::start(vec![Fault::EchoAuth(401)]);
    let url = server.url("/upload");
    let o = with_token(&upload_args(&url, &["--verbose", s(&zip)]));
    no_token(&o);
    failed_with(&o, 1, &["HTTP 401 Unauthorized", "Bearer ***"]);

    // Nobody listening, retried, with a shrink and its JSON report.
    let closed = format!("http://127.0.0.1:{}/upload", free_port());
    let report = dir.path().join("report.json");
    let o = with_token(&[
        s(&fixture("art-api25.hprof")),
        s(&dir.path().join("out.zip")),
        "--upload",
        &closed,
        "--retries",
        "1",
        "--backoff-ms",
        "10",
        "--verbose",
        "--report",
        s(&report),
    ]);
    no_token(&o);
    failed_with(&o, 1, &["cannot connect"]);
    assert!(!fs::read_to_string(&report).unwrap().contains(TOKEN));

    // A usage error, and the help.
    let o = with_token(&upload_args(&url, &["--header", "broken", s(&zip)]));
    no_token(&o);
    assert_eq!(o.status.code(), Some(2));
    let o = with_token(&["upload", "--help"]);
    no_token(&o);
    assert!(o.status.success());
}

/// A certificate for localhost and 127.0.0.1 signed by itself, and its PEM in `dir`.
fn self_signed(dir: &Path) -> (Server, PathBuf) {
    let ck =
        rcgen::generate_simple_self_signed(vec!["localhost".into(), "127.0.0.1".into()]).unwrap();
    let pem = dir.join("ca.pem");
    fs::write(&pem, ck.cert.pem()).unwrap();
    let key = rustls::pki_types::PrivateKeyDer::Pkcs8(ck.signing_key.serialize_der().into());
    (Server::start_tls(ck.cert.der().clone(), key), pem)
}

#[test]
fn tls_is_verified_unless_insecure_which_warns() {
    let dir = tempfile::tempdir().unwrap();
    let zip = make_zip(dir.path(), "a.zip");
    let (server, ca) = self_signed(dir.path());
    let url = server.url("/upload");

    let o = run(&upload_args(&url, &["--retries", "3", s(&zip)]));
    assert_eq!(o.status.code(), Some(1));
    let err = stderr(&o);
    assert!(
        err.contains("TLS certificate") && err.contains("not retried"),
        "{err}"
    );
    assert_eq!(
        server.connections(),
        1,
        "an untrusted certificate is not retried"
    );
    assert!(server.stored().is_empty());

    let o = run(&upload_args(&url, &["--cacert", s(&ca), s(&zip)]));
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(server.stored().len(), 1);
    assert!(!stderr(&o).contains("WARNING"));

    let o = run(&upload_args(&url, &["--insecure", "-q", s(&zip)]));
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(server.stored().len(), 2);
    assert!(
        stderr(&o).contains("WARNING: --insecure") && stderr(&o).contains("only for testing"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn a_redirect_from_https_to_http_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let zip = make_zip(dir.path(), "a.zip");
    let plain = Server::start(Vec::new());
    let ck = rcgen::generate_simple_self_signed(vec!["127.0.0.1".into()]).unwrap();
    let pem = dir.path().join("ca.pem");
    fs::write(&pem, ck.cert.pem()).unwrap();
    let key = rustls::pki_types::PrivateKeyDer::Pkcs8(ck.signing_key.serialize_der().into());
    let tls = Server::start_tls_with(
        ck.cert.der().clone(),
        key,
        vec![Fault::Redirect(307, plain.url("/plain"))],
    );
    let url = tls.url("/upload");
    let o = run(&upload_args(&url, &["--cacert", s(&pem), s(&zip)]));
    failed_with(&o, 1, &["from https to http"]);
    assert_eq!(plain.connections(), 0);
}

#[test]
fn batch_uploads_each_package_it_makes_or_drains_an_outbox_at_the_end() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in");
    fs::create_dir(&input).unwrap();
    // The batch over those three dumps into `out`, with more options.
    let batch = |out: &Path, more: &[&str]| {
        let mut args = vec!["batch", s(&input), "--out-dir", s(out), "-q"];
        args.extend_from_slice(more);
        run(&args)
    };
    for name in ["art-api25.hprof", "art-api26.hprof", "synthetic-id8.hprof"] {
        fs::copy(fixture(name), input.join(name)).unwrap();
    }
    // Straight to the server; one 503 on the way is retried.
    let server = Server::start(vec![Fault::Status(503, "busy".into())]);
    let url = server.url("/upload");
    let out = dir.path().join("out");
    let report = dir.path().join("batch.json");
    let o = batch(
        &out,
        &[
            "-j",
            "2",
            "--upload",
            &url,
            "--backoff-ms",
            "10",
            "--report",
            s(&report),
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let stored = server.stored();
    assert_eq!(stored.len(), 3);
    for st in &stored {
        let made = fs::read(out.join(&st.file_name)).unwrap();
        assert!(
            made == st.bytes,
            "{}: the server got other bytes",
            st.file_name
        );
    }
    let r: serde_json::Value = serde_json::from_str(&fs::read_to_string(&report).unwrap()).unwrap();
    let entries = r["entries"].as_array().unwrap();
    assert_eq!(entries.len(), 3);
    assert!(entries.iter().all(|e| e["uploaded"] == true));

    // Through an outbox: the packages are put there, then everything there is uploaded.
    let server = Server::start(Vec::new());
    let url = server.url("/upload");
    let outbox = dir.path().join("outbox");
    let out2 = dir.path().join("out2");
    let o = batch(&out2, &["--outbox", s(&outbox), "--upload", &url]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(server.stored().len(), 3);
    assert_eq!(names_in(&outbox), ["sent"]);
    assert_eq!(
        names_in(&outbox.join("sent")),
        ["art-api25.zip", "art-api26.zip", "synthetic-id8.zip"]
    );

    // A server that refuses: the packages stay, the exit says not all is done.
    let server = Server::start(vec![
        Fault::Status(400, "no".into()),
        Fault::Status(400, "no".into()),
        Fault::Status(400, "no".into()),
    ]);
    let url = server.url("/upload");
    let out3 = dir.path().join("out3");
    let o = batch(&out3, &["--upload", &url, "-j", "1"]);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    // The three packages stay, each with the state that says it is not uploaded yet.
    let names = names_in(&out3);
    assert_eq!(names.iter().filter(|n| n.ends_with(".zip")).count(), 3);
    assert_eq!(
        names
            .iter()
            .filter(|n| n.ends_with(".zip.hprof-shrink-state"))
            .count(),
        3,
        "{names:?}"
    );
}

#[test]
fn a_batch_rerun_finishes_every_hand_off_that_was_not_confirmed() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in");
    fs::create_dir(&input).unwrap();
    for name in ["art-api25.hprof", "art-api26.hprof"] {
        fs::copy(fixture(name), input.join(name)).unwrap();
    }
    let batch = |out: &Path, more: &[&str]| {
        let mut args = vec!["batch", s(&input), "--out-dir", s(out), "-q", "-j", "1"];
        args.extend_from_slice(more);
        run(&args)
    };

    // The upload fails (a refusing server): the packages are made, not sent.
    let refusing = Server::start(vec![
        Fault::Status(400, "no".into()),
        Fault::Status(400, "no".into()),
    ]);
    let out = dir.path().join("out");
    let o = batch(&out, &["--upload", &refusing.url("/upload")]);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    assert!(refusing.stored().is_empty());
    // The re-run sends both, without making them again, and says all is done.
    let server = Server::start(Vec::new());
    let report = dir.path().join("r.json");
    let o = batch(
        &out,
        &["--upload", &server.url("/upload"), "--report", s(&report)],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let stored = server.stored();
    assert_eq!(stored.len(), 2);
    for st in &stored {
        assert!(fs::read(out.join(&st.file_name)).unwrap() == st.bytes);
    }
    let r: serde_json::Value = serde_json::from_str(&fs::read_to_string(&report).unwrap()).unwrap();
    for e in r["entries"].as_array().unwrap() {
        assert_eq!(e["status"], "exists", "{e}");
        assert_eq!(e["uploaded"], true, "{e}");
    }
    // Once confirmed, a third run sends nothing.
    let o = batch(&out, &["--upload", &server.url("/upload")]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(server.stored().len(), 2);

    // Packages made by a run that died before the outbox took them (here: a run without
    // --outbox) are admitted by the next run that has one, and uploaded.
    let out2 = dir.path().join("out2");
    let o = batch(&out2, &[]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let outbox = dir.path().join("outbox");
    let server = Server::start(Vec::new());
    let o = batch(
        &out2,
        &["--outbox", s(&outbox), "--upload", &server.url("/upload")],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(server.stored().len(), 2);
    assert_eq!(
        names_in(&outbox.join("sent")),
        ["art-api25.zip", "art-api26.zip"]
    );
    // And never queued twice.
    let o = batch(&out2, &["--outbox", s(&outbox)]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(names_in(&outbox), ["sent"]);
}

const API_KEY: &str = "k-APIKEY-5d0e1f";
const COOKIE: &str = "session=c00k1e-77aa";
const BASIC: &str = "dXNlcjpzM2NyM3QtcGFzcw==";

fn no_header_values(o: &std::process::Output) {
    for (what, text) in [("stdout", &o.stdout), ("stderr", &o.stderr)] {
        let text = String::from_utf8_lossy(text);
        for secret in [API_KEY, "c00k1e-77aa", BASIC] {
            assert!(!text.contains(secret), "{secret} in {what}: {text}");
        }
    }
}

#[test]
fn header_values_are_never_printed_even_when_a_server_echoes_them() {
    let dir = tempfile::tempdir().unwrap();
    let zip = make_zip(dir.path(), "a.zip");
    let headers = [
        "--header",
        &format!("X-Api-Key: {API_KEY}"),
        "--header",
        &format!("Cookie: {COOKIE}"),
        "--header",
        &format!("Authorization: Basic {BASIC}"),
    ]
    .map(String::from);
    let headers: Vec<&str> = headers.iter().map(String::as_str).collect();
    // Echoed in a retried 503 (retry lines) and in the final 401.
    let server = Server::start(vec![
        Fault::EchoHeaders(503, 10),
        Fault::EchoHeaders(401, 10),
    ]);
    let url = server.url("/upload");
    let mut args = upload_args(&url, &["--verbose"]);
    args.extend_from_slice(&headers);
    args.push(s(&zip));
    let o = run(&args);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    no_header_values(&o);
    let err = stderr(&o);
    assert!(err.contains("x-api-key: ***"), "{err}");
    // The server did get them.
    assert_eq!(server.received()[0].header("x-api-key"), Some(API_KEY));
}

#[test]
fn extra_headers_go_to_another_host_only_when_asked() {
    let dir = tempfile::tempdir().unwrap();
    let zip = make_zip(dir.path(), "a.zip");
    for follow in [false, true] {
        let other = Server::start(Vec::new());
        let first = Server::start(vec![Fault::Redirect(307, other.url_localhost("/final"))]);
        let url = first.url("/upload");
        let key = format!("X-Api-Key: {API_KEY}");
        let cookie = format!("Cookie: {COOKIE}");
        let mut args = upload_args(&url, &["--header", &key, "--header", &cookie]);
        if follow {
            args.push("--header-follows-redirects");
        }
        args.push(s(&zip));
        let o = run(&args);
        assert!(o.status.success(), "{}", stderr(&o));
        no_header_values(&o);
        assert_eq!(first.received()[0].header("x-api-key"), Some(API_KEY));
        let r = other.received();
        assert_eq!(r.len(), 1);
        let want = follow.then_some(API_KEY);
        assert_eq!(r[0].header("x-api-key"), want, "follow: {follow}");
        // Credentials never follow.
        assert_eq!(r[0].header("cookie"), None);
        assert_eq!(other.stored().len(), 1);
    }
}

#[test]
fn a_deadline_bounds_the_whole_run_even_against_a_black_hole() {
    let dir = tempfile::tempdir().unwrap();
    let (outbox, _) = outbox_with(dir.path(), &["a.zip", "b.zip"]);
    // Connections are taken (the kernel's backlog) and never answered.
    let hole = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/upload", hole.local_addr().unwrap());
    let t = Instant::now();
    let o = run(&upload_args(
        &url,
        &[
            "--outbox",
            s(&outbox),
            "--deadline",
            "2",
            "--timeout",
            "300",
        ],
    ));
    let took = t.elapsed();
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    // Without the deadline this is 6 attempts of 300 s for each zip.
    assert!(took < Duration::from_secs(30), "took {took:?}");
    let err = stderr(&o);
    assert!(err.contains("within the --deadline"), "{err}");
    // Both zips stay for the next run.
    assert_eq!(names_in(&outbox), ["a.zip", "b.zip"]);
}

#[test]
fn an_unreachable_server_stops_the_outbox_after_two_zips() {
    let dir = tempfile::tempdir().unwrap();
    let (outbox, _) = outbox_with(dir.path(), &["a.zip", "b.zip", "c.zip", "d.zip"]);
    let closed = format!("http://127.0.0.1:{}/upload", free_port());
    let o = run(&upload_args(
        &closed,
        &["--outbox", s(&outbox), "--retries", "1"],
    ));
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains("stopped: 2 packages in a row found the server unreachable; 2 packages left"),
        "{err}"
    );
    assert_eq!(err.matches("gave up after").count(), 2, "{err}");
    assert!(err.contains("(not tried)"), "{err}");
    assert_eq!(names_in(&outbox), ["a.zip", "b.zip", "c.zip", "d.zip"]);
}

#[test]
fn what_a_killed_run_left_in_the_outbox_is_adopted_or_removed() {
    let dir = tempfile::tempdir().unwrap();
    let outbox = dir.path().join("outbox");
    fs::create_dir(&outbox).unwrap();
    // A process id no process has (above the kernel's largest).
    let dead = 4_194_305u32;
    let live = std::process::id();
    // Killed between writing the zip and admitting it: a whole package, hidden.
    let whole = make_zip(dir.path(), "w.zip");
    fs::copy(
        &whole,
        outbox.join(format!(".leak.zip.{dead}.a1b2c3.hprof-shrink-incoming")),
    )
    .unwrap();
    // Killed while writing: not a package.
    fs::write(
        outbox.join(format!(".half.zip.{dead}.d4e5f6.hprof-shrink-incoming")),
        b"PK\x03\x04 cut",
    )
    .unwrap();
    // A run that is alive: left alone.
    let busy = outbox.join(format!(".busy.zip.{live}.g7h8i9.hprof-shrink-incoming"));
    fs::copy(&whole, &busy).unwrap();

    let server = Server::start(Vec::new());
    let o = run(&upload_args(
        &server.url("/upload"),
        &["--outbox", s(&outbox)],
    ));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains("a complete zip a killed run had not admitted is now"),
        "{err}"
    );
    assert!(
        err.contains("removed an unfinished file a killed run left"),
        "{err}"
    );
    let stored = server.stored();
    assert_eq!(stored.len(), 1);
    assert_eq!(stored[0].file_name, "leak.zip");
    assert!(stored[0].bytes == fs::read(&whole).unwrap());
    assert_eq!(names_in(&outbox.join("sent")), ["leak.zip"]);
    let mut left = names_in(&outbox);
    left.sort();
    assert_eq!(
        left,
        [
            busy.file_name().unwrap().to_string_lossy().into_owned(),
            "sent".to_string()
        ]
    );

    // A shrink into the outbox takes up the same debris before it writes.
    fs::copy(
        &whole,
        outbox.join(format!(".old.zip.{dead}.j1k2l3.hprof-shrink-incoming")),
    )
    .unwrap();
    let o = run(&[s(&fixture("art-api26.hprof")), "--outbox", s(&outbox), "-q"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let mut left = names_in(&outbox);
    left.sort();
    assert!(left.contains(&"old.zip".to_string()), "{left:?}");
    assert!(left.contains(&"art-api26.zip".to_string()), "{left:?}");
}

#[test]
fn a_connect_timeout_is_named_as_one() {
    let dir = tempfile::tempdir().unwrap();
    let zip = make_zip(dir.path(), "a.zip");
    // A listener that never accepts, its backlog filled: new connections are not
    // completed (the kernel drops their SYNs), so connecting times out.
    let hole = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = hole.local_addr().unwrap();
    let mut held = Vec::new();
    while held.len() < 1024 {
        match std::net::TcpStream::connect_timeout(&addr, Duration::from_millis(200)) {
            Ok(c) => held.push(c),
            Err(_) => break,
        }
    }
    assert!(held.len() < 1024, "the backlog never filled");
    let url = format!("http://{addr}/upload");
    let o = run(&upload_args(
        &url,
        &["--connect-timeout", "1", "--retries", "0", s(&zip)],
    ));
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("cannot connect to"), "{err}");
    assert!(err.contains("within 1 s (--connect-timeout)"), "{err}");
    assert!(!err.contains("300"), "{err}");
}

#[test]
fn an_undelivered_package_is_sent_before_a_redump_replaces_it() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in");
    fs::create_dir(&input).unwrap();
    let dump = input.join("leak.hprof");
    fs::copy(fixture("art-api25.hprof"), &dump).unwrap();
    let out = dir.path().join("out");
    let batch = |url: &str| {
        run(&[
            "batch",
            s(&input),
            "--out-dir",
            s(&out),
            "-q",
            "--upload",
            url,
            "--retries",
            "0",
        ])
    };
    // Run 1: made, not delivered.
    let refusing = Server::start(vec![Fault::Status(400, "no".into())]);
    assert_eq!(batch(&refusing.url("/u")).status.code(), Some(3));
    let first = fs::read(out.join("leak.zip")).unwrap();
    // The app dumps again; the server still refuses: the old package stays, not replaced.
    fs::copy(fixture("hotspot-android.hprof"), &dump).unwrap();
    let refusing = Server::start(vec![Fault::Status(400, "no".into())]);
    let o = batch(&refusing.url("/u"));
    failed_with(&o, 4, &["never delivered"]);
    assert!(fs::read(out.join("leak.zip")).unwrap() == first);
    // The server takes uploads again: the old package goes first, then the new one.
    let server = Server::start(Vec::new());
    let o = batch(&server.url("/u"));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let stored = server.stored();
    assert_eq!(stored.len(), 2);
    assert!(stored[0].bytes == first, "the earlier dump's package first");
    assert!(stored[1].bytes == fs::read(out.join("leak.zip")).unwrap());
    assert!(stored[1].bytes != first);
}

#[test]
fn a_signal_stops_an_upload_at_once_and_every_zip_stays_in_the_outbox() {
    let dir = tempfile::tempdir().unwrap();
    let (outbox, _) = outbox_with(dir.path(), &["a.zip", "b.zip"]);
    // The first upload is taken, then answered only after 30 s: the signal comes first.
    let server = Server::start(vec![Fault::SlowStore(Duration::from_secs(30))]);
    let url = server.url("/upload");
    let child = bin()
        .args(upload_args(&url, &["--outbox", s(&outbox)]))
        .stderr(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let t = Instant::now();
    while server.stored().is_empty() {
        assert!(t.elapsed() < Duration::from_secs(20), "nothing arrived");
        std::thread::sleep(Duration::from_millis(10));
    }
    // SAFETY: kill(2) on our own child's pid.
    unsafe {
        libc::kill(child.id() as i32, libc::SIGINT);
    }
    let t = Instant::now();
    let o = child.wait_with_output().unwrap();
    assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(130), "{err}");
    assert!(err.ends_with("hprof-shrink: cancelled\n"), "{err}");
    // Unanswered is not delivered: both wait for the next run, nothing half-moved.
    assert_eq!(names_in(&outbox), ["a.zip", "b.zip"]);
    assert_eq!(server.stored().len(), 1);
}
