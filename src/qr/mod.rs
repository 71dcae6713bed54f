//! QR codes for short URLs, as small as the standard allows.
//!
//! Smaller symbols have bigger modules at the same print size, which is what
//! makes a tag scan from further away; so the encoder picks the segmentation
//! and version itself rather than trusting `qrcode`'s greedy optimizer.

pub mod brand;
pub mod dots;
pub mod media;
mod render;
mod segment;
mod sheet;
mod symbol;
mod text;
pub mod zpl;

use std::fmt;
use std::str::FromStr;

use qrcode::QrCode;
use qrcode::Version;
use qrcode::bits::Bits;

pub use render::{RenderOptions, render_png, render_svg};
pub use segment::{MAX_TEXT_LEN, Mode, Plan, Segment, capacity_bits, optimal_segments, plan};
pub use sheet::{SHEET_FULL_SIZE_CAPACITY, render_sheet_svg};
pub use symbol::{Symbol, build_symbol, encode_symbol};
pub use text::short_url_text;

/// Error-correction level. Defaults to L because short-URL tags are printed
/// clean and a smaller symbol scans better than a more redundant one.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum EcLevel {
    #[default]
    L,
    M,
    Q,
    H,
}

impl EcLevel {
    pub const ALL: [EcLevel; 4] = [EcLevel::L, EcLevel::M, EcLevel::Q, EcLevel::H];
}

impl From<EcLevel> for qrcode::EcLevel {
    fn from(ec: EcLevel) -> Self {
        match ec {
            EcLevel::L => qrcode::EcLevel::L,
            EcLevel::M => qrcode::EcLevel::M,
            EcLevel::Q => qrcode::EcLevel::Q,
            EcLevel::H => qrcode::EcLevel::H,
        }
    }
}

/// Accepts one letter in either case, as it comes from a query string or a
/// config file.
impl FromStr for EcLevel {
    type Err = QrError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "L" | "l" => Ok(EcLevel::L),
            "M" | "m" => Ok(EcLevel::M),
            "Q" | "q" => Ok(EcLevel::Q),
            "H" | "h" => Ok(EcLevel::H),
            _ => Err(QrError::InvalidEcLevel(s.to_owned())),
        }
    }
}

impl fmt::Display for EcLevel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            EcLevel::L => "L",
            EcLevel::M => "M",
            EcLevel::Q => "Q",
            EcLevel::H => "H",
        })
    }
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum QrError {
    #[error("text of {len} bytes does not fit in a version-40 QR code at this level")]
    DataTooLong { len: usize },
    #[error("unknown error-correction level {0:?}, expected one of L, M, Q, H")]
    InvalidEcLevel(String),
    #[error(
        "scale {0} is out of range, expected {min}..={max} pixels per module",
        min = RenderOptions::MIN_SCALE,
        max = RenderOptions::MAX_SCALE
    )]
    ScaleOutOfRange(u32),
    #[error(
        "margin {0} is out of range, expected 0..={max} modules",
        max = RenderOptions::MAX_MARGIN
    )]
    MarginOutOfRange(u32),
    /// A PNG over the served bound ([`crate::print::tag_image::MAX_PNG_SIDE`]); the
    /// advice is computed for the symbol at hand, so it can be followed.
    #[error("an image of {side}×{side} pixels is over the limit of {max}×{max}: {advice}")]
    TooLarge {
        side: usize,
        max: usize,
        advice: String,
    },
    /// `qrcode` refused a plan; that would be a bug in the planner.
    #[error("QR symbol construction failed: {0}")]
    Symbol(#[from] qrcode::types::QrError),
    /// Kept as text so the error stays comparable in tests.
    #[error("PNG encoding failed: {0}")]
    Png(String),
    /// A branded code that did not decode from its own pixels.
    #[error("the code does not read back: {0}")]
    Unreadable(String),
}

/// Encodes `text` in the smallest QR symbol the standard allows at level `ec`.
pub fn encode(text: &str, ec: EcLevel) -> Result<QrCode, QrError> {
    build(text.as_bytes(), &plan(text.as_bytes(), ec)?, ec)
}

/// Builds the symbol for an already computed plan through `qrcode`'s
/// low-level `Bits` API, which takes our segments verbatim.
pub fn build(text: &[u8], plan: &Plan, ec: EcLevel) -> Result<QrCode, QrError> {
    Ok(QrCode::with_bits(bits(text, plan, ec)?, ec.into())?)
}

/// The data bits of a plan, terminated: what both [`build`] and
/// [`build_symbol`] place.
fn bits(text: &[u8], plan: &Plan, ec: EcLevel) -> Result<Bits, QrError> {
    let mut bits = Bits::new(Version::Normal(i16::from(plan.version)));
    for segment in &plan.segments {
        // `qrcode` trusts its caller here (a stray letter in numeric data
        // would underflow), so a hand-made plan is checked first.
        let data = text
            .get(segment.range.clone())
            .filter(|data| data.iter().all(|&b| segment.mode.accepts(b)))
            .ok_or(qrcode::types::QrError::InvalidCharacter)?;
        match segment.mode {
            Mode::Numeric => bits.push_numeric_data(data)?,
            Mode::Alphanumeric => bits.push_alphanumeric_data(data)?,
            Mode::Byte => bits.push_byte_data(data)?,
        }
    }
    bits.push_terminator(ec.into())?;
    Ok(bits)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ec_level_parses_either_case_and_round_trips() {
        for ec in EcLevel::ALL {
            let s = ec.to_string();
            assert_eq!(s.parse::<EcLevel>(), Ok(ec));
            assert_eq!(s.to_lowercase().parse::<EcLevel>(), Ok(ec));
        }
        assert_eq!(
            "X".parse::<EcLevel>(),
            Err(QrError::InvalidEcLevel("X".into()))
        );
        assert!("".parse::<EcLevel>().is_err());
        assert!("LL".parse::<EcLevel>().is_err());
        assert_eq!(EcLevel::default(), EcLevel::L);
    }

    #[test]
    fn build_uses_the_planned_version() {
        let text = "HTTP://0X1F.IE/H83if";
        let code = encode(text, EcLevel::L).expect("fits");
        assert_eq!(code.version(), Version::Normal(1));
        assert_eq!(code.error_correction_level(), qrcode::EcLevel::L);
    }
}
