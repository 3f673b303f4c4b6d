//! What an object costs: the dominator tree ([`dominators`]), every object's retained
//! size from it ([`subtrees`]), the native bytes registered for objects
//! ([`native_size`]), and shallow sizes by class ([`by_class`]). Uses `base` and `heap`.

pub mod by_class;
pub mod dominators;
pub mod native_size;
pub mod subtrees;
