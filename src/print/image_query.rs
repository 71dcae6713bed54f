//! A tag image's options as query parameters (`scale`, `margin`, `ec`,
//! `dark`, `light`, `logo`, `logo-size`): what `/qr/KEY.png`, the console's
//! downloads and the REST API's images read, with the parsers the command
//! line's flags use.

use super::tag_image::{ImageFormat, ImageSpec};
use crate::qr::brand::{Colour, Palette};
use crate::qr::{EcLevel, QrError, RenderOptions};

/// A query parameter that was refused, named so the caller can fix it.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum BadParam {
    #[error("bad {0}: given more than once")]
    Repeated(&'static str),
    #[error("bad {0}: {1:?} is not a whole number")]
    NotANumber(&'static str, String),
    #[error("bad {0}: {1}")]
    Invalid(&'static str, QrError),
    /// A colour that is not CSS hex, or a pair a camera cannot read; kept
    /// as text so the error stays comparable.
    #[error("bad {0}: {1}")]
    Colours(&'static str, String),
    #[error(
        "unknown parameter {0:?}: use scale, margin, ec, dark, light, logo, logo-size (and v, ignored, to bust caches)"
    )]
    Unknown(String),
}

/// Reads `scale`, `margin` and `ec`, and ignores `v` (a cache buster) and
/// the names in `also_ignored` (parameters the caller reads itself, such as
/// the console's `key`); anything else is refused by name, so a typo
/// (`scal=2`) is not silently a default-sized image.
pub fn spec_from_query(
    query: &str,
    format: ImageFormat,
    uppercase_prefix: bool,
    also_ignored: &[&str],
) -> Result<ImageSpec, BadParam> {
    let (mut scale, mut margin, mut ec) = (None, None, None);
    let (mut dark, mut light) = (None, None);
    let (mut logo, mut logo_size) = (None, None);
    for (name, value) in form_urlencoded::parse(query.as_bytes()) {
        let (name, slot) = match &*name {
            "scale" => ("scale", &mut scale),
            "margin" => ("margin", &mut margin),
            "ec" => ("ec", &mut ec),
            "dark" => ("dark", &mut dark),
            "light" => ("light", &mut light),
            "logo" => ("logo", &mut logo),
            "logo-size" => ("logo-size", &mut logo_size),
            "v" => continue,
            other if also_ignored.contains(&other) => continue,
            other => return Err(BadParam::Unknown(other.to_owned())),
        };
        if slot.replace(value.into_owned()).is_some() {
            return Err(BadParam::Repeated(name));
        }
    }
    let number = |name: &'static str, value: Option<String>, default: u32| match value {
        None => Ok(default),
        Some(v) => v.parse::<u32>().map_err(|_| BadParam::NotANumber(name, v)),
    };
    let scale = number("scale", scale, RenderOptions::DEFAULT_SCALE)?;
    let margin = number("margin", margin, RenderOptions::DEFAULT_MARGIN)?;
    let options = RenderOptions::new(scale, margin).map_err(|e| match e {
        QrError::MarginOutOfRange(_) => BadParam::Invalid("margin", e),
        _ => BadParam::Invalid("scale", e),
    })?;
    let ec = match ec {
        None => EcLevel::default(),
        Some(v) => v.parse().map_err(|e| BadParam::Invalid("ec", e))?,
    };
    let logo = match logo.as_deref() {
        None | Some("false") => None,
        Some("" | "true" | "on") => Some(match &logo_size {
            None => crate::print::request::DEFAULT_LOGO_SIZE,
            Some(v) => crate::print::request::logo_size(v)
                .map_err(|e| BadParam::Colours("logo-size", e))?,
        }),
        Some(other) => {
            return Err(BadParam::Colours(
                "logo",
                format!("{other:?}: expected true or false"),
            ));
        }
    };
    if logo.is_none() && logo_size.is_some() {
        return Err(BadParam::Colours(
            "logo-size",
            "the size of a logo: give logo=true".into(),
        ));
    }
    Ok(ImageSpec {
        format,
        ec,
        options,
        uppercase_prefix,
        palette: palette_from(dark, light)?,
        logo,
    })
}

