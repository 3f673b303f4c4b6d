//! The reader on arbitrary bytes: the header, every record and sub-record view, the event
//! stream and inspect must end in Ok or an error, never a panic, a hang or a blow-up.
#![no_main]

use hprof_shrink_core::hprof::{Event, Events, Hprof, Sub};
use hprof_shrink_core::{inspect, Control};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(hprof) = Hprof::new(data) else { return };
    for ev in Events::new(&hprof) {
        let Ok(ev) = ev else { break };
        match ev {
            Event::Record(r) => {
                let _ = r.as_string();
                let _ = r.as_load_class();
            }
            Event::Sub(s) => match s.kind {
                Sub::ClassDump(c) => {
                    let _ = c.constant_pool().count();
                    let _ = c.static_fields().count();
                    let _ = c.instance_fields().count();
                }
                Sub::ObjectArray(a) => {
                    let _ = a.element_ids().count();
                }
                _ => {}
            },
            _ => {}
        }
    }
    let _ = inspect::inspect(&hprof, 10, &Control::default());
});
