//! Arrays made before the analysis's peak of memory (the path search, the dominators) and
//! read only after it: the objects' size codes, for the subtrees.
//! They wait in an unnamed temporary file (within the disk bounds `serve` sets), so that
//! they take no memory at the peak; written and read back whole, once each. When the file
//! cannot be written they stay in memory.

use std::fs::File;
use std::io::{Read, Seek, Write};

use hprof_shrink_core::space::Unpack;

/// A value written as plain bytes (native order: the file is this process's alone).
pub trait Plain: Copy {
    const SIZE: usize;
    fn put(self, out: &mut [u8]);
    fn get(b: &[u8]) -> Self;
}

impl Plain for u8 {
    const SIZE: usize = 1;
    #[inline]
    fn put(self, out: &mut [u8]) {
        out[0] = self;
    }
    #[inline]
    fn get(b: &[u8]) -> u8 {
        b[0]
    }
}

pub enum Parked<T> {
    Held(Vec<T>),
    Written { file: File, len: usize },
}

/// Bytes written or read at a time.
const BLOCK: usize = 1 << 20;

impl<T: Plain> Parked<T> {
    /// `values` written to a temporary file `unpack` admits and freed; kept in memory
    /// when the file cannot be written (nothing is freed before the file is whole).
    pub fn park(values: Vec<T>, unpack: &Unpack, what: &str) -> Parked<T> {
        let len = values.len();
        let written = unpack.tempfile(None).and_then(|mut file| {
            unpack.admit(what, (len * T::SIZE) as u64, &file)?;
            let mut buf = vec![0u8; (BLOCK / T::SIZE).max(1) * T::SIZE];
            for run in values.chunks((BLOCK / T::SIZE).max(1)) {
                let out = &mut buf[..run.len() * T::SIZE];
                for (to, &x) in out.chunks_exact_mut(T::SIZE).zip(run) {
                    x.put(to);
                }
                file.write_all(out)?;
            }
            file.flush()?;
            Ok(file)
        });
        match written {
            Ok(file) => Parked::Written { file, len },
            Err(_) => Parked::Held(values),
        }
    }

    /// The values back.
    pub fn take(self) -> std::io::Result<Vec<T>> {
        let (mut file, len) = match self {
            Parked::Held(v) => return Ok(v),
            Parked::Written { file, len } => (file, len),
        };
        file.rewind()?;
        let mut out = Vec::with_capacity(len);
        let mut buf = vec![0u8; (BLOCK / T::SIZE).max(1) * T::SIZE];
        while out.len() < len {
            let n = ((len - out.len()) * T::SIZE).min(buf.len());
            file.read_exact(&mut buf[..n])?;
            out.extend(buf[..n].chunks_exact(T::SIZE).map(T::get));
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_come_back_as_they_went() {
        let bytes: Vec<u8> = (0..3_000_000u32).map(|i| (i % 251) as u8).collect();
        let parked = Parked::park(bytes.clone(), &Unpack::default(), "bytes");
        assert!(matches!(parked, Parked::Written { .. }));
        assert_eq!(parked.take().unwrap(), bytes);
    }
}
