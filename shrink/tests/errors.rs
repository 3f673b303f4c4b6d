//! Bad input: each kind of damage gets its own error, naming the byte offset and the
//! record tag, and never a panic. Random truncations and bit flips of the fixtures must
//! end in an error or a result, never a panic.

mod common;

use hprof_shrink_core::hprof::{FormatError, Hprof};
use hprof_shrink_core::{
    analyze, inspect, write_shrunk, AnalyzeOptions, Control, DroppedMode, Error, StripMode,
};
use proptest::prelude::*;

/// Everything a dump goes through: inspect, the three passes, the writer.
fn run(bytes: &[u8]) -> Result<(), Error> {
    let hprof = Hprof::new(bytes)?;
    let control = Control::default();
    inspect::inspect(&hprof, 5, &control)?;
    // One thread and several: the parallel walks must fail the same way.
    for (strip, dropped, threads) in [
        (StripMode::Bitmaps, DroppedMode::Remove, 1),
        (StripMode::Duplicates, DroppedMode::Empty, 3),
    ] {
        let a = analyze(
            &hprof,
            &AnalyzeOptions::new(strip, dropped, threads),
            &control,
        )?;
        write_shrunk(&hprof, &a.plan, std::io::sink(), &control)?;
    }
    Ok(())
}

#[test]
fn every_kind_of_damage_has_its_own_error() {
    for bad in hprof_fixtures::bad::all() {
        let err = run(&bad.bytes).expect_err(bad.name).to_string();
        for word in bad.expect {
            assert!(err.contains(word), "{}: {err:?} lacks {word:?}", bad.name);
        }
    }
}

#[test]
fn errors_carry_the_offset_and_tag() {
    // One of each structured variant, checked field by field.
    let by_name = |name: &str| {
        hprof_fixtures::bad::all()
            .into_iter()
            .find(|b| b.name == name)
            .unwrap()
            .bytes
    };
    match run(&by_name("length-past-the-end")).unwrap_err() {
        Error::Format(FormatError::Truncated {
            offset,
            tag,
            needed,
            available,
            ..
        }) => assert_eq!((offset, tag.value, needed, available), (31, 0x01, 6, 5)),
        other => panic!("{other}"),
    }
    match run(&by_name("unknown-sub-tag")).unwrap_err() {
        Error::Format(FormatError::UnknownSubTag { offset, tag }) => {
            assert_eq!((offset, tag), (45, 0x42))
        }
        other => panic!("{other}"),
    }
    match run(&by_name("id-size-16")).unwrap_err() {
        Error::Format(FormatError::UnsupportedIdSize { offset, size }) => {
            assert_eq!((offset, size), (19, 16))
        }
        other => panic!("{other}"),
    }
    assert!(matches!(
        run(&by_name("superclass-cycle")),
        Err(Error::Format(FormatError::SuperclassCycle { .. }))
    ));
    assert!(matches!(
        run(&by_name("bitmap-buffer-missing")),
        Err(Error::MissingBuffer {
            buffer_id: 0xDEAD_0000,
            ..
        })
    ));
}

#[test]
fn a_dump_cut_at_a_record_boundary_is_incomplete() {
    let (_, full, _) = hprof_fixtures::android::all().remove(0);
    let hprof = Hprof::new(&full).unwrap();
    let ends: Vec<usize> = hprof
        .records()
        .map(|r| r.unwrap())
        .map(|r| r.offset as usize + r.raw.len())
        .collect();
    // Every boundary but the last (the whole file) is a cut.
    for &end in &ends[..ends.len() - 1] {
        let e = run(&full[..end]).unwrap_err();
        assert!(
            matches!(e, Error::Format(FormatError::Incomplete { .. })),
            "cut at {end}: {e}"
        );
        assert!(e.is_cut_off());
    }
    run(&full).unwrap();
}

fn small_fixtures() -> Vec<Vec<u8>> {
    hprof_fixtures::android::all()
        .into_iter()
        .map(|(_, d, _)| d)
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn truncation_anywhere_is_an_error_never_a_panic(which in 0usize..4, cut in 0.0f64..1.0) {
        let full = &small_fixtures()[which];
        let at = (full.len() as f64 * cut) as usize;
        prop_assert!(run(&full[..at]).is_err(), "a dump cut at {at} of {} passed", full.len());
    }

    #[test]
    fn bit_flips_never_panic(which in 0usize..4, flips in proptest::collection::vec((0.0f64..1.0, 0u8..8), 1..8)) {
        let mut d = small_fixtures()[which].clone();
        let len = d.len();
        for (pos, bit) in flips {
            d[((len as f64 * pos) as usize).min(len - 1)] ^= 1 << bit;
        }
        let _ = run(&d);
    }
}
