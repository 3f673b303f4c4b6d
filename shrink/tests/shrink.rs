//! The shrink end to end on every fixture: it verifies against its input in every mode, it
//! keeps what the fixtures' facts say it must, and it is deterministic.

mod common;

use std::path::Path;

use hprof_shrink_core::package::Source;
use hprof_shrink_core::verify::verify_path;
use hprof_shrink_core::{
    shrink_file, Control, DroppedMode, ManifestValues, Outputs, Report, ShrinkOptions, StripMode,
};

const STRIPS: [StripMode; 4] = [
    StripMode::Bitmaps,
    StripMode::Duplicates,
    StripMode::Strings,
    StripMode::None,
];
const DROPPED: [DroppedMode; 3] = [DroppedMode::Remove, DroppedMode::Empty, DroppedMode::Zero];

fn shrink(input: &Path, zip: &Path, strip: StripMode, dropped: DroppedMode) -> Report {
    let opts = ShrinkOptions::new().with_strip(strip).with_dropped(dropped);
    let outputs = Outputs {
        zip: Some(zip),
        hprof: None,
    };
    shrink_file(input, outputs, &opts, &Control::default())
        .unwrap_or_else(|e| panic!("{}: {e}", input.display()))
}

fn all_inputs() -> Vec<std::path::PathBuf> {
    let mut v = common::fixtures();
    v.extend(common::corpus());
    v
}

#[test]
fn every_input_in_every_mode_verifies_against_its_input() {
    let dir = tempfile::tempdir().unwrap();
    for input in all_inputs() {
        for strip in STRIPS {
            for dropped in DROPPED {
                let zip = dir.path().join("out.zip");
                shrink(&input, &zip, strip, dropped);
                let v = verify_path(&zip, Some(&input), None, &Control::default())
                    .unwrap_or_else(|e| panic!("{} {strip:?} {dropped:?}: {e}", input.display()));
                assert_eq!(v.strip, Some(strip), "mode read back from the zip");
                assert_eq!(v.dropped, Some(dropped));
            }
        }
    }
}

#[test]
fn reports_match_the_fixture_facts() {
    let dir = tempfile::tempdir().unwrap();
    for input in common::fixtures() {
        let Some(f) = common::facts(&input) else {
            continue;
        };
        let name = input.display().to_string();
        let r = shrink(
            &input,
            &dir.path().join("o.zip"),
            StripMode::Bitmaps,
            DroppedMode::Remove,
        );
        let num = |k: &str| f[k].as_u64().unwrap_or_else(|| panic!("{name}: fact {k}"));
        assert_eq!(r.bitmaps.instances, num("bitmaps"), "{name}: bitmaps");
        assert_eq!(
            r.bitmaps.recycled,
            num("recycledBitmaps"),
            "{name}: recycled"
        );
        let images = r.dump_data.as_ref();
        let (live, distinct) = match images {
            Some(d) => (d.images, d.distinct_contents),
            None => (r.bitmaps.with_buffer, r.bitmaps.distinct_contents),
        };
        assert_eq!(live, num("liveBuffers"), "{name}: live buffers");
        assert_eq!(
            distinct,
            num("distinctLiveBuffers"),
            "{name}: distinct contents"
        );
        if images.is_none() {
            // One copy of each content stays; the others are merged away.
            assert_eq!(r.bitmaps.kept, num("distinctLiveBuffers"), "{name}: kept");
            assert_eq!(
                r.bitmaps.merged,
                num("liveBuffers") - num("distinctLiveBuffers")
            );
            assert_eq!(r.bitmaps.repointed, r.bitmaps.merged, "{name}: repointed");
        }
        let m = &r.manifest;
        assert_eq!(m.sdk_version, f["sdkVersion"].to_string(), "{name}");
        assert_eq!(
            m.manufacturer,
            f["manufacturer"].as_str().unwrap(),
            "{name}"
        );
        assert_eq!(
            m.leaked_activity_key,
            f["leakedActivityKey"].as_str().unwrap(),
            "{name}"
        );
        assert_eq!(m.sources.sdk_version, Source::Dump);
        assert_eq!(m.sources.manufacturer, Source::Dump);
        assert_eq!(m.sources.leaked_activity_key, Source::Dump);
        assert!(r.warnings.is_empty(), "{name}: {:?}", r.warnings);
        if let Some(n) = f.get("strings").and_then(|v| v.as_u64()) {
            assert_eq!(r.strings.instances, n, "{name}: strings");
        }
    }
}

