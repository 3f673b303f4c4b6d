//! Where packages, analyses and pictures are kept: a directory (the embedded default) or an
//! S3 bucket (several processes on several machines). The same keys in both:
//! `packages/<md5>.zip`, `analyses/<id>.json`, `pictures/<hash>.png`, `mappings/<md5>.txt`,
//! `reports/<md5>.txt` (LeakCanary's);
//! a package's and a mapping's key is its content's MD5, so the same bytes are one object
//! however often they arrive.

use std::io;
use std::path::{Path, PathBuf};

use axum::body::Body;
use hprof_shrink_analyze::Analysis;
use tempfile::TempPath;

use super::s3::Bucket;

pub(crate) fn package_key(md5: &str) -> String {
    format!("packages/{md5}.zip")
}

pub(crate) fn analysis_key(id: i64) -> String {
    format!("analyses/{id}.json")
}

/// A LeakCanary report's text as received, by its MD5 (hex).
pub(crate) fn report_key(md5: &str) -> String {
    format!("reports/{md5}.txt")
}

/// An app version's mapping, by its text's MD5 (hex).
pub(crate) fn mapping_key(md5: &str) -> String {
    format!("mappings/{md5}.txt")
}

pub(crate) fn picture_key(hash: &str) -> String {
    format!("pictures/{hash}.png")
}

/// The blob store: a directory, or an S3 bucket.
#[derive(Debug, Clone)]
pub enum Blobs {
    /// Under this directory, a file per key.
    Dir(PathBuf),
    /// In this bucket, under its prefix.
    S3(Bucket),
}

/// A package as a local file, for the analyzer to map: the stored file itself, or a
/// temporary copy (removed when dropped).
pub enum Local {
    /// The stored file (a directory store).
    Stored(PathBuf),
    /// A copy fetched from the bucket, removed when dropped.
    Copy(TempPath),
}

impl Local {
    /// The file to read.
    pub fn path(&self) -> &Path {
        match self {
            Local::Stored(p) => p,
            Local::Copy(t) => t,
        }
    }
}

/// An object read as it is sent: its length when known, and the body.
pub struct Object {
    /// The object's length in bytes, when known.
    pub len: Option<u64>,
    /// The object's bytes, streamed.
    pub body: Body,
}

impl Blobs {
    /// Makes the directories a directory store writes into.
    pub fn create(&self) -> io::Result<()> {
        if let Blobs::Dir(root) = self {
            for d in ["packages", "analyses", "pictures", "mappings", "reports"] {
                std::fs::create_dir_all(root.join(d))?;
            }
        }
        Ok(())
    }

    /// The stored analysis of package `id`, if it was analyzed (and reads as one), with the
    /// caps of [`crate::limits`] applied: it may have been stored before them.
    pub async fn analysis(&self, id: i64) -> Option<Analysis> {
        let bytes = self.get_bytes(&analysis_key(id)).await.ok()??;
        let mut a: Analysis = serde_json::from_slice(&bytes).ok()?;
        crate::limits::cap_analysis(&mut a);
        Some(a)
    }

    /// A directory store's file for `key` (keys are made here, never taken from a request).
    fn file(root: &Path, key: &str) -> PathBuf {
        root.join(key)
    }

    /// Where the store is, for the log: its directory or its bucket.
    pub fn describe(&self) -> String {
        match self {
            Blobs::Dir(root) => root.display().to_string(),
            Blobs::S3(b) => format!("{b:?}"),
        }
    }

    /// That the store is there and reachable: at start, so that a wrong bucket, endpoint
    /// or key fails then, not at the first upload.
    pub async fn check(&self) -> io::Result<()> {
        match self {
            Blobs::Dir(root) => tokio::fs::metadata(root.join("packages")).await.map(|_| ()),
            Blobs::S3(b) => b.check().await,
        }
    }

    /// Whether an object is stored under `key`.
    pub async fn exists(&self, key: &str) -> io::Result<bool> {
        match self {
            Blobs::Dir(root) => tokio::fs::try_exists(Self::file(root, key)).await,
            Blobs::S3(b) => b.exists(key).await,
        }
    }

