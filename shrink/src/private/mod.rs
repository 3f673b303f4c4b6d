//! Private packages (`--private`): no String value and no pixel leaves the dump except
//! those the analysis reads. `kept` is the one list of what stays (the analyzer's tests
//! check it against what it reads), `replace` what the rest becomes.

pub mod kept;
pub mod replace;

pub use kept::{KeptFields, KEPT};
pub use replace::Key;
