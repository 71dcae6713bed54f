//! The (key, scanner) pairs behind exact unique-scanner counts, in a flat
//! table whose slots are also the checkpoint's layout.
//!
//! The pairs are the index's largest part (millions at a million keys), and
//! a hash set had to re-insert every one of them on load: most of a
//! restart. Here the table is an ordered linear-probing table (Amble and
//! Knuth's): every pair sits at or after its home slot (the top bits of a
//! fixed hash), with no empty slot between, and the occupied slots read in
//! order are sorted by (hash, key, scanner). Sorted means a lookup stops at
//! the first larger pair, doubling the table is one pass in order, and the
//! whole structure can be checked in one pass: a checkpoint stores the raw
//! slots and a load reads them back as they are, checked, without hashing
//! any pair into place.
//!
//! Grows at 7/8 full like hashbrown, with 12-byte slots and no control
//! bytes. The hash is part of the checkpoint format: changing it needs a
//! new checkpoint version.

/// One scanner of one key. Three `u32`s rather than `(u32, u64)`, whose
/// padding would make it 16 bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Pair {
    key: u32,
    lo: u32,
    hi: u32,
}

/// An empty slot: key ids stop below `u32::MAX` ([`MAX_KEY_ID`]).
const EMPTY: Pair = Pair {
    key: u32::MAX,
    lo: 0,
    hi: 0,
};

/// Slots reserved past the end of the table.
const SPILL: usize = 64;

/// The largest key id a pair can hold.
pub(super) const MAX_KEY_ID: u32 = u32::MAX - 1;

impl Pair {
    pub fn new(key: u32, scanner: u64) -> Pair {
        Pair {
            key,
            lo: scanner as u32,
            hi: (scanner >> 32) as u32,
        }
    }

    pub fn key(self) -> u32 {
        self.key
    }

    pub fn scanner(self) -> u64 {
        u64::from(self.hi) << 32 | u64::from(self.lo)
    }

    fn is_empty(self) -> bool {
        self.key == u32::MAX
    }

    /// Fixed (it decides where a pair is in a checkpoint). The scanner is
    /// already a hash of a tracking ID; this mixes in the key.
    fn hash(self) -> u64 {
        let mut x = self.scanner() ^ u64::from(self.key).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        x ^= x >> 32;
        x = x.wrapping_mul(0xd6e8_feb8_6659_fd93);
        x ^ (x >> 32)
    }

    /// The table's order.
    fn rank(self) -> (u64, u32, u64) {
        (self.hash(), self.key, self.scanner())
    }
}

/// Why raw slots are not a table this module made.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub(super) struct Malformed(pub &'static str);

/// The set of pairs. Pure.
#[derive(Debug, Clone)]
pub(super) struct PairSet {
    /// At least `1 << bits` slots; the last pairs may run past that.
    slots: Vec<Pair>,
    bits: u32,
    len: usize,
}

impl Default for PairSet {
    fn default() -> PairSet {
        PairSet::with_bits(4)
    }
}

impl PairSet {
    fn with_bits(bits: u32) -> PairSet {
        // Room for the last pairs to run past the end without the vector
        // doubling its capacity.
        let mut slots = Vec::with_capacity((1 << bits) + SPILL);
        slots.resize(1 << bits, EMPTY);
        PairSet {
            slots,
            bits,
            len: 0,
        }
    }

    fn home(&self, p: Pair) -> usize {
        (p.hash() >> (64 - self.bits)) as usize
    }

    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether `p` is in the set.
    pub fn contains(&self, p: Pair) -> bool {
        let rank = p.rank();
        let mut i = self.home(p);
        while i < self.slots.len() && !self.slots[i].is_empty() && self.slots[i].rank() < rank {
            i += 1;
        }
        self.slots.get(i) == Some(&p)
    }

    /// Adds `p`; false if it was there.
    pub fn insert(&mut self, p: Pair) -> bool {
        if (self.len + 1) * 8 > (7 << self.bits) {
            self.grow();
        }
        let rank = p.rank();
        let mut i = self.home(p);
        while i < self.slots.len() && !self.slots[i].is_empty() && self.slots[i].rank() < rank {
            i += 1;
        }
        if self.slots.get(i) == Some(&p) {
            return false;
        }
        let mut end = i;
        while end < self.slots.len() && !self.slots[end].is_empty() {
            end += 1;
        }
        if end == self.slots.len() {
            self.slots.push(EMPTY);
        }
        self.slots.copy_within(i..end, i + 1);
        self.slots[i] = p;
        self.len += 1;
        true
    }

