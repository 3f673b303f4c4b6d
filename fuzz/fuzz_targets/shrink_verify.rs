//! Bytes → shrink → verify: whatever the shrink accepts, it must write a dump that parses
//! and that the verifier accepts against the input, in every strip and dropped mode; and
//! pass 3 on several threads must write the same bytes as on one (or fail likewise). A
//! private package too: verified as private against the input.
#![no_main]

use hprof_shrink_core::hprof::Hprof;
use hprof_shrink_core::passes::write_shrunk_parallel;
use hprof_shrink_core::verify::{compare, Against};
use hprof_shrink_core::{analyze, write_shrunk, AnalyzeOptions, Control, DroppedMode, StripMode};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(input) = Hprof::new(data) else { return };
    let control = Control::default();
    let modes = [
        (StripMode::Bitmaps, DroppedMode::Remove, false),
        (StripMode::Duplicates, DroppedMode::Empty, false),
        (StripMode::Strings, DroppedMode::Zero, false),
        (StripMode::Bitmaps, DroppedMode::Remove, true),
    ];
    for (strip, dropped, private) in modes {
        // Passes 1 and 2 on one thread (fast per input); pass 3 on one and on three.
        let opts = AnalyzeOptions::new(strip, dropped, 1).with_private(private);
        let Ok(a) = analyze(&input, &opts, &control) else {
            return;
        };
        let one = write_shrunk(&input, &a.plan, Vec::new(), &control);
        let many = write_shrunk_parallel(&input, &a.plan, Vec::new(), &control, 3);
        match (&one, &many) {
            (Ok((a, _, _)), Ok((b, _, _))) => assert!(a == b, "threads changed the bytes"),
            (Err(_), Err(_)) => {}
            _ => panic!(
                "one thread and three disagree: {:?} / {:?}",
                one.is_ok(),
                many.is_ok()
            ),
        }
        let Ok((out, _, _)) = one else { return };
        let shrunk = Hprof::new(&out).expect("the shrink wrote an unreadable header");
        let against = Against {
            strip: Some(strip),
            salvaged: false,
            private,
        };
        if let Err(e) = compare(&shrunk, &input, &against, &control) {
            panic!("{strip:?}/{dropped:?}/private {private}: the shrink's output does not verify: {e}");
        }
    }
});
