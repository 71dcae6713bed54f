//! A print job turned into pages of things to draw, in millimetres: the
//! decisions (which label, what size, which caption size) made here, purely,
//! so `pdf.rs` only paints.

use crate::qr::Symbol;

use super::font;
use super::layout::{self, CodeBox, LABEL_PADDING, Margins, Placed, PosterPage, Rect, SAFE_MARGIN};
use super::{Job, PrintError, Target};

/// One page's drawing.
pub struct PagePlan<'a> {
    pub media_w: f64,
    pub media_h: f64,
    /// Set on posters with a bleed or crop marks: the finished size.
    pub trim: Option<Rect>,
    pub bleed: f64,
    pub codes: Vec<(CodeBox, &'a Symbol)>,
    pub captions: Vec<Caption<'a>>,
    /// Label borders for an alignment page, with their corner radius.
    pub outlines: Vec<(Rect, f64)>,
    pub lines: Vec<(f64, f64, f64, f64)>,
}

impl PagePlan<'_> {
    fn new(media_w: f64, media_h: f64) -> Self {
        PagePlan {
            media_w,
            media_h,
            trim: None,
            bleed: 0.0,
            codes: Vec::new(),
            captions: Vec::new(),
            outlines: Vec::new(),
            lines: Vec::new(),
        }
    }
}

/// A line of text from `x`, its baseline at `baseline`.
#[derive(Debug, PartialEq)]
pub struct Caption<'a> {
    pub text: &'a str,
    pub size_pt: f64,
    pub x: f64,
    pub baseline: f64,
}

impl<'a> Caption<'a> {
    fn new(text: &'a str, at: Placed) -> Self {
        Caption {
            text,
            size_pt: at.size_pt,
            x: at.x,
            baseline: at.baseline,
        }
    }
}

/// The default caption size on a label, in points: a short URL of ~25
/// characters still fits a 38 mm label at it, shrunk when it does not.
pub const LABEL_CAPTION_PT: f64 = 8.0;
/// Below this a caption is unreadable on paper; shrinking stops here.
pub const MIN_CAPTION_PT: f64 = 4.0;

pub fn plan<'a>(job: &'a Job, codes: &'a [Symbol]) -> Result<Vec<PagePlan<'a>>, PrintError> {
    match &job.target {
        Target::Sheet(template) => sheet(job, &template.grid, codes),
        Target::Poster {
            paper,
            bleed,
            crop_marks,
        } => Ok(job
            .tags
            .iter()
            .zip(codes)
            .map(|(tag, code)| {
                poster(
                    job,
                    layout::poster_page(paper.w, paper.h, *bleed, *crop_marks),
                    *crop_marks,
                    &tag.caption,
                    code,
                )
            })
            .collect::<Result<_, _>>()?),
    }
}

fn sheet<'a>(
    job: &'a Job,
    grid: &layout::Grid,
    codes: &'a [Symbol],
) -> Result<Vec<PagePlan<'a>>, PrintError> {
    let per = grid.per_sheet();
    if job.options.skip >= per {
        return Err(PrintError::SkipBeyondSheet {
            skip: job.options.skip,
            per,
        });
    }
    let mut pages: Vec<PagePlan> = (0..grid.pages(job.options.skip, job.tags.len()))
        .map(|_| PagePlan::new(grid.paper_w, grid.paper_h))
        .collect();
    if job.options.outline {
        for page in &mut pages {
            page.outlines = (0..per).map(|s| (grid.label(s), grid.radius)).collect();
        }
    }
    let slots = grid.slots(job.options.skip, job.tags.len());
    let margins = grid.margins();
    for ((tag, code), (page, slot)) in job.tags.iter().zip(codes).zip(slots) {
        let label = grid.label(slot);
        let text = tag.caption.as_str();
        let asked = job.options.caption_pt.unwrap_or(LABEL_CAPTION_PT);
        let plan = &mut pages[page];
        if !text.is_empty() && label.w >= layout::BESIDE_RATIO * label.h {
            let beside = layout::fit_beside(
                label,
                margins,
                code.width(),
                job.options.code_size,
                &font::text_box(text),
                asked,
            )?;
            check_caption(text, beside.caption.size_pt, label.w - beside.code.rect.w)?;
            plan.codes.push((beside.code, code));
            plan.captions.push(Caption::new(text, beside.caption));
            continue;
        }
        let under = under(label, margins, job, code, text, asked)?;
        plan.codes.push((under.code, code));
        if let Some(at) = under.caption {
            plan.captions.push(Caption::new(text, at));
        }
    }
    Ok(pages)
}

