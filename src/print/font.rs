//! The caption font: DejaVu Sans Mono, embedded, because keys mix `0`/`O`
//! and `1`/`l`/`I`, which it draws apart (a zero with a dot inside, a
//! serifed `I`, an `l` with a tail) and a viewer's substitute might not.

use std::sync::LazyLock;

use ab_glyph::{Font as _, FontRef};

use super::layout::TextBox;

pub static MONO: &[u8] = include_bytes!("../../assets/fonts/DejaVuSansMono.ttf");

/// The font parsed once: measuring is per caption, thousands a run.
static PARSED: LazyLock<Option<FontRef<'static>>> =
    LazyLock::new(|| FontRef::try_from_slice(MONO).ok());

/// The width of `text` in ems, from the font's own advances.
pub fn em_width(text: &str) -> f64 {
    // The embedded file is a valid font (the unit test below loads it); the
    // fallback is the face's own advance, 1233/2048 em.
    let Some(font) = PARSED.as_ref() else {
        return text.chars().count() as f64 * 1233.0 / 2048.0;
    };
    let units = font.units_per_em().unwrap_or(2048.0);
    text.chars()
        .map(|c| f64::from(font.h_advance_unscaled(font.glyph_id(c))))
        .sum::<f64>()
        / f64::from(units)
}

/// The ink of each glyph of `text` with an outline, as `(x0, x1, top,
/// bottom)` in ems from the pen's start and the baseline (y up), the glyphs
/// set at their advances as the PDF sets them.
pub fn glyph_boxes(text: &str) -> Vec<(f64, f64, f64, f64)> {
    let Some(font) = PARSED.as_ref() else {
        return Vec::new();
    };
    let units = f64::from(font.units_per_em().unwrap_or(2048.0));
    let mut pen = 0.0;
    let mut boxes = Vec::new();
    for c in text.chars() {
        let id = font.glyph_id(c);
        if let Some(outline) = font.outline(id) {
            // ab_glyph keeps (x_min, y_max) as `min`, (x_max, y_min) as `max`.
            let b = outline.bounds;
            boxes.push((
                pen + f64::from(b.min.x) / units,
                pen + f64::from(b.max.x) / units,
                f64::from(b.min.y) / units,
                f64::from(b.max.y) / units,
            ));
        }
        pen += f64::from(font.h_advance_unscaled(id)) / units;
    }
    boxes
}

/// The descent in font units the PDF's font descriptor gives (krilla
/// writes OS/2's `sTypoDescender`), which readers such as `pdftotext` box
/// words by: 492 for the embedded face, more than `hhea`'s 483.
fn typo_descent(font: &[u8]) -> Option<f64> {
    let u16_at = |at: usize| Some(u16::from_be_bytes(font.get(at..at + 2)?.try_into().ok()?));
    let u32_at = |at: usize| Some(u32::from_be_bytes(font.get(at..at + 4)?.try_into().ok()?));
    let tables = usize::from(u16_at(4)?);
    let os2 = (0..tables)
        .map(|i| 12 + 16 * i)
        .find(|&record| font.get(record..record + 4) == Some(b"OS/2"))?;
    let offset = usize::try_from(u32_at(os2 + 8)?).ok()?;
    let descender = u16_at(offset + 70)? as i16;
    Some(-f64::from(descender))
}

/// The box a caption of `text` needs: its advances, the font's ascent and
/// descent (what a reader such as `pdftotext` boxes words by), and any
/// glyph's ink beyond them (an accent over a capital, an overhang).
pub fn text_box(text: &str) -> TextBox {
    let (ascent, descent) = PARSED
        .as_ref()
        .map_or((1901.0 / 2048.0, 492.0 / 2048.0), |f| {
            let units = f64::from(f.units_per_em().unwrap_or(2048.0));
            let hhea = -f64::from(f.descent_unscaled());
            let descent = typo_descent(MONO).map_or(hhea, |typo| typo.max(hhea));
            (f64::from(f.ascent_unscaled()) / units, descent / units)
        });
    let mut b = TextBox {
        left: 0.0,
        right: em_width(text),
        above: ascent,
        below: descent,
    };
    for (x0, x1, top, bottom) in glyph_boxes(text) {
        b.left = b.left.min(x0);
        b.right = b.right.max(x1);
        b.above = b.above.max(top);
        b.below = b.below.max(-bottom);
    }
    b
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_font_loads_and_is_monospaced() {
        assert!(PARSED.is_some());
        let one = em_width("0");
        assert!((one - 0.602).abs() < 0.01, "{one}");
        assert!((em_width("0O1lI") - 5.0 * one).abs() < 1e-9);
    }

    #[test]
    fn a_text_box_holds_every_glyph_and_the_line() {
        let plain = text_box("H83if");
        assert_eq!(plain.left, 0.0);
        assert!((plain.right - em_width("H83if")).abs() < 1e-9);
        // Descenders reach below the baseline, within the font's descent.
        let (_, _, _, bottom) = glyph_boxes("g")[0];
        assert!(bottom < -0.1 && -bottom <= plain.below, "{bottom}");
        // An accent over a capital rises above the ascent of a plain line.
        let accented = text_box("\u{c5}\u{1e9e}");
        assert!(accented.above >= plain.above);
        assert!(glyph_boxes(" ").is_empty());
        assert_eq!(typo_descent(MONO), Some(492.0));
        assert!((plain.below - 492.0 / 2048.0).abs() < 1e-9);
    }
}
