//! The planner (pure): what one source link becomes in qrtag, decided
//! before anything is written, so the dry run and the real run say the same.
//!
//! A source's code is the key as it is (case, length and `/` kept), because
//! the printed tags ask for exactly that path; a code no key can hold is
//! refused with the reason and a close valid key the person may choose,
//! never changed in passing. Tags have no field of their own in qrtag: they
//! go into the notes, on a last line `tags: a, b`, where the console's
//! search finds them.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use serde_json::Value;

use super::source::{LeftOut, SourceLink};
use crate::link::{Document, Link, MAX_NOTES, MAX_TITLE, Notes, Title, set_title};
use crate::values::destination::Destination;
use crate::values::host::Host;
use crate::values::link_key::{LinkKey, MAX_KEY_LEN, MAX_SEGMENT};
use crate::values::timestamp::time_text;

pub use crate::link::imported::IMPORTED_CLICKS;

/// A source domain mapped to a qrtag domain (`--domain-map OLD=NEW`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DomainMapping {
    pub from: String,
    pub to: Host,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("--domain-map takes OLD=NEW (old.example=go.brand.ie), not {0:?}")]
pub struct BadMapping(pub String);

impl std::str::FromStr for DomainMapping {
    type Err = BadMapping;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = || BadMapping(s.to_owned());
        let (from, to) = s.split_once('=').ok_or_else(bad)?;
        let from = source_domain(from);
        if from.is_empty() {
            return Err(bad());
        }
        let to = Host::parse(to.trim()).map_err(|_| bad())?;
        Ok(Self { from, to })
    }
}

/// A source's domain as compared: lower case, no trailing dot, no scheme.
fn source_domain(s: &str) -> String {
    let s = s.trim();
    let s = s
        .strip_prefix("https://")
        .or_else(|| s.strip_prefix("http://"))
        .unwrap_or(s);
    s.trim_end_matches('/')
        .trim_end_matches('.')
        .to_ascii_lowercase()
}

/// Where the planned links go: the domains this qrtag serves and the
/// mappings given.
#[derive(Debug, Clone, Default)]
pub struct Targets {
    /// The default domain's host (`None` without `[[domains]]`).
    pub default_host: Option<Host>,
    /// The other configured domains.
    pub others: Vec<Host>,
    pub map: Vec<DomainMapping>,
    /// Where a link that names no domain (the source's only or default
    /// one) goes: the default domain, or the one `--domain` names, since
    /// a person importing "into" a domain means that domain's store.
    pub unnamed: Target,
}

/// Which qrtag domain a link goes to.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Target {
    #[default]
    Default,
    Other(Host),
}

impl Targets {
    /// A source link's domain: `None` (the source's only or default
    /// domain) goes to [`Targets::unnamed`]; a named one by its mapping,
    /// or to the configured domain of the same name.
    pub fn target(&self, domain: Option<&str>) -> Result<Target, String> {
        let Some(domain) = domain.map(source_domain).filter(|d| !d.is_empty()) else {
            return Ok(self.unnamed.clone());
        };
        // No [[domains]]: the one store is where every source domain's
        // links go (Dub and Bitly name a domain on every link), and the
        // same code on two of them is refused as a second one.
        if self.default_host.is_none() && self.others.is_empty() {
            return Ok(Target::Default);
        }
        let host = match self.map.iter().find(|m| m.from == domain) {
            Some(m) => m.to.clone(),
            None => match Host::parse(&domain) {
                Ok(h) if self.is_served(&h) => h,
                _ => {
                    return Err(format!(
                        "its domain {domain} is not a domain of this qrtag (map it with --domain-map {domain}=HOST)"
                    ));
                }
            },
        };
        if self.default_host.as_ref() == Some(&host) {
            return Ok(Target::Default);
        }
        if self.others.contains(&host) {
            return Ok(Target::Other(host));
        }
        Err(format!(
            "--domain-map sends {domain} to {host}, which the configuration's [[domains]] do not list"
        ))
    }

    fn is_served(&self, h: &Host) -> bool {
        self.default_host.as_ref() == Some(h) || self.others.contains(h)
    }
}

