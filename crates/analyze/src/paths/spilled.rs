//! The path search's per-node arrays written to an unnamed file through the dominators
//! ([`crate::paths::reach::Reach::spill`]), read back a few entries a path.
//!
//! The file counts as memory at the analysis's peak, so the parents are kept small: a
//! node's parent is mostly a neighbour in the dump (an object and what it holds are
//! allocated, and copied, together), so each is written as a byte, its distance in nodes
//! when within ±127, [`NO_PARENT`] for none, else [`FAR`] with the parent itself in a
//! list after them; a count of the far ones before each block of [`BLOCK`] nodes finds a
//! far parent's place. 2 bytes a node with the state, 4 more for each far parent, and 4
//! a block; when that would pass the plain layout's 5 bytes a node (4 for the parent,
//! 1 for the state), the plain layout is written instead.
//!
//! Layout: the states (a byte a node); then either the parents (4 bytes each, native
//! order), or the distances (a byte a node), the blocks' counts (4 bytes each) and the far
//! parents (4 bytes each).

use std::fs::File;

use crate::heap::index::{Node, NONE};

/// In the distances: the parent is in the far list.
const FAR: i8 = i8::MIN;
/// In the distances: no parent ([`NONE`]): a node is never its own parent.
const NO_PARENT: i8 = 0;
/// Nodes a count of far parents covers.
const BLOCK: usize = 64;
/// Nodes written at a time.
const CHUNK: usize = 1 << 16;

/// A node's parent as a distance byte, if it fits one.
#[inline]
fn near(node: usize, parent: Node) -> Option<i8> {
    if parent == NONE {
        return Some(NO_PARENT);
    }
    let d = parent as i64 - node as i64;
    i8::try_from(d).ok().filter(|&d| d != FAR && d != NO_PARENT)
}

/// The arrays in their file.
pub struct Spilled {
    file: File,
    nodes: usize,
    /// Where the far parents start, for the compact layout; `None`: the plain one.
    far_at: Option<u64>,
}

impl Spilled {
    /// Writes `parent` and `state` (one entry a node each) to `file`.
    pub fn write(file: File, parent: &[Node], state: &[u8]) -> std::io::Result<Spilled> {
        let nodes = state.len();
        write_at(&file, state, 0)?;
        // Compact in one pass, given up (the file never past 5 bytes a node) for the plain
        // layout once the far parents would take more.
        let far_at = match write_compact(&file, parent)? {
            Some(far_at) => Some(far_at),
            None => {
                write_plain(&file, parent)?;
                file.set_len(5 * nodes as u64)?;
                None
            }
        };
        Ok(Spilled {
            file,
            nodes,
            far_at,
        })
    }

    /// Nodes written.
    pub fn nodes(&self) -> usize {
        self.nodes
    }

    /// A node's state; 0 when unreadable (not reached: no path shown).
    pub fn state(&self, node: Node) -> u8 {
        let mut b = [0u8; 1];
        read_at(&self.file, &mut b, node as u64).map_or(0, |()| b[0])
    }

    /// A node's parent; [`NONE`] when unreadable.
    pub fn parent(&self, node: Node) -> Node {
        self.parent_read(node).unwrap_or(NONE)
    }

    fn parent_read(&self, node: Node) -> std::io::Result<Node> {
        let (nodes, u) = (self.nodes as u64, node as u64);
        let mut word = [0u8; 4];
        let Some(far_at) = self.far_at else {
            read_at(&self.file, &mut word, nodes + u * 4)?;
            return Ok(Node::from_ne_bytes(word));
        };
        let mut b = [0u8; 1];
        read_at(&self.file, &mut b, nodes + u)?;
        match b[0] as i8 {
            NO_PARENT => return Ok(NONE),
            FAR => {}
            d => return Ok((u as i64 + d as i64) as Node),
        }
        // Its place among the far parents: those before its block, and before it in it.
        let block = u / BLOCK as u64;
        read_at(&self.file, &mut word, 2 * nodes + block * 4)?;
        let mut rank = u32::from_ne_bytes(word) as u64;
        let mut before = [0u8; BLOCK];
        let start = block * BLOCK as u64;
        let before = &mut before[..(u - start) as usize];
        read_at(&self.file, before, nodes + start)?;
        rank += before.iter().filter(|&&d| d as i8 == FAR).count() as u64;
        read_at(&self.file, &mut word, far_at + rank * 4)?;
        Ok(Node::from_ne_bytes(word))
    }
}

/// The parents after the states, 4 bytes each.
fn write_plain(file: &File, parent: &[Node]) -> std::io::Result<()> {
    let nodes = parent.len();
    let mut buf = Vec::with_capacity(CHUNK * 4);
    for (c, run) in parent.chunks(CHUNK).enumerate() {
        buf.clear();
        buf.extend(run.iter().flat_map(|p| p.to_ne_bytes()));
        write_at(file, &buf, (nodes + c * CHUNK * 4) as u64)?;
    }
    Ok(())
}

