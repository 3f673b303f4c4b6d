//! `--private` (issue 52): a private package analyzes as the ordinary one does but for the
//! values an analysis shows, holds no String value of its dump but the kept ones (the
//! grep), says it is private, and `verify --against` holds it to exactly that.

mod common;

use std::collections::{HashMap, HashSet};
use std::io::Read;
use std::path::{Path, PathBuf};

use common::{fixture, run, s, stderr};
use hprof_shrink_core::hprof::{
    BasicType, ClassIndex, FormatError, Hprof, Record, Sub, SubRecord, Unwatched, Value, Visitor,
};
use hprof_shrink_core::package::{reader::value, PackageReader};
use hprof_shrink_core::private::kept::{Holds, KEPT};
use serde_json::Value as Json;

/// The dumps of the fixtures and of the shared corpus (when it is there), gzipped ones
/// unpacked into `dir`.
fn dumps(dir: &Path) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = std::fs::read_dir(fixture(""))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/corpus");
    match std::fs::read_dir(&corpus) {
        Ok(d) => found.extend(d.map(|e| e.unwrap().path())),
        Err(_) => println!("skipping the corpus: {} is not there", corpus.display()),
    }
    found.sort();
    let mut out = Vec::new();
    for p in found {
        let name = p.file_name().unwrap().to_string_lossy().into_owned();
        if let Some(stem) = name.strip_suffix(".gz").filter(|n| n.ends_with(".hprof")) {
            let plain = dir.join(stem);
            let mut gz = flate2::read::GzDecoder::new(std::fs::File::open(&p).unwrap());
            std::io::copy(&mut gz, &mut std::fs::File::create(&plain).unwrap()).unwrap();
            out.push(plain);
        } else if name.ends_with(".hprof") {
            out.push(p);
        }
    }
    out
}

/// The scenarios' dumps (Android-shaped: the inspectors' labels), when this machine can
/// make them.
fn scenario_dumps() -> Vec<PathBuf> {
    use hprof_fixtures::scenarios::{Generator, SPECS};
    let gen = Generator::shared(Path::new(env!("CARGO_TARGET_TMPDIR")).join("scenarios"));
    SPECS
        .iter()
        .filter_map(|spec| gen.get_or_skip(spec.name))
        .flat_map(|sc| sc.dumps)
        .collect()
}

/// Shrinks `dump` into `zip`, private or not.
fn shrink(dump: &Path, zip: &Path, private: bool) {
    let mut args = vec![s(dump), s(zip), "-q", "-f"];
    if private {
        args.push("--private");
    }
    let o = run(&args);
    assert!(o.status.success(), "{}: {}", dump.display(), stderr(&o));
}

/// `analyze --format json --all-leaks` of `zip` (every finder: the most values read).
fn analysis(zip: &Path) -> Json {
    let o = run(&["analyze", s(zip), "--format", "json", "--all-leaks"]);
    assert!(o.status.success(), "{}: {}", zip.display(), stderr(&o));
    serde_json::from_slice(&o.stdout).unwrap()
}

/// Whether the values at `path` (differing) are values an analysis shows of the dump's
/// Strings and pixels, which a private package replaces.
fn shown(path: &str, ordinary: &Json, private: &Json) -> bool {
    let map_key = |v: &Json| v.as_str().is_some_and(|t| t.starts_with("[\""));
    (path.contains(".triage.duplicateStrings[")
        && (path.ends_with(".value") || path.ends_with(".length")))
        || (path.starts_with(".duplicateBitmaps[")
            && (path.ends_with(".hash") || path.ends_with(".image")))
        || (path.ends_with(".reference.name") && map_key(ordinary) && map_key(private))
}

