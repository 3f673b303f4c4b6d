//! moto's standalone S3 server on loopback, driven by boto3 through tests/s3/s3ctl.py:
//! what the S3 upload test and the multi-process test of `serve` share.
//!
//! The Python environment comes from scripts/setup-python.sh, which scripts/test.sh runs,
//! exporting HPROF_SHRINK_PYTHON.

use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use super::{free_port, s, stderr};

pub const BUCKET: &str = "heap-dumps";

pub fn python() -> Option<PathBuf> {
    match std::env::var_os("HPROF_SHRINK_PYTHON") {
        Some(p) if !p.is_empty() => Some(PathBuf::from(p)),
        _ if std::env::var_os("CI").is_some() => {
            panic!("HPROF_SHRINK_PYTHON is not set but CI is: run scripts/test.sh, which sets it")
        }
        _ => {
            eprintln!(
                "skipped: HPROF_SHRINK_PYTHON is not set (scripts/test.sh sets it up with \
                 scripts/setup-python.sh)"
            );
            None
        }
    }
}

/// moto's server on a free loopback port, killed when dropped.
pub struct Moto {
    child: Child,
    python: PathBuf,
    port: u16,
}

impl Moto {
    /// Starts moto and makes the test bucket. A port taken by another server in the moment
    /// between choosing it and moto binding it: then again (the dropped one is killed), on
    /// another.
    pub fn start(python: PathBuf) -> Moto {
        let mut last = String::new();
        for _ in 0..3 {
            let port = free_port();
            let mut child = Command::new(&python)
                .args(["-m", "moto.server", "-H", "127.0.0.1", "-p"])
                .arg(port.to_string())
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("start moto's server");
            let deadline = Instant::now() + Duration::from_secs(60);
            let mut exited = None;
            while TcpStream::connect(("127.0.0.1", port)).is_err() {
                if let Ok(Some(status)) = child.try_wait() {
                    exited = Some(status);
                    break;
                }
                if Instant::now() > deadline {
                    let _ = child.kill();
                    panic!("moto's server did not listen within 60 s");
                }
                std::thread::sleep(Duration::from_millis(100));
            }
            if let Some(status) = exited {
                last = format!("moto's server on port {port} exited before listening: {status}");
                eprintln!("{last}; starting it on another port");
                continue;
            }
            let moto = Moto {
                child,
                python: python.clone(),
                port,
            };
            let made = moto.run_ctl(&moto.endpoint(), &["create-bucket", BUCKET]);
            if made.status.success() {
                return moto;
            }
            // Whatever answered on the port was not (or is no longer) this moto: the port
            // was taken between choosing it and moto binding it. Drop it for another.
            last = format!("s3ctl create-bucket on port {port}: {}", stderr(&made));
            eprintln!("{last}\nstarting moto on another port");
        }
        panic!("moto's server did not stay up in 3 tries; the last: {last}");
    }

    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    pub fn addr(&self) -> std::net::SocketAddr {
        ([127, 0, 0, 1], self.port).into()
    }

    pub fn run_ctl(&self, endpoint: &str, args: &[&str]) -> Output {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/s3/s3ctl.py");
        Command::new(&self.python)
            .arg(script)
            .arg(endpoint)
            .args(args)
            .env_remove("HTTP_PROXY")
            .env_remove("HTTPS_PROXY")
            .env("NO_PROXY", "*")
            .output()
            .expect("run s3ctl.py")
    }

    pub fn ctl(&self, endpoint: &str, args: &[&str]) -> String {
        let o = self.run_ctl(endpoint, args);
        assert!(o.status.success(), "s3ctl {args:?}: {}", stderr(&o));
        String::from_utf8(o.stdout).unwrap().trim().to_string()
    }

    /// A pre-signed PUT URL for `key`, signed for requests sent to `endpoint`.
    pub fn presign(&self, endpoint: &str, key: &str) -> String {
        self.ctl(endpoint, &["presign", BUCKET, key])
    }

    /// The object's bytes and ETag.
    pub fn get(&self, key: &str, dir: &Path) -> (Vec<u8>, String) {
        let out = dir.join("read-back");
        let etag = self.ctl(&self.endpoint(), &["get", BUCKET, key, s(&out)]);
        (std::fs::read(out).unwrap(), etag)
    }
}

impl Drop for Moto {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Moto {
    /// (key, size, ETag without quotes) of every object under `prefix`.
    pub fn list(&self, prefix: &str) -> Vec<(String, u64, String)> {
        self.ctl(&self.endpoint(), &["list", BUCKET, prefix])
            .lines()
            .filter(|l| !l.is_empty())
            .map(|l| {
                let mut f = l.split(' ');
                let key = f.next().unwrap().to_string();
                let size = f.next().unwrap().parse().unwrap();
                let etag = f.next().unwrap().trim_matches('"').to_string();
                (key, size, etag)
            })
            .collect()
    }
}
