//! Where everything goes, in millimetres from the page's top-left corner:
//! label rectangles, the code's box (quiet zone included) and its caption.
//! Pure geometry, so every placement is tested without a PDF.

/// Phone cameras stop resolving modules much below this at arm's length;
/// ISO/IEC 18004 print-quality guides give 0.33 mm as the usual floor.
use super::spelling::Spelling;

pub const MIN_MODULE_MM: f64 = 0.33;
/// The standard's quiet zone, in modules, on every side.
pub const QUIET_MODULES: usize = 4;
/// Kept clear inside a label's edge: a sheet fed a little off still
/// leaves the code whole.
pub const LABEL_PADDING: f64 = 0.5;
/// A caption's line, in font sizes.
pub const LINE_HEIGHT: f64 = 1.25;
/// Millimetres in a typographic point.
pub const PT: f64 = 25.4 / 72.0;

/// A rectangle in millimetres, `x`/`y` its top-left corner.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Rect {
    pub x: f64,
    pub y: f64,
    pub w: f64,
    pub h: f64,
}

impl Rect {
    pub fn centre(&self) -> (f64, f64) {
        (self.x + self.w / 2.0, self.y + self.h / 2.0)
    }

    pub fn contains(&self, inner: &Rect) -> bool {
        const EPS: f64 = 1e-9;
        inner.x >= self.x - EPS
            && inner.y >= self.y - EPS
            && inner.x + inner.w <= self.x + self.w + EPS
            && inner.y + inner.h <= self.y + self.h + EPS
    }
}

/// A sheet's geometry: paper, label size, columns × rows, the first label's
/// top-left corner and the pitch from one label to the next.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Grid {
    pub paper_w: f64,
    pub paper_h: f64,
    pub label_w: f64,
    pub label_h: f64,
    pub cols: u32,
    pub rows: u32,
    pub left: f64,
    pub top: f64,
    pub h_pitch: f64,
    pub v_pitch: f64,
    pub radius: f64,
}

impl Grid {
    pub fn per_sheet(&self) -> usize {
        self.cols as usize * self.rows as usize
    }

    /// The `slot`th label of a sheet, row by row from the top left, as
    /// people count the labels already peeled off.
    pub fn label(&self, slot: usize) -> Rect {
        let cols = self.cols as usize;
        Rect {
            x: self.left + (slot % cols) as f64 * self.h_pitch,
            y: self.top + (slot / cols) as f64 * self.v_pitch,
            w: self.label_w,
            h: self.label_h,
        }
    }

    /// Page and slot for each of `count` tags after `skip` used labels on
    /// the first sheet.
    pub fn slots(&self, skip: usize, count: usize) -> impl Iterator<Item = (usize, usize)> + '_ {
        let per = self.per_sheet();
        (skip..skip + count).map(move |i| (i / per, i % per))
    }

    /// Sheets needed for `count` tags after `skip` used labels (at least one,
    /// so an alignment page has a page).
    pub fn pages(&self, skip: usize, count: usize) -> usize {
        (skip + count).div_ceil(self.per_sheet()).max(1)
    }
}

/// What was asked of a code's size.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum CodeSize {
    /// The largest that fits with its quiet zone and caption.
    Fill,
    /// The symbol's side without the quiet zone, in millimetres, as a
    /// ruler measures the printed code.
    Exact(f64),
}

/// Why a code cannot go where it was asked.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum FitError {
    #[error(
        "a {size:.1} mm code does not fit a {w:.1} x {h:.1} mm area with its quiet zone{caption}: at most {max:.1} mm fits"
    )]
    TooBig {
        size: f64,
        w: f64,
        h: f64,
        max: f64,
        caption: &'static str,
    },
    #[error("{}", module_too_small(*module, *hint, Spelling::Flag))]
    ModuleTooSmall { module: f64, hint: SizeHint },
}

/// What else than a bigger label makes the modules larger.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SizeHint {
    /// A larger code size (one was given).
    LargerCode,
    /// No caption (the code fills what the caption leaves).
    NoCaption,
    /// Nothing else: the code already fills the label.
    Nothing,
}

