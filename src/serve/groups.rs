//! Leaks grouped by signature across packages, and duplicate bitmaps by buffer hash: what
//! the pages and `GET /api/leaks` show. Pure: rows in, groups out.

use std::collections::BTreeMap;

use serde::Serialize;

use super::store::{BitmapRow, LeakRow};

/// One bug seen on many devices: every leak with this signature.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LeakGroup {
    pub signature: String,
    /// The leaking object's class in the most recent occurrence.
    pub class_name: String,
    /// The known framework leak's description: a library leak, not the app's bug.
    pub library_leak: Option<String>,
    pub occurrences: u64,
    /// Distinct packages.
    pub packages: u64,
    pub first_seen_ms: i64,
    pub last_seen_ms: i64,
    /// (value, occurrences), most frequent first.
    pub sdk_versions: Vec<(String, u64)>,
    pub manufacturers: Vec<(String, u64)>,
    pub app_versions: Vec<(String, u64)>,
    pub retained_bytes: Distribution,
}

/// Nearest-rank percentiles of the retained sizes.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct Distribution {
    pub min: i64,
    pub p50: i64,
    pub p90: i64,
    pub max: i64,
}

impl Distribution {
    pub fn of(mut v: Vec<i64>) -> Distribution {
        if v.is_empty() {
            return Distribution::default();
        }
        v.sort_unstable();
        let rank = |p: usize| v[(v.len() * p).div_ceil(100).max(1) - 1];
        Distribution {
            min: v[0],
            p50: rank(50),
            p90: rank(90),
            max: v[v.len() - 1],
        }
    }
}

fn spread(values: &[&str]) -> Vec<(String, u64)> {
    let mut m: BTreeMap<&str, u64> = BTreeMap::new();
    for v in values {
        *m.entry(v).or_default() += 1;
    }
    let mut v: Vec<(String, u64)> = m.into_iter().map(|(k, n)| (k.to_string(), n)).collect();
    sort_spread(&mut v);
    v
}

/// Most frequent first; ties by value, so the order is stable.
fn sort_spread(v: &mut [(String, u64)]) {
    v.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
}

/// Most occurrences first, then the most recently seen, then by signature.
fn sort_groups(groups: &mut [LeakGroup]) {
    groups.sort_by(|a, b| {
        b.occurrences
            .cmp(&a.occurrences)
            .then(b.last_seen_ms.cmp(&a.last_seen_ms))
            .then_with(|| a.signature.cmp(&b.signature))
    });
}

/// Groups leak rows by signature, most occurrences first (ties: most recent first).
pub fn leak_groups(rows: &[LeakRow]) -> Vec<LeakGroup> {
    let mut by_sig: BTreeMap<&str, Vec<&LeakRow>> = BTreeMap::new();
    for r in rows {
        by_sig.entry(&r.signature).or_default().push(r);
    }
    let mut groups: Vec<LeakGroup> = by_sig
        .into_iter()
        .map(|(sig, rs)| {
            // The last of the maxima: rows come in leak order, so within one package the
            // leak recorded last.
            let latest = rs
                .iter()
                .max_by_key(|r| (r.received_ms, r.package_id))
                .expect("a group has a row");
            let mut packages: Vec<i64> = rs.iter().map(|r| r.package_id).collect();
            packages.sort_unstable();
            packages.dedup();
            LeakGroup {
                signature: sig.to_string(),
                class_name: latest.class_name.clone(),
                library_leak: latest.library.clone(),
                occurrences: rs.len() as u64,
                packages: packages.len() as u64,
                first_seen_ms: rs.iter().map(|r| r.received_ms).min().unwrap_or(0),
                last_seen_ms: rs.iter().map(|r| r.received_ms).max().unwrap_or(0),
                sdk_versions: spread(&rs.iter().map(|r| r.sdk.as_str()).collect::<Vec<_>>()),
                manufacturers: spread(
                    &rs.iter()
                        .map(|r| r.manufacturer.as_str())
                        .collect::<Vec<_>>(),
                ),
                app_versions: spread(
                    &rs.iter()
                        .map(|r| r.app_version.as_str())
                        .collect::<Vec<_>>(),
                ),
                retained_bytes: Distribution::of(rs.iter().map(|r| r.retained_bytes).collect()),
            }
        })
        .collect();
    sort_groups(&mut groups);
    groups
}

