//! The analyzer on arbitrary bytes: the whole analysis (the readers of registered native
//! sizes, the device, KeyedWeakReferences and DisplayMetrics among its steps) must end in
//! an analysis or an error, never a panic (overflow checks are on in fuzz builds), a hang
//! or a blow-up.
#![no_main]

use std::io::Write;

use hprof_shrink_analyze::{analyze_path, Options};
use hprof_shrink_core::Control;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // The analyzer reads a file (mapped); a temporary one per input.
    let Ok(mut file) = tempfile::NamedTempFile::new() else {
        return;
    };
    if file.write_all(data).is_err() {
        return;
    }
    let options = Options {
        pictures: false,
        ..Options::default()
    };
    if let Ok(outcome) = analyze_path(file.path(), &options, &Control::default()) {
        // Every output is rendered as the CLI would.
        let a = &outcome.analysis;
        let _ = hprof_shrink_analyze::render::text::render(a);
        let _ = serde_json::to_vec(a);
    }
});
