//! One rule: read from its JSON object once, into the form a scan tests
//! without allocating (tags lower-cased, the zone resolved, times in
//! milliseconds), with the object kept as written for `to_json`.

use chrono::NaiveDateTime;
use chrono_tz::Tz;
use serde_json::{Map, Value};

use crate::values::destination::{Destination, InvalidDestination, is_plain_absolute};

use super::country::is_country;
use super::device::{Class, ClassSet, Device, Os, OsSet};
use super::error::{Problem, RuleError};
use super::language::{self, Preferred};
use super::window::{self, DaySet, Span, Weekly};
use super::{Capabilities, Reads, ScanFacts};

/// The fields a rule may have; anything else is refused, so that a typo
/// (`"contry"`) never leaves a rule that holds for everyone.
pub(super) const FIELDS: [&str; 11] = [
    "url", "os", "class", "country", "lang", "from", "until", "days", "hours", "tz", "split",
];

#[derive(Debug, Clone, PartialEq)]
pub(super) struct Rule {
    pub url: Destination,
    /// Whether `url` is plain ([`is_plain_absolute`]), judged once here so
    /// that a scan answered by this rule is not judged again.
    pub plain: bool,
    os: Option<OsSet>,
    class: Option<ClassSet>,
    countries: Option<Box<[[u8; 2]]>>,
    languages: Option<Box<[Box<[u8]>]>>,
    pub span: Span,
    pub weekly: Option<Weekly>,
    split: Option<(u8, u8)>,
    pub reads: Reads,
    pub source: Map<String, Value>,
}

/// Where in the rule list a problem is.
struct At(usize);

impl At {
    fn err(&self, field: &str, problem: Problem) -> RuleError {
        RuleError::at(Some(self.0), Some(field), None, problem)
    }
    fn item(&self, field: &str, j: usize, problem: Problem) -> RuleError {
        RuleError::at(Some(self.0), Some(field), Some(j), problem)
    }
    fn rule(&self, problem: Problem) -> RuleError {
        RuleError::at(Some(self.0), None, None, problem)
    }
}

/// A field's non-empty array of strings.
fn texts<'a>(at: &At, field: &str, v: &'a Value) -> Result<Vec<&'a str>, RuleError> {
    match v {
        Value::Array(items) if !items.is_empty() => items
            .iter()
            .enumerate()
            .map(|(j, item)| {
                item.as_str()
                    .ok_or_else(|| at.item(field, j, Problem::NotText))
            })
            .collect(),
        _ => Err(at.err(field, Problem::NotList)),
    }
}

fn text<'a>(at: &At, field: &str, v: &'a Value) -> Result<&'a str, RuleError> {
    v.as_str().ok_or_else(|| at.err(field, Problem::NotText))
}

