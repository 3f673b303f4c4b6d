//! A bounds-checked big-endian reader over a slice of the dump. Every read that would pass
//! the end of the slice becomes `FormatError::Truncated` with the absolute offset and the
//! tag of the record being read, never a panic.

use super::error::{FormatError, Result, Truncation};
use super::tags::Tag;

#[derive(Clone)]
pub(crate) struct Cursor<'a> {
    data: &'a [u8],
    pos: usize,
    /// Absolute file offset of `data[0]`.
    base: u64,
    tag: Tag,
    what: &'static str,
}

impl<'a> Cursor<'a> {
    pub fn new(data: &'a [u8], base: u64, tag: Tag, what: &'static str) -> Self {
        Cursor {
            data,
            pos: 0,
            base,
            tag,
            what,
        }
    }

    pub fn pos(&self) -> usize {
        self.pos
    }

    pub fn remaining(&self) -> usize {
        self.data.len() - self.pos
    }

    pub fn offset(&self) -> u64 {
        self.base + self.pos as u64
    }

    fn truncated(&self, needed: u64) -> FormatError {
        FormatError::Truncated {
            offset: self.offset(),
            tag: self.tag,
            what: self.what,
            needed,
            available: self.remaining() as u64,
            kind: Truncation::Contents,
        }
    }

    /// Takes `n` bytes; `n` is a u64 so that sizes computed from untrusted counts are
    /// checked before any conversion can wrap.
    #[inline]
    pub fn take(&mut self, n: u64) -> Result<&'a [u8]> {
        if n > self.remaining() as u64 {
            return Err(self.truncated(n));
        }
        let start = self.pos;
        self.pos += n as usize;
        Ok(&self.data[start..self.pos])
    }

    #[inline]
    pub fn skip(&mut self, n: u64) -> Result<()> {
        self.take(n).map(|_| ())
    }

    #[inline]
    fn array<const N: usize>(&mut self) -> Result<[u8; N]> {
        let bytes = self.take(N as u64)?;
        let mut out = [0u8; N];
        out.copy_from_slice(bytes);
        Ok(out)
    }

    #[inline]
    pub fn u1(&mut self) -> Result<u8> {
        Ok(self.array::<1>()?[0])
    }

    #[inline]
    pub fn u2(&mut self) -> Result<u16> {
        Ok(u16::from_be_bytes(self.array()?))
    }

    #[inline]
    pub fn u4(&mut self) -> Result<u32> {
        Ok(u32::from_be_bytes(self.array()?))
    }

    #[inline]
    pub fn u8(&mut self) -> Result<u64> {
        Ok(u64::from_be_bytes(self.array()?))
    }

    #[inline]
    pub fn id(&mut self, id_size: u8) -> Result<u64> {
        if id_size == 4 {
            Ok(self.u4()? as u64)
        } else {
            self.u8()
        }
    }
}
