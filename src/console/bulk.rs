//! A bulk action of the links list (issue 33), read from the list's form
//! and checked whole before anything is read or written (pure): which
//! links (the ticked rows, or every link matching the list's filter, which
//! the handler resolves when the form is sent) and what to do with them.
//! A mistake is named with the field it is in, so the list comes back with
//! the message beside that field and nothing changed.

use chrono::{DateTime, Utc};

use crate::print::PrintOptions;
use crate::values::destination::Destination;
use crate::values::expiry::parse_future;
use crate::values::link_key::LinkKey;

/// Links one action takes at most, as the REST API's bulk create: a
/// filter matching more is a mistake to narrow, not a job to start.
pub const MAX_BULK: usize = 1000;

/// The print options the action bar offers, named as `qrtag print`'s flags
/// and the other PDF forms' fields.
pub const PRINT_FIELDS: [&str; 3] = ["template", "skip", "caption"];

/// The field a refusal of no one input is shown beside: the action bar.
pub const BAR: &str = "bulk";

/// Which links.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scope {
    /// The ticked rows, each once, in the order sent.
    Ticked(Vec<LinkKey>),
    /// Every link the list's query (sent with the form) matches now.
    Matching,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    /// One PDF of every link's tag, on the options' stock.
    Print(PrintOptions),
    /// The links as `qrtag export --format csv` writes them.
    Csv,
    Enable,
    Disable,
    Repoint(Destination),
    Expire(DateTime<Utc>),
    NoExpiry,
    /// Unconfirmed, the handler asks first, listing what would go.
    Delete {
        confirmed: bool,
    },
}