    /// Stores the complete, synced temporary file at `key` durably, then removes it: a
    /// rename and a directory sync, or a PUT that S3 checks against `md5`.
    pub async fn put_file(
        &self,
        key: &str,
        tmp: TempPath,
        md5: [u8; 16],
        len: u64,
    ) -> io::Result<()> {
        match self {
            Blobs::Dir(root) => {
                let dest = Self::file(root, key);
                tokio::task::spawn_blocking(move || -> io::Result<()> {
                    // Same content, same name: a concurrent upload of these bytes renames
                    // identical bytes onto it, which is harmless.
                    tmp.persist(&dest).map_err(|e| e.error)?;
                    let dir = dest.parent().unwrap_or(Path::new("."));
                    std::fs::File::open(dir)?.sync_all()
                })
                .await
                .map_err(io::Error::other)?
            }
            Blobs::S3(b) => {
                let r = b.put_file(key, &tmp, md5, len).await;
                drop(tmp);
                r
            }
        }
    }

    /// Stores small bytes (an analysis, a picture) at `key`, replacing what was there.
    pub async fn put_bytes(&self, key: &str, bytes: Vec<u8>) -> io::Result<()> {
        match self {
            Blobs::Dir(root) => {
                let dest = Self::file(root, key);
                tokio::task::spawn_blocking(move || write_atomic(&dest, &bytes))
                    .await
                    .map_err(io::Error::other)?
            }
            Blobs::S3(b) => b.put_bytes(key, bytes).await,
        }
    }

    /// Small bytes back; None if there is no such object.
    pub async fn get_bytes(&self, key: &str) -> io::Result<Option<Vec<u8>>> {
        match self {
            Blobs::Dir(root) => match tokio::fs::read(Self::file(root, key)).await {
                Ok(b) => Ok(Some(b)),
                Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
                Err(e) => Err(e),
            },
            Blobs::S3(b) => match b.get(key).await? {
                Some(r) => Ok(Some(r.bytes().await.map_err(io::Error::other)?.to_vec())),
                None => Ok(None),
            },
        }
    }

    /// The object streamed (a download); None if there is no such object.
    pub async fn open(&self, key: &str) -> io::Result<Option<Object>> {
        match self {
            Blobs::Dir(root) => {
                let file = match tokio::fs::File::open(Self::file(root, key)).await {
                    Ok(f) => f,
                    Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
                    Err(e) => return Err(e),
                };
                let len = file.metadata().await.map(|m| m.len()).ok();
                Ok(Some(Object {
                    len,
                    body: Body::from_stream(tokio_util::io::ReaderStream::new(file)),
                }))
            }
            Blobs::S3(b) => {
                let Some(r) = b.get(key).await? else {
                    return Ok(None);
                };
                let len = r.content_length();
                let stream = futures_util::stream::unfold(r, |mut r| async move {
                    match r.chunk().await {
                        Ok(Some(c)) => Some((Ok::<_, io::Error>(c), r)),
                        Ok(None) => None,
                        Err(e) => Some((Err(io::Error::other(e)), r)),
                    }
                });
                Ok(Some(Object {
                    len,
                    body: Body::from_stream(stream),
                }))
            }
        }
    }

    /// The package at `key` as a local file, copied into `tmp_dir` if it is not one
    /// already (only if it leaves `keep_free` bytes free there); None if there is no such
    /// object.
    pub async fn local(
        &self,
        key: &str,
        tmp_dir: &Path,
        keep_free: u64,
    ) -> io::Result<Option<Local>> {
        match self {
            Blobs::Dir(root) => {
                let p = Self::file(root, key);
                Ok(tokio::fs::try_exists(&p).await?.then_some(Local::Stored(p)))
            }
            Blobs::S3(b) => {
                let Some(mut r) = b.get(key).await? else {
                    return Ok(None);
                };
                let (file, path) = tempfile::Builder::new()
                    .prefix("analysis-")
                    .suffix(".zip")
                    .tempfile_in(tmp_dir)?
                    .into_parts();
                let room = hprof_shrink_core::space::Unpack {
                    keep_free,
                    ..Default::default()
                };
                room.admit(key, r.content_length().unwrap_or(0), &file)?;
                let mut file = tokio::fs::File::from_std(file);
                use tokio::io::AsyncWriteExt;
                while let Some(c) = r.chunk().await.map_err(io::Error::other)? {
                    file.write_all(&c).await?;
                }
                file.flush().await?;
                Ok(Some(Local::Copy(path)))
            }
        }
    }
}

/// Temporary file beside the destination, synced, renamed.
pub fn write_atomic(dest: &Path, bytes: &[u8]) -> io::Result<()> {
    use std::io::Write;
    let dir = dest.parent().unwrap_or(Path::new("."));
    let mut f = tempfile::NamedTempFile::new_in(dir)?;
    f.write_all(bytes)?;
    f.as_file().sync_all()?;
    f.persist(dest).map_err(|e| e.error)?;
    Ok(())
}