/// Every difference between the two analyses that is not a shown value.
fn differences(a: &Json, b: &Json, path: &str, out: &mut Vec<String>) {
    match (a, b) {
        (Json::Object(x), Json::Object(y)) => {
            let keys: HashSet<&String> = x.keys().chain(y.keys()).collect();
            for k in keys {
                let (va, vb) = (
                    x.get(k).unwrap_or(&Json::Null),
                    y.get(k).unwrap_or(&Json::Null),
                );
                differences(va, vb, &format!("{path}.{k}"), out);
            }
        }
        (Json::Array(x), Json::Array(y)) if x.len() == y.len() => {
            for (i, (va, vb)) in x.iter().zip(y).enumerate() {
                differences(va, vb, &format!("{path}[{i}]"), out);
            }
        }
        _ if a != b && !shown(path, a, b) => out.push(format!("{path}: {a} vs {b}")),
        _ => {}
    }
}

/// The analysis of the private package of `dump` against the ordinary one's: equal but for
/// the input's name and marks, the note that says it is private, and shown values.
fn check_unchanged(dump: &Path, dir: &Path) -> usize {
    let name = dump.file_name().unwrap().to_string_lossy().into_owned();
    let (ordinary, private) = (
        dir.join(format!("{name}.zip")),
        dir.join(format!("{name}.private.zip")),
    );
    shrink(dump, &ordinary, false);
    shrink(dump, &private, true);
    let (mut a, mut b) = (analysis(&ordinary), analysis(&private));
    assert_eq!(b["input"]["private"], true, "{name}");
    assert_eq!(a["input"].get("private"), None, "{name}");
    let private_note = |v: &mut Json| {
        let notes = v["notes"].as_array_mut().unwrap();
        let before = notes.len();
        notes.retain(|n| !n.as_str().unwrap().starts_with("the package is private"));
        before - notes.len()
    };
    assert_eq!(private_note(&mut b), 1, "{name}");
    assert_eq!(private_note(&mut a), 0, "{name}");
    a["input"] = Json::Null;
    b["input"] = Json::Null;
    let mut out = Vec::new();
    differences(&a, &b, "", &mut out);
    assert!(
        out.is_empty(),
        "{name}: the private package's analysis differs:\n{}",
        out.join("\n")
    );
    // What it shows of a replaced String reads as redacted.
    let mut shown = Vec::new();
    texts(&b, &mut shown);
    let redacted = "[\"‹redacted›\"]";
    for (key, text) in &shown {
        if key == "name" && text.starts_with("[\"") {
            assert_eq!(text, redacted, "{name}: a map key shown");
        }
    }
    let duplicates = b["triage"]["duplicateStrings"].as_array();
    for d in duplicates.into_iter().flatten() {
        assert_eq!(d["value"], "‹redacted›", "{name}");
    }
    shown.iter().filter(|(_, t)| t == redacted).count() + duplicates.map_or(0, Vec::len)
}

/// Every (key, string) of a JSON value.
fn texts(v: &Json, out: &mut Vec<(String, String)>) {
    match v {
        Json::Object(o) => {
            for (k, x) in o {
                if let Json::String(t) = x {
                    out.push((k.clone(), t.clone()));
                }
                texts(x, out);
            }
        }
        Json::Array(l) => l.iter().for_each(|x| texts(x, out)),
        _ => {}
    }
}

#[test]
fn a_private_package_analyzes_as_the_ordinary_one() {
    let dir = tempfile::tempdir().unwrap();
    let (mut checked, mut redacted) = (0, 0);
    for dump in dumps(dir.path()) {
        redacted += check_unchanged(&dump, dir.path());
        checked += 1;
    }
    assert!(checked >= 8, "only {checked} dumps");
    assert!(redacted > 50, "only {redacted} values read as redacted");
}

#[test]
fn the_scenarios_analyze_alike_private() {
    let dir = tempfile::tempdir().unwrap();
    let dumps = scenario_dumps();
    if dumps.is_empty() {
        println!("skipping: no scenario could be made here");
        return;
    }
    for dump in dumps {
        check_unchanged(&dump, dir.path());
    }
}

