//! What a print job is asked with, the same from every surface: `qrtag
//! print`'s flags (clap fills [`PrintOptions`] with the parsers below) and
//! the query string of `/qr/KEY.pdf`, the REST API's `print.pdf` and the
//! console's PDF forms ([`PrintOptions::from_query`], the flags' names
//! without their dashes). Each value goes through one parser whichever way
//! it came, and [`PrintOptions::job`] is the one check of how they combine,
//! so the same options give the same [`Job`] and so the same bytes.

use std::str::FromStr;

use clap::ValueEnum;

use std::sync::Arc;

use image::RgbaImage;

use super::{Brand, CodeSize, Job, Length, Logo, Options, Paper, Tag, Target, Template};
use crate::qr::EcLevel;
use crate::qr::brand::{Colour, Palette};
use crate::values::link_key::LinkKey;
use crate::values::public_url::PublicUrl;

/// What is printed under each code.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, ValueEnum)]
pub enum CaptionKind {
    /// The short URL, as a person would type it.
    #[default]
    Url,
    /// The key alone.
    Key,
    /// The first line of the link's notes (the key when it has none).
    Notes,
    /// The link's title (the key when it has none).
    Title,
    /// No caption: the code alone, as big as the label allows.
    None,
}

impl CaptionKind {
    pub const ALL: [CaptionKind; 5] = [
        CaptionKind::Url,
        CaptionKind::Key,
        CaptionKind::Notes,
        CaptionKind::Title,
        CaptionKind::None,
    ];

    /// The value as the flag and the query take it.
    pub fn name(self) -> &'static str {
        match self {
            CaptionKind::Url => "url",
            CaptionKind::Key => "key",
            CaptionKind::Notes => "notes",
            CaptionKind::Title => "title",
            CaptionKind::None => "none",
        }
    }
}

impl FromStr for CaptionKind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        CaptionKind::ALL
            .into_iter()
            .find(|k| k.name() == s)
            .ok_or_else(|| {
                format!("{s:?} is not a caption: expected url, key, notes, title or none")
            })
    }
}

/// The caption sizes `--font-size` takes, in points (the REST API's
/// document declares the same range).
pub const FONT_SIZES: std::ops::RangeInclusive<f64> = 2.0..=500.0;

/// `--font-size`: points from 2 to 500.
pub fn font_size(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(pt) if FONT_SIZES.contains(&pt) => Ok(pt),
        _ => Err("expected a size in points from 2 to 500".into()),
    }
}

/// `--logo-size`: the logo's square as a percentage of the code's side.
pub fn logo_size(s: &str) -> Result<u32, String> {
    match s.trim().parse::<u32>() {
        Ok(pct) if LOGO_SIZES.contains(&pct) => Ok(pct),
        _ => Err(format!(
            "expected a percentage of the code's side from {} to {}",
            LOGO_SIZES.start(),
            LOGO_SIZES.end()
        )),
    }
}

/// The logo sizes `logo_size` takes, in percent of the code's side (the
/// OpenAPI document declares the same range).
pub const LOGO_SIZES: std::ops::RangeInclusive<u32> = 5..=60;

/// [`LOGO_SIZES`] as clap's ranged parser takes it (`--logo-size`).
pub fn logo_sizes_for_clap() -> std::ops::RangeInclusive<i64> {
    i64::from(*LOGO_SIZES.start())..=i64::from(*LOGO_SIZES.end())
}

/// The logo's size when none is given: as `qrtag qr --logo-size`.
pub const DEFAULT_LOGO_SIZE: u32 = 20;

/// `--skip`: a count of labels.
pub fn skip(s: &str) -> Result<usize, String> {
    s.trim()
        .parse::<usize>()
        .map_err(|_| format!("{s:?} is not a whole number of labels"))
}

/// Every option of a print job besides the keys.
#[derive(Debug, Clone, PartialEq)]
pub struct PrintOptions {
    pub template: Option<Template>,
    pub poster: Option<Paper>,
    pub skip: usize,
    pub caption: CaptionKind,
    pub font_size: Option<f64>,
    pub code_size: Option<Length>,
    pub outline: bool,
    pub bleed: Option<Length>,
    pub crop_marks: bool,
    pub ec: EcLevel,
    /// The codes' colours (black on white when left out).
    pub dark: Option<Colour>,
    pub light: Option<Colour>,
    /// A dark colour lighter than the light one (the command line only).
    pub allow_inverted: bool,
    /// The logo in each code's centre: the file `qrtag print --logo` names,
    /// or the one the server was started with (`serve --print-logo`).
    pub logo: bool,
    pub logo_size: Option<u32>,
}

