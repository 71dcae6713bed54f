//! A print job turned into pages of things to draw, in millimetres: the
//! decisions (which label, what size, which caption size) made here, purely,
//! so `pdf.rs` only paints.

use crate::qr::Symbol;

use super::font;
use super::layout::{
    self, CodeBox, CodeSize, FitError, LABEL_PADDING, PosterPage, Rect, caption_height,
    caption_size,
};
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

/// A line of text centred on `centre_x`, its baseline at `baseline`.
#[derive(Debug, PartialEq)]
pub struct Caption<'a> {
    pub text: &'a str,
    pub size_pt: f64,
    pub centre_x: f64,
    pub baseline: f64,
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
    for ((tag, code), (page, slot)) in job.tags.iter().zip(codes).zip(slots) {
        let label = grid.label(slot);
        let text = tag.caption.as_str();
        let asked = job.options.caption_pt.unwrap_or(LABEL_CAPTION_PT);
        let plan = &mut pages[page];
        if !text.is_empty() && label.w >= layout::BESIDE_RATIO * label.h {
            let em = font::em_width(text);
            let beside = layout::fit_beside(
                label,
                LABEL_PADDING,
                code.width(),
                job.options.code_size,
                em,
                asked,
            )?;
            check_caption(text, beside.size_pt, label.w - beside.code.rect.w)?;
            plan.codes.push((beside.code, code));
            plan.captions.push(Caption {
                text,
                size_pt: beside.size_pt,
                centre_x: beside.text_x + beside.text_w / 2.0,
                baseline: beside.baseline,
            });
            continue;
        }
        let inner = label.w - 2.0 * LABEL_PADDING;
        let size_pt = if text.is_empty() {
            0.0
        } else {
            caption_size(asked, font::em_width(text), inner)
        };
        check_caption(text, size_pt, inner)?;
        let band = caption_height(size_pt);
        let code_box = fit_code(label, code, band, job.options.code_size)?;
        plan.codes.push((code_box, code));
        if size_pt > 0.0 {
            plan.captions.push(caption_under(&code_box, text, size_pt));
        }
    }
    Ok(pages)
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
    let size_pt = if text.is_empty() {
        0.0
    } else {
        caption_size(asked, font::em_width(text), area.w)
    };
    let band = caption_height(size_pt);
    let code_box = fit_code(area, code, band, job.options.code_size)?;
    let mut plan = PagePlan::new(page.media_w, page.media_h);
    if page.media_w > trim.w {
        plan.trim = Some(trim);
        plan.bleed = page.bleed;
    }
    plan.codes.push((code_box, code));
    if size_pt > 0.0 {
        plan.captions.push(caption_under(&code_box, text, size_pt));
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

fn fit_code(area: Rect, code: &Symbol, band: f64, size: CodeSize) -> Result<CodeBox, FitError> {
    layout::fit_code(area, LABEL_PADDING, code.width(), band, size)
}

fn caption_under<'a>(code: &CodeBox, text: &'a str, size_pt: f64) -> Caption<'a> {
    Caption {
        text,
        size_pt,
        centre_x: code.rect.centre().0,
        // The baseline one font size under the box leaves a quarter for
        // descenders inside the band.
        baseline: code.rect.y + code.rect.h + size_pt * layout::PT,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::print::{Options, Tag};

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

    #[test]
    fn captions_go_beside_codes_on_wide_labels_and_under_them_otherwise() {
        let (wide, codes) = job("L7163", 1, 0);
        let pages = plan(&wide, &codes).expect("fits");
        let (code, caption) = (&pages[0].codes[0].0, &pages[0].captions[0]);
        assert!(caption.centre_x > code.rect.x + code.rect.w);
        assert!(caption.baseline < code.rect.y + code.rect.h);

        let (tall, codes) = job("L7160", 1, 0);
        let pages = plan(&tall, &codes).expect("fits");
        let (code, caption) = (&pages[0].codes[0].0, &pages[0].captions[0]);
        assert!((caption.centre_x - code.rect.centre().0).abs() < 1e-9);
        assert!(caption.baseline > code.rect.y + code.rect.h);
        assert_eq!(caption.size_pt, LABEL_CAPTION_PT);
    }
}
