//! A link's tag image, made one way for both the admin listener and
//! `qrtag qr`, so that a file written by the CLI and an image fetched over
//! HTTP are the same bytes for the same parameters.

use std::fmt;
use std::path::Path;
use std::str::FromStr;

use crate::link_key::LinkKey;
use crate::qr::{self, EcLevel, QrError, RenderOptions};
use crate::settings::PublicUrl;

/// The two image formats a tag is served in.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum ImageFormat {
    /// For screens and quick printing.
    #[default]
    Png,
    /// For print shops: stays crisp at any size.
    Svg,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown image format {0:?}, expected png or svg")]
pub struct UnknownFormat(pub String);

impl ImageFormat {
    pub fn extension(self) -> &'static str {
        match self {
            ImageFormat::Png => "png",
            ImageFormat::Svg => "svg",
        }
    }

    pub fn content_type(self) -> &'static str {
        match self {
            ImageFormat::Png => "image/png",
            ImageFormat::Svg => "image/svg+xml",
        }
    }

    /// The format a file name asks for; `None` when its extension names
    /// neither, so the caller can ask instead of guessing.
    pub fn from_path(path: &Path) -> Option<Self> {
        path.extension()?.to_str()?.parse().ok()
    }
}

/// Case-insensitive, because file names (`TAG.PNG`) arrive either way.
impl FromStr for ImageFormat {
    type Err = UnknownFormat;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if s.eq_ignore_ascii_case("png") {
            Ok(ImageFormat::Png)
        } else if s.eq_ignore_ascii_case("svg") {
            Ok(ImageFormat::Svg)
        } else {
            Err(UnknownFormat(s.to_owned()))
        }
    }
}

impl fmt::Display for ImageFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.extension())
    }
}

/// Every parameter an image depends on besides the public URL and the key.
/// Two equal specs give byte-identical images, which is what lets the HTTP
/// answer be cached for a day.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ImageSpec {
    pub format: ImageFormat,
    pub ec: EcLevel,
    pub options: RenderOptions,
    pub uppercase_prefix: bool,
}

/// What the tag for `key` encodes: the short URL, with scheme and host in
/// capitals when asked (see [`qr::short_url_text`]).
pub fn tag_text(public_url: &PublicUrl, key: &LinkKey, uppercase_prefix: bool) -> String {
    qr::short_url_text(public_url.origin(), key.as_str(), uppercase_prefix)
}

/// Renders the tag for `key`. Fails only for a key too long for any QR code
/// (hierarchical keys have no overall length limit) or if PNG encoding does.
pub fn render(public_url: &PublicUrl, key: &LinkKey, spec: &ImageSpec) -> Result<Vec<u8>, QrError> {
    let text = tag_text(public_url, key, spec.uppercase_prefix);
    let code = qr::encode(&text, spec.ec)?;
    match spec.format {
        ImageFormat::Png => qr::render_png(&code, &spec.options),
        ImageFormat::Svg => Ok(qr::render_svg(&code, &spec.options).into_bytes()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_parse_from_names_and_paths() {
        assert_eq!("png".parse(), Ok(ImageFormat::Png));
        assert_eq!("SVG".parse(), Ok(ImageFormat::Svg));
        assert!("pdf".parse::<ImageFormat>().is_err());
        assert!("".parse::<ImageFormat>().is_err());
        assert_eq!(
            ImageFormat::from_path(Path::new("out/TAG.PNG")),
            Some(ImageFormat::Png)
        );
        assert_eq!(
            ImageFormat::from_path(Path::new("tag.svg")),
            Some(ImageFormat::Svg)
        );
        for none in ["tag", "tag.txt", "svg", ".png.txt"] {
            assert_eq!(ImageFormat::from_path(Path::new(none)), None, "{none}");
        }
        for f in [ImageFormat::Png, ImageFormat::Svg] {
            assert_eq!(f.to_string().parse(), Ok(f));
        }
    }

    #[test]
    fn text_is_the_short_url() {
        let url = PublicUrl::parse("https://0x1f.ie").expect("valid");
        let key = LinkKey::parse("docs/api").expect("valid");
        assert_eq!(tag_text(&url, &key, false), url.short_url("docs/api"));
        assert_eq!(tag_text(&url, &key, true), "HTTPS://0X1F.IE/docs/api");
    }

    #[test]
    fn each_format_has_its_signature() {
        let url = PublicUrl::parse("https://0x1f.ie").expect("valid");
        let key = LinkKey::parse("H83if").expect("valid");
        let png = render(&url, &key, &ImageSpec::default()).expect("renders");
        assert!(png.starts_with(b"\x89PNG\r\n\x1a\n"));
        let spec = ImageSpec {
            format: ImageFormat::Svg,
            ..ImageSpec::default()
        };
        let svg = render(&url, &key, &spec).expect("renders");
        assert!(svg.starts_with(b"<svg "));
    }

    #[test]
    fn a_key_too_long_for_any_code_is_an_error_not_a_panic() {
        let url = PublicUrl::parse("https://0x1f.ie").expect("valid");
        let long = vec!["k".repeat(64); 60].join("/");
        let key = LinkKey::parse(&long).expect("valid key");
        assert!(matches!(
            render(&url, &key, &ImageSpec::default()),
            Err(QrError::DataTooLong { .. })
        ));
    }
}
