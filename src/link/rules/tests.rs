//! The rules as a whole: bad input named by its field, round trips,
//! `choose` against a plain reference evaluator written here apart from
//! the code it checks, time windows and `next_change` across the
//! daylight-saving changes, A/B splits, and the User-Agent corpus.

use std::collections::BTreeMap;

use chrono::{Datelike, TimeZone, Timelike, Utc};
use chrono_tz::Tz;
use proptest::prelude::*;
use serde_json::{Value, json};

use super::device::{Class, Device, Os};
use super::window::DaySet;
use super::*;

const GEOIP: Capabilities = Capabilities { geoip: true };

fn at(s: &str) -> i64 {
    chrono::DateTime::parse_from_rfc3339(s)
        .expect(s)
        .timestamp_millis()
}

/// A scan as a test describes it, counting what the rules ask.
#[derive(Debug, Clone, Default)]
struct Scan {
    ua: String,
    lang: String,
    country: Option<[u8; 2]>,
    bucket: u8,
    /// The link's key and who scans it: the bucket is then `split::bucket`'s.
    scanner: Option<(String, String)>,
    asked_country: usize,
    asked_bucket: usize,
    /// How often the User-Agent and Accept-Language were read.
    read_ua: std::cell::Cell<usize>,
    read_lang: std::cell::Cell<usize>,
}

impl ScanFacts for Scan {
    fn user_agent(&self) -> &[u8] {
        self.read_ua.set(self.read_ua.get() + 1);
        self.ua.as_bytes()
    }
    fn accept_language(&self) -> &[u8] {
        self.read_lang.set(self.read_lang.get() + 1);
        self.lang.as_bytes()
    }
    fn country(&mut self) -> Option<[u8; 2]> {
        self.asked_country += 1;
        self.country
    }
    fn split_bucket(&mut self) -> u8 {
        self.asked_bucket += 1;
        match &self.scanner {
            Some((key, who)) => split::bucket(key, who.as_bytes()),
            None => self.bucket,
        }
    }
}

fn rules(v: Value) -> Rules {
    Rules::from_json(&v, &GEOIP).unwrap_or_else(|e| panic!("{v}: {e}"))
}

fn refused(v: Value, caps: Capabilities) -> RuleError {
    match Rules::from_json(&v, &caps) {
        Ok(_) => panic!("accepted: {v}"),
        Err(e) => e,
    }
}

const IPHONE: &str = "Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.0 Mobile/15E148 Safari/604.1";
const IPAD: &str = "Mozilla/5.0 (iPad; CPU OS 17_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.0 Mobile/15E148 Safari/604.1";
const PIXEL: &str = "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Mobile Safari/537.36";
const GALAXY_TAB: &str = "Mozilla/5.0 (Linux; Android 13; SM-X700) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36";
const WINDOWS: &str = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36";
const MAC: &str = "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.0 Safari/605.1.15";
const LUMIA: &str = "Mozilla/5.0 (Windows Phone 10.0; Android 4.2.1; NOKIA; Lumia 930) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/39.0.2171.71 Mobile Safari/537.36 Edge/12.0";
const UAS: [&str; 10] = [
    IPHONE,
    IPAD,
    PIXEL,
    GALAXY_TAB,
    WINDOWS,
    MAC,
    LUMIA,
    "curl/8.5.0",
    "",
    "App/1.0.0 CFNetwork/1240.0.4 Darwin/20.5.0",
];

// ---- bad input -------------------------------------------------------

