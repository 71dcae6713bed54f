//! A printable A4 sheet of tags.
//!
//! Up to [`SHEET_FULL_SIZE_CAPACITY`] codes go on a fixed 4 × 6 grid, so a
//! tag is the same physical size (about 39 mm including its quiet zone) no
//! matter how many are printed at once. Past that the grid grows and the codes
//! shrink to keep everything on the one page: SVG has no page breaks that
//! browsers honour, and one file is what a "print these" button wants. A
//! caller who needs full-size tags for more keys renders one sheet per chunk
//! of [`SHEET_FULL_SIZE_CAPACITY`].

use std::fmt::Write as _;

use qrcode::QrCode;

use super::render::dark_path;

/// Codes that fit the full-size 4 × 6 grid.
pub const SHEET_FULL_SIZE_CAPACITY: usize = 24;

const PAGE_W: f64 = 210.0;
const PAGE_H: f64 = 297.0;
/// Most printers cannot print closer to the edge than this.
const PAGE_MARGIN: f64 = 10.0;
/// The standard's quiet zone, kept inside each code's box so neighbouring
/// codes and labels never eat into it.
const QUIET: usize = 4;
/// Label font size relative to the code box; about 8.5 pt at full size.
const LABEL_RATIO: f64 = 0.08;
/// Label band below the box, in font sizes.
const LABEL_BAND: f64 = 1.6;
/// Share of a cell the box and label may use; the rest is cutting room.
const FILL: f64 = 0.95;
/// Advance width of a monospace glyph in ems, to keep long slugs in the cell.
const MONO_ADVANCE: f64 = 0.6;

/// Renders `(key, code)` pairs on one A4 page, each key printed in monospace
/// under its code.
pub fn render_sheet_svg(items: &[(String, QrCode)]) -> String {
    let (cols, rows) = grid(items.len());
    let (cell_w, cell_h, side) = geometry(cols, rows);
    let mut codes = String::new();
    let mut labels = String::new();
    for (i, (key, code)) in items.iter().enumerate() {
        let (col, row) = (i % cols, i / cols);
        let font =
            (side * LABEL_RATIO).min(side / (MONO_ADVANCE * key.chars().count().max(1) as f64));
        let label_h = side * LABEL_RATIO * LABEL_BAND;
        let x = PAGE_MARGIN + col as f64 * cell_w + (cell_w - side) / 2.0;
        let y = PAGE_MARGIN + row as f64 * cell_h + (cell_h - side - label_h) / 2.0;
        let module = side / (code.width() + 2 * QUIET) as f64;
        // Writing into a String cannot fail.
        let _ = write!(
            codes,
            r#"<path transform="translate({x:.3} {y:.3}) scale({module:.5})" d="{}"/>"#,
            dark_path(code, QUIET)
        );
        let _ = write!(
            labels,
            r#"<text x="{:.3}" y="{:.3}" font-size="{font:.3}">{}</text>"#,
            x + side / 2.0,
            y + side + font,
            escape(key)
        );
    }
    format!(
        concat!(
            r#"<svg xmlns="http://www.w3.org/2000/svg" version="1.1""#,
            r#" width="210mm" height="297mm" viewBox="0 0 210 297">"#,
            r##"<rect width="210" height="297" fill="#fff"/>"##,
            r##"<g fill="#000" shape-rendering="crispEdges">{codes}</g>"##,
            r##"<g fill="#000" font-family="monospace" text-anchor="middle">{labels}</g>"##,
            r#"</svg>"#,
        ),
        codes = codes,
        labels = labels
    )
}

/// Columns and rows for `n` codes: the fixed full-size grid while it fits,
/// otherwise the grid that leaves the biggest codes (fewer columns on a tie).
fn grid(n: usize) -> (usize, usize) {
    if n <= SHEET_FULL_SIZE_CAPACITY {
        return (4, 6);
    }
    let mut best = (n, 1, 0.0);
    for cols in 1..=n {
        let rows = n.div_ceil(cols);
        let (_, _, side) = geometry(cols, rows);
        if side > best.2 {
            best = (cols, rows, side);
        }
    }
    (best.0, best.1)
}

/// Cell width and height and the side of a code box (quiet zone included),
/// all in millimetres.
fn geometry(cols: usize, rows: usize) -> (f64, f64, f64) {
    let cell_w = (PAGE_W - 2.0 * PAGE_MARGIN) / cols as f64;
    let cell_h = (PAGE_H - 2.0 * PAGE_MARGIN) / rows as f64;
    let side = cell_w.min(cell_h / (1.0 + LABEL_RATIO * LABEL_BAND)) * FILL;
    (cell_w, cell_h, side)
}

/// Keys are slugs today, but the sheet must stay well-formed XML whatever a
/// key turns out to contain.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn full_size_grid_up_to_capacity_then_it_grows() {
        assert_eq!(grid(0), (4, 6));
        assert_eq!(grid(24), (4, 6));
        let (cols, rows) = grid(25);
        assert!(cols * rows >= 25);
        let (_, _, full) = geometry(4, 6);
        let (_, _, shrunk) = geometry(cols, rows);
        assert!(shrunk < full);
        for n in [25, 48, 100, 500] {
            let (cols, rows) = grid(n);
            assert!(cols * rows >= n, "{n} codes on {cols}x{rows}");
            let (_, _, side) = geometry(cols, rows);
            assert!(
                side * rows as f64 * (1.0 + LABEL_RATIO * LABEL_BAND) <= PAGE_H - 2.0 * PAGE_MARGIN
            );
            assert!(side * cols as f64 <= PAGE_W - 2.0 * PAGE_MARGIN);
        }
    }

    #[test]
    fn full_size_code_is_about_four_centimetres() {
        let (_, _, side) = geometry(4, 6);
        assert!((35.0..45.0).contains(&side), "{side}");
    }

    #[test]
    fn labels_are_escaped() {
        assert_eq!(escape(r#"a<b>&"c'"#), "a&lt;b&gt;&amp;&quot;c&apos;");
        assert_eq!(escape("H83if/x_y-z"), "H83if/x_y-z");
    }
}
