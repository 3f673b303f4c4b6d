//! `serve` beyond one machine: real `hprof-shrink serve` processes on one PostgreSQL (a
//! throwaway cluster made here from Debian's postgresql, see scripts/setup-postgres.sh) and
//! one S3 bucket (moto's server, see tests/support/moto.rs): two servers taking uploads,
//! two `serve --worker` processes claiming jobs under a lease; one server SIGKILLed, one
//! worker frozen past its lease (it must not record what another retook) and then
//! SIGKILLed, part-way. Then every package must be stored once, recorded once, analyzed
//! once, and every leak group counted right.
//!
//! Skipped, saying why, when PostgreSQL or the Python environment is missing outside CI,
//! or when scripts/setup-postgres.sh could not install PostgreSQL (no apt-get); under CI
//! with apt-get their absence is a failure (scripts/test.sh sets both up).

#[path = "common/serve.rs"]
mod serve_common;
mod support;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use hprof_shrink_serve::store::Store;
use reqwest::{multipart, Client};
use serde_json::Value;
use support::moto::{python, Moto, BUCKET};
use support::*;

/// The directory of initdb, pg_ctl and postgres, or None (with the reason printed) where
/// this is allowed.
fn pg_bin() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("HPROF_SHRINK_PG_BIN").filter(|p| !p.is_empty()) {
        return Some(PathBuf::from(p));
    }
    let ci = std::env::var_os("CI").is_some();
    if let Ok(why) = std::env::var("HPROF_SHRINK_NO_POSTGRES") {
        assert!(
            !ci || !Path::new("/usr/bin/apt-get").exists(),
            "CI with apt-get, but PostgreSQL could not be set up: {why}"
        );
        println!("skipped: {why}");
        return None;
    }
    assert!(
        !ci,
        "HPROF_SHRINK_PG_BIN is not set but CI is: run scripts/test.sh, which sets it"
    );
    println!("skipped: HPROF_SHRINK_PG_BIN is not set (scripts/test.sh sets it with scripts/setup-postgres.sh)");
    None
}

/// A PostgreSQL cluster of its own in a temporary directory, on a free loopback port,
/// stopped and removed when dropped. PostgreSQL refuses to run as root: as root, it runs
/// as Debian's `postgres` user.
struct Pg {
    dir: tempfile::TempDir,
    bin: PathBuf,
    port: u16,
    as_postgres: bool,
}

impl Pg {
    fn start(bin: PathBuf) -> Pg {
        let as_postgres = unsafe { libc::geteuid() } == 0;
        // The postgres user must reach the directory: under /tmp, whatever TMPDIR says (a
        // root's TMPDIR may sit in a directory only root can enter).
        let dir = if as_postgres && Path::new("/tmp").is_dir() {
            tempfile::tempdir_in("/tmp").unwrap()
        } else {
            tempfile::tempdir().unwrap()
        };
        if as_postgres {
            let o = Command::new("chown")
                .args(["postgres:", s(dir.path())])
                .output()
                .unwrap();
            assert!(o.status.success(), "chown: {}", stderr(&o));
        }
        let mut pg = Pg {
            dir,
            bin,
            port: 0,
            as_postgres,
        };
        let data = pg.data();
        let o = pg
            .cmd("initdb")
            .args([
                "-D",
                s(&data),
                "-U",
                "hprof",
                "-A",
                "trust",
                "-E",
                "UTF8",
                "--no-sync",
            ])
            .output()
            .unwrap();
        assert!(o.status.success(), "initdb: {}", stderr(&o));
        let mut last = String::new();
        for _ in 0..3 {
            pg.port = free_port();
            let opts = format!(
                "-p {} -k {} -c listen_addresses=127.0.0.1 -c max_connections=100",
                pg.port,
                s(pg.dir.path())
            );
            let log = pg.dir.path().join("pg.log");
            let o = pg
                .cmd("pg_ctl")
                .args([
                    "-D",
                    s(&data),
                    "-l",
                    s(&log),
                    "-w",
                    "-t",
                    "60",
                    "-o",
                    &opts,
                    "start",
                ])
                .output()
                .unwrap();
            if o.status.success() {
                return pg;
            }
            // The port was taken between choosing it and binding it: another one.
            last = format!(
                "{}{}",
                stderr(&o),
                std::fs::read_to_string(&log).unwrap_or_default()
            );
        }
        panic!("PostgreSQL did not start in 3 tries: {last}");
    }

    fn data(&self) -> PathBuf {
        self.dir.path().join("pgdata")
    }

    fn cmd(&self, program: &str) -> Command {
        let exe = self.bin.join(program);
        if self.as_postgres {
            let mut c = Command::new("runuser");
            c.args(["-u", "postgres", "--"]).arg(exe);
            c
        } else {
            Command::new(exe)
        }
    }

    fn url(&self) -> String {
        format!("postgres://hprof@127.0.0.1:{}/postgres", self.port)
    }
}

