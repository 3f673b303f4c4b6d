//! The CI gate: which findings of an analysis, a diff or a growth report fail a build
//! (`--fail-on`), measured against a baseline of findings already known (`--baseline`).
//!
//! Each finding has a signature: a leak's is LeakCanary's leak fingerprint; a retainer
//! that grew (diff) and a path that grows (growth) have none of LeakCanary's, so theirs is
//! the SHA-1 of their path's names (`path:` and the hex), stable across dumps as the
//! names are. A baseline is a text file of signatures, one a line, `#` starting a comment.
//! Uses `model`, `compare`'s reports, `render`'s leak text and `base`.

pub mod junit;

use std::collections::BTreeSet;

use sha1::{Digest, Sha1};

use crate::compare::diff::DiffReport;
use crate::compare::growth::GrowthReport;
use crate::model::Analysis;

/// What fails the gate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FailOn {
    /// Nothing: the report is written, the gate stays open (the default).
    #[default]
    None,
    /// A finding whose signature the baseline does not hold.
    New,
    /// Any finding.
    Any,
}

/// The largest baseline read: far more signatures than any app has leaks, small enough
/// that a wrong file named by mistake (a heap dump) is refused rather than read.
pub const MAX_BASELINE_BYTES: usize = 16 << 20;

/// Signatures known already.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Baseline(BTreeSet<String>);

/// A baseline that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum BaselineError {
    /// The file is over [`MAX_BASELINE_BYTES`].
    #[error("the baseline is larger than {MAX_BASELINE_BYTES} bytes: not a baseline file")]
    TooLarge,
    /// A line is not UTF-8.
    #[error("the baseline is not UTF-8 text (line {line})")]
    NotText {
        /// The line's number, from 1.
        line: usize,
    },
    /// A line that is neither blank, a comment nor a signature.
    #[error("line {line} of the baseline is not a signature: {text:?}")]
    NotASignature {
        /// The line's number, from 1.
        line: usize,
        /// The line without its comment, its first 80 characters.
        text: String,
    },
}

impl Baseline {
    /// Reads a baseline: one signature a line (40 hex digits, or `path:` and 40), blank
    /// lines and `#` comments (whole lines or after a signature) skipped.
    pub fn parse(bytes: &[u8]) -> Result<Baseline, BaselineError> {
        if bytes.len() > MAX_BASELINE_BYTES {
            return Err(BaselineError::TooLarge);
        }
        let mut set = BTreeSet::new();
        for (i, raw) in bytes.split(|&b| b == b'\n').enumerate() {
            let line =
                std::str::from_utf8(raw).map_err(|_| BaselineError::NotText { line: i + 1 })?;
            let text = line.split('#').next().unwrap_or("").trim();
            if text.is_empty() {
                continue;
            }
            if !is_signature(text) {
                return Err(BaselineError::NotASignature {
                    line: i + 1,
                    text: text.chars().take(80).collect(),
                });
            }
            set.insert(text.to_ascii_lowercase());
        }
        Ok(Baseline(set))
    }

    /// Whether the baseline holds `signature` (compared as written: the baseline keeps
    /// signatures in lowercase).
    pub fn contains(&self, signature: &str) -> bool {
        self.0.contains(signature)
    }

    /// Signatures in the baseline.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether the baseline holds no signature.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

fn is_signature(s: &str) -> bool {
    let hex = s.strip_prefix("path:").unwrap_or(s);
    hex.len() == 40 && hex.bytes().all(|b| b.is_ascii_hexdigit())
}

/// The baseline `analyze --write-baseline` writes: the application leaks' signatures,
/// each with its leaking class as a comment.
pub fn baseline_text(a: &Analysis) -> String {
    let mut out = String::from(
        "# hprof-shrink baseline: leak signatures known already (one a line; # comments)\n",
    );
    let mut seen = BTreeSet::new();
    for l in a.leaks.iter().filter(|l| l.library_leak.is_none()) {
        if seen.insert(l.signature.as_str()) {
            out.push_str(&format!(
                "{}  # {}\n",
                l.signature,
                crate::base::shown::clipped(&l.class_name, 200)
            ));
        }
    }
    out
}

/// One finding, as a CI report lists it: a JUnit test case.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Case {
    /// What kind of finding (`application leak`, `library leak`, `retainer`, `growing path`).
    pub kind: &'static str,
    /// A short name: the leaking class or the path's last step, and the signature.
    pub name: String,
    /// The finding's signature in lowercase hex (`path:` and 40 hex digits for a retainer or
    /// a growing path): what a baseline holds.
    pub signature: String,
    /// The finding as text (a leak trace, a path).
    pub text: String,
    /// Whether it fails the gate.
    pub outcome: Outcome,
}

/// What the gate made of a finding.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// It fails the gate.
    Failed,
    /// Found, and not failing: the gate is off, or the baseline holds it.
    Passed {
        /// The baseline holds its signature.
        in_baseline: bool,
    },
    /// Never gated: a library leak (a known framework bug, not the app's).
    Skipped,
}

/// The gate's verdict over a report.
#[derive(Debug, Clone, Default)]
pub struct Verdict {
    /// Every finding, in the report's order.
    pub cases: Vec<Case>,
}

impl Verdict {
    /// Whether any finding fails the gate.
    pub fn failed(&self) -> bool {
        self.cases.iter().any(|c| c.outcome == Outcome::Failed)
    }

