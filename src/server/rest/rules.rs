//! A link's `rules` (issue 34) through the REST API: read as the JSON a
//! client sends and judged by the core ([`Rules::from_json`]), so that a
//! bad rule is refused in the core's words naming the field
//! (`rules[2].hours: ...`), as the CLI and the console refuse it; and the
//! `Rule` schema of the OpenAPI document, written from the core's own name
//! lists so that a generated client sends what the server takes.

use serde_json::{Value, json};

use super::RestState;
use super::problem::Kind;
use crate::link::Document;
use crate::link::rules::device::{Class, Os};
use crate::link::rules::window::DaySet;
use crate::link::rules::{MAX_RULES, Problem, RuleError, Rules, language};

/// The schema's name for one rule.
pub const RULE: &str = "Rule";

/// `rules` as sent, for the link `key` (when the client chose it): parsed
/// with what this server can answer (a `country` rule only with a GeoIP
/// database), and no rule's destination at the link's own short URL.
/// A refusal is a problem naming the field.
pub fn parse(state: &RestState, key: Option<&str>, sent: &Value) -> Result<Rules, (Kind, String)> {
    let rules = Rules::from_json(sent, &state.rule_capabilities).map_err(refusal)?;
    if let Some(key) = key {
        rules
            .check_loops(key, state.public_url.load().origin())
            .map_err(|e| (Kind::InvalidUrl, e.to_string()))?;
    }
    Ok(rules)
}

/// A destination's problem is an `invalid-url`, as a bad `url` or
/// `fallback_url` is; anything else a `bad-request`.
fn refusal(e: RuleError) -> (Kind, String) {
    let kind = match e.problem {
        Problem::BadUrl(_) | Problem::UrlNotAbsolute | Problem::MissingUrl => Kind::InvalidUrl,
        _ => Kind::BadRequest,
    };
    (kind, e.to_string())
}

/// The rules a stored document carries, as stored (none: an empty list).
pub fn shown(doc: &Document) -> Vec<Value> {
    match doc.get("rules") {
        Some(Value::Array(items)) => items.clone(),
        _ => Vec::new(),
    }
}

/// The bytes a page's budget counts for a link's rules: their
/// destinations, which are most of them.
pub fn page_bytes(rules: &[Value]) -> usize {
    rules
        .iter()
        .map(|r| r.get("url").and_then(Value::as_str).map_or(0, str::len))
        .sum()
}

/// One rule, as the core takes it ([`crate::link::rules`]'s module notes).
/// What no schema states (at least one condition; `tz`, an IANA zone name,
/// with `days` or `hours` and only with them; `from` before `until`; `lo`
/// below `hi`; a country rule only on a server with `--geoip-db`) is in the
/// descriptions, and refused with the field named.
pub fn rule_schema() -> Value {
    let names = |list: Vec<&str>| json!({"type": "array", "minItems": 1, "items": {"type": "string", "enum": list}});
    json!({
        "type": "object",
        "description": "A destination and the conditions a scan must meet for it, all of them. \
            At least one condition. A `country` rule needs the server's GeoIP database \
            (`serve --geoip-db`).",
        "required": ["url"],
        "properties": {
            "url": {"type": "string", "minLength": 1,
                "description": "An absolute http(s) URL, checked as `fallback_url` is; not the link's own short URL."},
            "os": names(Os::ALL.into_iter().map(Os::name).collect()),
            "class": names(Class::ALL.into_iter().map(Class::name).collect()),
            "country": {"type": "array", "minItems": 1,
                "items": {"type": "string", "pattern": "^[A-Z]{2}$"},
                "description": "ISO 3166-1 alpha-2 codes in capitals (`GB`, not `UK`)."},
            "lang": {"type": "array", "minItems": 1,
                "items": {"type": "string", "minLength": 1, "maxLength": language::MAX_TAG},
                "description": "Language tags (`en`, `pt-BR`), matched against the scanner's most preferred language (RFC 4647 basic filtering)."},
            "from": {"type": "string", "format": "date-time",
                "description": "RFC 3339: the rule holds from this instant."},
            "until": {"type": "string", "format": "date-time",
                "description": "RFC 3339: the rule holds until this instant (after `from`)."},
            "days": names(DaySet::NAMES.to_vec()),
            "hours": {"type": "array", "minItems": 2, "maxItems": 2,
                "items": {"type": "string", "pattern": "^([01][0-9]|2[0-3]):[0-5][0-9]$"},
                "description": "`[\"HH:MM\", \"HH:MM\"]`, local time in `tz`, start and end not equal; an end before the start crosses midnight."},
            "tz": {"type": "string", "minLength": 1,
                "description": "An IANA time zone name (`Europe/Dublin`), required with `days` or `hours`, and only with them."},
            "split": {"type": "array", "minItems": 2, "maxItems": 2,
                "items": {"type": "integer", "minimum": 0, "maximum": 100},
                "description": "`[lo, hi]`, whole percentages, `lo < hi`: the scanner's bucket (0-99, sticky per tracking ID) is in `lo..hi`. A 50/50 test is `[0, 50]` then `[50, 100]`."}
        },
        "minProperties": 2,
        "additionalProperties": false
    })
}

