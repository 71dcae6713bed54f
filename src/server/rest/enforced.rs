//! What the handlers refuse, written into the OpenAPI document from the
//! same constants and name lists they check with (issue 31): enums,
//! ranges, non-empty strings and list lengths. `utoipa` derives the types
//! but not these, and a generated client that knows only the types sends
//! requests the server refuses. What no schema can say (a URL's rules, a
//! key's, an expiry in the future, options that exclude each other) stays
//! in the descriptions.

use serde_json::{Map, Value, json};

use super::MAX_BULK;
use super::links::MAX_PAGE;
use crate::console::list::{Sort, StateFilter};
use crate::link::{MAX_NOTES, MAX_TITLE};
use crate::print::CaptionKind;
use crate::print::request::{FONT_SIZES, LOGO_SIZES};
use crate::qr::RenderOptions;
use crate::stats::dimensions::Dimension;
use crate::values::link_key::{MAX_KEY_LEN, MAX_SEGMENT};

/// CSS hex without or with `#` (`%23` in a query), as `Colour` parses it.
pub const COLOUR: &str = "^#?([0-9A-Fa-f]{3}|[0-9A-Fa-f]{6})$";

/// The error-correction levels `EcLevel` parses, either case.
pub const EC_LEVELS: [&str; 8] = ["L", "M", "Q", "H", "l", "m", "q", "h"];

/// A key as `LinkKey::parse` takes it: segments of 1 to 64 of
/// `[A-Za-z0-9_-]` joined by `/`, the first not starting with `_` (with
/// [`MAX_KEY_LEN`] as `maxLength`).
pub fn key_pattern() -> String {
    format!(
        "^[A-Za-z0-9-][A-Za-z0-9_-]{{0,{}}}(/[A-Za-z0-9_-]{{1,{MAX_SEGMENT}}})*$",
        MAX_SEGMENT - 1
    )
}

fn key_schema() -> Value {
    json!({"type": "string", "pattern": key_pattern(), "maxLength": MAX_KEY_LEN})
}

/// The `state` filters the API offers: the console's but `never-scanned`.
pub fn states() -> Vec<&'static str> {
    StateFilter::ALL
        .into_iter()
        .filter(|s| *s != StateFilter::NeverScanned)
        .map(StateFilter::name)
        .collect()
}

