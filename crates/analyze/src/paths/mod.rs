//! Why an object is alive: the path search from the GC roots over strong references as
//! LeakCanary's Shark makes it ([`refs`] says what each object's references are and in
//! which order, [`reach`] searches), the leaking objects settled against it ([`found`]),
//! and each leak's trace with its statuses ([`trace`]). Uses `base`, `model`, `heap` and
//! `knowledge`.

pub mod found;
pub mod reach;
pub mod refs;
mod spilled;
pub mod trace;
pub mod tree_text;

use crate::heap::graph::Graph;
use crate::knowledge::inspect::Inspectors;

/// The heap as the path search left it: its graph, the search, and the inspectors that
/// read its objects: what the steps after the search read the leaks and the counts with.
#[derive(Clone, Copy)]
pub struct Searched<'s, 'i, 'a, 'h> {
    pub g: &'s Graph<'i, 'a>,
    pub reach: &'s reach::Reach,
    pub ins: &'s Inspectors<'h>,
}
