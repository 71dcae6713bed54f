//! A rule's conditions in one line, for `qrtag rule list`, `qrtag show`
//! and the console's rule table, so that every surface words a rule alike:
//! `os: ios, ipados; hours: 11:00–15:00; tz: Europe/Dublin`.

use serde_json::{Map, Value};

use super::rule::FIELDS;

/// The conditions of a valid rule's object, in the documented order.
pub(super) fn conditions(rule: &Map<String, Value>) -> String {
    let mut parts = Vec::new();
    for field in FIELDS.iter().filter(|f| **f != "url") {
        let Some(v) = rule.get(*field) else { continue };
        let text = match (*field, v) {
            ("hours", Value::Array(pair)) => {
                format!("{}–{}", text_at(pair, 0), text_at(pair, 1))
            }
            ("split", Value::Array(pair)) => {
                let n = |i: usize| pair.get(i).map(Value::to_string).unwrap_or_default();
                format!("{}–{}%", n(0), n(1))
            }
            (_, Value::Array(items)) => items
                .iter()
                .map(|i| i.as_str().unwrap_or_default())
                .collect::<Vec<_>>()
                .join(", "),
            (_, Value::String(s)) => s.clone(),
            (_, other) => other.to_string(),
        };
        parts.push(format!("{field}: {text}"));
    }
    parts.join("; ")
}

fn text_at(items: &[Value], i: usize) -> &str {
    items.get(i).and_then(Value::as_str).unwrap_or_default()
}