impl Drop for Pg {
    fn drop(&mut self) {
        let _ = self
            .cmd("pg_ctl")
            .args(["-D", s(&self.data()), "-m", "immediate", "-w", "stop"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }
}

/// A `serve` process; its stderr goes to a file the test reads.
struct Proc {
    child: Child,
    log: PathBuf,
}

impl Proc {
    fn spawn(args: &[&str], env: &[(&str, String)], log: &Path) -> Proc {
        let err = std::fs::File::create(log).unwrap();
        let mut c = bin();
        // Nothing kept free on the disk, so a nearly full test machine does not 507.
        c.args(["serve", "--keep-free", "0"]).args(args);
        for (k, v) in env {
            c.env(k, v);
        }
        let child = c.stdout(Stdio::null()).stderr(err).spawn().unwrap();
        Proc {
            child,
            log: log.to_path_buf(),
        }
    }

    fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    fn wait_for(&mut self, needle: &str) {
        let t0 = Instant::now();
        while !self.log().contains(needle) {
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!("serve exited ({status}) before {needle:?}: {}", self.log());
            }
            assert!(
                t0.elapsed() < Duration::from_secs(60),
                "no {needle:?}: {}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn signal(&self, sig: libc::c_int) {
        let pid = self.child.id() as libc::pid_t;
        assert_eq!(unsafe { libc::kill(pid, sig) }, 0, "kill({pid}, {sig})");
    }

    /// SIGKILL: no chance to finish anything.
    fn kill(&mut self) {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The art-leaks fixture's scenarios a package can name (its leakedActivityKey): each a
/// leak of its own signature; the last a known framework leak (a library leak).
const SCENARIOS: &[(&str, &str)] = &[
    ("static-chain", "com.example.StaticChainActivity"),
    ("thread-local", "com.example.ThreadLocalActivity"),
    ("listener", "com.example.ListenerActivity"),
    ("library-leak", ""),
];

/// One package per scenario, made by the CLI.
fn scenario_packages(dir: &Path) -> Vec<PathBuf> {
    SCENARIOS
        .iter()
        .map(|(name, _)| {
            let out = dir.join(format!("{name}.zip"));
            let o = run(&[
                s(&fixture("art-leaks.hprof")),
                s(&out),
                "-q",
                "--leaked-activity-key",
                &format!("MATRIX_RESCANARY_REFKEY_art-leaks_{name}"),
            ]);
            assert!(o.status.success(), "{}", stderr(&o));
            out
        })
        .collect()
}

fn client() -> Client {
    // reqwest is built without a default TLS provider; plain HTTP still needs one set.
    let _ = rustls::crypto::ring::default_provider().install_default();
    Client::builder()
        .no_proxy()
        .timeout(Duration::from_secs(30))
        .build()
        .unwrap()
}

/// POSTs `body` to the server `first` (of `bases`), and to the other one whenever an
/// attempt fails (no connection, a reset, a 5xx): what a load balancer does for a server
/// that died. Returns the answer's status and JSON.
async fn upload(http: &Client, bases: &[String], first: usize, body: &[u8]) -> (u16, Value) {
    let md5 = md5_hex(body);
    let mut last = String::new();
    for attempt in 0..20 {
        let base = &bases[(first + attempt) % bases.len()];
        let form = multipart::Form::new().text("md5", md5.clone()).part(
            "file",
            multipart::Part::bytes(body.to_vec()).file_name("p.zip"),
        );
        match http
            .post(format!("{base}/api/packages"))
            .multipart(form)
            .send()
            .await
        {
            Ok(r) if r.status().is_success() => {
                let status = r.status().as_u16();
                return (
                    status,
                    serde_json::from_slice(&r.bytes().await.unwrap()).unwrap(),
                );
            }
            Ok(r) => last = format!("{}: {}", r.status(), r.text().await.unwrap_or_default()),
            Err(e) => last = e.to_string(),
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("upload of {md5} failed 20 times: {last}");
}

async fn get_json(http: &Client, url: &str) -> Value {
    let r = http.get(url).send().await.unwrap();
    assert!(r.status().is_success(), "{url}: {}", r.status());
    serde_json::from_slice(&r.bytes().await.unwrap()).unwrap()
}

/// Every line of `log` naming a package after `prefix` ("analyzing package 12 (attempt
/// 1)" → 12).
fn ids_after(log: &str, prefix: &str) -> Vec<i64> {
    log.lines()
        .filter_map(|l| l.split_once(prefix))
        .filter_map(|(_, rest)| {
            rest.split(|c: char| !c.is_ascii_digit())
                .next()?
                .parse()
                .ok()
        })
        .collect()
}

/// Freezes the worker (SIGSTOP) at a moment it holds a job, after it finished at least
/// `after` of them, and returns that job; frozen, its log cannot move on between the look
/// and what the caller does next. Jobs in `not` are not counted as held.
async fn holding_a_job(w: &mut Proc, after: usize, not: &[i64]) -> i64 {
    let t = Instant::now();
    loop {
        w.signal(libc::SIGSTOP);
        // Let a write under way land in the file.
        tokio::time::sleep(Duration::from_millis(5)).await;
        let log = w.log();
        let finished: HashSet<i64> = ids_after(&log, "analyzed package ").into_iter().collect();
        let open: Vec<i64> = ids_after(&log, "analyzing package ")
            .into_iter()
            .filter(|id| !finished.contains(id) && !not.contains(id))
            .collect();
        if finished.len() >= after && open.len() == 1 {
            return open[0];
        }
        w.signal(libc::SIGCONT);
        assert!(t.elapsed() < Duration::from_secs(60), "worker: {log}");
        tokio::time::sleep(Duration::from_millis(7)).await;
    }
}

const DISTINCT: usize = 300;
const DUPLICATES: usize = 6;
const CLIENTS: usize = 6;
const LEASE: &str = "2";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[allow(clippy::too_many_lines)] // a scenario, step by step
async fn two_servers_two_workers_on_postgres_and_s3_lose_nothing_when_killed() {
    let Some(pg_bin) = pg_bin() else { return };
    let Some(py) = python() else { return };
    let t_start = Instant::now();
    let dir = tempfile::tempdir().unwrap();
    let bases: Vec<Vec<u8>> = scenario_packages(dir.path())
        .iter()
        .map(|p| std::fs::read(p).unwrap())
        .collect();
    // Package i: scenario i % 4, app version 1.(i % 3); then a few sent again.
    let bodies: Vec<Vec<u8>> = (0..DISTINCT)
        .map(|i| {
            serve_common::variant(
                &bases[i % SCENARIOS.len()],
                &format!("appVersion=1.{}\nseq={i}\n", i % 3),
            )
        })
        .collect();
    let md5s: Vec<String> = bodies.iter().map(|b| md5_hex(b)).collect();
    assert_eq!(md5s.iter().collect::<HashSet<_>>().len(), DISTINCT);
    let mut sends: Vec<usize> = (0..DISTINCT).collect();
    sends.extend((0..DUPLICATES).map(|k| k * 37 % DISTINCT));

    let (pg, moto) = tokio::task::spawn_blocking(move || (Pg::start(pg_bin), Moto::start(py)))
        .await
        .unwrap();
    let env = [
        ("AWS_ACCESS_KEY_ID", "testing".to_string()),
        ("AWS_SECRET_ACCESS_KEY", "testing".to_string()),
        ("AWS_REGION", "us-east-1".to_string()),
        ("AWS_ENDPOINT_URL", moto.endpoint()),
        ("HPROF_SHRINK_DATABASE_URL", pg.url()),
    ];
    let store = format!("s3://{BUCKET}/cluster");
    let common = ["--store", store.as_str(), "--lease-seconds", LEASE];
    let ports = [free_port(), free_port()];
    let mut servers: Vec<Proc> = ports
        .iter()
        .enumerate()
        .map(|(i, port)| {
            let data = dir.path().join(format!("server{i}"));
            let listen = format!("127.0.0.1:{port}");
            let mut args = vec!["--data", s(&data), "--listen", &listen, "--public-read"];
            args.extend(["--workers", "0"]);
            // The first server holds each new package 100 ms between recording and
            // answering: its kill lands in that gap too (stored, never acknowledged).
            if i == 0 {
                args.extend(["--answer-delay-ms", "100"]);
            }
            args.extend(common);
            Proc::spawn(&args, &env, &dir.path().join(format!("server{i}.log")))
        })
        .collect();
    let mut workers: Vec<Proc> = (0..2)
        .map(|i| {
            let data = dir.path().join(format!("worker{i}"));
            let mut args = vec!["--worker", "--data", s(&data), "--workers", "1"];
            // The first worker holds each job a while before analyzing it, so that its
            // kill lands mid-job.
            if i == 0 {
                args.extend(["--analysis-delay-ms", "150"]);
            }
            args.extend(common);
            Proc::spawn(&args, &env, &dir.path().join(format!("worker{i}.log")))
        })
        .collect();
    for s in &mut servers {
        s.wait_for("serving on");
    }
    for w in &mut workers {
        w.wait_for("analysis worker(s) on database PostgreSQL");
    }
    let started = t_start.elapsed();

    // The uploads, from CLIENTS clients, alternating between the servers.
    let urls: Arc<Vec<String>> = Arc::new(
        ports
            .iter()
            .map(|p| format!("http://127.0.0.1:{p}"))
            .collect(),
    );
    let bodies = Arc::new(bodies);
    let sends = Arc::new(sends);
    let done = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let t0 = Instant::now();
    let mut tasks = Vec::new();
    for c in 0..CLIENTS {
        let (urls, bodies, sends, done) =
            (urls.clone(), bodies.clone(), sends.clone(), done.clone());
        tasks.push(tokio::spawn(async move {
            let http = client();
            let mut answers = Vec::new();
            for (n, &i) in sends.iter().enumerate().skip(c).step_by(CLIENTS) {
                let (status, v) = upload(&http, &urls, n % 2, &bodies[i]).await;
                done.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                answers.push((n, i, status, v));
            }
            answers
        }));
    }

    // Part-way, the first server killed, in a task of its own so that it lands mid-upload
    // whatever the workers are doing.
    let server0 = servers.remove(0);
    let server_killer = {
        let done = done.clone();
        let third = sends.len() / 3;
        tokio::spawn(async move {
            let mut s = server0;
            while done.load(std::sync::atomic::Ordering::SeqCst) < third {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            s.kill();
            s
        })
    };
    // The first worker, frozen (SIGSTOP) while it holds a job, past its lease: the other
    // worker takes the job; thawed, it must not record it a second time.
    let stalled_job = holding_a_job(&mut workers[0], 5, &[]).await;
    let t = Instant::now();
    while !workers[1]
        .log()
        .contains(&format!("analyzing package {stalled_job} (attempt 2)"))
    {
        assert!(
            t.elapsed() < Duration::from_secs(30),
            "{}",
            workers[1].log()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    workers[0].signal(libc::SIGCONT);
    let t = Instant::now();
    while !workers[0]
        .log()
        .contains(&format!("analysis of package {stalled_job} not recorded"))
    {
        assert!(
            t.elapsed() < Duration::from_secs(30),
            "{}",
            workers[0].log()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // Then killed (SIGKILL) while it holds another job.
    let killed_job = holding_a_job(&mut workers[0], 3, &[stalled_job]).await;
    workers[0].kill();
    let _server0 = server_killer.await.unwrap();

    let mut answers = Vec::new();
    for t in tasks {
        answers.extend(t.await.unwrap());
    }
    let received = t0.elapsed();

    // Every package analyzed: poll the surviving server.
    let http = client();
    let base = &urls[1];
    let list = loop {
        let v = get_json(&http, &format!("{base}/api/packages?limit=100000")).await;
        let list = v["packages"].as_array().unwrap().clone();
        let settled = list
            .iter()
            .all(|p| p["state"] == "done" || p["state"] == "failed");
        if list.len() >= DISTINCT && settled {
            break list;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(120),
            "not all analyzed: {} packages, {:?}\nworker 1: {}",
            list.len(),
            list.iter()
                .filter(|p| p["state"] != "done")
                .map(|p| (p["id"].clone(), p["state"].clone()))
                .collect::<Vec<_>>(),
            workers[1].log()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let analyzed = t0.elapsed();

    // Recorded once: one record per distinct MD5, every upload's answer naming it.
    assert_eq!(list.len(), DISTINCT);
    let by_md5: HashMap<String, &Value> = list
        .iter()
        .map(|p| (p["md5"].as_str().unwrap().to_string(), p))
        .collect();
    assert_eq!(by_md5.len(), DISTINCT);
    for md5 in &md5s {
        assert!(by_md5.contains_key(md5), "{md5} not recorded");
    }
    let mut ids_by_body: BTreeMap<usize, HashSet<i64>> = BTreeMap::new();
    for (_, i, _, v) in &answers {
        ids_by_body
            .entry(*i)
            .or_default()
            .insert(v["id"].as_i64().unwrap());
        assert_eq!(v["md5"], md5s[*i].as_str());
    }
    for (i, ids) in &ids_by_body {
        assert_eq!(ids.len(), 1, "body {i} answered with ids {ids:?}");
        assert_eq!(
            *ids.iter().next().unwrap(),
            by_md5[&md5s[*i]]["id"].as_i64().unwrap()
        );
    }
    let created = answers.iter().filter(|a| a.2 == 201).count();
    let duplicates = answers.iter().filter(|a| a.2 == 200).count();
    assert_eq!(created + duplicates, sends.len());
    assert!(duplicates >= DUPLICATES, "{duplicates}");
    assert!(created <= DISTINCT, "{created}");

    // Analyzed once: every job done, one analysis recorded, whatever the attempts.
    for p in &list {
        assert_eq!(p["state"], "done", "{p}");
        assert_eq!(p["analyses"], 1, "{p}");
    }
    let attempts: HashMap<i64, i64> = list
        .iter()
        .map(|p| (p["id"].as_i64().unwrap(), p["attempts"].as_i64().unwrap()))
        .collect();
    for id in [stalled_job, killed_job] {
        assert_eq!(attempts[&id], 2, "the first worker's job {id}");
        assert!(
            workers[1]
                .log()
                .contains(&format!("analyzing package {id} (attempt 2)")),
            "{}",
            workers[1].log()
        );
    }
    assert!(
        !workers[0]
            .log()
            .contains(&format!("analyzed package {stalled_job}:")),
        "{}",
        workers[0].log()
    );

    // Stored once: one object per package in the bucket, its bytes' MD5 and size.
    let objects = tokio::task::block_in_place(|| moto.list("cluster/packages/"));
    assert_eq!(objects.len(), DISTINCT, "{objects:?}");
    let sizes: HashMap<&str, usize> = md5s
        .iter()
        .zip(bodies.iter())
        .map(|(m, b)| (m.as_str(), b.len()))
        .collect();
    for (key, size, etag) in &objects {
        let md5 = key
            .strip_prefix("cluster/packages/")
            .and_then(|k| k.strip_suffix(".zip"))
            .unwrap();
        assert_eq!(etag, md5, "{key}");
        assert_eq!(*size as usize, sizes[md5], "{key}");
    }
    // And a download through the server gives the bytes back.
    let first = &list[0];
    let got = http
        .get(format!("{base}/packages/{}/download", first["id"]))
        .send()
        .await
        .unwrap()
        .bytes()
        .await
        .unwrap();
    let i = md5s
        .iter()
        .position(|m| m == first["md5"].as_str().unwrap())
        .unwrap();
    assert!(
        got[..] == bodies[i][..],
        "the download differs from the upload"
    );

    // Grouped right: each scenario's leak in exactly the packages that carry it.
    let leaks = get_json(&http, &format!("{base}/api/leaks")).await;
    let app = leaks["appLeaks"].as_array().unwrap();
    let library = leaks["libraryLeaks"].as_array().unwrap();
    let per_scenario = DISTINCT / SCENARIOS.len();
    assert_eq!(app.len(), SCENARIOS.len() - 1, "{leaks}");
    assert_eq!(library.len(), 1, "{leaks}");
    for (_, class) in &SCENARIOS[..SCENARIOS.len() - 1] {
        let g = app
            .iter()
            .find(|g| g["className"] == *class)
            .unwrap_or_else(|| panic!("no group of {class}: {leaks}"));
        assert_eq!(g["occurrences"], per_scenario as u64, "{g}");
        assert_eq!(g["packages"], per_scenario as u64, "{g}");
    }
    for g in app.iter().chain(library) {
        let versions: u64 = g["appVersions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v[1].as_u64().unwrap())
            .sum();
        assert_eq!(versions, per_scenario as u64, "{g}");
        assert_eq!(g["appVersions"].as_array().unwrap().len(), 3, "{g}");
    }
    assert_eq!(library[0]["occurrences"], per_scenario as u64);

    let total: usize = sends.iter().map(|&i| bodies[i].len()).sum();
    println!(
        "cluster: PostgreSQL + S3 (moto) up in {:.1} s; {} uploads ({:.1} MB, {duplicates} answered as duplicates) \
         over 2 servers (one killed after a third) in {:.2} s ({:.0} uploads/s); all {DISTINCT} analyzed by 2 workers \
         (package {stalled_job} stalled past its {LEASE} s lease, retaken, not recorded by the thawed worker; \
         package {killed_job} held by the worker when killed, retaken) after {:.2} s; whole test {:.1} s",
        started.as_secs_f64(),
        sends.len(),
        total as f64 / 1e6,
        received.as_secs_f64(),
        sends.len() as f64 / received.as_secs_f64(),
        analyzed.as_secs_f64(),
        t_start.elapsed().as_secs_f64(),
    );
}

/// A throwaway PostgreSQL and two pools on it, as two processes would have (the second
/// migrating again: a no-op); `None` when there is no PostgreSQL (the test then skips).
async fn two_pools() -> Option<(Pg, Store, Store)> {
    let pg_bin = pg_bin()?;
    let pg = tokio::task::spawn_blocking(move || Pg::start(pg_bin))
        .await
        .unwrap();
    let store = Store::connect(&pg.url()).await.unwrap();
    let other = Store::connect(&pg.url()).await.unwrap();
    Some((pg, store, other))
}

/// The lease, at the level of the database: a job whose lease ran out is taken by another
/// claimer, and the first claimer, back from the dead, can no longer record it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_postgres_only_the_current_lease_holder_records_a_job() {
    let Some((_pg, store, other)) = two_pools().await else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let zip = scenario_packages(dir.path()).remove(0);
    serve_common::only_the_current_lease_holder_records(&store, &other, &zip).await;
    // Concurrent claims of a queue of 20 take 20 different jobs.
    for i in 0..20 {
        serve_common::queue_bare(&store, &format!("{i:032x}")).await;
    }
    let mut claimers = Vec::new();
    for k in 0..4 {
        let s = if k % 2 == 0 {
            store.clone()
        } else {
            other.clone()
        };
        claimers.push(tokio::spawn(async move {
            let mut ids = Vec::new();
            while let (Some(c), _) = s.claim(Duration::from_secs(60)).await.unwrap() {
                ids.push(c.id);
            }
            ids
        }));
    }
    let mut all = Vec::new();
    for c in claimers {
        all.extend(c.await.unwrap());
    }
    all.sort_unstable();
    let n = all.len();
    all.dedup();
    assert_eq!((n, all.len()), (20, 20), "{all:?}");
    store.close().await;
    other.close().await;
}

/// Retries with a backoff and requeued failures, on PostgreSQL (its migration of
/// `not_before` included): see `retries_wait_out_their_backoff`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_postgres_a_retried_job_waits_out_its_backoff_and_a_failed_one_is_requeued() {
    let Some((_pg, store, other)) = two_pools().await else {
        return;
    };
    serve_common::retries_wait_out_their_backoff(&store, &other).await;
    store.close().await;
    other.close().await;
}

/// Regrouping on PostgreSQL (its migration included), the changes made by another
/// process: see `regrouping_moves_old_packages_behind_new_ones`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_postgres_packages_with_older_signatures_are_regrouped_behind_new_ones() {
    let Some((_pg, store, other)) = two_pools().await else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let zip = scenario_packages(dir.path()).remove(0);
    serve_common::regrouping_moves_old_packages_behind_new_ones(&store, &other, &zip).await;
    store.close().await;
    other.close().await;
}

/// Mappings on PostgreSQL, recorded by another process: see
/// `a_mapping_requeues_its_versions_packages`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_postgres_a_mapping_requeues_its_versions_packages() {
    let Some((_pg, store, other)) = two_pools().await else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let zip = scenario_packages(dir.path()).remove(0);
    serve_common::a_mapping_requeues_its_versions_packages(&store, &other, &zip).await;
    store.close().await;
    other.close().await;
}

/// LeakCanary reports on PostgreSQL, recorded by another process: see
/// `a_report_is_recorded_done_and_never_queued`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_postgres_a_leakcanary_report_is_recorded_done_and_never_queued() {
    let Some((_pg, store, other)) = two_pools().await else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let zip = scenario_packages(dir.path()).remove(0);
    serve_common::a_report_is_recorded_done_and_never_queued(&store, &other, &zip).await;
    store.close().await;
    other.close().await;
}

/// The groups kept up to date change by change equal a fold from scratch, the changes
/// made by another process (another pool) and, at the end, by both at once: see
/// `incremental_groups_equal_a_fold_from_scratch`. On PostgreSQL serial ids may commit out
/// of order; the generation stamps may not.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_postgres_the_groups_folded_change_by_change_equal_a_fold_from_scratch() {
    let Some((_pg, store, other)) = two_pools().await else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let zip = scenario_packages(dir.path()).remove(0);
    serve_common::incremental_groups_equal_a_fold_from_scratch(&store, &other, &zip).await;
    store.close().await;
    other.close().await;
}

/// The per-app-version view on PostgreSQL, its changes made by another process: see
/// `versions_view_change_by_change`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_postgres_the_versions_view_kept_change_by_change_equals_one_from_scratch() {
    let Some((_pg, store, other)) = two_pools().await else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let zip = scenario_packages(dir.path()).remove(0);
    serve_common::versions_view_change_by_change(&store, &other, &zip).await;
    store.close().await;
    other.close().await;
}

/// What is kept of the triage on PostgreSQL (migration 8), recorded by another
/// process: see `triage_rows_round_trip`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_postgres_the_triage_and_the_no_leak_groups_are_kept() {
    let Some((_pg, store, other)) = two_pools().await else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let zip = scenario_packages(dir.path()).remove(0);
    serve_common::triage_rows_round_trip(&store, &other, &zip).await;
    store.close().await;
    other.close().await;
}

/// Packages without a leak grouped by their first top retainer with a path, on
/// PostgreSQL, recorded by another process: see
/// `no_leak_groups_take_the_first_retainer_with_a_path`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_postgres_a_no_leak_package_is_grouped_by_its_first_retainer_with_a_path() {
    let Some((_pg, store, other)) = two_pools().await else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let zip = scenario_packages(dir.path()).remove(0);
    serve_common::no_leak_groups_take_the_first_retainer_with_a_path(&store, &other, &zip).await;
    store.close().await;
    other.close().await;
}

/// The no-leak groups filtered by app version and one group per app version, on
/// PostgreSQL, recorded by another process: see `no_leak_groups_per_app_version`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_postgres_the_no_leak_groups_are_shown_per_app_version() {
    let Some((_pg, store, other)) = two_pools().await else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let zip = scenario_packages(dir.path()).remove(0);
    serve_common::no_leak_groups_per_app_version(&store, &other, &zip).await;
    store.close().await;
    other.close().await;
}

/// Heap-graph traces without a leak on PostgreSQL, recorded by another process: see
/// `heap_graph_traces_group_by_path_per_version`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_postgres_heap_graph_traces_group_by_path_per_version() {
    let Some((_pg, store, other)) = two_pools().await else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    serve_common::heap_graph_traces_group_by_path_per_version(&store, &other, dir.path()).await;
    store.close().await;
    other.close().await;
}

/// Migration 9 on PostgreSQL, on a database an older server left: see
/// `as_before_migration_9`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_postgres_migration_9_queues_the_packages_left_in_no_no_leak_group() {
    let Some((pg, store, other)) = two_pools().await else {
        return;
    };
    other.close().await;
    let dir = tempfile::tempdir().unwrap();
    let zip = scenario_packages(dir.path()).remove(0);
    let (queued, kept) = serve_common::as_before_migration_9(&store, &zip).await;
    store.close().await;
    let store = Store::connect(&pg.url()).await.unwrap();
    serve_common::requeued_by_migration_9(&store, (&queued, &kept)).await;
    store.close().await;
}

/// Migration 10 on PostgreSQL, on a database an older server left: see
/// `as_before_migration_10`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_postgres_migration_10_queues_the_packages_whose_leaks_leakcanary_watched() {
    let Some((pg, store, other)) = two_pools().await else {
        return;
    };
    other.close().await;
    let dir = tempfile::tempdir().unwrap();
    let zip = scenario_packages(dir.path()).remove(0);
    let (queued, kept) = serve_common::as_before_migration_10(&store, &zip).await;
    store.close().await;
    let store = Store::connect(&pg.url()).await.unwrap();
    serve_common::requeued_by_migration_10(&store, (&queued, &kept)).await;
    store.close().await;
}

/// A shrunk dump's notes and its count in its no-leak group on PostgreSQL (migration 9),
/// recorded by another process: see `shrunk_packages_are_counted`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_postgres_shrunk_packages_without_a_leak_are_counted() {
    let Some((_pg, store, other)) = two_pools().await else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let zip = scenario_packages(dir.path()).remove(0);
    serve_common::shrunk_packages_are_counted(&store, &other, &zip).await;
    store.close().await;
    other.close().await;
}

/// NULs a phone or a dump sends, which PostgreSQL's text refuses, are recorded as
/// U+FFFD: see `nul_characters_are_recorded_as_replacement_characters`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_postgres_nul_characters_are_recorded_as_replacement_characters() {
    let Some((_pg, store, _other)) = two_pools().await else {
        return;
    };
    serve_common::nul_characters_are_recorded_as_replacement_characters(&store).await;
    store.close().await;
}