/// A code in `area` with `text` (if any) under it, the caption at `asked`
/// points shrunk to fit across; on a label refused below a readable size
/// (a poster's caption is read from nearer than its code).
fn under(
    area: Rect,
    margins: Margins,
    job: &Job,
    code: &Symbol,
    text: &str,
    asked: f64,
) -> Result<layout::Under, PrintError> {
    let caption = if text.is_empty() {
        None
    } else {
        let b = font::text_box(text);
        let size_pt = layout::caption_under_size(area, margins, &b, asked);
        if matches!(job.target, Target::Sheet(_)) {
            check_caption(text, size_pt, area.w - 2.0 * margins.safe)?;
        }
        Some((b, size_pt))
    };
    Ok(layout::fit_under(
        area,
        margins,
        code.width(),
        job.options.code_size,
        caption,
    )?)
}

fn poster<'a>(
    job: &'a Job,
    page: PosterPage,
    crop_marks: bool,
    text: &'a str,
    code: &'a Symbol,
) -> Result<PagePlan<'a>, PrintError> {
    let trim = page.trim;
    let margin = layout::poster_margin(trim.w, trim.h);
    let area = Rect {
        x: trim.x + margin,
        y: trim.y + margin,
        w: trim.w - 2.0 * margin,
        h: trim.h - 2.0 * margin,
    };
    // By default the caption is a twelfth of the code's width, so it reads
    // from as far as the code scans.
    let asked = job
        .options
        .caption_pt
        .unwrap_or(area.w.min(area.h) / 12.0 / layout::PT);
    let margins = Margins {
        padding: LABEL_PADDING,
        safe: SAFE_MARGIN,
    };
    let under = under(area, margins, job, code, text, asked)?;
    let mut plan = PagePlan::new(page.media_w, page.media_h);
    if page.media_w > trim.w {
        plan.trim = Some(trim);
        plan.bleed = page.bleed;
    }
    plan.codes.push((under.code, code));
    if let Some(at) = under.caption {
        plan.captions.push(Caption::new(text, at));
    }
    if crop_marks {
        plan.lines = layout::crop_marks(&page);
    }
    Ok(plan)
}

