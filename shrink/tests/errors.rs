//! Bad input: each kind of damage gets its own error, naming the byte offset and the
//! record tag, and never a panic. Random truncations and bit flips of the fixtures must
//! end in an error or a result, never a panic.

mod common;

use hprof_fixtures::android::{Android, BitmapKind};
use hprof_fixtures::raw::{header, record, Enc};
use hprof_fixtures::{ArtBuilder, Heap, Options, Ty};
use hprof_shrink_core::hprof::Hprof;
use hprof_shrink_core::{analyze, inspect, write_shrunk, Control, DroppedMode, Error, StripMode};
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
        let a = analyze(&hprof, strip, dropped, threads, &control)?;
        write_shrunk(&hprof, &a.plan, std::io::sink(), &control)?;
    }
    Ok(())
}

fn heap_dump(id_size: u8, subs: &[u8]) -> Vec<u8> {
    let mut d = header("1.0.3", id_size as u32, 0);
    record(&mut d, 0x1C, subs);
    record(&mut d, 0x2C, &[]);
    d
}

#[test]
fn empty_file() {
    assert!(matches!(run(b""), Err(Error::NotHprof { .. })));
}

#[test]
fn wrong_magic() {
    let e = run(b"PK\x03\x04 this is a zip, not a heap dump").unwrap_err();
    assert!(matches!(e, Error::NotHprof { .. }), "{e}");
    assert!(e.to_string().contains("PK"), "{e}");
}

#[test]
fn unsupported_version() {
    let mut d = header("1.0.2", 4, 0);
    d[13..18].copy_from_slice(b"9.9.9");
    assert!(matches!(run(&d), Err(Error::UnsupportedVersion { .. })));
}

#[test]
fn id_sizes_other_than_4_and_8() {
    for size in [0u32, 3, 16] {
        let e = run(&header("1.0.2", size, 0)).unwrap_err();
        match e {
            Error::UnsupportedIdSize { offset, size: s } => {
                assert_eq!((offset, s), (19, size));
            }
            other => panic!("id size {size}: {other}"),
        }
    }
}

#[test]
fn truncated_header() {
    let d = header("1.0.2", 8, 0);
    let e = run(&d[..22]).unwrap_err();
    assert!(matches!(e, Error::Truncated { .. }), "{e}");
}

#[test]
fn record_length_past_the_end() {
    let mut d = header("1.0.2", 4, 0);
    let at = d.len() as u64;
    record(&mut d, 0x01, &[0, 0, 0, 1, b'a', b'b']);
    let n = d.len();
    d.truncate(n - 1);
    match run(&d).unwrap_err() {
        Error::Truncated {
            offset,
            tag,
            needed,
            available,
            ..
        } => {
            assert_eq!((offset, tag.value, needed, available), (at, 0x01, 6, 5));
        }
        other => panic!("{other}"),
    }
}

#[test]
fn record_length_of_u32_max() {
    let mut d = header("1.0.2", 4, 0);
    d.extend_from_slice(&[0x1C, 0, 0, 0, 0, 0xFF, 0xFF, 0xFF, 0xFF, 0x21]);
    match run(&d).unwrap_err() {
        Error::Truncated { needed, tag, .. } => {
            assert_eq!(needed, u32::MAX as u64);
            assert_eq!(tag.to_string(), "0x1C HEAP_DUMP_SEGMENT");
        }
        other => panic!("{other}"),
    }
}

#[test]
fn primitive_array_count_of_u32_max() {
    // 2^32-1 longs: 32 GiB claimed. The size is computed in u64 and checked against
    // what is there before anything is read or allocated.
    let e = Enc { id_size: 4 };
    let mut sub = vec![0x23];
    e.id(&mut sub, 0x100);
    e.u4(&mut sub, 0);
    e.u4(&mut sub, u32::MAX);
    sub.push(11);
    sub.extend_from_slice(&[0; 16]);
    match run(&heap_dump(4, &sub)).unwrap_err() {
        Error::Truncated {
            needed,
            offset,
            tag,
            ..
        } => {
            assert_eq!(needed, u32::MAX as u64 * 8);
            assert_eq!(tag.to_string(), "0x23 PRIMITIVE_ARRAY_DUMP");
            assert_eq!(offset, 31 + 9 + 14, "points at the elements");
        }
        other => panic!("{other}"),
    }
}

