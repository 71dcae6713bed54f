//! The url-shortener's decisions, pure: from (message, sender, now, the
//! stored document the message concerns) to a reply or a store write plus
//! the reply that follows it. No I/O; the HTTP handler does the reading and
//! writing (`src/server/api.rs`).
//!
//! Every reply's `thid` (v1 `~thread.thid`) is the request's own id, as the
//! RFC requires; the link document records the request's thread (its
//! `thid`, or its id when it starts one).

use chrono::{DateTime, SecondsFormat, Utc};
use serde_json::{Value, json};

use super::did::Did;
use super::message::{Incoming, Kind, PIURI, Request, SHORTENED, Version};
use super::problem::{Code, Problem};
use crate::link::{Document, Link};
use crate::values::destination::{Destination, InvalidDestination};
use crate::values::link_key::LinkKey;
use crate::values::public_url::PublicUrl;

/// Who sent the message, as far as the transport proved it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Caller {
    /// A plaintext message with the right bearer token.
    Token,
    /// The authenticated sender of an authcrypt message.
    Did(Did),
}

impl Caller {
    /// How the caller is recorded in `created_by` / `invalidated_by`.
    pub fn recorded(&self) -> &str {
        match self {
            Caller::Token => "token",
            Caller::Did(d) => d.as_str(),
        }
    }
}

/// The operator's rules for DIDComm requests.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Policy {
    /// Validity when a request names none; 0 is none.
    pub default_validity: u64,
    /// The longest validity granted; `None` is no limit (and 0 allowed).
    pub max_validity: Option<u64>,
    pub slugs: bool,
    pub allow: Vec<Did>,
    pub allow_any: bool,
    pub admins: Vec<Did>,
}

impl Policy {
    /// Whether `caller` may request short URLs (and so be sent replies).
    pub fn may_request(&self, caller: &Caller) -> bool {
        match caller {
            Caller::Token => true,
            Caller::Did(d) => self.allow_any || self.allow.contains(d) || self.admins.contains(d),
        }
    }

    fn is_admin(&self, caller: &Caller) -> bool {
        matches!(caller, Caller::Did(d) if self.admins.contains(d))
    }
}

/// Everything else a decision depends on.
pub struct Context<'a> {
    pub public_url: &'a PublicUrl,
    pub now: DateTime<Utc>,
    pub policy: &'a Policy,
    /// The id the reply will carry.
    pub reply_id: &'a str,
    /// The service's own DID: a message whose `to` names others is not ours.
    pub service_did: &'a Did,
    /// Whether this sender's message with this id was accepted before and
    /// is still within its validity window ([`super::replay`]).
    pub repeat: bool,
}

/// Why a message is refused without an answer in the protocol: the
/// transport says no (a 4xx with one line), nothing is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// Its `expires_time` has passed, or it was created longer ago than
    /// [`super::replay::WINDOW`] (or further ahead than the clock skew).
    Expired,
    /// Its `to` does not name the service's DID.
    NotForUs,
    /// The same sender's message with the same id was accepted already.
    Repeat,
}

impl Refusal {
    pub fn reason(self) -> &'static str {
        match self {
            Refusal::Expired => {
                "the message has expired (its expires_time has passed, or its created_time is over an hour away)"
            }
            Refusal::NotForUs => "the message's \"to\" does not name this service's DID",
            Refusal::Repeat => "a message with this id was already accepted from this sender",
        }
    }
}

/// Whether `msg` may be acted on at all at `now`: addressed to `service`,
/// within its validity window, not a repeat.
fn admissible(msg: &Incoming, ctx: &Context) -> Result<(), Refusal> {
    if let Some(to) = &msg.to
        && !to.iter().any(|r| {
            r.split_once('#').map_or(r.as_str(), |(did, _)| did) == ctx.service_did.as_str()
        })
    {
        return Err(Refusal::NotForUs);
    }
    let now = ctx.now.timestamp();
    let expired = msg.expires_time.is_some_and(|e| e <= now)
        || msg.created_time.is_some_and(|c| {
            c < now.saturating_sub(super::replay::WINDOW)
                || c > now.saturating_add(super::replay::SKEW)
        });
    if expired {
        return Err(Refusal::Expired);
    }
    if ctx.repeat {
        return Err(Refusal::Repeat);
    }
    Ok(())
}

