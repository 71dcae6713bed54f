//! Smart tags (issue 34): a link's ordered `rules`, each a destination and
//! conditions on the scan (device, country, language, time, an A/B split).
//! The first rule whose conditions all hold gives the destination; when
//! none does, the link's `url` does. Pure: no I/O, no clock, no lookup; the
//! shell hands in the scan's facts ([`ScanFacts`], asked lazily) and the
//! time.
//!
//! The document shape (`"rules"` in a link document):
//!
//! ```json
//! "rules": [
//!   {"url": "https://apps.apple.com/app/id1", "os": ["ios", "ipados"]},
//!   {"url": "https://example.com/lunch", "days": ["mon","tue","wed","thu","fri"],
//!    "hours": ["11:00", "15:00"], "tz": "Europe/Dublin"},
//!   {"url": "https://example.com/recap", "from": "2026-12-01T08:00:00Z"},
//!   {"url": "https://example.com/b", "split": [50, 100]}
//! ]
//! ```
//!
//! Each rule has `url` (an absolute http(s) URL, checked as a fallback is:
//! [`Destination::parse_absolute`]) and at least one condition:
//! - `os`: `ios`, `ipados`, `android`, `other`; `class`: `phone`, `tablet`,
//!   `desktop` ([`device`]: a byte scan of the User-Agent); `ios` is
//!   iPhones and iPods, iPads are `ipados`, so an App Store rule names both;
//! - `country`: ISO 3166-1 alpha-2 codes in capitals ([`country`]), only
//!   where the server has a GeoIP database ([`Capabilities::geoip`]);
//! - `lang`: language tags, matched against the scanner's most preferred
//!   language ([`language`]);
//! - `from`, `until`: RFC 3339 instants, `from <= now < until`;
//! - `days` (`mon`..`sun`), `hours` (`["HH:MM", "HH:MM"]`, local wall
//!   clock, start after end crosses midnight) and `tz` (an IANA name,
//!   required with either) ([`window`]);
//! - `split`: `[lo, hi]`, whole percentages, `0 <= lo < hi <= 100`: the
//!   scanner's bucket ([`split::bucket`], 0..=99) is in `lo..hi`; a 50/50
//!   test is `[0, 50]` then `[50, 100]`.
//!
//! Unknown fields are refused, as are empty arrays: a rule that would hold
//! for everyone by a typo is worse than an error. At most [`MAX_RULES`]
//! rules a link.
//!
//! Reading: [`Rules::from_json`] for what a person writes (CLI, REST API,
//! console, import, and the CouchDB validation's twin); [`Rules::from_stored`]
//! for a document already stored. The snapshot should read a link's rules
//! with `from_stored` and, on an error, serve the link with its `url` alone
//! (a printed tag keeps working), counting the document among the invalid
//! ones with the error's line, as it does a bad `url`; it never fails the
//! load. Serving: [`Rules::choose`] on every scan of a link with rules,
//! [`Rules::reads`] for `Vary` and whether to look the country up.
//! Telling: [`Rules::next_change`] for `qrtag show`, `qrtag try` and the
//! console.

use serde_json::Value;

use crate::values::destination::Destination;

use super::Document;

mod country;
mod describe;
pub mod device;
mod error;
pub mod language;
mod loops;
mod rule;
pub mod split;
pub mod window;

pub use error::{Problem, RuleError};
pub use loops::RuleLoops;

use rule::{Rule, Seen};

/// The most rules a link may carry: each scan tests them in order.
pub const MAX_RULES: usize = 32;

/// How far past now, and past each `from`/`until`, [`Rules::next_change`]
/// looks for window edges: a little over a week, which holds every edge of
/// every weekly window at least once.
pub const LOOK_AHEAD_MS: i64 = 8 * 86_400_000;

/// What the server can answer, which decides what a rule may ask.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Capabilities {
    /// The server has a GeoIP database (`serve --geoip-db`): without one a
    /// `country` rule would never hold, so it is refused when saved.
    pub geoip: bool,
}

/// A scan as the rules see it; the shell (the redirect handler, `qrtag try`,
/// the console's tester) implements it, lazily: [`Rules::choose`] asks for
/// each fact at most once, and only when a rule whose other conditions hold
/// needs it, so a link whose rules are about time never looks a country up.
pub trait ScanFacts {
    /// The `User-Agent` header's bytes, empty when there is none.
    fn user_agent(&self) -> &[u8];
    /// The `Accept-Language` header's bytes, empty when there is none.
    fn accept_language(&self) -> &[u8];
    /// The client address's country (ISO 3166-1 alpha-2, capitals) from the
    /// GeoIP database; `None` without a database or an answer, and then no
    /// `country` rule holds.
    fn country(&mut self) -> Option<[u8; 2]>;
    /// [`split::bucket`] of the link's key and the scanner: the tracking ID
    /// when the scan has one, else the client address and the User-Agent.
    /// Must be below 100.
    fn split_bucket(&mut self) -> u8;
}

