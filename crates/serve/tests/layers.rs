//! The server's modules depend one way: what `App` holds (the store, the caches, the
//! limits) sits below it, the handlers that take `App` above it, and nothing below reaches
//! back up to it. Reads the sources, as `dependencies.rs` asks cargo: a new `use` that
//! closes a circle fails here, naming it.

use std::path::Path;

use hprof_shrink_test_support::layers::{circle, module_uses};

#[test]
fn the_servers_modules_have_no_circle() {
    let uses = module_uses(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"));
    assert!(uses.len() > 20, "read too few modules: {uses:?}");
    // What the fence relies on: App's caches are below it, the handlers above.
    assert!(uses["app"].contains("versions") && uses["app"].contains("no_leak"));
    assert!(uses["views"].contains("app"), "{:?}", uses["views"]);
    if let Some(c) = circle(&uses) {
        panic!(
            "the server's modules must depend one way (a type App holds lives below app.rs, a \
             function reads what it needs, not App), but they close a circle: {}",
            c.join(" -> ")
        );
    }
}
