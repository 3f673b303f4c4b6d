//! What can be checked of the fixtures without the analyzer: the main ART dumps are what
//! ART's hprof.cc writes (so that ahat and other stock readers open them), the robustness
//! fixture keeps the shapes ART does not write, and each NAME.leaks.json ground truth is
//! true of its dump: the leaking objects are there, of the named class, at the end of the
//! named path; the watchers' keys, the KeyedWeakReferences and the bitmap groups are there.
//! Where ahat's answers are recorded (NAME.ahat.json), its paths agree with the truth.

mod common;
mod heap_model;

use common::fixture;
use heap_model::Model;
use hprof_shrink_core::hprof::{tags, BasicType, Event, Events, Hprof, Sub, Value};
use md5::{Digest, Md5};
use serde_json::Value as Json;
use std::collections::HashMap;
use std::io::Read;

/// The main ART fixtures: each must be what ART writes.
const MAIN_ART: [&str; 5] = [
    "art-api25.hprof",
    "art-api26.hprof",
    "art-api35-dumpdata.hprof",
    "synthetic-id8.hprof",
    "art-leaks.hprof",
];

/// The root tags hprof.cc writes.
const ART_ROOTS: [u8; 13] = [
    0xFF, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x89, 0x8B, 0x8D, 0x8E,
];

fn read_dump(name: &str) -> Vec<u8> {
    let raw = std::fs::read(fixture(name)).unwrap_or_else(|e| panic!("{name}: {e}"));
    if name.ends_with(".gz") {
        let mut out = Vec::new();
        flate2::read::GzDecoder::new(&raw[..])
            .read_to_end(&mut out)
            .unwrap();
        out
    } else {
        raw
    }
}

#[test]
fn main_art_fixtures_are_what_hprof_cc_writes() {
    for name in MAIN_ART {
        let m = Model::load(&read_dump(name));
        // ART dumps the class of every primitive array type it uses (ahat needs them).
        for ty in &m.primitive_types {
            let class = format!("{}[]", ty.name());
            assert!(
                !m.class_named(&class).is_empty(),
                "{name}: {class} arrays but no {class} class dump"
            );
        }
        for (id, (class, _)) in &m.object_arrays {
            assert!(
                m.classes[class].name.ends_with("[]"),
                "{name}: object array {id:#x} of a class that is not dumped or not an array class"
            );
        }
        for (id, (class, _)) in &m.instances {
            assert!(
                m.classes.contains_key(class),
                "{name}: instance {id:#x} of an undumped class"
            );
        }
        assert!(
            !m.sub_tags.contains(&tags::PRIMITIVE_ARRAY_NODATA),
            "{name}: PRIMITIVE_ARRAY_NODATA, which ART does not write"
        );
        for (tag, id, _) in &m.roots {
            assert!(
                ART_ROOTS.contains(tag),
                "{name}: root tag {tag:#x} on {id:#x}"
            );
        }
        // ART's instance sizes: 0 for Class and the array classes.
        let data = read_dump(name);
        let hprof = Hprof::new(&data).unwrap();
        for ev in Events::new(&hprof) {
            if let Event::Sub(sub) = ev.unwrap() {
                if let Sub::ClassDump(c) = &sub.kind {
                    let cname = &m.classes[&c.class_id].name;
                    if cname.ends_with("[]") || cname == "java.lang.Class" {
                        assert_eq!(c.instance_size, 0, "{name}: {cname} instance size");
                    }
                }
            }
        }
    }
}

#[test]
fn the_odd_fixture_keeps_the_shapes_art_does_not_write() {
    let m = Model::load(&read_dump("art-odd.hprof"));
    assert!(m.sub_tags.contains(&tags::PRIMITIVE_ARRAY_NODATA));
    for tag in [0x8Au8, 0x8C, 0x90] {
        assert!(m.roots.iter().any(|r| r.0 == tag), "root {tag:#x}");
    }
    let classless: Vec<_> = m
        .primitive_types
        .iter()
        .filter(|t| m.class_named(&format!("{}[]", t.name())).is_empty())
        .collect();
    assert!(!classless.is_empty(), "every array type has its class");
}

