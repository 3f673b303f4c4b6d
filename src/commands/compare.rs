//! `hprof-shrink diff` and `hprof-shrink growth`: two or more dumps compared.

use std::path::{Path, PathBuf};

use crate::progress::Bar;
use hprof_shrink_analyze::diff::{self, DiffOptions, Side};
use hprof_shrink_analyze::growth::{self, GrowthOptions};
use hprof_shrink_analyze::{render, Mapping};
use hprof_shrink_core::Control;

use crate::cli::{CompareFormat, DiffArgs, GrowthArgs};
use crate::error::HostError;
use crate::say::say;

/// As `analyze` does: each big array given back when it goes (see commands/analyze.rs).
fn tune_malloc() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: a malloc tuning call, made before this command allocates anything large.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 1 << 20);
    }
}

pub fn diff(a: DiffArgs) -> Result<(), HostError> {
    tune_malloc();
    if a.max_classes == 0 {
        return Err(HostError::Usage("--max-classes must be at least 1".into()));
    }
    let page = matches!(a.format, CompareFormat::Html).then(|| {
        crate::json::page_path(a.output.as_deref(), || {
            crate::json::beside(&a.new, "diff.html", "diff")
        })
    });
    let out = page.clone().unwrap_or_else(|| a.output.clone());
    crate::json::check_output(out.as_deref(), &[&a.base, &a.new])?;
    let page = page.flatten();
    let mapping = a.mapping.as_deref().map(Mapping::read).transpose()?;
    let options = DiffOptions {
        mapping,
        max_classes: a.max_classes,
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
    match a.format {
        CompareFormat::Text => crate::json::emit(a.output.as_deref(), &render::diff::text(&report)),
        CompareFormat::Json => crate::json::emit(a.output.as_deref(), &render::diff::json(&report)),
        CompareFormat::Html => {
            crate::json::emit_page(page.as_deref(), &render::diff::html(&report))
        }
    }
}

pub fn growth(a: GrowthArgs) -> Result<(), HostError> {
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
    let page = matches!(a.format, CompareFormat::Html)
        .then(|| crate::json::page_path(a.output.as_deref(), || PathBuf::from("growth.html")));
    let out = page.clone().unwrap_or_else(|| a.output.clone());
    let inputs: Vec<&Path> = dumps.iter().map(PathBuf::as_path).collect();
    crate::json::check_output(out.as_deref(), &inputs)?;
    let page = page.flatten();
    let mapping = a.mapping.as_deref().map(Mapping::read).transpose()?;
    let options = GrowthOptions {
        scenario_loops: a.scenario_loops,
        mapping,
        max_paths: a.max_paths,
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
    match a.format {
        CompareFormat::Text => {
            crate::json::emit(a.output.as_deref(), &render::growth::text(&report))
        }
        CompareFormat::Json => {
            crate::json::emit(a.output.as_deref(), &render::growth::json(&report))
        }
        CompareFormat::Html => {
            crate::json::emit_page(page.as_deref(), &render::growth::html(&report))
        }
    }
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
        let wanted =
            name.ends_with(".hprof") || name.ends_with(".hprof.gz") || name.ends_with(".zip");
        if wanted && path.is_file() {
            let time = growth::dump_time(&path)?;
            found.push((time, path));
        }
    }
    // Equal times (a tool that writes none) fall back on the names.
    found.sort();
    Ok(found.into_iter().map(|(_, p)| p).collect())
}