#[test]
fn bad_input_is_named_by_its_field() {
    let url = "https://example.com/a";
    let cases: Vec<(Value, &str, Problem)> = vec![
        (json!({"rules": []}), "rules", Problem::NotArray),
        (json!([1]), "rules[0]", Problem::NotObject),
        (
            json!([{"url": url, "colour": ["red"]}]),
            "rules[0].colour",
            Problem::UnknownField,
        ),
        (
            json!([{"url": url, "os": ["ios"]}, {"url": url, "contry": ["IE"]}]),
            "rules[1].contry",
            Problem::UnknownField,
        ),
        (
            json!([{"os": ["ios"]}]),
            "rules[0].url",
            Problem::MissingUrl,
        ),
        (json!([{"url": url}]), "rules[0]", Problem::NoCondition),
        (
            json!([{"url": 5, "os": ["ios"]}]),
            "rules[0].url",
            Problem::NotText,
        ),
        (
            json!([{"url": url, "os": []}]),
            "rules[0].os",
            Problem::NotList,
        ),
        (
            json!([{"url": url, "os": "ios"}]),
            "rules[0].os",
            Problem::NotList,
        ),
        (
            json!([{"url": url, "os": ["ios", "windows"]}]),
            "rules[0].os[1]",
            Problem::NotOneOf("ios, ipados, android, other"),
        ),
        (
            json!([{"url": url, "os": ["iOS"]}]),
            "rules[0].os[0]",
            Problem::NotOneOf("ios, ipados, android, other"),
        ),
        (
            json!([{"url": url, "class": ["watch"]}]),
            "rules[0].class[0]",
            Problem::NotOneOf("phone, tablet, desktop"),
        ),
        (
            json!([{"url": url, "class": []}]),
            "rules[0].class",
            Problem::NotList,
        ),
        (
            json!([{"url": url, "country": ["ie"]}]),
            "rules[0].country[0]",
            Problem::BadCountry,
        ),
        (
            json!([{"url": url, "country": ["IE", "UK"]}]),
            "rules[0].country[1]",
            Problem::Uk,
        ),
        (
            json!([{"url": url, "country": []}]),
            "rules[0].country",
            Problem::NotList,
        ),
        (
            json!([{"url": url, "lang": ["en_GB"]}]),
            "rules[0].lang[0]",
            Problem::BadLanguage,
        ),
        (
            json!([{"url": url, "lang": [7]}]),
            "rules[0].lang[0]",
            Problem::NotText,
        ),
        (
            json!([{"url": url, "lang": []}]),
            "rules[0].lang",
            Problem::NotList,
        ),
        (
            json!([{"url": url, "from": "tomorrow"}]),
            "rules[0].from",
            Problem::BadTime,
        ),
        (
            json!([{"url": url, "until": "2026-12-01"}]),
            "rules[0].until",
            Problem::BadTime,
        ),
        (
            json!([{"url": url, "from": "2026-12-01T00:00:00Z", "until": "2026-12-01T00:00:00Z"}]),
            "rules[0].until",
            Problem::UntilNotAfterFrom,
        ),
        (
            json!([{"url": url, "from": "2026-12-02T00:00:00Z", "until": "2026-12-01T00:00:00Z"}]),
            "rules[0].until",
            Problem::UntilNotAfterFrom,
        ),
        (
            json!([{"url": url, "days": ["mon", "someday"], "tz": "UTC"}]),
            "rules[0].days[1]",
            Problem::NotOneOf("mon, tue, wed, thu, fri, sat, sun"),
        ),
        (
            json!([{"url": url, "days": ["Monday"], "tz": "UTC"}]),
            "rules[0].days[0]",
            Problem::NotOneOf("mon, tue, wed, thu, fri, sat, sun"),
        ),
        (
            json!([{"url": url, "days": [], "tz": "UTC"}]),
            "rules[0].days",
            Problem::NotList,
        ),
        (
            json!([{"url": url, "hours": ["11:00", "11:00"], "tz": "UTC"}]),
            "rules[0].hours",
            Problem::EmptyWindow,
        ),
        (
            json!([{"url": url, "hours": ["11:00"], "tz": "UTC"}]),
            "rules[0].hours",
            Problem::BadHours,
        ),
        (
            json!([{"url": url, "hours": ["11:00", "24:00"], "tz": "UTC"}]),
            "rules[0].hours",
            Problem::BadHours,
        ),
        (
            json!([{"url": url, "hours": ["9:00", "17:00"], "tz": "UTC"}]),
            "rules[0].hours",
            Problem::BadHours,
        ),
        (
            json!([{"url": url, "hours": "11:00-15:00", "tz": "UTC"}]),
            "rules[0].hours",
            Problem::BadHours,
        ),
        (
            json!([{"url": url, "hours": ["11:00", "15:00"]}]),
            "rules[0].tz",
            Problem::MissingTimeZone,
        ),
        (
            json!([{"url": url, "days": ["sat"]}]),
            "rules[0].tz",
            Problem::MissingTimeZone,
        ),
        (
            json!([{"url": url, "days": ["sat"], "tz": "Europe/Atlantis"}]),
            "rules[0].tz",
            Problem::BadTimeZone,
        ),
        (
            json!([{"url": url, "days": ["sat"], "tz": 1}]),
            "rules[0].tz",
            Problem::NotText,
        ),
        (
            json!([{"url": url, "os": ["ios"], "tz": "UTC"}]),
            "rules[0].tz",
            Problem::UnusedTimeZone,
        ),
        (
            json!([{"url": url, "split": [50, 101]}]),
            "rules[0].split",
            Problem::BadSplit,
        ),
        (
            json!([{"url": url, "split": [50, 50]}]),
            "rules[0].split",
            Problem::BadSplit,
        ),
        (
            json!([{"url": url, "split": [60, 40]}]),
            "rules[0].split",
            Problem::BadSplit,
        ),
        (
            json!([{"url": url, "split": [-1, 40]}]),
            "rules[0].split",
            Problem::BadSplit,
        ),
        (
            json!([{"url": url, "split": [0.5, 40]}]),
            "rules[0].split",
            Problem::BadSplit,
        ),
        (
            json!([{"url": url, "split": [0, 40, 100]}]),
            "rules[0].split",
            Problem::BadSplit,
        ),
        (
            json!([{"url": url, "split": 50}]),
            "rules[0].split",
            Problem::BadSplit,
        ),
    ];
    for (v, path, problem) in cases {
        let e = refused(v.clone(), GEOIP);
        assert_eq!((e.path.as_str(), &e.problem), (path, &problem), "{v}");
        let line = e.to_string();
        assert!(
            line.starts_with(&format!("{path}: ")) && !line.contains('\n'),
            "{line}"
        );
    }
}

#[test]
fn the_path_as_a_json_pointer() {
    let pointer = |v: Value| refused(v, GEOIP).pointer().to_owned();
    let url = "https://example.com/";
    assert_eq!(pointer(json!({})), "/rules");
    assert_eq!(pointer(json!([{"url": url, "os": ["x"]}])), "/rules/0/os/0");
    assert_eq!(
        pointer(json!([{"url": url, "split": [1]}])),
        "/rules/0/split"
    );
    assert_eq!(pointer(json!([{"url": url, "a/b~": 1}])), "/rules/0/a~1b~0");
    assert_eq!(
        pointer(json!([{"url": url, "a.b[1]": 1}])),
        "/rules/0/a.b[1]"
    );
    assert_eq!(pointer(json!([{"url": url}])), "/rules/0");
}

#[test]
fn a_long_unknown_field_is_not_echoed_whole() {
    let name = "x".repeat(100_000);
    let e = refused(json!([{"url": "https://example.com/", name: 1}]), GEOIP);
    assert_eq!(e.path, format!("rules[0].{}…", "x".repeat(40)));
}

#[test]
fn a_country_rule_needs_a_geoip_database_unless_already_stored() {
    let v = json!([{"url": "https://example.com/ie", "country": ["IE"]}]);
    let e = refused(v.clone(), Capabilities { geoip: false });
    assert_eq!(
        (e.path.as_str(), e.problem.clone()),
        ("rules[0].country", Problem::NoGeoip)
    );
    assert!(e.to_string().contains("--geoip-db"), "{e}");
    let mut doc = Document::new();
    doc.insert("rules".into(), v);
    assert_eq!(Rules::from_stored(&doc).expect("stored").len(), 1);
}

#[test]
fn a_rule_url_is_an_absolute_url_with_urls_own_checks() {
    let e = refused(json!([{"url": "/menu", "os": ["ios"]}]), GEOIP);
    assert_eq!(
        (e.path.as_str(), &e.problem),
        ("rules[0].url", &Problem::UrlNotAbsolute)
    );
    assert_eq!(
        e.to_string(),
        "rules[0].url: must be an absolute http(s) URL (https://...), not a path"
    );
    for (bad, want) in [
        ("ftp://example.com/", "not an absolute http(s) URL"),
        ("https://user@example.com/", "user name or password"),
        ("", "must not be empty"),
    ] {
        let e = refused(json!([{"url": bad, "os": ["ios"]}]), GEOIP);
        assert_eq!(e.path, "rules[0].url");
        assert!(matches!(e.problem, Problem::BadUrl(_)), "{e}");
        assert!(e.to_string().contains(want), "{e}");
    }
    // A host in capitals is stored in lower case, as `url` is.
    let r = rules(json!([{"url": "https://Example.COM/a", "os": ["ios"]}]));
    assert_eq!(r.url(0).map(|d| d.as_str()), Some("https://example.com/a"));
    assert_eq!(r.to_json()[0]["url"], "https://example.com/a");
    let long = format!(
        "https://example.com/{}",
        "a".repeat(crate::values::destination::MAX_DESTINATION)
    );
    let e = refused(json!([{"url": long, "os": ["ios"]}]), GEOIP);
    assert!(e.to_string().contains("at most 8192 bytes"), "{e}");
}