/// Follows the truth's path from its root and returns the object it reaches.
fn follow(m: &Model, name: &str, leak: &Json) -> u64 {
    let scenario = leak["scenario"].as_str().unwrap();
    let path = leak["path"].as_array().unwrap();
    let root = leak["root"].as_str().unwrap();
    let first = &path[0];
    let class = first["class"].as_str().unwrap();
    let reference = first["reference"].as_str().unwrap();
    let mut at = match first["kind"].as_str().unwrap() {
        "static" => {
            assert_eq!(root, "sticky class", "{name} {scenario}");
            let ids = m.class_named(class);
            assert_eq!(ids.len(), 1, "{name} {scenario}: class {class}");
            assert!(
                m.roots.iter().any(|r| r.0 == 0x05 && r.1 == ids[0]),
                "{name} {scenario}: {class} is not a sticky-class root"
            );
            let c = &m.classes[&ids[0]];
            let v = c.statics.iter().find(|(n, _)| n == reference);
            v.unwrap_or_else(|| panic!("{name} {scenario}: no static {class}.{reference}"))
                .1
                .as_object()
                .unwrap()
        }
        "local" => {
            // A frame root on the object, in a thread whose object has the named class.
            assert_eq!(root, "java frame", "{name} {scenario}");
            assert_eq!(path.len(), 1);
            let id = leak["objectId"].as_u64().unwrap();
            let serials: Vec<u32> = m
                .roots
                .iter()
                .filter(|r| r.0 == 0x03 && r.1 == id)
                .filter_map(|r| r.2)
                .collect();
            let thread = m
                .roots
                .iter()
                .find(|r| r.0 == 0x08 && r.2.is_some_and(|s| serials.contains(&s)))
                .unwrap_or_else(|| panic!("{name} {scenario}: no frame root in a thread"));
            assert_eq!(m.class_name(thread.1), Some(class), "{name} {scenario}");
            return id;
        }
        other => panic!("{name} {scenario}: a path starting with a {other}"),
    };
    for step in &path[1..] {
        let class = step["class"].as_str().unwrap();
        let reference = step["reference"].as_str().unwrap();
        assert_eq!(m.class_name(at), Some(class), "{name} {scenario}: {at:#x}");
        at = match step["kind"].as_str().unwrap() {
            "field" => m
                .object_field(at, reference)
                .unwrap_or_else(|| panic!("{name} {scenario}: no {class}.{reference}")),
            "array" => {
                let i: usize = reference
                    .trim_start_matches('[')
                    .trim_end_matches(']')
                    .parse()
                    .unwrap();
                m.object_arrays[&at].1[i]
            }
            other => panic!("{name} {scenario}: a {other} step inside a path"),
        };
    }
    at
}

fn truths() -> Vec<(String, String, Json)> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(fixture("")).unwrap() {
        let p = entry.unwrap().path();
        let file = p.file_name().unwrap().to_string_lossy().into_owned();
        let Some(stem) = file.strip_suffix(".leaks.json") else {
            continue;
        };
        let dump = [".hprof", ".hprof.gz"]
            .iter()
            .map(|ext| format!("{stem}{ext}"))
            .find(|d| fixture(d).exists())
            .unwrap_or_else(|| panic!("{file}: no dump beside it"));
        let json: Json = serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
        assert_eq!(json["schema"], 1, "{file}");
        out.push((stem.to_string(), dump, json));
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    assert!(out.len() >= 3, "the leak fixtures: {:?}", out.len());
    out
}

/// Matrix's records by key: key -> referent of mActivityRef.
fn destroyed_infos(m: &Model) -> HashMap<String, u64> {
    m.instances_of("com.tencent.matrix.resource.analyzer.model.DestroyedActivityInfo")
        .into_iter()
        .map(|d| {
            let key = m.string(m.object_field(d, "mKey").unwrap()).unwrap();
            let weak = m.object_field(d, "mActivityRef").unwrap();
            (key, m.object_field(weak, "referent").unwrap_or(0))
        })
        .collect()
}

