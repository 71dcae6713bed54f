//! The link page's "add a rule" form (issue 34), pure: its fields as typed
//! into the rule object [`Rules::from_json`](crate::link::rules::Rules::from_json)
//! reads, and a refusal of the core mapped back to the field it is about,
//! so that the message stands beside what the person typed.
//!
//! The form has a field per condition, each left empty for "any": tick
//! boxes for `os`, `class` and `days`; texts for `country` and `lang` (codes
//! apart by commas or spaces); `from`/`until` as a browser's
//! `datetime-local` (no zone), read in the form's `tz` when one is given
//! and in the console's `--time-zone` otherwise; `hours_start`/`hours_end`
//! and `split_from`/`split_to` as pairs. `tz` goes into the rule only when
//! days or hours are given: the core refuses a zone nothing reads, and a
//! zone typed for the times above is what the person meant.

use chrono::{DateTime, LocalResult, NaiveDateTime, SecondsFormat, TimeZone};
use chrono_tz::Tz;
use serde_json::{Map, Value, json};

use super::http::Form;
use crate::link::rules::RuleError;

/// The tick boxes' values, as the rule writes them.
pub const OS: [(&str, &str); 4] = [
    ("ios", "iOS (iPhone)"),
    ("ipados", "iPadOS (iPad)"),
    ("android", "Android"),
    ("other", "Other"),
];
pub const CLASS: [(&str, &str); 3] = [
    ("phone", "Phone"),
    ("tablet", "Tablet"),
    ("desktop", "Desktop"),
];
pub const DAYS: [(&str, &str); 7] = [
    ("mon", "Mon"),
    ("tue", "Tue"),
    ("wed", "Wed"),
    ("thu", "Thu"),
    ("fri", "Fri"),
    ("sat", "Sat"),
    ("sun", "Sun"),
];

/// What was typed into the form, kept to show it again when refused.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RuleForm {
    pub url: String,
    pub os: Vec<String>,
    pub class: Vec<String>,
    pub country: String,
    pub lang: String,
    pub from: String,
    pub until: String,
    pub days: Vec<String>,
    pub hours_start: String,
    pub hours_end: String,
    pub tz: String,
    pub split_from: String,
    pub split_to: String,
}

/// A refusal: the form field it is about (`url`, `os`, `class`,
/// `country`, `lang`, `from`, `until`, `days`, `hours`, `tz`, `split`, or
/// `rule` for the rule as a whole) and the message shown beside it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fault {
    pub field: &'static str,
    pub message: String,
}

impl Fault {
    fn new(field: &'static str, message: impl Into<String>) -> Fault {
        Fault {
            field,
            message: message.into(),
        }
    }
}

/// The form field a core field's name is shown in, and its label.
fn field_of(name: &str) -> (&'static str, &'static str) {
    match name {
        "url" => ("url", "Destination"),
        "os" => ("os", "Operating system"),
        "class" => ("class", "Device class"),
        "country" => ("country", "Countries"),
        "lang" => ("lang", "Languages"),
        "from" => ("from", "From"),
        "until" => ("until", "Until"),
        "days" => ("days", "Days"),
        "hours" => ("hours", "Hours"),
        "tz" => ("tz", "Time zone"),
        "split" => ("split", "Split"),
        _ => ("rule", "Rule"),
    }
}

/// The core's refusal of the new rule, by the form field it names: the
/// field is the first name after `rules[N].` in the error's path.
pub fn fault_of(err: &RuleError) -> Fault {
    let name = err
        .path
        .split_once('.')
        .map(|(_, rest)| rest.split('[').next().unwrap_or_default())
        .unwrap_or_default();
    let (field, label) = field_of(name);
    Fault::new(field, format!("{label}: {}.", err.problem))
}

impl RuleForm {
    /// The form's fields from a posted body; every check is [`Self::to_json`]'s.
    pub fn read(form: &Form) -> RuleForm {
        let text = |n: &str| form.get(n).unwrap_or_default().trim().to_owned();
        let ticked = |n: &str| {
            form.pairs()
                .iter()
                .filter(|(k, _)| k == n)
                .map(|(_, v)| v.clone())
                .collect()
        };
        RuleForm {
            url: text("url"),
            os: ticked("os"),
            class: ticked("class"),
            country: text("country"),
            lang: text("lang"),
            from: text("from"),
            until: text("until"),
            days: ticked("days"),
            hours_start: text("hours_start"),
            hours_end: text("hours_end"),
            tz: text("tz"),
            split_from: text("split_from"),
            split_to: text("split_to"),
        }
    }

