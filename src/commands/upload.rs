//! `hprof-shrink upload`: the zips named, an outbox drained, or an app version's mapping.

use std::path::{Path, PathBuf};

use hprof_shrink_upload::mapping::mapping_url;
use hprof_shrink_upload::{AfterUpload, Outbox};

use crate::cli::{MethodArg, UploadArgs};
use crate::error::HostError;
use crate::say::say;
use crate::uploads::{drain, uploaded, uploader};

pub fn run(a: UploadArgs) -> Result<(), HostError> {
    if let (Some(mapping), Some(version)) = (&a.mapping, &a.app_version) {
        return upload_mapping(&a, mapping, version);
    }
    let up = uploader(a.url, &a.opts, a.quiet)?;
    if let Some(dir) = &a.outbox {
        return drain(
            &Outbox::new(dir),
            &up,
            AfterUpload::from_delete(a.delete_after_upload),
            a.quiet,
        );
    }
    let mut failed: Vec<PathBuf> = Vec::new();
    for zip in &a.zips {
        match up.upload(zip) {
            Ok(o) => uploaded(&o, None, a.quiet),
            Err(e) => {
                // One zip: its own error is the one line; of many, each is reported here.
                if a.zips.len() == 1 {
                    return Err(e.into());
                }
                say!("hprof-shrink: error: {e}");
                failed.push(zip.clone());
            }
        }
    }
    if failed.is_empty() {
        return Ok(());
    }
    Err(HostError::NotUploaded {
        failed,
        total: a.zips.len(),
    })
}

/// `upload --mapping FILE --app-version V`: the file PUT to the server's mapping endpoint
/// for V, as text.
fn upload_mapping(a: &UploadArgs, mapping: &Path, version: &str) -> Result<(), HostError> {
    let mut opts = a.opts.clone();
    opts.method = MethodArg::Put;
    if !opts.headers.iter().any(|h| {
        h.split(':')
            .next()
            .is_some_and(|n| n.trim().eq_ignore_ascii_case("content-type"))
    }) {
        opts.headers
            .push("Content-Type: text/plain; charset=utf-8".into());
    }
    let up = uploader(mapping_url(&a.url, version), &opts, a.quiet)?;
    let o = up.upload(mapping)?;
    uploaded(&o, None, a.quiet);
    Ok(())
}