/// One source link, planned.
#[derive(Debug, Clone, PartialEq)]
pub enum Planned {
    Link(PlannedLink),
    Refused(Refusal),
}

/// A link that can come over: its key, its document (not yet stamped with
/// the import's times), and what was left out or noted on the way.
#[derive(Debug, Clone, PartialEq)]
pub struct PlannedLink {
    pub target: Target,
    pub key: LinkKey,
    pub doc: Document,
    pub left_out: Vec<LeftOut>,
    /// Past its expiry already: it comes over, and answers as the source
    /// did (qrtag's 404 for an expired link).
    pub expired: bool,
}

/// A source link that cannot come over, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub code: String,
    pub domain: Option<String>,
    pub why: String,
    /// A valid key close to the code, for a person to choose (`None` when
    /// the key was not the problem).
    pub suggestion: Option<String>,
}

/// Plans one source link at `now`.
pub fn plan(link: SourceLink, targets: &Targets, now: DateTime<Utc>) -> Planned {
    let refuse = |why: String, suggestion: Option<String>| {
        Planned::Refused(Refusal {
            code: link.code.clone(),
            domain: link.domain.clone(),
            why,
            suggestion,
        })
    };
    let key = match LinkKey::parse(&link.code) {
        Ok(key) => key,
        Err(_) => {
            return refuse(key_problem(&link.code), Some(close_key(&link.code)));
        }
    };
    let target = match targets.target(link.domain.as_deref()) {
        Ok(t) => t,
        Err(why) => return refuse(why, None),
    };
    let url = match Destination::parse(link.url.trim()) {
        Ok(url) => url,
        Err(why) => {
            return refuse(
                format!("its destination is not one qrtag serves: {why}"),
                None,
            );
        }
    };
    let mut left_out = link.left_out.clone();
    let mut doc = Link::new_document(&url, link.inactive);
    if let Some(t) = link
        .title
        .as_deref()
        .map(str::trim)
        .filter(|t| !t.is_empty())
    {
        let one_line = t.split_whitespace().collect::<Vec<_>>().join(" ");
        let kept: String = one_line.chars().take(MAX_TITLE).collect();
        if kept.chars().count() < one_line.chars().count() {
            left_out.push(LeftOut {
                what: "title".into(),
                why: format!("cut to {MAX_TITLE} characters"),
            });
        }
        if let Ok(title) = Title::parse(&kept) {
            set_title(&mut doc, &title);
        }
    }
    let mut notes = link.notes.as_deref().unwrap_or_default().trim().to_owned();
    if !link.tags.is_empty() {
        if !notes.is_empty() {
            notes.push('\n');
        }
        notes.push_str("tags: ");
        notes.push_str(&link.tags.join(", "));
    }
    if notes.chars().count() > MAX_NOTES {
        notes = notes.chars().take(MAX_NOTES).collect();
        left_out.push(LeftOut {
            what: "notes".into(),
            why: format!("cut to {MAX_NOTES} characters"),
        });
    }
    if let Ok(notes) = Notes::parse(&notes) {
        crate::link::set_notes(&mut doc, &notes);
    }
    if let Some(created) = link.created {
        doc.insert("created_at".into(), Value::String(time_text(created)));
    }
    let expired = link.expires.is_some_and(|e| e <= now);
    crate::link::set_expires(&mut doc, link.expires);
    if let Some(clicks) = link.total_clicks {
        doc.insert(IMPORTED_CLICKS.into(), Value::from(clicks));
    }
    Planned::Link(PlannedLink {
        target,
        key,
        doc,
        left_out,
        expired,
    })
}

/// Why a code is no key, in words about that code.
fn key_problem(code: &str) -> String {
    if code.is_empty() {
        return "its code is empty".into();
    }
    if code.starts_with('_') {
        return "a key may not start with '_' (CouchDB keeps such IDs for itself)".into();
    }
    if code.len() > MAX_KEY_LEN {
        return format!("a key is at most {MAX_KEY_LEN} characters");
    }
    if let Some(c) = code
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '/')))
    {
        return format!("a key holds only A-Z a-z 0-9 _ - and /, not {c:?}");
    }
    if code.split('/').any(str::is_empty) {
        return "a key's parts between '/' may not be empty".into();
    }
    format!("a key's parts between '/' are at most {MAX_SEGMENT} characters")
}