impl Action {
    /// What the report's heading calls it.
    pub fn label(&self) -> String {
        match self {
            Action::Print(_) => "Print".into(),
            Action::Csv => "Download as CSV".into(),
            Action::Enable => "Enable".into(),
            Action::Disable => "Disable".into(),
            Action::Repoint(url) => format!("Repoint to {url}"),
            Action::Expire(_) => "Set expiry".into(),
            Action::NoExpiry => "Clear expiry".into(),
            Action::Delete { .. } => "Delete".into(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// The field's `name` ([`BAR`]: the action bar as a whole).
    pub field: &'static str,
    pub message: String,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    pub scope: Scope,
    pub action: Action,
}

/// The form's action, links and the action's own fields, checked.
pub fn parse(
    form: &[(String, String)],
    now: DateTime<Utc>,
    tz: chrono_tz::Tz,
) -> Result<Request, Refusal> {
    let get = |name: &str| {
        form.iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    };
    let bar = |message: String| Refusal {
        field: BAR,
        message,
    };
    let action = get("action").unwrap_or_default();
    let scope = match get("scope") {
        Some("matching") => Scope::Matching,
        None | Some("ticked") => Scope::Ticked(ticked(form)?),
        Some(other) => return Err(bar(format!("Unknown choice of links: {other:?}."))),
    };
    let action = match action {
        "print" => Action::Print(print_options(form)?),
        "csv" => Action::Csv,
        "enable" => Action::Enable,
        "disable" => Action::Disable,
        "repoint" => {
            let url = get("url").map(str::trim).unwrap_or_default();
            if url.is_empty() {
                return Err(Refusal {
                    field: "url",
                    message: "Give the destination to repoint the links to.".into(),
                });
            }
            Action::Repoint(Destination::parse(url).map_err(|e| Refusal {
                field: "url",
                message: format!("Destination: {e}"),
            })?)
        }
        "expire" => {
            let given = get("expires").unwrap_or_default();
            let at_fault = |message: String| Refusal {
                field: "expires",
                message,
            };
            if given.trim().is_empty() {
                return Err(at_fault(
                    "Give an expiry (30d, a date such as 2026-12-31), or use Clear expiry.".into(),
                ));
            }
            match parse_future(given, now, tz) {
                Ok(Some(at)) => Action::Expire(at),
                Ok(None) => Action::NoExpiry,
                Err(e) => return Err(at_fault(format!("Expires: {e}"))),
            }
        }
        "never" => Action::NoExpiry,
        "delete" => Action::Delete {
            confirmed: get("confirm") == Some("yes"),
        },
        "" => return Err(bar("Choose an action: press one of the buttons.".into())),
        other => return Err(bar(format!("Unknown action {other:?}."))),
    };
    Ok(Request { scope, action })
}

/// The ticked keys, each once; none, a bad one or more than [`MAX_BULK`]
/// is the form's mistake.
fn ticked(form: &[(String, String)]) -> Result<Vec<LinkKey>, Refusal> {
    let bar = |message: String| Refusal {
        field: BAR,
        message,
    };
    let mut keys: Vec<LinkKey> = Vec::new();
    for (_, value) in form.iter().filter(|(n, _)| n == "key") {
        let key = LinkKey::parse(value).map_err(|e| bar(format!("Bad key {value:?}: {e}")))?;
        if !keys.contains(&key) {
            keys.push(key);
        }
        if keys.len() > MAX_BULK {
            return Err(bar(format!(
                "More than {MAX_BULK} links ticked: one action takes at most {MAX_BULK}; nothing was changed."
            )));
        }
    }
    if keys.is_empty() {
        return Err(bar(
            "No link is ticked: tick the links to act on (or choose all matching), then the action; nothing was changed."
                .into(),
        ));
    }
    Ok(keys)
}

/// The action bar's print fields through the PDF forms' parser.
fn print_options(form: &[(String, String)]) -> Result<PrintOptions, Refusal> {
    let query = form_urlencoded::Serializer::new(String::new())
        .extend_pairs(
            form.iter()
                .filter(|(n, _)| PRINT_FIELDS.contains(&n.as_str())),
        )
        .finish();
    PrintOptions::from_query(&query, &[]).map_err(|e| Refusal {
        field: PRINT_FIELDS
            .into_iter()
            .find(|f| *f == e.field)
            .unwrap_or(BAR),
        message: e.message,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn form(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(n, v)| ((*n).to_owned(), (*v).to_owned()))
            .collect()
    }

    fn parsed(pairs: &[(&str, &str)]) -> Result<Request, Refusal> {
        parse(&form(pairs), Utc::now(), chrono_tz::Tz::UTC)
    }

    fn key(s: &str) -> LinkKey {
        LinkKey::parse(s).expect("key")
    }

    #[test]
    fn ticked_keys_are_read_once_each_in_order() {
        let r = parsed(&[
            ("key", "b"),
            ("key", "a"),
            ("key", "b"),
            ("action", "disable"),
        ])
        .expect("parsed");
        assert_eq!(r.scope, Scope::Ticked(vec![key("b"), key("a")]));
        assert_eq!(r.action, Action::Disable);
    }

    #[test]
    fn no_ticked_key_a_bad_one_or_too_many_is_the_bar_s_mistake() {
        let none = parsed(&[("action", "enable")]).expect_err("none");
        assert_eq!(none.field, BAR);
        assert!(none.message.starts_with("No link is ticked"), "{none:?}");
        let bad = parsed(&[("key", "a b"), ("action", "enable")]).expect_err("bad");
        assert_eq!(bad.field, BAR);
        let many: Vec<(String, String)> = (0..=MAX_BULK)
            .map(|i| ("key".to_owned(), format!("k{i}")))
            .chain([("action".to_owned(), "csv".to_owned())])
            .collect();
        let refused = parse(&many, Utc::now(), chrono_tz::Tz::UTC).expect_err("too many");
        assert!(refused.message.contains("at most 1000"), "{refused:?}");
        let matching = parsed(&[("scope", "matching"), ("action", "csv")]).expect("matching");
        assert_eq!(matching.scope, Scope::Matching);
    }

    #[test]
    fn each_action_s_own_field_is_checked_and_blamed() {
        let ok = |pairs: &[(&str, &str)]| {
            let mut all = vec![("key", "a")];
            all.extend_from_slice(pairs);
            parsed(&all)
        };
        let url = ok(&[("action", "repoint"), ("url", "not a url")]).expect_err("url");
        assert_eq!(url.field, "url");
        let empty = ok(&[("action", "repoint"), ("url", " ")]).expect_err("empty");
        assert_eq!(empty.field, "url");
        let repoint = ok(&[("action", "repoint"), ("url", "https://example.com/x")]);
        assert!(matches!(repoint.map(|r| r.action), Ok(Action::Repoint(_))));
        let past = ok(&[("action", "expire"), ("expires", "2020-01-01")]).expect_err("past");
        assert_eq!(past.field, "expires");
        assert!(matches!(
            ok(&[("action", "expire"), ("expires", "30d")]).map(|r| r.action),
            Ok(Action::Expire(_))
        ));
        assert_eq!(
            ok(&[("action", "never")]).map(|r| r.action),
            Ok(Action::NoExpiry)
        );
        let template = ok(&[("action", "print"), ("template", "NOPE")]).expect_err("tpl");
        assert_eq!(template.field, "template");
        let skip = ok(&[("action", "print"), ("template", "L7160"), ("skip", "x")]);
        assert_eq!(skip.expect_err("skip").field, "skip");
        assert!(matches!(
            ok(&[
                ("action", "print"),
                ("template", "L7160"),
                ("caption", "key")
            ])
            .map(|r| r.action),
            Ok(Action::Print(_))
        ));
        assert_eq!(
            ok(&[("action", "delete")]).map(|r| r.action),
            Ok(Action::Delete { confirmed: false })
        );
        assert_eq!(
            ok(&[("action", "delete"), ("confirm", "yes")]).map(|r| r.action),
            Ok(Action::Delete { confirmed: true })
        );
        assert_eq!(ok(&[]).expect_err("no action").field, BAR);
        assert_eq!(
            ok(&[("action", "explode")]).expect_err("unknown").field,
            BAR
        );
    }
}
