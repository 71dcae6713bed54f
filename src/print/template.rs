//! What `--template` and `--poster` take, parsed once into geometry:
//! a built-in name, or `custom:paper=A4,label=40x40mm,cols=4,rows=6,...`,
//! and paper sizes (`A3`, `Letter`, `420x594mm`, `11x17in`).

use std::fmt;
use std::str::FromStr;

use super::layout::{Grid, SAFE_MARGIN};
use super::stock::{self, A4, LETTER};

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum TemplateError {
    #[error("unknown template {name:?}; closest: {closest} (see `qrtag print --list-templates`)")]
    Unknown { name: String, closest: String },
    #[error("custom template: {0}")]
    Custom(String),
    #[error("{0}")]
    Length(String),
    #[error("unknown paper {0:?}: expected A0 to A6, Letter, Legal, Tabloid, or WxH with mm or in")]
    Paper(String),
    #[error("paper {0:?} is too large: a PDF page is at most 5080 mm (200 in) a side")]
    PaperTooLarge(String),
}

/// A length as people write it: `25mm`, `1.5in`, `2.5cm`, `72pt`, or a bare
/// number of millimetres. Always positive and finite.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Length(f64);

impl Length {
    pub fn mm(self) -> f64 {
        self.0
    }

    /// Zero allowed: a bleed or a first label's offset may be nothing.
    fn parse_with(s: &str, zero_ok: bool) -> Result<Self, TemplateError> {
        let t = s.trim();
        let split = t.find(|c: char| c.is_ascii_alphabetic()).unwrap_or(t.len());
        let (number, unit) = t.split_at(split);
        let factor = match unit.to_ascii_lowercase().as_str() {
            "" | "mm" => 1.0,
            "cm" => 10.0,
            "in" => 25.4,
            "pt" => 25.4 / 72.0,
            _ => {
                return Err(TemplateError::Length(format!(
                    "length {s:?}: unknown unit {unit:?}, expected mm, cm, in or pt"
                )));
            }
        };
        match number.trim().parse::<f64>() {
            Ok(n) if n.is_finite() && (n > 0.0 || (zero_ok && n == 0.0)) && n < 1e5 => {
                Ok(Length(n * factor))
            }
            _ => Err(TemplateError::Length(format!(
                "length {s:?}: expected a {} number with a unit, e.g. 25mm",
                if zero_ok { "non-negative" } else { "positive" }
            ))),
        }
    }

    /// Like `FromStr` but zero is a length.
    pub fn parse_or_zero(s: &str) -> Result<Self, TemplateError> {
        Self::parse_with(s, true)
    }
}

impl FromStr for Length {
    type Err = TemplateError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse_with(s, false)
    }
}

/// A paper or poster size in millimetres, portrait as named.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Paper {
    pub w: f64,
    pub h: f64,
}

/// The largest page side a PDF reader must accept (ISO 32000-1, annex C:
/// 14,400 units of 1/72 in at the default user unit), so a poster is never
/// written that viewers and printers refuse or clip.
pub const MAX_PAGE_MM: f64 = 200.0 * 25.4;

/// The ISO A series, A0 first.
const A_SERIES: [(f64, f64); 7] = [
    (841.0, 1189.0),
    (594.0, 841.0),
    (420.0, 594.0),
    (297.0, 420.0),
    (210.0, 297.0),
    (148.0, 210.0),
    (105.0, 148.0),
];

impl FromStr for Paper {
    type Err = TemplateError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let t = s.trim();
        let lower = t.to_ascii_lowercase();
        let named = match lower.as_str() {
            "letter" => Some(LETTER),
            "legal" => Some((LETTER.0, 14.0 * 25.4)),
            "tabloid" | "ledger" => Some((11.0 * 25.4, 17.0 * 25.4)),
            "a4" => Some(A4),
            _ => lower
                .strip_prefix('a')
                .and_then(|n| n.parse::<usize>().ok())
                .and_then(|n| A_SERIES.get(n).copied()),
        };
        if let Some((w, h)) = named {
            return Ok(Paper { w, h });
        }
        let (w, h) = two_lengths(t).ok_or_else(|| TemplateError::Paper(s.to_owned()))?;
        if w.mm() > MAX_PAGE_MM + 1e-9 || h.mm() > MAX_PAGE_MM + 1e-9 {
            return Err(TemplateError::PaperTooLarge(s.to_owned()));
        }
        Ok(Paper {
            w: w.mm(),
            h: h.mm(),
        })
    }
}

/// `40x30mm`, `2x1in` or `40mmx30mm`: a unit on the second applies to both.
fn two_lengths(s: &str) -> Option<(Length, Length)> {
    let (a, b) = s.split_once(['x', 'X', '×'])?;
    let second: Length = b.parse().ok()?;
    let unit: String = b
        .trim()
        .chars()
        .skip_while(|c| !c.is_ascii_alphabetic())
        .collect();
    let first = if a.trim().ends_with(|c: char| c.is_ascii_digit()) {
        format!("{}{unit}", a.trim()).parse().ok()?
    } else {
        a.parse().ok()?
    };
    Some((first, second))
}