/// What to do about a message.
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    /// Refuse it at the transport; write nothing.
    Refuse(Refusal),
    /// Answer with this message; write nothing.
    Reply(Value),
    Create(CreatePlan),
    Invalidate(InvalidatePlan),
}

/// A link to create; the reply depends on the key the store accepts.
#[derive(Debug, Clone, PartialEq)]
pub struct CreatePlan {
    /// The requested slug; `None` for a random key.
    pub key: Option<LinkKey>,
    pub doc: Document,
    version: Version,
    thid: String,
    reply_id: String,
    expires_time: Option<i64>,
    /// For `shorten.oobv2`: the `_oobid` the short URL carries.
    oobid: Option<String>,
}

impl CreatePlan {
    /// The `shortened-url` message once the link exists under `key`.
    pub fn reply(&self, key: &LinkKey, public_url: &PublicUrl) -> Value {
        let mut short = public_url.short_url(key.as_str());
        if let Some(oobid) = &self.oobid {
            short.push_str("?_oobid=");
            short.extend(form_urlencoded::byte_serialize(oobid.as_bytes()));
        }
        let typ = format!("{PIURI}{SHORTENED}");
        match self.version {
            Version::V1 => {
                let mut m = json!({
                    "@type": typ,
                    "@id": self.reply_id,
                    "~thread": {"thid": self.thid},
                    "shortened_url": short,
                });
                if let Some(t) = self.expires_time {
                    m["expires_time"] = json!(t);
                }
                m
            }
            Version::V2 => {
                let mut body = json!({"shortened_url": short});
                if let Some(t) = self.expires_time {
                    body["expires_time"] = json!(t);
                }
                json!({"type": typ, "id": self.reply_id, "thid": self.thid, "body": body})
            }
        }
    }

    /// The answer when the slug was taken between the check and the write.
    pub fn slug_taken(&self) -> Value {
        Problem::new(Code::InvalidSlug, "the slug is already taken").report(
            self.version,
            &self.reply_id,
            &self.thid,
        )
    }

    /// The answer when the slug would take over the URLs of the existing
    /// link `parent` (the store tells, [`crate::links::taken_parent`]).
    pub fn slug_unavailable(&self, parent: &LinkKey) -> Value {
        Problem::new(
            Code::SlugUnavailable,
            format!(
                "the slug would change where URLs under the existing short URL {parent} lead; choose a slug outside {parent}/"
            ),
        )
        .report(self.version, &self.reply_id, &self.thid)
    }
}

/// A link to invalidate, and the ack to send once it is.
#[derive(Debug, Clone, PartialEq)]
pub struct InvalidatePlan {
    pub key: LinkKey,
    pub by: String,
    pub at: DateTime<Utc>,
    pub ack: Value,
}

impl InvalidatePlan {
    /// The edit: inactive for good, with when and by whom.
    pub fn apply(&self, doc: &mut Document) {
        crate::link::set_inactive(doc, true);
        doc.insert(
            "invalidated_at".into(),
            Value::String(self.at.to_rfc3339_opts(SecondsFormat::Secs, true)),
        );
        doc.insert("invalidated_by".into(), Value::String(self.by.clone()));
    }
}

/// The key whose stored document [`decide`] needs: a requested slug, or the
/// link an invalidation names.
pub fn key_of_interest(msg: &Incoming, public_url: &PublicUrl) -> Option<LinkKey> {
    match &msg.kind {
        Kind::Request(r) => r
            .short_url_slug
            .as_deref()
            .and_then(|s| LinkKey::parse(s).ok()),
        Kind::Invalidate { shortened_url } => shortened_url
            .as_deref()
            .and_then(|u| key_of_short_url(u, public_url)),
    }
}