#[test]
fn unknown_sub_tag() {
    let e = run(&heap_dump(4, &[0x05, 0, 0, 0, 1, 0x42, 1, 2, 3])).unwrap_err();
    match e {
        Error::UnknownSubTag { offset, tag } => assert_eq!((offset, tag), (31 + 9 + 5, 0x42)),
        other => panic!("{other}"),
    }
}

#[test]
fn load_class_of_the_wrong_length() {
    let mut d = header("1.0.2", 4, 0);
    record(&mut d, 0x02, &[0; 17]);
    assert!(matches!(run(&d), Err(Error::LengthMismatch { .. })));
}

#[test]
fn primitive_array_of_objects() {
    let e = Enc { id_size: 4 };
    let mut sub = vec![0x23];
    e.id(&mut sub, 0x100);
    e.u4(&mut sub, 0);
    e.u4(&mut sub, 1);
    sub.push(2);
    sub.extend_from_slice(&[0; 4]);
    assert!(matches!(
        run(&heap_dump(4, &sub)),
        Err(Error::BadType { value: 2, .. })
    ));
}

#[test]
fn class_dump_whose_field_count_overruns_its_record() {
    let e = Enc { id_size: 4 };
    let mut sub = vec![0x20];
    e.id(&mut sub, 0x500);
    e.u4(&mut sub, 0);
    for _ in 0..6 {
        e.id(&mut sub, 0);
    }
    e.u4(&mut sub, 8);
    e.u2(&mut sub, 0); // constant pool
    e.u2(&mut sub, 0); // statics
    e.u2(&mut sub, 400); // 400 fields claimed, 1 present
    e.id(&mut sub, 0x400001);
    sub.push(10);
    match run(&heap_dump(4, &sub)).unwrap_err() {
        Error::Truncated { tag, .. } => assert_eq!(tag.to_string(), "0x20 CLASS_DUMP"),
        other => panic!("{other}"),
    }
}

/// A heap with String and Bitmap, and a hook to add damage.
fn android(build: impl FnOnce(&mut Android)) -> Vec<u8> {
    let mut a = Android::new(Options::default(), BitmapKind::JavaPixels);
    a.b.dump_class(a.bitmap, Heap::Image);
    a.b.string("hello", Heap::App);
    build(&mut a);
    a.b.finish()
}

#[test]
fn instance_data_shorter_than_its_class_layout() {
    let d = android(|a| {
        let e = Enc { id_size: 4 };
        let mut sub = vec![0x21];
        e.id(&mut sub, 0x9000);
        e.u4(&mut sub, 0);
        e.id(&mut sub, a.string);
        e.u4(&mut sub, 2);
        sub.extend_from_slice(&[0, 0]);
        a.b.raw_sub_record(&sub);
    });
    match run(&d).unwrap_err() {
        Error::InstanceLayout {
            expected, actual, ..
        } => assert_eq!((expected, actual), (20, 2)),
        other => panic!("{other}"),
    }
}

#[test]
fn bitmap_whose_buffer_is_missing() {
    let d = android(|a| {
        a.java_bitmap(10, 10, Some(0xDEAD_0000), false);
    });
    match run(&d).unwrap_err() {
        Error::MissingBuffer { buffer_id, .. } => assert_eq!(buffer_id, 0xDEAD_0000),
        other => panic!("{other}"),
    }
}

#[test]
fn superclass_cycle() {
    let mut b = ArtBuilder::new(Options::default());
    let object = b.declare_class("java.lang.Object", 0, &[], &[]);
    let string = b.declare_class("java.lang.String", object, &[("count", Ty::Int)], &[]);
    b.set_super(object, string);
    b.dump_class(object, Heap::Image);
    b.dump_class(string, Heap::Image);
    b.string("x", Heap::App);
    let e = run(&b.finish()).unwrap_err();
    assert!(matches!(e, Error::SuperclassCycle { .. }), "{e}");
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
