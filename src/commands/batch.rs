//! `hprof-shrink batch`: the work is in [`crate::batch`]; here it becomes a command.

use crate::cli::BatchArgs;
use crate::error::HostError;

/// Runs the batch; the exit code says how many inputs made it (see [`crate::batch`]).
pub fn run(a: BatchArgs) -> Result<u8, HostError> {
    crate::batch::run(&a).map_err(HostError::in_batch)
}
