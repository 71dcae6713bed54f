//! Whether a request's `Accept` header lists a media type. Only presence
//! matters here (quality values are ignored): each caller has one
//! alternative to its default answer, given to a client that names it.

use actix_web::http::header::{self, HeaderMap};

pub fn accepts(headers: &HeaderMap, media_type: &str) -> bool {
    lists(
        headers
            .get_all(header::ACCEPT)
            .filter_map(|v| v.to_str().ok()),
        media_type,
    )
}

fn lists<'a>(values: impl Iterator<Item = &'a str>, media_type: &str) -> bool {
    values.flat_map(|v| v.split(',')).any(|range| {
        range
            .split(';')
            .next()
            .is_some_and(|m| m.trim().eq_ignore_ascii_case(media_type))
    })
}

/// Whether a client asks for HTML before plain text (a browser, not curl):
/// `text/html` named with a quality above zero and at least the quality
/// `text/plain` gets (named, or through `text/*` or `*/*`). A bare `*/*`
/// names no HTML, so scripts keep the plain answer (issue 33).
pub fn prefers_html(headers: &HeaderMap) -> bool {
    prefers_html_in(
        headers
            .get_all(header::ACCEPT)
            .filter_map(|v| v.to_str().ok()),
    )
}

fn prefers_html_in<'a>(values: impl Iterator<Item = &'a str>) -> bool {
    let (mut html, mut plain, mut text_any, mut any) = (None, None, None, None);
    for range in values.flat_map(|v| v.split(',')) {
        let mut parts = range.split(';');
        let media = parts.next().unwrap_or_default().trim().to_ascii_lowercase();
        let q = parts
            .filter_map(|p| p.split_once('='))
            .find(|(name, _)| name.trim().eq_ignore_ascii_case("q"))
            .map_or(Some(1.0), |(_, v)| v.trim().parse::<f32>().ok())
            .filter(|q| (0.0..=1.0).contains(q))
            .unwrap_or(0.0);
        let slot = match media.as_str() {
            "text/html" => &mut html,
            "text/plain" => &mut plain,
            "text/*" => &mut text_any,
            "*/*" => &mut any,
            _ => continue,
        };
        *slot = Some(slot.map_or(q, |old: f32| old.max(q)));
    }
    let plain = plain.or(text_any).or(any).unwrap_or(0.0);
    html.is_some_and(|html| html > 0.0 && html >= plain)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn browsers_prefer_html_and_scripts_do_not() {
        let chromium = "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,image/apng,*/*;q=0.8,application/signed-exchange;v=b3;q=0.7";
        let safari = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8";
        for yes in [
            chromium,
            safari,
            "text/html",
            "TEXT/HTML;q=0.5, text/plain;q=0.4",
        ] {
            assert!(prefers_html_in([yes].into_iter()), "{yes}");
        }
        for no in [
            "*/*",
            "text/*",
            "text/plain, text/html;q=0.9",
            "text/html;q=0",
            "text/html;q=0.5, */*",
            "application/json",
            "",
        ] {
            assert!(!prefers_html_in([no].into_iter()), "{no}");
        }
        assert!(!prefers_html_in(std::iter::empty()));
        assert!(prefers_html_in(
            ["text/plain;q=0.5", "text/html"].into_iter()
        ));
    }

    #[test]
    fn a_listed_type_is_found_whatever_its_parameters() {
        // What Prometheus sends when it scrapes.
        let prometheus = "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1";
        assert!(lists(
            [prometheus].into_iter(),
            "application/openmetrics-text"
        ));
        assert!(!lists([prometheus].into_iter(), "application/json"));
        let wallet = ["text/html", "Application/JSON ; q=0.9"];
        assert!(lists(wallet.into_iter(), "application/json"));
        assert!(!lists(["*/*"].into_iter(), "application/json"));
        assert!(!lists(std::iter::empty(), "application/json"));
    }
}