    /// Twice the slots, filled in one pass in order: each pair at its new
    /// home or just after the pair before it.
    fn grow(&mut self) {
        let mut bigger = PairSet::with_bits(self.bits + 1);
        let mut next = 0;
        for p in self.iter() {
            let at = bigger.home(p).max(next);
            if at == bigger.slots.len() {
                bigger.slots.push(p);
            } else {
                bigger.slots[at] = p;
            }
            next = at + 1;
        }
        bigger.len = self.len;
        *self = bigger;
    }

    /// The pairs, in the table's order.
    pub fn iter(&self) -> impl Iterator<Item = Pair> + '_ {
        self.slots.iter().copied().filter(|p| !p.is_empty())
    }

    /// What a checkpoint stores: the table's size as a power of two, and
    /// every slot (an empty one is key `u32::MAX`, scanner 0).
    pub fn raw(&self) -> (u32, &[Pair]) {
        (self.bits, &self.slots)
    }

    /// A table from [`Self::raw`]'s parts, believed only if it is one this
    /// module could have made (so a lookup finds every pair, and none is
    /// there twice) and every key id is below `keys`.
    pub fn from_raw(bits: u32, slots: Vec<Pair>, keys: usize) -> Result<PairSet, Malformed> {
        if !(4..=40).contains(&bits) || slots.len() < 1 << bits {
            return Err(Malformed("the scanners' table size"));
        }
        let set = PairSet {
            slots,
            bits,
            len: 0,
        };
        let mut len = 0;
        let mut run_start = 0;
        let mut last: Option<(u64, u32, u64)> = None;
        for (i, &p) in set.slots.iter().enumerate() {
            if p.is_empty() {
                if p != EMPTY {
                    return Err(Malformed("an empty scanner slot"));
                }
                run_start = i + 1;
                continue;
            }
            if p.key as usize >= keys {
                return Err(Malformed("a scanner of no key"));
            }
            let home = set.home(p);
            let rank = p.rank();
            if home > i || home < run_start || last.is_some_and(|l| l >= rank) {
                return Err(Malformed("a scanner out of place"));
            }
            last = Some(rank);
            len += 1;
        }
        Ok(PairSet { len, ..set })
    }

    /// Bytes the table holds.
    pub fn approx_bytes(&self) -> usize {
        self.slots.capacity() * size_of::<Pair>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::HashSet;

    proptest! {
        /// The same answers as a hash set, and the raw slots read back as
        /// the same table.
        #[test]
        fn behaves_as_a_set_and_round_trips(
            pairs in prop::collection::vec((0u32..50, 0u64..40), 0..600),
        ) {
            let mut set = PairSet::default();
            let mut want = HashSet::new();
            for &(k, s) in &pairs {
                let scanner = s.wrapping_mul(0x0123_4567_89ab_cdef);
                let p = Pair::new(k, scanner);
                prop_assert_eq!(set.contains(p), want.contains(&(k, scanner)));
                prop_assert_eq!(set.insert(p), want.insert((k, scanner)));
                prop_assert!(set.contains(p));
            }
            prop_assert_eq!(set.len(), want.len());
            let got: HashSet<(u32, u64)> = set.iter().map(|p| (p.key(), p.scanner())).collect();
            prop_assert_eq!(&got, &want);
            let (bits, slots) = set.raw();
            let back = PairSet::from_raw(bits, slots.to_vec(), 50).expect("valid");
            prop_assert_eq!(back.len(), want.len());
            prop_assert_eq!(back.iter().collect::<Vec<_>>(), set.iter().collect::<Vec<_>>());
        }
    }

    #[test]
    fn slots_out_of_order_or_of_no_key_are_refused() {
        let mut set = PairSet::default();
        for k in 0..10 {
            set.insert(Pair::new(k, u64::from(k) * 7));
        }
        let (bits, slots) = set.raw();
        assert!(PairSet::from_raw(bits, slots.to_vec(), 9).is_err());
        let mut swapped = slots.to_vec();
        let occupied: Vec<usize> = (0..swapped.len())
            .filter(|&i| !swapped[i].is_empty())
            .collect();
        swapped.swap(occupied[0], occupied[1]);
        assert!(PairSet::from_raw(bits, swapped, 10).is_err());
        // A pair twice can never be in order.
        let mut twice = slots.to_vec();
        let free = (0..twice.len())
            .find(|&i| twice[i].is_empty())
            .expect("room");
        twice[free] = twice[occupied[0]];
        assert!(PairSet::from_raw(bits, twice, 10).is_err());
        assert!(PairSet::from_raw(bits, slots[..1].to_vec(), 10).is_err());
    }
}
