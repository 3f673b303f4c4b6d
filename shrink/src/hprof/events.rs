//! A pull view of a dump: every record and sub-record as one stream of events, for walks
//! that advance two dumps side by side (verification compares output to input this way).

use super::error::Result;
use super::heap::{SubRecord, SubRecords};
use super::reader::Hprof;
use super::record::{Record, Records};

#[derive(Debug, Clone)]
/// One step of a walk over a dump, as a flat sequence.
pub enum Event<'a> {
    /// A top-level record that is not a heap dump.
    Record(Record<'a>),
    /// A heap dump record or segment begins (its sub-records follow).
    SegmentBegin(Record<'a>),
    /// A heap dump sub-record.
    Sub(SubRecord<'a>),
    /// The heap dump record or segment that began last ends.
    SegmentEnd(Record<'a>),
}

/// The events of a dump in file order: an iterator where a [`Visitor`](super::Visitor) is a callback.
pub struct Events<'a> {
    records: Records<'a>,
    segment: Option<(Record<'a>, SubRecords<'a>)>,
    failed: bool,
}

impl<'a> Events<'a> {
    /// The events of `hprof`, from its first record.
    pub fn new(hprof: &Hprof<'a>) -> Self {
        Events {
            records: hprof.records(),
            segment: None,
            failed: false,
        }
    }
}

impl<'a> Iterator for Events<'a> {
    type Item = Result<Event<'a>>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed {
            return None;
        }
        if let Some((rec, subs)) = &mut self.segment {
            let rec = *rec;
            return match subs.next() {
                Some(Ok(sub)) => Some(Ok(Event::Sub(sub))),
                Some(Err(e)) => {
                    self.failed = true;
                    Some(Err(e))
                }
                None => {
                    self.segment = None;
                    Some(Ok(Event::SegmentEnd(rec)))
                }
            };
        }
        match self.records.next()? {
            Ok(rec) if rec.is_heap_dump() => {
                self.segment = Some((rec, rec.sub_records()));
                Some(Ok(Event::SegmentBegin(rec)))
            }
            Ok(rec) => Some(Ok(Event::Record(rec))),
            Err(e) => {
                self.failed = true;
                Some(Err(e))
            }
        }
    }
}