/// One buffer duplicated, across every package it was found in.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BitmapGroup {
    pub hash: String,
    pub width: i64,
    pub height: i64,
    pub format: String,
    pub buffer_bytes: i64,
    /// Packages holding duplicates of this buffer.
    pub packages: Vec<i64>,
    /// Copies in all those packages together.
    pub copies: i64,
    pub wasted_bytes: i64,
    /// `/pictures/<hash>.png`, when a picture was made.
    pub picture: Option<String>,
}

/// Groups by buffer hash, most wasted bytes first.
pub fn bitmap_groups(rows: &[BitmapRow]) -> Vec<BitmapGroup> {
    let mut by_hash: BTreeMap<&str, BitmapGroup> = BTreeMap::new();
    for r in rows {
        let g = by_hash.entry(&r.hash).or_insert_with(|| BitmapGroup {
            hash: r.hash.clone(),
            width: r.width,
            height: r.height,
            format: r.format.clone(),
            buffer_bytes: r.buffer_bytes,
            packages: Vec::new(),
            copies: 0,
            wasted_bytes: 0,
            picture: None,
        });
        if !g.packages.contains(&r.package_id) {
            g.packages.push(r.package_id);
        }
        g.copies += r.copies;
        g.wasted_bytes += r.wasted_bytes;
        if r.has_picture {
            g.picture = Some(format!("/pictures/{}.png", r.hash));
        }
    }
    let mut v: Vec<BitmapGroup> = by_hash.into_values().collect();
    v.sort_by(|a, b| {
        b.wasted_bytes
            .cmp(&a.wasted_bytes)
            .then_with(|| a.hash.cmp(&b.hash))
    });
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(pkg: i64, ms: i64, sig: &str, sdk: &str, maker: &str, retained: i64) -> LeakRow {
        LeakRow {
            package_id: pkg,
            package_name: format!("p{pkg}.zip"),
            received_ms: ms,
            sdk: sdk.into(),
            manufacturer: maker.into(),
            app_version: "1.0".into(),
            signature: sig.into(),
            class_name: "com.example.A".into(),
            library: None,
            retained_bytes: retained,
        }
    }

    #[test]
    fn groups_count_spread_and_order() {
        let rows = vec![
            row(1, 100, "b", "25", "samsung", 10),
            row(2, 200, "a", "25", "samsung", 30),
            row(2, 200, "a", "25", "samsung", 20),
            row(3, 300, "a", "26", "google", 10),
        ];
        let g = leak_groups(&rows);
        assert_eq!(g.len(), 2);
        assert_eq!(g[0].signature, "a");
        assert_eq!((g[0].occurrences, g[0].packages), (3, 2));
        assert_eq!((g[0].first_seen_ms, g[0].last_seen_ms), (200, 300));
        assert_eq!(
            g[0].sdk_versions,
            [("25".to_string(), 2), ("26".to_string(), 1)]
        );
        assert_eq!(
            g[0].manufacturers,
            [("samsung".to_string(), 2), ("google".to_string(), 1)]
        );
        assert_eq!(
            g[0].retained_bytes,
            Distribution {
                min: 10,
                p50: 20,
                p90: 30,
                max: 30
            }
        );
        assert_eq!(g[1].occurrences, 1);
    }

    #[test]
    fn percentiles_by_nearest_rank() {
        let d = Distribution::of((1..=10).collect());
        assert_eq!((d.min, d.p50, d.p90, d.max), (1, 5, 9, 10));
        assert_eq!(Distribution::of(vec![]), Distribution::default());
    }

    #[test]
    fn bitmaps_by_hash_across_packages() {
        let b = |pkg, hash: &str, copies, pic| BitmapRow {
            package_id: pkg,
            hash: hash.into(),
            width: 10,
            height: 10,
            buffer_bytes: 400,
            copies,
            wasted_bytes: (copies - 1) * 400,
            format: "ARGB_8888".into(),
            has_picture: pic,
        };
        let g = bitmap_groups(&[b(1, "x", 2, false), b(2, "x", 3, true), b(2, "y", 2, false)]);
        assert_eq!(g[0].hash, "x");
        assert_eq!((g[0].copies, g[0].wasted_bytes), (5, 1200));
        assert_eq!(g[0].packages, [1, 2]);
        assert_eq!(g[0].picture.as_deref(), Some("/pictures/x.png"));
        assert_eq!(g[1].picture, None);
    }
}