#[test]
fn at_most_32_rules() {
    let one = json!({"url": "https://example.com/", "split": [0, 100]});
    assert_eq!(
        rules(Value::Array(vec![one.clone(); MAX_RULES])).len(),
        MAX_RULES
    );
    let e = refused(Value::Array(vec![one; MAX_RULES + 1]), GEOIP);
    assert_eq!(
        (e.path.as_str(), e.problem),
        ("rules", Problem::TooMany(33))
    );
}

#[test]
fn round_trips_as_written() {
    let v = json!([
        {"url": "https://apps.apple.com/app/id1", "os": ["ios", "ipados"], "class": ["phone", "tablet"]},
        {"url": "https://example.com/lunch", "days": ["mon","tue","wed","thu","fri"], "hours": ["11:00", "15:00"], "tz": "Europe/Dublin"},
        {"url": "https://example.com/en", "lang": ["en-GB", "EN"], "country": ["GB", "IE"]},
        {"url": "https://example.com/recap", "from": "2026-12-01T08:00:00+01:00", "until": "2027-01-01T00:00:00Z"},
        {"url": "https://example.com/b", "split": [50, 100]}
    ]);
    let r = rules(v.clone());
    assert_eq!(r.to_json(), v);
    let lines: Vec<String> = (0..r.len()).filter_map(|i| r.conditions(i)).collect();
    assert_eq!(
        lines,
        [
            "os: ios, ipados; class: phone, tablet",
            "days: mon, tue, wed, thu, fri; hours: 11:00–15:00; tz: Europe/Dublin",
            "country: GB, IE; lang: en-GB, EN",
            "from: 2026-12-01T08:00:00+01:00; until: 2027-01-01T00:00:00Z",
            "split: 50–100%",
        ]
    );
    assert_eq!(r.conditions(5), None);
    assert_eq!(rules(r.to_json()), r);
    assert_eq!(r.url(4).map(|d| d.as_str()), Some("https://example.com/b"));
    assert_eq!(r.url(5), None);
    let mut doc = Document::new();
    doc.insert("url".into(), json!("https://example.com/"));
    r.write_to(&mut doc);
    assert_eq!(Rules::from_document(&doc, &GEOIP).expect("doc"), r);
    Rules::default().write_to(&mut doc);
    assert!(!doc.contains_key("rules") && doc.contains_key("url"));
    assert!(Rules::from_document(&doc, &GEOIP).expect("none").is_empty());
    doc.insert("rules".into(), Value::Null);
    assert!(Rules::from_document(&doc, &GEOIP).expect("null").is_empty());
    assert!(rules(json!([])).is_empty());
}

#[test]
fn reads_and_vary() {
    assert_eq!(Rules::default().reads(), Reads::NONE);
    assert_eq!(Rules::default().reads().vary(), None);
    let r = rules(json!([
        {"url": "https://example.com/a", "os": ["ios"]},
        {"url": "https://example.com/b", "lang": ["de"], "from": "2026-01-01T00:00:00Z"}
    ]));
    assert!(
        r.reads()
            .contains(Reads::USER_AGENT | Reads::ACCEPT_LANGUAGE | Reads::CLOCK)
    );
    assert!(!r.reads().contains(Reads::COUNTRY) && !r.reads().contains(Reads::SPLIT));
    assert_eq!(r.reads().vary(), Some("User-Agent, Accept-Language"));
    let clock = rules(json!([{"url": "https://example.com/a", "until": "2026-01-01T00:00:00Z"}]));
    assert_eq!(clock.reads().vary(), None);
    let split = rules(json!([{"url": "https://example.com/a", "split": [0, 50]}]));
    assert_eq!(split.reads().vary(), Some("User-Agent, Cookie"));
    let geo = rules(json!([{"url": "https://example.com/a", "country": ["IE"]}]));
    assert_eq!(geo.reads(), Reads::COUNTRY);
    assert_eq!(geo.reads().vary(), None);
    assert_eq!(
        rules(json!([{"url": "https://example.com/a", "lang": ["de"]}]))
            .reads()
            .vary(),
        Some("Accept-Language")
    );
}

/// Every combination of what rules read names one `Vary` value, and
/// `vary_index` places it in `VARY_VALUES` (the server's headers).
#[test]
fn vary_index_places_every_vary() {
    let mut seen = std::collections::BTreeSet::new();
    for bits in 0u8..32 {
        let reads = [
            Reads::USER_AGENT,
            Reads::ACCEPT_LANGUAGE,
            Reads::COUNTRY,
            Reads::SPLIT,
            Reads::CLOCK,
        ]
        .into_iter()
        .enumerate()
        .filter(|(i, _)| bits & (1 << i) != 0)
        .fold(Reads::NONE, |r, (_, x)| r | x);
        let i = reads.vary_index();
        assert_eq!(i.map(|i| VARY_VALUES[i]), reads.vary());
        seen.extend(i);
    }
    assert_eq!(seen.len(), VARY_VALUES.len(), "each value is used");
}

/// A rule's destination is judged plain once, when compiled.
#[test]
fn a_rule_destination_is_judged_plain_once() {
    let r = rules(json!([
        {"url": "https://example.com/wp/whelans/open?p=14", "os": ["ios"]},
        {"url": "https://example.com:8443/a", "os": ["android"]},
        {"url": "https://example.com/a#top", "lang": ["de"]}
    ]));
    assert!(r.is_plain(0));
    assert!(!r.is_plain(1) && !r.is_plain(2));
    assert!(!r.is_plain(3), "no such rule");
    assert!(!r.url_is_direct(), "unknown until the snapshot says");
}

// ---- choose ------------------------------------------------------------