#[test]
fn duplicates_mode_keeps_exactly_one_copy_of_each_duplicated_buffer() {
    let dir = tempfile::tempdir().unwrap();
    for input in common::fixtures() {
        let Some(f) = common::facts(&input) else {
            continue;
        };
        let r = shrink(
            &input,
            &dir.path().join("o.zip"),
            StripMode::Duplicates,
            DroppedMode::Remove,
        );
        if r.dump_data.is_some() {
            continue;
        }
        assert_eq!(
            r.bitmaps.kept,
            f["duplicatedContents"].as_u64().unwrap(),
            "{}",
            input.display()
        );
    }
}

#[test]
fn the_same_input_and_options_give_the_same_zip_bytes() {
    let dir = tempfile::tempdir().unwrap();
    for input in common::fixtures() {
        let a = dir.path().join("a.zip");
        let b = dir.path().join("b.zip");
        shrink(&input, &a, StripMode::Bitmaps, DroppedMode::Remove);
        shrink(&input, &b, StripMode::Bitmaps, DroppedMode::Remove);
        assert!(
            std::fs::read(&a).unwrap() == std::fs::read(&b).unwrap(),
            "{}: zips differ",
            input.display()
        );
    }
}

#[test]
fn strip_none_packages_the_input_byte_for_byte() {
    let dir = tempfile::tempdir().unwrap();
    for input in common::fixtures() {
        let zip = dir.path().join("o.zip");
        let r = shrink(&input, &zip, StripMode::None, DroppedMode::Remove);
        let entry = common::zip_entry(&zip, &r.manifest.hprof_entry);
        assert!(
            entry == std::fs::read(&input).unwrap(),
            "{}",
            input.display()
        );
    }
}

#[test]
fn package_holds_result_info_first_then_the_hprof_then_extra_info() {
    let dir = tempfile::tempdir().unwrap();
    let input = common::repo_root().join("fixtures/art-api25.hprof");
    let zip = dir.path().join("o.zip");
    let opts = ShrinkOptions::new()
        .with_extra("uin", "42")
        .with_extra("build", "7.0.1 beta")
        .with_manifest(ManifestValues {
            sdk_version: Some("99".into()),
            ..Default::default()
        });
    let outputs = Outputs {
        zip: Some(&zip),
        hprof: None,
    };
    let r = shrink_file(&input, outputs, &opts, &Control::default()).unwrap();
    let z = zip::ZipArchive::new(std::fs::File::open(&zip).unwrap()).unwrap();
    let names: Vec<String> = (0..z.len())
        .map(|i| z.name_for_index(i).unwrap().unwrap().to_string())
        .collect();
    assert_eq!(
        names,
        ["result.info", "art-api25_shrink.hprof", "extra.info"]
    );
    let info = String::from_utf8(common::zip_entry(&zip, "result.info")).unwrap();
    assert!(info.starts_with("# "), "{info}");
    assert!(
        info.contains("\nsdkVersion=99\n"),
        "caller's value wins: {info}"
    );
    assert!(info.contains("\nmanufacturer=samsung\n"));
    assert!(info.contains("\nhprofEntry=art-api25_shrink.hprof\n"));
    assert!(info.contains(&format!(
        "\nleakedActivityKey={}\n",
        r.manifest.leaked_activity_key
    )));
    assert_eq!(r.manifest.sources.sdk_version, Source::Caller);
    let extra = String::from_utf8(common::zip_entry(&zip, "extra.info")).unwrap();
    assert_eq!(extra, "uin=42\nbuild=7.0.1 beta\n");
}

