//! Duplicate bitmaps (Matrix's DuplicatedBitmapAnalyzer, on every Android version that
//! keeps pixels in the dump): strongly reachable Bitmaps of the app's heap whose buffers
//! are identical, grouped. Pixels come from `Bitmap.mBuffer` (API < 26, raw pixels) or
//! from `Bitmap.dumpData` (API 34+ dumps made with `-b`, encoded images matched to each
//! Bitmap by its native pointer).

use crate::base::map::Map;
use hprof_shrink_core::hprof::{BasicType, Value};
use md5::{Digest, Md5};

use crate::base::limits::{MAX_BITMAP_GROUPS, MAX_BITMAP_INSTANCES};
use crate::heap::graph::{Graph, Instances};
use crate::heap::index::Node;
use crate::knowledge::inspect::Inspectors;
use crate::model::{BitmapGroup, BitmapInstance};
use crate::paths::reach::Reach;
use crate::paths::trace::traces;
use crate::report::live_bitmaps;

/// The class whose instances are compared.
pub const BITMAP: &str = "android.graphics.Bitmap";

/// One Bitmap and its buffer.
struct Found<'a> {
    node: Node,
    width: i64,
    height: i64,
    bytes: &'a [u8],
    from_dump_data: bool,
}

/// What [`duplicates`] finds.
#[derive(Default)]
pub struct Duplicates {
    /// The groups, largest waste first: the first [`MAX_BITMAP_GROUPS`], each with the
    /// paths of its first [`MAX_BITMAP_INSTANCES`] by id.
    pub groups: Vec<BitmapGroup>,
    /// Groups left out.
    pub omitted: u64,
    /// Each kept group's picture: (file name, bytes).
    pub pictures: Vec<(String, Vec<u8>)>,
}

/// The duplicate-bitmap groups.
pub fn duplicates(
    g: &Graph<'_, '_>,
    reach: &Reach,
    ins: &Inspectors<'_>,
    instances: &Instances,
    min_bytes: u64,
    want_pictures: bool,
) -> Duplicates {
    use rayon::prelude::*;
    let Some(bitmap) = g.class_named(BITMAP) else {
        return Duplicates::default();
    };
    let dump_data = dump_data_buffers(g, bitmap);
    let found = found(g, reach, instances, bitmap, &dump_data, min_bytes);
    let classes = equal_buffers(&found);
    let mut order = by_waste(&found, classes);
    let omitted = crate::base::limits::keep_first(&mut order, MAX_BITMAP_GROUPS);
    let (groups, mut to_draw) = groups(g, reach, ins, &found, order);
    to_draw.sort();
    to_draw.dedup_by(|a, b| a.0 == b.0);
    let pictures = if want_pictures {
        to_draw
            .into_par_iter()
            .filter_map(|(name, i)| draw(&found[i]).map(|bytes| (name, bytes)))
            .collect()
    } else {
        Vec::new()
    };
    Duplicates {
        groups,
        omitted,
        pictures,
    }
}

/// The strongly reachable Bitmaps of the app's heap with a buffer of at least
/// `min_bytes`, in the order of `instances`.
fn found<'a>(
    g: &Graph<'_, 'a>,
    reach: &Reach,
    instances: &Instances,
    bitmap: u64,
    dump_data: &Map<i64, &'a [u8]>,
    min_bytes: u64,
) -> Vec<Found<'a>> {
    let mut found = Vec::new();
    for b in live_bitmaps::live(g, reach, instances.of(&[bitmap])) {
        let (bytes, from_dump_data) = match b.buffer {
            Some(bytes) => (bytes, false),
            None => match b.native_ptr.and_then(|p| dump_data.get(&p)) {
                Some(bytes) => (*bytes, true),
                None => continue,
            },
        };
        if (bytes.len() as u64) < min_bytes {
            continue;
        }
        found.push(Found {
            node: b.node,
            width: b.width,
            height: b.height,
            bytes,
            from_dump_data,
        });
    }
    found
}

