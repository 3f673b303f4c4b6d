//! `hprof-shrink verify`: checks a package, or compares it with the original dump.

use crate::progress::Bar;
use hprof_shrink_core::verify::verify_path;
use hprof_shrink_core::Control;

use crate::cli::VerifyArgs;
use crate::error::HostError;
use crate::{json, summary};

pub fn run(a: VerifyArgs) -> Result<(), HostError> {
    let bar = Bar::new(true);
    let progress = |p| bar.update(p);
    let control = Control {
        cancel: Some(crate::signals::flag()),
        progress: Some(&progress),
    };
    let v = verify_path(&a.package, a.against.as_deref(), a.strip, &control);
    bar.finish();
    let v = v.map_err(|source| HostError::CoreOn {
        what: format!("verify {}", a.package.display()),
        source,
    })?;
    if a.json {
        json::print(&v)?;
    } else {
        crate::say::out(&summary::verify(&a.package.display().to_string(), &v))?;
    }
    Ok(())
}
