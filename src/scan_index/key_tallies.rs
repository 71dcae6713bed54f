//! Every link's breakdown counts in a few large vectors instead of one
//! allocation per link (pure).
//!
//! A million links each with its own boxed slice, regrown by one entry per
//! new value, cost more in the allocator (a header and rounding per slice,
//! and the freed smaller slices it keeps) than the entries themselves:
//! issue 21 measured resident memory 1.50× the index's without breakdowns
//! while the tables alone were 1.21×. Here the links are grouped by id in
//! blocks of [`BLOCK`]; a block holds its links' entries back to back in one
//! vector, each link's end in a fixed array, so a link costs 4 bytes beside
//! its entries and nothing while it has none. A new entry shifts the rest
//! of its block (a few kilobytes) and the block grows by an eighth at a
//! time, not doubling, so its spare room stays under an eighth.

use super::breakdowns::{Tag, Values, check_entries, find_slot};

/// Links per block: small enough that shifting a block's tail is a few
/// kilobytes, large enough that a block's own overhead (its vector and its
/// ends) is a few bytes per link.
pub(super) const BLOCK: usize = 64;

/// A count this large is kept in the excess map: the entry holds it as
/// saturated.
pub(super) const SATURATED: u32 = 0xFFFF;

#[derive(Debug, Clone)]
struct Block {
    /// `ends[i]`: where the block's `i`th link's entries end in `entries`
    /// (they start at the previous link's end, or 0). Only the first
    /// [`KeyTallies::len`]'s share of them is meaningful.
    ends: [u32; BLOCK],
    /// Each link's `tag << 16 | count`, sorted by tag, links in id order.
    entries: Vec<u32>,
}

/// The breakdown counts of links by id, `0..len`.
#[derive(Debug, Clone, Default)]
pub(super) struct KeyTallies {
    blocks: Vec<Block>,
    len: usize,
}

impl KeyTallies {
    /// Links held (a link past them has no counts).
    pub(super) fn len(&self) -> usize {
        self.len
    }

    /// The entries of the link with id `id` (empty for one without).
    pub(super) fn get(&self, id: u32) -> &[u32] {
        let id = id as usize;
        if id >= self.len {
            return &[];
        }
        let block = &self.blocks[id / BLOCK];
        let i = id % BLOCK;
        let start = if i == 0 { 0 } else { block.ends[i - 1] };
        &block.entries[start as usize..block.ends[i] as usize]
    }

    /// Every link's entries, by id.
    pub(super) fn iter(&self) -> impl Iterator<Item = &[u32]> {
        (0..self.len).map(|id| self.get(id as u32))
    }

    /// Makes room for ids up to `id`, each with no entries.
    fn extend_to(&mut self, id: usize) {
        while self.len <= id {
            let i = self.len % BLOCK;
            if i == 0 {
                self.blocks.push(Block {
                    ends: [0; BLOCK],
                    entries: Vec::new(),
                });
            }
            let Some(block) = self.blocks.last_mut() else {
                return;
            };
            block.ends[i] = if i == 0 { 0 } else { block.ends[i - 1] };
            self.len += 1;
        }
    }

    /// Counts one scan of link `id` under `tag`, or under its dimension's
    /// "other" when the link keeps `cap` values of it already. Returns the
    /// tag whose excess grows when its entry is saturated.
    pub(super) fn bump(&mut self, id: u32, tag: Tag, cap: usize) -> Option<Tag> {
        let id = id as usize;
        self.extend_to(id);
        let held = self.len;
        let block = &mut self.blocks[id / BLOCK];
        let i = id % BLOCK;
        let start = if i == 0 {
            0
        } else {
            block.ends[i - 1] as usize
        };
        let end = block.ends[i] as usize;
        let (tag, found) = find_slot(&block.entries[start..end], tag, cap);
        match found {
            Ok(j) if block.entries[start + j] & SATURATED == SATURATED => Some(tag),
            Ok(j) => {
                block.entries[start + j] += 1;
                None
            }
            Err(j) => {
                let entries = &mut block.entries;
                if entries.len() == entries.capacity() {
                    entries.reserve_exact(entries.len() / 8 + 16);
                }
                entries.insert(start + j, u32::from(tag) << 16 | 1);
                // Links of this block up to the last one held.
                let last = (held - (id - i)).min(BLOCK);
                for e in &mut block.ends[i..last] {
                    *e += 1;
                }
                None
            }
        }
    }

    /// Adds the next link's entries, read back from a checkpoint: sorted by
    /// tag, each tag known, no count of 0.
    pub(super) fn push(&mut self, entries: &[u32], values: &Values) -> Result<(), &'static str> {
        check_entries(entries, values)?;
        let id = self.len;
        self.extend_to(id);
        let Some(block) = self.blocks.last_mut() else {
            return Err("a breakdown's counts");
        };
        block.entries.extend_from_slice(entries);
        block.ends[id % BLOCK] =
            u32::try_from(block.entries.len()).map_err(|_| "a breakdown's counts")?;
        Ok(())
    }

    /// Trims each block's spare room (after a checkpoint is read).
    pub(super) fn shrink_to_fit(&mut self) {
        self.blocks.shrink_to_fit();
        for b in &mut self.blocks {
            b.entries.shrink_to_fit();
        }
    }

    /// Bytes of memory held.
    pub(super) fn approx_bytes(&self) -> usize {
        self.blocks.capacity() * std::mem::size_of::<Block>()
            + self
                .blocks
                .iter()
                .map(|b| b.entries.capacity() * 4)
                .sum::<usize>()
    }
}

#[cfg(test)]
mod tests {
    use super::super::breakdowns::{KEY_CAP, Tally};
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Any sequence of scans counts as one boxed tally per link does.
        #[test]
        fn blocks_count_as_a_tally_per_link(
            scans in prop::collection::vec((0u32..200, 0u16..400, 1usize..4), 0..2000)
        ) {
            let mut blocks = KeyTallies::default();
            let mut each: Vec<Tally> = Vec::new();
            for (id, tag, cap) in scans {
                let i = id as usize;
                if each.len() <= i {
                    each.resize_with(i + 1, Tally::default);
                }
                prop_assert_eq!(blocks.bump(id, tag, cap), each[i].bump(tag, cap));
            }
            prop_assert_eq!(blocks.len(), each.len());
            for (id, t) in each.iter().enumerate() {
                prop_assert_eq!(blocks.get(id as u32), t.entries());
            }
            prop_assert!(blocks.get(blocks.len() as u32).is_empty());
            // Every tag below 400 known: the heat cells, the devices', and
            // the first OS values'.
            let mut values = Values::default();
            for i in 0..15 {
                values.intern(0, &format!("d{i}"));
            }
            for i in 0..216 {
                values.intern(1, &format!("o{i}"));
            }
            let mut back = KeyTallies::default();
            for e in blocks.iter() {
                prop_assert!(back.push(e, &values).is_ok());
            }
            back.shrink_to_fit();
            prop_assert!(back.iter().eq(blocks.iter()));
        }
    }

    #[test]
    fn a_link_without_scans_costs_nothing_beside_its_block() {
        let mut t = KeyTallies::default();
        assert_eq!(t.bump(130, 5, KEY_CAP), None);
        assert_eq!(t.len(), 131);
        assert_eq!(t.blocks.len(), 3);
        assert!(t.get(129).is_empty());
        assert_eq!(t.get(130), &[5 << 16 | 1]);
        assert_eq!(t.bump(0, 5, KEY_CAP), None);
        assert_eq!(t.get(0), &[5 << 16 | 1]);
        assert_eq!(t.get(130), &[5 << 16 | 1]);
    }
}
