//! The parsed views are complete: every record and sub-record of every fixture and corpus
//! dump, encoded again from its view alone, gives back its exact bytes.

mod common;

use hprof_shrink_core::hprof::{tags, Event, Events, Hprof, MappedFile, Sub, SubRecord, Value};

struct Enc {
    id_size: u8,
    out: Vec<u8>,
}

impl Enc {
    fn id(&mut self, v: u64) {
        if self.id_size == 4 {
            self.out.extend_from_slice(&(v as u32).to_be_bytes());
        } else {
            self.out.extend_from_slice(&v.to_be_bytes());
        }
    }
    fn u4(&mut self, v: u32) {
        self.out.extend_from_slice(&v.to_be_bytes());
    }
    fn u2(&mut self, v: u16) {
        self.out.extend_from_slice(&v.to_be_bytes());
    }
    fn value(&mut self, v: Value) {
        match v {
            Value::Object(id) => self.id(id),
            Value::Boolean(b) => self.out.push(b as u8),
            Value::Byte(b) => self.out.push(b as u8),
            Value::Char(c) => self.u2(c),
            Value::Short(s) => self.u2(s as u16),
            Value::Int(i) => self.u4(i as u32),
            Value::Float(f) => self.u4(f.to_bits()),
            Value::Long(l) => self.out.extend_from_slice(&l.to_be_bytes()),
            Value::Double(d) => self.out.extend_from_slice(&d.to_bits().to_be_bytes()),
        }
    }
}

/// Encodes a sub-record from its view; roots carry their trailing fields in `raw` only,
/// so those are checked by tag, object id and length.
fn encode(sub: &SubRecord<'_>, id_size: u8) -> Vec<u8> {
    let mut e = Enc {
        id_size,
        out: vec![sub.tag()],
    };
    match &sub.kind {
        Sub::Root(r) => {
            e.id(r.object_id);
            let (u4s, ids) = tags::root_layout(r.tag).expect("a root tag");
            e.out.extend_from_slice(
                &sub.raw[e.out.len()..][..u4s as usize * 4 + ids as usize * id_size as usize],
            );
        }
        Sub::ClassDump(c) => {
            e.id(c.class_id);
            e.u4(c.stack_serial);
            for id in [
                c.super_id,
                c.loader_id,
                c.signers_id,
                c.protection_domain_id,
                c.reserved1,
                c.reserved2,
            ] {
                e.id(id);
            }
            e.u4(c.instance_size);
            e.u2(c.constant_pool_count);
            for cp in c.constant_pool() {
                e.u2(cp.index);
                e.out.push(cp.ty.code());
                e.value(cp.value);
            }
            e.u2(c.static_count);
            for s in c.static_fields() {
                e.id(s.name_id);
                e.out.push(s.ty.code());
                e.value(s.value);
            }
            e.u2(c.field_count);
            for f in c.instance_fields() {
                e.id(f.name_id);
                e.out.push(f.ty.code());
            }
        }
        Sub::Instance(i) => {
            e.id(i.id);
            e.u4(i.stack_serial);
            e.id(i.class_id);
            e.u4(i.data.len() as u32);
            e.out.extend_from_slice(i.data);
        }
        Sub::ObjectArray(a) => {
            e.id(a.id);
            e.u4(a.stack_serial);
            e.u4(a.count);
            e.id(a.class_id);
            for el in a.element_ids() {
                e.id(el);
            }
        }
        Sub::PrimitiveArray(a) => {
            e.id(a.id);
            e.u4(a.stack_serial);
            e.u4(a.count);
            e.out.push(a.element_type.code());
            e.out.extend_from_slice(a.data);
        }
        Sub::PrimitiveArrayNoData(a) => {
            e.id(a.id);
            e.u4(a.stack_serial);
            e.u4(a.count);
            e.out.push(a.element_type.code());
        }
        Sub::HeapDumpInfo(h) => {
            e.u4(h.heap_id);
            e.id(h.name_id);
        }
    }
    e.out
}

fn check(name: &str, data: &[u8]) {
    let hprof = Hprof::new(data).unwrap();
    let mut subs = 0;
    for ev in Events::new(&hprof) {
        match ev.unwrap() {
            Event::Sub(sub) => {
                subs += 1;
                let again = encode(&sub, hprof.id_size());
                assert!(
                    again == sub.raw,
                    "{name}: sub-record at offset {} re-encodes differently",
                    sub.offset
                );
            }
            Event::Record(r) => {
                if let Some(s) = r.as_string().unwrap() {
                    assert_eq!(&r.body[hprof.id_size() as usize..], s.bytes);
                }
                if let Some(lc) = r.as_load_class().unwrap() {
                    let mut e = Enc {
                        id_size: hprof.id_size(),
                        out: Vec::new(),
                    };
                    e.u4(lc.serial);
                    e.id(lc.class_id);
                    e.u4(lc.stack_serial);
                    e.id(lc.name_id);
                    assert!(e.out == r.body, "{name}: LOAD_CLASS at {}", r.offset);
                }
            }
            _ => {}
        }
    }
    assert!(subs > 0, "{name}: no sub-records");
}

#[test]
fn every_view_re_encodes_to_its_bytes() {
    for (name, dump, _) in hprof_fixtures::android::all() {
        check(name, &dump);
    }
    let mut paths = common::fixtures();
    paths.extend(common::corpus());
    for p in paths {
        let map = MappedFile::open(&p).unwrap();
        check(&p.display().to_string(), map.bytes());
    }
}
