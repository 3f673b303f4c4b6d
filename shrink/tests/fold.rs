//! Pass 1 folded into pass 2: collecting with the info from the start of a dump (up to its
//! first object) while reading the rest of the info in the same walk gives exactly what
//! the two passes one after the other give, on every fixture and corpus dump, whether the
//! early info turns out to be the whole (HotSpot: classes first) or not (ART: then the
//! collect is done again, or the walk gives up for the two passes).

mod common;

use hprof_shrink_core::hprof::{Hprof, MappedFile, Visitor};
use hprof_shrink_core::passes::collect::{collect, collect_with_info};
use hprof_shrink_core::passes::{Collected, DumpInfo, EarlyInfo, InfoCollector};
use hprof_shrink_core::{Control, Stage};

fn walked<V: Visitor<Error = hprof_shrink_core::Error>>(hprof: &Hprof<'_>, mut v: V) -> V {
    let control = Control::default();
    hprof
        .accept(&mut v, &mut control.ticker(Stage::Info, hprof.len()))
        .unwrap();
    v
}

fn whole_info(hprof: &Hprof<'_>) -> DumpInfo {
    let c = walked(hprof, InfoCollector::new(hprof.id_size()));
    c.finish(hprof.data(), false).unwrap()
}

fn early_info(hprof: &Hprof<'_>) -> DumpInfo {
    let e = walked(hprof, EarlyInfo::new(hprof.id_size()));
    e.finish(hprof.data()).unwrap()
}

fn assert_same(a: &Collected, b: &Collected, what: &str) {
    assert_eq!(a.string_instances, b.string_instances, "{what}");
    assert_eq!(*a.string_values, *b.string_values, "{what}");
    assert_eq!(a.bitmaps, b.bitmaps, "{what}");
    assert_eq!(a.recycled_bitmaps, b.recycled_bitmaps, "{what}");
    assert_eq!(a.bitmap_buffers, b.bitmap_buffers, "{what}");
    assert_eq!(a.dump_data_natives, b.dump_data_natives, "{what}");
    assert_eq!(a.dump_data_buffers, b.dump_data_buffers, "{what}");
    assert_eq!(a.dump_data_images, b.dump_data_images, "{what}");
    assert_eq!(a.destroyed_keys, b.destroyed_keys, "{what}");
    assert_eq!(a.arrays, b.arrays, "{what}");
    assert_eq!(a.strings, b.strings, "{what}");
}

#[test]
fn folded_collect_equals_the_two_passes() {
    let (mut stood, mut redone, mut gave_up) = (0, 0, 0);
    for path in common::fixtures().into_iter().chain(common::corpus()) {
        let file = MappedFile::open(&path).unwrap();
        let hprof = file.hprof().unwrap();
        let what = path.display().to_string();
        let control = Control::default();
        let info = whole_info(&hprof);
        let want = collect(&hprof, &info, None, 2, &control).unwrap();
        // Also an early info that knows no target at all: nothing fails on the walk, and
        // the whole info must overrule it.
        let mut blind = early_info(&hprof);
        blind.targets.clear();
        blind.undumped_targets.clear();
        for (early, threads) in [(early_info(&hprof), 1), (early_info(&hprof), 3), (blind, 2)] {
            let folded = collect_with_info(&hprof, &early, false, threads, &control, |w| {
                w.finish(hprof.data(), false)
            })
            .unwrap();
            // The walk may fail with an early info that falls short (an instance of a
            // class dumped later): the caller then takes the two passes.
            let Some((got_info, got)) = folded else {
                assert!(
                    !early.same_targets(&info),
                    "{what}: failed with the whole info"
                );
                gave_up += 1;
                continue;
            };
            if early.same_targets(&info) {
                stood += 1;
            } else {
                redone += 1;
            }
            assert!(got_info.same_targets(&info), "{what}");
            assert_eq!(got_info.sdk_int, info.sdk_int, "{what}");
            assert_same(&got, &want, &what);
        }
    }
    eprintln!("collect stood: {stood}, done again: {redone}, gave up: {gave_up}");
    assert!(stood > 0, "no dump whose classes all come first");
    assert!(redone > 0, "no dump where the collect was done again");
    assert!(
        gave_up > 0,
        "no dump where the walk gave up for the two passes"
    );
}
