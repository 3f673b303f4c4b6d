//! `--private`'s passes: the kept values cost no walk over the dump more than an ordinary
//! shrink makes. HotSpot writes a kept String before the object naming it (a resolve walk
//! finds it) and its value just before it (at hand when it is found); a kept field naming
//! no String (JDK 8's `Thread.name` is a char[], a window's title may be another
//! CharSequence) is dropped once a walk has looked everywhere.

mod common;

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