/// A valid key close to `code`: each character a key may not hold becomes
/// `-`, empty parts and a leading `_` dropped, parts and the whole cut to
/// their bounds; `link` when nothing is left.
pub fn close_key(code: &str) -> String {
    let mapped: String = code
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '/') {
                c
            } else {
                '-'
            }
        })
        .collect();
    let parts: Vec<String> = mapped
        .split('/')
        .filter(|p| !p.is_empty())
        .map(|p| p.chars().take(MAX_SEGMENT).collect())
        .collect();
    let mut key = parts.join("/");
    key = key.trim_start_matches('_').to_owned();
    key.truncate(MAX_KEY_LEN);
    let key = key.trim_end_matches('/').to_owned();
    if LinkKey::is_valid(&key) {
        key
    } else {
        "link".into()
    }
}

/// The fields an import owns, compared to tell a re-run (the link is there
/// and equal) from a collision.
const COMPARED: [&str; 7] = [
    "url",
    "inactive",
    "expires",
    "title",
    "notes",
    "created_at",
    IMPORTED_CLICKS,
];

/// Whether the stored document is what this plan would write.
pub fn same_link(planned: &Document, stored: &Document) -> bool {
    COMPARED.iter().all(|f| {
        let (a, b) = (planned.get(*f), stored.get(*f));
        match (a, b) {
            // Stamped at the first import when the source kept no time.
            (None, _) if *f == "created_at" => true,
            (Some(Value::Bool(false)), None) | (None, Some(Value::Bool(false))) => true,
            _ => a == b,
        }
    })
}

/// The same code and domain twice in one source: the second is refused.
#[derive(Debug, Default)]
pub struct Seen(HashMap<(Target, LinkKey), ()>);

