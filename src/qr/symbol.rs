//! A QR symbol as plain modules, built through `qrcode`'s canvas with the
//! mask chosen here: the same symbol as [`super::encode`], several times
//! faster, for runs of thousands of codes (`qrtag print`).
//!
//! `QrCode::with_bits` tries all eight masks and scores each with penalty
//! functions that read every module through a bounds-wrapping accessor and,
//! for the finder-like pattern rule, allocate a boxed closure per position;
//! for the small symbols of short URLs that scoring is most of the encoding
//! time. Here each masked canvas is scored over a flat array of booleans,
//! with exactly `qrcode`'s rules and its `u16` arithmetic, and the first
//! mask with the lowest score wins as with its `min_by_key`, so the modules
//! are identical (the tests compare them over every version and level).
//! Segmentation, codewords, error correction, placement and masking
//! themselves stay `qrcode`'s.

use qrcode::canvas::{Canvas, MaskPattern};
use qrcode::{Color, QrCode};

use super::segment::Plan;
use super::{EcLevel, QrError};

/// `qrcode`'s order of trying the masks; ties go to the earlier one.
const MASKS: [MaskPattern; 8] = [
    MaskPattern::Checkerboard,
    MaskPattern::HorizontalLines,
    MaskPattern::VerticalLines,
    MaskPattern::DiagonalLines,
    MaskPattern::LargeCheckerboard,
    MaskPattern::Fields,
    MaskPattern::Diamonds,
    MaskPattern::Meadow,
];

/// A finished symbol's modules, row by row from the top left, without the
/// quiet zone.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Symbol {
    width: usize,
    dark: Vec<bool>,
}

impl Symbol {
    /// Modules per side.
    pub fn width(&self) -> usize {
        self.width
    }

    /// Row `y`, `width` modules, `true` for dark.
    pub fn row(&self, y: usize) -> &[bool] {
        &self.dark[y * self.width..(y + 1) * self.width]
    }

    /// Every module, row by row.
    pub fn modules(&self) -> &[bool] {
        &self.dark
    }

    /// Makes the modules at `(x, y)` where `clear` says so light: the
    /// square a logo covers.
    pub fn clear_where(&mut self, clear: impl Fn(usize, usize) -> bool) {
        let width = self.width;
        for (i, dark) in self.dark.iter_mut().enumerate() {
            if clear(i % width, i / width) {
                *dark = false;
            }
        }
    }
}

impl From<&QrCode> for Symbol {
    fn from(code: &QrCode) -> Self {
        Symbol {
            width: code.width(),
            dark: code
                .to_colors()
                .into_iter()
                .map(|c| c == Color::Dark)
                .collect(),
        }
    }
}

/// Encodes `text` as [`super::encode`] does, into the same modules.
pub fn encode_symbol(text: &str, ec: EcLevel) -> Result<Symbol, QrError> {
    let plan = super::plan(text.as_bytes(), ec)?;
    build_symbol(text.as_bytes(), &plan, ec)
}

/// [`super::build`] with the mask chosen by [`best_mask`].
pub fn build_symbol(text: &[u8], plan: &Plan, ec: EcLevel) -> Result<Symbol, QrError> {
    let bits = super::bits(text, plan, ec)?;
    let version = bits.version();
    let data = bits.into_bytes();
    let (codewords, ec_data) = qrcode::ec::construct_codewords(&data, version, ec.into())?;
    let mut canvas = Canvas::new(version, ec.into());
    canvas.draw_all_functional_patterns();
    canvas.draw_data(&codewords, &ec_data);
    let width = usize::from(version.width().unsigned_abs());
    Ok(Symbol {
        width,
        dark: best_mask(&canvas, width),
    })
}

/// The canvas under each mask (format information included, as `qrcode`
/// scores it), and the first with the lowest penalty.
fn best_mask(canvas: &Canvas, width: usize) -> Vec<bool> {
    let mut best: Option<(u16, Vec<bool>)> = None;
    let mut columns = vec![false; width * width];
    for mask in MASKS {
        let mut masked = canvas.clone();
        masked.apply_mask(mask);
        let dark: Vec<bool> = masked
            .into_colors()
            .into_iter()
            .map(|c| c == Color::Dark)
            .collect();
        let score = penalty(&dark, &mut columns, width);
        if best.as_ref().is_none_or(|(lowest, _)| score < *lowest) {
            best = Some((score, dark));
        }
    }
    best.map(|(_, dark)| dark).unwrap_or_default()
}

