//! `RuleError`: what is wrong with a link's `rules`, named by the field's
//! path (`rules[2].hours`) so that every surface can show it beside the
//! field (the CLI as one line, the REST API as a problem's pointer, the
//! console beside the input).

use crate::values::destination::InvalidDestination;

use super::MAX_RULES;

/// One problem with a rule list: where, and why, in one short line.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{path}: {problem}")]
pub struct RuleError {
    /// `rules`, `rules[2]`, `rules[2].hours`, `rules[0].os[1]`.
    pub path: String,
    /// The same place as a JSON Pointer into the document.
    pointer: String,
    pub problem: Problem,
}

impl RuleError {
    /// A problem with the list (`rule: None`), a rule, one of its fields, or
    /// one item of a field's array.
    pub(super) fn at(
        rule: Option<usize>,
        field: Option<&str>,
        item: Option<usize>,
        problem: Problem,
    ) -> RuleError {
        let (mut path, mut pointer) = (String::from("rules"), String::from("/rules"));
        if let Some(i) = rule {
            path.push_str(&format!("[{i}]"));
            pointer.push_str(&format!("/{i}"));
        }
        if let Some(f) = field {
            path.push('.');
            path.push_str(f);
            pointer.push('/');
            pointer.push_str(&f.replace('~', "~0").replace('/', "~1"));
        }
        if let Some(j) = item {
            path.push_str(&format!("[{j}]"));
            pointer.push_str(&format!("/{j}"));
        }
        RuleError {
            path,
            pointer,
            problem,
        }
    }

    /// The place as a JSON Pointer into the document (`/rules/2/hours`),
    /// for the REST API's problem details.
    pub fn pointer(&self) -> &str {
        &self.pointer
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Problem {
    #[error("must be an array of rules")]
    NotArray,
    #[error("at most {MAX_RULES} rules a link, not {0}")]
    TooMany(usize),
    #[error("a rule must be an object")]
    NotObject,
    #[error(
        "unknown field (a rule has url, os, class, country, lang, from, until, days, hours, tz, split)"
    )]
    UnknownField,
    #[error("a rule needs a \"url\", the destination it gives")]
    MissingUrl,
    #[error("{0}")]
    BadUrl(InvalidDestination),
    #[error("must be an absolute http(s) URL (https://...), not a path")]
    UrlNotAbsolute,
    #[error(
        "a rule needs at least one condition (os, class, country, lang, from, until, days, hours, split)"
    )]
    NoCondition,
    #[error("must be a non-empty array")]
    NotList,
    #[error("must be a string")]
    NotText,
    #[error("must be one of {0}")]
    NotOneOf(&'static str),
    #[error("\"UK\" is not an ISO 3166-1 code: the United Kingdom is \"GB\"")]
    Uk,
    #[error("must be an ISO 3166-1 alpha-2 country code in capitals (GB, IE, US)")]
    BadCountry,
    #[error(
        "a country rule needs the server's GeoIP database (serve --geoip-db), which it has not"
    )]
    NoGeoip,
    #[error("must be a language tag (en, en-GB, pt-BR)")]
    BadLanguage,
    #[error("must be an RFC 3339 time, e.g. 2026-12-31T23:59:59Z")]
    BadTime,
    #[error("must be after \"from\"")]
    UntilNotAfterFrom,
    #[error("must be [\"HH:MM\", \"HH:MM\"], a start and an end from 00:00 to 23:59")]
    BadHours,
    #[error("start and end are the same time: the window would be empty")]
    EmptyWindow,
    #[error("not an IANA time zone name (Europe/Dublin, America/New_York)")]
    BadTimeZone,
    #[error("days and hours need a \"tz\", an IANA time zone name (Europe/Dublin)")]
    MissingTimeZone,
    #[error("only days and hours read \"tz\"; this rule has neither")]
    UnusedTimeZone,
    #[error("must be [lo, hi], whole percentages with 0 <= lo < hi <= 100")]
    BadSplit,
}
