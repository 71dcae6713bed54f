//! "What would this scan get" (issue 34), pure: a scan described on the
//! link page (a device, a User-Agent, a language, a country, a time, a
//! split bucket) run through the link's rules ([`Rules::choose`]) and the
//! resolver the server runs ([`policy::decide`]), with what changes next
//! ([`Rules::next_change`]). The handler hands in the link, the other
//! links' live destinations and the time; nothing here reads a store.

use chrono::{DateTime, LocalResult, NaiveDateTime, TimeZone, Utc};
use chrono_tz::Tz;

use crate::link::rules::device::{Class, Device, Os};
use crate::link::rules::{Rules, ScanFacts, split};
use crate::redirect::policy::{self, Decision};

/// The device presets: a name, its label and a User-Agent such a device
/// sends.
pub const PRESETS: [(&str, &str, &str); 5] = [
    (
        "iphone",
        "iPhone",
        "Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1",
    ),
    (
        "ipad",
        "iPad",
        "Mozilla/5.0 (iPad; CPU OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1",
    ),
    (
        "android-phone",
        "Android phone",
        "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/125.0.0.0 Mobile Safari/537.36",
    ),
    (
        "android-tablet",
        "Android tablet",
        "Mozilla/5.0 (Linux; Android 14; SM-X710) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/125.0.0.0 Safari/537.36",
    ),
    (
        "desktop",
        "Desktop",
        "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/125.0.0.0 Safari/537.36",
    ),
];

/// The tester's form as typed (a GET form: its fields are the query's).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Described {
    /// One of [`PRESETS`]' names; empty with a `ua` of one's own.
    pub device: String,
    /// A User-Agent of one's own, which wins over the preset.
    pub ua: String,
    /// An `Accept-Language` header (`fr-CH, fr;q=0.9, en;q=0.5`).
    pub lang: String,
    pub country: String,
    /// A `datetime-local` in the console's time zone; empty for now.
    pub at: String,
    /// The split bucket, 0 to 99; empty for the User-Agent's.
    pub bucket: String,
}

impl Described {
    /// The tester's fields from a query string; `None` when the query is
    /// no tester's (it has no `device` field).
    pub fn from_query(query: &str) -> Option<Described> {
        let mut d = Described::default();
        let mut asked = false;
        for (name, value) in form_urlencoded::parse(query.as_bytes()) {
            let value = value.trim().to_owned();
            match &*name {
                "device" => {
                    asked = true;
                    d.device = value;
                }
                "ua" => d.ua = value,
                "lang" => d.lang = value,
                "country" => d.country = value,
                "at" => d.at = value,
                "bucket" => d.bucket = value,
                _ => {}
            }
        }
        asked.then_some(d)
    }

    /// The User-Agent the scan sends.
    pub fn user_agent(&self) -> &str {
        if !self.ua.is_empty() {
            return &self.ua;
        }
        PRESETS
            .iter()
            .find(|(name, ..)| *name == self.device)
            .map_or("", |(.., ua)| ua)
    }
}

/// Why a described scan cannot be tried: the field and the message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unclear {
    pub field: &'static str,
    pub message: String,
}

/// The described scan as the rules read it.
struct Facts<'a> {
    ua: &'a [u8],
    lang: &'a [u8],
    country: Option<[u8; 2]>,
    bucket: u8,
}

impl ScanFacts for Facts<'_> {
    fn user_agent(&self) -> &[u8] {
        self.ua
    }
    fn accept_language(&self) -> &[u8] {
        self.lang
    }
    fn country(&mut self) -> Option<[u8; 2]> {
        self.country
    }
    fn split_bucket(&mut self) -> u8 {
        self.bucket
    }
}

/// The link as the tester needs it.
pub struct Link<'a> {
    pub key: &'a str,
    pub url: &'a str,
    pub rules: &'a Rules,
    /// Whether the link answers at all at `ms` (not disabled, not expired).
    pub live_at: &'a dyn Fn(i64) -> bool,
    pub fallback: Option<&'a str>,
}

/// Which destination answers: a rule (from 0) or the link's `url`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pick {
    pub rule: Option<usize>,
    pub destination: String,
}

/// What a scan gets now, and the next change and its answer, if one is
/// coming.
pub type Schedule = (Pick, Option<(DateTime<Utc>, Pick)>);

/// What the described scan gets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    pub at: DateTime<Utc>,
    pub user_agent: String,
    /// The OS and class the User-Agent reads as (`ios`, `phone`).
    pub seen_as: (Os, Option<Class>),
    pub bucket: u8,
    /// The country used; `None` when none was given or the server has no
    /// GeoIP database (then no country rule holds).
    pub country: Option<String>,
    pub pick: Pick,
    /// Where the scan is sent after the resolver (`Location`), or why it
    /// gets a 404.
    pub outcome: Result<String, String>,
    /// The next change and its answer, if one is coming.
    pub next: Option<(DateTime<Utc>, Pick)>,
}

fn pick(link: &Link<'_>, rule: Option<usize>) -> Pick {
    let destination = rule
        .and_then(|i| link.rules.url(i))
        .map_or(link.url, |d| d.as_str())
        .to_owned();
    Pick { rule, destination }
}