/// What a link's rules read of a scan, as flags.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Reads(u8);

impl Reads {
    pub const NONE: Reads = Reads(0);
    /// `os` or `class`.
    pub const USER_AGENT: Reads = Reads(1);
    /// `lang`.
    pub const ACCEPT_LANGUAGE: Reads = Reads(2);
    /// `country`: the client address, through the GeoIP database.
    pub const COUNTRY: Reads = Reads(4);
    /// `split`: the tracking cookie, or the address and User-Agent.
    pub const SPLIT: Reads = Reads(8);
    /// `from`, `until`, `days`, `hours`: the clock.
    pub const CLOCK: Reads = Reads(16);

    pub fn contains(self, other: Reads) -> bool {
        self.0 & other.0 == other.0
    }

    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// The `Vary` header a rule-dependent answer carries (beside
    /// `Cache-Control: private, no-store`): the request headers the answer
    /// depends on. A split depends on the cookie, or on the User-Agent
    /// when there is none. The address and the clock are no header.
    pub fn vary(self) -> Option<&'static str> {
        self.vary_index().map(|i| VARY_VALUES[i])
    }

    /// [`Reads::vary`] as its place in [`VARY_VALUES`], so the server can
    /// keep each value as a header made once, not checked again per scan.
    pub fn vary_index(self) -> Option<usize> {
        let ua = self.contains(Reads::USER_AGENT) || self.contains(Reads::SPLIT);
        let lang = self.contains(Reads::ACCEPT_LANGUAGE);
        let cookie = self.contains(Reads::SPLIT);
        match (ua, lang, cookie) {
            (false, false, _) => None,
            (true, false, false) => Some(0),
            (false, true, _) => Some(1),
            (true, true, false) => Some(2),
            (true, false, true) => Some(3),
            (true, true, true) => Some(4),
        }
    }
}

/// Every `Vary` value [`Reads::vary`] gives, by [`Reads::vary_index`].
pub const VARY_VALUES: [&str; 5] = [
    "User-Agent",
    "Accept-Language",
    "User-Agent, Accept-Language",
    "User-Agent, Cookie",
    "User-Agent, Accept-Language, Cookie",
];

impl std::ops::BitOr for Reads {
    type Output = Reads;
    fn bitor(self, rhs: Reads) -> Reads {
        Reads(self.0 | rhs.0)
    }
}

/// A link's rules, parsed and valid (parse, don't validate): each compiled
/// into what a scan tests without allocating.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Rules {
    rules: Box<[Rule]>,
    reads: Reads,
    /// Whether the link's `url` is its own answer to `/KEY` (see
    /// [`Rules::with_url_direct`]); `false` until the snapshot says so.
    url_direct: bool,
}

impl Rules {
    /// The value of a document's `rules` as a person wrote it. An empty
    /// array is no rules.
    pub fn from_json(value: &Value, caps: &Capabilities) -> Result<Rules, RuleError> {
        let Value::Array(items) = value else {
            return Err(RuleError::at(None, None, None, Problem::NotArray));
        };
        if items.len() > MAX_RULES {
            return Err(RuleError::at(
                None,
                None,
                None,
                Problem::TooMany(items.len()),
            ));
        }
        let rules = items
            .iter()
            .enumerate()
            .map(|(i, v)| Rule::parse(i, v, caps))
            .collect::<Result<Box<[Rule]>, _>>()?;
        let reads = rules.iter().fold(Reads::NONE, |r, rule| r | rule.reads);
        Ok(Rules {
            rules,
            reads,
            url_direct: false,
        })
    }

    /// A document's `rules` (none when absent or `null`).
    pub fn from_document(doc: &Document, caps: &Capabilities) -> Result<Rules, RuleError> {
        match doc.get("rules") {
            None | Some(Value::Null) => Ok(Rules::default()),
            Some(v) => Rules::from_json(v, caps),
        }
    }

    /// A stored document's `rules`, as the snapshot reads them: a `country`
    /// rule is kept whatever this server has (one saved where a GeoIP
    /// database was given holds for no scan here, since
    /// [`ScanFacts::country`] answers `None`); everything else as
    /// [`Rules::from_json`]. On an error, serve the `url` alone (see the
    /// module's notes).
    pub fn from_stored(doc: &Document) -> Result<Rules, RuleError> {
        Rules::from_document(doc, &Capabilities { geoip: true })
    }