fn module_too_small(module: f64, hint: SizeHint, spelling: Spelling) -> String {
    let hint = match hint {
        SizeHint::LargerCode => format!(" or a larger {}", spelling.name("code-size")),
        SizeHint::NoCaption => format!(", or {}", spelling.with_value("caption", "none")),
        SizeHint::Nothing => String::new(),
    };
    format!(
        "modules of {module:.2} mm are below the minimum of {MIN_MODULE_MM} mm that phones scan reliably: use a bigger label{hint}"
    )
}

impl FitError {
    /// The refusal naming options as `spelling` does (`Display`: the CLI's).
    pub fn message(&self, spelling: Spelling) -> String {
        match self {
            FitError::ModuleTooSmall { module, hint } => module_too_small(*module, *hint, spelling),
            FitError::TooBig { .. } => self.to_string(),
        }
    }
}

/// A code placed: its box (quiet zone included) and the module size.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CodeBox {
    pub rect: Rect,
    pub module: f64,
}

impl CodeBox {
    /// The symbol's own area, without the quiet zone.
    pub fn symbol(&self) -> Rect {
        let q = QUIET_MODULES as f64 * self.module;
        Rect {
            x: self.rect.x + q,
            y: self.rect.y + q,
            w: self.rect.w - 2.0 * q,
            h: self.rect.h - 2.0 * q,
        }
    }
}

/// Places a code of `modules` across (without quiet zone) in `area`, with a
/// band of `caption_h` millimetres under it: the code horizontally centred,
/// code and caption together vertically centred. `padding` is kept clear
/// inside `area`.
pub fn fit_code(
    area: Rect,
    padding: f64,
    modules: usize,
    caption_h: f64,
    size: CodeSize,
) -> Result<CodeBox, FitError> {
    let max_side = (area.w - 2.0 * padding)
        .min(area.h - 2.0 * padding - caption_h)
        .max(0.0);
    let caption = if caption_h > 0.0 { " and caption" } else { "" };
    let side = code_side(area, modules, max_side, size, caption)?;
    let x = area.x + (area.w - side) / 2.0;
    let y = area.y + (area.h - side - caption_h) / 2.0;
    Ok(code_box(x, y, side, modules))
}

/// Labels at least this many times as wide as tall take the caption beside
/// the code, which leaves the code the label's whole height.
pub const BESIDE_RATIO: f64 = 2.0;
/// The share of a label's width a code beside its caption may take.
const BESIDE_CODE_SHARE: f64 = 0.6;

/// A code with its caption beside it: the code vertically centred, code,
/// gap and text together centred across `area`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Beside {
    pub code: CodeBox,
    pub size_pt: f64,
    /// Where the text starts, and its baseline.
    pub text_x: f64,
    pub baseline: f64,
    pub text_w: f64,
}

/// Places a code on a wide label with a caption of `em_width` ems beside
/// it, at `asked_pt` shrunk to the width left.
pub fn fit_beside(
    area: Rect,
    padding: f64,
    modules: usize,
    size: CodeSize,
    em_width: f64,
    asked_pt: f64,
) -> Result<Beside, FitError> {
    let max_side = (area.h - 2.0 * padding)
        .min(area.w * BESIDE_CODE_SHARE - padding)
        .max(0.0);
    let side = code_side(area, modules, max_side, size, " beside its caption")?;
    let size_pt = caption_size(asked_pt, em_width, area.w - side - 3.0 * padding);
    let text_w = em_width * size_pt * PT;
    let x = area.x + (area.w - (side + padding + text_w)) / 2.0;
    let y = area.y + (area.h - side) / 2.0;
    Ok(Beside {
        code: code_box(x, y, side, modules),
        size_pt,
        text_x: x + side + padding,
        // Cap height is about 0.73 em: this centres capitals on the code.
        baseline: area.y + area.h / 2.0 + 0.36 * size_pt * PT,
        text_w,
    })
}