#[test]
fn odd_string_records_come_out_byte_for_byte() {
    // Non-ASCII UTF-8, Modified UTF-8's two-byte NUL and a CESU-8 surrogate: a writer
    // that decodes and re-encodes STRING records (as Matrix's does) would change them.
    let dir = tempfile::tempdir().unwrap();
    let input = common::repo_root().join("fixtures/art-api25.hprof");
    let out = dir.path().join("o.hprof");
    let outputs = Outputs {
        zip: None,
        hprof: Some(&out),
    };
    shrink_file(
        &input,
        outputs,
        &ShrinkOptions::default(),
        &Control::default(),
    )
    .unwrap();
    let bytes = std::fs::read(&out).unwrap();
    for needle in [
        "com.example.Grüße".as_bytes(),
        b"nul\xC0\x80inside",
        b"lone \xED\xA0\x80 surrogate",
    ] {
        assert!(
            bytes.windows(needle.len()).any(|w| w == needle),
            "{:?} missing from the output",
            String::from_utf8_lossy(needle)
        );
    }
    verify_path(
        &out,
        Some(&input),
        Some(StripMode::Bitmaps),
        &Control::default(),
    )
    .unwrap();
}

#[test]
fn zip_and_raw_hprof_outputs_hold_the_same_hprof() {
    let dir = tempfile::tempdir().unwrap();
    let input = common::repo_root().join("fixtures/hotspot-android.hprof");
    let zip = dir.path().join("o.zip");
    let raw = dir.path().join("o.hprof");
    let outputs = Outputs {
        zip: Some(&zip),
        hprof: Some(&raw),
    };
    let r = shrink_file(
        &input,
        outputs,
        &ShrinkOptions::default(),
        &Control::default(),
    )
    .unwrap();
    let entry = common::zip_entry(&zip, &r.manifest.hprof_entry);
    let raw = std::fs::read(&raw).unwrap();
    assert_eq!(entry.len() as u64, r.output.hprof_bytes);
    assert!(entry == raw);
}

#[test]
fn pass_three_on_several_threads_writes_what_one_thread_writes() {
    use hprof_shrink_core::hprof::Hprof;
    use hprof_shrink_core::passes::write_shrunk_parallel;
    use hprof_shrink_core::{analyze, write_shrunk, AnalyzeOptions};
    let control = Control::default();
    for input in all_inputs() {
        let bytes = std::fs::read(&input).unwrap();
        // The whole dump, and cut off and salvaged: mid-way (its last segment is cut), and
        // a few records in (a dump smaller than the runs it is cut into).
        let whole = (Hprof::new(&bytes).unwrap(), false);
        let mid = (
            Hprof::salvage(&bytes[..bytes.len() * 3 / 5]).unwrap().0,
            true,
        );
        let tiny = (Hprof::salvage(&bytes[..400]).unwrap().0, true);
        for (hprof, is_salvaged) in [whole, mid, tiny] {
            for strip in STRIPS {
                for dropped in DROPPED {
                    let opts = AnalyzeOptions::new(strip, dropped, 2).with_salvaged(is_salvaged);
                    let a = analyze(&hprof, &opts, &control).unwrap();
                    let (one, one_stats, one_n) =
                        write_shrunk(&hprof, &a.plan, Vec::new(), &control).unwrap();
                    for threads in [2, 3, 64] {
                        let (many, stats, n) =
                            write_shrunk_parallel(&hprof, &a.plan, Vec::new(), &control, threads)
                                .unwrap();
                        let what = format!(
                            "{} salvaged={is_salvaged} {strip:?} {dropped:?} {threads}",
                            input.display()
                        );
                        assert!(many == one, "{what}: bytes differ");
                        assert_eq!((&stats, n), (&one_stats, one_n), "{what}");
                        assert_eq!(n, one.len() as u64, "{what}");
                    }
                }
            }
        }
    }
}

