//! What the no-leak pages ([`crate::no_leak`]) count beside the groups.

use super::{DbResult, Store};

/// Packages whose recorded analysis has a triage and found no leak, yet are in no no-leak
/// group: none of their top retainers has a path from a GC root. By the primary and
/// unique keys of `triages`, `retainers` and the `leaks_by_package` index.
const UNGROUPED: &str = "SELECT COUNT(*) FROM triages t \
     WHERE NOT EXISTS (SELECT 1 FROM retainers r WHERE r.package_id = t.package_id) \
     AND NOT EXISTS (SELECT 1 FROM leaks l WHERE l.package_id = t.package_id)";

impl Store {
    /// How many packages without a leak are in no no-leak group (see [`UNGROUPED`]).
    pub async fn no_leak_ungrouped(&self) -> DbResult<u64> {
        let n: i64 = on!(self, pool => sqlx::query_scalar(UNGROUPED).fetch_one(pool).await)?;
        Ok(n.max(0) as u64)
    }
}