    /// The rule object the form describes; `zone` reads `from`/`until`
    /// when the form gives no `tz`. What the core checks (names, codes,
    /// an empty window, a rule with no condition) is left to it.
    pub fn to_json(&self, zone: Tz) -> Result<Value, Fault> {
        let mut rule = Map::new();
        rule.insert("url".into(), json!(self.url));
        let list = |v: &[String]| Value::Array(v.iter().map(|s| json!(s)).collect());
        if !self.os.is_empty() {
            rule.insert("os".into(), list(&self.os));
        }
        if !self.class.is_empty() {
            rule.insert("class".into(), list(&self.class));
        }
        for (name, typed, upper) in [
            ("country", &self.country, true),
            ("lang", &self.lang, false),
        ] {
            let items: Vec<String> = typed
                .split([',', ' '])
                .filter(|s| !s.is_empty())
                .map(|s| {
                    if upper {
                        s.to_ascii_uppercase()
                    } else {
                        s.to_owned()
                    }
                })
                .collect();
            if !items.is_empty() {
                rule.insert(name.into(), list(&items));
            }
        }
        let time_zone = match self.tz.as_str() {
            "" => zone,
            name => name.parse::<Tz>().map_err(|_| {
                Fault::new(
                    "tz",
                    "Time zone: not an IANA time zone name (Europe/Dublin, America/New_York).",
                )
            })?,
        };
        for (name, typed) in [("from", &self.from), ("until", &self.until)] {
            if !typed.is_empty() {
                let instant = instant(typed, time_zone).map_err(|m| {
                    let (field, label) = field_of(name);
                    Fault::new(field, format!("{label}: {m}"))
                })?;
                rule.insert(name.into(), json!(instant));
            }
        }
        if !self.days.is_empty() {
            rule.insert("days".into(), list(&self.days));
        }
        match (self.hours_start.as_str(), self.hours_end.as_str()) {
            ("", "") => {}
            ("", _) | (_, "") => {
                return Err(Fault::new(
                    "hours",
                    "Hours: give both a start and an end (an end before the start crosses midnight).",
                ));
            }
            (start, end) => {
                rule.insert("hours".into(), json!([start, end]));
            }
        }
        if !self.tz.is_empty() && (rule.contains_key("days") || rule.contains_key("hours")) {
            rule.insert("tz".into(), json!(self.tz));
        }
        match (self.split_from.as_str(), self.split_to.as_str()) {
            ("", "") => {}
            (lo, hi) => {
                let percent = |s: &str| s.parse::<u64>().ok();
                let (Some(lo), Some(hi)) = (percent(lo), percent(hi)) else {
                    return Err(Fault::new(
                        "split",
                        "Split: give both ends as whole percentages, from 0 to 100 (0 to 50 for the first half).",
                    ));
                };
                rule.insert("split".into(), json!([lo, hi]));
            }
        }
        Ok(Value::Object(rule))
    }
}

