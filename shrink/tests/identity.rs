//! Reading a dump and writing it back through the writer gives the same bytes.

mod common;

use hprof_shrink_core::control::{Control, Stage};
use hprof_shrink_core::hprof::{Hprof, HprofWriter, MappedFile};

fn copy(data: &[u8]) -> Vec<u8> {
    let hprof = Hprof::new(data).expect("parse header");
    let mut writer = HprofWriter::new(Vec::new(), data, hprof.id_size());
    let mut ticker = Control::default().ticker(Stage::Read, hprof.len());
    hprof.accept(&mut writer, &mut ticker).expect("walk");
    writer.into_inner().expect("flush")
}

fn assert_identity(name: &str, data: &[u8]) {
    let out = copy(data);
    assert_eq!(out.len(), data.len(), "{name}: length differs");
    let first = out.iter().zip(data).position(|(a, b)| a != b);
    assert!(
        first.is_none(),
        "{name}: first difference at byte {first:?}"
    );
}

#[test]
fn builder_dumps_copy_byte_for_byte() {
    for (name, dump, _) in hprof_fixtures::android::all() {
        assert_identity(name, &dump);
    }
}

#[test]
fn committed_fixtures_copy_byte_for_byte() {
    for path in common::fixtures() {
        let map = MappedFile::open(&path).unwrap();
        assert_identity(&path.display().to_string(), map.bytes());
    }
}

#[test]
fn shared_corpus_copies_byte_for_byte() {
    for path in common::corpus() {
        let map = MappedFile::open(&path).unwrap();
        assert_identity(&path.display().to_string(), map.bytes());
    }
}