#[test]
fn dropped_modes_shape_the_arrays_as_documented() {
    let dir = tempfile::tempdir().unwrap();
    let input = common::repo_root().join("fixtures/art-api26.hprof");
    let size = |dropped| {
        let out = dir.path().join("o.hprof");
        let outputs = Outputs {
            zip: None,
            hprof: Some(&out),
        };
        let opts = ShrinkOptions::new().with_dropped(dropped);
        let r = shrink_file(&input, outputs, &opts, &Control::default()).unwrap();
        (r.output.hprof_bytes, r.arrays.dropped)
    };
    let input_len = std::fs::metadata(&input).unwrap().len();
    let (removed, dropped) = size(DroppedMode::Remove);
    let (emptied, _) = size(DroppedMode::Empty);
    let (zeroed, _) = size(DroppedMode::Zero);
    assert_eq!(zeroed, input_len, "zero keeps every size");
    // Each dropped array leaves its 14-byte header (4-byte ids) when emptied.
    assert_eq!(emptied, removed + dropped.count * 14);
    assert_eq!(input_len - emptied, dropped.bytes);
}

#[test]
fn an_error_leaves_no_file_at_the_destination() {
    let dir = tempfile::tempdir().unwrap();
    let full = std::fs::read(common::repo_root().join("fixtures/art-api25.hprof")).unwrap();
    let cut = dir.path().join("cut.hprof");
    std::fs::write(&cut, &full[..full.len() / 2]).unwrap();
    let zip = dir.path().join("out.zip");
    let raw = dir.path().join("out.hprof");
    let outputs = Outputs {
        zip: Some(&zip),
        hprof: Some(&raw),
    };
    let err = shrink_file(
        &cut,
        outputs,
        &ShrinkOptions::default(),
        &Control::default(),
    )
    .expect_err("a truncated dump must fail");
    assert!(err.to_string().contains("truncated"), "{err}");
    assert_eq!(common::files_in(dir.path()), ["cut.hprof"]);
}

/// Shrinks `fixture` into `out` (a zip, or a raw hprof on several threads), cancelling as
/// soon as pass 3 reports progress, as a phone app would from another thread; asserts the
/// shrink stopped and left nothing.
fn cancel_in_pass_three(fixture: &str, out: &str) {
    use std::sync::atomic::{AtomicBool, Ordering};
    let dir = tempfile::tempdir().unwrap();
    let input = common::repo_root().join("fixtures").join(fixture);
    let out = dir.path().join(out);
    let cancel = AtomicBool::new(false);
    let progress = |p: hprof_shrink_core::Progress| {
        if p.stage == hprof_shrink_core::Stage::Write {
            cancel.store(true, Ordering::Relaxed);
        }
    };
    let control = Control {
        cancel: Some(&cancel),
        progress: Some(&progress),
    };
    let outputs = common::one_output(&out);
    let opts = ShrinkOptions::new().with_threads(2);
    let err = shrink_file(&input, outputs, &opts, &control).unwrap_err();
    assert!(matches!(err, hprof_shrink_core::Error::Cancelled), "{err}");
    assert!(common::files_in(dir.path()).is_empty());
}

#[test]
fn cancellation_stops_the_shrink_and_leaves_nothing() {
    cancel_in_pass_three("hotspot-android.hprof", "out.zip");
}

#[test]
fn cancelling_a_raw_hprof_write_on_several_threads_leaves_nothing() {
    cancel_in_pass_three("art-api25.hprof", "out.hprof");
}

#[test]
fn progress_reports_every_pass_in_order() {
    use hprof_shrink_core::Stage;
    use std::sync::Mutex;
    let dir = tempfile::tempdir().unwrap();
    let input = common::repo_root().join("fixtures/art-api25.hprof");
    let seen = Mutex::new(Vec::new());
    let progress = |p: hprof_shrink_core::Progress| {
        let mut s = seen.lock().unwrap();
        if s.last() != Some(&p.stage) {
            s.push(p.stage);
        }
        assert!(p.done <= p.total);
    };
    let control = Control {
        cancel: None,
        progress: Some(&progress),
    };
    let zip = dir.path().join("o.zip");
    let outputs = Outputs {
        zip: Some(&zip),
        hprof: None,
    };
    shrink_file(&input, outputs, &ShrinkOptions::default(), &control).unwrap();
    let seen = seen.into_inner().unwrap();
    // The fixture has buffers before their Bitmaps: a resolve walk follows the collect.
    assert_eq!(
        seen,
        [
            Stage::Info,
            Stage::Collect,
            Stage::Resolve,
            Stage::Dedup,
            Stage::Write
        ]
    );
}

