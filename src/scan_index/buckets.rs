//! Keys grouped by their all-time scans in power-of-two buckets, so that
//! the busiest keys since a day can be found without ranking every key.
//!
//! A key with `s` scans (`s ≥ 1`) is in bucket `floor(log2(s))`, which
//! holds the keys with `2^b ≤ s < 2^(b+1)`. A key's scans since any day are
//! at most its scans of all time, so no key in bucket `b` or below has more
//! than `2^(b+1) - 1` scans since any day: once `n` keys with at least
//! `2^(b+1)` recent scans are found, the buckets from `b` down cannot
//! change the answer. Real traffic is skewed (a few posters are scanned a
//! lot), so [`super::IndexState::top_keys`] visits a few thousand keys of a
//! million; traffic spread evenly over the keys puts them all in a few
//! buckets, and then it visits most of them, no worse than one pass.
//!
//! Kept in O(1) per counted scan: a key moves only when its scans reach a
//! power of two, by a swap-remove from one bucket and a push to the next.
//! Not stored in the checkpoint: rebuilt from the keys' scans on load.

/// Marks a key without scans, in no bucket.
const NONE: u32 = u32::MAX;

/// The buckets of every key with at least one scan. Pure.
#[derive(Debug, Clone, Default)]
pub(super) struct ScanBuckets {
    /// `buckets[b]`: the ids of the keys with `2^b ≤ scans < 2^(b+1)`, in
    /// no particular order.
    buckets: Vec<Vec<u32>>,
    /// Per key id, where the key is in its bucket (which its scans say);
    /// [`NONE`] for a key without scans. Shorter than the keys when the
    /// last keys have none.
    slot: Vec<u32>,
}

/// The bucket of a key with `scans ≥ 1` scans.
fn bucket_of(scans: u64) -> usize {
    scans.ilog2() as usize
}

impl ScanBuckets {
    /// Key `id` now has `scans` scans, one more than before: moves it to the
    /// next bucket when that crossed a power of two.
    pub fn counted(&mut self, id: u32, scans: u64) {
        if scans.is_power_of_two() {
            if scans > 1 {
                self.remove(id, bucket_of(scans) - 1);
            }
            self.push(id, bucket_of(scans));
        }
    }

    /// Puts a key with `scans` scans (read back from a checkpoint, not in
    /// any bucket yet) where it belongs.
    pub fn place(&mut self, id: u32, scans: u64) {
        if scans > 0 {
            self.push(id, bucket_of(scans));
        }
    }

    fn push(&mut self, id: u32, bucket: usize) {
        if self.buckets.len() <= bucket {
            self.buckets.resize_with(bucket + 1, Vec::new);
        }
        let list = &mut self.buckets[bucket];
        let index = id as usize;
        if self.slot.len() <= index {
            self.slot.resize(index + 1, NONE);
        }
        // A bucket holds at most one entry per key id, all below `u32::MAX`.
        self.slot[index] = list.len() as u32;
        list.push(id);
    }

    fn remove(&mut self, id: u32, bucket: usize) {
        let at = self.slot.get(id as usize).copied().unwrap_or(NONE) as usize;
        let Some(list) = self
            .buckets
            .get_mut(bucket)
            .filter(|l| l.get(at) == Some(&id))
        else {
            debug_assert!(false, "key {id} is not where its scans say");
            return;
        };
        list.swap_remove(at);
        if let Some(&moved) = list.get(at) {
            self.slot[moved as usize] = at as u32;
        }
        self.slot[id as usize] = NONE;
    }

    /// The buckets from the busiest down, each with the least number of
    /// scans no key in it reaches (`2^(b+1)`, as `u128` so the top bucket
    /// has one too).
    pub fn busiest_first(&self) -> impl Iterator<Item = (u128, &[u32])> {
        self.buckets
            .iter()
            .enumerate()
            .rev()
            .map(|(b, ids)| (1u128 << (b + 1), ids.as_slice()))
    }

    /// Bytes the buckets hold (capacities, not the allocator's overhead).
    pub fn approx_bytes(&self) -> usize {
        let ids: usize = self.buckets.iter().map(Vec::capacity).sum();
        (ids + self.slot.capacity()) * size_of::<u32>()
            + self.buckets.capacity() * size_of::<Vec<u32>>()
    }

    /// Whether every key with scans is in its bucket once, and no other
    /// key is in any (tests).
    #[cfg(test)]
    pub fn consistent_with(&self, scans: impl Iterator<Item = u64>) -> bool {
        let mut seen = 0usize;
        for (id, s) in scans.enumerate() {
            let slot = self.slot.get(id).copied().unwrap_or(NONE);
            if s == 0 {
                if slot != NONE {
                    return false;
                }
                continue;
            }
            seen += 1;
            let in_place = self
                .buckets
                .get(bucket_of(s))
                .and_then(|l| l.get(slot as usize))
                == Some(&(id as u32));
            if !in_place {
                return false;
            }
        }
        seen == self.buckets.iter().map(Vec::len).sum::<usize>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_move_up_at_powers_of_two() {
        let mut b = ScanBuckets::default();
        let mut scans = [0u64; 3];
        for (id, times) in [(0u32, 5u64), (1, 1), (2, 8)] {
            for _ in 0..times {
                scans[id as usize] += 1;
                b.counted(id, scans[id as usize]);
            }
        }
        assert!(b.consistent_with(scans.iter().copied()));
        let got: Vec<(u128, Vec<u32>)> = b
            .busiest_first()
            .map(|(bound, ids)| (bound, ids.to_vec()))
            .collect();
        assert_eq!(
            got,
            [(16, vec![2]), (8, vec![0]), (4, vec![]), (2, vec![1])]
        );
    }

    #[test]
    fn placing_and_counting_agree() {
        let mut counted = ScanBuckets::default();
        let mut placed = ScanBuckets::default();
        let scans: Vec<u64> = (0..40).map(|i| (i * 7) % 19).collect();
        for (id, &s) in scans.iter().enumerate() {
            for n in 1..=s {
                counted.counted(id as u32, n);
            }
            placed.place(id as u32, s);
        }
        assert!(counted.consistent_with(scans.iter().copied()));
        assert!(placed.consistent_with(scans.iter().copied()));
    }
}