/// What `link` gives the described scan; `other` is the live destination
/// of any other key at an instant (the snapshot's), `origin` the public
/// origin the resolver follows internal redirects on, `zone` the console's
/// time zone the `at` field is read in, `geoip` whether the server has a
/// GeoIP database.
pub fn answer(
    d: &Described,
    link: &Link<'_>,
    other: &dyn Fn(&str, i64) -> Option<String>,
    origin: &str,
    zone: Tz,
    geoip: bool,
    now: DateTime<Utc>,
) -> Result<Answer, Unclear> {
    let unclear = |field, message: &str| Unclear {
        field,
        message: message.to_owned(),
    };
    let at = match d.at.as_str() {
        "" => now,
        typed => {
            let local = ["%Y-%m-%dT%H:%M", "%Y-%m-%dT%H:%M:%S"]
                .iter()
                .find_map(|f| NaiveDateTime::parse_from_str(typed, f).ok())
                .ok_or_else(|| unclear("at", "Time: give a date and time, such as 2026-12-01T09:00, or leave it empty for now."))?;
            match zone.from_local_datetime(&local) {
                LocalResult::Single(t) | LocalResult::Ambiguous(t, _) => t.to_utc(),
                LocalResult::None => {
                    return Err(unclear(
                        "at",
                        "Time: that time does not exist here (the clocks skip it).",
                    ));
                }
            }
        }
    };
    let country = match d.country.as_str() {
        "" => None,
        c if c.len() == 2 && c.bytes().all(|b| b.is_ascii_alphabetic()) => {
            Some(c.to_ascii_uppercase())
        }
        _ => {
            return Err(unclear(
                "country",
                "Country: give a two-letter code such as IE, or leave it empty.",
            ));
        }
    };
    let ua = d.user_agent().to_owned();
    let bucket = match d.bucket.as_str() {
        "" => split::bucket(link.key, ua.as_bytes()),
        typed => typed
            .parse::<u8>()
            .ok()
            .filter(|b| *b < 100)
            .ok_or_else(|| {
                unclear(
                    "bucket",
                    "Split bucket: give a whole number from 0 to 99, or leave it empty.",
                )
            })?,
    };
    let country = country.filter(|_| geoip);
    let mut facts = Facts {
        ua: ua.as_bytes(),
        lang: d.lang.as_bytes(),
        country: country
            .as_deref()
            .map(|c| [c.as_bytes()[0], c.as_bytes()[1]]),
        bucket,
    };
    let ms = at.timestamp_millis();
    let chosen = pick(link, link.rules.choose(&mut facts, ms));
    let outcome = if !(link.live_at)(ms) {
        match link.fallback {
            Some(f) => Ok(f.to_owned()),
            None => Err("the link is disabled or expired then: 404".to_owned()),
        }
    } else {
        resolve(link.key, &chosen.destination, other, origin, ms)
    };
    let next = link
        .rules
        .next_change(&mut facts, ms)
        .and_then(|(t, rule)| Some((DateTime::<Utc>::from_timestamp_millis(t)?, pick(link, rule))));
    let device = Device::of(ua.as_bytes());
    Ok(Answer {
        at,
        user_agent: ua,
        seen_as: (device.os, device.class),
        bucket,
        country,
        pick: chosen,
        outcome,
        next,
    })
}

/// The line near the top of a link page whose rules read the clock: what a
/// scan gets now and what it gets from the next change. For a scan that
/// says nothing else (no User-Agent, language or country, split bucket
/// 0): the tester below answers for a described one. `None` when the
/// rules read no clock.
pub fn schedule(link: &Link<'_>, now: DateTime<Utc>) -> Option<Schedule> {
    if !link
        .rules
        .reads()
        .contains(crate::link::rules::Reads::CLOCK)
    {
        return None;
    }
    let mut facts = Facts {
        ua: b"",
        lang: b"",
        country: None,
        bucket: 0,
    };
    let ms = now.timestamp_millis();
    let current = pick(link, link.rules.choose(&mut facts, ms));
    let next = link
        .rules
        .next_change(&mut facts, ms)
        .and_then(|(t, rule)| Some((DateTime::<Utc>::from_timestamp_millis(t)?, pick(link, rule))));
    Some((current, next))
}