#[test]
fn the_first_rule_that_holds_wins() {
    let r = rules(json!([
        {"url": "https://apps.apple.com/", "os": ["ios", "ipados"]},
        {"url": "https://play.google.com/", "os": ["android"]},
        {"url": "https://example.com/tablets", "class": ["tablet"]},
        {"url": "https://example.com/de", "lang": ["de"]}
    ]));
    let scan = |ua: &str, lang: &str| Scan {
        ua: ua.into(),
        lang: lang.into(),
        ..Scan::default()
    };
    let now = at("2026-11-28T12:00:00Z");
    assert_eq!(r.choose(&mut scan(IPHONE, "de"), now), Some(0));
    assert_eq!(r.choose(&mut scan(IPAD, ""), now), Some(0));
    assert_eq!(r.choose(&mut scan(PIXEL, ""), now), Some(1));
    assert_eq!(r.choose(&mut scan(GALAXY_TAB, ""), now), Some(1));
    assert_eq!(r.choose(&mut scan(WINDOWS, "de-AT,en;q=0.5"), now), Some(3));
    assert_eq!(r.choose(&mut scan(WINDOWS, "en,de;q=0.9"), now), None);
    assert_eq!(r.choose(&mut scan(LUMIA, ""), now), None);
}

#[test]
fn facts_are_asked_lazily_and_once() {
    let r = rules(json!([
        {"url": "https://example.com/a", "os": ["android"], "country": ["IE"]},
        {"url": "https://example.com/b", "country": ["GB"], "split": [0, 50]},
        {"url": "https://example.com/c", "country": ["US"]},
        {"url": "https://example.com/d", "split": [50, 100]}
    ]));
    let now = at("2026-11-28T12:00:00Z");
    // Not Android, bucket 70: the first two never reach their country.
    let mut s = Scan {
        ua: IPHONE.into(),
        bucket: 70,
        country: Some(*b"US"),
        ..Scan::default()
    };
    assert_eq!(r.choose(&mut s, now), Some(2));
    assert_eq!((s.asked_country, s.asked_bucket), (1, 1));
    let mut s = Scan {
        ua: IPHONE.into(),
        bucket: 70,
        country: None,
        ..Scan::default()
    };
    assert_eq!(r.choose(&mut s, now), Some(3));
    assert_eq!((s.asked_country, s.asked_bucket), (1, 1));
    // A rule list about time alone asks nothing.
    let t = rules(json!([{"url": "https://example.com/a", "from": "2026-01-01T00:00:00Z"}]));
    let mut s = Scan::default();
    assert_eq!(t.choose(&mut s, now), Some(0));
    assert_eq!((s.asked_country, s.asked_bucket), (0, 0));
}

// ---- time windows and next_change ---------------------------------------

fn lunch(tz: &str) -> Rules {
    rules(json!([{
        "url": "https://example.com/lunch",
        "days": ["mon", "tue", "wed", "thu", "fri"],
        "hours": ["11:00", "15:00"],
        "tz": tz
    }]))
}

/// (now, chosen now, the next change) for a rule list and an empty scan.
fn timeline(r: &Rules, now: &str) -> (Option<usize>, Option<(i64, Option<usize>)>) {
    let now = at(now);
    (
        r.choose(&mut Scan::default(), now),
        r.next_change(&mut Scan::default(), now),
    )
}

#[test]
fn weekday_lunch_in_dublin_across_both_changes() {
    let r = lunch("Europe/Dublin");
    let table = [
        // Friday before spring forward (GMT): lunch is 11:00-15:00 UTC.
        (
            "2026-03-27T10:59:59Z",
            None,
            ("2026-03-27T11:00:00Z", Some(0)),
        ),
        (
            "2026-03-27T11:00:00Z",
            Some(0),
            ("2026-03-27T15:00:00Z", None),
        ),
        // After it: Monday's lunch is 10:00 UTC (IST).
        (
            "2026-03-27T15:00:00Z",
            None,
            ("2026-03-30T10:00:00Z", Some(0)),
        ),
        (
            "2026-03-30T10:30:00Z",
            Some(0),
            ("2026-03-30T14:00:00Z", None),
        ),
        // Friday before fall back (IST), then Monday in GMT.
        (
            "2026-10-23T12:00:00Z",
            Some(0),
            ("2026-10-23T14:00:00Z", None),
        ),
        (
            "2026-10-23T14:00:00Z",
            None,
            ("2026-10-26T11:00:00Z", Some(0)),
        ),
    ];
    for (now, chosen, (next, then)) in table {
        assert_eq!(timeline(&r, now), (chosen, Some((at(next), then))), "{now}");
    }
}

#[test]
fn weekday_office_hours_in_new_york_across_both_changes() {
    let r = rules(json!([{
        "url": "https://example.com/open",
        "days": ["mon", "tue", "wed", "thu", "fri"],
        "hours": ["09:00", "17:00"],
        "tz": "America/New_York"
    }]));
    let table = [
        // Friday 17:00 EST; the clocks go forward on Sunday 2026-03-08.
        (
            "2026-03-06T22:00:00Z",
            None,
            ("2026-03-09T13:00:00Z", Some(0)),
        ),
        (
            "2026-03-09T13:00:00Z",
            Some(0),
            ("2026-03-09T21:00:00Z", None),
        ),
        // Friday 17:00 EDT; back on Sunday 2026-11-01.
        (
            "2026-10-30T21:00:00Z",
            None,
            ("2026-11-02T14:00:00Z", Some(0)),
        ),
        (
            "2026-11-02T14:00:00Z",
            Some(0),
            ("2026-11-02T22:00:00Z", None),
        ),
    ];
    for (now, chosen, (next, then)) in table {
        assert_eq!(timeline(&r, now), (chosen, Some((at(next), then))), "{now}");
    }
}

#[test]
fn a_window_crossing_midnight() {
    let r = rules(json!([
        {"url": "https://example.com/late", "days": ["fri", "sat"], "hours": ["22:00", "02:00"], "tz": "Europe/Dublin"}
    ]));
    let table = [
        (
            "2026-11-27T01:00:00Z",
            None,
            ("2026-11-27T22:00:00Z", Some(0)),
        ), // Friday morning: Thursday had none
        (
            "2026-11-28T01:00:00Z",
            Some(0),
            ("2026-11-28T02:00:00Z", None),
        ), // Saturday morning: Friday's
        (
            "2026-11-28T23:00:00Z",
            Some(0),
            ("2026-11-29T02:00:00Z", None),
        ), // Saturday night
        (
            "2026-11-29T02:00:00Z",
            None,
            ("2026-12-04T22:00:00Z", Some(0)),
        ), // Sunday: next Friday
    ];
    for (now, chosen, (next, then)) in table {
        assert_eq!(timeline(&r, now), (chosen, Some((at(next), then))), "{now}");
    }
}