impl Rule {
    pub fn parse(index: usize, value: &Value, caps: &Capabilities) -> Result<Rule, RuleError> {
        let at = At(index);
        let Value::Object(obj) = value else {
            return Err(at.rule(Problem::NotObject));
        };
        if let Some(unknown) = obj.keys().find(|k| !FIELDS.contains(&k.as_str())) {
            return Err(at.err(&shortened(unknown), Problem::UnknownField));
        }
        let url = match obj.get("url") {
            None => return Err(at.err("url", Problem::MissingUrl)),
            Some(v) => Destination::parse_absolute(text(&at, "url", v)?).map_err(|e| {
                at.err(
                    "url",
                    match e {
                        InvalidDestination::NotAbsolute(_) => Problem::UrlNotAbsolute,
                        e => Problem::BadUrl(e),
                    },
                )
            })?,
        };
        // Stored as `url` is: a host in capitals in lower case.
        let mut source = obj.clone();
        source.insert("url".into(), Value::String(url.as_str().to_owned()));
        let mut rule = Rule {
            plain: is_plain_absolute(url.as_str()),
            url,
            os: None,
            class: None,
            countries: None,
            languages: None,
            span: Span::default(),
            weekly: None,
            split: None,
            reads: Reads::NONE,
            source,
        };
        if let Some(v) = obj.get("os") {
            let mut set = OsSet::default();
            for (j, name) in texts(&at, "os", v)?.into_iter().enumerate() {
                let os = Os::from_name(name).ok_or_else(|| {
                    at.item("os", j, Problem::NotOneOf("ios, ipados, android, other"))
                })?;
                set.insert(os);
            }
            rule.os = Some(set);
            rule.reads = rule.reads | Reads::USER_AGENT;
        }
        if let Some(v) = obj.get("class") {
            let mut set = ClassSet::default();
            for (j, name) in texts(&at, "class", v)?.into_iter().enumerate() {
                let class = Class::from_name(name).ok_or_else(|| {
                    at.item("class", j, Problem::NotOneOf("phone, tablet, desktop"))
                })?;
                set.insert(class);
            }
            rule.class = Some(set);
            rule.reads = rule.reads | Reads::USER_AGENT;
        }
        if let Some(v) = obj.get("country") {
            let mut codes = Vec::new();
            for (j, code) in texts(&at, "country", v)?.into_iter().enumerate() {
                if !is_country(code) {
                    let problem = if code.eq_ignore_ascii_case("uk") {
                        Problem::Uk
                    } else {
                        Problem::BadCountry
                    };
                    return Err(at.item("country", j, problem));
                }
                let b = code.as_bytes();
                codes.push([b[0], b[1]]);
            }
            if !caps.geoip {
                return Err(at.err("country", Problem::NoGeoip));
            }
            rule.countries = Some(codes.into());
            rule.reads = rule.reads | Reads::COUNTRY;
        }
        if let Some(v) = obj.get("lang") {
            let mut tags = Vec::new();
            for (j, tag) in texts(&at, "lang", v)?.into_iter().enumerate() {
                if !language::is_tag(tag.as_bytes()) || tag.len() > language::MAX_TAG {
                    return Err(at.item("lang", j, Problem::BadLanguage));
                }
                tags.push(tag.to_ascii_lowercase().into_bytes().into_boxed_slice());
            }
            rule.languages = Some(tags.into());
            rule.reads = rule.reads | Reads::ACCEPT_LANGUAGE;
        }
        for (field, slot) in [
            ("from", &mut rule.span.from),
            ("until", &mut rule.span.until),
        ] {
            if let Some(v) = obj.get(field) {
                let ms = window::parse_instant(text(&at, field, v)?)
                    .ok_or_else(|| at.err(field, Problem::BadTime))?;
                *slot = Some(ms);
            }
        }
        if let (Some(from), Some(until)) = (rule.span.from, rule.span.until)
            && until <= from
        {
            return Err(at.err("until", Problem::UntilNotAfterFrom));
        }
        rule.weekly = weekly(&at, obj)?;
        if !rule.span.is_open() || rule.weekly.is_some() {
            rule.reads = rule.reads | Reads::CLOCK;
        }
        if let Some(v) = obj.get("split") {
            let bound = |x: &Value| x.as_u64().filter(|&p| p <= 100);
            let (lo, hi) = match v.as_array().map(Vec::as_slice) {
                Some([lo, hi]) => match (bound(lo), bound(hi)) {
                    (Some(lo), Some(hi)) if lo < hi => (lo as u8, hi as u8),
                    _ => return Err(at.err("split", Problem::BadSplit)),
                },
                _ => return Err(at.err("split", Problem::BadSplit)),
            };
            rule.split = Some((lo, hi));
            rule.reads = rule.reads | Reads::SPLIT;
        }
        if rule.reads.is_empty() {
            return Err(at.rule(Problem::NoCondition));
        }
        Ok(rule)
    }

    /// Whether every condition holds for this scan at `now`; the cheap
    /// ones first, so that a GeoIP lookup is made only when the rest hold.
    pub fn holds<F: ScanFacts>(&self, seen: &mut Seen<'_, F>, now: i64) -> bool {
        if !self.span.holds(now) {
            return false;
        }
        if let Some(w) = &self.weekly
            && !seen.local(w.tz, now).is_some_and(|at| w.holds_local(at))
        {
            return false;
        }
        if let Some((lo, hi)) = self.split
            && !(lo..hi).contains(&seen.bucket())
        {
            return false;
        }
        if self.os.is_some() || self.class.is_some() {
            let d = seen.device();
            if self.os.is_some_and(|s| !s.contains(d.os))
                || self.class.is_some_and(|s| !s.contains(d.class))
            {
                return false;
            }
        }
        if let Some(tags) = &self.languages {
            let Some(p) = seen.preferred() else {
                return false;
            };
            if !tags.iter().any(|t| language::matches(p.as_bytes(), t)) {
                return false;
            }
        }
        if let Some(codes) = &self.countries {
            let Some(c) = seen.country() else {
                return false;
            };
            if !codes.contains(&c) {
                return false;
            }
        }
        true
    }
}

