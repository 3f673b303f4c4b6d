//! The visitor shape (as in ASM's ClassReader → ClassVisitor → ClassWriter): a reader walks
//! the dump and calls a visitor; a filter visitor wraps a downstream visitor and forwards
//! what it keeps; the writer is a visitor that emits what reaches it.

use super::heap::{PrimitiveArray, Sub, SubRecord};
use super::record::{Header, Record};

/// How a filter changed a sub-record on its way downstream. Sub-records that pass unchanged
/// go through [`Visitor::sub_record`]; dropped ones are not forwarded at all.
#[derive(Debug, Clone, Copy)]
pub enum Rewrite<'a> {
    /// The same bytes with object ids replaced: (byte offset within the sub-record, new id).
    Ids(&'a [(usize, u64)]),
    /// A primitive array with the same id and type and no elements.
    EmptyArray,
    /// A primitive array with the same id, type and count, every element zero.
    ZeroedArray,
    /// A primitive array with the same id, type and count, these elements (as many bytes
    /// as it had): a private package's replaced values.
    Elements(&'a [u8]),
}

impl Rewrite<'_> {
    /// Length in bytes of the rewritten sub-record.
    pub fn len(&self, sub: &SubRecord<'_>, id_size: u8) -> usize {
        match self {
            Rewrite::Ids(_) | Rewrite::ZeroedArray | Rewrite::Elements(_) => sub.raw.len(),
            Rewrite::EmptyArray => PrimitiveArray::header_len(id_size),
        }
    }
}

/// The heap dump sub-record tags a visitor looks at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Interest([u64; 4]);

impl Interest {
    /// Every sub-record tag.
    pub const ALL: Interest = Interest([u64::MAX; 4]);
    /// No sub-record tag: the walk skips heap dump bodies.
    pub const NONE: Interest = Interest([0; 4]);

    /// These tags and `tag`.
    pub const fn with(self, tag: u8) -> Interest {
        let mut bits = self.0;
        bits[(tag / 64) as usize] |= 1 << (tag % 64);
        Interest(bits)
    }

    #[inline]
    /// Whether `tag` is among them.
    pub fn wants(&self, tag: u8) -> bool {
        self.0[(tag / 64) as usize] & (1 << (tag % 64)) != 0
    }

    /// The tags of both.
    pub fn union(self, other: Interest) -> Interest {
        let mut bits = self.0;
        for (b, o) in bits.iter_mut().zip(other.0) {
            *b |= o;
        }
        Interest(bits)
    }
}

/// Receives the parts of a dump in file order. Every method defaults to doing nothing, so a
/// visitor implements only what it looks at.
pub trait Visitor {
    /// What the visitor's methods fail with. A walk turns it into its ticker's error (see
    /// [`Tick`](super::Tick)), so a visitor may use the caller's error type.
    type Error;

    /// The file header, first of all.
    fn header(&mut self, _header: &Header<'_>) -> Result<(), Self::Error> {
        Ok(())
    }

    /// Every top-level record except heap dump bodies: STRING, LOAD_CLASS, stack traces,
    /// HEAP_DUMP_END, and tags this crate does not know, which pass through as raw bytes.
    fn record(&mut self, _record: &Record<'_>) -> Result<(), Self::Error> {
        Ok(())
    }

    /// A HEAP_DUMP or HEAP_DUMP_SEGMENT begins. `length` is the body length to write
    /// downstream: the reader passes the original, a filter that drops sub-records passes
    /// the length of what it will forward.
    fn heap_dump_begin(&mut self, _segment: &Record<'_>, _length: u32) -> Result<(), Self::Error> {
        Ok(())
    }

    /// A sub-record the visitor's [`Interest`] includes.
    fn sub_record(&mut self, _sub: &SubRecord<'_>) -> Result<(), Self::Error> {
        Ok(())
    }

    /// The sub-record tags this visitor looks at: the reader parses only those into views
    /// for [`Visitor::sub_record`] and steps over the rest. Asked again after each
    /// sub-record it is given.
    fn interest(&self) -> Interest {
        Interest::ALL
    }

    /// A look at an instance or array of a wanted tag before it is parsed: its `id`, and
    /// `class_id` (0 for primitive arrays). `false` steps over it as if its tag were out of
    /// the interest, handed on through [`Visitor::passed_over`]. It saves a parse and a
    /// call on each of millions of sub-records a visitor does not look at.
    #[inline]
    fn wants_object(&self, _tag: u8, _id: u64, _class_id: u64) -> bool {
        true
    }

    /// A run of sub-records outside the visitor's interest, exactly as in the file (a
    /// writer copies them; most visitors ignore them).
    fn passed_over(&mut self, _offset: u64, _raw: &[u8]) -> Result<(), Self::Error> {
        Ok(())
    }

    /// A sub-record forwarded in changed form.
    fn rewritten(
        &mut self,
        _sub: &SubRecord<'_>,
        _rewrite: &Rewrite<'_>,
    ) -> Result<(), Self::Error> {
        Ok(())
    }