/// Falling back repeats an hour: a late window that ended at 01:30 summer
/// time holds again from 01:00 to 01:30 winter time.
#[test]
fn the_repeated_hour_reopens_a_late_window() {
    let r = rules(json!([
        {"url": "https://example.com/late", "days": ["sat"], "hours": ["22:00", "01:30"], "tz": "Europe/Dublin"}
    ]));
    let table = [
        (
            "2026-10-24T21:00:00Z",
            Some(0),
            ("2026-10-25T00:30:00Z", None),
        ), // 22:00 IST
        (
            "2026-10-25T00:30:00Z",
            None,
            ("2026-10-25T01:00:00Z", Some(0)),
        ), // 01:30 IST; 01:00 GMT next
        (
            "2026-10-25T01:00:00Z",
            Some(0),
            ("2026-10-25T01:30:00Z", None),
        ),
        (
            "2026-10-25T01:30:00Z",
            None,
            ("2026-10-31T22:00:00Z", Some(0)),
        ),
    ];
    for (now, chosen, (next, then)) in table {
        assert_eq!(timeline(&r, now), (chosen, Some((at(next), then))), "{now}");
    }
}

#[test]
fn from_in_the_past_and_in_the_future() {
    let recap =
        rules(json!([{"url": "https://example.com/recap", "from": "2026-12-01T08:00:00Z"}]));
    assert_eq!(timeline(&recap, "2026-12-02T00:00:00Z"), (Some(0), None));
    assert_eq!(
        timeline(&recap, "2026-11-28T00:00:00Z"),
        (None, Some((at("2026-12-01T08:00:00Z"), Some(0))))
    );
    assert_eq!(timeline(&recap, "2026-12-01T07:59:59.999Z").0, None);
    assert_eq!(timeline(&recap, "2026-12-01T08:00:00Z").0, Some(0));
    let sale = rules(json!([
        {"url": "https://example.com/sale", "from": "2026-12-01T00:00:00Z", "until": "2026-12-03T00:00:00Z"}
    ]));
    assert_eq!(
        timeline(&sale, "2026-12-02T00:00:00Z"),
        (Some(0), Some((at("2026-12-03T00:00:00Z"), None)))
    );
    assert_eq!(timeline(&sale, "2026-12-03T00:00:00Z"), (None, None));
    // A weekly window that starts long after now, behind a `from`: Friday
    // 2027-01-01 is not a Monday, so the change is the Monday after.
    let later = rules(json!([
        {"url": "https://example.com/x", "from": "2027-01-01T00:00:00Z", "days": ["mon"], "hours": ["09:00", "17:00"], "tz": "UTC"}
    ]));
    assert_eq!(
        timeline(&later, "2026-11-28T00:00:00Z"),
        (None, Some((at("2027-01-04T09:00:00Z"), Some(0))))
    );
    // Rules with no time condition never change.
    let os = rules(json!([{"url": "https://example.com/x", "os": ["ios"]}]));
    assert_eq!(timeline(&os, "2026-11-28T00:00:00Z"), (None, None));
}

#[test]
fn next_change_is_for_this_scan() {
    let r = rules(json!([
        {"url": "https://example.com/ios", "os": ["ios"], "until": "2026-12-01T00:00:00Z"},
        {"url": "https://example.com/all", "from": "2026-12-05T00:00:00Z"}
    ]));
    let now = at("2026-11-28T00:00:00Z");
    let mut iphone = Scan {
        ua: IPHONE.into(),
        ..Scan::default()
    };
    assert_eq!(
        r.next_change(&mut iphone, now),
        Some((at("2026-12-01T00:00:00Z"), None))
    );
    let mut pixel = Scan {
        ua: PIXEL.into(),
        ..Scan::default()
    };
    assert_eq!(
        r.next_change(&mut pixel, now),
        Some((at("2026-12-05T00:00:00Z"), Some(1)))
    );
}

// ---- A/B ---------------------------------------------------------------

