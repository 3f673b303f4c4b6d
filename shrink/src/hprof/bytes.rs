//! Big-endian numbers at an offset of a byte slice: the one id reader of the workspace (the
//! format layer's parsers, the passes and the analyzer all read ids with it).
//!
//! A leaf: it uses nothing, so every other module of the format layer may use it.

/// The id of `id_size` bytes (4 or 8; any other size reads 8) at `at` of `b`, or None when
/// `b` ends first. Inlined: the analyzer and the passes call it per reference. (An end
/// that wraps is before its start, which `get` refuses: no overflow check needed.)
#[inline(always)]
pub fn id_at(b: &[u8], at: usize, id_size: u8) -> Option<u64> {
    if id_size == 4 {
        Some(u32::from_be_bytes(b.get(at..at.wrapping_add(4))?.try_into().ok()?) as u64)
    } else {
        Some(u64::from_be_bytes(
            b.get(at..at.wrapping_add(8))?.try_into().ok()?,
        ))
    }
}

/// The big-endian u4 at `at` of `b`, or None when `b` ends first.
#[inline(always)]
pub fn u4_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_be_bytes(
        b.get(at..at.wrapping_add(4))?.try_into().ok()?,
    ))
}

/// Writes `id` as `id_size` big-endian bytes into `out` (whose length is at least that).
#[inline]
pub(crate) fn write_id(out: &mut [u8], id: u64, id_size: u8) {
    if id_size == 4 {
        out[..4].copy_from_slice(&(id as u32).to_be_bytes());
    } else {
        out[..8].copy_from_slice(&id.to_be_bytes());
    }
}

#[cfg(test)]
mod tests {
    use crate::hprof::bytes::{id_at, u4_at, write_id};

    #[test]
    fn ids_read_back_what_was_written_and_nothing_past_the_end() {
        for id_size in [4u8, 8] {
            let mut b = vec![0xAA; 3 + id_size as usize];
            write_id(&mut b[3..], 0x0102_0304, id_size);
            assert_eq!(id_at(&b, 3, id_size), Some(0x0102_0304));
            assert_eq!(id_at(&b, 4, id_size), None, "one byte short");
            assert_eq!(
                id_at(&b, usize::MAX, id_size),
                None,
                "an offset that overflows"
            );
        }
        assert_eq!(u4_at(&[0, 0, 1, 2], 0), Some(0x0102));
        assert_eq!(u4_at(&[0, 0, 1], 0), None);
    }
}