impl Seen {
    /// `true` the first time a target's key is seen.
    pub fn first(&mut self, target: &Target, key: &LinkKey) -> bool {
        self.0.insert((target.clone(), key.clone()), ()).is_none()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn now() -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 11, 28, 12, 0, 0)
            .single()
            .expect("time")
    }

    fn link(code: &str, url: &str) -> SourceLink {
        SourceLink {
            code: code.into(),
            url: url.into(),
            ..SourceLink::default()
        }
    }

    fn planned(p: Planned) -> PlannedLink {
        match p {
            Planned::Link(l) => l,
            Planned::Refused(r) => panic!("refused: {r:?}"),
        }
    }

    fn refused(p: Planned) -> Refusal {
        match p {
            Planned::Refused(r) => r,
            Planned::Link(l) => panic!("planned: {l:?}"),
        }
    }

    #[test]
    fn codes_are_kept_exactly() {
        for code in ["ABCDEFG", "abc-DEF_123", "Go7Home", "docs/api/v1", "x"] {
            let p = planned(plan(
                link(code, "https://e.example/"),
                &Targets::default(),
                now(),
            ));
            assert_eq!(p.key.as_str(), code);
        }
    }

    #[test]
    fn a_code_no_key_holds_is_refused_with_a_close_key() {
        let r = refused(plan(
            link("a.b+c", "https://e.example/"),
            &Targets::default(),
            now(),
        ));
        assert!(r.why.contains("'.'"), "{}", r.why);
        assert_eq!(r.suggestion.as_deref(), Some("a-b-c"));
        let r = refused(plan(
            link("_x", "https://e.example/"),
            &Targets::default(),
            now(),
        ));
        assert_eq!(r.suggestion.as_deref(), Some("x"));
        assert_eq!(close_key("ü"), "-");
        assert_eq!(close_key("//"), "link");
        assert!(LinkKey::is_valid(&close_key(&"a".repeat(300))));
    }

    #[test]
    fn the_fields_come_over_and_tags_go_into_the_notes() {
        let created = Utc
            .with_ymd_and_hms(2019, 3, 4, 5, 6, 7)
            .single()
            .expect("t");
        let l = SourceLink {
            title: Some("  A\ntitle ".into()),
            notes: Some("hung at the door".into()),
            tags: vec!["door".into(), "print run 2".into()],
            created: Some(created),
            total_clicks: Some(42),
            ..link("k", "https://e.example/a#frag")
        };
        let p = planned(plan(l, &Targets::default(), now()));
        assert_eq!(p.doc["url"], "https://e.example/a#frag");
        assert_eq!(p.doc["title"], "A title");
        assert_eq!(p.doc["notes"], "hung at the door\ntags: door, print run 2");
        assert_eq!(p.doc["created_at"], "2019-03-04T05:06:07Z");
        assert_eq!(p.doc[IMPORTED_CLICKS], 42);
        assert_eq!(p.doc["inactive"], false);
    }

    #[test]
    fn a_past_expiry_comes_over_expired_and_a_long_title_is_cut_and_said() {
        let past = Utc
            .with_ymd_and_hms(2020, 1, 1, 0, 0, 0)
            .single()
            .expect("t");
        let l = SourceLink {
            expires: Some(past),
            title: Some("t".repeat(MAX_TITLE + 5)),
            ..link("old", "https://e.example/")
        };
        let p = planned(plan(l, &Targets::default(), now()));
        assert!(p.expired);
        assert_eq!(p.doc["expires"], "2020-01-01T00:00:00Z");
        assert_eq!(p.left_out[0].what, "title");
    }

    #[test]
    fn a_bad_destination_is_refused_without_a_key_suggestion() {
        let r = refused(plan(
            link("k", "javascript:alert(1)"),
            &Targets::default(),
            now(),
        ));
        assert!(r.why.contains("destination"), "{}", r.why);
        assert_eq!(r.suggestion, None);
    }

    #[test]
    fn domains_map_to_configured_domains() {
        let brand = Host::parse("go.brand.ie").expect("host");
        let targets = Targets {
            default_host: Some(Host::parse("q.example").expect("host")),
            others: vec![brand.clone()],
            map: vec!["https://Old.Example/=go.brand.ie".parse().expect("map")],
            unnamed: Target::Default,
        };
        let mut l = link("k", "https://e.example/");
        l.domain = Some("old.example".into());
        assert_eq!(
            planned(plan(l.clone(), &targets, now())).target,
            Target::Other(brand.clone())
        );
        l.domain = Some("q.example".into());
        assert_eq!(
            planned(plan(l.clone(), &targets, now())).target,
            Target::Default
        );
        l.domain = None;
        assert_eq!(
            planned(plan(l.clone(), &targets, now())).target,
            Target::Default
        );
        // `--domain go.brand.ie`: the unnamed links go there, a link
        // naming the default domain still to it.
        let into_brand = Targets {
            unnamed: Target::Other(brand.clone()),
            ..targets.clone()
        };
        assert_eq!(
            planned(plan(l.clone(), &into_brand, now())).target,
            Target::Other(brand.clone())
        );
        l.domain = Some("q.example".into());
        assert_eq!(
            planned(plan(l.clone(), &into_brand, now())).target,
            Target::Default
        );
        l.domain = Some("elsewhere.example".into());
        let r = refused(plan(l, &targets, now()));
        assert!(
            r.why.contains("--domain-map elsewhere.example=HOST"),
            "{}",
            r.why
        );
        assert!("nothing".parse::<DomainMapping>().is_err());
    }

    #[test]
    fn without_domains_every_source_domain_goes_to_the_one_store() {
        let targets = Targets {
            default_host: None,
            others: Vec::new(),
            map: Vec::new(),
            unnamed: Target::Default,
        };
        let mut l = link("k", "https://e.example/");
        l.domain = Some("dub.sh".into());
        assert_eq!(planned(plan(l, &targets, now())).target, Target::Default);
    }

    #[test]
    fn a_rerun_is_told_apart_from_a_collision() {
        let p = planned(plan(
            link("k", "https://e.example/"),
            &Targets::default(),
            now(),
        ));
        let mut stored = p.doc.clone();
        stored.insert(
            "changed_at".into(),
            Value::String("2026-01-01T00:00:00Z".into()),
        );
        assert!(same_link(&p.doc, &stored));
        stored.insert("url".into(), Value::String("https://other.example/".into()));
        assert!(!same_link(&p.doc, &stored));
    }
}
