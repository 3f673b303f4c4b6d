//! LeakCanary's knowledge of Android: the object inspectors and their rules
//! ([`inspect`]), the finders that say which objects leak ([`finders`], [`leaks`] by
//! Matrix's key), the known library leaks ([`library`]) as they hold on one device
//! ([`device`]), and what the heap says of the app and the device ([`metadata`]). Uses
//! `base`, `model` and `heap`.

pub mod device;
pub mod finders;
pub mod inspect;
pub mod leaks;
pub mod library;
pub mod metadata;