/// Tracking IDs as `tracking::id` makes them: 8 base-62 characters of
/// milliseconds and 11 random ones (here a counter's digits, spread).
fn tracking_ids(n: usize) -> Vec<String> {
    const B62: &[u8] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
    (0..n)
        .map(|i| {
            let mut x = (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0x1234_5678;
            let mut s = String::from("0mE3Yk1z");
            for _ in 0..11 {
                s.push(B62[(x % 62) as usize] as char);
                x /= 62;
            }
            s
        })
        .collect()
}

fn shares(r: &Rules, ids: &[String]) -> BTreeMap<Option<usize>, usize> {
    let mut counts = BTreeMap::new();
    let now = at("2026-11-28T12:00:00Z");
    for id in ids {
        let first = r.choose(
            &mut Scan {
                bucket: split::bucket("menu", id.as_bytes()),
                ..Scan::default()
            },
            now,
        );
        // The same ID gets the same variant on every scan.
        for _ in 0..4 {
            let again = r.choose(
                &mut Scan {
                    bucket: split::bucket("menu", id.as_bytes()),
                    ..Scan::default()
                },
                now,
            );
            assert_eq!(again, first, "{id}");
        }
        *counts.entry(first).or_insert(0) += 1;
    }
    counts
}

#[test]
fn ten_thousand_ids_split_50_50() {
    let ids = tracking_ids(10_000);
    let distinct: std::collections::HashSet<_> = ids.iter().collect();
    assert_eq!(distinct.len(), 10_000);
    let r = rules(json!([
        {"url": "https://example.com/a", "split": [0, 50]},
        {"url": "https://example.com/b", "split": [50, 100]}
    ]));
    let counts = shares(&r, &ids);
    println!("50/50 over 10,000 IDs: {counts:?}");
    assert_eq!(counts.get(&None), None);
    for variant in [Some(0), Some(1)] {
        let n = counts[&variant];
        assert!((4_800..=5_200).contains(&n), "{variant:?}: {n}");
    }
}

#[test]
fn ten_thousand_ids_split_three_ways() {
    let ids = tracking_ids(10_000);
    let r = rules(json!([
        {"url": "https://example.com/a", "split": [0, 34]},
        {"url": "https://example.com/b", "split": [34, 67]},
        {"url": "https://example.com/c", "split": [67, 100]}
    ]));
    let counts = shares(&r, &ids);
    println!("34/33/33 over 10,000 IDs: {counts:?}");
    for (variant, share) in [(Some(0), 3_400), (Some(1), 3_300), (Some(2), 3_300)] {
        let n = counts[&variant];
        assert!((share - 200..=share + 200).contains(&n), "{variant:?}: {n}");
    }
}

#[test]
fn without_a_cookie_the_same_address_and_user_agent_keep_their_variant() {
    let who = |ip: &str, ua: &str| [ip.as_bytes(), b" ", ua.as_bytes()].concat();
    let a = split::bucket("menu", &who("203.0.113.7", IPHONE));
    for _ in 0..5 {
        assert_eq!(split::bucket("menu", &who("203.0.113.7", IPHONE)), a);
    }
    let spread: std::collections::HashSet<u8> = (0..200)
        .map(|i| split::bucket("menu", &who(&format!("198.51.100.{i}"), IPHONE)))
        .collect();
    assert!(spread.len() > 50, "{}", spread.len());
}

// ---- the User-Agent corpus ------------------------------------------------

/// The OS family (iOS, Android, other) and device class of the byte scan
/// against the Python ua-parser / user-agents answers committed in
/// `tests/fixtures/ua/reference.tsv`; both rates printed, the OS asserted
/// at 99% (issue 34), the class at 90% (see `device.rs` on why it is lower).
#[test]
fn device_agrees_with_the_ua_parser_corpus() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/ua/reference.tsv"
    );
    let text = std::fs::read_to_string(path).expect("reference");
    let (mut n, mut os_ok, mut classed, mut class_ok) = (0usize, 0usize, 0usize, 0usize);
    let mut misses = Vec::new();
    for line in text.lines() {
        let f: Vec<&str> = line.split('\t').collect();
        assert_eq!(f.len(), 5, "{line}");
        let d = Device::of(f[0].as_bytes());
        let family = match d.os {
            Os::Ios | Os::IpadOs => "iOS",
            Os::Android => "Android",
            Os::Other => "other",
        };
        let want = if matches!(f[1], "iOS" | "Android") {
            f[1]
        } else {
            "other"
        };
        n += 1;
        if family == want {
            os_ok += 1;
        } else {
            misses.push((want, family, f[0]));
        }
        if matches!(f[4], "phone" | "tablet" | "desktop") {
            classed += 1;
            class_ok += usize::from(d.class.map(Class::name) == Some(f[4]));
        }
    }
    let os_rate = os_ok as f64 * 100.0 / n as f64;
    let class_rate = class_ok as f64 * 100.0 / classed as f64;
    println!(
        "{n} User-Agents: OS family (iOS/Android/other) {os_rate:.2}% agree with ua-parser; \
         device class {class_rate:.2}% of the {classed} the reference calls phone, tablet or desktop"
    );
    println!("OS misses (reference, byte scan): {misses:?}");
    assert!(n >= 2000, "{n}");
    assert!(os_rate >= 99.0, "OS agreement {os_rate:.2}%");
    assert!(class_rate >= 90.0, "class agreement {class_rate:.2}%");
}

// ---- the property: choose equals a plain reference evaluator ---------------

/// The documented OS rules, written plainly: substring tests in the order
/// `device.rs` documents (not its one-pass scan).
fn reference_os(ua: &str) -> Os {
    let has = |s: &str| ua.contains(s);
    let any = |l: &[&str]| l.iter().any(|s| ua.contains(s));
    let apple = if has("iPad") { Os::IpadOs } else { Os::Ios };
    let android_version = ua.match_indices("Android").any(|(i, _)| {
        let b = ua.as_bytes();
        b.get(i + 7).is_some_and(|c| b" -/:".contains(c))
            && b.get(i + 8).is_some_and(u8::is_ascii_digit)
    });
    let ios_word = ua.match_indices("iOS").any(|(i, _)| {
        let b = ua.as_bytes();
        (i == 0 || !b[i - 1].is_ascii_alphabetic())
            && b.get(i + 3).is_none_or(|c| b" /;-)_".contains(c))
    });
    if any(&[
        "Windows Phone",
        "XBLWP7",
        "Windows Mobile",
        "WindowsMobile",
        "CrKey",
        "AspiegelBot",
        "PetalBot",
    ]) {
        Os::Other
    } else if has("Outlook-iOS-Android") {
        apple
    } else if android_version
        || ua.starts_with("JUC")
        || any(&["Silk-Accelerated=", "Quest", "; Adr ", "android mobile/"])
    {
        Os::Android
    } else if any(&[
        "Windows", "Win32", "Win16", "WinNT", "Win64", "Win9", "Tizen",
    ]) {
        Os::Other
    } else if has("Mac OS X") && has("Intel") && any(&["CriOS/", "EdgiOS/"]) {
        apple
    } else if any(&[
        "Macintosh",
        "Mac_PowerPC",
        "(x86_64)",
        "(i386)",
        "CFNetwork/720.",
        "CFNetwork/760.",
        "watchOS",
        "Apple TV",
        "AppleTV",
    ]) {
        Os::Other
    } else if ios_word || any(&["iPhone", "iPad", "iPod", "CFNetwork/", "iPh OS", "iPd OS"]) {
        apple
    } else if has("Android") {
        Os::Android
    } else {
        Os::Other
    }
}

fn reference_class(ua: &str, os: Os) -> Option<&'static str> {
    let any = |l: &[&str]| l.iter().any(|s| ua.contains(s));
    let tablet = any(&["Kindle", "KFTT", "KFOT", "Silk", "PlayBook", "Tablet"]);
    let mobile = ua.contains("Mobile");
    match os {
        Os::Ios => Some("phone"),
        Os::IpadOs => Some("tablet"),
        Os::Android => Some(if tablet || !mobile { "tablet" } else { "phone" }),
        Os::Other if tablet => Some("tablet"),
        Os::Other
            if mobile
                || any(&[
                    "Windows Phone",
                    "Windows Mobile",
                    "WindowsMobile",
                    "XBLWP7",
                    "IEMobile",
                    "Symbian",
                    "SymbOS",
                    "BlackBerry",
                    "BB10",
                    "J2ME",
                    "MIDP",
                    "Opera Mini",
                    "Opera Mobi",
                    "Series40",
                    "Series 60",
                    "Nokia",
                    "KaiOS",
                ]) =>
        {
            Some("phone")
        }
        Os::Other if ua.contains("Windows NT") && ua.contains("ARM;") => Some("tablet"),
        Os::Other
            if any(&[
                "Windows NT",
                "Macintosh",
                "Mac_PowerPC",
                "Mac OS X",
                "X11",
                "CrOS",
                "(x86_64)",
                "(i386)",
            ]) =>
        {
            Some("desktop")
        }
        Os::Other => None,
    }
}

