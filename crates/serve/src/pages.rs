//! The pages, compiled in with maud (every value escaped by construction): the leak groups,
//! one group, one package, the duplicate-bitmap gallery. Each shows lists already cut to
//! [`limits`], with the count of what was left out.

use maud::{html, Markup, PreEscaped, DOCTYPE};

use super::cache::Shown;
use super::groups::{DuplicateBuffer, LeakGroup};
use super::limits::{self, Cut};
use super::store::{Filter, LeakRow, Menu, Menus, Package, PackageRow, Regrouping, Shrunk};
use super::triage::PackageTriage;
use hprof_shrink_analyze::model::Trace;
use hprof_shrink_analyze::render::html::trace;
use hprof_shrink_analyze::render::triage::{destroyed, one_line, NO_DIMENSIONS};
use hprof_shrink_analyze::render::{human, shown, with_native};

const STYLE: &str = "
body{font:14px/1.45 system-ui,sans-serif;margin:1.5em auto;max-width:80em;padding:0 1em;color:#222}
nav a{margin-right:1.2em}h1{font-size:1.5em}h2{font-size:1.2em;margin-top:1.8em;border-bottom:1px solid #ccc}
table{border-collapse:collapse}td,th{padding:.25em .7em;text-align:left;border-bottom:1px solid #eee;vertical-align:top}
td.n{text-align:right;font-variant-numeric:tabular-nums}
.sig,code{font-family:ui-monospace,monospace;font-size:12px}
.trace{font-family:ui-monospace,monospace;font-size:13px;border-left:3px solid #888;padding-left:1em}
.step{margin:.35em 0}.YES{color:#b00020;font-weight:bold}.NO{color:#1b5e20}.UNKNOWN{color:#777}
.suspect{text-decoration:underline wavy #b00020}
.spread span{display:inline-block;background:#eef;border-radius:3px;padding:0 .4em;margin:0 .3em .2em 0}
.gallery{display:flex;flex-wrap:wrap;gap:1.2em}.bitmap{border:1px solid #ddd;padding:.8em;max-width:22em}
.bitmap img{max-width:20em;max-height:20em;image-rendering:pixelated;background:repeating-conic-gradient(#eee 0 25%,#fff 0 50%) 0/16px 16px}
.failed{color:#b00020}.rebuilding{color:#8a5a00}.note{background:#fff8e1;padding:.4em .8em}.more{color:#777}
";

pub(crate) fn page(title: &str, body: Markup) -> String {
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                title { (title) " · hprof-shrink" }
                style { (PreEscaped(STYLE)) }
            }
            body {
                nav { a href="/" { "Leak groups" } a href="/versions" { "By app version" } a href="/no-leak" { "No-leak groups" } a href="/bitmaps" { "Duplicate bitmaps" } a href="/packages" { "Packages" } }
                h1 { (title) }
                (body)
            }
        }
    }
    .into_string()
}

/// `2026-11-23 15:04:05 UTC`.
pub fn when(ms: i64) -> String {
    let secs = ms.div_euclid(1000);
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let (y, m, d) = hprof_shrink_core::package::records::civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02} UTC",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

fn spread(v: &[(String, u64)], left_out: u64) -> Markup {
    html! {
        span.spread {
            @for (value, n) in v {
                span { @if value.is_empty() { "?" } @else { (value) } " ×" (n) }
            }
            @if left_out > 0 { span.more { "+" (left_out) " more" } }
        }
    }
}

/// "1 package", "2 packages". Counts come both signed (database rows) and unsigned.
pub(crate) fn plural(n: impl Into<i128>, one: &str, many: &str) -> String {
    let n = n.into();
    format!("{n} {}", if n == 1 { one } else { many })
}

/// "N more (which) not shown", when some were left out.
pub(crate) fn more(left_out: u64, one: &str, many: &str, which: &str) -> Markup {
    html! {
        @if left_out > 0 { p.more { (plural(left_out, one, many)) " (" (which) ") not shown." } }
    }
}

/// A value from a row, cut as the lists show it (rows recorded before the caps may hold
/// more).
fn column(v: &str) -> std::borrow::Cow<'_, str> {
    limits::column(v)
}

fn bytes(n: i64) -> String {
    human(n.max(0) as u64)
}

/// Java bytes with their registered native bytes when any: "5.8 kB + 20.1 MB native".
pub(crate) fn sized(java: i64, native: i64) -> String {
    with_native(java.max(0) as u64, native.max(0) as u64)
}

/// What a regrouping under way says, at the top of the groups page and of a group's.
fn regrouping(r: Option<&Regrouping>) -> Markup {
    html! {
        @if let Some(r) = r {
            p.note.regrouping {
                "Regrouping: " (r.reanalyzed) " of " (plural(r.packages, "package", "packages")) " re-analyzed"
                @if r.failed > 0 { " (" (r.failed) " failed: their leaks keep their old signatures)" }
                ". The analyzer's signatures (now version " (r.signature_version) ") or this "
                "server's grouping changed: packages analyzed before are being analyzed again, "
                "after every new package, and move to the groups they belong to now. Until then "
                "one bug may show as an old group and a new one; groups being rebuilt say so."
            }
        }
    }
}

/// A group's mark while some of its occurrences carry an older signature.
fn rebuilding(g: &LeakGroup, r: Option<&Regrouping>) -> Markup {
    html! {
        @if g.older_signatures > 0 {
            @if r.is_some() {
                span.rebuilding { "being rebuilt: " (g.older_signatures) " of its occurrences are to be re-analyzed" }
            } @else {
                span.rebuilding { (g.older_signatures) " of its occurrences carry an older signature (not re-analyzed)" }
            }
        }
    }
}

fn group_table(groups: &[LeakGroup], r: Option<&Regrouping>) -> Markup {
    html! {
        table {
            tr {
                th { "occurrences" } th { "packages" } th { "leak" } th { "SDK" }
                th { "manufacturer" } th { "app version" } th { "retained (median / max)" }
                th { "first seen" } th { "last seen" }
            }
            @for g in groups {
                tr {
                    td.n { (g.occurrences) }
                    td.n { (g.packages) }
                    td {
                        a.title href={ "/groups/" (g.signature) } { (shown(&g.title)) }
                        @if g.title != g.class_name { br; small { "leaking: " (shown(&g.class_name)) } }
                        br; span.sig { (g.signature) }
                        @if let Some(lib) = &g.library_leak { br; small { (lib) } }
                        @if g.older_signatures > 0 { br; (rebuilding(g, r)) }
                    }
                    td { (spread(&g.sdk_versions, g.sdk_versions_left_out)) }
                    td { (spread(&g.manufacturers, g.manufacturers_left_out)) }
                    td { (spread(&g.app_versions, g.app_versions_left_out)) }
                    td.n {
                        (sized(g.retained_bytes.p50, g.retained_native_bytes.p50)) " / "
                        (sized(g.retained_bytes.max, g.retained_native_bytes.max))
                    }
                    td { (when(g.first_seen_ms)) }
                    td { (when(g.last_seen_ms)) }
                }
            }
        }
    }
}

fn select(name: &str, label: &str, menu: &Menu, chosen: &Option<String>) -> Markup {
    // A value chosen by URL that the menu does not list is offered too, if it could be a
    // recorded value at all (a longer one cannot).
    let extra = chosen
        .as_deref()
        .filter(|c| c.len() <= limits::COLUMN_BYTES && !menu.values.iter().any(|v| v == c));
    html! {
        label {
            (label) " "
            select name=(name) {
                option value="" { "all" }
                @for v in &menu.values {
                    option value=(v) selected[chosen.as_deref() == Some(v.as_str())] { (v) }
                }
                @if let Some(c) = extra { option value=(c) selected { (c) } }
                @if menu.left_out > 0 {
                    option disabled { "(" (menu.left_out) " more: ?" (name) "=VALUE)" }
                }
            }
        }
        " "
    }
}

/// The filter form of a list of groups (`action`: the list's path): one menu a column.
fn filter_form(action: &str, menus: &Menus, filter: &Filter) -> Markup {
    html! {
        form method="get" action=(action) {
            (select("sdk", "SDK", &menus.sdk, &filter.sdk))
            (select("manufacturer", "manufacturer", &menus.manufacturer, &filter.manufacturer))
            (select("app_version", "app version", &menus.app_version, &filter.app_version))
            button type="submit" { "Filter" }
        }
    }
}

/// The groups page: the filter, the queue, the app and library leak groups.
pub fn leak_groups(g: &Shown, filter: &Filter) -> String {
    let (app, library, menus) = (&g.app, &g.library, &g.menus);
    let body = html! {
        (filter_form("/", menus, filter))
        p {
            "Analysis queue: "
            @for (state, n) in &g.jobs { (state) " " (n) "; " }
        }
        (regrouping(g.regrouping.as_ref()))
        h2 { "App leaks (" (plural(app.len() as u64 + g.app_left_out, "group", "groups")) ")" }
        @if app.is_empty() { p { "None yet." } } @else { (group_table(app, g.regrouping.as_ref())) }
        (more(g.app_left_out, "more group", "more groups", "the least frequent"))
        h2 { "Library leaks (" (plural(library.len() as u64 + g.library_left_out, "group", "groups")) ")" }
        p { "Leaks whose only path runs through a known framework leak: not the app's bug." }
        @if library.is_empty() { p { "None." } } @else { (group_table(library, g.regrouping.as_ref())) }
        (more(g.library_left_out, "more group", "more groups", "the least frequent"))
    };
    page("Leak groups", body)
}

/// One group's page: its trace (`t`, the latest occurrence's) and its latest occurrences.
pub fn group(
    g: &LeakGroup,
    t: Option<&Trace>,
    occurrences: &[LeakRow],
    r: Option<&Regrouping>,
) -> String {
    let left_out = g.occurrences.saturating_sub(occurrences.len() as u64);
    let body = html! {
        (regrouping(r))
        @if g.older_signatures > 0 { p.note { (rebuilding(g, r)) } }
        p { "Leaking: " (shown(&g.class_name)) }
        p.sig { "signature " (g.signature) }
        @if let Some(lib) = &g.library_leak { p.note { "Library leak: " (lib) } }
        table {
            tr { th { "occurrences" } td { (g.occurrences) " in " (plural(g.packages, "package", "packages")) } }
            tr { th { "first seen" } td { (when(g.first_seen_ms)) } }
            tr { th { "last seen" } td { (when(g.last_seen_ms)) } }
            tr { th { "SDK" } td { (spread(&g.sdk_versions, g.sdk_versions_left_out)) } }
            tr { th { "manufacturer" } td { (spread(&g.manufacturers, g.manufacturers_left_out)) } }
            tr { th { "app version" } td { (spread(&g.app_versions, g.app_versions_left_out)) } }
            tr { th { "retained" } td {
                "min " (sized(g.retained_bytes.min, g.retained_native_bytes.min))
                ", median " (sized(g.retained_bytes.p50, g.retained_native_bytes.p50))
                ", p90 " (sized(g.retained_bytes.p90, g.retained_native_bytes.p90))
                ", max " (sized(g.retained_bytes.max, g.retained_native_bytes.max))
            } }
        }
        h2 { "Leak trace (most recent occurrence)" }
        @if let Some(t) = t { (trace(t)) } @else { p { "No trace stored." } }
        h2 { "Occurrences" @if left_out > 0 { " (the " (occurrences.len()) " most recent)" } }
        table {
            tr { th { "package" } th { "received" } th { "SDK" } th { "manufacturer" } th { "app version" } th { "retained" } th { "" } }
            @for o in occurrences {
                tr {
                    td { a href={ "/packages/" (o.package_id) } { (o.package_name) } }
                    td { (when(o.received_ms)) }
                    td { (column(&o.sdk)) } td { (column(&o.manufacturer)) } td { (column(&o.app_version)) }
                    td.n { (sized(o.retained_bytes, o.retained_native_bytes)) }
                    td { a href={ "/packages/" (o.package_id) "/analysis" } { "analysis" } }
                }
            }
        }
        (more(left_out, "more occurrence", "more occurrences", "older"))
    };
    page(&format!("Leak group: {}", shown(&g.title)), body)
}

/// One leak of a package, as its page lists it.
pub struct PackageLeak {
    /// The leak's signature (a link to its group).
    pub signature: String,
    /// The leaking object's class.
    pub class_name: String,
    /// The known framework leak it runs through, if any.
    pub library: Option<String>,
    /// Bytes the leaking object retains.
    pub retained_bytes: i64,
    /// Registered native bytes it retains.
    pub retained_native_bytes: i64,
}

/// A `result.info` or `extra.info` as recorded, with what was cut.
fn props(pairs: &[(String, String)], cut: Option<&Cut>) -> Markup {
    html! {
        @if let Some(c) = cut {
            p.note {
                "Cut to this server's limits"
                @if !c.cut.is_empty() { ": " (c.cut.len()) " shortened (ending in " (limits::MARK) ")" }
                @if c.left_out > 0 { "; " (c.left_out) " more not recorded" }
                ". The package holds them whole."
            }
        }
        table { @for (k, v) in pairs { tr { th { (k) } td { (v) } } } }
    }
}

/// `part` of `of` in percent, "–" when `of` is 0.
fn share(part: u64, of: u64) -> String {
    if of == 0 {
        return "–".into();
    }
    format!("{:.0}%", part as f64 * 100.0 / of as f64)
}

/// What a package's page shows of its analysis's triage; `analyzed`: the package has a
/// recorded analysis (without a triage, one made before the triage existed).
/// The triage's Bitmaps in a sentence: how many, their bytes, the large ones (or that the
/// heap cannot tell which are).
fn bitmaps_line(b: &hprof_shrink_analyze::model::triage::BitmapCounts) -> Markup {
    html! {
        p {
            (b.count) " Bitmaps of the app: " (with_native(b.java_bytes, b.native_bytes)) "; "
            @if b.dimensions_unknown { (NO_DIMENSIONS) "." } @else {
                (b.large_count) " large (over " (b.large_threshold_pixels) " pixels, "
                @match &b.screen {
                    Some(s) => { "the screen's " (s.width) "×" (s.height) " × 1.1, from " (shown(&s.source)) }
                    None => { "no screen known: " (shown(&b.large_rule)) "'s rule" }
                }
                "), " (human(b.large_bytes)) "."
            }
        }
    }
}

fn triage_section(t: Option<&PackageTriage>, analyzed: bool) -> Markup {
    let Some(t) = t else {
        return html! {
            @if analyzed {
                p.note {
                    "No triage: this package was analyzed before the triage existed "
                    "(its recorded analysis has none). Analyze the package again to see it."
                }
            } @else { p { "Not analyzed yet." } }
        };
    };
    let heap = t.heap_bytes + t.heap_native_bytes;
    let c = &t.counts;
    let b = &t.bitmaps;
    let notes = t.notes.as_deref().unwrap_or_default();
    html! {
        // First: a shrunk dump's note says the sizes below leave out the dropped arrays.
        @if let Some((heading, rules)) = t.not_run.split_first() {
            div.note.not-run {
                (shown(heading))
                ul { @for r in rules { li { (shown(r.trim())) } } }
            }
        }
        @if !notes.is_empty() || t.notes_left_out > 0 {
            div.note.notes {
                "Notes of the analysis:"
                ul { @for n in notes { li { (shown(n)) } } }
                @if t.notes_left_out > 0 { span.more { (plural(t.notes_left_out, "more note", "more notes")) " not shown." } }
            }
        }
        p { "Reachable: " (with_native(t.heap_bytes, t.heap_native_bytes)) "." }
        h3 { "Top retainers" }
        @if t.top_retainers.is_empty() { p { "None." } }
        table.retainers {
            tr { th { "retained" } th { "of the heap" } th { "object" } th { "path from a GC root" } }
            @for r in &t.top_retainers {
                tr {
                    td.n { (with_native(r.retained_bytes, r.retained_native_bytes)) }
                    td.n { (share(r.retained_bytes + r.retained_native_bytes, heap)) }
                    td {
                        (shown(&r.class_name)) " " (r.kind)
                        @if r.suspect { br; span.failed { "leak suspect (over 10% of the heap)" } }
                    }
                    td {
                        @match &r.path {
                            Some(p) => { details { summary { code { (shown(&one_line(p))) } } (trace(p)) } }
                            None => { "no path from a GC root" }
                        }
                    }
                }
            }
        }
        (more(t.top_retainers_left_out, "more top retainer", "more top retainers", "smaller"))
        h3 { "Counts" }
        table.counts {
            tr { th { "Activities" } td.n { (c.activities) } td { (destroyed(c)) } }
            tr { th { "Fragments" } td.n { (c.fragments) } td {} }
            tr { th { "Windows" } td.n { (c.windows) } td {} }
            tr { th { "Bitmaps" } td.n { (c.bitmaps) } td {} }
            tr { th { "threads" } td.n { (c.threads) } td {} }
        }
        h3 { "Bitmaps" }
        (bitmaps_line(b))
        @if !b.largest.is_empty() {
            table.bitmaps {
                tr { th { "width × height" } th { "config" } th { "bytes" } th { "" } }
                @for x in &b.largest {
                    tr {
                        td.n { (x.width) " × " (x.height) }
                        td { (shown(&x.config)) }
                        td.n { (with_native(x.java_bytes, x.native_bytes)) }
                        td { @if x.large { "large " } @if x.recycled { "recycled" } }
                    }
                }
            }
        }
        (more(b.largest_left_out, "more Bitmap", "more Bitmaps", "smaller"))
        h3 { "Duplicate Strings" }
        @if t.duplicate_strings.is_empty() { p { "None." } }
        @else {
            table.strings {
                tr { th { "wasted" } th { "copies" } th { "length" } th { "value" } }
                @for d in &t.duplicate_strings {
                    tr {
                        td.n { (human(d.wasted_bytes)) }
                        td.n { (d.count) }
                        td.n { (d.length) }
                        td { code { (shown(&d.value)) } }
                    }
                }
            }
        }
        (more(t.duplicate_strings_left_out, "more duplicated String", "more duplicated Strings", "less wasteful"))
        h3 { "Threads" }
        p.spread {
            @for g in &t.threads { span { (shown(&g.name)) " ×" (g.count) } }
            @if t.threads_left_out > 0 { span.more { "+" (plural(t.threads_left_out, "more name", "more names")) } }
        }
    }
}

/// One package's page: its properties, its leaks and its duplicated bitmaps.
pub fn package(
    pkg: &Package,
    leaks: &[PackageLeak],
    bitmaps: &[DuplicateBuffer],
    triage: Option<&PackageTriage>,
) -> String {
    let p = &pkg.row;
    let trace = crate::heap_graph::is_trace_name(&p.name);
    // A trace in a package is named as a zip: its analysis says what it is.
    let heap_graph = trace || triage.is_some_and(|t| t.heap_graph);
    let body = html! {
        p {
            a href={ "/packages/" (p.id) "/download" } { @if trace { "Download the trace" } @else { "Download the package" } } " · "
            a href={ "/packages/" (p.id) "/analysis" } { "Full analysis" } " · "
            a href={ "/api/packages/" (p.id) } { "JSON" }
        }
        table {
            tr { th { "name" } td { (p.name) } }
            tr { th { "md5" } td { code { (p.md5) } } }
            tr { th { "size" } td { (bytes(p.bytes)) } }
            tr { th { "received" } td { (when(p.received_ms)) } }
            @if heap_graph {
                tr { th { "dump" } td { (crate::heap_graph::SAID_ON_ITS_PAGE) } }
            }
            @if pkg.is_private() {
                tr { th { "private" } td { "yes: made with --private, its String values (but those the analysis reads) and pixels replaced on the phone; the analysis is the same, the values it shows are not the app's" } }
            }
            tr { th { "analysis" } td {
                (p.state)
                @if p.reanalysis { " (a re-analysis: analyzed before by an older analyzer or server, which grouped it differently)" }
                @if let Some(e) = &p.error { " — " span.failed { (e) } }
            } }
            @if p.analyses > 0 {
                tr { th { "signature version" } td {
                    @match p.signature_version { Some(v) => { (v) }, None => { "older (not recorded)" } }
                } }
            }
        }
        h2 { "result.info" }
        (props(&pkg.manifest, pkg.manifest_cut.as_ref()))
        h2 { "extra.info" }
        @if pkg.extra.is_empty() { p { "None." } }
        (props(&pkg.extra, pkg.extra_cut.as_ref()))
        h2 { "Leaks" }
        @if leaks.is_empty() { p { "None found." } }
        table {
            @for l in leaks {
                tr {
                    td { a href={ "/groups/" (l.signature) } { (shown(&l.class_name)) } }
                    td.n { (sized(l.retained_bytes, l.retained_native_bytes)) }
                    td { @if let Some(lib) = &l.library { "library leak: " (lib) } }
                }
            }
        }
        h2 { "Triage" }
        (triage_section(triage, p.analyses > 0))
        h2 { "Duplicate bitmaps" }
        (gallery(bitmaps, 0))
    };
    page(&format!("Package {}", p.id), body)
}

/// One page of the package list, newest first; `paged`: not the first page; `next`: the
/// id the next (older) page starts below; `limit`: the page's size when one was asked for.
pub fn packages(list: &[PackageRow], paged: bool, next: Option<i64>, limit: Option<i64>) -> String {
    let limit = limit.map(|l| format!("&limit={l}")).unwrap_or_default();
    let newest = match limit.strip_prefix('&') {
        Some(l) => format!("/packages?{l}"),
        None => "/packages".to_string(),
    };
    let links = html! {
        p.pages {
            @if paged { a href=(newest) { "← newest" } " " }
            @if let Some(id) = next { a href={ "/packages?before=" (id) (limit) } { "older →" } }
        }
    };
    let body = html! {
        @if list.is_empty() { p { "None." } }
        (links)
        table {
            tr { th { "id" } th { "name" } th { "received" } th { "SDK" } th { "manufacturer" } th { "app version" } th { "analysis" } }
            @for p in list {
                tr {
                    td.n { a href={ "/packages/" (p.id) } { (p.id) } }
                    td { (p.name) }
                    td { (when(p.received_ms)) }
                    td { (p.sdk) } td { (p.manufacturer) } td { (p.app_version) }
                    td { (p.state) }
                }
            }
        }
        (links)
    };
    page("Packages", body)
}

fn gallery(groups: &[DuplicateBuffer], left_out: u64) -> Markup {
    html! {
        @if groups.is_empty() { p { "None." } }
        div.gallery {
            @for g in groups {
                div.bitmap {
                    @if let Some(src) = &g.picture {
                        img src=(src) alt={ "bitmap " (g.hash) };
                    } @else { p { "(no picture)" } }
                    p {
                        (g.width) "×" (g.height) " " (g.format) ", " (bytes(g.buffer_bytes)) br;
                        (plural(g.copies, "copy", "copies")) " in " (plural(g.packages.len() as u64 + g.packages_left_out, "package", "packages")) ", "
                        (bytes(g.wasted_bytes)) " wasted" br;
                        span.sig { (g.hash) } br;
                        @for id in &g.packages { a href={ "/packages/" (id) } { "#" (id) } " " }
                        @if g.packages_left_out > 0 { span.more { "+" (g.packages_left_out) " more" } }
                    }
                }
            }
        }
        (more(left_out, "more group", "more groups", "the least wasteful"))
    }
}

/// The no-leak groups: packages without a leak (of those `filter` admits), by the path of
/// their first top retainer that has one, and how many more there are; `ungrouped`: such
/// packages in no group.
pub fn no_leak_groups(
    (groups, left_out): (&[LeakGroup], u64),
    ungrouped: u64,
    filter: &Filter,
    menus: &Menus,
) -> String {
    let body = html! {
        p {
            "Packages whose analysis found no leak (out-of-memory dumps and heap-graph traces, "
            "most of them), grouped by the path from a GC root to their largest retainer that "
            "has one: class and field names, not object ids, so one cause on many devices is "
            "one group. A group's page shows it per app version."
        }
        (filter_form("/no-leak", menus, filter))
        @if ungrouped > 0 {
            p.note.ungrouped {
                (plural(ungrouped, "package", "packages")) " without a leak "
                (if ungrouped == 1 { "is" } else { "are" }) " in no group: none of their top "
                "retainers has a path from a GC root (an object held only through references "
                "the path search does not follow, such as the main thread's locals, has none). "
                "Their pages show their triage."
            }
        }
        @if groups.is_empty() { p { "None" @if !filter.is_none() { " of these packages" } " yet." } } @else {
            table {
                tr {
                    th { "packages" } th { "largest retainer's path" } th { "SDK" }
                    th { "manufacturer" } th { "app version" } th { "retained (median / max)" }
                    th { "first seen" } th { "last seen" }
                }
                @for g in groups {
                    tr {
                        td.n { (g.packages) }
                        td {
                            a.title href={ "/no-leak/" (g.signature) } { code { (shown(&g.title)) } }
                            br; span.sig { (g.signature) }
                        }
                        td { (spread(&g.sdk_versions, g.sdk_versions_left_out)) }
                        td { (spread(&g.manufacturers, g.manufacturers_left_out)) }
                        td { (spread(&g.app_versions, g.app_versions_left_out)) }
                        td.n {
                            (sized(g.retained_bytes.p50, g.retained_native_bytes.p50)) " / "
                            (sized(g.retained_bytes.max, g.retained_native_bytes.max))
                        }
                        td { (when(g.first_seen_ms)) }
                        td { (when(g.last_seen_ms)) }
                    }
                }
            }
        }
        (more(left_out, "more group", "more groups", "the least frequent"))
    };
    page("No-leak groups", body)
}

/// One no-leak group: its packages per app version (`by_version`, made where they are,
/// [`crate::no_leak::ByVersion::html`]) and the most recent one's path; `shrunk`: those
/// of its packages whose sizes leave out dropped arrays.
pub fn no_leak_group(
    g: &LeakGroup,
    by_version: Markup,
    path: Option<&Trace>,
    packages: &[LeakRow],
    shrunk: Shrunk,
) -> String {
    let left_out = g.occurrences.saturating_sub(packages.len() as u64);
    let body = html! {
        @if shrunk.packages > 0 || shrunk.unknown > 0 {
            p.note.shrunk {
                (shrunk.packages) " of these " (plural(g.packages, "package", "packages")) " "
                (if shrunk.packages == 1 { "comes from a shrunk dump" } else { "come from shrunk dumps" }) ": "
                "their primitive arrays were dropped, so their retained sizes leave out those "
                "arrays' bytes."
                @if shrunk.unknown > 0 {
                    " Not known for " (shrunk.unknown) " of them, recorded before the server kept it."
                }
            }
        }
        p { "Largest retainer with a path: " (shown(&g.class_name)) }
        p.sig { "path signature " (g.signature) }
        table {
            tr { th { "packages" } td { (g.packages) } }
            tr { th { "first seen" } td { (when(g.first_seen_ms)) } }
            tr { th { "last seen" } td { (when(g.last_seen_ms)) } }
            tr { th { "SDK" } td { (spread(&g.sdk_versions, g.sdk_versions_left_out)) } }
            tr { th { "manufacturer" } td { (spread(&g.manufacturers, g.manufacturers_left_out)) } }
            tr { th { "app version" } td { (spread(&g.app_versions, g.app_versions_left_out)) } }
            tr { th { "retained" } td {
                "min " (sized(g.retained_bytes.min, g.retained_native_bytes.min))
                ", median " (sized(g.retained_bytes.p50, g.retained_native_bytes.p50))
                ", p90 " (sized(g.retained_bytes.p90, g.retained_native_bytes.p90))
                ", max " (sized(g.retained_bytes.max, g.retained_native_bytes.max))
            } }
        }
        (by_version)
        h2 { "Path from a GC root (most recent package)" }
        @if let Some(t) = path { (trace(t)) } @else { p { "No path stored." } }
        h2 { "Packages" @if left_out > 0 { " (the " (packages.len()) " most recent)" } }
        table {
            tr { th { "package" } th { "received" } th { "SDK" } th { "manufacturer" } th { "app version" } th { "retained" } }
            @for o in packages {
                tr {
                    td { a href={ "/packages/" (o.package_id) } { (o.package_name) } }
                    td { (when(o.received_ms)) }
                    td { (column(&o.sdk)) } td { (column(&o.manufacturer)) } td { (column(&o.app_version)) }
                    td.n { (sized(o.retained_bytes, o.retained_native_bytes)) }
                }
            }
        }
        (more(left_out, "more package", "more packages", "older"))
    };
    page(&format!("No-leak group: {}", shown(&g.class_name)), body)
}

/// The duplicated bitmaps page: the first groups, and how many were left out.
pub fn bitmaps(groups: &[DuplicateBuffer], left_out: u64) -> String {
    page("Duplicate bitmaps", gallery(groups, left_out))
}

pub(crate) fn not_found(what: &str) -> String {
    page("Not found", html! { p { (what) } })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates() {
        assert_eq!(when(0), "1970-01-01 00:00:00 UTC");
        assert_eq!(when(951_782_400_000), "2000-02-29 00:00:00 UTC");
        assert_eq!(when(1_795_446_245_000), "2026-11-23 15:04:05 UTC");
    }
}