/// `PUBLIC_URL/KEY` (any query or fragment ignored) → KEY.
fn key_of_short_url(short: &str, public_url: &PublicUrl) -> Option<LinkKey> {
    let u = url::Url::parse(short).ok()?;
    if u.origin().ascii_serialization() != public_url.origin() {
        return None;
    }
    LinkKey::parse(u.path().strip_prefix('/')?).ok()
}

/// Decides what `msg` from `caller` asks for. `existing` is the stored
/// document under [`key_of_interest`] (`None` when there is none or no key).
pub fn decide(msg: &Incoming, caller: &Caller, ctx: &Context, existing: Option<&Document>) -> Step {
    if let Err(refusal) = admissible(msg, ctx) {
        return Step::Refuse(refusal);
    }
    let result = match &msg.kind {
        Kind::Request(r) => request(msg, r, caller, ctx, existing),
        Kind::Invalidate { shortened_url } => {
            invalidate(msg, shortened_url.as_deref(), caller, ctx, existing)
        }
    };
    result.unwrap_or_else(|p| Step::Reply(p.report(msg.version, ctx.reply_id, &msg.id)))
}

fn request(
    msg: &Incoming,
    r: &Request,
    caller: &Caller,
    ctx: &Context,
    existing: Option<&Document>,
) -> Result<Step, Problem> {
    if !ctx.policy.may_request(caller) {
        return Err(Problem::new(
            Code::Unauthorized,
            "this sender may not request short URLs here; ask the operator to allow its DID",
        ));
    }
    let goal = r.goal_code.as_deref().unwrap_or_default();
    if !matches!(goal, "shorten" | "shorten.oobv1" | "shorten.oobv2") {
        return Err(Problem::new(
            Code::InvalidGoalCode,
            "supported goal codes: shorten, shorten.oobv1, shorten.oobv2",
        ));
    }
    let raw = r
        .url
        .as_deref()
        .ok_or_else(|| Problem::new(Code::InvalidUrl, "\"url\" is missing"))?;
    let parsed = url::Url::parse(raw)
        .map_err(|_| Problem::new(Code::InvalidUrl, "\"url\" is not an absolute URL"))?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(Problem::new(
            Code::InvalidProtocolScheme,
            format!(
                "only http and https URLs are shortened, not {}:",
                parsed.scheme()
            ),
        ));
    }
    let dest = match Destination::parse(raw) {
        // Said as such: shortening it is refused for its length alone.
        Err(e @ InvalidDestination::TooLong(_)) => {
            return Err(Problem::new(Code::InvalidUrl, format!("\"url\": {e}")));
        }
        parsed => parsed
            .ok()
            .filter(|d| !d.is_internal())
            .ok_or_else(|| Problem::new(Code::InvalidUrl, "\"url\" is not a usable http(s) URL"))?,
    };
    let param = |name: &str| {
        parsed
            .query_pairs()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.into_owned())
    };
    let oobid = match goal {
        "shorten.oobv1" if param("oob").is_none() => {
            return Err(Problem::new(
                Code::InvalidUrl,
                "goal shorten.oobv1 needs a URL with an \"oob\" query parameter",
            ));
        }
        "shorten.oobv2" => {
            let oob = param("_oob").ok_or_else(|| {
                Problem::new(
                    Code::InvalidUrl,
                    "goal shorten.oobv2 needs a URL with an \"_oob\" query parameter",
                )
            })?;
            Some(
                super::oob::decode(&oob)
                    .and_then(|inv| inv.get("id").and_then(Value::as_str).map(str::to_owned)),
            )
        }
        _ => None,
    };

    let validity = match (r.requested_validity_seconds, ctx.policy.max_validity) {
        (Some(n), Some(max)) if n == 0 || n > max => {
            let mut p = Problem::new(
                Code::ValidityTooLong,
                format!("the longest validity granted here is {max} seconds"),
            );
            p.max_validity_seconds = Some(max);
            return Err(p);
        }
        (Some(n), _) => n,
        (None, Some(max)) if ctx.policy.default_validity == 0 => max,
        (None, Some(max)) => ctx.policy.default_validity.min(max),
        (None, None) => ctx.policy.default_validity,
    };

    let key = match &r.short_url_slug {
        None => None,
        Some(_) if !ctx.policy.slugs => {
            return Err(Problem::new(
                Code::SlugsNotSupported,
                "this shortener chooses every key itself; send no short_url_slug",
            ));
        }
        Some(slug) => {
            let key = LinkKey::parse(slug).map_err(|_| {
                Problem::new(
                    Code::InvalidSlug,
                    "a slug is 1 to 64 characters of A-Z a-z 0-9 _ -, optionally several joined by /, not starting with _, at most 256 in all",
                )
            })?;
            if existing.is_some() {
                return Err(Problem::new(Code::InvalidSlug, "the slug is already taken"));
            }
            Some(key)
        }
    };

    let expires = (validity > 0)
        .then(|| i64::try_from(validity).ok())
        .flatten()
        .and_then(|v| {
            ctx.now
                .checked_add_signed(chrono::TimeDelta::try_seconds(v)?)
        });
    if validity > 0 && expires.is_none() {
        return Err(Problem::new(
            Code::ValidityTooLong,
            "that validity is beyond any calendar",
        ));
    }
    let mut doc = Link::new_document(&dest, false);
    crate::link::set_expires(&mut doc, expires);
    doc.insert(
        "created_by".into(),
        Value::String(caller.recorded().to_owned()),
    );
    doc.insert(
        "created_at".into(),
        Value::String(ctx.now.to_rfc3339_opts(SecondsFormat::Secs, true)),
    );
    doc.insert("goal_code".into(), Value::String(goal.to_owned()));
    doc.insert("thid".into(), Value::String(msg.thid.clone()));
    Ok(Step::Create(CreatePlan {
        key,
        doc,
        version: msg.version,
        thid: msg.id.clone(),
        reply_id: ctx.reply_id.to_owned(),
        expires_time: expires.map(|e| e.timestamp()),
        oobid: oobid.map(|id| id.unwrap_or_else(|| msg.id.clone())),
    }))
}

