//! `--private`'s passes: the kept values cost no walk over the dump more than an ordinary
//! shrink makes. HotSpot writes a kept String before the object naming it (a resolve walk
//! finds it) and its value just before it (at hand when it is found); a kept field naming
//! no String (JDK 8's `Thread.name` is a char[], a window's title may be another
//! CharSequence) is dropped once a walk has looked everywhere.

mod common;

use hprof_shrink_core::hprof::heap::primitive_array_ending_at;
use hprof_shrink_core::hprof::MappedFile;
use hprof_shrink_core::{analyze, AnalyzeOptions, Control, DroppedMode, StripMode};

#[test]
fn kept_values_cost_no_walk_more() {
    for name in [
        "hotspot-android.hprof",
        "art-leaks.hprof",
        "art-api25.hprof",
    ] {
        let path = common::repo_root().join("fixtures").join(name);
        let map = MappedFile::open(&path).unwrap();
        let hprof = map.hprof().unwrap();
        let walks = |private| {
            let opts = AnalyzeOptions::new(StripMode::Bitmaps, DroppedMode::Remove, 1)
                .with_private(private);
            let a = analyze(&hprof, &opts, &Control::default()).unwrap();
            (a.collected.walks, a.collected.kept_strings.len())
        };
        let (ordinary, _) = walks(false);
        let (private, kept) = walks(true);
        assert!(kept >= 5, "{name}: {kept} kept Strings");
        assert!(
            private <= ordinary,
            "{name}: {private} walks private, {ordinary} ordinary"
        );
    }
}

/// A replaced String costs the package at most its tag: from 12 bytes on a value becomes a
/// 12-byte tag and a filler that deflate squeezes, where a permutation's output (what it
/// was before) is random bytes throughout. The fixture whose package is mostly Strings.
#[test]
fn a_replaced_string_costs_the_package_at_most_its_tag() {
    use hprof_shrink_core::private::replace::TAG;
    use hprof_shrink_core::{shrink_file, Outputs, ShrinkOptions};
    let input = common::repo_root().join("fixtures/hotspot-android.hprof");
    let dir = tempfile::tempdir().unwrap();
    let size = |private: bool| {
        let zip = dir.path().join(format!("{private}.zip"));
        let outputs = Outputs {
            zip: Some(&zip),
            hprof: None,
        };
        let opts = ShrinkOptions::new().with_private(private);
        let r = shrink_file(&input, outputs, &opts, &Control::default()).unwrap();
        let replaced = r.private.map_or(0, |p| p.strings_replaced.count);
        (std::fs::metadata(&zip).unwrap().len(), replaced)
    };
    let (ordinary, _) = size(false);
    let (private, replaced) = size(true);
    assert!(replaced > 4000, "{replaced} Strings replaced");
    assert!(
        private <= ordinary + TAG as u64 * replaced,
        "private {private} bytes, ordinary {ordinary}, {replaced} Strings replaced"
    );
}

/// A resolve walk reads whole only the records it looks for: the kept Strings met before
/// their holders and the values not just before them. Every other String and array it
/// steps over, as a walk that finds nothing would (it read every String and, for a private
/// package, every primitive array, to have the last few at hand: 4,393 Strings here).
#[test]
fn a_resolve_walk_reads_only_what_it_looks_for() {
    let path = common::repo_root().join("fixtures/hotspot-android.hprof");
    let map = MappedFile::open(&path).unwrap();
    let hprof = map.hprof().unwrap();
    for private in [false, true] {
        let opts =
            AnalyzeOptions::new(StripMode::Bitmaps, DroppedMode::Remove, 1).with_private(private);
        let c = analyze(&hprof, &opts, &Control::default())
            .unwrap()
            .collected;
        assert!(
            c.walks >= 2,
            "private {private}: no resolve walk to measure"
        );
        assert!(
            c.resolve_reads * 50 < c.string_instances,
            "private {private}: {} records read whole for {} Strings",
            c.resolve_reads,
            c.string_instances
        );
    }
}

const PRIMITIVE_ARRAY_DUMP: u8 = 0x23;
const INSTANCE_DUMP: u8 = 0x21;

/// A byte[] sub-record (8-byte ids) of `id` holding `elements`.
fn byte_array(id: u64, elements: &[u8]) -> Vec<u8> {
    let mut b = vec![PRIMITIVE_ARRAY_DUMP];
    b.extend(id.to_be_bytes());
    b.extend(0u32.to_be_bytes());
    b.extend((elements.len() as u32).to_be_bytes());
    b.push(8); // byte
    b.extend(elements);
    b
}

#[test]
fn the_array_ending_where_a_string_starts_is_found_by_its_id() {
    let mut dump = vec![0x21, 1, 2, 3, 4];
    let start = dump.len();
    dump.extend(byte_array(7, b"main"));
    let end = dump.len();
    dump.extend([INSTANCE_DUMP, 0, 0]);
    let (at, a) = primitive_array_ending_at(&dump, end, 7, 8, 64).unwrap();
    assert_eq!((at, a.id, a.data), (start, 7, &b"main"[..]));
    // Another id, a record that does not end there, a window too short: none.
    assert!(primitive_array_ending_at(&dump, end, 8, 8, 64).is_none());
    assert!(primitive_array_ending_at(&dump, end - 1, 7, 8, 64).is_none());
    assert!(primitive_array_ending_at(&dump, end, 7, 8, 3).is_none());
    assert!(primitive_array_ending_at(&dump, end, 7, 8, 4).is_some());
    // Nothing before the start of the dump, nothing past its end.
    assert!(primitive_array_ending_at(&dump, 3, 7, 8, 64).is_none());
    assert!(primitive_array_ending_at(&dump, dump.len() + 9, 7, 8, 64).is_none());
}

#[test]
fn a_tag_byte_among_the_elements_is_not_taken_for_the_record() {
    // The elements hold the tag and the id, but not a header that ends at `end`.
    let mut elements = vec![PRIMITIVE_ARRAY_DUMP];
    elements.extend(7u64.to_be_bytes());
    elements.extend([0xff; 9]);
    let dump = byte_array(7, &elements);
    let (at, a) = primitive_array_ending_at(&dump, dump.len(), 7, 8, 64).unwrap();
    assert_eq!((at, a.data.len()), (0, elements.len()));
}
