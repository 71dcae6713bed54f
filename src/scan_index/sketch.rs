//! An approximate count of distinct scanners in fixed memory: a
//! HyperLogLog sketch with 2^12 one-byte registers (4 KiB), whose
//! relative standard error is 1.04 / √4096 ≈ 1.6%.
//!
//! The exact sets behind unique scanners grew with every scan of a
//! scanner that drops its cookie (a new tracking ID each time): 2M such
//! scans of one link held hundreds of megabytes. A link (and the total)
//! is counted exactly up to a threshold ([`super::index`]) and only the
//! scanners beyond it go into a sketch, so a link with few scanners,
//! nearly every one, keeps its exact count.
//!
//! The estimate is Ertl's improved estimator ("New cardinality
//! estimation algorithms for HyperLogLog sketches", 2017) over the
//! registers' histogram, kept up to date as registers change: accurate
//! from a handful of scanners to billions with no bias tables, and cheap
//! enough (one pass over 54 counts) to refresh whenever a register moves.
//! Pure.

/// Registers: 2^12.
pub const PRECISION: u32 = 12;
const M: usize = 1 << PRECISION;
/// Bits of the hash left after the register's index.
const Q: u32 = 64 - PRECISION;
/// The largest register value, `Q + 1`.
const MAX_RANK: u8 = Q as u8 + 1;

/// The relative standard error of [`Sketch::estimate`], in percent
/// (1.04 / √4096).
pub const STANDARD_ERROR_PERCENT: f64 = 1.625;

/// A register-wise set of distinct 64-bit values. Pure.
#[derive(Clone, PartialEq, Eq)]
pub struct Sketch {
    registers: Box<[u8]>,
    /// How many registers hold each value `0..=MAX_RANK`.
    histogram: [u32; MAX_RANK as usize + 1],
}

impl std::fmt::Debug for Sketch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sketch")
            .field("estimate", &self.estimate())
            .finish_non_exhaustive()
    }
}

impl Default for Sketch {
    fn default() -> Sketch {
        let mut histogram = [0; MAX_RANK as usize + 1];
        histogram[0] = M as u32;
        Sketch {
            registers: vec![0; M].into_boxed_slice(),
            histogram,
        }
    }
}

/// Why bytes are not a sketch's registers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Malformed(pub &'static str);