/// The schemas with a link's rules (the Rust fields are plain JSON, so
/// that the core, not serde, words a refusal): each `rules` property a
/// list of at most [`MAX_RULES`] `Rule`s, `null` in a request meaning
/// "leave them as they are".
const WITH_RULES: [(&str, bool); 3] = [("NewLink", true), ("LinkEdit", true), ("LinkView", false)];

/// Adds the `Rule` schema to the document's components and points every
/// `rules` property at it, keeping the property's description.
pub fn add_rule_schema(doc: &mut Value) {
    let Some(Value::Object(schemas)) = doc.pointer_mut("/components/schemas") else {
        return;
    };
    for (name, nullable) in WITH_RULES {
        let Some(prop) = schemas
            .get_mut(name)
            .and_then(|s| s.pointer_mut("/properties/rules"))
        else {
            continue;
        };
        let list = json!({
            "type": if nullable { json!(["array", "null"]) } else { json!("array") },
            "items": {"$ref": format!("#/components/schemas/{RULE}")},
            "maxItems": MAX_RULES,
        });
        let description = prop.get("description").cloned();
        *prop = list;
        if let Some(d) = description {
            prop["description"] = d;
        }
    }
    schemas.insert(RULE.into(), rule_schema());
    schemas.sort_keys();
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::link::rules::Capabilities;

    /// Every property and enumerated value the schema offers is one the
    /// core takes, and a property it does not offer is refused.
    #[test]
    fn the_schema_offers_what_the_core_takes() {
        let schema = rule_schema();
        let props = schema["properties"].as_object().expect("properties");
        let geoip = Capabilities { geoip: true };
        let take = |rule: Value| Rules::from_json(&json!([rule]), &geoip);
        for field in ["os", "class", "days"] {
            for name in props[field]["items"]["enum"].as_array().expect("enum") {
                let mut rule = json!({"url": "https://example.com/"});
                rule[field] = json!([name]);
                if field == "days" {
                    rule["tz"] = json!("Europe/Dublin");
                }
                take(rule.clone()).unwrap_or_else(|e| panic!("{rule}: {e}"));
            }
        }
        let full = json!({"url": "https://example.com/", "os": ["ios"], "class": ["phone"],
            "country": ["IE"], "lang": ["en"], "from": "2026-01-01T00:00:00Z",
            "until": "2027-01-01T00:00:00Z", "days": ["mon"], "hours": ["11:00", "15:00"],
            "tz": "Europe/Dublin", "split": [0, 50]});
        let offered: Vec<&String> = props.keys().collect();
        let written: Vec<&String> = full.as_object().expect("rule").keys().collect();
        assert_eq!(offered, written);
        take(full).expect("every field");
        let e = take(json!({"url": "https://example.com/", "os": ["ios"], "oss": ["ios"]}))
            .expect_err("unknown");
        assert_eq!(e.path, "rules[0].oss");
        assert_eq!(schema["additionalProperties"], false);
    }
}
