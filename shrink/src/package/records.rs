//! The zip records a package is made of (APPNOTE 6.3: local header, data descriptor,
//! central directory, end of central directory, and their zip64 forms), encoded into
//! byte vectors. Which record goes where, and when, is the writer's business.

/// A 32-bit size or offset field that says "see the zip64 extra field".
pub const FFFF: u32 = u32::MAX;
/// Sizes at or past this go into zip64 fields.
pub const ZIP64_AT: u64 = FFFF as u64;

const LOCAL_SIG: u32 = 0x0403_4b50;
const DESCRIPTOR_SIG: u32 = 0x0807_4b50;
const CENTRAL_SIG: u32 = 0x0201_4b50;
const END_SIG: u32 = 0x0605_4b50;
const END64_SIG: u32 = 0x0606_4b50;
const LOCATOR64_SIG: u32 = 0x0706_4b50;

/// General purpose flag bit 3: CRC and sizes follow the data in a data descriptor.
pub const FLAG_DESCRIPTOR: u16 = 1 << 3;
/// Flag bit 11: the name is UTF-8.
const FLAG_UTF8: u16 = 1 << 11;
const ZIP64_EXTRA_ID: u16 = 0x0001;
const VERSION: u16 = 20;
const VERSION64: u16 = 45;
/// "Made by" Unix, so that readers take the mode in the external attributes.
const MADE_BY_UNIX: u16 = 3 << 8;
/// A regular file, rw-r--r--, in the upper half of the external attributes.
const REGULAR_644: u32 = 0o100_644 << 16;

/// Where the CRC and the sizes sit in a local header, for patching them in later.
pub const LOCAL_CRC_AT: u64 = 14;
/// Where the zip64 extra field's two sizes sit in a local header that has one, after
/// the fixed part, the name and the field's own 4-byte header.
pub fn local_zip64_sizes_at(name_len: usize) -> u64 {
    30 + name_len as u64 + 4
}

/// One entry as the central directory describes it.
#[derive(Debug, Clone)]
pub struct Entry {
    /// The entry's name.
    pub name: String,
    /// 0 stored, 8 deflated.
    pub method: u16,
    /// General purpose flags (bit 3: a data descriptor follows).
    pub flags: u16,
    /// CRC-32 of the uncompressed bytes.
    pub crc: u32,
    /// Bytes as stored.
    pub compressed: u64,
    /// Bytes uncompressed.
    pub size: u64,
    /// Offset of the local header.
    pub local_offset: u64,
    /// The DOS time and date all entries carry.
    pub dos: (u16, u16),
    /// The local header has a zip64 extra field (its sizes are 0xFFFFFFFF there): only
    /// for a stored entry that may pass 4 GiB.
    pub zip64_local: bool,
}

struct Out(Vec<u8>);

impl Out {
    fn u16(&mut self, v: u16) -> &mut Self {
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }
    fn u32(&mut self, v: u32) -> &mut Self {
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }
    fn u64(&mut self, v: u64) -> &mut Self {
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }
    fn bytes(&mut self, v: &[u8]) -> &mut Self {
        self.0.extend_from_slice(v);
        self
    }
}

fn name_flag(name: &str) -> u16 {
    if name.is_ascii() {
        0
    } else {
        FLAG_UTF8
    }
}

/// The 32-bit form of a size or offset: itself, or 0xFFFFFFFF pointing at the zip64 field.
fn short(v: u64) -> u32 {
    if v >= ZIP64_AT {
        FFFF
    } else {
        v as u32
    }
}

/// The local header of `e`. With `zip64_local`, the sizes live in a zip64 extra field
/// (and the 32-bit fields say so), which a stored entry that may pass 4 GiB needs even
/// before its sizes are known.
pub fn local_header(e: &Entry) -> Vec<u8> {
    let mut o = Out(Vec::with_capacity(30 + e.name.len() + 20));
    let (size, compressed) = if e.zip64_local {
        (FFFF, FFFF)
    } else {
        (e.size as u32, e.compressed as u32)
    };
    let extra_len = if e.zip64_local { 20 } else { 0 };
    o.u32(LOCAL_SIG)
        .u16(if e.zip64_local { VERSION64 } else { VERSION })
        .u16(e.flags | name_flag(&e.name))
        .u16(e.method)
        .u16(e.dos.0)
        .u16(e.dos.1)
        .u32(e.crc)
        .u32(compressed)
        .u32(size)
        .u16(e.name.len() as u16)
        .u16(extra_len)
        .bytes(e.name.as_bytes());
    if e.zip64_local {
        o.u16(ZIP64_EXTRA_ID).u16(16).u64(e.size).u64(e.compressed);
    }
    o.0
}

/// The data descriptor after a streamed (deflated) entry: 8-byte sizes when a size passes
/// 4 GiB, 4-byte ones otherwise. Java's `ZipInputStream` decides the descriptor's length by
/// the sizes it finds, not by the local header, which is why a deflated entry's local
/// header never has a zip64 field.
pub fn descriptor(e: &Entry) -> Vec<u8> {
    let mut o = Out(Vec::with_capacity(24));
    o.u32(DESCRIPTOR_SIG).u32(e.crc);
    if e.size >= ZIP64_AT || e.compressed >= ZIP64_AT {
        o.u64(e.compressed).u64(e.size);
    } else {
        o.u32(e.compressed as u32).u32(e.size as u32);
    }
    o.0
}

fn needs_zip64(e: &Entry) -> bool {
    e.size >= ZIP64_AT || e.compressed >= ZIP64_AT || e.local_offset >= ZIP64_AT
}