/// A dump read whole by the core's format layer: what the grep needs to know which
/// Strings are kept, found its own way (the fields [`KEPT`] names, by name).
#[derive(Default)]
struct Heap {
    names: HashMap<u64, Vec<u8>>,
    id_size: usize,
    classes: Option<ClassIndex>,
    /// (id, class, field data) of every instance.
    instances: Vec<(u64, u64, Vec<u8>)>,
    arrays: HashMap<u64, Vec<u8>>,
    object_arrays: HashMap<u64, Vec<u64>>,
}

impl Visitor for Heap {
    type Error = FormatError;

    fn record(&mut self, r: &Record<'_>) -> Result<(), FormatError> {
        if let Some(st) = r.as_string()? {
            self.names.insert(st.id, st.bytes.to_vec());
        } else if let Some(lc) = r.as_load_class()? {
            self.classes
                .as_mut()
                .unwrap()
                .add_name(lc.class_id, lc.name_id);
        }
        Ok(())
    }

    fn sub_record(&mut self, sub: &SubRecord<'_>) -> Result<(), FormatError> {
        match &sub.kind {
            Sub::ClassDump(d) => self.classes.as_mut().unwrap().add_class_dump(d, sub.offset),
            Sub::Instance(i) => self.instances.push((i.id, i.class_id, i.data.to_vec())),
            Sub::PrimitiveArray(a) => {
                self.arrays.insert(a.id, a.data.to_vec());
            }
            Sub::ObjectArray(a) => {
                self.object_arrays.insert(a.id, a.element_ids().collect());
            }
            _ => {}
        }
        Ok(())
    }
}

impl Heap {
    fn read(data: &[u8]) -> Heap {
        let hprof = Hprof::new(data).unwrap();
        let mut heap = Heap {
            classes: Some(ClassIndex::new(hprof.id_size())),
            id_size: hprof.id_size() as usize,
            ..Heap::default()
        };
        hprof.accept(&mut heap, &mut Unwatched).unwrap();
        heap
    }

    fn text(&self, id: u64) -> String {
        String::from_utf8_lossy(self.names.get(&id).map_or(&[][..], |n| n)).into_owned()
    }

    fn class_name(&self, class_id: u64) -> String {
        let classes = self.classes.as_ref().unwrap();
        classes
            .name_id(class_id)
            .map(|n| self.text(n).replace('/', "."))
            .unwrap_or_default()
    }

    /// Every String's value array, and the values of the kept Strings.
    fn strings(&self, data: &[u8]) -> (Vec<u64>, HashSet<u64>) {
        let classes = self.classes.as_ref().unwrap();
        let kept = |class: &str| {
            let class = class.to_string();
            KEPT.iter()
                .filter(move |k| k.class == class)
                .map(|k| k.holds)
        };
        let mut kept_strings = HashSet::new();
        for c in classes.classes() {
            let class = self.class_name(c.class_id);
            for f in classes.static_fields(data, c) {
                let Value::Object(id) = f.value else { continue };
                let field = self.text(f.name_id);
                if kept(&class).any(|h| match h {
                    Holds::Statics => true,
                    Holds::Static(n) => n == field,
                    _ => false,
                }) {
                    kept_strings.insert(id);
                }
            }
        }
        let mut value_of = HashMap::new();
        let mut layouts = HashMap::new();
        for (id, class_id, fields) in &self.instances {
            let layout = layouts
                .entry(*class_id)
                .or_insert_with(|| classes.layout(data, *class_id).ok());
            let Some(layout) = layout else { continue };
            let is_string = self.class_name(*class_id) == "java.lang.String";
            for f in layout.fields.iter().filter(|f| f.ty == BasicType::Object) {
                let at = f.offset as usize;
                let Some(bytes) = fields.get(at..at + self.id_size) else {
                    continue;
                };
                let field_id = bytes.iter().fold(0u64, |v, b| v << 8 | *b as u64);
                let field = self.text(f.name_id);
                if is_string && field == "value" {
                    value_of.insert(*id, field_id);
                }
                for h in kept(&self.class_name(f.declared_by)) {
                    match h {
                        Holds::Field(n) if n == field => {
                            kept_strings.insert(field_id);
                        }
                        Holds::Elements(n) if n == field => {
                            let elements = self.object_arrays.get(&field_id);
                            kept_strings.extend(elements.into_iter().flatten());
                        }
                        _ => {}
                    }
                }
            }
        }
        let kept_values = kept_strings.iter().filter_map(|s| value_of.get(s)).copied();
        (value_of.values().copied().collect(), kept_values.collect())
    }
}

