//! Parsing a plaintext DIDComm message, v1 (`@type`, `@id`, decorators) or
//! v2 (`type`, `id`, `body`), into one typed [`Incoming`] message of the
//! shorten-url protocol. Field values are judged by the protocol, not here:
//! a missing `url` is the problem report `invalid_url`, not a parse error.

use serde_json::{Map, Value};

pub const PIURI: &str = "https://didcomm.org/shorten-url/1.0/";
/// The prefix Aries agents used before `https://didcomm.org/`.
const OLD_PIURI: &str = "did:sov:BzCbsNYhMrjHiqZDTUASHg;spec/shorten-url/1.0/";

pub const REQUEST: &str = "request-shortened-url";
pub const SHORTENED: &str = "shortened-url";
pub const INVALIDATE: &str = "invalidate-shortened-url";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Version {
    V1,
    V2,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Incoming {
    pub version: Version,
    pub id: String,
    /// The thread the message belongs to: its `thid`, else its own id.
    pub thid: String,
    /// v2 `from` (only meaningful when authenticated by the envelope).
    pub from: Option<String>,
    /// Whether the sender asked for the reply on this HTTP response.
    pub return_route_all: bool,
    /// v2 `to`: the DIDs (or DID URLs) the message is for; `None` when the
    /// message names none (v1, most plaintext).
    pub to: Option<Vec<String>>,
    /// v2 `created_time` (v1 `~timing.out_time`), epoch seconds.
    pub created_time: Option<i64>,
    /// v2 `expires_time` (v1 `~timing.expires_time`), epoch seconds.
    pub expires_time: Option<i64>,
    pub kind: Kind,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kind {
    Request(Request),
    Invalidate { shortened_url: Option<String> },
}

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Request {
    pub url: Option<String>,
    pub requested_validity_seconds: Option<u64>,
    pub goal_code: Option<String>,
    /// `None` also for an empty string, which some agents send for "no slug".
    pub short_url_slug: Option<String>,
    /// Issue 36: the domain (host) the short URL is to be on, an attribute
    /// of this service's own beside the protocol's. The protocol leaves
    /// how a short URL is formed to the shortener, and DIDComm lets a
    /// message carry attributes its protocol does not define, which a
    /// recipient that does not know them ignores: an agent may send it to
    /// any shortener, and without it the default domain answers. Neither
    /// the recipient DID (one service identity serves every domain) nor
    /// the goal code (the RFC fixes its values) could say it.
    pub domain: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MessageError {
    #[error("a DIDComm message is a JSON object")]
    NotAnObject,
    #[error("no message type (v2 \"type\" or v1 \"@type\")")]
    NoType,
    #[error("no message id (v2 \"id\" or v1 \"@id\")")]
    NoId,
    #[error("a v2 message needs a \"body\" object")]
    NoBody,
    #[error("unknown message type: {0}")]
    UnknownType(String),
    #[error("\"{0}\" must be a string")]
    NotAString(&'static str),
    #[error("\"requested_validity_seconds\" must be a non-negative integer")]
    BadValidity,
    #[error("\"{0}\" must be epoch seconds or an RFC 3339 time")]
    BadTime(&'static str),
    #[error("\"to\" must be a list of DIDs")]
    BadTo,
    #[error("\"{0}\" may be at most {max} bytes", max = crate::link::MAX_TEXT)]
    TooLong(&'static str),
}

fn text(map: &Map<String, Value>, name: &'static str) -> Result<Option<String>, MessageError> {
    match map.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(MessageError::NotAString(name)),
    }
}

/// A number, or a string of one (some agents send numbers as strings).
fn seconds(v: Option<&Value>) -> Result<Option<u64>, MessageError> {
    match v {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => n.as_u64().map(Some).ok_or(MessageError::BadValidity),
        Some(Value::String(s)) => s
            .trim()
            .parse()
            .map(Some)
            .map_err(|_| MessageError::BadValidity),
        Some(_) => Err(MessageError::BadValidity),
    }
}

/// A `_time` field: epoch seconds as DIDComm v2 says, or (as Credo and v1
/// `~timing` write them) an RFC 3339 string or a string of seconds.
fn time(v: Option<&Value>, name: &'static str) -> Result<Option<i64>, MessageError> {
    match v {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => n
            .as_i64()
            .or_else(|| n.as_f64().filter(|f| f.is_finite()).map(|f| f as i64))
            .map(Some)
            .ok_or(MessageError::BadTime(name)),
        Some(Value::String(s)) => {
            let s = s.trim();
            s.parse::<i64>()
                .ok()
                .or_else(|| {
                    chrono::DateTime::parse_from_rfc3339(s)
                        .ok()
                        .map(|t| t.timestamp())
                })
                .map(Some)
                .ok_or(MessageError::BadTime(name))
        }
        Some(_) => Err(MessageError::BadTime(name)),
    }
}

/// `to`: a list of strings (a lone string is read as a list of one).
fn recipients(v: Option<&Value>) -> Result<Option<Vec<String>>, MessageError> {
    match v {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(vec![s.clone()])),
        Some(Value::Array(items)) => items
            .iter()
            .map(|i| i.as_str().map(str::to_owned).ok_or(MessageError::BadTo))
            .collect::<Result<Vec<_>, _>>()
            .map(Some),
        Some(_) => Err(MessageError::BadTo),
    }
}

fn message_name(typ: &str) -> Option<&str> {
    typ.strip_prefix(PIURI)
        .or_else(|| typ.strip_prefix(OLD_PIURI))
}

pub fn parse(value: &Value) -> Result<Incoming, MessageError> {
    let obj = value.as_object().ok_or(MessageError::NotAnObject)?;
    let v1 = obj.contains_key("@type");
    let (version, typ, id) = if v1 {
        (Version::V1, text(obj, "@type")?, text(obj, "@id")?)
    } else {
        (Version::V2, text(obj, "type")?, text(obj, "id")?)
    };
    let typ = typ.ok_or(MessageError::NoType)?;
    let id = id.filter(|s| !s.is_empty()).ok_or(MessageError::NoId)?;
    let name = message_name(&typ).ok_or_else(|| MessageError::UnknownType(clip(&typ)))?;
    let (created, expires) = match version {
        Version::V1 => {
            let timing = obj.get("~timing");
            (
                time(timing.and_then(|t| t.get("out_time")), "out_time")?,
                time(timing.and_then(|t| t.get("expires_time")), "expires_time")?,
            )
        }
        Version::V2 => (
            time(obj.get("created_time"), "created_time")?,
            time(obj.get("expires_time"), "expires_time")?,
        ),
    };
    let (fields, thid, return_route) = match version {
        Version::V1 => {
            let thid = obj
                .get("~thread")
                .and_then(|t| t.get("thid"))
                .and_then(Value::as_str)
                .map(str::to_owned);
            let rr = obj
                .get("~transport")
                .and_then(|t| t.get("return_route"))
                .and_then(Value::as_str)
                .map(str::to_owned);
            (obj, thid, rr)
        }
        Version::V2 => {
            let body = obj
                .get("body")
                .and_then(Value::as_object)
                .ok_or(MessageError::NoBody)?;
            let thid = text(obj, "thid")?;
            let rr = obj
                .get("return_route")
                .and_then(Value::as_str)
                .map(str::to_owned);
            (body, thid, rr)
        }
    };
    let kind = match name {
        REQUEST => Kind::Request(Request {
            url: text(fields, "url")?,
            requested_validity_seconds: seconds(fields.get("requested_validity_seconds"))?,
            goal_code: text(fields, "goal_code")?,
            short_url_slug: text(fields, "short_url_slug")?.filter(|s| !s.is_empty()),
            domain: text(fields, "domain")?.filter(|s| !s.is_empty()),
        }),
        INVALIDATE => Kind::Invalidate {
            shortened_url: text(fields, "shortened_url")?,
        },
        _ => return Err(MessageError::UnknownType(clip(&typ))),
    };
    // The thread is recorded in the link (`thid`), the sender answered to:
    // both held to the link's text cap.
    let thid = thid.filter(|t| !t.is_empty()).unwrap_or_else(|| id.clone());
    let from = match version {
        Version::V2 => text(obj, "from")?,
        Version::V1 => None,
    };
    for (name, value) in [("thid", Some(&thid)), ("from", from.as_ref())] {
        if value.is_some_and(|v| v.len() > crate::link::MAX_TEXT) {
            return Err(MessageError::TooLong(name));
        }
    }
    Ok(Incoming {
        version,
        thid,
        id,
        from,
        return_route_all: return_route.as_deref() == Some("all"),
        to: match version {
            Version::V2 => recipients(obj.get("to"))?,
            Version::V1 => None,
        },
        created_time: created,
        expires_time: expires,
        kind,
    })
}

/// At most 100 characters of a value for an error line.
fn clip(s: &str) -> String {
    s.chars()
        .take(100)
        .map(|c| if c.is_control() { '?' } else { c })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn v1_and_v2_requests_parse_to_the_same_request() {
        let v1 = parse(&json!({
            "@type": "https://didcomm.org/shorten-url/1.0/request-shortened-url",
            "@id": "r1",
            "url": "https://example.com/?oob=x",
            "requested_validity_seconds": 60,
            "goal_code": "shorten.oobv1",
            "short_url_slug": "invite",
            "~transport": {"return_route": "all"}
        }))
        .expect("v1");
        let v2 = parse(&json!({
            "type": "https://didcomm.org/shorten-url/1.0/request-shortened-url",
            "id": "r1",
            "from": "did:peer:2.Ez",
            "return_route": "all",
            "body": {
                "url": "https://example.com/?oob=x",
                "requested_validity_seconds": "60",
                "goal_code": "shorten.oobv1",
                "short_url_slug": "invite"
            }
        }))
        .expect("v2");
        assert_eq!(v1.version, Version::V1);
        assert_eq!(v2.version, Version::V2);
        assert_eq!(v1.kind, v2.kind);
        assert!(v1.return_route_all && v2.return_route_all);
        assert_eq!(
            (v1.thid.as_str(), v2.from.as_deref()),
            ("r1", Some("did:peer:2.Ez"))
        );
        let Kind::Request(r) = v1.kind else {
            panic!("a request")
        };
        assert_eq!(r.requested_validity_seconds, Some(60));
    }

    #[test]
    fn a_thread_or_sender_over_the_text_cap_is_refused() {
        let long = "t".repeat(crate::link::MAX_TEXT + 1);
        let base = json!({
            "type": "https://didcomm.org/shorten-url/1.0/request-shortened-url",
            "id": "m1",
            "body": {"url": "https://e.example/", "goal_code": "shorten"},
        });
        for (field, value) in [("thid", &long), ("id", &long), ("from", &long)] {
            let mut m = base.clone();
            m[field] = json!(value);
            let name = if field == "from" { "from" } else { "thid" };
            assert_eq!(
                parse(&m).map(|_| ()),
                Err(MessageError::TooLong(name)),
                "{field}"
            );
        }
        assert!(parse(&base).is_ok());
    }

    #[test]
    fn threads_empty_slugs_and_invalidation() {
        let m = parse(&json!({
            "@type": "https://didcomm.org/shorten-url/1.0/invalidate-shortened-url",
            "@id": "i1",
            "~thread": {"thid": "t0"},
            "shortened_url": "https://0x1f.ie/abcde"
        }))
        .expect("v1 invalidate");
        assert_eq!(m.thid, "t0");
        assert!(!m.return_route_all);
        assert_eq!(
            m.kind,
            Kind::Invalidate {
                shortened_url: Some("https://0x1f.ie/abcde".into())
            }
        );
        let m = parse(&json!({
            "type": "https://didcomm.org/shorten-url/1.0/request-shortened-url",
            "id": "x",
            "body": {"url": "https://a.example", "short_url_slug": ""}
        }))
        .expect("v2");
        assert!(matches!(
            m.kind,
            Kind::Request(Request {
                short_url_slug: None,
                ..
            })
        ));
    }

    #[test]
    fn addressing_and_times() {
        let t = "https://didcomm.org/shorten-url/1.0/request-shortened-url";
        let m = parse(
            &json!({"type": t, "id": "x", "body": {}, "to": ["did:peer:2.Ea"],
            "created_time": 1_700_000_000, "expires_time": "2026-11-25T10:00:00Z"}),
        )
        .expect("v2");
        assert_eq!(m.to, Some(vec!["did:peer:2.Ea".to_owned()]));
        assert_eq!(m.created_time, Some(1_700_000_000));
        assert_eq!(m.expires_time, Some(1_795_600_800));
        let m =
            parse(&json!({"@type": t, "@id": "x", "~timing": {"expires_time": "1"}})).expect("v1");
        assert_eq!((m.to, m.expires_time), (None, Some(1)));
        for bad in [
            json!({"type": t, "id": "x", "body": {}, "expires_time": "soon"}),
            json!({"type": t, "id": "x", "body": {}, "to": [5]}),
            json!({"type": t, "id": "x", "body": {}, "to": {}}),
        ] {
            assert!(parse(&bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn malformed_messages() {
        let t = "https://didcomm.org/shorten-url/1.0/request-shortened-url";
        let cases = [
            (json!([1]), MessageError::NotAnObject),
            (json!({"id": "x", "body": {}}), MessageError::NoType),
            (json!({"type": t, "body": {}}), MessageError::NoId),
            (json!({"type": t, "id": ""}), MessageError::NoId),
            (json!({"type": t, "id": "x"}), MessageError::NoBody),
            (
                json!({"type": 5, "id": "x"}),
                MessageError::NotAString("type"),
            ),
            (
                json!({"type": "https://didcomm.org/basicmessage/2.0/message", "id": "x", "body": {}}),
                MessageError::UnknownType("https://didcomm.org/basicmessage/2.0/message".into()),
            ),
            (
                json!({"type": "https://didcomm.org/shorten-url/1.0/shortened-url", "id": "x", "body": {}}),
                MessageError::UnknownType(
                    "https://didcomm.org/shorten-url/1.0/shortened-url".into(),
                ),
            ),
            (
                json!({"type": t, "id": "x", "body": {"requested_validity_seconds": -1}}),
                MessageError::BadValidity,
            ),
            (
                json!({"type": t, "id": "x", "body": {"requested_validity_seconds": "soon"}}),
                MessageError::BadValidity,
            ),
            (
                json!({"type": t, "id": "x", "body": {"url": 3}}),
                MessageError::NotAString("url"),
            ),
        ];
        for (v, want) in cases {
            assert_eq!(parse(&v), Err(want), "{v}");
        }
    }
}
