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
        }),
        INVALIDATE => Kind::Invalidate {
            shortened_url: text(fields, "shortened_url")?,
        },
        _ => return Err(MessageError::UnknownType(clip(&typ))),
    };
    Ok(Incoming {
        version,
        thid: thid.filter(|t| !t.is_empty()).unwrap_or_else(|| id.clone()),
        id,
        from: match version {
            Version::V2 => text(obj, "from")?,
            Version::V1 => None,
        },
        return_route_all: return_route.as_deref() == Some("all"),
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