    /// How many findings fail the gate.
    pub fn failures(&self) -> usize {
        self.cases
            .iter()
            .filter(|c| c.outcome == Outcome::Failed)
            .count()
    }

    fn push(&mut self, case: Finding, gate: (FailOn, &Baseline)) {
        let (fail_on, baseline) = gate;
        let in_baseline = baseline.contains(&case.signature);
        let outcome = if case.library {
            Outcome::Skipped
        } else {
            match fail_on {
                FailOn::Any => Outcome::Failed,
                FailOn::New if !in_baseline => Outcome::Failed,
                _ => Outcome::Passed { in_baseline },
            }
        };
        self.cases.push(Case {
            kind: case.kind,
            name: format!("{} [{}]", case.name, case.signature),
            signature: case.signature,
            text: case.text,
            outcome,
        });
    }
}

/// A finding before the gate has judged it.
struct Finding {
    kind: &'static str,
    name: String,
    signature: String,
    text: String,
    library: bool,
}

/// The leaks of one analysis: each application leak is gated; library leaks are listed,
/// never gated (LeakCanary's test rule fails on application leaks alone).
pub fn analysis(a: &Analysis, fail_on: FailOn, baseline: &Baseline) -> Verdict {
    let mut v = Verdict::default();
    for l in &a.leaks {
        let library = l.library_leak.is_some();
        v.push(
            Finding {
                kind: if library {
                    "library leak"
                } else {
                    "application leak"
                },
                name: crate::base::shown::clipped(&l.class_name, 200),
                signature: l.signature.to_ascii_lowercase(),
                text: crate::render::text::leak(l),
                library,
            },
            (fail_on, baseline),
        );
    }
    v
}

/// What NEW brings that BASE had not: its new application leaks and its retainers that
/// are new or grew (diff's own threshold decides which are listed).
pub fn diff(r: &DiffReport, fail_on: FailOn, baseline: &Baseline) -> Verdict {
    let mut v = Verdict::default();
    for l in &r.new_leaks {
        v.push(
            Finding {
                kind: if l.library_leak {
                    "library leak"
                } else {
                    "application leak"
                },
                name: crate::base::shown::clipped(&l.class_name, 200),
                signature: l.signature.to_ascii_lowercase(),
                text: format!(
                    "{} new leaking object(s) of {}, {} bytes retained: {}",
                    l.count, l.class_name, l.retained_bytes, l.reason
                ),
                library: l.library_leak,
            },
            (fail_on, baseline),
        );
    }
    for c in &r.retainers {
        let grew = match c.base_retained_bytes {
            Some(b) => format!("grew from {b} to {} bytes", c.retained_bytes),
            None => format!("new, {} bytes", c.retained_bytes),
        };
        v.push(
            Finding {
                kind: "retainer",
                name: crate::base::shown::clipped(&c.class_name, 200),
                signature: path_signature(c.path.iter().map(String::as_str)),
                text: format!("{grew} ({} objects)\n{}", c.objects, c.path.join("\n")),
                library: false,
            },
            (fail_on, baseline),
        );
    }
    v
}

/// Every path that grew in every step.
pub fn growth(r: &GrowthReport, fail_on: FailOn, baseline: &Baseline) -> Verdict {
    let mut v = Verdict::default();
    for n in &r.nodes {
        let names = n
            .path
            .iter()
            .map(|s| s.name.as_str())
            .chain([n.name.as_str()]);
        let children: Vec<String> = n
            .children
            .iter()
            .map(|c| format!("{} grew by {:?}", c.name, c.increases))
            .collect();
        let path: Vec<&str> = names.clone().collect();
        v.push(
            Finding {
                kind: "growing path",
                name: crate::base::shown::clipped(&n.name, 200),
                signature: path_signature(names),
                text: format!("{}\n{}", path.join("\n"), children.join("\n")),
                library: false,
            },
            (fail_on, baseline),
        );
    }
    v
}

/// `path:` and the SHA-1 (hex) of the names, each ended by a newline.
fn path_signature<'a>(names: impl IntoIterator<Item = &'a str>) -> String {
    let mut h = Sha1::new();
    for n in names {
        h.update(n.as_bytes());
        h.update(b"\n");
    }
    format!("path:{}", hex_of(&h.finalize()))
}

fn hex_of(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_baseline_takes_signatures_and_comments_and_refuses_the_rest() {
        let sig = "0123456789abcdef0123456789abcdef01234567";
        let b = Baseline::parse(
            format!(
                "# known\n\n{sig}  # MainActivity\npath:{}\n",
                sig.to_uppercase()
            )
            .as_bytes(),
        )
        .unwrap();
        assert_eq!(b.len(), 2);
        assert!(b.contains(sig));
        assert!(b.contains(&format!("path:{sig}")));
        assert!(matches!(
            Baseline::parse(b"JAVA PROFILE 1.0.2\0"),
            Err(BaselineError::NotASignature { line: 1, .. })
        ));
        assert!(matches!(
            Baseline::parse(&[0xff, b'\n']),
            Err(BaselineError::NotText { line: 1 })
        ));
    }

    #[test]
    fn path_signatures_depend_on_every_name() {
        let a = path_signature(["a", "b"]);
        assert_ne!(a, path_signature(["ab"]));
        assert_ne!(a, path_signature(["a", "c"]));
        assert!(is_signature(&a), "{a}");
    }
}
