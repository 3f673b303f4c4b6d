//! The per-app-version view when its groups are too many to follow in memory: the
//! database counts each group's occurrences and packages per version (one pass, a group's
//! versions at a time), from which [`Ranking`] keeps only what each version's lists show
//! and counts the rest; then only the listed groups' rows are folded, and the view made of
//! them is given the counts of every group ([`Ranking::count`]). The lists are the same as
//! a fold of every row gives: a group listed is among the first by the same order.

use std::cmp::Reverse;
use std::collections::{BTreeMap, HashMap};

use super::{ordered, View};
use crate::limits;
use crate::store::{AppVersion, VersionRanking};
use crate::top_n::TopN;

/// A group's place in a version's list: new ones first, then those back, then by
/// packages, occurrences, signature (the order of the view's lists).
type Place = (
    Reverse<bool>,
    Reverse<bool>,
    Reverse<u64>,
    Reverse<u64>,
    String,
);

/// A group's place by its size alone: packages, occurrences, signature (gone groups, and
/// those without a version).
type Size = (Reverse<u64>, Reverse<u64>, String);

/// One version shown: the first groups of its lists, and how many there are.
struct Shown {
    groups: TopN<Place>,
    new: u64,
    gone: TopN<Size>,
}

/// What the view's lists show, picked from every group's counts per version.
pub struct Ranking {
    max_groups: usize,
    max_versions: usize,
    /// Version value (as the lists show it) → its place in the order.
    rank: HashMap<String, usize>,
    /// The value of each version in the order.
    order: Vec<String>,
    /// The first version shown.
    first_shown: usize,
    shown: Vec<Shown>,
    /// Groups of the packages without a version.
    apart: TopN<Size>,
    /// Groups seen.
    groups: u64,
}

impl Ranking {
    /// Keeps what a view of the latest `max_versions` versions, `max_groups` groups per
    /// list, shows.
    pub fn new(max_versions: usize, max_groups: usize) -> Ranking {
        Ranking {
            max_groups,
            max_versions,
            rank: HashMap::new(),
            order: Vec::new(),
            first_shown: 0,
            shown: Vec::new(),
            apart: TopN::new(max_groups),
            groups: 0,
        }
    }

    /// Groups seen.
    pub fn groups(&self) -> u64 {
        self.groups
    }

    /// Gives `view`, made of the listed groups' rows alone, the counts of every group.
    pub fn count(&self, view: &mut View) {
        for (v, s) in view.versions.iter_mut().zip(&self.shown) {
            v.groups_seen = s.groups.offered();
            v.new_groups = s.new;
            v.groups_left_out = v.groups_seen.saturating_sub(v.groups.len() as u64);
            v.gone_left_out = s.gone.offered().saturating_sub(v.gone.len() as u64);
        }
        if let Some(v) = &mut view.no_version {
            v.groups_seen = self.apart.offered();
            v.groups_left_out = v.groups_seen.saturating_sub(v.groups.len() as u64);
        }
    }
}

/// Fed by [`crate::store::Store::ranked_versions`]: the versions, then every group's
/// counts per version; it names the groups whose rows the store then reads.
impl VersionRanking for Ranking {
    /// Learns the versions' order, before any group.
    fn versions(&mut self, recorded: &[AppVersion]) {
        let (order, _) = ordered(recorded);
        self.first_shown = order.len().saturating_sub(self.max_versions);
        self.order = order.into_iter().map(|(v, _, _)| v).collect();
        self.rank = self
            .order
            .iter()
            .enumerate()
            .map(|(i, v)| (v.clone(), i))
            .collect();
        self.shown = (self.first_shown..self.order.len())
            .map(|_| Shown {
                groups: TopN::new(self.max_groups),
                new: 0,
                gone: TopN::new(self.max_groups),
            })
            .collect();
    }

    /// One group's (version as recorded, occurrences, packages), every version it has:
    /// offered to the lists of the versions shown it is in (new, back, or neither), and to
    /// the gone list of the version after each it is in, when that one has none of it.
    fn group(&mut self, signature: &str, cells: &[(String, i64, i64)]) {
        self.groups += 1;
        // As the lists show them: values recorded before the caps, cut, fall together (a
        // package has one version, so its packages are counted once).
        let mut by: BTreeMap<String, (u64, u64)> = BTreeMap::new();
        for (value, occurrences, packages) in cells {
            let e = by.entry(limits::column(value).into_owned()).or_default();
            e.0 += (*occurrences).max(0) as u64;
            e.1 += (*packages).max(0) as u64;
        }
        let mut ranks: Vec<usize> = by
            .keys()
            .filter_map(|v| self.rank.get(v).copied())
            .collect();
        ranks.sort_unstable();
        for (value, &(occurrences, packages)) in &by {
            let size = (
                Reverse(packages),
                Reverse(occurrences),
                signature.to_string(),
            );
            if value.is_empty() {
                self.apart.offer(size);
                continue;
            }
            let Some(&i) = self.rank.get(value) else {
                continue;
            };
            let next = i + 1;
            if next >= self.first_shown
                && next < self.order.len()
                && !by.contains_key(&self.order[next])
            {
                self.shown[next - self.first_shown].gone.offer(size.clone());
            }
            if i < self.first_shown {
                continue;
            }
            let before = ranks[..ranks.partition_point(|&r| r < i)].last().copied();
            let new = before.is_none();
            let back = before.is_some_and(|b| b + 1 < i);
            let shown = &mut self.shown[i - self.first_shown];
            shown.new += u64::from(new);
            shown
                .groups
                .offer((Reverse(new), Reverse(back), size.0, size.1, size.2));
        }
    }

    /// The signatures of every group a list shows, each once.
    fn listed(&self) -> Vec<String> {
        let mut sigs: Vec<String> = self
            .shown
            .iter()
            .flat_map(|s| {
                s.groups
                    .iter()
                    .map(|p| p.4.clone())
                    .chain(s.gone.iter().map(|g| g.2.clone()))
            })
            .chain(self.apart.iter().map(|g| g.2.clone()))
            .collect();
        sigs.sort_unstable();
        sigs.dedup();
        sigs
    }
}