/// Every parameter the handlers check beyond its type, by operation.
fn parameters() -> Vec<(&'static str, &'static str, &'static str, Value)> {
    let sorts: Vec<_> = Sort::ALL.into_iter().map(Sort::name).collect();
    let captions: Vec<_> = CaptionKind::ALL
        .into_iter()
        .map(CaptionKind::name)
        .collect();
    let dimensions: Vec<_> = super::scans::breakdowns().map(Dimension::name).collect();
    let text = json!({"type": "string", "minLength": 1});
    let ec = json!({"type": "string", "enum": EC_LEVELS});
    let logo_size =
        json!({"type": "integer", "minimum": LOGO_SIZES.start(), "maximum": LOGO_SIZES.end()});
    let mut all = vec![
        (
            "/api/v1/links",
            "get",
            "state",
            json!({"type": "string", "enum": states()}),
        ),
        (
            "/api/v1/links",
            "get",
            "sort",
            json!({"type": "string", "enum": sorts}),
        ),
        (
            "/api/v1/links",
            "get",
            "limit",
            json!({"type": "integer", "minimum": 1, "maximum": MAX_PAGE}),
        ),
        (
            "/api/v1/links/{key}",
            "patch",
            "If-Match",
            json!({"type": "string"}),
        ),
    ];
    for (path, method) in [
        ("/api/v1/links/{key}", "get"),
        ("/api/v1/links/{key}", "patch"),
        ("/api/v1/links/{key}/qr.png", "get"),
        ("/api/v1/links/{key}/qr.svg", "get"),
        ("/api/v1/links/{key}/print.pdf", "get"),
        ("/api/v1/links/{key}/scans", "get"),
    ] {
        all.push((path, method, "key", key_schema()));
    }
    for image in ["/api/v1/links/{key}/qr.png", "/api/v1/links/{key}/qr.svg"] {
        all.extend([
            (
                image,
                "get",
                "scale",
                json!({"type": "integer", "minimum": RenderOptions::MIN_SCALE, "maximum": RenderOptions::MAX_SCALE}),
            ),
            (
                image,
                "get",
                "margin",
                json!({"type": "integer", "minimum": 0, "maximum": RenderOptions::MAX_MARGIN}),
            ),
            (image, "get", "ec", ec.clone()),
            (image, "get", "dark", json!({"type": "string", "pattern": COLOUR})),
            (image, "get", "light", json!({"type": "string", "pattern": COLOUR})),
            (image, "get", "logo-size", logo_size.clone()),
        ]);
    }
    for (pdf, method) in [
        ("/api/v1/links/{key}/print.pdf", "get"),
        ("/api/v1/print.pdf", "post"),
    ] {
        all.extend([
            (pdf, method, "template", text.clone()),
            (pdf, method, "poster", text.clone()),
            (pdf, method, "code-size", text.clone()),
            (pdf, method, "bleed", text.clone()),
            (pdf, method, "caption", json!({"type": "string", "enum": captions})),
            (
                pdf,
                method,
                "font-size",
                json!({"type": "number", "minimum": FONT_SIZES.start(), "maximum": FONT_SIZES.end()}),
            ),
            (pdf, method, "ec", ec.clone()),
            (pdf, method, "dark", json!({"type": "string", "pattern": COLOUR})),
            (pdf, method, "light", json!({"type": "string", "pattern": COLOUR})),
            (pdf, method, "logo-size", logo_size.clone()),
        ]);
    }
    for scans in ["/api/v1/links/{key}/scans", "/api/v1/scans"] {
        all.extend([
            (scans, "get", "since", json!({"type": "string", "format": "date"})),
            (scans, "get", "until", json!({"type": "string", "format": "date"})),
            (
                scans,
                "get",
                "by",
                json!({"type": "array", "items": {"type": "string", "enum": dimensions}, "minItems": 1}),
            ),
        ]);
    }
    all
}

/// Every body property the handlers check beyond its type, by schema.
fn properties() -> Vec<(&'static str, &'static str, Value)> {
    vec![
        ("NewLink", "url", json!({"minLength": 1})),
        (
            "NewLink",
            "key",
            json!({"pattern": key_pattern(), "maxLength": MAX_KEY_LEN}),
        ),
        ("NewLink", "notes", json!({"maxLength": MAX_NOTES})),
        ("LinkEdit", "notes", json!({"maxLength": MAX_NOTES})),
        ("LinkEdit", "url", json!({"minLength": 1})),
        // Issue 33: the title, in characters (JSON Schema counts them so).
        ("NewLink", "title", json!({"maxLength": MAX_TITLE})),
        ("LinkEdit", "title", json!({"maxLength": MAX_TITLE})),
        ("BulkCreate", "links", json!({"maxItems": MAX_BULK})),
        (
            "PrintKeys",
            "keys",
            json!({"minItems": 1, "maxItems": MAX_BULK, "items": key_schema()}),
        ),
    ]
}

/// The document with every refusal above declared.
pub fn apply(doc: &mut Value) {
    for (path, method, name, schema) in parameters() {
        let Some(params) = doc
            .pointer_mut(&format!("/paths/{}/{method}/parameters", escape(path)))
            .and_then(Value::as_array_mut)
        else {
            continue;
        };
        for param in params.iter_mut().filter(|p| p["name"] == name) {
            if schema["type"] == "array" {
                // `by=device,os`: one parameter, its values comma-separated.
                param["style"] = json!("form");
                param["explode"] = json!(false);
            }
            param["schema"] = schema.clone();
        }
    }
    for (schema, property, extra) in properties() {
        let pointer = format!("/components/schemas/{schema}/properties/{property}");
        if let (Some(Value::Object(target)), Value::Object(extra)) =
            (doc.pointer_mut(&pointer), extra)
        {
            merge(target, extra);
        }
    }
}