/// The most preferred language, plainly: split, parse `q` as a float,
/// keep the first highest.
fn reference_preferred(header: &str) -> Option<String> {
    let mut best: Option<(String, f64)> = None;
    for part in header.split(',') {
        let mut pieces = part.split(';');
        let tag = pieces.next().unwrap_or("").trim();
        let ok_tag = !tag.is_empty()
            && tag.len() <= 35
            && tag.split('-').enumerate().all(|(i, t)| {
                (1..=8).contains(&t.len())
                    && if i == 0 {
                        t.chars().all(|c| c.is_ascii_alphabetic())
                    } else {
                        t.chars().all(|c| c.is_ascii_alphanumeric())
                    }
            });
        if !ok_tag {
            continue;
        }
        let mut q = 1.0;
        let mut bad = false;
        for p in pieces {
            let p = p.trim();
            match p.strip_prefix("q=").or_else(|| p.strip_prefix("Q=")) {
                Some(v)
                    if v.len() <= 5
                        && v.parse::<f64>().is_ok_and(|x| (0.0..=1.0).contains(&x))
                        && !v.starts_with('.')
                        && !v.contains('e')
                        && !v.contains('+') =>
                {
                    q = v.parse().unwrap_or(0.0)
                }
                _ => bad = true,
            }
        }
        if bad || q == 0.0 {
            continue;
        }
        if best.as_ref().is_none_or(|(_, b)| q > *b) {
            best = Some((tag.to_lowercase(), q));
        }
    }
    best.map(|(t, _)| t)
}

fn reference_window(rule: &Value, now: i64) -> bool {
    if rule.get("days").is_none() && rule.get("hours").is_none() {
        return true;
    }
    let tz: Tz = rule["tz"].as_str().unwrap_or("").parse().expect("tz");
    let local = Utc
        .timestamp_millis_opt(now)
        .single()
        .expect("now")
        .with_timezone(&tz);
    let names = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"];
    let today = names[local.weekday().num_days_from_monday() as usize];
    let yesterday = names[(local.weekday().num_days_from_monday() as usize + 6) % 7];
    let on = |d: &str| match rule.get("days") {
        None => true,
        Some(days) => days.as_array().expect("days").iter().any(|x| x == d),
    };
    let minutes =
        |s: &str| s[..2].parse::<u32>().expect("hh") * 60 + s[3..].parse::<u32>().expect("mm");
    let m = local.hour() * 60 + local.minute();
    match rule.get("hours") {
        None => on(today),
        Some(h) => {
            let (start, end) = (
                minutes(h[0].as_str().expect("start")),
                minutes(h[1].as_str().expect("end")),
            );
            if start < end {
                on(today) && start <= m && m < end
            } else {
                (on(today) && m >= start) || (on(yesterday) && m < end)
            }
        }
    }
}

/// The documented split hash, restated: SHA-256 of the key's length (4
/// bytes, big-endian), the key and the scanner; the first 8 bytes
/// big-endian, modulo 100.
fn reference_bucket(scan: &Scan) -> u64 {
    use sha2::{Digest, Sha256};
    let Some((key, who)) = &scan.scanner else {
        return u64::from(scan.bucket);
    };
    let mut input = (key.len() as u32).to_be_bytes().to_vec();
    input.extend_from_slice(key.as_bytes());
    input.extend_from_slice(who.as_bytes());
    let digest = Sha256::digest(&input);
    let first: [u8; 8] = digest[..8].try_into().expect("8 bytes");
    u64::from_be_bytes(first) % 100
}

fn reference_choose(list: &[Value], scan: &Scan, now: i64) -> Option<usize> {
    list.iter().position(|rule| {
        let strings = |f: &str| -> Option<Vec<String>> {
            rule.get(f).map(|v| {
                v.as_array()
                    .expect(f)
                    .iter()
                    .map(|x| x.as_str().expect(f).to_owned())
                    .collect()
            })
        };
        let time = |f: &str| rule.get(f).map(|v| at(v.as_str().expect(f)));
        let os = reference_os(&scan.ua);
        strings("os").is_none_or(|l| l.iter().any(|o| o == os.name()))
            && strings("class").is_none_or(|l| {
                reference_class(&scan.ua, os).is_some_and(|c| l.iter().any(|x| x == c))
            })
            && strings("country").is_none_or(|l| {
                scan.country
                    .is_some_and(|c| l.iter().any(|x| x.as_bytes() == c))
            })
            && strings("lang").is_none_or(|l| {
                reference_preferred(&scan.lang).is_some_and(|p| {
                    l.iter().any(|t| {
                        let t = t.to_lowercase();
                        p == t || p.starts_with(&format!("{t}-")) || t.starts_with(&format!("{p}-"))
                    })
                })
            })
            && time("from").is_none_or(|f| f <= now)
            && time("until").is_none_or(|u| now < u)
            && reference_window(rule, now)
            && rule.get("split").is_none_or(|s| {
                let (lo, hi) = (s[0].as_u64().expect("lo"), s[1].as_u64().expect("hi"));
                let bucket = reference_bucket(scan);
                lo <= bucket && bucket < hi
            })
    })
}