    /// The rules as a document stores them, each object as it was written.
    pub fn to_json(&self) -> Value {
        Value::Array(
            self.rules
                .iter()
                .map(|r| Value::Object(r.source.clone()))
                .collect(),
        )
    }

    /// Sets a document's `rules` (removes the field for no rules), keeping
    /// every other field.
    pub fn write_to(&self, doc: &mut Document) {
        if self.is_empty() {
            doc.remove("rules");
        } else {
            doc.insert("rules".into(), self.to_json());
        }
    }

    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    pub fn len(&self) -> usize {
        self.rules.len()
    }

    /// The destination rule `index` gives.
    pub fn url(&self, index: usize) -> Option<&Destination> {
        self.rules.get(index).map(|r| &r.url)
    }

    /// Whether rule `index`'s destination is plain
    /// ([`crate::values::destination::is_plain_absolute`]), as judged when
    /// the rules were compiled: the redirect path answers such a choice
    /// without judging it per scan. `false` for no such rule.
    pub fn is_plain(&self, index: usize) -> bool {
        self.rules.get(index).is_some_and(|r| r.plain)
    }

    /// The rules of a link whose `url` is, or is not, its own answer to a
    /// `/KEY` scan that no rule holds for (its direct location is the URL
    /// itself), as the snapshot worked it out when the link was loaded: a
    /// scan falling through to `url` is then answered without judging the
    /// URL again ([`Rules::url_is_direct`]).
    pub fn with_url_direct(mut self, url_direct: bool) -> Rules {
        self.url_direct = url_direct;
        self
    }

    /// See [`Rules::with_url_direct`]; `false` when not known.
    pub fn url_is_direct(&self) -> bool {
        self.url_direct
    }

    /// Rule `index`'s conditions in one line (`os: ios, ipados; hours:
    /// 11:00–15:00; tz: Europe/Dublin`), the same on every surface.
    pub fn conditions(&self, index: usize) -> Option<String> {
        self.rules
            .get(index)
            .map(|r| describe::conditions(&r.source))
    }

    /// What the rules read of a scan, all rules together.
    pub fn reads(&self) -> Reads {
        self.reads
    }

    /// The first rule whose conditions all hold for this scan at `now_ms`
    /// (milliseconds since the Unix epoch), or `None`: the link's `url`.
    /// Allocates nothing; each fact is asked of `scan` at most once.
    pub fn choose(&self, scan: &mut impl ScanFacts, now_ms: i64) -> Option<usize> {
        if self.rules.is_empty() {
            return None;
        }
        let mut seen = Seen::new(scan);
        self.choose_seen(&mut seen, now_ms)
    }

    fn choose_seen<F: ScanFacts>(&self, seen: &mut Seen<'_, F>, now: i64) -> Option<usize> {
        self.rules.iter().position(|r| r.holds(seen, now))
    }

    /// What changes next for this scan: the first instant after `now_ms`
    /// at which [`Rules::choose`] gives another answer, and that answer;
    /// `None` when nothing will change (no time conditions, or none that
    /// still matter). The instants tried are every `from` and `until` after
    /// now, and every edge of every weekly window within [`LOOK_AHEAD_MS`]
    /// after now and after each of those (daylight-saving changes included:
    /// a start in the spring gap is the jump, one in the autumn fold is
    /// both instants). Between two `from`/`until` instants the answer is a
    /// function of the local time of week, so a change that is not seen
    /// within a week of one is not coming: the answer is exact, not a
    /// guess. The facts are asked once, as by `choose`.
    pub fn next_change(
        &self,
        scan: &mut impl ScanFacts,
        now_ms: i64,
    ) -> Option<(i64, Option<usize>)> {
        if !self.reads.contains(Reads::CLOCK) {
            return None;
        }
        let mut seen = Seen::new(scan);
        let current = self.choose_seen(&mut seen, now_ms);
        let mut anchors = vec![now_ms];
        for r in self.rules.iter() {
            anchors.extend(
                [r.span.from, r.span.until]
                    .into_iter()
                    .flatten()
                    .filter(|&t| t > now_ms),
            );
        }
        let mut instants = anchors.clone();
        for r in self.rules.iter() {
            if let Some(w) = &r.weekly {
                for &a in &anchors {
                    w.edges(a, a.saturating_add(LOOK_AHEAD_MS), &mut instants);
                }
            }
        }
        instants.retain(|&t| t > now_ms);
        instants.sort_unstable();
        instants.dedup();
        instants.into_iter().find_map(|t| {
            let then = self.choose_seen(&mut seen, t);
            (then != current).then_some((t, then))
        })
    }
}

#[cfg(test)]
mod tests;
