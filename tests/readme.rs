//! The README's examples, run as written on the README's own fixture: what a newcomer
//! copies must show something.

mod common;

use std::io::Read;
use std::path::Path;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use common::*;

fn readme() -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")).unwrap()
}

/// `serve` as a child process, killed when dropped.
struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// GET `url` with the read token; the status and the body as JSON.
fn get(url: &str) -> (u16, serde_json::Value) {
    // reqwest is built without a default TLS provider; plain HTTP still needs one set.
    let _ = rustls::crypto::ring::default_provider().install_default();
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(async {
            let r = reqwest::Client::builder()
                .no_proxy()
                .build()
                .unwrap()
                .get(url)
                .bearer_auth("r")
                .send()
                .await
                .unwrap();
            let status = r.status().as_u16();
            let body = r.bytes().await.unwrap();
            (status, serde_json::from_slice(&body).unwrap_or_default())
        })
}

#[test]
fn the_readmes_leaks_query_shows_the_leak_of_the_readmes_fixture() {
    let readme = readme();
    // The fixture the README's first commands shrink and analyze.
    let fixture_name = "fixtures/art-api25.hprof";
    assert!(
        readme.contains(fixture_name),
        "the README names another fixture"
    );
    let query = readme
        .lines()
        .filter(|l| l.contains("curl"))
        .find_map(|l| l.split_once("/api/leaks?"))
        .map(|(_, q)| q.trim().trim_end_matches('"').to_string())
        .expect("the README has a curl .../api/leaks?QUERY example");

    let dir = tempfile::tempdir().unwrap();
    let zip = dir.path().join("art-api25.zip");
    let o = run(&[
        "-q",
        s(&Path::new(env!("CARGO_MANIFEST_DIR")).join(fixture_name)),
        s(&zip),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));

    // The README's server: the two tokens from the environment.
    let log = dir.path().join("serve.log");
    let server = Server(
        bin()
            .args(["serve", "--data", s(&dir.path().join("data"))])
            .args(["--listen", "127.0.0.1:0"])
            .env("HPROF_SHRINK_UPLOAD_TOKEN", "u")
            .env("HPROF_SHRINK_READ_TOKEN", "r")
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .unwrap(),
    );
    let t0 = Instant::now();
    let base = loop {
        let mut text = String::new();
        std::fs::File::open(&log)
            .unwrap()
            .read_to_string(&mut text)
            .unwrap();
        if let Some(addr) = text
            .split_once("serving on ")
            .and_then(|(_, rest)| rest.split_whitespace().next())
        {
            break addr.to_string();
        }
        assert!(t0.elapsed() < Duration::from_secs(60), "serve: {text}");
        std::thread::sleep(Duration::from_millis(20));
    };

    let o = bin()
        .args([
            "upload",
            "-q",
            s(&zip),
            "--url",
            &format!("{base}/api/packages"),
        ])
        .env("HPROF_SHRINK_TOKEN", "u")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let t0 = Instant::now();
    loop {
        let (status, p) = get(&format!("{base}/api/packages/1"));
        assert_eq!(status, 200, "{p}");
        match p["package"]["state"].as_str() {
            Some("done") => break,
            Some("failed") => panic!("the analysis failed: {p}"),
            _ => {}
        }
        assert!(t0.elapsed() < Duration::from_secs(120), "not analyzed: {p}");
        std::thread::sleep(Duration::from_millis(50));
    }

    let (status, leaks) = get(&format!("{base}/api/leaks?{query}"));
    assert_eq!(status, 200, "{leaks}");
    let groups: Vec<&serde_json::Value> = ["appLeaks", "libraryLeaks"]
        .iter()
        .flat_map(|k| leaks[k].as_array().into_iter().flatten())
        .collect();
    assert!(
        groups.iter().any(|g| g["className"]
            .as_str()
            .is_some_and(|c| c.contains("LeakyActivity"))),
        "/api/leaks?{query} shows nothing of the README's fixture: {leaks}"
    );
    drop(server);
}
