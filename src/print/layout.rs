//! Where everything goes, in millimetres from the page's top-left corner:
//! label rectangles, the code's box (quiet zone included) and its caption.
//! Pure geometry, so every placement is tested without a PDF.

/// Phone cameras stop resolving modules much below this at arm's length;
/// ISO/IEC 18004 print-quality guides give 0.33 mm as the usual floor.
use super::spelling::Spelling;

pub const MIN_MODULE_MM: f64 = 0.33;
/// The standard's quiet zone, in modules, on every side.
pub const QUIET_MODULES: usize = 4;
/// Kept clear inside a label's edge by the code's box (its quiet zone
/// included): a sheet fed a little off still leaves the code whole.
pub const LABEL_PADDING: f64 = 0.5;
/// Kept clear of ink (code modules and caption glyphs) inside a label's
/// edge: ordinary paper-feed drift is about a millimetre, and where rows
/// touch (L7160) ink nearer the edge lands on the next label (issue 31).
pub const SAFE_MARGIN: f64 = 1.5;
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

    /// The rectangle `d` millimetres inside this one on every side.
    pub fn inset(&self, d: f64) -> Rect {
        Rect {
            x: self.x + d,
            y: self.y + d,
            w: self.w - 2.0 * d,
            h: self.h - 2.0 * d,
        }
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
    /// How far inside each label's edge ink stays ([`SAFE_MARGIN`] unless
    /// a custom template says otherwise).
    pub safe: f64,
}

impl Grid {
    /// What a label of this sheet keeps clear.
    pub fn margins(&self) -> Margins {
        Margins {
            padding: LABEL_PADDING,
            safe: self.safe,
        }
    }

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

/// What an area keeps clear inside its edge: the code's box (quiet zone
/// included) stays `padding` inside it, every mark of ink `safe` inside it.
/// The quiet zone is blank, so it may reach into the safe band.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Margins {
    pub padding: f64,
    pub safe: f64,
}

impl Margins {
    /// The room a code box's edge needs from the area's edge: its padding,
    /// or more where the quiet zone (`quiet` millimetres) is narrower than
    /// the safe band.
    fn code_edge(&self, quiet: f64) -> f64 {
        self.padding.max(self.safe - quiet)
    }
}

/// A caption's extent in ems from its pen position (`left`, `right`) and
/// its baseline (`above`, `below`, both positive outward): the union of its
/// glyphs' ink and the line the font reserves (the advances, ascent and
/// descent), so neither the ink nor a reader's text box reaches further.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TextBox {
    pub left: f64,
    pub right: f64,
    pub above: f64,
    pub below: f64,
}

impl TextBox {
    pub fn width(&self) -> f64 {
        self.right - self.left
    }
}

/// A caption placed: its size, pen position and baseline, in millimetres.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Placed {
    pub size_pt: f64,
    pub x: f64,
    pub baseline: f64,
}

/// A code with its caption (if any) under it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Under {
    pub code: CodeBox,
    pub caption: Option<Placed>,
}

/// The quiet zone's share of a code box's side.
fn quiet_share(modules: usize) -> f64 {
    QUIET_MODULES as f64 / (modules + 2 * QUIET_MODULES) as f64
}

/// The size a caption under a code takes in `area`: the one asked for,
/// shrunk until its text box fits between the safe margins.
pub fn caption_under_size(area: Rect, margins: Margins, text: &TextBox, asked_pt: f64) -> f64 {
    caption_size(asked_pt, text.width(), area.w - 2.0 * margins.safe)
}