/// A caption shrunk below a readable size is refused, not printed.
fn check_caption(text: &str, size_pt: f64, width: f64) -> Result<(), PrintError> {
    if !text.is_empty() && size_pt < MIN_CAPTION_PT {
        return Err(PrintError::CaptionTooLong {
            text: text.to_owned(),
            width,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::print::{CodeSize, Options, Tag};

    fn job(template: &str, n: usize, skip: usize) -> (Job, Vec<Symbol>) {
        let tags: Vec<Tag> = (0..n)
            .map(|i| Tag {
                text: format!("https://0x1f.ie/k{i}"),
                caption: format!("https://0x1f.ie/k{i}"),
            })
            .collect();
        let codes = tags
            .iter()
            .map(|t| crate::qr::encode_symbol(&t.text, crate::qr::EcLevel::L).expect("fits"))
            .collect();
        let job = Job {
            target: Target::Sheet(template.parse().expect("built in")),
            tags,
            options: Options {
                skip,
                ..Options::default()
            },
        };
        (job, codes)
    }

    #[test]
    fn skipped_labels_push_tags_onto_the_next_sheet() {
        let (job, codes) = job("L7163", 3, 13);
        let pages = plan(&job, &codes).expect("fits");
        assert_eq!(pages.len(), 2);
        assert_eq!(pages[0].codes.len(), 1);
        assert_eq!(pages[1].codes.len(), 2);
        let grid = crate::print::stock::find("L7163").expect("built in").grid;
        assert!(grid.label(13).contains(&pages[0].codes[0].0.rect));
        assert!(grid.label(0).contains(&pages[1].codes[0].0.rect));
    }

    /// Every template the property test runs: the built-in ones and
    /// custom ones of both caption placements, one with a wider safe area.
    fn templates() -> Vec<crate::print::Template> {
        let mut all: Vec<crate::print::Template> = crate::print::stock::STOCK
            .iter()
            .map(|s| s.name.parse().expect("built in"))
            .collect();
        for custom in [
            "custom:label=30x20mm",
            "custom:label=60x20mm",
            "custom:paper=A4,label=40x40mm,cols=4,rows=6,safe=3mm",
            "custom:label=45x12mm,safe=0",
        ] {
            all.push(custom.parse().expect("valid"));
        }
        all
    }

    /// Where `plan` put ink outside `area` shrunk by `safe`: each code's
    /// symbol (its modules' extent) and each caption glyph's outline box.
    fn ink_outside(
        pages: &[PagePlan<'_>],
        area_of: impl Fn(usize) -> Rect,
        safe: f64,
    ) -> Vec<String> {
        let mut out = Vec::new();
        for page in pages {
            for (i, (code, _)) in page.codes.iter().enumerate() {
                let inner = area_of(i).inset(safe);
                if !inner.contains(&code.symbol()) {
                    out.push(format!("code {:?} outside {inner:?}", code.symbol()));
                }
                if !area_of(i).inset(LABEL_PADDING).contains(&code.rect) {
                    out.push(format!("code box {:?} past the padding", code.rect));
                }
            }
            for (i, caption) in page.captions.iter().enumerate() {
                let inner = area_of(i).inset(safe);
                let em = caption.size_pt * layout::PT;
                for (x0, x1, top, bottom) in font::glyph_boxes(caption.text) {
                    let glyph = Rect {
                        x: caption.x + x0 * em,
                        y: caption.baseline - top * em,
                        w: (x1 - x0) * em,
                        h: (top - bottom) * em,
                    };
                    if !inner.contains(&glyph) {
                        out.push(format!(
                            "{:?}: glyph {glyph:?} outside {inner:?}",
                            caption.text
                        ));
                    }
                }
            }
        }
        out
    }

    #[derive(Clone, Copy, Debug)]
    enum Mode {
        Url,
        Key,
        Notes,
        None,
    }

    fn plan_one(
        template: &crate::print::Template,
        key: &str,
        notes: &str,
        mode: Mode,
        slot: usize,
    ) -> (Job, Vec<Symbol>) {
        let url = format!("https://0x1f.ie/{key}");
        let caption = match mode {
            Mode::Url => url.clone(),
            Mode::Key => key.to_owned(),
            Mode::Notes => notes.to_owned(),
            Mode::None => String::new(),
        };
        let codes = vec![crate::qr::encode_symbol(&url, crate::qr::EcLevel::L).expect("fits")];
        let job = Job {
            target: Target::Sheet(template.clone()),
            tags: vec![Tag { text: url, caption }],
            options: Options {
                skip: slot % template.grid.per_sheet(),
                ..Options::default()
            },
        };
        (job, codes)
    }

    #[test]
    fn every_template_prints_a_short_url_in_every_caption_mode_inside_its_safe_area() {
        for template in templates() {
            let g = template.grid;
            for mode in [Mode::Url, Mode::Key, Mode::Notes, Mode::None] {
                let (job, codes) = plan_one(&template, "H83if", "Front door, gym", mode, 0);
                let pages = plan(&job, &codes)
                    .unwrap_or_else(|e| panic!("{} {mode:?}: {e}", template.name));
                assert_eq!(
                    pages[0].captions.len(),
                    usize::from(!matches!(mode, Mode::None))
                );
                let outside = ink_outside(&pages, |_| g.label(0), g.safe);
                assert!(
                    outside.is_empty(),
                    "{} {mode:?}: {outside:?}",
                    template.name
                );
            }
        }
    }

    proptest::proptest! {
        /// Issue 31: on every template, in every slot, for every caption
        /// mode and captions short and long, all ink (the code's modules,
        /// each glyph's outline box) lies at least the template's safe
        /// margin (1.5 mm on the built-in ones) inside the label, or the job
        /// is refused.
        #[test]
        fn all_ink_stays_inside_the_safe_area(
            template in 0..templates().len(),
            key in "[A-Za-z0-9]{5}|[a-z0-9-]{1,12}(/[a-z0-9-]{1,12}){0,3}",
            notes in "[ -~\u{c0}-\u{ff}\u{1e9e}gjpqy]{1,60}",
            mode in proptest::sample::select(vec![Mode::Url, Mode::Key, Mode::Notes, Mode::None]),
            slot in 0usize..100,
            font_pt in proptest::option::of(4.0f64..16.0),
            code_mm in proptest::option::of(8.0f64..40.0),
        ) {
            let template = &templates()[template];
            let (mut job, codes) = plan_one(template, &key, &notes, mode, slot);
            job.options.caption_pt = font_pt;
            job.options.code_size = code_mm.map_or(CodeSize::Fill, CodeSize::Exact);
            let g = template.grid;
            if let Ok(pages) = plan(&job, &codes) {
                let label = g.label(job.options.skip);
                let outside = ink_outside(&pages, |_| label, g.safe);
                proptest::prop_assert!(outside.is_empty(), "{}: {outside:?}", template.name);
            }
        }

        /// A poster's ink stays inside its margin, safe area and all.
        #[test]
        fn poster_ink_stays_inside_the_page(
            w in 50.0f64..600.0,
            h in 50.0f64..600.0,
            notes in "[ -~\u{c0}-\u{ff}gjpqy]{1,80}",
        ) {
            let url = "https://0x1f.ie/H83if".to_owned();
            let codes = vec![crate::qr::encode_symbol(&url, crate::qr::EcLevel::L).expect("fits")];
            let job = Job {
                target: Target::Poster { paper: crate::print::Paper { w, h }, bleed: 0.0, crop_marks: false },
                tags: vec![Tag { text: url, caption: notes }],
                options: Options::default(),
            };
            if let Ok(pages) = plan(&job, &codes) {
                let m = layout::poster_margin(w, h);
                let area = Rect { x: 0.0, y: 0.0, w, h }.inset(m);
                let outside = ink_outside(&pages, |_| area, SAFE_MARGIN);
                proptest::prop_assert!(outside.is_empty(), "{outside:?}");
            }
        }
    }

    #[test]
    fn captions_go_beside_codes_on_wide_labels_and_under_them_otherwise() {
        let (wide, codes) = job("L7163", 1, 0);
        let pages = plan(&wide, &codes).expect("fits");
        let (code, caption) = (&pages[0].codes[0].0, &pages[0].captions[0]);
        assert!(caption.x > code.rect.x + code.rect.w);
        assert!(caption.baseline < code.rect.y + code.rect.h);

        let (tall, codes) = job("L7160", 1, 0);
        let pages = plan(&tall, &codes).expect("fits");
        let (code, caption) = (&pages[0].codes[0].0, &pages[0].captions[0]);
        let b = font::text_box(caption.text);
        let centre = caption.x + (b.left + b.right) / 2.0 * caption.size_pt * layout::PT;
        assert!((centre - code.rect.centre().0).abs() < 1e-9);
        assert!(caption.baseline > code.rect.y + code.rect.h);
        assert_eq!(caption.size_pt, LABEL_CAPTION_PT);
    }
}