const INSTANTS: [&str; 8] = [
    "2026-03-08T06:30:00Z",
    "2026-03-29T01:00:00Z",
    "2026-06-01T00:00:00Z",
    "2026-10-25T00:30:00Z",
    "2026-11-01T06:00:00Z",
    "2026-11-28T12:00:00Z",
    "2026-12-24T18:00:00Z",
    "2027-01-01T00:00:00Z",
];
const HOURS: [&str; 8] = [
    "00:00", "01:30", "02:15", "06:00", "11:00", "15:00", "22:00", "23:59",
];
const ZONES: [&str; 4] = ["Europe/Dublin", "America/New_York", "UTC", "Asia/Kolkata"];
const LANGS: [&str; 7] = ["en", "en-GB", "de", "de-AT", "pt-BR", "fr", "EN-us"];
const COUNTRIES: [&str; 4] = ["IE", "GB", "US", "DE"];
const HEADERS: [&str; 11] = [
    "",
    "en",
    "pt;q=0.5, fr;q=0.4",
    "de-at, en;q=0.9",
    "en-GB,en;q=0.9",
    "de, en;q=0.8",
    "fr;q=0.2, pt-BR",
    "*",
    "en;q=0, de;q=0.5",
    "EN-US;q=1.0",
    "xx;q=2, de-CH;q=0.7",
];

fn subset<const N: usize>(
    pool: [&'static str; N],
) -> impl Strategy<Value = Option<Vec<&'static str>>> {
    prop::option::weighted(0.3, prop::sample::subsequence(pool.to_vec(), 1..=N))
}

prop_compose! {
    fn a_rule()(
        os in subset(["ios", "ipados", "android", "other"]),
        class in subset(["phone", "tablet", "desktop"]),
        country in subset(COUNTRIES),
        lang in subset(LANGS),
        from in prop::option::weighted(0.3, 0..INSTANTS.len()),
        until in prop::option::weighted(0.3, 0..INSTANTS.len()),
        days in prop::option::weighted(0.3, prop::sample::subsequence(DaySet::NAMES.to_vec(), 1..=7)),
        hours in prop::option::weighted(0.3, (0..HOURS.len(), 0..HOURS.len())),
        tz in 0..ZONES.len(),
        split in prop::option::weighted(0.3, (0u64..=100, 0u64..=100)),
        fallback_split in 0u64..100,
    ) -> Value {
        let mut r = serde_json::Map::new();
        r.insert("url".into(), json!("https://example.com/"));
        for (field, v) in [("os", os), ("class", class), ("country", country), ("lang", lang), ("days", days)] {
            if let Some(v) = v {
                r.insert(field.into(), json!(v));
            }
        }
        match (from, until) {
            (Some(f), Some(u)) if f < u => { r.insert("from".into(), json!(INSTANTS[f])); r.insert("until".into(), json!(INSTANTS[u])); }
            (Some(f), _) => { r.insert("from".into(), json!(INSTANTS[f])); }
            (None, Some(u)) => { r.insert("until".into(), json!(INSTANTS[u])); }
            (None, None) => {}
        }
        if let Some((a, b)) = hours && a != b {
            r.insert("hours".into(), json!([HOURS[a], HOURS[b]]));
        }
        if r.contains_key("days") || r.contains_key("hours") {
            r.insert("tz".into(), json!(ZONES[tz]));
        }
        match split {
            Some((a, b)) if a != b => { r.insert("split".into(), json!([a.min(b), a.max(b)])); }
            _ if r.len() == 1 => { r.insert("split".into(), json!([fallback_split, 100])); }
            _ => {}
        }
        Value::Object(r)
    }
}

prop_compose! {
    fn a_scan()(
        ua in prop::sample::select(UAS.to_vec()),
        lang in prop::sample::select(HEADERS.to_vec()),
        country in prop::option::of(prop::sample::select(COUNTRIES.to_vec())),
        bucket in 0u8..100,
        scanner in prop::option::of((
            prop::sample::select(vec!["H83if", "menu", "table-2", "a/b/c", ""]),
            "[0-9A-Za-z]{19}|[0-9.]{7,15} [ -~]{0,40}",
        )),
    ) -> Scan {
        Scan {
            ua: ua.into(),
            lang: lang.into(),
            country: country.map(|c| [c.as_bytes()[0], c.as_bytes()[1]]),
            bucket,
            scanner: scanner.map(|(k, w)| (k.to_owned(), w)),
            ..Scan::default()
        }
    }
}

/// An instant in 2026, to the second, or one of the edges the rules use.
fn an_instant() -> impl Strategy<Value = i64> {
    prop_oneof![
        (at("2026-01-01T00:00:00Z") / 1000..at("2027-01-10T00:00:00Z") / 1000)
            .prop_map(|s| s * 1000),
        prop::sample::select(INSTANTS.to_vec()).prop_map(at),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    /// Any link key, rule list, scan and time (the split's bucket computed
    /// from the key and the scanner on both sides).
    #[test]
    fn choose_equals_the_reference(list in prop::collection::vec(a_rule(), 0..6), mut scan in a_scan(), now in an_instant()) {
        let r = Rules::from_json(&Value::Array(list.clone()), &GEOIP).expect("generated rules are valid");
        prop_assert_eq!(r.to_json(), Value::Array(list.clone()));
        prop_assert_eq!(r.choose(&mut scan, now), reference_choose(&list, &scan, now));
        // Each fact read at most once, however many rules test it.
        prop_assert!(scan.asked_country <= 1 && scan.asked_bucket <= 1);
        prop_assert!(scan.read_ua.get() <= 1 && scan.read_lang.get() <= 1);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    /// `next_change` names the first instant `choose` differs, and nothing
    /// differs before it (checked at sampled instants and just before it).
    /// `choose` equals the reference, so the reference is the oracle.
    #[test]
    fn next_change_is_the_first_change(list in prop::collection::vec(a_rule(), 1..4), mut scan in a_scan(), now in an_instant()) {
        let r = Rules::from_json(&Value::Array(list.clone()), &GEOIP).expect("valid");
        let current = reference_choose(&list, &scan, now);
        let change = r.next_change(&mut scan, now);
        let horizon = match change {
            Some((t, then)) => {
                prop_assert!(t > now);
                prop_assert_eq!(reference_choose(&list, &scan, t), then);
                prop_assert_ne!(then, current);
                prop_assert_eq!(reference_choose(&list, &scan, t - 1), current);
                t
            }
            None => i64::MAX,
        };
        // Nothing differs before it: every 37 minutes for nine days, and at
        // every instant a rule names.
        let mut points: Vec<i64> = (0..9 * 24 * 60 / 37).map(|k| now + k * 37 * 60_000).collect();
        points.extend(INSTANTS.iter().map(|s| at(s)).filter(|&t| t > now));
        for t in points.into_iter().filter(|&t| t < horizon) {
            prop_assert_eq!(reference_choose(&list, &scan, t), current, "at {}", t);
        }
    }
}