/// The code box's side (quiet zone included) for `size`, at most
/// `max_side`, with modules no finer than the minimum.
fn code_side(
    area: Rect,
    modules: usize,
    max_side: f64,
    size: CodeSize,
    caption: &'static str,
) -> Result<f64, FitError> {
    let total = (modules + 2 * QUIET_MODULES) as f64;
    let side = match size {
        CodeSize::Fill => max_side,
        CodeSize::Exact(symbol) => {
            let side = symbol * total / modules as f64;
            if side > max_side + 1e-9 {
                return Err(FitError::TooBig {
                    size: symbol,
                    w: area.w,
                    h: area.h,
                    max: max_side * modules as f64 / total,
                    caption,
                });
            }
            side
        }
    };
    let module = side / total;
    if module < MIN_MODULE_MM - 1e-9 {
        let hint = match (size, caption.is_empty()) {
            (CodeSize::Exact(_), _) => SizeHint::LargerCode,
            (CodeSize::Fill, false) => SizeHint::NoCaption,
            (CodeSize::Fill, true) => SizeHint::Nothing,
        };
        return Err(FitError::ModuleTooSmall { module, hint });
    }
    Ok(side)
}

fn code_box(x: f64, y: f64, side: f64, modules: usize) -> CodeBox {
    CodeBox {
        rect: Rect {
            x,
            y,
            w: side,
            h: side,
        },
        module: side / (modules + 2 * QUIET_MODULES) as f64,
    }
}

/// The caption's font size in points: the one asked for, shrunk until the
/// text's width (`em_width` ems) fits `width` millimetres.
pub fn caption_size(asked_pt: f64, em_width: f64, width: f64) -> f64 {
    if em_width <= 0.0 {
        return asked_pt;
    }
    asked_pt.min(width / (em_width * PT))
}

/// The caption band's height in millimetres for a font size in points.
pub fn caption_height(size_pt: f64) -> f64 {
    if size_pt <= 0.0 {
        0.0
    } else {
        size_pt * PT * LINE_HEIGHT
    }
}

/// A page of `w` × `h` millimetres with `bleed` around it and, with crop
/// marks, room for them outside the bleed.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PosterPage {
    /// The media: the whole sheet printed on.
    pub media_w: f64,
    pub media_h: f64,
    /// The finished poster inside the media.
    pub trim: Rect,
    pub bleed: f64,
}

/// Crop marks start this far outside the bleed and are this long.
pub const CROP_OFFSET: f64 = 3.0;
pub const CROP_LENGTH: f64 = 7.0;

pub fn poster_page(w: f64, h: f64, bleed: f64, crop_marks: bool) -> PosterPage {
    let slug = if crop_marks {
        CROP_OFFSET + CROP_LENGTH
    } else {
        0.0
    };
    let edge = bleed + slug;
    PosterPage {
        media_w: w + 2.0 * edge,
        media_h: h + 2.0 * edge,
        trim: Rect {
            x: edge,
            y: edge,
            w,
            h,
        },
        bleed,
    }
}

/// The crop marks' line segments `(x1, y1, x2, y2)`: two at each corner,
/// in line with the trim edges, outside the bleed.
pub fn crop_marks(page: &PosterPage) -> Vec<(f64, f64, f64, f64)> {
    let t = page.trim;
    let near = page.bleed + CROP_OFFSET;
    let far = near + CROP_LENGTH;
    let mut marks = Vec::with_capacity(8);
    for x in [t.x, t.x + t.w] {
        marks.push((x, t.y - far, x, t.y - near));
        marks.push((x, t.y + t.h + near, x, t.y + t.h + far));
    }
    for y in [t.y, t.y + t.h] {
        marks.push((t.x - far, y, t.x - near, y));
        marks.push((t.x + t.w + near, y, t.x + t.w + far, y));
    }
    marks
}

