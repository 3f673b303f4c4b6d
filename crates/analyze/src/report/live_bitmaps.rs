//! The one walk over the app's live Bitmaps, for the duplicate groups and the triage's
//! counts alike: strongly reachable, outside the zygote's and the boot image's heaps
//! (ART's heap ids: those Bitmaps belong to the system), each with its size, its Java
//! pixel buffer (`mBuffer`, API < 26) and its native pointer.

use crate::heap::graph::Graph;
use crate::heap::index::Node;
use crate::paths::reach::Reach;

/// ART's heap ids of the zygote's and the boot image's heaps.
const HEAP_ZYGOTE: u32 = b'Z' as u32;
const HEAP_IMAGE: u32 = b'I' as u32;

/// One live Bitmap as its fields say.
pub struct LiveBitmap<'a> {
    pub node: Node,
    pub width: i64,
    pub height: i64,
    pub recycled: bool,
    /// `mBuffer`'s bytes, when the pixels are on the Java heap.
    pub buffer: Option<&'a [u8]>,
    /// `mNativePtr`, which an Android 14 `dumpData` entry names.
    pub native_ptr: Option<i64>,
}

/// The live Bitmaps among `nodes` (instances of Bitmap), in their order.
pub fn live<'g, 'a: 'g>(
    g: &'g Graph<'_, 'a>,
    reach: &'g Reach,
    nodes: Vec<Node>,
) -> impl Iterator<Item = LiveBitmap<'a>> + 'g {
    nodes.into_iter().filter_map(move |node| {
        if !reach.on_path(node) {
            return None;
        }
        let heap = g.ix.heap_of(g.ix.offset(node)).0;
        if heap == HEAP_ZYGOTE || heap == HEAP_IMAGE {
            return None;
        }
        let fields = g.fields(node)?;
        let get = |name: &str| fields.iter().find(|(n, _)| n == name).map(|(_, v)| *v);
        let int = |name: &str| get(name).and_then(|v| v.as_i64());
        let buffer = get("mBuffer")
            .and_then(|v| v.as_object())
            .filter(|&id| id != 0)
            .and_then(|id| g.ix.node(id))
            .and_then(|n| g.primitive(n))
            .map(|(_, bytes)| bytes);
        Some(LiveBitmap {
            node,
            width: int("mWidth").unwrap_or(0),
            height: int("mHeight").unwrap_or(0),
            recycled: int("mRecycled").unwrap_or(0) != 0,
            buffer,
            native_ptr: int("mNativePtr"),
        })
    })
}
