//! Bytes → shrink → verify: whatever the shrink accepts, it must write a dump that parses
//! and that the verifier accepts against the input, in every strip and dropped mode.
#![no_main]

use hprof_shrink_core::hprof::Hprof;
use hprof_shrink_core::verify::compare;
use hprof_shrink_core::{analyze, write_shrunk, AnalyzeOptions, Control, DroppedMode, StripMode};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(input) = Hprof::new(data) else { return };
    let control = Control::default();
    let modes = [
        (StripMode::Bitmaps, DroppedMode::Remove),
        (StripMode::Duplicates, DroppedMode::Empty),
        (StripMode::Strings, DroppedMode::Zero),
    ];
    for (strip, dropped) in modes {
        // One thread: spawned threads' thread-local destructor lists read as leaks to
        // LeakSanitizer; the parallel walks are covered by the property tests.
        let opts = AnalyzeOptions::new(strip, dropped, 1);
        let Ok(a) = analyze(&input, &opts, &control) else { return };
        let Ok((out, _, _)) = write_shrunk(&input, &a.plan, Vec::new(), &control) else {
            return;
        };
        let shrunk = Hprof::new(&out).expect("the shrink wrote an unreadable header");
        if let Err(e) = compare(&shrunk, &input, Some(strip), false, &control) {
            panic!("{strip:?}/{dropped:?}: the shrink's output does not verify: {e}");
        }
    }
});