/// A poster's margin: a tenth of the short side, so a code filling the
/// page still has room beyond its quiet zone for the printer's edge.
pub fn poster_margin(w: f64, h: f64) -> f64 {
    w.min(h) / 10.0
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::print::stock::STOCK;
    use proptest::prelude::*;

    fn l7163() -> Grid {
        crate::print::stock::find("L7163").expect("built in").grid
    }

    #[test]
    fn labels_go_row_by_row_and_skip_starts_further_on() {
        let g = l7163();
        assert_eq!(g.label(0).x, 4.65);
        assert_eq!(g.label(1).x, 4.65 + 101.6);
        assert_eq!(g.label(2).y, 15.15 + 38.1);
        let slots: Vec<_> = g.slots(13, 3).collect();
        assert_eq!(slots, vec![(0, 13), (1, 0), (1, 1)]);
        assert_eq!(g.pages(13, 3), 2);
        assert_eq!(g.pages(0, 0), 1);
        assert_eq!(g.pages(0, 14), 1);
    }

    #[test]
    fn a_code_too_big_or_too_fine_is_refused() {
        let label = l7163().label(0);
        let big = fit_code(label, LABEL_PADDING, 25, 3.0, CodeSize::Exact(40.0));
        assert!(matches!(big, Err(FitError::TooBig { .. })), "{big:?}");
        let fine = fit_code(label, LABEL_PADDING, 25, 3.0, CodeSize::Exact(7.0));
        assert!(
            matches!(fine, Err(FitError::ModuleTooSmall { .. })),
            "{fine:?}"
        );
        let message = fine.expect_err("refused").to_string();
        assert!(message.contains("0.33 mm"), "{message}");
    }

    #[test]
    fn an_exact_code_size_is_the_symbol_without_its_quiet_zone() {
        let label = l7163().label(0);
        let code = fit_code(label, LABEL_PADDING, 25, 3.0, CodeSize::Exact(25.0)).expect("fits");
        assert!((code.symbol().w - 25.0).abs() < 1e-9);
        assert!((code.module - 1.0).abs() < 1e-9);
    }

    #[test]
    fn crop_marks_stay_outside_the_bleed() {
        let page = poster_page(297.0, 420.0, 3.0, true);
        assert_eq!(page.media_w, 297.0 + 2.0 * 13.0);
        for (x1, y1, x2, y2) in crop_marks(&page) {
            for (x, y) in [(x1, y1), (x2, y2)] {
                let inside_bleed = x > page.trim.x - page.bleed
                    && x < page.trim.x + page.trim.w + page.bleed
                    && y > page.trim.y - page.bleed
                    && y < page.trim.y + page.trim.h + page.bleed;
                assert!(!inside_bleed, "({x}, {y})");
                assert!((0.0..=page.media_w).contains(&x) && (0.0..=page.media_h).contains(&y));
            }
        }
    }

    proptest! {
        /// On every built-in sheet, in every slot, a filled code and its
        /// caption stay inside the label, centred across it.
        #[test]
        fn filled_codes_stay_inside_their_label_and_centred(
            stock in 0..STOCK.len(),
            slot in 0usize..100,
            modules in prop::sample::select(vec![21usize, 25, 29, 33]),
            caption_pt in 0.0f64..8.0,
        ) {
            let g = STOCK[stock].grid;
            let label = g.label(slot % g.per_sheet());
            let caption_h = caption_height(caption_pt);
            if let Ok(code) = fit_code(label, LABEL_PADDING, modules, caption_h, CodeSize::Fill) {
                prop_assert!(label.contains(&code.rect));
                let below = Rect { x: code.rect.x, y: code.rect.y, w: code.rect.w, h: code.rect.h + caption_h };
                prop_assert!(label.contains(&below));
                prop_assert!((code.rect.centre().0 - label.centre().0).abs() < 1e-9);
                prop_assert!(code.module >= MIN_MODULE_MM - 1e-9);
            }
        }

        /// Beside its caption, a code and the text stay inside the label,
        /// the code centred down it.
        #[test]
        fn codes_beside_captions_stay_inside_their_label(
            stock in 0..STOCK.len(),
            modules in prop::sample::select(vec![21usize, 25, 29, 33]),
            chars in 1usize..40,
        ) {
            let g = STOCK[stock].grid;
            let label = g.label(0);
            let em = chars as f64 * 0.6;
            if let Ok(b) = fit_beside(label, LABEL_PADDING, modules, CodeSize::Fill, em, 8.0) {
                prop_assert!(label.contains(&b.code.rect));
                prop_assert!(b.text_x >= b.code.rect.x + b.code.rect.w);
                prop_assert!(b.text_x + b.text_w <= label.x + label.w + 1e-9);
                prop_assert!((b.code.rect.centre().1 - label.centre().1).abs() < 1e-9);
                prop_assert!(b.size_pt <= 8.0);
            }
        }
    }
}
