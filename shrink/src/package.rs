//! The upload package: a zip holding `result.info`, the shrunk hprof (streamed into its
//! entry as pass 3 writes it) and, optionally, `extra.info`. Entries carry the dump's own
//! timestamp, so the same input and options give the same bytes.

use std::io::{Seek, Write};

use zip::write::SimpleFileOptions;
use zip::{CompressionMethod, DateTime, ZipWriter};

use crate::error::{Error, Result};
use crate::manifest::{Manifest, EXTRA_INFO, RESULT_INFO};
use crate::properties;

pub struct Package<W: Write + Seek> {
    zip: ZipWriter<W>,
    options: SimpleFileOptions,
}

/// Zip entry options: deflate at `level` (stored at 0), the dump's time, mode 0644.
fn entry_options(level: u32, timestamp_ms: u64) -> SimpleFileOptions {
    let method = if level == 0 {
        CompressionMethod::Stored
    } else {
        CompressionMethod::Deflated
    };
    SimpleFileOptions::default()
        .compression_method(method)
        .compression_level((level > 0).then_some(level as i64))
        .last_modified_time(dos_time(timestamp_ms))
        .unix_permissions(0o644)
}

impl<W: Write + Seek> Package<W> {
    /// Writes `result.info` and opens the hprof entry. `large` asks for a zip64 entry,
    /// needed when the hprof may reach 4 GiB.
    pub fn start(
        out: W,
        manifest: &Manifest,
        level: u32,
        timestamp_ms: u64,
        large: bool,
    ) -> Result<Self> {
        if level > 9 {
            return Err(Error::Invalid(format!(
                "compression level {level} is not 0-9"
            )));
        }
        let options = entry_options(level, timestamp_ms);
        let mut zip = ZipWriter::new(out);
        zip.start_file(RESULT_INFO, options)?;
        zip.write_all(manifest.render().as_bytes())
            .map_err(Error::Write)?;
        zip.start_file(&manifest.hprof_entry, options.large_file(large))?;
        Ok(Package { zip, options })
    }

    /// Closes the hprof entry, adds `extra.info` when there are extra properties, sets the
    /// archive comment and writes the central directory.
    pub fn finish(mut self, extra: &[(String, String)], comment: &str) -> Result<W> {
        if !extra.is_empty() {
            self.zip.start_file(EXTRA_INFO, self.options)?;
            let pairs: Vec<(&str, &str)> = extra
                .iter()
                .map(|(k, v)| (k.as_str(), v.as_str()))
                .collect();
            self.zip
                .write_all(properties::render(None, &pairs).as_bytes())
                .map_err(Error::Write)?;
        }
        self.zip.set_comment(comment)?;
        Ok(self.zip.finish()?)
    }
}

impl<W: Write + Seek> Write for Package<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.zip.write(buf)
    }

    fn write_all(&mut self, buf: &[u8]) -> std::io::Result<()> {
        self.zip.write_all(buf)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.zip.flush()
    }
}

/// The zip (MS-DOS) time of a Unix time in ms, UTC; 1980-01-01 when out of its range.
fn dos_time(ms: u64) -> DateTime {
    let secs = ms / 1000;
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    let (y, m, d) = civil_from_days(days);
    let in_range = (1980..=2107).contains(&y);
    let t = in_range
        .then(|| {
            DateTime::from_date_and_time(
                y as u16,
                m as u8,
                d as u8,
                (rem / 3600) as u8,
                (rem % 3600 / 60) as u8,
                (rem % 60) as u8,
            )
            .ok()
        })
        .flatten();
    t.unwrap_or_default()
}

/// Days since 1970-01-01 to (year, month, day) in the proleptic Gregorian calendar
/// (Howard Hinnant's days_from_civil, inverted).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn civil_dates() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        // 2023-11-14: 19675 days after the epoch.
        assert_eq!(civil_from_days(19_675), (2023, 11, 14));
        assert_eq!(civil_from_days(11_016), (2000, 2, 29));
    }

    #[test]
    fn dos_time_of_the_dump_timestamp() {
        let t = dos_time(1_700_000_000_000); // 2023-11-14 22:13:20 UTC
        assert_eq!(
            (
                t.year(),
                t.month(),
                t.day(),
                t.hour(),
                t.minute(),
                t.second()
            ),
            (2023, 11, 14, 22, 13, 20)
        );
        assert_eq!(dos_time(0), DateTime::default());
    }
}
