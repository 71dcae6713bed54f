//! `qrtag try KEY --ua … --lang … --country … --at …` (issue 34): which
//! destination a described scan would get, through the same resolver the
//! server runs (`policy::decide`: path appending, query precedence,
//! internal redirects, the hop limit), each link met answering with its
//! rules for this scan; and what changes next for it, and when
//! (`Rules::next_change`). `qrtag show` words a link's "now" and "next"
//! with the same functions.

use std::cell::RefCell;
use std::collections::HashMap;
use std::io::Write;
use std::net::{IpAddr, Ipv4Addr};
use std::process::ExitCode;

use chrono::{DateTime, Utc};
use chrono_tz::Tz;
use clap::Args;

use super::Cli;
use super::rule_flags;
use crate::link::rules::{Reads, Rules, ScanFacts, split};
use crate::link::{self, Link};
use crate::redirect::policy::{self, Decision};
use crate::store::{self, LinkStore};
use crate::tracking::id::TrackingId;
use crate::values::link_key::LinkKey;
use crate::values::usage::UsageError;

/// Reads allowed before giving up, as the chain check allows.
const MAX_READS: usize = 2_000;

#[derive(Debug, Args)]
pub struct TryArgs {
    /// The link's key, or a path below it with a query as a scan would
    /// ask for it (docs/api/v1?x=1).
    #[arg(value_name = "KEY")]
    pub path: String,
    /// The scanner's User-Agent: iphone, ipad, android, android-tablet,
    /// desktop, or the header's text.
    #[arg(long, value_name = "UA")]
    pub ua: Option<String>,
    /// The scanner's Accept-Language header, e.g. `de, en;q=0.8`.
    #[arg(long, value_name = "ACCEPT-LANGUAGE")]
    pub lang: Option<String>,
    /// The country the scanner's address is in (IE, GB).
    #[arg(long, value_name = "CC", conflicts_with = "ip")]
    pub country: Option<String>,
    /// The scanner's address: its country looked up with --geoip-db, and
    /// with the User-Agent who a scan without a cookie is for a split.
    #[arg(long, value_name = "ADDR")]
    pub ip: Option<IpAddr>,
    /// When: RFC 3339, or a date or `YYYY-MM-DD HH:MM` in --tz. Default: now.
    #[arg(long, value_name = "TIME")]
    pub at: Option<String>,
    /// The scanner's tracking ID (the cookie's value, 19 characters): who
    /// they are for a split. Without it, the address and User-Agent are.
    #[arg(long, value_name = "ID", value_parser = |s: &str| TrackingId::parse(s).map_err(|e| e.to_string()))]
    pub cookie: Option<TrackingId>,
    /// The GeoIP database the server has (MaxMind format), for --ip.
    #[arg(
        long,
        value_name = "FILE",
        env = "QRTAG_GEOIP_DB",
        value_hint = clap::ValueHint::FilePath,
        value_parser = super::parse_geoip_db
    )]
    pub geoip_db: Option<super::GeoIpDb>,
}

/// User-Agents for `--ua NAME`: common current browsers of each kind.
const PRESETS: [(&str, &str); 5] = [
    (
        "iphone",
        "Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.0 Mobile/15E148 Safari/604.1",
    ),
    (
        "ipad",
        "Mozilla/5.0 (iPad; CPU OS 17_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.0 Mobile/15E148 Safari/604.1",
    ),
    (
        "android",
        "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Mobile Safari/537.36",
    ),
    (
        "android-tablet",
        "Mozilla/5.0 (Linux; Android 14; SM-X710) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36",
    ),
    (
        "desktop",
        "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36",
    ),
];

/// A described scan, as the rules ask for it; the split's bucket is the
/// link's ([`Scan::for_link`]).
#[derive(Debug, Clone, Default)]
pub struct Scan {
    user_agent: Vec<u8>,
    accept_language: Vec<u8>,
    country: Option<[u8; 2]>,
    /// Who the scanner is for a split: the tracking ID, else the address
    /// and the User-Agent.
    who: Vec<u8>,
    /// The link whose rules are asked.
    key: String,
}

impl Scan {
    /// A scan with no particular facts, as `qrtag show` tells "now": no
    /// User-Agent, language, country or cookie, so for a split the
    /// unspecified address and an empty User-Agent, as `try` without flags.
    pub fn without_facts() -> Scan {
        Scan {
            who: split::scanner_without_cookie(IpAddr::V4(Ipv4Addr::UNSPECIFIED), b""),
            ..Scan::default()
        }
    }

    pub fn for_link(&mut self, key: &str) -> &mut Self {
        key.clone_into(&mut self.key);
        self
    }
}