impl Default for PrintOptions {
    fn default() -> Self {
        PrintOptions {
            template: None,
            poster: None,
            skip: 0,
            caption: CaptionKind::Url,
            font_size: None,
            code_size: None,
            outline: false,
            bleed: None,
            crop_marks: false,
            ec: EcLevel::L,
            dark: None,
            light: None,
            allow_inverted: false,
            logo: false,
            logo_size: None,
        }
    }
}

pub use super::spelling::Spelling;

/// An option refused, and the field at fault (its query name, which is
/// also the console's form field).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct OptionError {
    pub field: &'static str,
    pub message: String,
}

/// The names [`PrintOptions::from_query`] reads.
pub const PARAMS: [&str; 14] = [
    "template",
    "poster",
    "skip",
    "caption",
    "font-size",
    "code-size",
    "outline",
    "bleed",
    "crop-marks",
    "ec",
    "dark",
    "light",
    "logo",
    "logo-size",
];

impl PrintOptions {
    /// The options of a query string: each of [`PARAMS`] at most once,
    /// through the flag's own parser; an empty value is the default (a form's
    /// empty field); `v` (a cache buster) and `also_ignored` (the caller's
    /// own, such as the console's `key`) are skipped, anything else refused
    /// by name.
    pub fn from_query(query: &str, also_ignored: &[&str]) -> Result<Self, OptionError> {
        let mut seen: Vec<&'static str> = Vec::new();
        let mut o = PrintOptions::default();
        for (name, value) in form_urlencoded::parse(query.as_bytes()) {
            let Some(&field) = PARAMS.iter().find(|p| **p == name) else {
                if name == "v" || also_ignored.contains(&&*name) {
                    continue;
                }
                return Err(OptionError {
                    field: "",
                    message: format!(
                        "unknown parameter {name:?}: use {} (and v, ignored, to bust caches)",
                        PARAMS.join(", ")
                    ),
                });
            };
            if seen.contains(&field) {
                return Err(bad(field, "given more than once"));
            }
            seen.push(field);
            let value = value.trim();
            if value.is_empty() && !matches!(field, "outline" | "crop-marks" | "logo") {
                continue;
            }
            let fail = |e: &dyn std::fmt::Display| bad(field, e);
            match field {
                "template" => o.template = Some(value.parse().map_err(|e| fail(&e))?),
                "poster" => o.poster = Some(value.parse().map_err(|e| fail(&e))?),
                "skip" => o.skip = skip(value).map_err(|e| fail(&e))?,
                "caption" => o.caption = value.parse().map_err(|e| fail(&e))?,
                "font-size" => o.font_size = Some(font_size(value).map_err(|e| fail(&e))?),
                "code-size" => o.code_size = Some(value.parse().map_err(|e| fail(&e))?),
                "outline" => o.outline = switch(value).map_err(|e| fail(&e))?,
                "bleed" => o.bleed = Some(Length::parse_or_zero(value).map_err(|e| fail(&e))?),
                "crop-marks" => o.crop_marks = switch(value).map_err(|e| fail(&e))?,
                "dark" => o.dark = Some(value.parse().map_err(|e| fail(&e))?),
                "light" => o.light = Some(value.parse().map_err(|e| fail(&e))?),
                "logo" => o.logo = switch(value).map_err(|e| fail(&e))?,
                "logo-size" => o.logo_size = Some(logo_size(value).map_err(|e| fail(&e))?),
                _ => o.ec = value.parse().map_err(|e| fail(&e))?,
            }
        }
        Ok(o)
    }

    /// Whether a tag's caption needs the link's notes or title, which
    /// change without a restart and are read from the store.
    pub fn needs_notes(&self) -> bool {
        matches!(self.caption, CaptionKind::Notes | CaptionKind::Title)
    }

