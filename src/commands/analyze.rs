//! `hprof-shrink analyze`: leak traces and duplicate bitmaps, rendered as asked.

use std::path::PathBuf;
use std::time::Instant;

use crate::progress::Bar;
use hprof_shrink_analyze::{self as analyze, render, Mapping, Options};
use hprof_shrink_core::Control;

use crate::cli::{AnalyzeArgs, AnalyzeFormat};
use crate::error::HostError;
use crate::say::say;

/// Where the result goes, checked before the work rather than after it: the page's path
/// for `--format html` (`None`: stdout), else `None`.
fn destination(a: &AnalyzeArgs) -> Result<Option<PathBuf>, HostError> {
    match a.format {
        AnalyzeFormat::Matrix => match a.output.as_deref() {
            None => Ok(None),
            Some(o) if crate::json::is_stdout(o) => Err(HostError::Usage(
                "--format matrix writes a directory (result.json and pictures): give -o DIR, not -o -"
                    .into(),
            )),
            Some(dir) if hprof_shrink_core::output::same_file(&a.input, dir) => Err(
                HostError::Usage(format!("the output {} is the input: give -o DIR", dir.display())),
            ),
            Some(_) => Ok(None),
        },
        AnalyzeFormat::Html => {
            let page = crate::json::page_path(a.output.as_deref(), || {
                crate::json::beside(&a.input, "html", "analysis")
            });
            crate::json::check_output(page.as_deref(), &[&a.input])?;
            Ok(page)
        }
        AnalyzeFormat::Text | AnalyzeFormat::Json => {
            crate::json::check_output(a.output.as_deref(), &[&a.input])?;
            Ok(None)
        }
    }
}

pub fn run(a: AnalyzeArgs) -> Result<(), HostError> {
    let page = destination(&a)?;
    // The analysis allocates and frees arrays of hundreds of MB, some on worker threads.
    // glibc would keep what is freed for reuse (its mmap threshold rises after such a
    // free) and the process would hold every array it ever made at once; a fixed
    // threshold gives each one back when it goes.
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: a malloc tuning call, made before this command allocates anything large.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 1 << 20);
    }
    let mapping = a.mapping.as_deref().map(Mapping::read).transpose()?;
    let options = Options {
        key: a.key.clone(),
        min_bitmap_bytes: a.min_bitmap_bytes,
        mapping,
        all_leaks: a.all_leaks,
        pictures: matches!(a.format, AnalyzeFormat::Html | AnalyzeFormat::Matrix),
        dump: a.dump,
        screen: a.screen,
    };
    let bar = Bar::new(true);
    let progress = |p| bar.update(p);
    let control = Control {
        cancel: Some(crate::signals::flag()),
        progress: Some(&progress),
    };
    let started = Instant::now();
    let result = analyze::analyze_path(&a.input, &options, &control);
    bar.finish();
    let outcome = result.map_err(|e| e.in_file(&a.input))?;
    let elapsed = started.elapsed();
    if a.verbose {
        let t = &outcome.timings;
        // Every step, in order, with the sizes of the big ones.
        let steps: Vec<String> = t
            .steps
            .iter()
            .map(|s| {
                let bytes = match s.name {
                    "index" => Some(t.index_bytes),
                    "references" => Some(t.edge_bytes),
                    "dominators" => Some(t.dominator_bytes),
                    _ => None,
                };
                let took = s.took.as_secs_f64();
                match (s.name, bytes) {
                    ("dominators", Some(b)) => format!(
                        "dominators {took:.2} ({} MiB, {} tree steps, stack {})",
                        b >> 20,
                        t.dominator_steps,
                        t.dominator_depth
                    ),
                    (name, Some(b)) => format!("{name} {took:.2} ({} MiB)", b >> 20),
                    (name, None) => format!("{name} {took:.2}"),
                }
            })
            .collect();
        say!(
            "analyze: {:.2} s: {}",
            elapsed.as_secs_f64(),
            steps.join(", ")
        );
        let memory: Vec<String> = t
            .steps
            .iter()
            .filter_map(|s| Some(format!("{} {} MiB", s.name, s.memory? >> 20)))
            .collect();
        if !memory.is_empty() {
            say!("analyze: anonymous memory after {}", memory.join(", "));
        }
    }
    let an = &outcome.analysis;
    match a.format {
        AnalyzeFormat::Text => crate::json::emit(a.output.as_deref(), &render::text::render(an)),
        AnalyzeFormat::Json => crate::json::emit(a.output.as_deref(), &render::json(an)),
        AnalyzeFormat::Html => crate::json::emit_page(
            page.as_deref(),
            &render::html::render(an, &outcome.pictures),
        ),
        AnalyzeFormat::Matrix => {
            let dir = a
                .output
                .clone()
                .unwrap_or_else(|| crate::json::beside(&a.input, "matrix", "analysis"));
            render::matrix::write_dir(&dir, an, &outcome.pictures, elapsed.as_millis() as u64)
                .map_err(|e| HostError::io(&dir, e))?;
            say!("wrote {}", dir.join("result.json").display());
            Ok(())
        }
    }
}
