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