/// The hprof entry of a package, inflated.
fn inflated(zip: &Path) -> Vec<u8> {
    let pkg = PackageReader::open(zip).unwrap();
    let manifest = pkg.manifest().unwrap();
    let entry = value(&manifest, "hprofEntry").unwrap().to_string();
    let mut out = Vec::new();
    pkg.stream(&entry).unwrap().read_to_end(&mut out).unwrap();
    out
}

/// The String values of `dump` (8 bytes or more, as the dump holds them) that are not
/// kept, nor equal to or part of a kept one, which `zip`'s primitive arrays hold.
fn found_in(dump: &[u8], zip: &Path) -> (usize, Vec<String>) {
    let heap = Heap::read(dump);
    let (values, kept) = heap.strings(dump);
    let kept_bytes: Vec<&[u8]> = kept
        .iter()
        .filter_map(|v| heap.arrays.get(v))
        .map(|b| &b[..])
        .collect();
    let kept_text = kept_bytes.join(&0xFFu8);
    let out = Heap::read(&inflated(zip));
    // Where a String's bytes can be in the package: its primitive arrays (class and field
    // names, in STRING records, are code).
    let hay: Vec<u8> = out
        .arrays
        .values()
        .flat_map(|a| a.iter().copied().chain([0xFF]))
        .collect();
    let finder = |needle: &[u8]| memchr::memmem::find(&hay, needle).is_some();
    let mut checked = 0;
    let mut seen = HashSet::new();
    let mut leaked = Vec::new();
    for v in values {
        let Some(bytes) = heap.arrays.get(&v) else {
            continue;
        };
        if bytes.len() < 8 || kept.contains(&v) || !seen.insert(bytes.clone()) {
            continue;
        }
        if memchr::memmem::find(&kept_text, bytes).is_some() {
            continue;
        }
        checked += 1;
        if finder(bytes) {
            leaked.push(String::from_utf8_lossy(bytes).into_owned());
        }
    }
    (checked, leaked)
}

#[test]
fn no_string_value_but_the_kept_ones_is_in_a_private_package() {
    let dir = tempfile::tempdir().unwrap();
    let mut checked = 0;
    for dump in dumps(dir.path()) {
        let name = dump.file_name().unwrap().to_string_lossy().into_owned();
        let (ordinary, private) = (dir.path().join("o.zip"), dir.path().join("p.zip"));
        shrink(&dump, &ordinary, false);
        shrink(&dump, &private, true);
        let data = std::fs::read(&dump).unwrap();
        let (n, leaked) = found_in(&data, &private);
        assert!(
            leaked.is_empty(),
            "{name}: {} values in the private package: {:?}",
            leaked.len(),
            &leaked[..leaked.len().min(5)]
        );
        // The grep finds them in the ordinary package: it would see a leak.
        let (m, there) = found_in(&data, &ordinary);
        assert_eq!(m, n);
        assert_eq!(
            there.len(),
            n,
            "{name}: the ordinary package keeps every value"
        );
        checked += n;
    }
    assert!(checked > 10_000, "only {checked} values checked");
}