/// A label sheet's geometry, and the name it was asked by.
#[derive(Clone, Debug, PartialEq)]
pub struct Template {
    pub name: String,
    pub grid: Grid,
}

impl FromStr for Template {
    type Err = TemplateError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if let Some(spec) = s.strip_prefix("custom:") {
            return custom(spec).map(|grid| Template {
                name: s.to_owned(),
                grid,
            });
        }
        match stock::find(s) {
            Some(found) => Ok(Template {
                name: found.name.to_owned(),
                grid: found.grid,
            }),
            None => Err(TemplateError::Unknown {
                name: s.to_owned(),
                closest: stock::closest(s).join(", "),
            }),
        }
    }
}

impl fmt::Display for Template {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name)
    }
}

const CUSTOM_KEYS: &str = "paper, label, cols, rows, left, top, hpitch, vpitch, radius, safe";

/// `paper=A4,label=40x40mm,cols=4,rows=6` and optionally `left`, `top`
/// (default: the grid centred on the paper), `hpitch`, `vpitch` (default:
/// the label's size, labels touching), `radius`, `safe` (how far inside a
/// label's edge ink stays, default [`SAFE_MARGIN`]). `paper` defaults to the
/// label itself: one label per page, as a label printer takes it.
fn custom(spec: &str) -> Result<Grid, TemplateError> {
    let err = |m: String| TemplateError::Custom(m);
    let mut paper = None;
    let mut label = None;
    let (mut cols, mut rows) = (1u32, 1u32);
    let (mut left, mut top, mut h_pitch, mut v_pitch, mut radius) = (None, None, None, None, 0.0);
    let mut safe = SAFE_MARGIN;
    for part in spec.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (key, value) = part
            .split_once('=')
            .ok_or_else(|| err(format!("{part:?} is not KEY=VALUE ({CUSTOM_KEYS})")))?;
        let count = |v: &str| {
            v.parse::<u32>()
                .ok()
                .filter(|n| (1..=100).contains(n))
                .ok_or_else(|| err(format!("{key}={v}: expected a whole number from 1 to 100")))
        };
        let length = |v: &str| Length::parse_or_zero(v).map(Length::mm);
        match key.trim() {
            "paper" => paper = Some(value.parse::<Paper>()?),
            "label" => {
                label = Some(two_lengths(value).ok_or_else(|| {
                    err(format!(
                        "label={value}: expected WxH with a unit, e.g. 40x40mm"
                    ))
                })?)
            }
            "cols" => cols = count(value)?,
            "rows" => rows = count(value)?,
            "left" => left = Some(length(value)?),
            "top" => top = Some(length(value)?),
            "hpitch" => h_pitch = Some(length(value)?),
            "vpitch" => v_pitch = Some(length(value)?),
            "radius" => radius = length(value)?,
            "safe" => safe = length(value)?,
            other => {
                return Err(err(format!(
                    "unknown key {other:?} (expected {CUSTOM_KEYS})"
                )));
            }
        }
    }
    let (lw, lh) = label.ok_or_else(|| err("label=WxH is required, e.g. label=40x40mm".into()))?;
    let (lw, lh) = (lw.mm(), lh.mm());
    // Without `paper=` the label is the page: bounded as a named paper is
    // (issue 30: `label=99999x99999mm` was a 283,462 pt page).
    if paper.is_none() && (lw > MAX_PAGE_MM + 1e-9 || lh > MAX_PAGE_MM + 1e-9) {
        return Err(err(format!(
            "a {lw:.0} x {lh:.0} mm label without paper= is a page that size: \
             a PDF page is at most 5080 mm (200 in) a side"
        )));
    }
    if 2.0 * safe >= lw.min(lh) {
        return Err(err(format!(
            "safe={safe:.2}mm leaves nothing of a {lw:.1} x {lh:.1} mm label"
        )));
    }
    let paper = paper.unwrap_or(Paper { w: lw, h: lh });
    let h_pitch = h_pitch.unwrap_or(lw);
    let v_pitch = v_pitch.unwrap_or(lh);
    if h_pitch < lw || v_pitch < lh {
        return Err(err(format!(
            "a pitch of {h_pitch:.2} x {v_pitch:.2} mm is smaller than the {lw:.2} x {lh:.2} mm label"
        )));
    }
    let span_w = f64::from(cols - 1) * h_pitch + lw;
    let span_h = f64::from(rows - 1) * v_pitch + lh;
    let left = left.unwrap_or((paper.w - span_w) / 2.0);
    let top = top.unwrap_or((paper.h - span_h) / 2.0);
    if left < 0.0 || top < 0.0 || left + span_w > paper.w + 1e-6 || top + span_h > paper.h + 1e-6 {
        return Err(err(format!(
            "{cols} x {rows} labels of {lw:.1} x {lh:.1} mm do not fit a {:.1} x {:.1} mm page",
            paper.w, paper.h
        )));
    }
    Ok(Grid {
        paper_w: paper.w,
        paper_h: paper.h,
        label_w: lw,
        label_h: lh,
        cols,
        rows,
        left,
        top,
        h_pitch,
        v_pitch,
        radius,
        safe,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lengths_take_units_and_refuse_nonsense() {
        assert_eq!("25mm".parse::<Length>().map(Length::mm), Ok(25.0));
        assert_eq!("1in".parse::<Length>().map(Length::mm), Ok(25.4));
        assert_eq!("2.5cm".parse::<Length>().map(Length::mm), Ok(25.0));
        assert_eq!("30".parse::<Length>().map(Length::mm), Ok(30.0));
        for bad in ["", "0mm", "-3mm", "3furlongs", "NaNmm", "infmm"] {
            assert!(bad.parse::<Length>().is_err(), "{bad}");
        }
        assert_eq!(Length::parse_or_zero("0").map(Length::mm), Ok(0.0));
    }

    #[test]
    fn papers_by_name_and_by_size() {
        assert_eq!("A3".parse::<Paper>(), Ok(Paper { w: 297.0, h: 420.0 }));
        assert_eq!(
            "a0".parse::<Paper>(),
            Ok(Paper {
                w: 841.0,
                h: 1189.0
            })
        );
        let tabloid = "Tabloid".parse::<Paper>().expect("named");
        assert!((tabloid.w - 279.4).abs() < 1e-9);
        assert_eq!(
            "500x700mm".parse::<Paper>(),
            Ok(Paper { w: 500.0, h: 700.0 })
        );
        let inches = "2x1in".parse::<Paper>().expect("inches");
        assert!((inches.w - 50.8).abs() < 1e-9 && (inches.h - 25.4).abs() < 1e-9);
        assert!("A9".parse::<Paper>().is_err());
        assert!("huge".parse::<Paper>().is_err());
        assert_eq!(
            "200x200in".parse::<Paper>(),
            Ok(Paper {
                w: 5080.0,
                h: 5080.0
            })
        );
        assert!(matches!(
            "99999x99999in".parse::<Paper>(),
            Err(TemplateError::PaperTooLarge(_))
        ));
    }

    #[test]
    fn a_custom_grid_is_centred_unless_placed() {
        let t: Template = "custom:paper=A4,label=40x40mm,cols=4,rows=6"
            .parse()
            .expect("valid");
        assert_eq!(t.grid.left, 25.0);
        assert_eq!(t.grid.top, 28.5);
        assert_eq!(t.grid.h_pitch, 40.0);
        let t: Template = "custom:paper=A4,label=40x40mm,cols=4,rows=6,left=10,top=5mm,hpitch=45mm"
            .parse()
            .expect("valid");
        assert_eq!((t.grid.left, t.grid.top, t.grid.h_pitch), (10.0, 5.0, 45.0));
        assert_eq!(t.grid.safe, SAFE_MARGIN);
        let t: Template = "custom:label=62x29mm,safe=3mm".parse().expect("valid");
        assert_eq!(t.grid.safe, 3.0);
    }

    #[test]
    fn a_custom_roll_is_one_label_per_page() {
        let t: Template = "custom:label=62x150mm".parse().expect("valid");
        assert_eq!((t.grid.paper_w, t.grid.paper_h), (62.0, 150.0));
        assert_eq!(t.grid.per_sheet(), 1);
        let most: Template = "custom:label=200x200in".parse().expect("the largest page");
        assert_eq!((most.grid.paper_w, most.grid.paper_h), (5080.0, 5080.0));
    }

    #[test]
    fn bad_custom_templates_say_what_is_wrong() {
        for (spec, says) in [
            ("custom:paper=A4,cols=2", "label=WxH is required"),
            ("custom:paper=A4,label=40x40mm,cols=6", "do not fit"),
            ("custom:paper=A4,label=40x40mm,cols=0", "1 to 100"),
            ("custom:paper=A4,label=40x40mm,colour=red", "unknown key"),
            ("custom:paper=B5,label=40x40mm", "unknown paper"),
            ("custom:label=40", "expected WxH"),
            (
                "custom:label=40x40mm,cols=2,hpitch=30mm,paper=A4",
                "smaller than",
            ),
            ("custom:label=99999x99999mm", "at most 5080 mm (200 in)"),
            ("custom:label=40x5081mm", "at most 5080 mm (200 in)"),
            ("custom:label=40x10mm,safe=5mm", "leaves nothing"),
            ("custom:paper=A4,label=99999x99999mm", "do not fit"),
        ] {
            let message = spec.parse::<Template>().expect_err(spec).to_string();
            assert!(message.contains(says), "{spec}: {message}");
        }
    }

    #[test]
    fn an_unknown_name_lists_the_closest() {
        let message = "L7136"
            .parse::<Template>()
            .expect_err("unknown")
            .to_string();
        assert!(message.contains("L7163"), "{message}");
        assert_eq!(
            "l7163".parse::<Template>().map(|t| t.name),
            Ok("L7163".into())
        );
    }
}