/// Environment variables a case sets.
type Env = Vec<(&'static str, String)>;

/// A bad database or store URL, an unreachable PostgreSQL or bucket: one line saying
/// which and why, exit 1 (2 for a usage error), no panic, the password never shown. Needs
/// no PostgreSQL.
#[test]
fn bad_urls_and_unreachable_services_are_one_line_errors() {
    let dir = tempfile::tempdir().unwrap();
    let closed = format!("127.0.0.1:{}", free_port());
    let cases: Vec<(Vec<String>, Env, &str)> = vec![
        (
            vec!["--database".into(), "mysql://u:hunter2@h/db".into()],
            vec![],
            "a database is postgres://",
        ),
        (
            vec![
                "--database".into(),
                format!("postgres://u:hunter2@{closed}/db"),
            ],
            vec![],
            "Connection refused",
        ),
        (
            vec!["--store".into(), "s3://Bad_Bucket/x".into()],
            vec![],
            "is not a bucket name",
        ),
        (
            vec!["--store".into(), "s3://heap-dumps/x".into()],
            vec![],
            "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY must be set",
        ),
        (
            vec!["--store".into(), "s3://heap-dumps/x".into()],
            vec![
                ("AWS_ACCESS_KEY_ID", "a".into()),
                ("AWS_SECRET_ACCESS_KEY", "b".into()),
                ("AWS_ENDPOINT_URL", format!("http://{closed}")),
            ],
            "Connection refused",
        ),
        // A usage error: exit 2, as clap's.
        (
            vec!["--worker".into()],
            vec![],
            "--worker needs a shared database",
        ),
    ];
    for (args, env, want) in cases {
        let mut c = bin();
        c.args(["serve", "--data", s(dir.path()), "--public-read"]);
        c.args(&args);
        for v in [
            "AWS_ACCESS_KEY_ID",
            "AWS_SECRET_ACCESS_KEY",
            "AWS_ENDPOINT_URL",
        ] {
            c.env_remove(v);
        }
        c.env_remove("HPROF_SHRINK_DATABASE_URL");
        for (k, v) in env {
            c.env(k, v);
        }
        let o = c.output().unwrap();
        let err = stderr(&o);
        let code = if args[0] == "--worker" { 2 } else { 1 };
        assert_eq!(o.status.code(), Some(code), "{args:?}: {err}");
        let errors: Vec<&str> = err.lines().filter(|l| l.contains("error")).collect();
        assert_eq!(errors.len(), 1, "{args:?}: {err}");
        assert!(errors[0].contains(want), "{args:?}: {err}");
        assert!(
            !err.contains("hunter2") && !err.contains("panicked"),
            "{err}"
        );
    }
}

/// The S3 store's own client against moto: objects go under the prefix at the keys given
/// (a space in one), come back byte for byte, with a session token along; a body damaged
/// on the way is caught by the ETag (moto ignores Content-MD5); what S3 refuses is one
/// line with the status and the Code of its error body.
#[tokio::test]
async fn the_s3_store_round_trips_and_names_what_s3_refuses() {
    use hprof_shrink_serve::s3::Bucket;
    let Some(py) = python() else { return };
    let moto = tokio::task::spawn_blocking(move || Moto::start(py))
        .await
        .unwrap();
    let endpoint = moto.endpoint();
    let env = move |name: &str| match name {
        "AWS_ACCESS_KEY_ID" | "AWS_SECRET_ACCESS_KEY" => Some("testing".to_string()),
        "AWS_SESSION_TOKEN" => Some("a-session-token".to_string()),
        "AWS_ENDPOINT_URL" => Some(endpoint.clone()),
        _ => None,
    };
    let b = Bucket::from_url_and_env(&format!("s3://{BUCKET}/round/trip/"), &env).unwrap();
    b.check().await.unwrap();

    let key = "packages/a b.zip";
    assert!(!b.exists(key).await.unwrap());
    assert!(b.get(key).await.unwrap().is_none());
    let dir = tempfile::tempdir().unwrap();
    let body: Vec<u8> = (0..300_000u32).map(|i| (i * 7 % 251) as u8).collect();
    let file = dir.path().join("package.zip");
    std::fs::write(&file, &body).unwrap();
    let md5: [u8; 16] = <md5::Md5 as md5::Digest>::digest(&body).into();
    b.put_file(key, &file, md5, body.len() as u64)
        .await
        .unwrap();
    assert!(b.exists(key).await.unwrap());
    let got = b.get(key).await.unwrap().unwrap().bytes().await.unwrap();
    assert!(got[..] == body[..], "{} bytes back", got.len());
    // Where moto put it, as boto3 reads it.
    let (stored, etag) = moto.get("round/trip/packages/a b.zip", dir.path());
    assert!(stored == body);
    assert_eq!(etag.trim_matches('"'), md5_hex(&body));

    b.put_bytes("analyses/1.json", b"{\"n\":1}".to_vec())
        .await
        .unwrap();
    let got = b.get("analyses/1.json").await.unwrap().unwrap();
    assert_eq!(&got.bytes().await.unwrap()[..], b"{\"n\":1}");

    // The MD5 of other bytes: moto stores what it got and answers its MD5 as the ETag.
    let err = b
        .put_file("packages/damaged.zip", &file, [0; 16], body.len() as u64)
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("damaged on the way"), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");

    let missing = Bucket::from_url_and_env("s3://no-such-bucket/p", &env).unwrap();
    let err = missing.check().await.unwrap_err().to_string();
    assert_eq!(err, "S3 HEAD no-such-bucket: no such bucket");
    let err = missing
        .put_bytes("analyses/2.json", b"{}".to_vec())
        .await
        .unwrap_err()
        .to_string();
    assert_eq!(
        err,
        "S3 PUT no-such-bucket/analyses/2.json: 404 Not Found NoSuchBucket"
    );
}

/// Issue 51, mappings with `--store s3://…` and PostgreSQL: a mapping PUT to a server is
/// stored in the bucket beside the packages (by its MD5), and a worker in another process
/// fetches it from there for the re-analysis of the version's package, whose leak then has
/// the mapped name; a package of another version keeps its own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[allow(clippy::too_many_lines)] // a scenario, step by step
async fn a_mapping_in_the_bucket_is_used_by_a_worker_of_another_process() {
    let Some(pg_bin) = pg_bin() else { return };
    let Some(py) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let base = std::fs::read(&scenario_packages(dir.path())[0]).unwrap();
    let (pg, moto) = tokio::task::spawn_blocking(move || (Pg::start(pg_bin), Moto::start(py)))
        .await
        .unwrap();
    let env = [
        ("AWS_ACCESS_KEY_ID", "testing".to_string()),
        ("AWS_SECRET_ACCESS_KEY", "testing".to_string()),
        ("AWS_REGION", "us-east-1".to_string()),
        ("AWS_ENDPOINT_URL", moto.endpoint()),
        ("HPROF_SHRINK_DATABASE_URL", pg.url()),
    ];
    let store = format!("s3://{BUCKET}/mapped");
    let port = free_port();
    let listen = format!("127.0.0.1:{port}");
    let server_data = dir.path().join("server");
    let mut server = Proc::spawn(
        &[
            "--data",
            s(&server_data),
            "--listen",
            &listen,
            "--public-read",
            "--workers",
            "0",
            "--store",
            &store,
        ],
        &env,
        &dir.path().join("server.log"),
    );
    let worker_data = dir.path().join("worker");
    let mut worker = Proc::spawn(
        &[
            "--worker",
            "--data",
            s(&worker_data),
            "--workers",
            "1",
            "--store",
            &store,
        ],
        &env,
        &dir.path().join("worker.log"),
    );
    server.wait_for("serving on");
    worker.wait_for("analysis worker(s) on database PostgreSQL");
    let http = client();
    let url = format!("http://{listen}");
    let mut ids = Vec::new();
    for version in ["9.0", "9.1"] {
        let body = serve_common::variant(&base, &format!("appVersion={version}\n"));
        let (status, v) = upload(&http, std::slice::from_ref(&url), 0, &body).await;
        assert_eq!(status, 201, "{v}");
        ids.push(v["id"].as_i64().unwrap());
    }
    let analyzed = |id: i64, n: i64| {
        let (http, url) = (&http, &url);
        async move {
            let t0 = Instant::now();
            loop {
                let v = get_json(http, &format!("{url}/api/packages/{id}")).await;
                if v["package"]["state"] == "done" && v["package"]["analyses"] == n {
                    return v;
                }
                assert!(t0.elapsed() < Duration::from_secs(120), "{v}");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    };
    for id in &ids {
        analyzed(*id, 1).await;
    }
    // The leaking class read as the obfuscated name of another.
    let mapping = "com.example.RenamedActivity -> com.example.StaticChainActivity:\n";
    let r = http
        .put(format!("{url}/api/mappings/9.0"))
        .body(mapping)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 201);
    let v: Value = serde_json::from_slice(&r.bytes().await.unwrap()).unwrap();
    assert_eq!(v["reanalyzing"], 1, "{v}");
    let key = format!("mapped/mappings/{}.txt", md5_hex(mapping.as_bytes()));
    let stored = moto.list("mapped/mappings/");
    assert_eq!(stored.len(), 1, "{stored:?}");
    assert_eq!(
        (stored[0].0.as_str(), stored[0].1),
        (key.as_str(), mapping.len() as u64)
    );
    let v = analyzed(ids[0], 2).await;
    assert_eq!(
        v["analysis"]["leaks"][0]["className"], "com.example.RenamedActivity",
        "{v}"
    );
    let v = analyzed(ids[1], 1).await;
    assert_eq!(
        v["analysis"]["leaks"][0]["className"], "com.example.StaticChainActivity",
        "{v}"
    );
    assert!(worker.log().contains(&format!(
        "re-analyzing (an older analysis) package {}",
        ids[0]
    )));
    // Nothing of the mapping is left in either process's scratch space.
    for data in [&server_data, &worker_data] {
        for sub in ["tmp", "work"] {
            let left: Vec<_> = std::fs::read_dir(data.join(sub)).unwrap().collect();
            assert!(left.is_empty(), "{}: {left:?}", data.join(sub).display());
        }
    }
}
