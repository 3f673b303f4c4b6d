//! "Did you mean `inspect`?": a first argument that names no file but is a typing slip
//! away from a subcommand.

use clap::CommandFactory;

use crate::cli::Cli;

/// The subcommand `word` was probably meant to be: the nearest by edit distance, when it
/// is at most two edits away (one for names of up to four letters) and `word` is not a
/// path (no `/`, no `.`).
pub fn subcommand(word: &str) -> Option<String> {
    if word.is_empty() || word.contains(['/', '.']) {
        return None;
    }
    let lower = word.to_lowercase();
    Cli::command()
        .get_subcommands()
        .filter(|c| !c.is_hide_set())
        .map(|c| c.get_name().to_string())
        // The subcommand itself is clap's to take.
        .filter(|name| name != word)
        .map(|name| (distance(&lower, &name), name))
        .filter(|(d, name)| *d <= if name.len() <= 4 { 1 } else { 2 })
        .min()
        .map(|(_, name)| name)
}

/// Levenshtein distance with adjacent transpositions counted as one edit.
fn distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let mut prev2 = vec![0; b.len() + 1];
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for i in 1..=a.len() {
        let mut cur = vec![i; b.len() + 1];
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            cur[j] = (prev[j] + 1).min(cur[j - 1] + 1).min(prev[j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                cur[j] = cur[j].min(prev2[j - 2] + 1);
            }
        }
        prev2 = std::mem::replace(&mut prev, cur);
    }
    prev[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slips_are_caught_and_other_words_are_not() {
        assert_eq!(subcommand("inspekt").as_deref(), Some("inspect"));
        assert_eq!(subcommand("verfiy").as_deref(), Some("verify"));
        assert_eq!(subcommand("Batch").as_deref(), Some("batch"));
        assert_eq!(subcommand("bach").as_deref(), Some("batch"));
        assert_eq!(subcommand("uplaod").as_deref(), Some("upload"));
        assert_eq!(subcommand("dump"), None);
        assert_eq!(subcommand("inspect"), None);
        assert_eq!(subcommand("inspekt.hprof"), None);
        assert_eq!(subcommand("dir/inspekt"), None);
        assert_eq!(distance("kitten", "sitting"), 3);
        assert_eq!(distance("ab", "ba"), 1);
    }
}
