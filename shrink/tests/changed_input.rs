//! A dump rewritten under us while it is shrunk (an app dumping again to the same path,
//! `cp` over it) is an error for that input: no SIGBUS, no output, a message that says
//! what happened.

mod common;

use std::fs::File;
use std::sync::Mutex;

use hprof_fixtures::{ArtBuilder, Heap, Options};
use hprof_shrink_core::{shrink_file, Control, ShrinkOptions, Stage};

/// A dump of 48 MiB of byte arrays: long enough that the walks report progress (every
/// 4 MiB) while most of the file is still ahead of them.
fn big_dump() -> Vec<u8> {
    let mut b = ArtBuilder::new(Options::default());
    for i in 0..48u8 {
        b.byte_array(Heap::App, &vec![i; 1 << 20]);
    }
    b.finish()
}

/// Shrinks `dump` from a file that `change` alters once `stage` has made progress, and
/// returns the error that must follow; asserts the change happened and that nothing but
/// the input is left.
fn shrink_changed_during(
    dump: &[u8],
    stage: Stage,
    out_name: &str,
    opts: &ShrinkOptions,
    change: impl Fn(File) + Sync,
) -> String {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.hprof");
    std::fs::write(&input, dump).unwrap();
    let writer = Mutex::new(Some(File::options().write(true).open(&input).unwrap()));
    let progress = |p: hprof_shrink_core::Progress| {
        if p.stage == stage && p.done > 0 {
            if let Some(f) = writer.lock().unwrap().take() {
                change(f);
            }
        }
    };
    let control = Control {
        cancel: None,
        progress: Some(&progress),
    };
    let out = dir.path().join(out_name);
    let err = shrink_file(&input, common::one_output(&out), opts, &control)
        .expect_err("a dump changed while read must not give a result");
    assert!(
        writer.lock().unwrap().is_none(),
        "{stage:?}: the test never changed the input"
    );
    assert_eq!(common::files_in(dir.path()), ["in.hprof"], "{stage:?}");
    err.to_string()
}

fn truncated_during(stage: Stage, zip: bool) {
    let opts = ShrinkOptions::new().with_threads(2);
    let out = if zip { "out.zip" } else { "out.hprof" };
    // What `cp` over the dump does first.
    let text = shrink_changed_during(&big_dump(), stage, out, &opts, |f| f.set_len(4096).unwrap());
    assert!(
        text.contains("in.hprof") && text.contains("shrank") && text.contains("while it was read"),
        "{stage:?}: {text}"
    );
}

#[test]
fn a_dump_truncated_while_collected_is_an_error_not_a_sigbus() {
    truncated_during(Stage::Collect, true);
}

#[test]
fn a_dump_truncated_while_written_to_a_zip_is_an_error_not_a_sigbus() {
    truncated_during(Stage::Write, true);
}

#[test]
fn a_dump_truncated_while_written_on_several_threads_is_an_error_not_a_sigbus() {
    truncated_during(Stage::Write, false);
}

#[test]
fn a_dump_rewritten_to_its_old_size_while_read_is_an_error() {
    // An app dumping again to the same path: truncated, then written to the same length
    // with other bytes. No read past the end need fault; the change is still seen.
    let dump = big_dump();
    let mut again = dump.clone();
    for b in &mut again[1 << 20..] {
        *b = b.wrapping_add(1);
    }
    let text = shrink_changed_during(
        &dump,
        Stage::Collect,
        "out.zip",
        &ShrinkOptions::default(),
        |mut f| {
            use std::io::Write;
            f.set_len(0).unwrap();
            f.write_all(&again).unwrap();
        },
    );
    assert!(
        text.contains("in.hprof") && text.contains("while it was read"),
        "{text}"
    );
}
