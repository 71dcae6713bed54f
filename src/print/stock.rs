//! The built-in label stock: sheets as their makers publish them, and
//! label printers' media as one label per page.
//!
//! Every figure is the manufacturer's, in millimetres (inch stock converted
//! exactly); `source` names where it comes from. `tests/print.rs` holds each
//! entry against Debian's gLabels database (`glabels`) to within 1 mm and
//! names the entries gLabels lacks or disagrees on.

use super::layout::{Grid, SAFE_MARGIN};
use crate::qr::media::{Form, INCH_UM, Media};

/// Millimetres in `inches`, for US stock published in inches.
const fn inch(inches: f64) -> f64 {
    inches * 25.4
}

pub const A4: (f64, f64) = (210.0, 297.0);
pub const LETTER: (f64, f64) = (inch(8.5), inch(11.0));

/// One built-in template.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Stock {
    /// What `--template` takes (matched without regard to case).
    pub name: &'static str,
    pub description: &'static str,
    pub grid: Grid,
    /// Where the figures come from.
    pub source: &'static str,
    /// The gLabels entry (`brand`, `part`) it is checked against, if any.
    pub glabels: Option<(&'static str, &'static str)>,
    /// The same stock as a label printer's media (`qrtag qr --printer`):
    /// the label in micrometres and dots rather than a PDF page, with the
    /// printer maker's own description and figures.
    pub printer: Option<Media>,
}

/// A sheet: paper, label size, columns × rows, first label's offset, pitch
/// and corner radius, in that order.
#[allow(clippy::too_many_arguments)]
const fn sheet(
    paper: (f64, f64),
    label: (f64, f64),
    cols: u32,
    rows: u32,
    left: f64,
    top: f64,
    pitch: (f64, f64),
    radius: f64,
) -> Grid {
    Grid {
        paper_w: paper.0,
        paper_h: paper.1,
        label_w: label.0,
        label_h: label.1,
        cols,
        rows,
        left,
        top,
        h_pitch: pitch.0,
        v_pitch: pitch.1,
        radius,
        safe: SAFE_MARGIN,
    }
}

/// One label per page, the page the label's size: what label printers'
/// drivers take.
const fn roll(w: f64, h: f64, radius: f64) -> Grid {
    sheet((w, h), (w, h), 1, 1, 0.0, 0.0, (w, h), radius)
}

/// The length a continuous roll's label is cut to; `custom:` sets another.
pub const ROLL_LENGTH: f64 = 100.0;