/// The classes of equal buffers (two or more each), as indices into `found`.
fn equal_buffers(found: &[Found<'_>]) -> Vec<Vec<usize>> {
    use rayon::prelude::*;
    // Only buffers that share their length can be duplicates. Those are grouped by a
    // fast hash (on all threads, seeded at random so that a dump cannot make its buffers
    // collide), each group split by the bytes themselves (sorted, so that however many
    // contents share a hash, each buffer takes a few comparisons), and only a copy that
    // has a duplicate gets the MD5 the result names it by.
    let mut by_len: Map<usize, u32> = Map::default();
    for f in found {
        *by_len.entry(f.bytes.len()).or_default() += 1;
    }
    let seed = foldhash::fast::RandomState::default();
    let hashed: Vec<((usize, u64), usize)> = (0..found.len())
        .into_par_iter()
        .filter(|&i| by_len[&found[i].bytes.len()] > 1)
        .map(|i| {
            let hash = std::hash::BuildHasher::hash_one(&seed, found[i].bytes);
            ((found[i].bytes.len(), hash), i)
        })
        .collect();
    let mut by_hash: Map<(usize, u64), Vec<usize>> = Map::default();
    for (key, i) in hashed {
        by_hash.entry(key).or_default().push(i);
    }
    let mut classes: Vec<Vec<usize>> = Vec::new();
    for (_, mut members) in by_hash {
        // Equal buffers side by side, each run in the order found.
        members.sort_by(|&a, &b| found[a].bytes.cmp(found[b].bytes).then(a.cmp(&b)));
        classes.extend(
            members
                .chunk_by(|&a, &b| found[a].bytes == found[b].bytes)
                .filter(|run| run.len() > 1)
                .map(<[usize]>::to_vec),
        );
    }
    classes
}

/// The classes with their wasted bytes and MD5, the most wasteful first.
fn by_waste(found: &[Found<'_>], classes: Vec<Vec<usize>>) -> Vec<(u64, String, Vec<usize>)> {
    use rayon::prelude::*;
    let digests: Vec<[u8; 16]> = classes
        .par_iter()
        .map(|c| Md5::digest(found[c[0]].bytes).into())
        .collect();
    // The groups that waste the most are kept; only theirs are traced and drawn.
    let mut order: Vec<(u64, String, Vec<usize>)> = classes
        .into_iter()
        .zip(digests)
        .map(|(class, hash)| {
            let wasted = found[class[0]].bytes.len() as u64 * (class.len() as u64 - 1);
            let hex: String = hash.iter().map(|b| format!("{b:02x}")).collect();
            (wasted, hex, class)
        })
        .collect();
    // Ties (two contents of one MD5) broken by the first copy found: the groups come out of
    // a seeded hash map in no set order.
    order.sort_by(|a, b| {
        b.0.cmp(&a.0)
            .then_with(|| a.1.cmp(&b.1))
            .then_with(|| a.2[0].cmp(&b.2[0]))
    });
    order
}

/// The kept classes as groups (their first instances traced), and the pictures to draw:
/// (file name, index of the copy drawn).
fn groups(
    g: &Graph<'_, '_>,
    reach: &Reach,
    ins: &Inspectors<'_>,
    found: &[Found<'_>],
    order: Vec<(u64, String, Vec<usize>)>,
) -> (Vec<BitmapGroup>, Vec<(String, usize)>) {
    let mut groups: Vec<BitmapGroup> = Vec::new();
    let mut to_draw: Vec<(String, usize)> = Vec::new();
    // The instances to trace, in the order of the groups' lists: traced together below.
    let mut traced: Vec<Node> = Vec::new();
    for (wasted, hex, mut class) in order {
        let first = &found[class[0]];
        let (format, ext) = describe(first);
        let image = ext.map(|ext| format!("{hex}.{ext}"));
        if let Some(name) = &image {
            to_draw.push((name.clone(), class[0]));
        }
        let count = class.len() as u64;
        class.sort_by_key(|&i| g.ix.id(found[i].node));
        let omitted_instances = crate::base::limits::keep_first(&mut class, MAX_BITMAP_INSTANCES);
        let instances: Vec<BitmapInstance> = class
            .iter()
            .map(|&i| {
                traced.push(found[i].node);
                BitmapInstance {
                    object_id: g.ix.id(found[i].node),
                    trace: None,
                }
            })
            .collect();
        groups.push(BitmapGroup {
            hash: hex,
            width: first.width,
            height: first.height,
            buffer_bytes: first.bytes.len() as u64,
            count,
            wasted_bytes: wasted,
            source: if first.from_dump_data {
                "dumpData"
            } else {
                "mBuffer"
            }
            .into(),
            format,
            image,
            instances,
            omitted_instances,
        });
    }
    let mut made = traces(g, reach, ins, &traced).into_iter();
    for instance in groups.iter_mut().flat_map(|gr| &mut gr.instances) {
        instance.trace = made.next().flatten();
    }
    (groups, to_draw)
}

/// `Bitmap.dumpData`: native pointer → encoded image bytes.
fn dump_data_buffers<'a>(g: &Graph<'_, 'a>, bitmap: u64) -> Map<i64, &'a [u8]> {
    let mut out = Map::default();
    let Some(data) = g
        .statics(bitmap)
        .into_iter()
        .find(|(n, _)| n == "dumpData")
        .and_then(|(_, v)| v.as_object())
        .filter(|&id| id != 0)
        .and_then(|id| g.ix.node(id))
    else {
        return out;
    };
    let Some(fields) = g.fields(data) else {
        return out;
    };
    let get = |name: &str| {
        fields
            .iter()
            .find(|(n, _)| n == name)
            .and_then(|(_, v)| v.as_object())
            .filter(|&id| id != 0)
            .and_then(|id| g.ix.node(id))
    };
    let (Some(natives), Some(buffers)) = (get("natives"), get("buffers")) else {
        return out;
    };
    let Some((_, natives)) = g.primitive(natives) else {
        return out;
    };
    let Some(buffers) = g.elements(buffers) else {
        return out;
    };
    for (ptr, buffer) in natives.chunks_exact(8).zip(buffers) {
        let ptr = Value::read(BasicType::Long, ptr, 8).as_i64().unwrap_or(0);
        if let Some((_, bytes)) = g.ix.node(buffer).and_then(|n| g.primitive(n)) {
            out.insert(ptr, bytes);
        }
    }
    out
}

/// The buffer's format, and the extension of the picture that can be made of it: raw
/// pixels become a PNG; an encoded image is kept as it is.
fn describe(f: &Found<'_>) -> (String, Option<&'static str>) {
    if f.from_dump_data {
        return match encoded_kind(f.bytes) {
            Some((format, ext)) => (format.into(), Some(ext)),
            None => ("unknown".into(), None),
        };
    }
    match raw_kind(f) {
        Some(kind) => (kind.name().into(), Some("png")),
        None => ("unknown".into(), None),
    }
}

/// An encoded image's format and extension, from its first bytes.
fn encoded_kind(b: &[u8]) -> Option<(&'static str, &'static str)> {
    if b.starts_with(b"\x89PNG") {
        Some(("png", "png"))
    } else if b.starts_with(&[0xFF, 0xD8]) {
        Some(("jpeg", "jpg"))
    } else if b.len() > 12 && &b[0..4] == b"RIFF" && &b[8..12] == b"WEBP" {
        Some(("webp", "webp"))
    } else {
        None
    }
}

#[derive(Clone, Copy)]
enum Raw {
    Argb8888,
    Rgb565,
    Alpha8,
}

impl Raw {
    fn name(self) -> &'static str {
        match self {
            Raw::Argb8888 => "ARGB_8888",
            Raw::Rgb565 => "RGB_565",
            Raw::Alpha8 => "ALPHA_8",
        }
    }
}

/// The pixel format of a raw buffer, from its bytes per pixel.
fn raw_kind(f: &Found<'_>) -> Option<Raw> {
    let pixels = (f.width.max(0) as u64) * (f.height.max(0) as u64);
    if pixels == 0 || !(f.bytes.len() as u64).is_multiple_of(pixels) {
        return None;
    }
    match f.bytes.len() as u64 / pixels {
        4 => Some(Raw::Argb8888),
        2 => Some(Raw::Rgb565),
        1 => Some(Raw::Alpha8),
        _ => None,
    }
}

/// The picture's file bytes.
fn draw(f: &Found<'_>) -> Option<Vec<u8>> {
    if f.from_dump_data {
        return Some(f.bytes.to_vec());
    }
    let (color, data): (png::ColorType, std::borrow::Cow<'_, [u8]>) = match raw_kind(f)? {
        // ARGB_8888 is stored R, G, B, A in memory.
        Raw::Argb8888 => (png::ColorType::Rgba, f.bytes.into()),
        Raw::Rgb565 => {
            let rgb: Vec<u8> = f
                .bytes
                .chunks_exact(2)
                .flat_map(|c| {
                    let v = u16::from_le_bytes([c[0], c[1]]);
                    let (r, g, b) = ((v >> 11) & 0x1f, (v >> 5) & 0x3f, v & 0x1f);
                    [
                        (r * 255 / 31) as u8,
                        (g * 255 / 63) as u8,
                        (b * 255 / 31) as u8,
                    ]
                })
                .collect();
            (png::ColorType::Rgb, rgb.into())
        }
        Raw::Alpha8 => (png::ColorType::Grayscale, f.bytes.into()),
    };
    let mut out = Vec::new();
    let mut enc = png::Encoder::new(&mut out, f.width as u32, f.height as u32);
    enc.set_color(color);
    enc.set_depth(png::BitDepth::Eight);
    // A picture to look at, not to archive: the fastest compression.
    enc.set_compression(png::Compression::Fast);
    let mut writer = enc.write_header().ok()?;
    writer.write_image_data(&data).ok()?;
    writer.finish().ok()?;
    Some(out)
}