/// `qrcode`'s penalty score of a masked normal symbol: runs of five or
/// more (N1), 2 × 2 blocks (N2), finder-like patterns (N3) and the dark
/// share (N4), each as its `compute_*_penalty_score` counts it, summed in
/// `u16` with wrap-around as its release build does (only symbols far
/// larger than a short URL's come near it). `columns` is scratch space.
fn penalty(dark: &[bool], columns: &mut [bool], width: usize) -> u16 {
    for (y, row) in dark.chunks_exact(width).enumerate() {
        for (x, &d) in row.iter().enumerate() {
            columns[x * width + y] = d;
        }
    }
    let mut total: i64 = 0;
    for lines in [dark, &*columns] {
        for line in lines.chunks_exact(width) {
            total += runs(line) + finder_like(line);
        }
    }
    // `qrcode` subtracts the three finder patterns' own 9 matches a
    // direction.
    total -= 2 * 360;
    total += blocks(dark, width);
    let dark_count = dark.iter().filter(|&&d| d).count();
    let ratio = dark_count * 200 / dark.len();
    total += ratio.abs_diff(100) as i64;
    // Truncation is `u16` wrap-around: every step above is a sum.
    total as u16
}

/// N1 on one line: each run of `n` ≥ 5 equal modules costs `n - 2`.
fn runs(line: &[bool]) -> i64 {
    let mut score = 0;
    let mut run = 0;
    let mut last = None;
    for &d in line {
        if last == Some(d) {
            run += 1;
        } else {
            if run >= 5 {
                score += run - 2;
            }
            last = Some(d);
            run = 1;
        }
    }
    if run >= 5 {
        score += run - 2;
    }
    score
}

/// N3 on one line as `qrcode` counts it: dark-light-dark×3-light-dark
/// scores 40 when the (up to) four modules on either side of it inside the
/// symbol are all light.
fn finder_like(line: &[bool]) -> i64 {
    const PATTERN: [bool; 7] = [true, false, true, true, true, false, true];
    let width = line.len();
    let mut score = 0;
    for j in 0..width.saturating_sub(6) {
        if line[j..j + 7] != PATTERN {
            continue;
        }
        let before = &line[j.saturating_sub(4)..j];
        let after = &line[j + 7..(j + 11).min(width)];
        if !before.contains(&true) || !after.contains(&true) {
            score += 40;
        }
    }
    score
}

/// N2: 3 for every 2 × 2 block of one colour, overlaps counted.
fn blocks(dark: &[bool], width: usize) -> i64 {
    let rows: Vec<&[bool]> = dark.chunks_exact(width).collect();
    let mut score = 0;
    for pair in rows.windows(2) {
        for (top, bottom) in pair[0].windows(2).zip(pair[1].windows(2)) {
            let d = top[0];
            if top[1] == d && bottom[0] == d && bottom[1] == d {
                score += 3;
            }
        }
    }
    score
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::qr::encode;

    fn same(text: &str, ec: EcLevel) {
        let slow = Symbol::from(&encode(text, ec).expect("fits"));
        let fast = encode_symbol(text, ec).expect("fits");
        assert_eq!(fast, slow, "{text:?} at {ec}");
    }

    #[test]
    fn short_urls_get_qrcodes_own_modules() {
        for i in 0..60 {
            for ec in EcLevel::ALL {
                same(&format!("https://0x1f.ie/k{i:04}"), ec);
                same(&format!("HTTP://0X1F.IE/{i}Ab"), ec);
            }
        }
    }

    #[test]
    fn symbols_of_every_size_get_qrcodes_own_modules() {
        // Lengths doubling through the versions at each level, up to
        // version 40.
        let mut len = 1;
        while len <= 2900 {
            let text: String = (0..len)
                .map(|i| char::from(b'a' + (i * 7 % 26) as u8))
                .collect();
            for ec in EcLevel::ALL {
                if super::super::plan(text.as_bytes(), ec).is_ok() {
                    same(&text, ec);
                }
            }
            len = len * 2 + 1;
        }
    }

    #[test]
    fn a_penalty_line_scores_as_the_rules_say() {
        let line = |s: &str| s.bytes().map(|b| b == b'#').collect::<Vec<_>>();
        assert_eq!(runs(&line("#####.")), 3);
        assert_eq!(runs(&line(".######")), 4);
        assert_eq!(runs(&line("####.####")), 0);
        assert_eq!(finder_like(&line("#.###.#....")), 40);
        assert_eq!(finder_like(&line("#.#.###.#.#")), 0);
        assert_eq!(finder_like(&line("....#.###.#")), 40);
    }
}