impl ScanFacts for Scan {
    fn user_agent(&self) -> &[u8] {
        &self.user_agent
    }
    fn accept_language(&self) -> &[u8] {
        &self.accept_language
    }
    fn country(&mut self) -> Option<[u8; 2]> {
        self.country
    }
    fn split_bucket(&mut self) -> u8 {
        split::bucket(&self.key, &self.who)
    }
}

/// What one link met on the way gives this scan.
#[derive(Debug, Clone)]
struct Answer {
    destination: String,
    /// The rule that gave it (from 0), `None` for the link's `url`.
    rule: Option<usize>,
    rules: Rules,
    doc: link::Document,
}

pub async fn run(cli: &Cli, args: &TryArgs) -> anyhow::Result<ExitCode> {
    let tz = cli.time_zone;
    let now = Utc::now();
    let at = match &args.at {
        Some(s) => rule_flags::at(s, tz, now).map_err(|e| UsageError(e.to_string()))?,
        None => now,
    };
    let (mut scan, said) = scan_of(args)?;
    let (path, query) = match args.path.split_once('?') {
        Some((p, q)) => (p, Some(q)),
        None => (args.path.as_str(), None),
    };
    let path = format!("/{}", path.trim_start_matches('/'));
    let store = cli.open_store(store::Access::Read)?;
    let store = store.as_ref();
    let origin = super::public_url::for_checks(cli, store).await;
    let origin = origin.as_ref().map_or("", |u| u.origin());
    let (decision, met) = resolve(store, origin, &path, query, &mut scan, at).await?;
    let mut out = std::io::stdout().lock();
    match decision {
        Decision::Redirect { location, key } => {
            writeln!(out, "{location}")?;
            let Some(first) = met.get(&key) else {
                return Ok(ExitCode::SUCCESS);
            };
            writeln!(out, "{}", by(&key, first))?;
            if first.rules.reads().contains(Reads::SPLIT) {
                writeln!(
                    out,
                    "split bucket: {} of 0-99 ({said})",
                    scan.for_link(&key).split_bucket()
                )?;
            }
            let next = first.rules.next_change(scan.for_link(&key), millis(at));
            writeln!(out, "{}", next_line(next, &first.rules, &first.doc, tz))?;
        }
        Decision::NotFound | Decision::BadRequest(_) | Decision::Broken(_) => {
            let why = match &decision {
                Decision::BadRequest(why) => (*why).to_owned(),
                Decision::Broken(e) => e.to_string(),
                _ => dead_reason(store, path.trim_start_matches('/'), at).await?,
            };
            writeln!(out, "404: {why}")?;
            return Ok(ExitCode::FAILURE);
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The scan the flags describe, and in words who it is for a split.
fn scan_of(args: &TryArgs) -> anyhow::Result<(Scan, String)> {
    let user_agent = match &args.ua {
        Some(ua) => PRESETS
            .iter()
            .find(|(name, _)| name.eq_ignore_ascii_case(ua))
            .map_or(ua.as_str(), |(_, text)| text)
            .as_bytes()
            .to_vec(),
        None => Vec::new(),
    };
    let country = match (&args.country, &args.ip, &args.geoip_db) {
        (Some(cc), _, _) => Some(country_code(cc)?),
        (None, Some(ip), Some(db)) => {
            let place = db.db.place(*ip);
            country_code(&place.country).ok()
        }
        (None, Some(_), None) => {
            eprintln!(
                "qrtag: note: without --geoip-db (geoip_db in the configuration, QRTAG_GEOIP_DB) \
                 the country of --ip is unknown: no country rule holds"
            );
            None
        }
        (None, None, _) => None,
    };
    let (who, said) = match (&args.cookie, &args.ip) {
        (Some(id), _) => (id.as_str().as_bytes().to_vec(), "from --cookie".to_owned()),
        (None, ip) => {
            let address = ip.unwrap_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED));
            (
                split::scanner_without_cookie(address, &user_agent),
                format!("no --cookie: from the address {address} and the User-Agent"),
            )
        }
    };
    let scan = Scan {
        user_agent,
        accept_language: args.lang.clone().unwrap_or_default().into_bytes(),
        country,
        who,
        key: String::new(),
    };
    Ok((scan, said))
}

fn country_code(cc: &str) -> anyhow::Result<[u8; 2]> {
    match cc.as_bytes() {
        [a, b] if a.is_ascii_alphabetic() && b.is_ascii_alphabetic() => {
            Ok([a.to_ascii_uppercase(), b.to_ascii_uppercase()])
        }
        _ => Err(UsageError(format!(
            "--country {cc}: give an ISO 3166-1 alpha-2 code (IE, GB)"
        ))
        .into()),
    }
}

/// Runs the server's resolver on `path`, reading from the store each key
/// it asks for (a handful of reads, as the chain check does), every live
/// link answering with its rules for `scan` at `at`.
async fn resolve(
    store: &dyn LinkStore,
    origin: &str,
    path: &str,
    query: Option<&str>,
    scan: &mut Scan,
    at: DateTime<Utc>,
) -> anyhow::Result<(Decision, HashMap<String, Answer>)> {
    let mut known: HashMap<String, Option<Answer>> = HashMap::new();
    for _ in 0..MAX_READS {
        let missing = RefCell::new(None);
        let decision = policy::decide(origin, path, query, |k| match known.get(k) {
            Some(answer) => answer.as_ref().map(|a| a.destination.as_str()),
            None => {
                missing.borrow_mut().get_or_insert_with(|| k.to_owned());
                None
            }
        });
        let Some(wanted) = missing.into_inner() else {
            let met = known
                .into_iter()
                .filter_map(|(k, a)| Some((k, a?)))
                .collect();
            return Ok((decision, met));
        };
        let answer = match LinkKey::parse(&wanted) {
            Ok(k) => match store.get(&k).await? {
                Some(stored) => answer(stored.doc, &wanted, scan, at),
                None => None,
            },
            Err(_) => None,
        };
        known.insert(wanted, answer);
    }
    anyhow::bail!("gave up after {MAX_READS} reads of links")
}

/// What a live link gives the scan: its first rule that holds, else its
/// `url`. Rules that do not parse are passed over, as the server serves
/// such a link with its `url` alone.
fn answer(doc: link::Document, key: &str, scan: &mut Scan, at: DateTime<Utc>) -> Option<Answer> {
    let link = Link::from_document(&doc).ok()?;
    if !link.is_live_at(at) || link::is_tombstone(&doc) {
        return None;
    }
    let rules = Rules::from_stored(&doc).unwrap_or_default();
    let rule = rules.choose(scan.for_link(key), millis(at));
    let destination = rule
        .and_then(|i| rules.url(i))
        .unwrap_or(&link.url)
        .to_string();
    Some(Answer {
        destination,
        rule,
        rules,
        doc,
    })
}

/// Why a scan of a key met no live link; a key that is no link at all is
/// a "no link" failure, said with the keys the person may have meant.
async fn dead_reason(
    store: &dyn LinkStore,
    key: &str,
    at: DateTime<Utc>,
) -> Result<String, crate::links::LinkError> {
    let Ok(k) = LinkKey::parse(key) else {
        return Ok(format!("no link answers /{key}"));
    };
    let Some(stored) = store.get(&k).await? else {
        return Err(crate::links::LinkError::NotFound(k));
    };
    let doc = &stored.doc;
    let state = if link::is_tombstone(doc) {
        "deleted"
    } else {
        match Link::from_document(doc) {
            Ok(l) if l.inactive => "inactive",
            Ok(l) if !l.is_live_at(at) => "expired",
            Ok(_) => return Ok(format!("no link answers /{key}")),
            Err(_) => "invalid",
        }
    };
    Ok(match link::fallback_url(doc) {
        Ok(Some(f)) if state != "deleted" => {
            format!("{key} is {state}: its scans go to its fallback {f}")
        }
        _ => format!("{key} is {state}"),
    })
}

fn millis(t: DateTime<Utc>) -> i64 {
    t.timestamp_millis()
}

/// `by rule 2 of menu: CONDITIONS`, or `by menu's url (no rule holds)`.
fn by(key: &str, answer: &Answer) -> String {
    match answer.rule {
        Some(i) => format!(
            "by rule {} of {key}: {}",
            i + 1,
            answer.rules.conditions(i).unwrap_or_default()
        ),
        None if answer.rules.is_empty() => format!("by {key}'s url (it has no rules)"),
        None => format!("by {key}'s url (no rule holds)"),
    }
}

/// A time as `2026-12-01 09:00 Europe/Dublin`: the zone's name, not its
/// abbreviation, so that it reads as the rules write it.
pub fn when(t: DateTime<Utc>, tz: Tz) -> String {
    format!(
        "{} {}",
        t.with_timezone(&tz).format("%Y-%m-%d %H:%M"),
        tz.name()
    )
}

/// `next: from 2026-12-01 09:00 Europe/Dublin: URL (rule 2)`, or that
/// nothing is due.
pub fn next_line(
    next: Option<(i64, Option<usize>)>,
    rules: &Rules,
    doc: &link::Document,
    tz: Tz,
) -> String {
    let Some((t, rule)) = next else {
        return "next: no change due".to_owned();
    };
    let Some(t) = DateTime::from_timestamp_millis(t) else {
        return "next: no change due".to_owned();
    };
    let url = doc.get("url").and_then(|u| u.as_str()).unwrap_or("-");
    let (dest, which) = match rule.and_then(|i| Some((rules.url(i)?.to_string(), i))) {
        Some((d, i)) => (d, format!("rule {}", i + 1)),
        None => (url.to_owned(), "the url".to_owned()),
    };
    format!("next: from {}: {dest} ({which})", when(t, tz))
}