fn merge(target: &mut Map<String, Value>, extra: Map<String, Value>) {
    for (k, v) in extra {
        target.insert(k, v);
    }
}

/// A JSON pointer token (RFC 6901).
fn escape(token: &str) -> String {
    token.replace('~', "~0").replace('/', "~1")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each declared value is one the parsers take, and nothing is left
    /// undeclared: every operation and property named here exists in the
    /// document.
    #[test]
    fn every_declared_value_is_one_the_server_takes() {
        for s in states() {
            assert!(StateFilter::parse(s).is_some(), "{s}");
        }
        for ec in EC_LEVELS {
            assert!(ec.parse::<crate::qr::EcLevel>().is_ok(), "{ec}");
        }
        // COLOUR's two lengths of hex digits, with or without `#`.
        for k in ["a", "-a/_b", "docs/api"] {
            assert!(crate::values::link_key::LinkKey::is_valid(k), "{k}");
        }
        for k in ["_a", "a//b", "a/", "/a", "a b"] {
            assert!(!crate::values::link_key::LinkKey::is_valid(k), "{k}");
        }
        assert!(key_pattern().contains(&format!("{{1,{MAX_SEGMENT}}}")));
        for c in ["#abc", "A0b1C2", "000", "#FFFFFF"] {
            assert!(c.parse::<crate::qr::brand::Colour>().is_ok(), "{c}");
        }
        for c in ["#abcd", "ggg", "#", "", "+12"] {
            assert!(c.parse::<crate::qr::brand::Colour>().is_err(), "{c}");
        }
        let opts = |q: &str| {
            crate::print::image_query::spec_from_query(
                q,
                crate::print::tag_image::ImageFormat::Png,
                false,
                &[],
            )
        };
        let (min, max) = (RenderOptions::MIN_SCALE, RenderOptions::MAX_SCALE);
        assert!(opts(&format!("scale={min}")).is_ok() && opts(&format!("scale={max}")).is_ok());
        assert!(opts(&format!("scale={}", min - 1)).is_err());
        assert!(opts(&format!("scale={}", max + 1)).is_err());
        let margin = RenderOptions::MAX_MARGIN;
        assert!(opts(&format!("margin={margin}")).is_ok());
        assert!(opts(&format!("margin={}", margin + 1)).is_err());
        let font = |pt: f64| crate::print::request::font_size(&pt.to_string()).is_ok();
        assert!(font(*FONT_SIZES.start()) && font(*FONT_SIZES.end()));
        assert!(!font(FONT_SIZES.start() - 0.01) && !font(FONT_SIZES.end() + 0.01));
        let logo = |pct: u32| crate::print::request::logo_size(&pct.to_string()).is_ok();
        assert!(logo(*LOGO_SIZES.start()) && logo(*LOGO_SIZES.end()));
        assert!(!logo(LOGO_SIZES.start() - 1) && !logo(LOGO_SIZES.end() + 1));

        let doc: Value = serde_json::from_str(&super::super::openapi::document()).expect("JSON");
        for (path, method, name, schema) in parameters() {
            let params = doc
                .pointer(&format!("/paths/{}/{method}/parameters", escape(path)))
                .and_then(Value::as_array)
                .unwrap_or_else(|| panic!("{method} {path}"));
            let param = params
                .iter()
                .find(|p| p["name"] == name)
                .unwrap_or_else(|| panic!("{method} {path} {name}"));
            assert_eq!(param["schema"], schema, "{method} {path} {name}");
        }
        for (schema, property, extra) in properties() {
            let target = &doc["components"]["schemas"][schema]["properties"][property];
            for (k, v) in extra.as_object().expect("object") {
                assert_eq!(&target[k], v, "{schema}.{property}");
            }
        }
    }
}