    /// The heap dump record or segment that began last ends.
    fn heap_dump_end(&mut self, _segment: &Record<'_>) -> Result<(), Self::Error> {
        Ok(())
    }

    /// The walk is over: the whole file was read.
    fn end(&mut self) -> Result<(), Self::Error> {
        Ok(())
    }

    /// True when the visitor needs nothing more: the reader stops the walk early (and
    /// calls neither the remaining methods nor `end`).
    fn is_done(&self) -> bool {
        false
    }
}

impl<V: Visitor + ?Sized> Visitor for &mut V {
    type Error = V::Error;
    fn header(&mut self, h: &Header<'_>) -> Result<(), Self::Error> {
        (**self).header(h)
    }
    fn record(&mut self, r: &Record<'_>) -> Result<(), Self::Error> {
        (**self).record(r)
    }
    fn heap_dump_begin(&mut self, s: &Record<'_>, length: u32) -> Result<(), Self::Error> {
        (**self).heap_dump_begin(s, length)
    }
    fn sub_record(&mut self, s: &SubRecord<'_>) -> Result<(), Self::Error> {
        (**self).sub_record(s)
    }
    fn interest(&self) -> Interest {
        (**self).interest()
    }
    #[inline]
    fn wants_object(&self, tag: u8, id: u64, class_id: u64) -> bool {
        (**self).wants_object(tag, id, class_id)
    }
    fn passed_over(&mut self, offset: u64, raw: &[u8]) -> Result<(), Self::Error> {
        (**self).passed_over(offset, raw)
    }
    fn rewritten(&mut self, s: &SubRecord<'_>, r: &Rewrite<'_>) -> Result<(), Self::Error> {
        (**self).rewritten(s, r)
    }
    fn heap_dump_end(&mut self, s: &Record<'_>) -> Result<(), Self::Error> {
        (**self).heap_dump_end(s)
    }
    fn end(&mut self) -> Result<(), Self::Error> {
        (**self).end()
    }
    fn is_done(&self) -> bool {
        (**self).is_done()
    }
}

/// Two visitors side by side: each event goes to the first, then the second. Both fail
/// with the same error type.
impl<A: Visitor, B: Visitor<Error = A::Error>> Visitor for (A, B) {
    type Error = A::Error;
    fn header(&mut self, h: &Header<'_>) -> Result<(), Self::Error> {
        self.0.header(h)?;
        self.1.header(h)
    }
    fn record(&mut self, r: &Record<'_>) -> Result<(), Self::Error> {
        self.0.record(r)?;
        self.1.record(r)
    }
    fn heap_dump_begin(&mut self, s: &Record<'_>, length: u32) -> Result<(), Self::Error> {
        self.0.heap_dump_begin(s, length)?;
        self.1.heap_dump_begin(s, length)
    }
    fn sub_record(&mut self, s: &SubRecord<'_>) -> Result<(), Self::Error> {
        offer(&mut self.0, s)?;
        offer(&mut self.1, s)
    }
    fn interest(&self) -> Interest {
        self.0.interest().union(self.1.interest())
    }
    fn wants_object(&self, tag: u8, id: u64, class_id: u64) -> bool {
        (self.0.interest().wants(tag) && self.0.wants_object(tag, id, class_id))
            || (self.1.interest().wants(tag) && self.1.wants_object(tag, id, class_id))
    }
    fn passed_over(&mut self, offset: u64, raw: &[u8]) -> Result<(), Self::Error> {
        self.0.passed_over(offset, raw)?;
        self.1.passed_over(offset, raw)
    }
    fn rewritten(&mut self, s: &SubRecord<'_>, r: &Rewrite<'_>) -> Result<(), Self::Error> {
        self.0.rewritten(s, r)?;
        self.1.rewritten(s, r)
    }
    fn heap_dump_end(&mut self, s: &Record<'_>) -> Result<(), Self::Error> {
        self.0.heap_dump_end(s)?;
        self.1.heap_dump_end(s)
    }
    fn end(&mut self) -> Result<(), Self::Error> {
        self.0.end()?;
        self.1.end()
    }
    fn is_done(&self) -> bool {
        self.0.is_done() && self.1.is_done()
    }
}

/// Gives one side of a pair what it asked for, and the rest as passed over.
fn offer<V: Visitor>(side: &mut V, s: &SubRecord<'_>) -> Result<(), V::Error> {
    if side.interest().wants(s.tag()) && s.wanted_by(side) {
        side.sub_record(s)
    } else {
        side.passed_over(s.offset, s.raw)
    }
}

// Here rather than in heap.rs: the views know nothing of visitors.
impl SubRecord<'_> {
    /// Whether `visitor` wants this instance or array (see [`Visitor::wants_object`]).
    pub fn wanted_by<V: Visitor + ?Sized>(&self, visitor: &V) -> bool {
        let (id, class_id) = match &self.kind {
            Sub::Instance(i) => (i.id, i.class_id),
            Sub::ObjectArray(a) => (a.id, a.class_id),
            Sub::PrimitiveArray(a) => (a.id, 0),
            _ => return true,
        };
        visitor.wants_object(self.tag(), id, class_id)
    }
}
