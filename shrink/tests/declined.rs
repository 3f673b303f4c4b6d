//! `Visitor::wants_object`: a visitor that declines instances and arrays from their header
//! is given only the others, the declined ones reach it as passed-over bytes (so a writer
//! still copies them), and a visitor beside it that declines nothing still sees them all.

mod common;

use hprof_shrink_core::hprof::{tags, Interest, MappedFile, Record, SubRecord, Visitor};
use hprof_shrink_core::{Control, Result, Stage};

/// Declines some instances (by class) and some primitive arrays (by id), arbitrarily.
fn declines(tag: u8, id: u64, class_id: u64) -> bool {
    match tag {
        tags::INSTANCE_DUMP => !(class_id >> 3).is_multiple_of(2),
        tags::PRIMITIVE_ARRAY_DUMP => (id >> 3).is_multiple_of(3),
        _ => false,
    }
}

#[derive(Default)]
struct Tiler {
    picky: bool,
    given: Vec<(u64, u64)>,
    passed: Vec<(u64, u64)>,
    bodies: Vec<(u64, u64)>,
    wrongly_given: u64,
}

impl Visitor for Tiler {
    type Error = hprof_shrink_core::Error;

    fn interest(&self) -> Interest {
        Interest::NONE
            .with(tags::INSTANCE_DUMP)
            .with(tags::PRIMITIVE_ARRAY_DUMP)
    }
    fn wants_object(&self, tag: u8, id: u64, class_id: u64) -> bool {
        !(self.picky && declines(tag, id, class_id))
    }
    fn heap_dump_begin(&mut self, segment: &Record<'_>, _length: u32) -> Result<()> {
        self.bodies
            .push((segment.body_offset(), segment.body.len() as u64));
        Ok(())
    }
    fn sub_record(&mut self, sub: &SubRecord<'_>) -> Result<()> {
        let id = sub.object_id().unwrap_or(0);
        let class_id = match &sub.kind {
            hprof_shrink_core::hprof::Sub::Instance(i) => i.class_id,
            _ => 0,
        };
        if self.picky && declines(sub.tag(), id, class_id) {
            self.wrongly_given += 1;
        }
        self.given.push((sub.offset, sub.raw.len() as u64));
        Ok(())
    }
    fn passed_over(&mut self, offset: u64, raw: &[u8]) -> Result<()> {
        self.passed.push((offset, raw.len() as u64));
        Ok(())
    }
}

/// Given and passed-over stretches cover each heap dump body exactly, without overlap.
fn assert_tiles(t: &Tiler) {
    let mut parts: Vec<(u64, u64)> = t.given.iter().chain(&t.passed).copied().collect();
    parts.sort_unstable();
    let mut parts = parts.into_iter().peekable();
    for &(start, len) in &t.bodies {
        let mut at = start;
        while at < start + len {
            let (offset, n) = parts.next().expect("a part for every byte");
            assert_eq!(offset, at, "a gap or an overlap at {at}");
            at += n;
        }
        assert_eq!(at, start + len, "a part runs past its segment");
    }
    assert!(parts.next().is_none(), "parts outside the heap dumps");
}

fn walk<V: Visitor<Error = hprof_shrink_core::Error>>(file: &MappedFile, v: &mut V) {
    let hprof = file.hprof().unwrap();
    let control = Control::default();
    hprof
        .accept(v, &mut control.ticker(Stage::Info, hprof.len()))
        .unwrap();
}

#[test]
fn declined_objects_are_passed_over_and_the_rest_given() {
    let mut declined_somewhere = false;
    for path in common::fixtures().into_iter().chain(common::corpus()) {
        let file = MappedFile::open(&path).unwrap();
        let mut all = Tiler::default();
        walk(&file, &mut all);
        let mut picky = Tiler {
            picky: true,
            ..Tiler::default()
        };
        walk(&file, &mut picky);
        assert_eq!(picky.wrongly_given, 0, "{}", path.display());
        assert_tiles(&all);
        assert_tiles(&picky);
        // Everything the picky one was given, the other was given too, and the picky one
        // misses exactly the declined ones.
        let given: std::collections::HashSet<_> = all.given.iter().copied().collect();
        assert!(picky.given.iter().all(|g| given.contains(g)));
        let declined = all.given.len() - picky.given.len();
        declined_somewhere |= declined > 0;

        // Side by side, the one that declines nothing still gets every object.
        let mut pair = (
            Tiler {
                picky: true,
                ..Tiler::default()
            },
            Tiler::default(),
        );
        walk(&file, &mut pair);
        assert_eq!(pair.0.given, picky.given, "{}", path.display());
        assert_eq!(pair.1.given, all.given, "{}", path.display());
        assert_eq!(pair.0.wrongly_given, 0);
    }
    assert!(declined_somewhere, "no fixture had an object to decline");
}
