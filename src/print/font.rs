//! The caption font: DejaVu Sans Mono, embedded, because keys mix `0`/`O`
//! and `1`/`l`/`I`, which it draws apart (a zero with a dot inside, a
//! serifed `I`, an `l` with a tail) and a viewer's substitute might not.

use std::sync::LazyLock;

use ab_glyph::{Font as _, FontRef};

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
}