pub const STOCK: &[Stock] = &[
    Stock {
        name: "L7160",
        description: "Avery L7160, A4, 21 labels 63.5 x 38.1 mm (3 x 7)",
        grid: sheet(A4, (63.5, 38.1), 3, 7, 7.21, 15.15, (66.04, 38.1), 1.5),
        source: "Avery UK L7160 template specification",
        glabels: Some(("Avery", "L7160")),
        printer: None,
    },
    Stock {
        name: "L7161",
        description: "Avery L7161, A4, 18 labels 63.5 x 46.6 mm (3 x 6)",
        grid: sheet(A4, (63.5, 46.6), 3, 6, 7.21, 8.7, (66.04, 46.6), 1.5),
        source: "Avery UK L7161 template specification",
        glabels: Some(("Avery", "L7161")),
        printer: None,
    },
    Stock {
        name: "L7163",
        description: "Avery L7163, A4, 14 labels 99.1 x 38.1 mm (2 x 7)",
        grid: sheet(A4, (99.1, 38.1), 2, 7, 4.65, 15.15, (101.6, 38.1), 1.5),
        source: "Avery UK L7163 template specification",
        glabels: Some(("Avery", "L7163")),
        printer: None,
    },
    Stock {
        name: "L7165",
        description: "Avery L7165, A4, 8 labels 99.1 x 67.7 mm (2 x 4)",
        grid: sheet(A4, (99.1, 67.7), 2, 4, 4.65, 13.1, (101.6, 67.7), 1.5),
        source: "Avery UK L7165 template specification",
        glabels: Some(("Avery", "L7165")),
        printer: None,
    },
    Stock {
        name: "L7651",
        description: "Avery L7651, A4, 65 labels 38.1 x 21.2 mm (5 x 13)",
        grid: sheet(A4, (38.1, 21.2), 5, 13, 4.75, 10.7, (40.6, 21.2), 1.0),
        source: "Avery UK L7651 template specification",
        glabels: Some(("Avery", "L7651")),
        printer: None,
    },
    Stock {
        name: "3474",
        description: "Avery Zweckform 3474, A4, 24 labels 70 x 37 mm (3 x 8), no margins",
        grid: sheet(A4, (70.0, 37.0), 3, 8, 0.0, 0.5, (70.0, 37.0), 0.0),
        source: "Avery Zweckform 3474 product data (70 x 37 mm, 24 per sheet, edge to edge)",
        glabels: Some(("Zweckform", "3474")),
        printer: None,
    },
    Stock {
        name: "L7120",
        description: "Avery L7120, A4, 35 square labels 35 x 35 mm (5 x 7), sized for QR codes",
        grid: sheet(A4, (35.0, 35.0), 5, 7, 7.5, 11.0, (40.0, 40.0), 1.5),
        source: "Avery UK L7120 template specification (35 x 35 mm, 35 per sheet)",
        glabels: None,
        printer: None,
    },
    Stock {
        name: "5160",
        description: "Avery 5160, US Letter, 30 labels 2 5/8 x 1 in (3 x 10)",
        grid: sheet(
            LETTER,
            (inch(2.625), inch(1.0)),
            3,
            10,
            inch(0.1875),
            inch(0.5),
            (inch(2.75), inch(1.0)),
            inch(0.0625),
        ),
        source: "Avery US 5160 template specification",
        glabels: Some(("Avery", "5160")),
        printer: None,
    },
    Stock {
        name: "5163",
        description: "Avery 5163, US Letter, 10 labels 4 x 2 in (2 x 5)",
        grid: sheet(
            LETTER,
            (inch(4.0), inch(2.0)),
            2,
            5,
            inch(0.15625),
            inch(0.5),
            (inch(4.1875), inch(2.0)),
            inch(0.125),
        ),
        source: "Avery US 5163 template specification",
        glabels: Some(("Avery", "5163")),
        printer: None,
    },
    Stock {
        name: "5167",
        description: "Avery 5167, US Letter, 80 labels 1 3/4 x 1/2 in (4 x 20)",
        grid: sheet(
            LETTER,
            (inch(1.75), inch(0.5)),
            4,
            20,
            inch(0.28125),
            inch(0.5),
            (inch(2.0625), inch(0.5)),
            inch(0.0625),
        ),
        source: "Avery US 5167 template specification",
        glabels: Some(("Avery", "5167")),
        printer: None,
    },
    Stock {
        name: "22806",
        description: "Avery 22806, US Letter, 12 square labels 2 x 2 in (3 x 4)",
        grid: sheet(
            LETTER,
            (inch(2.0), inch(2.0)),
            3,
            4,
            inch(0.625),
            inch(0.625),
            // 0.625 in margins on all four sides: the rows' pitch is what
            // is left, (11 - 2 x 0.625 - 2) / 3 + 2 in.
            (inch(2.625), inch(2.0 + 1.75 / 3.0)),
            inch(0.125),
        ),
        source: "Avery US 22806 template specification (0.625 in margins, 2.625 in across)",
        // gLabels has no Avery 22806; Online Labels sells OL2679 as the same
        // sheet (2 x 2 in, 3 x 4), and gLabels has that.
        glabels: Some(("Online Labels", "OL2679")),
        printer: None,
    },
    Stock {
        name: "brother-62",
        description: "Brother QL, 62 mm continuous roll (DK-22205), cut at 100 mm",
        grid: roll(62.0, ROLL_LENGTH, 0.0),
        source: "Brother DK-22205 (62 mm wide continuous tape)",
        glabels: None,
        printer: Some(Media {
            name: "brother-62",
            description: "Brother QL, 62 mm continuous tape (DK-22205)",
            form: Form::Continuous,
            width_um: 62_000,
            length_um: 62_000,
            // 696 printable of 732 dots at 300 dpi: 18 dots (1.5 mm) each side.
            margin_um: 1_500,
            source: "Brother QL-800 series Raster Command Reference, media table (62 mm: 732 dots, 696 printable)",
        }),
    },
    Stock {
        name: "brother-29",
        description: "Brother QL, 29 mm continuous roll (DK-22210), cut at 100 mm",
        grid: roll(29.0, ROLL_LENGTH, 0.0),
        source: "Brother DK-22210 (29 mm wide continuous tape)",
        glabels: None,
        printer: Some(Media {
            name: "brother-29",
            description: "Brother QL, 29 mm continuous tape (DK-22210)",
            form: Form::Continuous,
            width_um: 29_000,
            length_um: 29_000,
            // 306 printable of 342 dots at 300 dpi.
            margin_um: 1_500,
            source: "Brother QL-800 series Raster Command Reference, media table (29 mm: 342 dots, 306 printable)",
        }),
    },
    Stock {
        name: "brother-62x29",
        description: "Brother QL, die-cut 62 x 29 mm (DK-11209)",
        grid: roll(62.0, 29.0, 0.0),
        source: "Brother DK-11209 (62 x 29 mm die-cut labels)",
        glabels: None,
        printer: Some(Media {
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
        }),
    },
    Stock {
        name: "dymo-25x54",
        description: "Dymo LabelWriter, 54 x 25 mm (11352)",
        grid: roll(54.0, 25.0, 0.0),
        source: "Dymo 11352 (25 x 54 mm return address labels), fed short edge first",
        glabels: None,
        printer: Some(Media {
            name: "dymo-25x54",
            description: "Dymo LabelWriter, 25 × 54 mm labels (11352)",
            form: Form::DieCut,
            width_um: 25_000,
            length_um: 54_000,
            // Dymo publishes no printable area per label; 1 mm is qrtag's own
            // allowance for where the printer registers the label.
            margin_um: 1_000,
            source: "Dymo LabelWriter label catalogue, 11352 return address labels, 25 × 54 mm",
        }),
    },
    Stock {
        name: "zebra-4x6",
        description: "Zebra, 4 x 6 in shipping label",
        grid: roll(inch(4.0), inch(6.0), 0.0),
        source: "Zebra 4 x 6 in direct-thermal labels",
        glabels: None,
        printer: Some(Media {
            name: "zebra-4x6",
            description: "Zebra, 4 × 6 in shipping labels",
            form: Form::DieCut,
            width_um: 4 * INCH_UM,
            length_um: 6 * INCH_UM,
            // Zebra desktop printers print the full width of a 4 in label; 1 mm
            // is qrtag's allowance for label registration.
            margin_um: 1_000,
            source: "Zebra Z-Select 4000D / ZD420 label specifications, 4.00 × 6.00 in (812 × 1218 dots at 203 dpi)",
        }),
    },
    Stock {
        name: "zebra-2x1",
        description: "Zebra, 2 x 1 in label",
        grid: roll(inch(2.0), inch(1.0), 0.0),
        source: "Zebra 2 x 1 in direct-thermal labels",
        glabels: None,
        printer: Some(Media {
            name: "zebra-2x1",
            description: "Zebra, 2 × 1 in labels",
            form: Form::DieCut,
            width_um: 2 * INCH_UM,
            length_um: INCH_UM,
            margin_um: 1_000,
            source: "Zebra Z-Select 4000D label specifications, 2.00 × 1.00 in (406 × 203 dots at 203 dpi)",
        }),
    },
];

