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

#[cfg(test)]
mod tests {
    use super::*;

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
