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

/// The longest text looked up; a test checks every name fits.
pub(crate) const LONGEST: usize = 64;

/// Looks up STRING record texts; built once, consulted for every STRING record.
pub struct NameTable {
    /// Each text: the name the passes look for, and the name of a value a private package
    /// keeps (see [`crate::private::KEPT`]); one lookup for both.
    by_text: FxHashMap<Vec<u8>, (Option<Name>, Option<&'static str>)>,
}

impl Default for NameTable {
    fn default() -> Self {
        let mut by_text: FxHashMap<Vec<u8>, (Option<Name>, Option<&'static str>)> =
            FxHashMap::default();
        for (text, name) in CLASSES {
            by_text.entry(text.as_bytes().to_vec()).or_default().0 = Some(*name);
            by_text
                .entry(text.replace('.', "/").into_bytes())
                .or_default()
                .0 = Some(*name);
        }
        for (text, name) in FIELDS {
            by_text.entry(text.as_bytes().to_vec()).or_default().0 = Some(*name);
        }
        for (text, name) in crate::private::kept::names() {
            by_text.entry(text.into_bytes()).or_default().1 = Some(name);
        }
        NameTable { by_text }
    }
}

impl NameTable {
    /// The name `bytes` spell, and the kept-value name (see [`crate::private::KEPT`]).
    pub fn lookup(&self, bytes: &[u8]) -> (Option<Name>, Option<&'static str>) {
        // Most STRING records are longer than any name here: skip hashing them.
        if bytes.len() > LONGEST {
            return (None, None);
        }
        self.by_text.get(bytes).copied().unwrap_or_default()
    }
}

/// String ids found for each name (a dump may hold the same text under several ids).
#[derive(Debug, Default, Clone)]
pub struct NameIds {
    ids: FxHashMap<u64, Name>,
    /// String ids of the names [`crate::private::KEPT`] mentions (dotted).
    kept: FxHashMap<u64, &'static str>,
}

impl NameIds {
    pub fn insert(&mut self, string_id: u64, name: Name) {
        self.ids.insert(string_id, name);
    }

    pub fn insert_kept(&mut self, string_id: u64, name: &'static str) {
        self.kept.insert(string_id, name);
    }

    pub fn merge(&mut self, later: NameIds) {
        for (id, name) in later.ids {
            self.ids.entry(id).or_insert(name);
        }
        for (id, name) in later.kept {
            self.kept.entry(id).or_insert(name);
        }
    }

    /// The kept-value name the STRING `string_id` holds, if it is one.
    pub fn kept_text(&self, string_id: u64) -> Option<&'static str> {
        self.kept.get(&string_id).copied()
    }

    pub fn is(&self, string_id: u64, name: Name) -> bool {
        self.ids.get(&string_id) == Some(&name)
    }

    pub fn get(&self, string_id: u64) -> Option<Name> {
        self.ids.get(&string_id).copied()
    }
}