/// An unknown field's name as an error shows it (path and pointer alike):
/// a document may have a name of megabytes.
fn shortened(name: &str) -> String {
    const SHOWN: usize = 40;
    match name.char_indices().nth(SHOWN) {
        Some((cut, _)) => format!("{}…", &name[..cut]),
        None => name.to_owned(),
    }
}

/// `days`, `hours` and `tz` into one window.
fn weekly(at: &At, obj: &Map<String, Value>) -> Result<Option<Weekly>, RuleError> {
    let days = match obj.get("days") {
        None => None,
        Some(v) => {
            let mut set = DaySet::NONE;
            for (j, name) in texts(at, "days", v)?.into_iter().enumerate() {
                let day = DaySet::index(name).ok_or_else(|| {
                    at.item(
                        "days",
                        j,
                        Problem::NotOneOf("mon, tue, wed, thu, fri, sat, sun"),
                    )
                })?;
                set.insert(day);
            }
            Some(set)
        }
    };
    let hours = match obj.get("hours") {
        None => None,
        Some(v) => {
            let pair = match v.as_array().map(Vec::as_slice) {
                Some([a, b]) => a
                    .as_str()
                    .and_then(window::parse_hhmm)
                    .zip(b.as_str().and_then(window::parse_hhmm)),
                _ => None,
            };
            let (start, end) = pair.ok_or_else(|| at.err("hours", Problem::BadHours))?;
            if start == end {
                return Err(at.err("hours", Problem::EmptyWindow));
            }
            Some((start, end))
        }
    };
    let tz = match obj.get("tz") {
        None => None,
        Some(v) => Some(
            text(at, "tz", v)?
                .parse::<Tz>()
                .map_err(|_| at.err("tz", Problem::BadTimeZone))?,
        ),
    };
    if days.is_none() && hours.is_none() {
        return match tz {
            Some(_) => Err(at.err("tz", Problem::UnusedTimeZone)),
            None => Ok(None),
        };
    }
    let tz = tz.ok_or_else(|| at.err("tz", Problem::MissingTimeZone))?;
    let (start, end) = hours.unwrap_or((0, 86_400));
    Ok(Some(Weekly {
        days: days.unwrap_or(DaySet::ALL),
        start,
        end,
        tz,
    }))
}

/// A scan's facts as far as the rules have asked for them: each read from
/// the shell at most once however many rules test it (the User-Agent
/// scanned once, the header parsed once, one GeoIP lookup, one hash).
pub(super) struct Seen<'a, F> {
    facts: &'a mut F,
    device: Option<Device>,
    preferred: Option<Option<Preferred>>,
    country: Option<Option<[u8; 2]>>,
    bucket: Option<u8>,
    /// The last instant turned into local time, and in which zone.
    local: Option<(Tz, i64, Option<NaiveDateTime>)>,
}

impl<'a, F: ScanFacts> Seen<'a, F> {
    pub fn new(facts: &'a mut F) -> Self {
        Seen {
            facts,
            device: None,
            preferred: None,
            country: None,
            bucket: None,
            local: None,
        }
    }

    fn device(&mut self) -> Device {
        *self
            .device
            .get_or_insert_with(|| Device::of(self.facts.user_agent()))
    }

    fn preferred(&mut self) -> Option<Preferred> {
        *self
            .preferred
            .get_or_insert_with(|| language::preferred(self.facts.accept_language()))
    }

    fn country(&mut self) -> Option<[u8; 2]> {
        *self.country.get_or_insert_with(|| self.facts.country())
    }

    fn bucket(&mut self) -> u8 {
        *self.bucket.get_or_insert_with(|| self.facts.split_bucket())
    }

    fn local(&mut self, tz: Tz, now: i64) -> Option<NaiveDateTime> {
        match self.local {
            Some((z, t, l)) if z == tz && t == now => l,
            _ => {
                let l = window::local(tz, now);
                self.local = Some((tz, now, l));
                l
            }
        }
    }
}