    /// The text of `doc` the caption prints ([`PrintOptions::tag`]'s
    /// `text`): its notes or its title, `None` for the other captions.
    pub fn caption_text(&self, doc: &crate::link::Document) -> Option<String> {
        match self.caption {
            CaptionKind::Notes => crate::link::notes(doc).map(|n| n.into_owned()),
            CaptionKind::Title => crate::link::title(doc).map(str::to_owned),
            _ => None,
        }
    }

    /// The target the options name, checked as a whole: a template or a
    /// poster, and the options of one not given to the other.
    pub fn target(&self, spelling: Spelling) -> Result<Target, OptionError> {
        let n = |f: &str| spelling.name(f);
        match (&self.template, self.poster) {
            (Some(template), None) => {
                for (given, field) in [
                    (self.bleed.is_some(), "bleed"),
                    (self.crop_marks, "crop-marks"),
                ] {
                    if given {
                        return Err(said(
                            field,
                            format!("{} is for a poster, not a label sheet", n(field)),
                        ));
                    }
                }
                Ok(Target::Sheet(template.clone()))
            }
            (None, Some(paper)) => {
                for (given, field) in [(self.skip > 0, "skip"), (self.outline, "outline")] {
                    if given {
                        return Err(said(
                            field,
                            format!("{} is for a label sheet, not a poster", n(field)),
                        ));
                    }
                }
                let bleed = self.bleed.map_or(0.0, Length::mm);
                let page = super::layout::poster_page(paper.w, paper.h, bleed, self.crop_marks);
                if page.media_w.max(page.media_h) > super::template::MAX_PAGE_MM + 1e-9 {
                    return Err(said(
                        "bleed",
                        format!(
                            "the page with its bleed and crop marks is {:.0} mm a side; \
                             a PDF page is at most 5080 mm (200 in)",
                            page.media_w.max(page.media_h)
                        ),
                    ));
                }
                Ok(Target::Poster {
                    paper,
                    bleed,
                    crop_marks: self.crop_marks,
                })
            }
            (Some(_), Some(_)) => Err(said(
                "poster",
                format!("give {} or {}, not both", n("template"), n("poster")),
            )),
            (None, None) => Err(said(
                "template",
                match spelling {
                    Spelling::Flag => {
                        "give --template NAME or --poster SIZE (see --list-templates)".to_owned()
                    }
                    Spelling::Param => "give template=NAME or poster=SIZE".to_owned(),
                },
            )),
        }
    }

    /// The colours and logo asked for, checked: a pair a camera cannot
    /// read is refused (on `dark`), a logo asked for where there is none
    /// (`logo`: a server started without `--print-logo`), a logo size
    /// without a logo. `logo` is the image the surface has.
    pub fn brand(
        &self,
        logo: Option<&Arc<RgbaImage>>,
        spelling: Spelling,
    ) -> Result<Brand, OptionError> {
        let n = |f: &str| spelling.name(f);
        let palette = Palette::new(
            self.dark.unwrap_or(Colour::BLACK),
            self.light.unwrap_or(Colour::WHITE),
            self.allow_inverted,
        )
        .map_err(|e| said("dark", e.to_string()))?;
        if self.logo_size.is_some() && !self.logo {
            return Err(said(
                "logo-size",
                format!(
                    "{} is the size of a {}: ask for one",
                    n("logo-size"),
                    n("logo")
                ),
            ));
        }
        let logo = match (self.logo, logo) {
            (false, _) => None,
            (true, Some(image)) => Some(Logo {
                image: Arc::clone(image),
                percent: self.logo_size.unwrap_or(DEFAULT_LOGO_SIZE),
            }),
            (true, None) => {
                return Err(said(
                    "logo",
                    "this server has no logo: its operator sets one with `qrtag serve --print-logo FILE.png`",
                ));
            }
        };
        Ok(Brand { palette, logo })
    }

    /// The job for `tags`, as [`super::render`] takes it, with `logo` for a
    /// `logo` option (see [`Self::brand`]).
    pub fn job(
        &self,
        tags: Vec<Tag>,
        spelling: Spelling,
        logo: Option<&Arc<RgbaImage>>,
    ) -> Result<Job, OptionError> {
        let brand = self.brand(logo, spelling)?;
        Ok(Job {
            target: self.target(spelling)?,
            tags,
            options: Options {
                code_size: self
                    .code_size
                    .map_or(CodeSize::Fill, |l| CodeSize::Exact(l.mm())),
                caption_pt: self.font_size,
                skip: self.skip,
                outline: self.outline,
                ec: self.ec,
                brand,
            },
        })
    }

