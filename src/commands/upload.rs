//! `hprof-shrink upload`: the zips named, or an outbox drained.

use std::path::PathBuf;

use hprof_shrink_upload::{AfterUpload, Outbox};

use crate::cli::UploadArgs;
use crate::error::HostError;
use crate::say::say;
use crate::uploads::{drain, uploaded, uploader};

pub fn run(a: UploadArgs) -> Result<(), HostError> {
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
