//! Print-ready PDF: tags on label stock (sheets and label printers' media)
//! and posters, as vector codes at exact physical sizes with captions in an
//! embedded font.
//!
//! The API is one call, [`render`], from a [`Job`] to the PDF's bytes, which
//! are the same for the same job (no dates, no random IDs), so the CLI, the
//! console, the admin listener's `/qr/KEY.pdf` and the REST API give
//! byte-identical files: each parses its options into one
//! [`PrintOptions`] ([`request`]) and renders its [`PrintOptions::job`].

pub mod answer;
pub mod budget;
mod font;
pub mod image_query;
pub mod layout;
mod pdf;
mod plan;
pub mod request;
pub mod spelling;
pub mod stock;
pub mod tag_image;
pub mod template;

pub use layout::{CodeSize, FitError, MIN_MODULE_MM};
pub use request::{CaptionKind, OptionError, PrintOptions, Spelling};
pub use template::{Length, Paper, Template, TemplateError};

use std::sync::Arc;

use image::RgbaImage;

use crate::qr::brand::{self, BrandError, Branded, Palette};
use crate::qr::{self, EcLevel, QrError, RenderOptions, Symbol};

/// One tag: what its code encodes and the line printed under it.
#[derive(Clone, Debug)]
pub struct Tag {
    pub text: String,
    /// Empty for no caption.
    pub caption: String,
}

/// Where the tags go.
#[derive(Clone, Debug)]
pub enum Target {
    /// One tag a label, filling sheets in order.
    Sheet(Template),
    /// One tag a page of this size.
    Poster {
        paper: Paper,
        /// Millimetres of bleed around the page (0 for none).
        bleed: f64,
        crop_marks: bool,
    },
}

/// A logo in the centre of every code: the image, and its square as a
/// percentage of the symbol's side (as `qrtag qr --logo-size`).
#[derive(Clone, Debug)]
pub struct Logo {
    pub image: Arc<RgbaImage>,
    pub percent: u32,
}

/// Colours and a logo, as `qrtag qr` brands a code: the default is black on
/// white without a logo, which draws exactly the plain codes.
#[derive(Clone, Debug, Default)]
pub struct Brand {
    pub palette: Palette,
    pub logo: Option<Logo>,
}

#[derive(Clone, Debug)]
pub struct Options {
    pub code_size: CodeSize,
    /// The caption's size in points; `None` for the default (8 pt on a
    /// label, a twelfth of the code on a poster), shrunk to fit either way.
    pub caption_pt: Option<f64>,
    /// Labels already used on the first sheet.
    pub skip: usize,
    /// Draw every label's border: an alignment page.
    pub outline: bool,
    pub ec: EcLevel,
    pub brand: Brand,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            code_size: CodeSize::Fill,
            caption_pt: None,
            skip: 0,
            outline: false,
            ec: EcLevel::L,
            brand: Brand::default(),
        }
    }
}

#[derive(Clone, Debug)]
pub struct Job {
    pub target: Target,
    pub tags: Vec<Tag>,
    pub options: Options,
}

#[derive(Debug, thiserror::Error)]
pub enum PrintError {
    #[error(transparent)]
    Fit(#[from] FitError),
    #[error("skipping {skip} labels is beyond the sheet: it has {per}, so skip at most {}", per - 1)]
    SkipBeyondSheet { skip: usize, per: usize },
    #[error("{}", caption_too_long(text, *width, Spelling::Flag))]
    CaptionTooLong { text: String, width: f64 },
    #[error(transparent)]
    Qr(#[from] QrError),
    /// A code with its logo that does not read back.
    #[error(transparent)]
    Brand(#[from] BrandError),
    #[error("the embedded caption font did not load")]
    Font,
    #[error("a page size PDF cannot hold")]
    PageSize,
    #[error("PDF writing failed: {0}")]
    Pdf(String),
    #[error(
        "{codes} codes of {modules} modules in all are more than one request may draw \
         (at most {limit}): print fewer keys at once, or shorter keys, or a lower ec"
    )]
    OverBudget {
        modules: u64,
        limit: u64,
        codes: usize,
    },
}

fn caption_too_long(text: &str, width: f64, spelling: Spelling) -> String {
    format!(
        "the caption {text:?} does not fit {width:.1} mm at a readable size: use {} or {}",
        spelling.with_value("caption", "key"),
        spelling.with_value("caption", "none"),
    )
}

impl PrintError {
    /// The refusal in one line, naming options as `spelling` does: the
    /// CLI's flags (as `Display` does) or the query parameters and form
    /// fields of the HTTP surfaces.
    pub fn message(&self, spelling: Spelling) -> String {
        match self {
            PrintError::CaptionTooLong { text, width } => caption_too_long(text, *width, spelling),
            PrintError::Fit(fit) => fit.message(spelling),
            other => other.to_string(),
        }
    }

