//! Hash maps and sets for keys a dump chooses (object and class ids, lengths, native
//! pointers, node numbers): seeded at random per map, so that a dump cannot bring a set of
//! keys that all fall into one bucket and make every insert walk them (FxHash, fast and
//! unseeded, lets a dump pick such keys in advance). foldhash's seeding defeats keys
//! chosen in advance, not an attacker who studies one server's timings at length.

pub type Map<K, V> = std::collections::HashMap<K, V, foldhash::fast::RandomState>;
pub type Set<K> = std::collections::HashSet<K, foldhash::fast::RandomState>;
