//! More than one dump: [`diff`] of two (by the census each analysis takes, see
//! [`crate::report::census`]) and [`growth`] over a repeated scenario. Uses `run` to analyze each dump, and the rooms
//! below it.

pub mod diff;
pub mod growth;