fn invalidate(
    msg: &Incoming,
    shortened_url: Option<&str>,
    caller: &Caller,
    ctx: &Context,
    existing: Option<&Document>,
) -> Result<Step, Problem> {
    let invalid = || {
        Problem::new(
            Code::ShortUrlInvalid,
            "no such short URL here, or it has expired or was invalidated already",
        )
    };
    let key = shortened_url
        .and_then(|u| key_of_short_url(u, ctx.public_url))
        .ok_or_else(invalid)?;
    let doc = existing.ok_or_else(invalid)?;
    let live = Link::from_document(doc).is_ok_and(|l| l.is_live_at(ctx.now));
    if !live {
        return Err(invalid());
    }
    let owner = doc.get("created_by").and_then(Value::as_str);
    if owner != Some(caller.recorded()) && !ctx.policy.is_admin(caller) {
        return Err(Problem::new(
            Code::RejectedInvalidation,
            "only the sender that created this short URL, or an administrator DID, may invalidate it",
        ));
    }
    let ack = match msg.version {
        Version::V1 => json!({
            "@type": "https://didcomm.org/notification/1.0/ack",
            "@id": ctx.reply_id,
            "status": "OK",
            "~thread": {"thid": msg.id},
        }),
        Version::V2 => json!({
            "type": "https://didcomm.org/empty/1.0/empty",
            "id": ctx.reply_id,
            "thid": msg.id,
            "ack": [msg.id],
            "body": {},
        }),
    };
    Ok(Step::Invalidate(InvalidatePlan {
        key,
        by: caller.recorded().to_owned(),
        at: ctx.now,
        ack,
    }))
}

#[cfg(test)]
mod tests;