/// A fixed 64-bit mixer (SplitMix64's finalizer): the scanners are
/// already hashes, but the register index and rank must not depend on
/// how they were made.
fn mix(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

impl Sketch {
    pub fn new() -> Sketch {
        Sketch::default()
    }

    /// Adds `value`; true when a register changed (and with it, perhaps,
    /// the estimate).
    pub fn insert(&mut self, value: u64) -> bool {
        let h = mix(value);
        let index = (h >> Q) as usize;
        let rest = h << PRECISION;
        let rank = (rest.leading_zeros() + 1).min(u32::from(MAX_RANK)) as u8;
        let old = self.registers[index];
        if rank <= old {
            return false;
        }
        self.registers[index] = rank;
        self.histogram[usize::from(old)] -= 1;
        self.histogram[usize::from(rank)] += 1;
        true
    }

    /// The number of distinct values inserted, within about
    /// [`STANDARD_ERROR_PERCENT`].
    pub fn estimate(&self) -> u64 {
        let m = M as f64;
        let c = &self.histogram;
        let mut z = m * tau(1.0 - f64::from(c[usize::from(MAX_RANK)]) / m);
        for k in (1..usize::from(MAX_RANK)).rev() {
            z = 0.5 * (z + f64::from(c[k]));
        }
        z += m * sigma(f64::from(c[0]) / m);
        let alpha = 1.0 / (2.0 * std::f64::consts::LN_2);
        (alpha * m * m / z).round() as u64
    }

    /// The registers, what a checkpoint stores.
    pub fn registers(&self) -> &[u8] {
        &self.registers
    }

    /// A sketch of [`Self::registers`]' bytes.
    pub fn from_registers(bytes: &[u8]) -> Result<Sketch, Malformed> {
        if bytes.len() != M {
            return Err(Malformed("a sketch's size"));
        }
        let mut histogram = [0u32; MAX_RANK as usize + 1];
        for &r in bytes {
            *histogram
                .get_mut(usize::from(r))
                .ok_or(Malformed("a sketch's register"))? += 1;
        }
        Ok(Sketch {
            registers: bytes.into(),
            histogram,
        })
    }

    /// Bytes it holds.
    pub fn approx_bytes(&self) -> usize {
        size_of::<Sketch>() + M
    }

    /// The number of bytes [`Self::registers`] gives.
    pub const BYTES: usize = M;
}

/// Ertl's σ: the correction for empty registers.
fn sigma(mut x: f64) -> f64 {
    if x == 1.0 {
        return f64::INFINITY;
    }
    let mut y = 1.0;
    let mut z = x;
    loop {
        x *= x;
        let before = z;
        z += x * y;
        y += y;
        if z == before {
            return z;
        }
    }
}

/// Ertl's τ: the correction for registers at their largest value.
fn tau(mut x: f64) -> f64 {
    if x == 0.0 || x == 1.0 {
        return 0.0;
    }
    let mut y = 1.0;
    let mut z = 1.0 - x;
    loop {
        x = x.sqrt();
        let before = z;
        y *= 0.5;
        z -= (1.0 - x).powi(2) * y;
        if z == before {
            return z / 3.0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Distinct values from a seed, as fingerprints are: hashes.
    fn values(seed: u64, n: u64) -> impl Iterator<Item = u64> {
        (0..n).map(move |i| mix(seed ^ i.wrapping_mul(0x2545_f491_4f6c_dd1d)))
    }

    #[test]
    fn an_empty_sketch_counts_nothing_and_one_value_once() {
        let mut s = Sketch::new();
        assert_eq!(s.estimate(), 0);
        assert!(s.insert(7));
        assert!(!s.insert(7));
        assert_eq!(s.estimate(), 1);
    }

    /// Over sizes from ten to two million, every estimate is within four
    /// standard errors (a failure by chance is about 1 in 16,000 per
    /// size), and the mean error over the sizes is within one.
    #[test]
    fn estimates_are_within_the_stated_error() {
        let mut errors = Vec::new();
        for (seed, n) in [10u64, 100, 1_000, 5_000, 10_000, 20_000, 100_000, 2_000_000]
            .into_iter()
            .enumerate()
        {
            let mut s = Sketch::new();
            for v in values(seed as u64, n) {
                s.insert(v);
            }
            let error = (s.estimate() as f64 - n as f64).abs() / n as f64 * 100.0;
            assert!(error < 4.0 * STANDARD_ERROR_PERCENT, "{n}: {error}%");
            errors.push(error);
        }
        let mean = errors.iter().sum::<f64>() / errors.len() as f64;
        assert!(mean < STANDARD_ERROR_PERCENT, "{errors:?}");
    }

    proptest! {
        /// Inserting again, in any order, changes nothing; the registers
        /// read back as the same sketch; a small set is nearly exact.
        #[test]
        fn order_and_repeats_do_not_matter(
            raw in prop::collection::vec(any::<u64>(), 0..300),
            seed in any::<u64>(),
        ) {
            let mut a = Sketch::new();
            for &v in &raw {
                a.insert(v);
            }
            let mut b = Sketch::new();
            let mut shuffled = raw.clone();
            shuffled.rotate_left((seed as usize) % raw.len().max(1));
            for &v in shuffled.iter().chain(&raw) {
                b.insert(v);
            }
            prop_assert_eq!(&a, &b);
            prop_assert_eq!(Sketch::from_registers(a.registers()).expect("valid"), a.clone());
            let distinct = raw.iter().collect::<std::collections::HashSet<_>>().len() as f64;
            let got = a.estimate() as f64;
            prop_assert!((got - distinct).abs() <= 2.0 + distinct * 0.05, "{} vs {}", got, distinct);
        }
    }

    #[test]
    fn registers_out_of_range_are_refused() {
        assert!(Sketch::from_registers(&[0; 10]).is_err());
        let mut bytes = vec![0u8; Sketch::BYTES];
        bytes[3] = MAX_RANK + 1;
        assert!(Sketch::from_registers(&bytes).is_err());
    }
}