/// A `datetime-local` value (`2026-12-01T09:00`, seconds optional) in
/// `zone`, or an RFC 3339 instant typed whole, as the RFC 3339 text the
/// rule stores (UTC).
fn instant(typed: &str, zone: Tz) -> Result<String, String> {
    if let Ok(t) = DateTime::parse_from_rfc3339(typed) {
        return Ok(t.to_utc().to_rfc3339_opts(SecondsFormat::Secs, true));
    }
    let local = ["%Y-%m-%dT%H:%M", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%d %H:%M"]
        .iter()
        .find_map(|f| NaiveDateTime::parse_from_str(typed, f).ok())
        .ok_or_else(|| "give a date and time, such as 2026-12-01T09:00.".to_owned())?;
    let at = match zone.from_local_datetime(&local) {
        LocalResult::Single(t) => t,
        // The autumn fold: the first of the two, as the clocks show it first.
        LocalResult::Ambiguous(first, _) => first,
        LocalResult::None => {
            return Err(format!(
                "{typed} does not exist in {zone} (the clocks skip it); give a time after the change."
            ));
        }
    };
    Ok(at.to_utc().to_rfc3339_opts(SecondsFormat::Secs, true))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::link::rules::{Capabilities, Rules};

    fn form(pairs: &[(&str, &str)]) -> RuleForm {
        let body: String = form_urlencoded::Serializer::new(String::new())
            .extend_pairs(pairs)
            .finish();
        RuleForm::read(&Form::parse(body.as_bytes()))
    }

    fn parsed(pairs: &[(&str, &str)], geoip: bool) -> Result<Rules, Fault> {
        let rule = form(pairs).to_json(Tz::UTC)?;
        Rules::from_json(&Value::Array(vec![rule]), &Capabilities { geoip })
            .map_err(|e| fault_of(&e))
    }

    #[test]
    fn a_filled_form_is_the_rule_the_core_reads() {
        let rule = form(&[
            ("url", " https://example.com/lunch "),
            ("os", "ios"),
            ("os", "ipados"),
            ("lang", "fr, de-CH"),
            ("country", "ie gb"),
            ("from", "2026-03-29T00:30"),
            ("days", "mon"),
            ("days", "fri"),
            ("hours_start", "11:00"),
            ("hours_end", "15:00"),
            ("tz", "Europe/Dublin"),
            ("split_from", "0"),
            ("split_to", "50"),
        ])
        .to_json(Tz::UTC)
        .expect("rule");
        assert_eq!(
            rule,
            json!({
                "url": "https://example.com/lunch",
                "os": ["ios", "ipados"],
                "country": ["IE", "GB"],
                "lang": ["fr", "de-CH"],
                // 00:30 in Dublin on the day of the spring change is
                // before it, still GMT.
                "from": "2026-03-29T00:30:00Z",
                "days": ["mon", "fri"],
                "hours": ["11:00", "15:00"],
                "tz": "Europe/Dublin",
                "split": [0, 50]
            })
        );
        let rules = Rules::from_json(&json!([rule]), &Capabilities { geoip: true });
        assert!(rules.is_ok(), "{rules:?}");
    }

    #[test]
    fn times_are_read_in_the_forms_zone_or_the_consoles() {
        let in_zone = |tz: &str, zone: Tz| {
            form(&[
                ("url", "https://e.com"),
                ("from", "2026-07-01T09:00"),
                ("tz", tz),
            ])
            .to_json(zone)
            .map(|r| r["from"].clone())
        };
        assert_eq!(
            in_zone("", chrono_tz::Europe::Dublin),
            Ok(json!("2026-07-01T08:00:00Z"))
        );
        assert_eq!(
            in_zone("America/New_York", Tz::UTC),
            Ok(json!("2026-07-01T13:00:00Z"))
        );
        // A zone typed for the times alone is not written into the rule.
        let rule = form(&[
            ("url", "https://e.com"),
            ("from", "2026-07-01T09:00"),
            ("tz", "Europe/Dublin"),
        ])
        .to_json(Tz::UTC)
        .expect("rule");
        assert!(rule.get("tz").is_none(), "{rule}");
        // The spring gap does not exist.
        let gap = form(&[
            ("url", "https://e.com"),
            ("until", "2026-03-29T01:30"),
            ("tz", "Europe/London"),
        ])
        .to_json(Tz::UTC);
        assert_eq!(
            gap.as_ref().err().map(|f| f.field),
            Some("until"),
            "{gap:?}"
        );
    }

    #[test]
    fn the_cores_refusals_land_beside_their_fields() {
        let at = |pairs: &[(&str, &str)], geoip: bool| {
            parsed(pairs, geoip).map(|_| ()).map_err(|f| f.field)
        };
        let url = ("url", "https://example.com/x");
        assert_eq!(at(&[url], false), Err("rule"), "no condition");
        assert_eq!(at(&[("url", "/x"), ("os", "ios")], false), Err("url"));
        assert_eq!(at(&[url, ("os", "windows")], false), Err("os"));
        assert_eq!(at(&[url, ("country", "uk")], true), Err("country"));
        assert_eq!(at(&[url, ("country", "IE")], false), Err("country"));
        assert_eq!(at(&[url, ("country", "IE")], true), Ok(()));
        assert_eq!(at(&[url, ("lang", "en, fr_FR!")], false), Err("lang"));
        assert_eq!(at(&[url, ("hours_start", "11:00")], false), Err("hours"));
        assert_eq!(
            at(
                &[
                    url,
                    ("hours_start", "11:00"),
                    ("hours_end", "11:00"),
                    ("tz", "UTC")
                ],
                false
            ),
            Err("hours")
        );
        assert_eq!(
            at(
                &[url, ("hours_start", "11:00"), ("hours_end", "15:00")],
                false
            ),
            Err("tz")
        );
        assert_eq!(
            at(&[url, ("days", "mon"), ("tz", "Mars/Base")], false),
            Err("tz")
        );
        assert_eq!(
            at(&[url, ("split_from", "50"), ("split_to", "150")], false),
            Err("split")
        );
        assert_eq!(at(&[url, ("split_from", "50")], false), Err("split"));
        assert_eq!(
            at(
                &[
                    url,
                    ("from", "2026-12-02T00:00"),
                    ("until", "2026-12-01T00:00")
                ],
                false
            ),
            Err("until")
        );
        assert_eq!(at(&[url, ("from", "soon")], false), Err("from"));
        let no_geo = parsed(&[url, ("country", "IE")], false).expect_err("refused");
        assert!(no_geo.message.starts_with("Countries: "), "{no_geo:?}");
        assert!(no_geo.message.contains("--geoip-db"), "{no_geo:?}");
    }
}