/// Places a code of `modules` across (without quiet zone) in `area` with
/// `caption` (its box and size) under it: the code horizontally centred,
/// code and caption together vertically centred where the margins allow.
/// Ink stays `margins.safe` inside `area`, the code's box `margins.padding`.
pub fn fit_under(
    area: Rect,
    margins: Margins,
    modules: usize,
    size: CodeSize,
    caption: Option<(TextBox, f64)>,
) -> Result<Under, FitError> {
    let Margins { padding, safe } = margins;
    let k = quiet_share(modules);
    // From the code box's bottom: to the caption's baseline, and to the
    // bottom of its box.
    let (lead, drop) = match caption {
        Some((text, pt)) => {
            let em = pt * PT;
            let lead = text.above.max(1.0) * em;
            (lead, lead + text.below * em)
        }
        None => (0.0, 0.0),
    };
    let across = (area.w - 2.0 * padding).min((area.w - 2.0 * safe) / (1.0 - 2.0 * k));
    // Under the code box: the caption's drop and the safe margin, or the
    // box's own edge when there is no caption.
    let down = match caption {
        Some(_) => {
            let below = (drop + safe).max(padding);
            (area.h - padding - below).min((area.h - safe - below) / (1.0 - k))
        }
        None => (area.h - 2.0 * padding).min((area.h - 2.0 * safe) / (1.0 - 2.0 * k)),
    };
    let max_side = across.min(down).max(0.0);
    let label = if caption.is_some() {
        " and caption"
    } else {
        ""
    };
    let side = code_side(area, modules, max_side, size, label)?;
    let edge = margins.code_edge(k * side);
    let below = match caption {
        Some(_) => (drop + safe).max(padding),
        None => edge,
    };
    let x = area.x + (area.w - side) / 2.0;
    let centred = area.y + (area.h - side - drop) / 2.0;
    let y = centred
        .min(area.y + area.h - below - side)
        .max(area.y + edge);
    let code = code_box(x, y, side, modules);
    let caption = caption.map(|(text, pt)| {
        let em = pt * PT;
        Placed {
            size_pt: pt,
            x: x + side / 2.0 - (text.left + text.right) / 2.0 * em,
            baseline: y + side + lead,
        }
    });
    Ok(Under { code, caption })
}

/// Labels at least this many times as wide as tall take the caption beside
/// the code, which leaves the code the label's whole height.
pub const BESIDE_RATIO: f64 = 2.0;
/// The share of a label's width a code beside its caption may take.
const BESIDE_CODE_SHARE: f64 = 0.6;
/// Cap height is about 0.73 em: a baseline this many ems under the code's
/// middle centres capitals on it.
const HALF_CAP: f64 = 0.36;

/// A code with its caption beside it: the code vertically centred, code,
/// gap and text together centred across `area` where the margins allow.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Beside {
    pub code: CodeBox,
    pub caption: Placed,
}

