//! The one-screen human summary of a shrink, and number formatting.

use hprof_shrink_core::inspect::Inspection;
use hprof_shrink_core::package::Source;
use hprof_shrink_core::verify::Verified;
use hprof_shrink_core::Report;

/// 1234567 → "1,234,567".
pub use hprof_shrink_analyze::render::grouped as n;
// A name from a dump or a package as a terminal shows it: control and format characters
// escaped.
use hprof_shrink_analyze::render::shown;

fn pct(part: u64, whole: u64) -> String {
    if whole == 0 {
        return "-".into();
    }
    format!("{:.1}%", part as f64 * 100.0 / whole as f64)
}

pub fn shrink(r: &Report) -> String {
    let mut o = String::new();
    let input = r.input.bytes;
    let target = r
        .output
        .zip
        .as_deref()
        .or(r.output.hprof.as_deref())
        .unwrap_or("-");
    o += &format!("hprof-shrink: {} -> {}\n", r.input.path, target);
    o += &format!(
        "  input     {:>14} bytes  (JAVA PROFILE {}, {}-byte ids)\n",
        n(input),
        r.input.format,
        r.input.id_size
    );
    o += &format!(
        "  hprof     {:>14} bytes  ({} of input)\n",
        n(r.output.hprof_bytes),
        pct(r.output.hprof_bytes, input)
    );
    if let Some(z) = r.output.zip_bytes {
        o += &format!(
            "  zip       {:>14} bytes  ({} of input)\n",
            n(z),
            pct(z, input)
        );
    }
    o += &dropped_line(r);
    o += &format!(
        "  kept      {:>14} arrays, {} bytes of elements\n",
        n(r.arrays.kept.count),
        n(r.arrays.kept.bytes)
    );
    o += &format!(
        "  strings   {:>14} instances, {} value arrays\n",
        n(r.strings.instances),
        n(r.strings.values)
    );
    let b = &r.bitmaps;
    o += &format!(
        "  bitmaps   {:>14} ({} recycled); {} with pixels in {} buffers, {} distinct; kept {}, merged {} ({} bytes)\n",
        n(b.instances),
        n(b.recycled),
        n(b.with_buffer),
        n(b.buffers),
        n(b.distinct_contents),
        n(b.kept),
        n(b.merged),
        n(b.merged_bytes)
    );
    if let Some(d) = &r.dump_data {
        o += &format!(
            "  images    {:>14} in Bitmap$DumpData, {} distinct; merged {} ({} bytes)\n",
            n(d.images),
            n(d.distinct_contents),
            n(d.merged),
            n(d.merged_bytes)
        );
    }
    let m = &r.manifest;
    let src = |s: Source| match s {
        Source::Caller => "given",
        Source::Dump => "from dump",
        Source::Placeholder => "placeholder",
    };
    o += &format!(
        "  manifest  sdkVersion={} ({}), manufacturer={} ({}), leakedActivityKey={} ({})\n",
        m.sdk_version,
        src(m.sources.sdk_version),
        m.manufacturer,
        src(m.sources.manufacturer),
        m.leaked_activity_key,
        src(m.sources.leaked_activity_key)
    );
    let t = &r.timings_ms;
    o += &format!(
        "  time      info {} ms, collect {} ms, dedup {} ms, write {} ms; total {} ms\n",
        t.info, t.collect, t.dedup, t.write, t.total
    );
    for w in &r.warnings {
        o += &format!("warning: {w}\n");
    }
    o
}

/// The shrink's "dropped" line: arrays and bytes, and by element type.
fn dropped_line(r: &Report) -> String {
    let mut o = format!(
        "  dropped   {:>14} arrays, {} bytes of elements",
        n(r.arrays.dropped.count),
        n(r.arrays.dropped.bytes)
    );
    let by: Vec<String> = r
        .arrays
        .by_type
        .iter()
        .filter(|t| t.dropped.count > 0)
        .map(|t| {
            format!(
                "{} {} ({})",
                t.element_type.name(),
                n(t.dropped.count),
                n(t.dropped.bytes)
            )
        })
        .collect();
    if !by.is_empty() {
        o += &format!(": {}", by.join(", "));
    }
    o += "\n";
    o
}

