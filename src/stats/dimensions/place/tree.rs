//! The search tree of an MMDB file, walked here instead of through
//! `maxminddb::Reader::lookup`, with the first 16 bits of every address
//! walked once, when the database is opened.
//!
//! `--by country` looks up each new client address, and a log of mostly
//! new addresses pays the walk on nearly every line. The tree is a binary
//! trie (MaxMind DB format 2.0, "Search Tree Section"): from a node, bit 0
//! of the address takes the left record, bit 1 the right; a record below
//! `node_count` is the next node, `node_count` itself means "no data", and
//! one above it points into the data section. So every address under the
//! same 16-bit prefix reaches the same record after 16 steps (or stops at
//! the same record earlier, when its network is a /16 or wider): a table of
//! 65,536 records per address family holds exactly what those steps would
//! give, and a lookup starts there. A network of the test database or of a
//! country database is mostly a /16 or wider, so most lookups end in the
//! table; the rest walk at most 16 (IPv4) or 112 (IPv6) more steps.
//!
//! The answer is the crate's: the same data offset for every address (the
//! tests compare them on random addresses), so a record found here is
//! decoded by the crate.

use std::net::{Ipv4Addr, Ipv6Addr};
use std::sync::Arc;

/// Bits of an address resolved by the tables.
const TABLE_BITS: u32 = 16;

/// Bytes between the search tree and the data section (format 2.0).
const DATA_SECTION_SEPARATOR: usize = 16;

/// A database's search tree with its IPv4 and IPv6 tables.
pub struct Tree {
    bytes: Arc<[u8]>,
    node_count: usize,
    record_size: u16,
    /// Whether the database holds IPv6 addresses (`ip_version` 6).
    ipv6: bool,
    /// The record reached from the IPv4 start node after the top
    /// [`TABLE_BITS`] bits of an IPv4 address, or earlier at a record that
    /// is not a node: indexed by those bits.
    v4: Box<[u32]>,
    /// The same from the root for IPv6 addresses; empty for an IPv4-only
    /// database.
    v6: Box<[u32]>,
}

impl Tree {
    /// The tree of a database the crate has opened (and so checked: every
    /// node below `node_count` lies within `bytes`). `record_size` is 24,
    /// 28 or 32, `ip_version` 4 or 6, as the crate's checks guarantee.
    pub fn new(bytes: Arc<[u8]>, node_count: u32, record_size: u16, ip_version: u16) -> Tree {
        let mut tree = Tree {
            bytes,
            node_count: node_count as usize,
            record_size,
            ipv6: ip_version == 6,
            v4: Box::default(),
            v6: Box::default(),
        };
        // IPv4 addresses live under ::/96 of an IPv6 tree: 96 left steps.
        let mut v4_start = 0;
        if tree.ipv6 {
            for _ in 0..96 {
                if v4_start >= tree.node_count {
                    break;
                }
                v4_start = tree.read(v4_start, 0);
            }
        }
        tree.v4 = tree.table(v4_start);
        if tree.ipv6 {
            tree.v6 = tree.table(0);
        }
        tree
    }

    /// The database file's bytes.
    #[cfg(test)]
    pub fn bytes(&self) -> Arc<[u8]> {
        self.bytes.clone()
    }

    /// The data offset of `ip`'s record (as `LookupResult::offset` gives
    /// it), `None` when the database has no data for it.
    #[inline]
    pub fn v4(&self, ip: Ipv4Addr) -> Option<usize> {
        let bits = ip.to_bits();
        let start = self.v4.get((bits >> (32 - TABLE_BITS)) as usize)?;
        self.finish(
            *start,
            u128::from(bits) << (128 - 32 + TABLE_BITS),
            32 - TABLE_BITS,
        )
    }

    /// [`Tree::v4`] for an IPv6 address (an IPv4-only database has none).
    #[inline]
    pub fn v6(&self, ip: Ipv6Addr) -> Option<usize> {
        let bits = ip.to_bits();
        let start = self.v6.get((bits >> (128 - TABLE_BITS)) as usize)?;
        self.finish(*start, bits << TABLE_BITS, 128 - TABLE_BITS)
    }

    /// Walks from `node` along the top `left` bits of `bits`, to the data
    /// offset of the record where it stops.
    #[inline]
    fn finish(&self, node: u32, bits: u128, left: u32) -> Option<usize> {
        let mut node = node as usize;
        let mut bits = bits;
        for _ in 0..left {
            if node >= self.node_count {
                break;
            }
            node = self.read(node, (bits >> 127) as usize);
            bits <<= 1;
        }
        // Below node_count the bits ran out inside the tree, at it there is
        // no data, and a data pointer counts from the tree's end, before
        // the separator (the crate's offsets count from after it; it finds
        // no record for a pointer into the separator either).
        node.checked_sub(self.node_count + DATA_SECTION_SEPARATOR)
    }

    /// Every record reached after [`TABLE_BITS`] steps from `root`, by
    /// those bits: a record met earlier covers all the entries under it.
    fn table(&self, root: usize) -> Box<[u32]> {
        let mut table = vec![0u32; 1 << TABLE_BITS].into_boxed_slice();
        self.fill(&mut table, root, 0, 0);
        table
    }

    fn fill(&self, table: &mut [u32], node: usize, depth: u32, prefix: usize) {
        if depth == TABLE_BITS || node >= self.node_count {
            let span = 1 << (TABLE_BITS - depth);
            let from = prefix << (TABLE_BITS - depth);
            table[from..from + span].fill(node as u32);
            return;
        }
        for bit in 0..2 {
            let child = self.read(node, bit);
            self.fill(table, child, depth + 1, prefix << 1 | bit);
        }
    }

    /// Record `index` (0 left, 1 right) of node `node`; a node past the end
    /// of the bytes (which the crate's checks rule out) reads as "no data".
    #[inline]
    fn read(&self, node: usize, index: usize) -> usize {
        let word = |offset: usize| {
            self.bytes
                .get(offset..offset + 4)
                .and_then(|b| <[u8; 4]>::try_from(b).ok())
                .map(u32::from_be_bytes)
        };
        let record = match self.record_size {
            24 => word(node * 6 + index * 2).map(|w| (w >> ((1 - index) * 8)) & 0xFF_FFFF),
            28 => word(node * 7 + index * 3).map(|w| {
                if index == 0 {
                    (w >> 8) | ((w << 20) & 0x0F00_0000)
                } else {
                    w & 0x0FFF_FFFF
                }
            }),
            _ => word(node * 8 + index * 4),
        };
        record.map_or(self.node_count, |r| r as usize)
    }
}
