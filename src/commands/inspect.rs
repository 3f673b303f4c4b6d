//! `hprof-shrink inspect`: what a dump holds.

use crate::progress::Bar;
use hprof_shrink_core::hprof::MappedFile;
use hprof_shrink_core::{inspect, Control};

use crate::cli::InspectArgs;
use crate::error::HostError;
use crate::{json, summary};

pub fn run(a: InspectArgs) -> Result<(), HostError> {
    let err = |source: hprof_shrink_core::Error| HostError::CoreOn {
        what: a.input.display().to_string(),
        source,
    };
    let map = MappedFile::open(&a.input).map_err(|e| err(e.into()))?;
    let hprof = map.hprof().map_err(|e| err(e.into()))?;
    let bar = Bar::new(true);
    let progress = |p| bar.update(p);
    let control = Control {
        cancel: Some(crate::signals::flag()),
        progress: Some(&progress),
    };
    let result = inspect::inspect(&hprof, a.top, &control);
    bar.finish();
    let i = result.map_err(err)?;
    if a.json {
        json::print(&i)?;
    } else {
        crate::say::out(&summary::inspect(&a.input.display().to_string(), &i))?;
    }
    Ok(())
}