    /// A job that cannot be laid out as asked: the asker's to change, so the
    /// CLI answers it as a usage error.
    pub fn is_usage(&self) -> bool {
        matches!(
            self,
            PrintError::Fit(_)
                | PrintError::SkipBeyondSheet { .. }
                | PrintError::CaptionTooLong { .. }
                | PrintError::PageSize
                | PrintError::OverBudget { .. }
        )
    }
}

/// The job as a PDF document.
pub fn render(job: &Job) -> Result<Vec<u8>, PrintError> {
    let brand = &job.options.brand;
    let codes = match &brand.logo {
        Some(logo) => with_logo(&job.tags, job.options.ec, brand.palette, logo)?,
        None => encode_all(&job.tags, job.options.ec)?,
    };
    let pages = plan::plan(job, &codes)?;
    pdf::write(&pages, brand)
}

/// Each tag's symbol with room for `logo`, at the error correction
/// `brand::plan_logo` raises it to, each decoded first with the logo drawn
/// over it (`Branded::check`, as `qrtag qr --logo` does): a code the logo
/// makes unreadable is refused, not printed. Tags encoding the same text are
/// checked once.
fn with_logo(
    tags: &[Tag],
    ec: EcLevel,
    palette: Palette,
    logo: &Logo,
) -> Result<Vec<Symbol>, PrintError> {
    let mut codes: Vec<Symbol> = Vec::with_capacity(tags.len());
    let mut seen: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    for (i, tag) in tags.iter().enumerate() {
        if let Some(&at) = seen.get(tag.text.as_str()) {
            codes.push(codes[at].clone());
            continue;
        }
        let (code, side) = brand::plan_logo(&tag.text, logo.percent, ec)?;
        let branded = Branded {
            code,
            palette,
            options: RenderOptions::new(
                RenderOptions::DEFAULT_SCALE,
                layout::QUIET_MODULES as u32,
            )?,
            logo: Some((&logo.image, side)),
        };
        branded.check(&tag.text, RenderOptions::DEFAULT_SCALE)?;
        codes.push(Symbol::from(&branded.code));
        seen.insert(&tag.text, i);
    }
    Ok(codes)
}

/// Encodes every tag, on every core: choosing each symbol's segments and
/// mask is most of a large run's time, and each code is independent.
fn encode_all(tags: &[Tag], ec: EcLevel) -> Result<Vec<Symbol>, QrError> {
    let threads = std::thread::available_parallelism().map_or(1, usize::from);
    let chunk = tags.len().div_ceil(threads).max(64);
    let chunks: Vec<Result<Vec<_>, QrError>> = std::thread::scope(|scope| {
        let handles: Vec<_> = tags
            .chunks(chunk)
            .map(|part| {
                scope.spawn(move || {
                    part.iter()
                        .map(|tag| qr::encode_symbol(&tag.text, ec))
                        .collect::<Result<Vec<_>, _>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
            })
            .collect()
    });
    let mut codes = Vec::with_capacity(tags.len());
    for part in chunks {
        codes.extend(part?);
    }
    Ok(codes)
}

/// `--list-templates`: name, then description, one a line.
pub fn list_templates() -> String {
    let width = stock::STOCK.iter().map(|s| s.name.len()).max().unwrap_or(0);
    let mut out = String::new();
    for s in stock::STOCK {
        out.push_str(&format!("{:width$}  {}\n", s.name, s.description));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tags(n: usize) -> Vec<Tag> {
        (0..n)
            .map(|i| Tag {
                text: format!("https://0x1f.ie/k{i:04}"),
                caption: format!("https://0x1f.ie/k{i:04}"),
            })
            .collect()
    }

    fn job(target: &str, n: usize) -> Job {
        Job {
            target: Target::Sheet(target.parse().expect("built in")),
            tags: tags(n),
            options: Options::default(),
        }
    }

    #[test]
    fn the_same_job_gives_the_same_bytes() {
        let a = render(&job("L7163", 20)).expect("renders");
        let b = render(&job("L7163", 20)).expect("renders");
        assert!(a.starts_with(b"%PDF-"));
        assert_eq!(a, b);
    }

    #[test]
    fn skipping_past_the_sheet_is_refused() {
        let mut j = job("L7163", 1);
        j.options.skip = 14;
        let err = render(&j).expect_err("beyond");
        assert!(err.is_usage());
        assert!(err.to_string().contains("at most 13"), "{err}");
    }
}