#[test]
fn refuses_to_write_over_its_input() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.hprof");
    std::fs::copy(common::repo_root().join("fixtures/art-api26.hprof"), &input).unwrap();
    let before = std::fs::read(&input).unwrap();
    let outputs = Outputs {
        zip: None,
        hprof: Some(&input),
    };
    let err = shrink_file(
        &input,
        outputs,
        &ShrinkOptions::default(),
        &Control::default(),
    )
    .unwrap_err();
    assert!(err.to_string().contains("is the input"), "{err}");
    assert!(std::fs::read(&input).unwrap() == before);
}

#[test]
fn placeholders_are_written_and_named_when_the_dump_lacks_the_values() {
    // The corpus dumps are not Android heaps: no Build, no DestroyedActivityInfo.
    let dir = tempfile::tempdir().unwrap();
    let Some(input) = common::corpus().into_iter().next() else {
        return;
    };
    let zip = dir.path().join("o.zip");
    let r = shrink(&input, &zip, StripMode::Bitmaps, DroppedMode::Remove);
    assert_eq!(r.manifest.sources.sdk_version, Source::Placeholder);
    assert_eq!(r.manifest.sdk_version, "0");
    assert_eq!(r.manifest.manufacturer, "unknown");
    for key in ["sdkVersion", "manufacturer", "leakedActivityKey"] {
        assert!(
            r.warnings.iter().any(|w| w.starts_with(key)),
            "no warning names {key}: {:?}",
            r.warnings
        );
    }
}

#[test]
fn a_verify_failure_names_the_offset_and_tag_of_the_record_at_fault() {
    use hprof_shrink_core::hprof::{tags, Event, Events, MappedFile, Sub, Tag};
    use hprof_shrink_core::Error;

    let dir = tempfile::tempdir().unwrap();
    let input = common::repo_root().join("fixtures/art-api25.hprof");
    let raw = dir.path().join("o.hprof");
    let opts = ShrinkOptions::new().with_strip(StripMode::None);
    let outputs = Outputs {
        zip: None,
        hprof: Some(&raw),
    };
    shrink_file(&input, outputs, &opts, &Control::default()).unwrap();
    // Under --strip none nothing moves: the first instance with fields is at the same
    // offset in both. Its last byte changed in the output is a difference verify names.
    let at = {
        let map = MappedFile::open(&raw).unwrap();
        let hprof = map.hprof().unwrap();
        Events::new(&hprof)
            .map(Result::unwrap)
            .find_map(|ev| match ev {
                Event::Sub(s) if matches!(&s.kind, Sub::Instance(i) if !i.data.is_empty()) => {
                    Some((s.offset, s.raw.len()))
                }
                _ => None,
            })
            .expect("an instance with fields")
    };
    let mut bytes = std::fs::read(&raw).unwrap();
    assert_eq!(
        bytes,
        std::fs::read(&input).unwrap(),
        "--strip none keeps every byte"
    );
    bytes[at.0 as usize + at.1 - 1] ^= 0xFF;
    std::fs::write(&raw, &bytes).unwrap();

    let e = verify_path(&raw, Some(&input), None, &Control::default()).unwrap_err();
    assert_eq!(e.offset(), Some(at.0), "{e}");
    match &e {
        Error::Verify(v) => assert_eq!(v.tag, Some(Tag::heap(tags::INSTANCE_DUMP)), "{e}"),
        other => panic!("not a verify failure: {other}"),
    }
    assert!(
        e.to_string()
            .contains(&format!("INSTANCE_DUMP at input offset {}", at.0)),
        "{e}"
    );
}
