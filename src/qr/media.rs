//! The label-printer media `qrtag qr --printer NAME` knows, with each
//! figure's source. One table in one file, so that it can be joined with the
//! sheet templates of `qrtag print`, which list the same stock as PDF pages.
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

const INCH_UM: u32 = 25_400;

/// The built-in media, in the order `--printer` lists them.
pub const MEDIA: &[Media] = &[
    Media {
        name: "brother-62",
        description: "Brother QL, 62 mm continuous tape (DK-22205)",
        form: Form::Continuous,
        width_um: 62_000,
        length_um: 62_000,
        // 696 printable of 732 dots at 300 dpi: 18 dots (1.5 mm) each side.
        margin_um: 1_500,
        source: "Brother QL-800 series Raster Command Reference, media table (62 mm: 732 dots, 696 printable)",
    },
    Media {
        name: "brother-29",
        description: "Brother QL, 29 mm continuous tape (DK-22210)",
        form: Form::Continuous,
        width_um: 29_000,
        length_um: 29_000,
        // 306 printable of 342 dots at 300 dpi.
        margin_um: 1_500,
        source: "Brother QL-800 series Raster Command Reference, media table (29 mm: 342 dots, 306 printable)",
    },
    Media {
        name: "brother-62x29",
        description: "Brother QL, 62 × 29 mm die-cut labels (DK-11209)",
        form: Form::DieCut,
        width_um: 62_000,
        length_um: 29_000,
        // 696 × 271 printable of 732 × 341 dots: 1.5 mm across, 3 mm along.
        // One border for every side, the larger: the code is bound by the
        // 29 mm length anyway.
        margin_um: 3_000,
        source: "Brother QL-800 series Raster Command Reference, media table (62 × 29 mm: 732 × 341 dots, 696 × 271 printable)",
    },
    Media {
        name: "dymo-25x54",
        description: "Dymo LabelWriter, 25 × 54 mm labels (11352)",
        form: Form::DieCut,
        width_um: 25_000,
        length_um: 54_000,
        // Dymo publishes no printable area per label; 1 mm is qrtag's own
        // allowance for where the printer registers the label.
        margin_um: 1_000,
        source: "Dymo LabelWriter label catalogue, 11352 return address labels, 25 × 54 mm",
    },
    Media {
        name: "zebra-4x6",
        description: "Zebra, 4 × 6 in shipping labels",
        form: Form::DieCut,
        width_um: 4 * INCH_UM,
        length_um: 6 * INCH_UM,
        // Zebra desktop printers print the full width of a 4 in label; 1 mm
        // is qrtag's allowance for label registration.
        margin_um: 1_000,
        source: "Zebra Z-Select 4000D / ZD420 label specifications, 4.00 × 6.00 in (812 × 1218 dots at 203 dpi)",
    },
    Media {
        name: "zebra-2x1",
        description: "Zebra, 2 × 1 in labels",
        form: Form::DieCut,
        width_um: 2 * INCH_UM,
        length_um: INCH_UM,
        margin_um: 1_000,
        source: "Zebra Z-Select 4000D label specifications, 2.00 × 1.00 in (406 × 203 dots at 203 dpi)",
    },
];

impl Media {
    /// The stock named `name` (case-insensitive).
    pub fn find(name: &str) -> Option<&'static Media> {
        MEDIA.iter().find(|m| m.name.eq_ignore_ascii_case(name))
    }

    /// The names, for a message listing what `--printer` takes.
    pub fn names() -> String {
        MEDIA.iter().map(|m| m.name).collect::<Vec<_>>().join(", ")
    }

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dots_match_the_manufacturers_figures() {
        let dots = |name: &str, dpi| Media::find(name).expect("known").dots(dpi);
        assert_eq!(dots("zebra-4x6", 203), (812, 1218));
        assert_eq!(dots("zebra-2x1", 203), (406, 203));
        assert_eq!(dots("zebra-4x6", 300), (1200, 1800));
        assert_eq!(dots("brother-62", 300).0, 732);
        assert_eq!(dots("brother-29", 300).0, 342);
        assert_eq!(dots("brother-62x29", 300), (732, 342));
        assert_eq!(dots("dymo-25x54", 300), (295, 637));
    }

    #[test]
    fn brother_printable_widths_are_the_published_ones() {
        for (name, printable) in [("brother-62", 696), ("brother-29", 306)] {
            let media = Media::find(name).expect("known");
            let (width, _) = media.dots(300);
            assert_eq!(width - 2 * media.margin_dots(300), printable, "{name}");
        }
    }

    #[test]
    fn names_are_unique_lower_case_and_found_in_any_case() {
        for media in MEDIA {
            assert_eq!(media.name, media.name.to_ascii_lowercase());
            assert!(!media.name.contains(' '));
            assert_eq!(Media::find(&media.name.to_uppercase()), Some(media));
            assert!(!media.source.is_empty());
            assert!(2 * media.margin_um < media.width_um.min(media.length_um));
        }
        assert_eq!(Media::find("brother"), None);
        assert!(Media::names().starts_with("brother-62, brother-29"));
    }
}