/// `zip` rewritten into `out` with its hprof entry edited by `edit` (entries, their order
/// and the zip comment as they were).
fn tampered(zip: &Path, out: &Path, edit: impl Fn(&mut Vec<u8>)) {
    use std::io::Write;
    let mut ar = zip::ZipArchive::new(std::fs::File::open(zip).unwrap()).unwrap();
    let mut w = zip::ZipWriter::new(std::fs::File::create(out).unwrap());
    w.set_raw_comment(ar.comment().to_vec().into_boxed_slice())
        .unwrap();
    for i in 0..ar.len() {
        let mut e = ar.by_index(i).unwrap();
        let name = e.name().unwrap().to_string();
        let mut bytes = Vec::new();
        e.read_to_end(&mut bytes).unwrap();
        if name.ends_with(".hprof") {
            edit(&mut bytes);
        }
        w.start_file(name, zip::write::SimpleFileOptions::default())
            .unwrap();
        w.write_all(&bytes).unwrap();
    }
    w.finish().unwrap();
}

#[test]
fn verify_holds_a_private_package_to_its_dump() {
    let dir = tempfile::tempdir().unwrap();
    let dump = fixture("art-leaks.hprof");
    let zip = dir.path().join("p.zip");
    shrink(&dump, &zip, true);
    let o = run(&["verify", s(&zip), "--against", s(&dump)]);
    assert!(o.status.success(), "{}", stderr(&o));
    let said = common::stdout(&o);
    assert!(
        said.contains("String values and 4 Bitmap buffers or images replaced"),
        "{said}"
    );

    // Build.MANUFACTURER is kept: a package where it changed is refused, at its array.
    let changed = dir.path().join("changed.zip");
    tampered(&zip, &changed, |hprof| {
        let at = memchr::memmem::find(hprof, b"samsung").expect("the kept value");
        hprof[at] = b'S';
    });
    let o = run(&["verify", s(&changed), "--against", s(&dump)]);
    common::failed_with(&o, 1, &["keeps as it is, but its bytes changed"]);

    // A replaced value put back as it was is refused too: it would be the user's.
    let data = std::fs::read(&dump).unwrap();
    let heap = Heap::read(&data);
    let (values, kept) = heap.strings(&data);
    let secret = values
        .iter()
        .filter(|v| !kept.contains(v))
        .filter_map(|v| heap.arrays.get(v))
        .find(|b| b.len() >= 16)
        .expect("a String value the package replaces")
        .clone();
    let put_back = dir.path().join("put-back.zip");
    let out = Heap::read(&inflated(&zip));
    let replaced = out
        .arrays
        .iter()
        .find(|(id, b)| heap.arrays.get(id) == Some(&secret) && **b != secret)
        .map(|(_, b)| b.clone())
        .expect("its replacement");
    tampered(&zip, &put_back, |hprof| {
        let at = memchr::memmem::find(hprof, &replaced).unwrap();
        hprof[at..at + secret.len()].copy_from_slice(&secret);
    });
    let o = run(&["verify", s(&put_back), "--against", s(&dump)]);
    common::failed_with(&o, 1, &["is left as it was: a private package replaces"]);
}

#[test]
fn every_kept_value_is_listed_with_its_reason_in_the_usage_docs() {
    let docs = std::fs::read_to_string(fixture("../docs/usage.md")).unwrap();
    let rows: Vec<&str> = docs.lines().filter(|l| l.starts_with("| `")).collect();
    for k in KEPT {
        let class = format!("`{}`", k.class);
        let field = match k.holds {
            Holds::Field(f) | Holds::Static(f) => format!("`{f}`"),
            Holds::Elements(f) => format!("the elements of `{f}`"),
            Holds::Statics => "every String static field".into(),
        };
        assert!(
            rows.iter()
                .any(|r| r.contains(&class) && r.contains(&field)),
            "docs/usage.md lists no row for {class} {field}"
        );
    }
}
