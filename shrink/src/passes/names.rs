//! The class and field names the passes look for. ART writes class names dotted
//! (`java.lang.String`), HotSpot in internal form (`java/lang/String`): both match.

use rustc_hash::FxHashMap;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Name {
    StringClass,
    BitmapClass,
    DumpDataClass,
    BuildClass,
    BuildVersionClass,
    DestroyedActivityInfoClass,
    Value,
    Coder,
    MBuffer,
    MRecycled,
    DumpData,
    Natives,
    Buffers,
    SdkInt,
    Manufacturer,
    MKey,
}

const CLASSES: &[(&str, Name)] = &[
    ("java.lang.String", Name::StringClass),
    ("android.graphics.Bitmap", Name::BitmapClass),
    ("android.graphics.Bitmap$DumpData", Name::DumpDataClass),
    ("android.os.Build", Name::BuildClass),
    ("android.os.Build$VERSION", Name::BuildVersionClass),
    (
        "com.tencent.matrix.resource.analyzer.model.DestroyedActivityInfo",
        Name::DestroyedActivityInfoClass,
    ),
];

const FIELDS: &[(&str, Name)] = &[
    ("value", Name::Value),
    ("coder", Name::Coder),
    ("mBuffer", Name::MBuffer),
    ("mRecycled", Name::MRecycled),
    ("dumpData", Name::DumpData),
    ("natives", Name::Natives),
    ("buffers", Name::Buffers),
    ("SDK_INT", Name::SdkInt),
    ("MANUFACTURER", Name::Manufacturer),
    ("mKey", Name::MKey),
];

/// Looks up STRING record texts; built once, consulted for every STRING record.
pub struct NameTable {
    by_text: FxHashMap<Vec<u8>, Name>,
}

impl Default for NameTable {
    fn default() -> Self {
        let mut by_text = FxHashMap::default();
        for (text, name) in CLASSES {
            by_text.insert(text.as_bytes().to_vec(), *name);
            by_text.insert(text.replace('.', "/").into_bytes(), *name);
        }
        for (text, name) in FIELDS {
            by_text.insert(text.as_bytes().to_vec(), *name);
        }
        NameTable { by_text }
    }
}

impl NameTable {
    pub fn lookup(&self, bytes: &[u8]) -> Option<Name> {
        // Most STRING records are longer than any name here: skip hashing them.
        if bytes.len() > 64 {
            return None;
        }
        self.by_text.get(bytes).copied()
    }
}

/// String ids found for each name (a dump may hold the same text under several ids).
#[derive(Debug, Default, Clone)]
pub struct NameIds {
    ids: FxHashMap<u64, Name>,
}

impl NameIds {
    pub fn insert(&mut self, string_id: u64, name: Name) {
        self.ids.insert(string_id, name);
    }

    pub fn merge(&mut self, later: NameIds) {
        for (id, name) in later.ids {
            self.ids.entry(id).or_insert(name);
        }
    }

    pub fn is(&self, string_id: u64, name: Name) -> bool {
        self.ids.get(&string_id) == Some(&name)
    }

    pub fn get(&self, string_id: u64) -> Option<Name> {
        self.ids.get(&string_id).copied()
    }
}
