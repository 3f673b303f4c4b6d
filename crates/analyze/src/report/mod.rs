//! What the heap holds, for a reader with or without a leak: the triage ([`triage`]:
//! top retainers, accumulation points, largest arrays), its counts ([`counts`]),
//! duplicate bitmaps ([`bitmaps`], both walking [`live_bitmaps`]) and Strings ([`strings`]), the dump in numbers
//! ([`summary`]), and the [`census`] `diff` compares. Uses every room below `run`.

pub mod bitmaps;
pub mod census;
pub mod counts;
pub mod live_bitmaps;
pub mod strings;
pub mod summary;
pub mod triage;