/// The central directory record of `e`.
pub fn central(e: &Entry) -> Vec<u8> {
    let mut extra = Out(Vec::new());
    for v in [e.size, e.compressed, e.local_offset] {
        if v >= ZIP64_AT {
            extra.u64(v);
        }
    }
    let version = if needs_zip64(e) { VERSION64 } else { VERSION };
    let extra_len = if extra.0.is_empty() {
        0
    } else {
        4 + extra.0.len()
    };
    let mut o = Out(Vec::with_capacity(46 + e.name.len() + extra_len));
    o.u32(CENTRAL_SIG)
        .u16(MADE_BY_UNIX | version)
        .u16(version)
        .u16(e.flags | name_flag(&e.name))
        .u16(e.method)
        .u16(e.dos.0)
        .u16(e.dos.1)
        .u32(e.crc)
        .u32(short(e.compressed))
        .u32(short(e.size))
        .u16(e.name.len() as u16)
        .u16(extra_len as u16)
        .u16(0) // comment length
        .u16(0) // disk number
        .u16(0) // internal attributes
        .u32(REGULAR_644)
        .u32(short(e.local_offset))
        .bytes(e.name.as_bytes());
    if !extra.0.is_empty() {
        o.u16(ZIP64_EXTRA_ID)
            .u16(extra.0.len() as u16)
            .bytes(&extra.0);
    }
    o.0
}

/// The end records: zip64 end and locator where the directory's place or size need them,
/// then the end of central directory with the archive comment.
pub fn end(entries: u64, dir_offset: u64, dir_size: u64, comment: &[u8]) -> Vec<u8> {
    let mut o = Out(Vec::new());
    let zip64 = entries >= 0xFFFF || dir_offset >= ZIP64_AT || dir_size >= ZIP64_AT;
    if zip64 {
        let end64_at = dir_offset + dir_size;
        o.u32(END64_SIG)
            .u64(44) // the record's size after this field
            .u16(MADE_BY_UNIX | VERSION64)
            .u16(VERSION64)
            .u32(0)
            .u32(0)
            .u64(entries)
            .u64(entries)
            .u64(dir_size)
            .u64(dir_offset);
        o.u32(LOCATOR64_SIG).u32(0).u64(end64_at).u32(1);
    }
    let count = entries.min(0xFFFF) as u16;
    o.u32(END_SIG)
        .u16(0)
        .u16(0)
        .u16(count)
        .u16(count)
        .u32(short(dir_size))
        .u32(short(dir_offset))
        .u16(comment.len() as u16)
        .bytes(comment);
    o.0
}

/// MS-DOS time and date of a Unix time in seconds (UTC), clamped to what DOS can say
/// (1980 to 2107; seconds in steps of two).
pub fn dos_time(unix_secs: i64) -> (u16, u16) {
    const MIN: i64 = 315_532_800; // 1980-01-01
    const MAX: i64 = 4_354_819_198; // 2107-12-31 23:59:58
    let t = unix_secs.clamp(MIN, MAX);
    let days = t.div_euclid(86_400);
    let secs = t.rem_euclid(86_400);
    let (y, m, d) = civil_from_days(days);
    let time = ((secs / 3600) << 11) | (((secs / 60) % 60) << 5) | ((secs % 60) / 2);
    let date = ((y - 1980) << 9) | (m << 5) | d;
    (time as u16, date as u16)
}

/// Year, month, day of a day count since 1970-01-01 (the proleptic Gregorian calendar).
pub fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dos_time_of_known_instants() {
        // 2017-07-14 02:40:00 UTC.
        let (t, d) = dos_time(1_500_000_000);
        assert_eq!(t, (2 << 11) | (40 << 5));
        assert_eq!(d, ((2017 - 1980) << 9) | (7 << 5) | 14);
        // 2000-02-29 23:59:59 UTC: a leap day, odd seconds rounded down.
        let (t, d) = dos_time(951_868_799);
        assert_eq!(t, (23 << 11) | (59 << 5) | 29);
        assert_eq!(d, (20 << 9) | (2 << 5) | 29);
        // Before 1980: the earliest DOS instant.
        assert_eq!(dos_time(0), (0, (1 << 5) | 1));
    }

    #[test]
    fn large_values_move_into_zip64_fields() {
        let e = Entry {
            name: "a".into(),
            method: 0,
            flags: 0,
            crc: 1,
            compressed: 5 << 30,
            size: 5 << 30,
            local_offset: 7,
            dos: (0, 0),
            zip64_local: true,
        };
        let c = central(&e);
        assert_eq!(&c[20..28], &[0xFF; 8]);
        // Extra: id 1, 16 bytes: the size, then the compressed size.
        assert_eq!(&c[47..51], &[1, 0, 16, 0]);
        assert_eq!(&c[51..59], &(5u64 << 30).to_le_bytes());
        let l = local_header(&e);
        assert_eq!(l.len(), 30 + 1 + 20);
        assert_eq!(
            &l[local_zip64_sizes_at(1) as usize..][..8],
            &(5u64 << 30).to_le_bytes()
        );
        // A deflated entry's descriptor grows with its sizes, not with its header.
        let small = Entry {
            size: 10,
            compressed: 12,
            ..e.clone()
        };
        assert_eq!(descriptor(&small).len(), 16);
        assert_eq!(descriptor(&e).len(), 24);
        let end = end(3, 6 << 30, 200, b"c");
        assert_eq!(&end[..4], &END64_SIG.to_le_bytes());
    }
}
