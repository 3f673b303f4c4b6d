//! What the heap holds, for a reader with or without a leak: the triage ([`triage`]:
//! top retainers, accumulation points, largest arrays), its counts ([`counts`]),
//! duplicate bitmaps ([`bitmaps`]) and Strings ([`strings`]), and the dump in numbers
//! ([`summary`]). Uses every room below `run`.

pub mod bitmaps;
pub mod counts;
pub mod strings;
pub mod summary;
pub mod triage;
