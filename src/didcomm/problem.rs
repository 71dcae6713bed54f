//! The protocol's problem codes and their reports in v1 and v2 shape.

use serde_json::{Value, json};

use super::message::Version;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Code {
    ValidityTooLong,
    InvalidUrl,
    InvalidProtocolScheme,
    InvalidGoalCode,
    SlugsNotSupported,
    InvalidSlug,
    /// Not one of the RFC's codes: a valid, free slug that would take over
    /// the URLs under an existing link (`docs/api/v1` while `docs/api`
    /// exists).
    SlugUnavailable,
    ShortUrlInvalid,
    RejectedInvalidation,
    /// Not one of the RFC's codes: the sender may not request short URLs here.
    Unauthorized,
    /// Not one of the RFC's codes (issue 36): the request's `domain` is
    /// none this service serves.
    UnknownDomain,
}

impl Code {
    pub fn as_str(self) -> &'static str {
        match self {
            Code::ValidityTooLong => "validity_too_long",
            Code::InvalidUrl => "invalid_url",
            Code::InvalidProtocolScheme => "invalid_protocol_scheme",
            Code::InvalidGoalCode => "invalid_goal_code",
            Code::SlugsNotSupported => "slugs_not_supported",
            Code::InvalidSlug => "invalid_slug",
            Code::SlugUnavailable => "slug_unavailable",
            Code::ShortUrlInvalid => "short_url_invalid",
            Code::RejectedInvalidation => "rejected_invalidation",
            Code::Unauthorized => "unauthorized",
            Code::UnknownDomain => "unknown_domain",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    pub code: Code,
    /// One human sentence.
    pub comment: String,
    pub max_validity_seconds: Option<u64>,
}

impl Problem {
    pub fn new(code: Code, comment: impl Into<String>) -> Self {
        Self {
            code,
            comment: comment.into(),
            max_validity_seconds: None,
        }
    }

    /// The report answering message `thid`, as a plaintext message.
    pub fn report(&self, version: Version, reply_id: &str, thid: &str) -> Value {
        let items: Option<Value> = self
            .max_validity_seconds
            .map(|n| json!([{"max_validity_seconds": n}]));
        match version {
            Version::V1 => {
                let mut m = json!({
                    "@type": "https://didcomm.org/report-problem/1.0/problem-report",
                    "@id": reply_id,
                    "~thread": {"thid": thid},
                    "description": {"code": self.code.as_str(), "en": self.comment},
                });
                if let Some(items) = items {
                    m["problem_items"] = items;
                }
                m
            }
            Version::V2 => {
                let mut body = json!({
                    "code": format!("e.p.msg.{}", self.code.as_str()),
                    "comment": self.comment,
                });
                if let Some(items) = items {
                    body["problem_items"] = items;
                }
                json!({
                    "type": "https://didcomm.org/report-problem/2.0/problem-report",
                    "id": reply_id,
                    "thid": thid,
                    "pthid": thid,
                    "body": body,
                })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn v1_and_v2_shapes() {
        let mut p = Problem::new(Code::ValidityTooLong, "at most 60 seconds");
        p.max_validity_seconds = Some(60);
        let v1 = p.report(Version::V1, "r", "t");
        assert_eq!(
            v1["@type"],
            "https://didcomm.org/report-problem/1.0/problem-report"
        );
        assert_eq!(v1["description"]["code"], "validity_too_long");
        assert_eq!(v1["~thread"]["thid"], "t");
        assert_eq!(v1["problem_items"][0]["max_validity_seconds"], 60);
        let v2 = p.report(Version::V2, "r", "t");
        assert_eq!(
            v2["type"],
            "https://didcomm.org/report-problem/2.0/problem-report"
        );
        assert_eq!(v2["body"]["code"], "e.p.msg.validity_too_long");
        assert_eq!(
            (v2["thid"].as_str(), v2["pthid"].as_str()),
            (Some("t"), Some("t"))
        );
        assert_eq!(v2["body"]["problem_items"][0]["max_validity_seconds"], 60);
        let plain = Problem::new(Code::InvalidUrl, "x").report(Version::V2, "r", "t");
        assert!(plain["body"].get("problem_items").is_none());
    }
}
