//! `hprof-shrink diff` and `hprof-shrink growth`: two or more dumps compared.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use crate::progress::Bar;
use hprof_shrink_analyze::diff::{self, DiffOptions, Side};
use hprof_shrink_analyze::growth::{self, GrowthOptions};
use hprof_shrink_analyze::{gate, render, Mapping};
use hprof_shrink_core::Control;

use crate::cli::{CompareFormat, DiffArgs, GrowthArgs};
use crate::error::HostError;
use crate::gate::Gate;
use crate::report_out::{self, Dest};
use crate::say::say;

/// As `analyze` does: each big array given back when it goes (see commands/analyze.rs).
fn tune_malloc() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: a malloc tuning call, made before this command allocates anything large.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 1 << 20);
    }
}

pub fn diff(a: DiffArgs) -> Result<ExitCode, HostError> {
    tune_malloc();
    if a.max_classes == 0 {
        return Err(HostError::Usage("--max-classes must be at least 1".into()));
    }
    let out = report_dest(
        a.format,
        a.output.as_deref(),
        || report_out::beside(&a.new, "diff.html", "diff"),
        (&[&a.base, &a.new], a.force),
    )?;
    let gate = Gate::read(&a.gate)?;
    let mapping = a.mapping.as_deref().map(Mapping::read).transpose()?;
    let options = DiffOptions {
        mapping,
        max_classes: a.max_classes,
        pid: a.pid,
    };
    let bar = Bar::new(true);
    let progress = |p| bar.update(p);
    let control = Control {
        cancel: Some(crate::signals::flag()),
        progress: Some(&progress),
    };
    let verbose = a.verbose;
    let mut on_side = |side: Side, d: &diff::DumpSide, t: &hprof_shrink_analyze::Timings| {
        if verbose {
            let steps: Vec<String> = t
                .steps
                .iter()
                .map(|s| format!("{} {:.2}", s.name, s.took.as_secs_f64()))
                .collect();
            say!(
                "diff: {} {}: {:.2} s: {}",
                if side == Side::Base { "base" } else { "new" },
                d.path,
                d.seconds,
                steps.join(", ")
            );
        }
    };
    let result = diff::diff_paths(&a.base, &a.new, &options, &control, &mut on_side);
    bar.finish();
    let report = result?;
    let verdict = gate::diff(&report, gate.fail_on, &gate.baseline);
    match a.format {
        CompareFormat::Text => report_out::emit(&out, &render::diff::text(&report))?,
        CompareFormat::Json => report_out::emit(&out, &render::diff::json(&report))?,
        CompareFormat::Html => report_out::emit_page(&out, &render::diff::html(&report))?,
        CompareFormat::Junit => {
            let name = format!("diff {} {}", a.base.display(), a.new.display());
            let seconds = report.base.seconds + report.new.seconds;
            junit(&out, &name, seconds, &verdict)?
        }
    }
    Ok(gate.exit(&verdict))
}

pub fn growth(a: GrowthArgs) -> Result<ExitCode, HostError> {
    tune_malloc();
    if a.max_paths == 0 {
        return Err(HostError::Usage("--max-paths must be at least 1".into()));
    }
    let dumps = dump_list(&a.dumps)?;
    if dumps.len() < 2 {
        return Err(HostError::Usage(format!(
            "growth compares two dumps or more; {} given{}",
            dumps.len(),
            if a.dumps.len() == 1 && a.dumps[0].is_dir() {
                format!(" in {}", a.dumps[0].display())
            } else {
                String::new()
            }
        )));
    }
    let inputs: Vec<&Path> = dumps.iter().map(PathBuf::as_path).collect();
    let out = report_dest(
        a.format,
        a.output.as_deref(),
        || PathBuf::from("growth.html"),
        (&inputs, a.force),
    )?;
    let gate = Gate::read(&a.gate)?;
    let mapping = a.mapping.as_deref().map(Mapping::read).transpose()?;
    let options = GrowthOptions {
        scenario_loops: a.scenario_loops,
        mapping,
        max_paths: a.max_paths,
        pid: a.pid,
    };
    let bar = Bar::new(true);
    let progress = |p| bar.update(p);
    let control = Control {
        cancel: Some(crate::signals::flag()),
        progress: Some(&progress),
    };
    let verbose = a.verbose;
    let total = dumps.len();
    let mut on_dump = |i: usize, d: &growth::GrowthDump| {
        if verbose {
            say!(
                "growth: dump {i}/{total} {}: {:.2} s, {} reachable objects, {} paths{}",
                d.path,
                d.seconds,
                d.reachable_objects,
                d.path_nodes,
                if i == 1 {
                    String::new()
                } else {
                    format!(", {} growing", d.growing_nodes)
                }
            );
        }
    };
    let result = growth::growth_paths(&dumps, &options, &control, &mut on_dump);
    bar.finish();
    let report = result?;
    let verdict = gate::growth(&report, gate.fail_on, &gate.baseline);
    match a.format {
        CompareFormat::Text => report_out::emit(&out, &render::growth::text(&report))?,
        CompareFormat::Json => report_out::emit(&out, &render::growth::json(&report))?,
        CompareFormat::Html => report_out::emit_page(&out, &render::growth::html(&report))?,
        CompareFormat::Junit => {
            let seconds = report.dumps.iter().map(|d| d.seconds).sum();
            junit(
                &out,
                &format!("growth of {} dumps", dumps.len()),
                seconds,
                &verdict,
            )?
        }
    }
    Ok(gate.exit(&verdict))
}