pub fn inspect(path: &str, i: &Inspection) -> String {
    let mut o = String::new();
    o += &format!(
        "{}: JAVA PROFILE {}, {}-byte ids, {} bytes, timestamp {} ms\n\n",
        shown(path),
        shown(&i.format),
        i.id_size,
        n(i.bytes),
        i.timestamp_ms
    );
    o += "records                       count           bytes\n";
    for r in &i.records {
        o += &format!(
            "  0x{:02X} {:20} {:>10} {:>15}\n",
            r.tag,
            r.name,
            n(r.count),
            n(r.bytes)
        );
    }
    o += &format!(
        "  heap dump segments: {}, largest {} bytes\n\nheap sub-records\n",
        n(i.segments),
        n(i.largest_segment)
    );
    for r in &i.heap_records {
        o += &format!(
            "  0x{:02X} {:25} {:>10} {:>15}\n",
            r.tag,
            r.name,
            n(r.count),
            n(r.bytes)
        );
    }
    o += &format!(
        "\nobjects\n  classes          {:>12}\n  instances        {:>12} ({} bytes)\n  object arrays    {:>12} ({} bytes)\n  primitive arrays {:>12} ({} bytes of elements, {} of the file)\n",
        n(i.classes),
        n(i.instances.count),
        n(i.instances.bytes),
        n(i.object_arrays.count),
        n(i.object_arrays.bytes),
        n(i.primitive_arrays.count),
        n(i.primitive_arrays.bytes),
        pct(i.primitive_arrays.bytes, i.bytes)
    );
    for t in &i.primitive_by_type {
        o += &format!(
            "    {:14} {:>12} {:>15}\n",
            format!("{}[]", t.element_type.name()),
            n(t.count),
            n(t.bytes)
        );
    }
    if !i.heaps.is_empty() {
        o += "\nheaps\n";
        for h in &i.heaps {
            o += &format!(
                "  {:14} {:>12} objects {:>15} bytes\n",
                shown(&h.name),
                n(h.objects),
                n(h.bytes)
            );
        }
    }
    o += "\ntop classes by instances       instances    field bytes\n";
    for c in &i.top_classes {
        o += &format!(
            "  {:40} {:>10} {:>14}\n",
            shown(&c.name),
            n(c.instances),
            n(c.bytes)
        );
    }
    o
}

pub fn verify(path: &str, v: &Verified) -> String {
    let mut o = format!("verify: {}: OK\n", shown(path));
    if !v.entries.is_empty() {
        o += &format!("  entries   {}\n", shown(&v.entries.join(", ")));
        let m: Vec<String> = v
            .manifest
            .iter()
            .map(|(k, val)| format!("{}={}", shown(k), shown(val)))
            .collect();
        o += &format!("  manifest  {}\n", m.join(" "));
    }
    let c = &v.counts;
    o += &format!(
        "  hprof     {} bytes{}: {} records, {} segments, {} roots, {} classes, {} instances, {} object arrays, {} primitive arrays\n",
        n(v.hprof_bytes),
        if c.dumps > 1 {
            format!(", {} heap dumps one after another (counted together)", c.dumps)
        } else {
            String::new()
        },
        n(c.records),
        n(c.segments),
        n(c.roots),
        n(c.classes),
        n(c.instances),
        n(c.object_arrays),
        n(c.primitive_arrays)
    );
    if let Some(cmp) = &v.comparison {
        o += &format!(
            "  against   strip={}: every other record identical and in order; arrays kept {}, dropped {} ({} bytes); {} String values kept; {} Bitmaps checked ({} repointed); {} images checked\n",
            cmp.strip.map_or("unknown", |s| s.name()),
            n(cmp.kept_arrays),
            n(cmp.dropped_arrays),
            n(cmp.dropped_bytes),
            n(cmp.string_values),
            n(cmp.bitmaps_checked),
            n(cmp.repointed_bitmaps),
            n(cmp.images_checked)
        );
        if cmp.private {
            o += &format!(
                "  private   {} String values and {} Bitmap buffers or images replaced, each where it must be; every other value as it was\n",
                n(cmp.replaced_strings),
                n(cmp.replaced_pixels)
            );
        }
    }
    o
}