    /// `key`'s tag: what its code encodes (as `qrtag qr` encodes it) and
    /// its caption; `text` (the link's notes or title, as
    /// [`PrintOptions::caption_text`] picks) is read only for
    /// [`CaptionKind::Notes`] and [`CaptionKind::Title`], whose caption is
    /// its first non-blank line, or the key.
    pub fn tag(
        &self,
        public_url: &PublicUrl,
        key: &LinkKey,
        uppercase_prefix: bool,
        text: Option<&str>,
    ) -> Tag {
        let caption = match self.caption {
            CaptionKind::Url => public_url.short_url(key.as_str()),
            CaptionKind::Key => key.to_string(),
            CaptionKind::Notes | CaptionKind::Title => text
                .and_then(|n| n.lines().map(str::trim).find(|l| !l.is_empty()))
                .map_or_else(|| key.to_string(), str::to_owned),
            CaptionKind::None => String::new(),
        };
        Tag {
            text: crate::print::tag_image::tag_text(public_url, key, uppercase_prefix),
            caption,
        }
    }
}

/// Which field a layout refusal is about, for a form to mark.
pub fn field_of(e: &super::PrintError) -> Option<&'static str> {
    use super::{FitError, PrintError};
    match e {
        PrintError::Fit(FitError::TooBig { .. }) => Some("code-size"),
        PrintError::Fit(FitError::ModuleTooSmall { .. }) => Some("template"),
        PrintError::SkipBeyondSheet { .. } => Some("skip"),
        PrintError::CaptionTooLong { .. } => Some("caption"),
        PrintError::PageSize => Some("poster"),
        _ => None,
    }
}

fn bad(field: &'static str, e: impl std::fmt::Display) -> OptionError {
    OptionError {
        field,
        message: format!("bad {field}: {e}"),
    }
}

/// A refusal of how options combine: the message says it all.
fn said(field: &'static str, message: impl Into<String>) -> OptionError {
    OptionError {
        field,
        message: message.into(),
    }
}