/// `dark` and `light` as CSS hex (`%23` for the `#`, or none), checked for
/// contrast; neither given is the plain black on white. Inverted pairs are
/// refused here: the command line's `--allow-inverted` has no parameter.
fn palette_from(dark: Option<String>, light: Option<String>) -> Result<Option<Palette>, BadParam> {
    if dark.is_none() && light.is_none() {
        return Ok(None);
    }
    let colour = |name: &'static str, value: Option<String>, default: Colour| match value {
        None => Ok(default),
        Some(v) => v
            .parse::<Colour>()
            .map_err(|e| BadParam::Colours(name, e.to_string())),
    };
    let dark = colour("dark", dark, Colour::BLACK)?;
    let light = colour("light", light, Colour::WHITE)?;
    Palette::new(dark, light, false)
        .map(Some)
        .map_err(|e| BadParam::Colours("dark", e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_defaults_and_overrides() {
        let spec = spec_from_query("", ImageFormat::Svg, true, &[]).expect("defaults");
        assert_eq!(
            spec,
            ImageSpec {
                format: ImageFormat::Svg,
                ec: EcLevel::L,
                options: RenderOptions::default(),
                uppercase_prefix: true,
                palette: None,
                logo: None,
            }
        );
        let logo =
            spec_from_query("logo=true&logo-size=30", ImageFormat::Png, false, &[]).expect("valid");
        assert_eq!(logo.logo, Some(30));
        for bad in ["logo=maybe", "logo-size=30", "logo&logo-size=4"] {
            assert!(
                spec_from_query(bad, ImageFormat::Png, false, &[]).is_err(),
                "{bad}"
            );
        }
        let spec = spec_from_query("ec=h&scale=2&margin=0&v=3", ImageFormat::Png, false, &[])
            .expect("valid");
        assert_eq!(spec.ec, EcLevel::H);
        assert_eq!(spec.options, RenderOptions::new(2, 0).expect("valid"));
        let spec = spec_from_query("dark=%231e3a8a", ImageFormat::Png, false, &[])
            .expect("readable colours");
        let navy = "#1e3a8a".parse().expect("a colour");
        let want = Palette::new(navy, Colour::WHITE, false).expect("readable");
        assert_eq!(spec.palette, Some(want));
        let spec = spec_from_query("light=fefce8", ImageFormat::Png, false, &[]).expect("valid");
        assert_eq!(spec.palette.map(|p| p.dark()), Some(Colour::BLACK));
    }

    #[test]
    fn every_refusal_names_its_parameter() {
        assert_eq!(
            spec_from_query("foo=1", ImageFormat::Svg, false, &[]),
            Err(BadParam::Unknown("foo".into()))
        );
        for (query, name) in [
            ("scale=1", "scale"),
            ("scale=65", "scale"),
            ("scale=", "scale"),
            ("scale=8px", "scale"),
            ("scale=-2", "scale"),
            ("scale=99999999999", "scale"),
            ("margin=17", "margin"),
            ("margin=x", "margin"),
            ("ec=X", "ec"),
            ("ec=", "ec"),
            ("ec=LL", "ec"),
            ("ec=L&ec=L", "ec"),
            ("scale=4&margin=1&scale=4", "scale"),
            ("dark=navy", "dark"),
            ("light=%23ffff", "light"),
            ("dark=%23999", "dark"),
            ("dark=%23fff&light=%23000", "dark"),
            ("dark=%23000&dark=%23000", "dark"),
        ] {
            let err = spec_from_query(query, ImageFormat::Png, false, &[]).expect_err(query);
            assert!(
                err.to_string().starts_with(&format!("bad {name}: ")),
                "{query}: {err}"
            );
        }
    }
}