/// The verdict as JUnit XML to `out`.
fn junit(out: &Dest, name: &str, seconds: f64, verdict: &gate::Verdict) -> Result<(), HostError> {
    let suite = gate::junit::Suite { name, seconds };
    report_out::emit(out, &gate::junit::render(&suite, verdict))
}

/// Where a comparison's report goes: `-o`, or for a page without one `page_default()`;
/// checked against the `inputs` (with `--force` or not) before any work.
fn report_dest(
    format: CompareFormat,
    output: Option<&Path>,
    page_default: impl FnOnce() -> PathBuf,
    (inputs, force): (&[&Path], bool),
) -> Result<Dest, HostError> {
    let out = match format {
        CompareFormat::Html => report_out::page_path(output, page_default),
        CompareFormat::Text | CompareFormat::Json | CompareFormat::Junit => {
            output.map(Path::to_path_buf)
        }
    };
    report_out::dest(out.as_deref(), inputs, force)
}

/// The dumps to compare: the paths given, or a directory's dumps by their HPROF time.
fn dump_list(given: &[PathBuf]) -> Result<Vec<PathBuf>, HostError> {
    if given.len() != 1 || !given[0].is_dir() {
        if let Some(d) = given.iter().find(|p| p.is_dir()) {
            return Err(HostError::Usage(format!(
                "{} is a directory: give one directory alone, or dumps",
                d.display()
            )));
        }
        return Ok(given.to_vec());
    }
    let dir = &given[0];
    let entries = std::fs::read_dir(dir).map_err(|e| HostError::io(dir, e))?;
    let mut found = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| HostError::io(dir, e))?;
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().to_lowercase();
        let bare = name.strip_suffix(".gz").unwrap_or(&name);
        let wanted = name.ends_with(".zip") || GZIPPABLE.iter().any(|s| bare.ends_with(s));
        if wanted && path.is_file() {
            let time = growth::dump_time(&path)?;
            found.push((time, path));
        }
    }
    // Traces have no time of their own (None sorts first: a mix is refused later anyway).
    if !found.is_empty() && found.iter().all(|(t, _)| t.is_none()) {
        say!(
            "growth: the traces in {} are in name order, digit runs as numbers (a trace's clock counts from the device's boot)",
            dir.display()
        );
    }
    // Equal times (a tool that writes none, or dumps taken within a millisecond) fall back
    // on the names, their digit runs read as numbers: dump-2 before dump-10.
    found.sort_by(|(ta, a), (tb, b)| ta.cmp(tb).then_with(|| natural_cmp(a, b)));
    let tied = found
        .windows(2)
        .filter(|w| w[0].0.is_some() && w[0].0 == w[1].0)
        .count();
    if tied > 0 {
        say!(
            "growth: {} of the dumps in {} share a header time with the one before; those are in name order, digit runs as numbers",
            tied + 1,
            dir.display()
        );
    }
    Ok(found.into_iter().map(|(_, p)| p).collect())
}

/// What a directory's dumps end with, beside packages (`.zip`), or with `.gz` after: HPROF
/// dumps and Perfetto traces.
const GZIPPABLE: [&str; 3] = [".hprof", ".pftrace", ".perfetto-trace"];

/// File names compared as people number files: runs of digits by their value (`2` before
/// `10`), the rest by bytes. Written here: a dozen lines, not worth a dependency.
fn natural_cmp(a: &Path, b: &Path) -> std::cmp::Ordering {
    let (a, b) = (
        a.as_os_str().as_encoded_bytes(),
        b.as_os_str().as_encoded_bytes(),
    );
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        if a[i].is_ascii_digit() && b[j].is_ascii_digit() {
            let run =
                |s: &[u8], k: usize| k + s[k..].iter().take_while(|c| c.is_ascii_digit()).count();
            let (ei, ej) = (run(a, i), run(b, j));
            // Leading zeros aside, a longer run is a larger number; equal lengths compare
            // digit by digit, with no overflow whatever the length.
            let (da, db) = (trim_zeros(&a[i..ei]), trim_zeros(&b[j..ej]));
            let by_value = da.len().cmp(&db.len()).then_with(|| da.cmp(db));
            if by_value.is_ne() {
                return by_value;
            }
            (i, j) = (ei, ej);
        } else {
            if a[i] != b[j] {
                return a[i].cmp(&b[j]);
            }
            (i, j) = (i + 1, j + 1);
        }
    }
    (a.len() - i).cmp(&(b.len() - j)).then_with(|| a.cmp(b))
}

fn trim_zeros(digits: &[u8]) -> &[u8] {
    let zeros = digits.iter().take_while(|&&c| c == b'0').count();
    &digits[zeros..]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_with_numbers_sort_by_their_value() {
        let mut names: Vec<PathBuf> = [
            "d/10.hprof",
            "d/2.hprof",
            "d/1.hprof",
            "d/11.hprof",
            "d/02.hprof",
        ]
        .iter()
        .map(PathBuf::from)
        .collect();
        names.sort_by(|a, b| natural_cmp(a, b));
        let got: Vec<&str> = names.iter().map(|p| p.to_str().unwrap()).collect();
        assert_eq!(
            got,
            [
                "d/1.hprof",
                "d/02.hprof",
                "d/2.hprof",
                "d/10.hprof",
                "d/11.hprof"
            ]
        );
        // Longer than any integer type: still by value.
        assert!(natural_cmp(
            Path::new("9".repeat(40).as_str()),
            Path::new(&format!("1{}", "0".repeat(40)))
        )
        .is_lt());
    }
}
