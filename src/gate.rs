//! `--fail-on` and `--baseline` of `analyze`, `diff` and `growth`: the baseline read before
//! the work, and the exit status after it (the analyzer's `gate` judges the findings).

use std::io::Read;
use std::process::ExitCode;

use hprof_shrink_analyze::gate::{Baseline, FailOn, Verdict, MAX_BASELINE_BYTES};

use crate::cli::{FailOnArg, GateArgs};
use crate::error::{HostError, EXIT_GATE};
use crate::say::say;

impl From<FailOnArg> for FailOn {
    fn from(a: FailOnArg) -> FailOn {
        match a {
            FailOnArg::None => FailOn::None,
            FailOnArg::New => FailOn::New,
            FailOnArg::Any => FailOn::Any,
        }
    }
}

/// The gate asked for: what fails it, and the baseline (read now, before any work, so a
/// bad one costs no analysis).
pub struct Gate {
    pub fail_on: FailOn,
    pub baseline: Baseline,
}

impl Gate {
    pub fn read(a: &GateArgs) -> Result<Gate, HostError> {
        let baseline = match &a.baseline {
            None => Baseline::default(),
            Some(path) => {
                let file = std::fs::File::open(path).map_err(|e| HostError::io(path, e))?;
                let mut bytes = Vec::new();
                file.take(MAX_BASELINE_BYTES as u64 + 1)
                    .read_to_end(&mut bytes)
                    .map_err(|e| HostError::io(path, e))?;
                Baseline::parse(&bytes).map_err(|source| HostError::Baseline {
                    path: path.clone(),
                    source,
                })?
            }
        };
        Ok(Gate {
            fail_on: a.fail_on.into(),
            baseline,
        })
    }

    /// The exit status for `v`: 0, or [`EXIT_GATE`] with one line saying why.
    pub fn exit(&self, v: &Verdict) -> ExitCode {
        if !v.failed() {
            return ExitCode::SUCCESS;
        }
        let n = v.failures();
        let what = match self.fail_on {
            FailOn::New => "not in the baseline",
            _ => "found",
        };
        let first = v
            .cases
            .iter()
            .find(|c| c.outcome == hprof_shrink_analyze::gate::Outcome::Failed)
            .map(|c| format!(": {} {}", c.kind, c.name))
            .unwrap_or_default();
        say!(
            "hprof-shrink: {n} finding{} {what} (--fail-on {}){first}{}",
            if n == 1 { "" } else { "s" },
            match self.fail_on {
                FailOn::New => "new",
                _ => "any",
            },
            if n > 1 { ", …" } else { "" }
        );
        ExitCode::from(EXIT_GATE)
    }
}