/// The label-printer media `qrtag qr --printer` takes, in the order it
/// lists them.
pub fn printers() -> impl Iterator<Item = &'static Media> {
    STOCK.iter().filter_map(|s| s.printer.as_ref())
}

/// The label-printer media named `name`, in any case.
pub fn printer(name: &str) -> Option<&'static Media> {
    printers().find(|m| m.name.eq_ignore_ascii_case(name))
}

/// The printer media's names, for a message listing what `--printer` takes.
pub fn printer_names() -> String {
    printers().map(|m| m.name).collect::<Vec<_>>().join(", ")
}

/// The built-in template named `name`, in any case.
pub fn find(name: &str) -> Option<&'static Stock> {
    STOCK.iter().find(|s| s.name.eq_ignore_ascii_case(name))
}

/// Up to three built-in names closest to a mistyped one, best first, for
/// the refusal to name.
pub fn closest(name: &str) -> Vec<&'static str> {
    let lower = name.to_ascii_lowercase();
    let mut scored: Vec<(usize, &'static str)> = STOCK
        .iter()
        .map(|s| {
            let candidate = s.name.to_ascii_lowercase();
            let distance = strsim::damerau_levenshtein(&lower, &candidate);
            // A bare part number ("7163") or a brand ("brother") is close.
            let bonus = usize::from(candidate.contains(&lower) || lower.contains(&candidate));
            (distance.saturating_sub(bonus * 3), s.name)
        })
        .collect();
    scored.sort();
    scored.into_iter().take(3).map(|(_, n)| n).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_sheet_fits_its_paper_and_its_labels_do_not_overlap() {
        for stock in STOCK {
            let g = &stock.grid;
            let right = g.left + f64::from(g.cols - 1) * g.h_pitch + g.label_w;
            let bottom = g.top + f64::from(g.rows - 1) * g.v_pitch + g.label_h;
            assert!(right <= g.paper_w + 1e-9, "{}: {right}", stock.name);
            assert!(bottom <= g.paper_h + 1e-9, "{}: {bottom}", stock.name);
            assert!(
                g.h_pitch >= g.label_w && g.v_pitch >= g.label_h,
                "{}",
                stock.name
            );
            assert_eq!(g.safe, SAFE_MARGIN, "{}", stock.name);
        }
    }

    #[test]
    fn names_are_unique_and_found_in_any_case() {
        for stock in STOCK {
            assert_eq!(find(&stock.name.to_lowercase()), Some(stock));
            assert_eq!(STOCK.iter().filter(|s| s.name == stock.name).count(), 1);
        }
        assert_eq!(find("L7999"), None);
    }

    #[test]
    fn a_near_miss_names_the_template_meant() {
        assert_eq!(closest("L7136")[0], "L7163");
        assert_eq!(closest("7163")[0], "L7163");
        assert!(closest("brother").contains(&"brother-62"));
    }

    #[test]
    fn dots_match_the_manufacturers_figures() {
        let dots = |name: &str, dpi| printer(name).expect("known").dots(dpi);
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
            let media = printer(name).expect("known");
            let (width, _) = media.dots(300);
            assert_eq!(width - 2 * media.margin_dots(300), printable, "{name}");
        }
    }

    #[test]
    fn names_are_unique_lower_case_and_found_in_any_case() {
        for media in printers() {
            assert_eq!(media.name, media.name.to_ascii_lowercase());
            assert!(!media.name.contains(' '));
            assert_eq!(printer(&media.name.to_uppercase()), Some(media));
            assert!(find(media.name).is_some_and(|s| s.printer.as_ref() == Some(media)));
            assert!(!media.source.is_empty());
            assert!(2 * media.margin_um < media.width_um.min(media.length_um));
        }
        assert_eq!(printer("brother"), None);
        assert!(printer_names().starts_with("brother-62, brother-29"));
    }
}