#[test]
#[allow(clippy::too_many_lines)] // a scenario, step by step
fn leak_truth_holds_in_its_dump() {
    for (stem, dump, truth) in truths() {
        let m = Model::load(&read_dump(&dump));
        let infos = destroyed_infos(&m);
        for leak in truth["leaks"].as_array().unwrap() {
            let scenario = leak["scenario"].as_str().unwrap();
            let id = leak["objectId"].as_u64().unwrap();
            let (class, _) = m
                .instances
                .get(&id)
                .unwrap_or_else(|| panic!("{stem} {scenario}: object {id:#x} not in the dump"));
            assert_eq!(
                m.classes[class].name,
                leak["leakingClass"].as_str().unwrap(),
                "{stem} {scenario}"
            );
            assert!(m.is_subclass(*class, "android.app.Activity"));
            assert_eq!(
                m.field(id, "mDestroyed"),
                Some(Value::Boolean(true)),
                "{stem} {scenario}"
            );
            assert_eq!(follow(&m, &stem, leak), id, "{stem} {scenario}: the path");
            let key = leak["key"].as_str().unwrap();
            assert_eq!(
                infos.get(key),
                Some(&id),
                "{stem} {scenario}: watcher {key}"
            );
            if let Some(entry) = leak["libraryLeak"].as_str() {
                let (class, field) = entry.split_once('#').unwrap();
                let steps = leak["path"].as_array().unwrap();
                assert!(
                    steps
                        .iter()
                        .any(|s| s["class"] == class && s["reference"] == field),
                    "{stem} {scenario}: the path goes through {entry}"
                );
            }
        }
        for nl in truth["notLeaks"].as_array().unwrap() {
            let key = nl["key"].as_str().unwrap();
            let referent = infos.get(key).copied().unwrap_or(0);
            // Not a leak: collected (no referent) or held by nothing but weak references.
            if referent != 0 {
                let holders = m
                    .instances
                    .iter()
                    .filter(|(_, (c, _))| !m.is_subclass(*c, "java.lang.ref.Reference"))
                    .filter(|(h, _)| {
                        let class = m.instances[h].0;
                        let mut c = class;
                        let mut holds = false;
                        while let Some(k) = m.classes.get(&c) {
                            for (f, t) in &k.fields {
                                if *t == BasicType::Object
                                    && m.object_field(**h, f) == Some(referent)
                                {
                                    holds = true;
                                }
                            }
                            c = k.super_id;
                        }
                        holds
                    })
                    .count();
                let in_arrays = m
                    .object_arrays
                    .values()
                    .filter(|(_, e)| e.contains(&referent))
                    .count();
                assert_eq!(holders + in_arrays, 0, "{stem}: {key} is strongly held");
            }
        }
        let kwr = m.instances_of("leakcanary.KeyedWeakReference");
        let keyed: HashMap<String, i64> = kwr
            .iter()
            .map(|k| {
                let key = m.string(m.object_field(*k, "key").unwrap()).unwrap();
                let retained = m.field(*k, "retainedUptimeMillis").unwrap().as_i64();
                (key, retained.unwrap())
            })
            .collect();
        let refs = &truth["keyedWeakReferences"];
        for k in refs["retained"].as_array().unwrap() {
            assert_ne!(keyed.get(k.as_str().unwrap()), Some(&-1), "{stem}: {k}");
            assert!(keyed.contains_key(k.as_str().unwrap()), "{stem}: {k}");
        }
        for k in refs["notRetained"].as_array().unwrap() {
            assert_eq!(keyed.get(k.as_str().unwrap()), Some(&-1), "{stem}: {k}");
        }
        // Every group's buffer is in the dump at least `count` times, at the stated size.
        let mut by_md5: HashMap<String, (usize, usize)> = HashMap::new();
        for (ty, data) in m.primitive_arrays.values() {
            if *ty == BasicType::Byte {
                let md5: String = Md5::digest(data)
                    .iter()
                    .map(|b| format!("{b:02x}"))
                    .collect();
                let e = by_md5.entry(md5).or_insert((0, data.len()));
                e.0 += 1;
            }
        }
        let groups = truth["bitmapGroups"].as_array().unwrap();
        assert!(!groups.is_empty(), "{stem}: no duplicate bitmap group");
        for g in groups {
            let md5 = g["md5"].as_str().unwrap();
            let (n, len) = by_md5
                .get(md5)
                .unwrap_or_else(|| panic!("{stem}: no buffer {md5}"));
            assert!(*n as u64 >= g["count"].as_u64().unwrap(), "{stem}: {md5}");
            assert_eq!(*len as u64, g["bufferBytes"].as_u64().unwrap());
            assert!(*len >= 5000);
        }
    }
}

#[test]
fn ahat_paths_agree_with_the_truth() {
    for (stem, _, truth) in truths() {
        let path = fixture(&format!("{stem}.ahat.json"));
        let Ok(text) = std::fs::read_to_string(&path) else {
            panic!("{stem}: no {stem}.ahat.json (see fixtures/README.md to remake it)");
        };
        let ahat: Json = serde_json::from_str(&text).unwrap();
        let objects = ahat["objects"].as_array().unwrap();
        for leak in truth["leaks"].as_array().unwrap() {
            let scenario = leak["scenario"].as_str().unwrap();
            let id = leak["objectId"].as_u64().unwrap();
            let o = objects
                .iter()
                .find(|o| o["objectId"].as_u64() == Some(id))
                .unwrap_or_else(|| panic!("{stem} {scenario}: not in ahat's answers"));
            assert_eq!(o["reachability"], "strong", "{stem} {scenario}");
            assert!(o["retainedBytes"].as_u64().unwrap() > o["shallowBytes"].as_u64().unwrap());
            let ahat_path = o["path"].as_array().unwrap();
            let steps = leak["path"].as_array().unwrap();
            if leak["root"] == "java frame" {
                // ahat's path starts at the frame's object itself.
                assert_eq!(ahat_path.len(), 1, "{stem} {scenario}");
                assert!(o["rootTypes"].as_str().unwrap().contains("JAVA_FRAME"));
                continue;
            }
            assert!(o["rootTypes"].as_str().unwrap().contains("STICKY_CLASS"));
            assert_eq!(ahat_path.len(), steps.len() + 1, "{stem} {scenario}");
            for (a, s) in ahat_path.iter().zip(steps) {
                let class = s["class"].as_str().unwrap();
                let want = match s["kind"].as_str().unwrap() {
                    "static" => format!("class {class}"),
                    _ => class.to_string(),
                };
                assert_eq!(a["class"], want.as_str(), "{stem} {scenario}");
                // ahat writes ".field" for fields and "[i]" for elements.
                let reference = a["reference"].as_str().unwrap().trim_start_matches('.');
                assert_eq!(reference, s["reference"], "{stem} {scenario}");
            }
        }
        for nl in truth["notLeaks"].as_array().unwrap() {
            let w = ahat["watchers"]
                .as_array()
                .unwrap()
                .iter()
                .find(|w| w["key"] == nl["key"])
                .unwrap_or_else(|| panic!("{stem}: no watcher {}", nl["key"]));
            assert_ne!(w["referentReachability"], "strong", "{stem}");
        }
    }
}
