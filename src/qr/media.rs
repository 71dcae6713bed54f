//! A label printer's media as `qrtag qr --printer NAME` draws on it: size,
//! unprinted border, and how it comes off the roll. The table of the media
//! qrtag knows is `print::stock`'s, one entry per stock beside its PDF page.
//!
//! Sizes are in micrometres so inch-based stock (Zebra) is exact; dots are
//! taken from them at the printer's resolution ([`Media::dots`]).

/// How the stock comes off the roll.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Form {
    /// Pre-cut labels of a fixed length.
    DieCut,
    /// Endless tape cut by the printer: qrtag makes a square label as long
    /// as the tape is wide, the shortest that holds a square code.
    Continuous,
}

/// One kind of label stock.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Media {
    /// What `--printer` takes (lower case, no spaces).
    pub name: &'static str,
    pub description: &'static str,
    pub form: Form,
    /// Across the print head.
    pub width_um: u32,
    /// Along the feed; for continuous tape, the width (a square label).
    pub length_um: u32,
    /// Unprinted border on each side: the code itself stays inside it, its
    /// quiet zone may reach into it (unprinted paper is light anyway).
    pub margin_um: u32,
    /// Where the figures come from.
    pub source: &'static str,
}

/// Micrometres in an inch.
pub const INCH_UM: u32 = 25_400;

impl Media {
    /// Whole dots across and along at `dpi`: every dot that fits, as the
    /// printers count them (a 4 in label is 812 dots at 203 dpi, not 813).
    pub fn dots(&self, dpi: u32) -> (u32, u32) {
        (
            um_to_dots(self.width_um, dpi),
            um_to_dots(self.length_um, dpi),
        )
    }

    /// The unprinted border in whole dots, rounded up so the code is never
    /// placed on it.
    pub fn margin_dots(&self, dpi: u32) -> u32 {
        (u64::from(self.margin_um) * u64::from(dpi)).div_ceil(u64::from(INCH_UM)) as u32
    }
}

/// Whole dots in `um` micrometres at `dpi` (rounded down).
pub fn um_to_dots(um: u32, dpi: u32) -> u32 {
    // At most 4 in × 1200 dpi; u64 keeps the product exact.
    (u64::from(um) * u64::from(dpi) / u64::from(INCH_UM)) as u32
}
