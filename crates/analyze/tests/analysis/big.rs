//! No 2^31 or 4 GiB limit in the analyzer: a dump whose objects sit past 4 GiB, with ids
//! past 2^32, analyzed whole. The first 4 GiB are one primitive array written as a hole,
//! so the file is sparse and costs no disk.

use std::fs::File;
use std::io::{Seek, SeekFrom, Write};

use hprof_shrink_analyze::{analyze_path, Options};
use hprof_shrink_core::Control;

const ID: u64 = 8;

struct Dump {
    out: Vec<u8>,
}

impl Dump {
    fn u1(&mut self, v: u8) {
        self.out.push(v);
    }
    fn u2(&mut self, v: u16) {
        self.out.extend_from_slice(&v.to_be_bytes());
    }
    fn u4(&mut self, v: u32) {
        self.out.extend_from_slice(&v.to_be_bytes());
    }
    fn id(&mut self, v: u64) {
        self.out.extend_from_slice(&v.to_be_bytes());
    }
    fn record(&mut self, tag: u8, body: &[u8]) {
        self.u1(tag);
        self.u4(0);
        self.u4(body.len() as u32);
        self.out.extend_from_slice(body);
    }
}

fn body(f: impl FnOnce(&mut Dump)) -> Vec<u8> {
    let mut d = Dump { out: Vec::new() };
    f(&mut d);
    d.out
}

/// A class dump: (name id, type) instance fields, (name id, type, value id) statics.
fn class_dump(
    d: &mut Dump,
    class: u64,
    superclass: u64,
    size: u32,
    statics: &[(u64, u64)],
    fields: &[(u64, u8)],
) {
    d.u1(0x20);
    d.id(class);
    d.u4(0);
    d.id(superclass);
    for _ in 0..5 {
        d.id(0);
    }
    d.u4(size);
    d.u2(0);
    d.u2(statics.len() as u16);
    for (name, value) in statics {
        d.id(*name);
        d.u1(2);
        d.id(*value);
    }
    d.u2(fields.len() as u16);
    for (name, ty) in fields {
        d.id(*name);
        d.u1(*ty);
    }
}

#[test]
#[allow(clippy::too_many_lines)] // a scenario, step by step
fn objects_past_4_gib_with_ids_past_2_32() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("big.hprof");
    let big = 1u64 << 32;
    let (object, activity, leaky, holder) = (big + 0x100, big + 0x200, big + 0x300, big + 0x400);
    let (leak, state) = (big + 0x10_000, big + 0x20_000);
    let names = [
        (1, "java.lang.Object"),
        (2, "android.app.Activity"),
        (3, "com.example.LeakyActivity"),
        (4, "com.example.Holder"),
        (5, "mDestroyed"),
        (6, "mState"),
        (7, "sLeak"),
    ];
    let mut head = Dump { out: Vec::new() };
    head.out.extend_from_slice(b"JAVA PROFILE 1.0.2\0");
    head.u4(ID as u32);
    head.id(0);
    for (id, text) in names {
        let b = body(|d| {
            d.id(id);
            d.out.extend_from_slice(text.as_bytes());
        });
        head.record(0x01, &b);
    }
    for (serial, (class, name)) in [(object, 1), (activity, 2), (leaky, 3), (holder, 4)]
        .iter()
        .enumerate()
    {
        let b = body(|d| {
            d.u4(serial as u32 + 1);
            d.id(*class);
            d.u4(0);
            d.id(*name);
        });
        head.record(0x02, &b);
    }
    // Segment 1: one byte[] that fills it, its elements a hole in the file.
    let seg_len: u32 = 0xFFFF_FF00;
    let array_header = 1 + ID + 4 + 4 + 1;
    let count = seg_len as u64 - array_header;
    head.u1(0x1C);
    head.u4(0);
    head.u4(seg_len);
    head.u1(0x23);
    head.id(big + 0x50);
    head.u4(0);
    head.u4(count as u32);
    head.u1(8);
    let mut file = File::create(&path).unwrap();
    file.write_all(&head.out).unwrap();
    file.seek(SeekFrom::Current(count as i64)).unwrap();
    // Segment 2, past 4 GiB: the classes, the leak, and a root.
    let seg = body(|d| {
        class_dump(d, object, 0, 0, &[], &[]);
        class_dump(d, activity, object, 1, &[], &[(5, 4)]);
        class_dump(d, leaky, activity, 9, &[], &[(6, 2)]);
        class_dump(d, holder, object, 0, &[(7, leak)], &[]);
        // The instance: its own field (mState), then Activity's (mDestroyed).
        d.u1(0x21);
        d.id(leak);
        d.u4(0);
        d.id(leaky);
        d.u4(9);
        d.id(state);
        d.u1(1);
        d.u1(0x23);
        d.id(state);
        d.u4(0);
        d.u4(1000);
        d.u1(10);
        d.out.extend_from_slice(&[7u8; 4000]);
        d.u1(0x05);
        d.id(holder);
    });
    let mut tail = Dump { out: Vec::new() };
    tail.record(0x1C, &seg);
    tail.record(0x2C, &[]);
    let at = file.stream_position().unwrap();
    assert!(at > big, "the second segment starts past 4 GiB ({at})");
    file.write_all(&tail.out).unwrap();
    drop(file);

    let out = analyze_path(&path, &Options::default(), &Control::default()).unwrap();
    let a = out.analysis;
    assert_eq!(a.leaks.len(), 1, "{:?}", a.notes);
    let l = &a.leaks[0];
    assert_eq!(l.object_id, leak);
    assert_eq!(l.class_name, "com.example.LeakyActivity");
    let steps: Vec<(&str, Option<&str>)> = l
        .trace
        .steps
        .iter()
        .map(|s| {
            (
                s.class_name.as_str(),
                s.reference.as_ref().map(|r| r.name.as_str()),
            )
        })
        .collect();
    assert_eq!(
        steps,
        vec![
            ("com.example.Holder", Some("sLeak")),
            ("com.example.LeakyActivity", None)
        ]
    );
    // The instance (its class's size, 9) and its int[1000].
    assert_eq!((l.retained_bytes, l.retained_objects), (9 + 4000, 2));
    assert!(a.dump.bytes > big);
}
