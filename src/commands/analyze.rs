//! `hprof-shrink analyze`: leak traces and duplicate bitmaps, rendered as asked.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use crate::progress::Bar;
use hprof_shrink_analyze::{self as analyze, gate, render, Mapping, Options, Skip};
use hprof_shrink_core::Control;

use crate::cli::{AnalyzeArgs, AnalyzeFormat, SkipPart};
use crate::error::HostError;
use crate::gate::Gate;
use crate::report_out::{self, Dest};
use crate::say::say;

/// Where the result goes, decided before the work rather than after it.
enum Out {
    Text(Dest),
    Json(Dest),
    Page(Dest),
    Junit(Dest),
    Matrix(PathBuf),
}

fn destination(a: &AnalyzeArgs) -> Result<Out, HostError> {
    let inputs = [a.input.as_path()];
    match a.format {
        AnalyzeFormat::Matrix => {
            let dir = a
                .output
                .clone()
                .unwrap_or_else(|| report_out::beside(&a.input, "matrix", "analysis"));
            Ok(Out::Matrix(report_out::matrix_dir(&dir, &inputs, a.force)?))
        }
        AnalyzeFormat::Html => {
            let page = report_out::page_path(a.output.as_deref(), || {
                report_out::beside(&a.input, "html", "analysis")
            });
            Ok(Out::Page(report_out::dest(
                page.as_deref(),
                &inputs,
                a.force,
            )?))
        }
        AnalyzeFormat::Text => Ok(Out::Text(report_out::dest(
            a.output.as_deref(),
            &inputs,
            a.force,
        )?)),
        AnalyzeFormat::Json => Ok(Out::Json(report_out::dest(
            a.output.as_deref(),
            &inputs,
            a.force,
        )?)),
        AnalyzeFormat::Junit => Ok(Out::Junit(report_out::dest(
            a.output.as_deref(),
            &inputs,
            a.force,
        )?)),
    }
}

pub fn run(a: AnalyzeArgs) -> Result<ExitCode, HostError> {
    let out = destination(&a)?;
    let gate = Gate::read(&a.gate)?;
    let baseline_out = match &a.write_baseline {
        Some(path) => Some(report_out::dest(Some(path), &[&a.input], a.force)?),
        None => None,
    };
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
        pid: a.pid,
        screen: a.screen,
        skip: Skip {
            triage: a.skip.contains(&SkipPart::Triage),
            duplicate_strings: a.skip.contains(&SkipPart::DuplicateStrings),
        },
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
    let verdict = gate::analysis(an, gate.fail_on, &gate.baseline);
    if let Some(d) = &baseline_out {
        report_out::emit(d, &gate::baseline_text(an))?;
    }
    match out {
        Out::Text(d) => report_out::emit(&d, &render::text::render(an))?,
        Out::Json(d) => report_out::emit(&d, &render::json(an))?,
        Out::Page(d) => report_out::emit_page(&d, &render::html::render(an, &outcome.pictures))?,
        Out::Junit(d) => {
            let suite = gate::junit::Suite {
                name: &format!("analyze {}", a.input.display()),
                seconds: elapsed.as_secs_f64(),
            };
            report_out::emit(&d, &gate::junit::render(&suite, &verdict))?
        }
        Out::Matrix(dir) => {
            render::matrix::write_dir(&dir, an, &outcome.pictures, elapsed.as_millis() as u64)
                .map_err(|e| HostError::io(&dir, e))?;
            say!("wrote {}", dir.join("result.json").display());
        }
    }
    Ok(gate.exit(&verdict))
}