/// Places a code on a wide label with a caption of box `text` beside it,
/// at `asked_pt` shrunk to the room left inside the safe margins.
pub fn fit_beside(
    area: Rect,
    margins: Margins,
    modules: usize,
    size: CodeSize,
    text: &TextBox,
    asked_pt: f64,
) -> Result<Beside, FitError> {
    let Margins { padding, safe } = margins;
    let k = quiet_share(modules);
    let max_side = (area.h - 2.0 * padding)
        .min((area.h - 2.0 * safe) / (1.0 - 2.0 * k))
        .min(area.w * BESIDE_CODE_SHARE - padding)
        .max(0.0);
    let side = code_side(area, modules, max_side, size, " beside its caption")?;
    let edge = margins.code_edge(k * side);
    // The text's box: across, what the code, its edge, the gap and the
    // right margin leave; down, half the height each side of the baseline's
    // centre.
    let room_w = area.w - edge - side - padding - safe;
    let half = area.h / 2.0 - safe;
    let reach = (HALF_CAP + text.below).max(text.above - HALF_CAP);
    let size_pt = caption_size(asked_pt, text.width(), room_w).min(half / (reach * PT));
    let em = size_pt * PT;
    let group = side + padding + text.width() * em;
    let x = (area.x + (area.w - group) / 2.0)
        .min(area.x + area.w - safe - group)
        .max(area.x + edge);
    let y = area.y + (area.h - side) / 2.0;
    Ok(Beside {
        code: code_box(x, y, side, modules),
        caption: Placed {
            size_pt,
            x: x + side + padding - text.left * em,
            baseline: area.y + area.h / 2.0 + HALF_CAP * em,
        },
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
/// text's width (`em_width` ems) fits `width` millimetres (none when no
/// width is left).
pub fn caption_size(asked_pt: f64, em_width: f64, width: f64) -> f64 {
    if em_width <= 0.0 {
        return asked_pt;
    }
    asked_pt.min(width / (em_width * PT)).max(0.0)
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
        let big = fit_under(label, l7163().margins(), 25, CodeSize::Exact(40.0), None);
        assert!(matches!(big, Err(FitError::TooBig { .. })), "{big:?}");
        let fine = fit_under(label, l7163().margins(), 25, CodeSize::Exact(7.0), None);
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
        let code = fit_under(label, l7163().margins(), 25, CodeSize::Exact(25.0), None)
            .expect("fits")
            .code;
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

    /// A caption's box in millimetres, placed.
    fn text_rect(text: &TextBox, at: &Placed) -> Rect {
        let em = at.size_pt * PT;
        Rect {
            x: at.x + text.left * em,
            y: at.baseline - text.above * em,
            w: text.width() * em,
            h: (text.above + text.below) * em,
        }
    }

    /// A monospaced caption of `chars` characters: DejaVu Sans Mono's
    /// advance, ascent and descent.
    fn mono(chars: usize) -> TextBox {
        TextBox {
            left: 0.0,
            right: chars as f64 * 0.602,
            above: 0.928,
            below: 0.236,
        }
    }

    proptest! {
        /// On every built-in sheet, in every slot, a filled code and its
        /// caption under it keep the margins: the code's box inside the
        /// padding, the symbol and the caption's box inside the safe area,
        /// the caption under the code box, the code centred across.
        #[test]
        fn codes_and_captions_under_them_keep_the_margins(
            stock in 0..STOCK.len(),
            slot in 0usize..100,
            modules in prop::sample::select(vec![21usize, 25, 29, 33]),
            chars in 0usize..40,
            asked in 4.0f64..12.0,
            exact in prop::option::of(5.0f64..60.0),
        ) {
            let g = STOCK[stock].grid;
            let label = g.label(slot % g.per_sheet());
            let m = g.margins();
            let text = mono(chars);
            let caption = (chars > 0).then(|| (text, caption_under_size(label, m, &text, asked)));
            let size = exact.map_or(CodeSize::Fill, CodeSize::Exact);
            if let Ok(under) = fit_under(label, m, modules, size, caption) {
                let code = under.code;
                prop_assert!(label.inset(LABEL_PADDING).contains(&code.rect));
                prop_assert!(label.inset(m.safe).contains(&code.symbol()));
                prop_assert!((code.rect.centre().0 - label.centre().0).abs() < 1e-9);
                prop_assert!(code.module >= MIN_MODULE_MM - 1e-9);
                if let Some(placed) = under.caption {
                    let r = text_rect(&text, &placed);
                    prop_assert!(label.inset(m.safe).contains(&r), "{r:?} in {label:?}");
                    prop_assert!(r.y >= code.rect.y + code.rect.h - 1e-9);
                    prop_assert!(placed.size_pt <= asked);
                }
            }
        }

        /// Beside its caption, a code and the text keep the margins, the
        /// text right of the code's box, the code centred down the label.
        #[test]
        fn codes_beside_captions_keep_the_margins(
            stock in 0..STOCK.len(),
            modules in prop::sample::select(vec![21usize, 25, 29, 33]),
            chars in 1usize..40,
        ) {
            let g = STOCK[stock].grid;
            let label = g.label(0);
            let text = mono(chars);
            if let Ok(b) = fit_beside(label, g.margins(), modules, CodeSize::Fill, &text, 8.0) {
                prop_assert!(label.inset(LABEL_PADDING).contains(&b.code.rect));
                prop_assert!(label.inset(g.safe).contains(&b.code.symbol()));
                let r = text_rect(&text, &b.caption);
                if b.caption.size_pt > 0.0 {
                    prop_assert!(label.inset(g.safe).contains(&r), "{r:?} in {label:?}");
                }
                prop_assert!(r.x >= b.code.rect.x + b.code.rect.w - 1e-9);
                prop_assert!((b.code.rect.centre().1 - label.centre().1).abs() < 1e-9);
                prop_assert!(b.caption.size_pt <= 8.0);
            }
        }
    }
}