/// A checkbox or a switch: `true` or `false` (`on` as browsers send a
/// ticked box without a value, empty for a bare `?outline`).
fn switch(s: &str) -> Result<bool, String> {
    match s {
        "" | "true" | "on" => Ok(true),
        "false" => Ok(false),
        other => Err(format!("{other:?}: expected true or false")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_query_fills_the_same_options_as_the_flags() {
        let o = PrintOptions::from_query(
            "template=l7163&skip=3&caption=key&font-size=9&code-size=20mm&outline=true&ec=M&v=2",
            &[],
        )
        .expect("valid");
        assert_eq!(
            o,
            PrintOptions {
                template: Some("L7163".parse().expect("built in")),
                skip: 3,
                caption: CaptionKind::Key,
                font_size: Some(9.0),
                code_size: Some("20mm".parse().expect("length")),
                outline: true,
                ec: EcLevel::M,
                ..PrintOptions::default()
            }
        );
        let poster =
            PrintOptions::from_query("poster=A3&bleed=3mm&crop-marks=true&code-size=", &[])
                .expect("valid");
        assert_eq!(poster.poster, Some(Paper { w: 297.0, h: 420.0 }));
        assert_eq!(poster.code_size, None);
        assert!(matches!(
            poster.target(Spelling::Param),
            Ok(Target::Poster { bleed, crop_marks: true, .. }) if bleed == 3.0
        ));
    }

    #[test]
    fn every_refusal_names_its_field() {
        for (query, field) in [
            ("template=L7136", "template"),
            ("template=L7163&template=L7163", "template"),
            ("poster=A9", "poster"),
            ("skip=-1", "skip"),
            ("caption=headline", "caption"),
            ("font-size=1", "font-size"),
            ("code-size=25furlongs", "code-size"),
            ("outline=maybe", "outline"),
            ("bleed=-3mm", "bleed"),
            ("poster=99999x99999in", "poster"),
            ("ec=X", "ec"),
            ("dark=navy", "dark"),
            ("light=#12", "light"),
            ("logo=maybe", "logo"),
            ("logo-size=70", "logo-size"),
            ("colour=red", ""),
        ] {
            let err = PrintOptions::from_query(query, &[]).expect_err(query);
            assert_eq!(err.field, field, "{query}: {err}");
        }
        assert!(PrintOptions::from_query("key=x", &["key"]).is_ok());
    }

    #[test]
    fn options_that_do_not_go_together_are_refused_as_a_whole() {
        let check = |query: &str| {
            PrintOptions::from_query(query, &[])
                .expect("each value valid")
                .target(Spelling::Param)
                .map(|_| ())
                .map_err(|e| e.field)
        };
        assert_eq!(check("template=L7163"), Ok(()));
        assert_eq!(check(""), Err("template"));
        assert_eq!(check("template=L7163&poster=A3"), Err("poster"));
        assert_eq!(check("poster=A3&skip=2"), Err("skip"));
        assert_eq!(check("poster=A3&outline=true"), Err("outline"));
        assert_eq!(check("template=L7163&bleed=3mm"), Err("bleed"));
        assert_eq!(check("template=L7163&crop-marks=true"), Err("crop-marks"));
        assert_eq!(check("poster=200x200in"), Ok(()));
        assert_eq!(check("poster=200x200in&bleed=3mm"), Err("bleed"));
        assert_eq!(check("poster=A0&bleed=99999mm"), Err("bleed"));
        let flags = PrintOptions::default().target(Spelling::Flag);
        assert!(
            flags
                .expect_err("none")
                .message
                .contains("--template NAME or --poster SIZE")
        );
    }

    #[test]
    fn colours_and_a_logo_make_the_brand() {
        let image = Arc::new(RgbaImage::new(4, 4));
        let brand = |query: &str, logo: Option<&Arc<RgbaImage>>| {
            PrintOptions::from_query(query, &[])
                .expect("each value valid")
                .brand(logo, Spelling::Param)
                .map_err(|e| e.field)
        };
        let b = brand("dark=%231e3a8a&light=fff&logo&logo-size=30", Some(&image)).expect("valid");
        assert_eq!(b.palette.dark(), "#1e3a8a".parse().expect("colour"));
        assert_eq!(b.logo.map(|l| l.percent), Some(30));
        assert!(brand("", None).expect("plain").logo.is_none());
        assert_eq!(brand("dark=777&light=888", None).err(), Some("dark"));
        assert_eq!(brand("dark=fff&light=000", None).err(), Some("dark"));
        assert_eq!(brand("logo=true", None).err(), Some("logo"));
        assert_eq!(brand("logo-size=30", Some(&image)).err(), Some("logo-size"));
        let default = brand("logo=on", Some(&image)).expect("valid");
        assert_eq!(default.logo.map(|l| l.percent), Some(DEFAULT_LOGO_SIZE));
    }

    #[test]
    fn captions_of_every_kind() {
        let url = PublicUrl::parse("https://0x1f.ie").expect("valid");
        let key = LinkKey::parse("docs/api").expect("valid");
        let with = |caption, notes| {
            PrintOptions {
                caption,
                ..PrintOptions::default()
            }
            .tag(&url, &key, false, notes)
            .caption
        };
        assert_eq!(with(CaptionKind::Url, None), "https://0x1f.ie/docs/api");
        assert_eq!(with(CaptionKind::Key, None), "docs/api");
        assert_eq!(
            with(CaptionKind::Notes, Some("\n  Spring poster \nmore")),
            "Spring poster"
        );
        assert_eq!(with(CaptionKind::Notes, None), "docs/api");
        assert_eq!(
            with(CaptionKind::Title, Some("Spring poster")),
            "Spring poster"
        );
        assert_eq!(with(CaptionKind::Title, None), "docs/api");
        let titled = crate::link::test_document(
            serde_json::json!({"url": "/x", "title": "T", "notes": "N"}),
        );
        let text = |caption| {
            PrintOptions {
                caption,
                ..PrintOptions::default()
            }
            .caption_text(&titled)
        };
        assert_eq!(text(CaptionKind::Title).as_deref(), Some("T"));
        assert_eq!(text(CaptionKind::Notes).as_deref(), Some("N"));
        assert_eq!(text(CaptionKind::Key), None);
        assert_eq!(with(CaptionKind::None, None), "");
    }
}