/// The resolver on `/KEY` with `destination` as the link's value, the other
/// links as they are at `ms` (their own `url`: a link reached by an
/// internal redirect is followed as its value says).
fn resolve(
    key: &str,
    destination: &str,
    other: &dyn Fn(&str, i64) -> Option<String>,
    origin: &str,
    ms: i64,
) -> Result<String, String> {
    // `decide` borrows what the lookup gives: each other key's value is
    // fetched once into this list first, then lent out.
    let mut known: Vec<(String, Option<String>)> = Vec::new();
    for _ in 0..512 {
        let missing = std::cell::RefCell::new(None);
        let decision = policy::decide(origin, &format!("/{key}"), None, |k| {
            if k == key {
                return Some(destination);
            }
            match known.iter().find(|(n, _)| n == k) {
                Some((_, v)) => v.as_deref(),
                None => {
                    missing.borrow_mut().get_or_insert_with(|| k.to_owned());
                    None
                }
            }
        });
        match missing.into_inner() {
            Some(k) => {
                let v = other(&k, ms);
                known.push((k, v));
            }
            None => {
                return match decision {
                    Decision::Redirect { location, .. } => Ok(location),
                    Decision::NotFound => Err("404: the destination leads to no link".into()),
                    Decision::BadRequest(why) => Err(format!("400: {why}")),
                    Decision::Broken(e) => Err(format!("404: {e}")),
                };
            }
        }
    }
    Err("404: too many links on the way".into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::link::rules::Capabilities;
    use serde_json::json;

    fn rules(v: serde_json::Value) -> Rules {
        Rules::from_json(&v, &Capabilities { geoip: true }).expect("rules")
    }

    fn ask(d: &Described, r: &Rules, geoip: bool) -> Answer {
        let live = |_: i64| true;
        let link = Link {
            key: "menu",
            url: "https://example.com/dinner",
            rules: r,
            live_at: &live,
            fallback: None,
        };
        let other = |k: &str, _: i64| (k == "apps").then(|| "https://example.com/apps".to_owned());
        let now = DateTime::parse_from_rfc3339("2026-11-30T12:00:00Z")
            .expect("time")
            .to_utc();
        answer(
            d,
            &link,
            &other,
            "https://0x1f.ie",
            chrono_tz::Europe::Dublin,
            geoip,
            now,
        )
        .expect("answer")
    }

    #[test]
    fn presets_read_as_their_devices() {
        let seen = |name: &str| {
            let d = Described {
                device: name.into(),
                ..Described::default()
            };
            let ua = d.user_agent().to_owned();
            let dev = Device::of(ua.as_bytes());
            (dev.os, dev.class)
        };
        assert_eq!(seen("iphone"), (Os::Ios, Some(Class::Phone)));
        assert_eq!(seen("ipad"), (Os::IpadOs, Some(Class::Tablet)));
        assert_eq!(seen("android-phone"), (Os::Android, Some(Class::Phone)));
        assert_eq!(seen("android-tablet"), (Os::Android, Some(Class::Tablet)));
        assert_eq!(seen("desktop"), (Os::Other, Some(Class::Desktop)));
    }

    #[test]
    fn the_first_rule_that_holds_answers_and_the_next_change_is_said() {
        let r = rules(json!([
            {"url": "https://0x1f.ie/apps", "os": ["ios"]},
            {"url": "https://example.com/lunch", "hours": ["11:00", "15:00"], "tz": "Europe/Dublin"},
            {"url": "https://example.com/fr", "lang": ["fr"]},
            {"url": "https://example.com/ie", "country": ["IE"]}
        ]));
        let iphone = Described {
            device: "iphone".into(),
            ..Described::default()
        };
        let a = ask(&iphone, &r, false);
        assert_eq!(a.pick.rule, Some(0));
        // Followed through the other link, as the server does.
        assert_eq!(a.outcome, Ok("https://example.com/apps".into()));
        assert_eq!(a.next, None, "an iPhone gets rule 1 at any time");

        let desk = Described {
            device: "desktop".into(),
            lang: "fr-CH, en;q=0.5".into(),
            at: "2026-11-30T14:30".into(),
            ..Described::default()
        };
        let a = ask(&desk, &r, false);
        assert_eq!(a.pick.rule, Some(1));
        let (when, then) = a.next.expect("a change at 15:00");
        assert_eq!(when.to_rfc3339(), "2026-11-30T15:00:00+00:00");
        assert_eq!(then.rule, Some(2));

        let irish = Described {
            device: "desktop".into(),
            country: "ie".into(),
            at: "2026-11-30T16:00".into(),
            ..Described::default()
        };
        assert_eq!(
            ask(&irish, &r, false).pick.rule,
            None,
            "no GeoIP: no country rule holds"
        );
        let a = ask(&irish, &r, true);
        assert_eq!(a.pick.rule, Some(3));
        assert_eq!(a.country.as_deref(), Some("IE"));
    }

    #[test]
    fn a_bucket_given_picks_the_split_half() {
        let r = rules(json!([{"url": "https://example.com/a", "split": [0, 50]}]));
        let with = |b: &str| Described {
            device: "desktop".into(),
            bucket: b.into(),
            ..Described::default()
        };
        assert_eq!(ask(&with("49"), &r, false).pick.rule, Some(0));
        assert_eq!(ask(&with("50"), &r, false).pick.rule, None);
        let live = |_: i64| true;
        let link = Link {
            key: "menu",
            url: "https://example.com/",
            rules: &r,
            live_at: &live,
            fallback: None,
        };
        let other = |_: &str, _: i64| None;
        let bad = answer(
            &with("100"),
            &link,
            &other,
            "https://0x1f.ie",
            Tz::UTC,
            false,
            Utc::now(),
        );
        assert_eq!(bad.map_err(|u| u.field), Err("bucket"));
    }
}