/// The parents after the states as distances, the blocks' counts and the far parents;
/// where the far ones start, or `None` (written in part) when they would bring the file
/// to the plain layout's 5 bytes a node.
fn write_compact(file: &File, parent: &[Node]) -> std::io::Result<Option<u64>> {
    let nodes = parent.len();
    let far_at = (2 * nodes + 4 * nodes.div_ceil(BLOCK)) as u64;
    if far_at >= 5 * nodes as u64 {
        return Ok(None);
    }
    // Far parents the file has room for below 5 bytes a node.
    let room = (5 * nodes as u64 - far_at - 1) / 4;
    let (mut bytes, mut counts, mut fars) = (vec![0u8; CHUNK], Vec::new(), Vec::new());
    let mut far = 0u32;
    for (c, run) in parent.chunks(CHUNK).enumerate() {
        let first = c * CHUNK;
        let far_before = far;
        counts.clear();
        fars.clear();
        for (b, (block, out)) in run.chunks(BLOCK).zip(bytes.chunks_mut(BLOCK)).enumerate() {
            counts.extend(far.to_ne_bytes());
            let at = first + b * BLOCK;
            for (i, (&p, byte)) in block.iter().zip(out).enumerate() {
                *byte = match near(at + i, p) {
                    Some(d) => d as u8,
                    None => {
                        fars.extend(p.to_ne_bytes());
                        far += 1;
                        FAR as u8
                    }
                };
            }
        }
        if far as u64 > room {
            return Ok(None);
        }
        write_at(file, &bytes[..run.len()], (nodes + first) as u64)?;
        write_at(file, &counts, (2 * nodes + first / BLOCK * 4) as u64)?;
        write_at(file, &fars, far_at + far_before as u64 * 4)?;
    }
    Ok(Some(far_at))
}

fn write_at(file: &File, buf: &[u8], at: u64) -> std::io::Result<()> {
    #[cfg(unix)]
    return std::os::unix::fs::FileExt::write_all_at(file, buf, at);
    // Elsewhere the arrays stay in memory ([`crate::paths::reach::Reach::spill`] refuses).
    #[cfg(not(unix))]
    {
        let _ = (file, buf, at);
        Err(std::io::ErrorKind::Unsupported.into())
    }
}

fn read_at(file: &File, buf: &mut [u8], at: u64) -> std::io::Result<()> {
    #[cfg(unix)]
    return std::os::unix::fs::FileExt::read_exact_at(file, buf, at);
    #[cfg(not(unix))]
    {
        let _ = (file, buf, at);
        Err(std::io::ErrorKind::Unsupported.into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The parents a node each, written and read back, and the file's length.
    fn round_trip(parent: &[Node]) -> u64 {
        let state: Vec<u8> = (0..parent.len()).map(|u| (u * 7) as u8).collect();
        let file = tempfile::tempfile().unwrap();
        let s = Spilled::write(file, parent, &state).unwrap();
        for (u, (&p, &st)) in parent.iter().zip(&state).enumerate() {
            assert_eq!(s.parent(u as Node), p, "node {u}");
            assert_eq!(s.state(u as Node), st, "node {u}");
        }
        s.file.metadata().unwrap().len()
    }

    #[test]
    fn near_parents_take_a_byte_and_far_ones_are_found_in_every_block() {
        // A list of neighbours, every node's parent 3 before it, with a far parent, a
        // root, an unreached node and one 128 away here and there across the chunks.
        let n = 3 * CHUNK + 77;
        let parent: Vec<Node> = (0..n)
            .map(|u| match u % 97 {
                0 => NONE,
                5 => NONE - 1,
                11 => (u as Node / 2) + 1_000_000,
                13 if u >= 128 => u as Node - 128,
                14 => u as Node + 127,
                _ if u >= 3 => u as Node - 3,
                _ => NONE,
            })
            .collect();
        let len = round_trip(&parent);
        let far = parent
            .iter()
            .enumerate()
            .filter(|&(u, &p)| near(u, p).is_none())
            .count();
        assert!(far > 2 * n / 97, "{far}");
        let blocks = n.div_ceil(BLOCK);
        assert_eq!(len, (2 * n + 4 * (blocks + far)) as u64);
        assert!(len < 3 * n as u64);
    }

    #[test]
    fn parents_mostly_far_are_written_plain() {
        let n = 5000;
        let parent: Vec<Node> = (0..n).map(|u| ((u * 7919) % n) as Node + 1000).collect();
        assert_eq!(round_trip(&parent), 5 * n as u64);
        assert_eq!(round_trip(&[]), 0);
    }
}
