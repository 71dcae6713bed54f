//! The API listener (`--api-listen`): `POST /didcomm`, and the REST API
//! under `/api/v1` ([`super::rest`]). DIDComm is a thin shell:
//! media type and bearer token, envelope ([`didcomm::envelope`]), message
//! ([`didcomm::message`]), then the pure decision ([`didcomm::protocol`])
//! and the store write it asks for, through [`links`].
//!
//! Whatever a client sends gets a 2xx or a 4xx with a one-line body; only an
//! unreachable store gives a 503.

use std::path::PathBuf;
use std::sync::Arc;

use actix_web::http::header::{self, HeaderMap};
use actix_web::{HttpRequest, HttpResponse, web};
use chrono::Utc;
use serde_json::Value;

use crate::didcomm::delivery::Delivery;
use crate::didcomm::envelope::{self, Opened};
use crate::didcomm::identity::ServiceIdentity;
use crate::didcomm::message::{self, Incoming, Version};
use crate::didcomm::problem::{Code, Problem};
use crate::didcomm::protocol::{self, Caller, Context, Policy, Refusal, Step};
use crate::didcomm::replay::{self, Seen};
use crate::link::Via;
use crate::links::{self, LinkError};
use crate::store::LinkStore;
use crate::store::couch::cluster::WriteWatch;
use crate::values::couch::Credentials;
use crate::values::public_url::PublicUrl;
use crate::values::secret::Secret;

/// The DIDComm listener (`POST /didcomm`) and its rules.
#[derive(Debug, Clone)]
pub struct ApiSettings {
    pub listen: String,
    /// Where agents reach the listener; its DID's endpoint is this plus
    /// `/didcomm`. Default: `http://` and the bound address.
    pub public_url: Option<PublicUrl>,
    /// Bearer token for plaintext messages; without one, only encrypted
    /// messages are accepted.
    pub token: Option<Secret>,
    pub key_file: PathBuf,
    pub policy: Policy,
    /// Deliver replies to loopback and private-range endpoints too
    /// (`didcomm::delivery`).
    pub allow_private_endpoints: bool,
    /// Requests a second per REST API key.
    pub rate_per_second: u32,
    /// Requests answered 401 a second per client address before it is
    /// answered 429 (`rest::strangers`); no flag sets it, tests raise it.
    pub strangers_per_second: u32,
    /// With CouchDB, the account the listener writes links with (DIDComm
    /// and the REST API) and reads API keys with: an editor, while the
    /// store's own account, which follows the links, can stay a reader.
    /// `None`: the store's account does both.
    pub couch_writer: Option<Credentials>,
}

impl ApiSettings {
    /// Whether DIDComm is on: a bearer token or a DID the policy lets in.
    /// Without either `POST /didcomm` refuses every message and no reply is
    /// ever delivered; the listener then serves the REST API alone.
    pub fn didcomm_on(&self) -> bool {
        let p = &self.policy;
        self.token.is_some() || p.allow_any || !p.allow.is_empty() || !p.admins.is_empty()
    }

    pub fn new(listen: impl Into<String>, key_file: PathBuf) -> Self {
        Self {
            listen: listen.into(),
            public_url: None,
            token: None,
            key_file,
            policy: Policy {
                slugs: true,
                ..Default::default()
            },
            allow_private_endpoints: false,
            rate_per_second: super::rest::auth::RATE_PER_SECOND,
            strangers_per_second: super::rest::strangers::STRANGERS_PER_SECOND,
            couch_writer: None,
        }
    }
}

/// The most a message may weigh.
pub const MAX_BODY: usize = 64 * 1024;

pub const ENCRYPTED: &str = "application/didcomm-encrypted+json";
pub const PLAIN: &str = "application/didcomm-plain+json";
pub const JSON: &str = "application/json";
/// What Indicio's library writes as an envelope's `typ`, so what a client
/// built on it may well send as the media type too.
const ENCRYPTED_ALIAS: &str = "application/didcomm+encrypted";
/// What HTTP clients send for bytes when told nothing (aiohttp, fetch of a
/// `Uint8Array`); an envelope says what it is, so it is read as one.
const OCTET_STREAM: &str = "application/octet-stream";

/// How a body is read, by its media type and whether it is an envelope.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Reading {
    Encrypted,
    Plaintext,
    /// 415: a type the endpoint does not take.
    Unsupported,
}

/// An encrypted message carries its own proof of origin, so it is opened
/// under its own media types, `application/json`, a generic byte type or
/// none; plaintext needs one of its two. Any other type (`text/plain`, a
/// form) is a client that does not know what it sends: 415, naming ours.
fn reading(media: &str, is_jwe: bool) -> Reading {
    match media {
        ENCRYPTED | ENCRYPTED_ALIAS => Reading::Encrypted,
        PLAIN | JSON | OCTET_STREAM | "" if is_jwe => Reading::Encrypted,
        PLAIN | JSON => Reading::Plaintext,
        _ => Reading::Unsupported,
    }
}

pub struct ApiState {
    pub store: Arc<dyn LinkStore>,
    /// Issue 36: every domain's store and public URL, `store` and
    /// `public_url` being the default's.
    pub domains: web::Data<crate::server::rest::domain::RestDomains>,
    pub identity: ServiceIdentity,
    /// The current public URL ([`LiveUrl`]), read once per answer.
    pub public_url: crate::store::live_url::LiveUrl,
    pub token: Option<Secret>,
    pub policy: Policy,
    pub delivery: Delivery,
    /// Authcrypt message ids within their validity window.
    pub seen: Seen,
}

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.app_data(web::PayloadConfig::new(MAX_BODY))
        .route("/didcomm", web::post().to(didcomm))
        .service(web::scope("/api/v1").configure(super::rest::routes))
        .default_service(web::to(not_found));
}

async fn not_found() -> HttpResponse {
    line(
        HttpResponse::NotFound(),
        "not found: DIDComm messages go to POST /didcomm, the REST API is under /api/v1",
    )
}

fn line(mut builder: actix_web::HttpResponseBuilder, msg: &str) -> HttpResponse {
    builder
        .content_type("text/plain; charset=utf-8")
        .body(format!("{msg}\n"))
}

fn bad_request(msg: impl std::fmt::Display) -> HttpResponse {
    line(HttpResponse::BadRequest(), &msg.to_string())
}

/// The media type without parameters, lowercased.
fn media_type(headers: &HeaderMap) -> Option<String> {
    let v = headers.get(header::CONTENT_TYPE)?.to_str().ok()?;
    Some(v.split(';').next()?.trim().to_ascii_lowercase())
}

/// Whether the request carries `Authorization: Bearer <token>`, compared
/// without an early exit on the first differing byte.
fn has_token(headers: &HeaderMap, token: Option<&Secret>) -> bool {
    let Some(token) = token else { return false };
    let Some(given) = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
    else {
        return false;
    };
    let (a, b) = (given.trim().as_bytes(), token.expose().as_bytes());
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

async fn didcomm(req: HttpRequest, body: web::Bytes, state: web::Data<ApiState>) -> HttpResponse {
    let media = media_type(req.headers()).unwrap_or_default();
    let text = std::str::from_utf8(&body).ok();
    let value = text.and_then(|t| serde_json::from_str::<Value>(t).ok());
    let is_jwe = value
        .as_ref()
        .is_some_and(|v| v.get("ciphertext").is_some() && v.get("recipients").is_some());
    let reading = reading(&media, is_jwe);
    if reading == Reading::Unsupported {
        return unsupported();
    }
    let (Some(text), Some(value)) = (text, value) else {
        return bad_request("the body is not JSON");
    };
    if reading == Reading::Encrypted {
        return encrypted(text, &state).await;
    }
    if !has_token(req.headers(), state.token.as_ref()) {
        return HttpResponse::Unauthorized()
            .insert_header((header::WWW_AUTHENTICATE, "Bearer"))
            .content_type("text/plain; charset=utf-8")
            .body(
                "plaintext DIDComm needs Authorization: Bearer with the service's API token; agents send authcrypt\n",
            );
    }
    let msg = match message::parse(&value) {
        Ok(m) => m,
        Err(e) => return bad_request(e),
    };
    let reply = match handle(&msg, &Caller::Token, &state).await {
        Ok(r) => r,
        Err(resp) => return resp,
    };
    // A plaintext caller has no DID to deliver to: the reply is always the
    // response body.
    let content_type = match msg.version {
        Version::V1 => JSON,
        Version::V2 => PLAIN,
    };
    HttpResponse::Ok()
        .content_type(content_type)
        .body(reply.to_string())
}

fn unsupported() -> HttpResponse {
    line(
        HttpResponse::UnsupportedMediaType(),
        "unsupported media type: send application/didcomm-encrypted+json (authcrypt), or with the API token application/didcomm-plain+json or application/json",
    )
}

async fn encrypted(text: &str, state: &ApiState) -> HttpResponse {
    let opened: Opened = match envelope::open(text, &state.identity) {
        Ok(o) => o,
        Err(e) => return bad_request(e),
    };
    let msg = match message::parse(&opened.message) {
        Ok(m) if m.version == Version::V2 => m,
        Ok(_) => {
            return bad_request(
                "an encrypted message must be DIDComm v2 (\"type\", \"id\", \"body\")",
            );
        }
        Err(e) => return bad_request(e),
    };
    let caller = Caller::Did(envelope::sender_did(&opened).clone());
    let reply = match handle(&msg, &caller, state).await {
        Ok(r) => r,
        Err(resp) => return resp,
    };
    let sealed =
        match envelope::seal_reply(&reply, &state.identity, &opened, Utc::now().timestamp()) {
            Ok(s) => s,
            Err(e) => {
                // Only a sender key we could decrypt from but not encrypt to.
                return bad_request(format!("cannot encrypt the reply to the sender: {e}"));
            }
        };
    // Only senders the operator allows are sent anything: a stranger's DID
    // must not make the server POST wherever it names; nor may an allowed
    // one make it POST into its own network.
    let may_deliver = state.policy.may_request(&caller);
    let refused = |endpoint: &str| {
        let why = state.delivery.refuses(endpoint);
        if let Some(why) = &why {
            tracing::warn!(%endpoint, reason = %why, "DIDComm reply not posted to a private endpoint (--didcomm-allow-private-endpoints allows it); sent as the response body");
        }
        why.is_some()
    };
    match (&opened.sender.endpoint, msg.return_route_all) {
        (Some(endpoint), false) if may_deliver && !refused(endpoint) => {
            state.delivery.send(endpoint.clone(), sealed);
            HttpResponse::Accepted().finish()
        }
        // Asked for, or nowhere (or no one we trust) to send it to.
        _ => HttpResponse::Ok().content_type(ENCRYPTED).body(sealed),
    }
}

/// Decides and performs one message; the reply to send (plaintext).
async fn handle(msg: &Incoming, caller: &Caller, state: &ApiState) -> Result<Value, HttpResponse> {
    let reply_id = uuid::Uuid::new_v4().to_string();
    // Issue 36: the domain the message acts on.
    let domain = match domain_of(msg, &state.domains) {
        Ok(domain) => domain,
        // A sender that may not request is refused as before, by `decide`.
        Err(_) if !state.policy.may_request(caller) => state.domains.default_state(),
        Err(asked) => {
            tracing::info!(caller = caller.recorded(), id = %msg.id, domain = %asked, "DIDComm request for an unknown domain");
            return Ok(Problem::new(
                Code::UnknownDomain,
                format!("no domain {asked} here: leave out domain for the default one"),
            )
            .report(msg.version, &reply_id, &msg.thid));
        }
    };
    let store = domain.store.as_ref();
    let unavailable = |e: &dyn std::fmt::Display| {
        tracing::warn!(error = %e, "DIDComm request could not reach the link store");
        line(
            HttpResponse::ServiceUnavailable(),
            "the link store is unavailable or refused the write; try again later",
        )
    };
    // One value for the whole message, even if the recorded one changes.
    let public_url = domain.public_url.get();
    let existing = match protocol::key_of_interest(msg, &public_url) {
        Some(key) => match store.get(&key).await {
            Ok(found) => found.map(|s| s.doc),
            Err(e) => return Err(unavailable(&e)),
        },
        None => None,
    };
    let now = Utc::now();
    // Authcrypt messages only: a plaintext one carries the token itself.
    // And only from senders that may act: a stranger's message is answered
    // `unauthorized` however often it comes, and must not fill the table.
    let tracked = match caller {
        Caller::Did(did) if state.policy.may_request(caller) => Some(did.as_str()),
        _ => None,
    };
    let until = replay::valid_until(msg.created_time, msg.expires_time, now.timestamp());
    let repeat = match tracked.map(|d| state.seen.first_time(d, &msg.id, until, now.timestamp())) {
        Some(Ok(first)) => !first,
        Some(Err(full)) => {
            tracing::warn!("{full}");
            return Err(line(HttpResponse::ServiceUnavailable(), &full.to_string()));
        }
        None => false,
    };
    // A message that was not acted on (refused, or the store was away) may
    // be sent again, corrected or as it was.
    let release = || {
        if !repeat && let Some(did) = tracked {
            state.seen.forget(did, &msg.id);
        }
    };
    let unavailable = |e: &dyn std::fmt::Display| {
        release();
        unavailable(e)
    };
    let ctx = Context {
        public_url: &public_url,
        now,
        policy: &state.policy,
        reply_id: &reply_id,
        service_did: state.identity.did(),
        repeat,
    };
    match protocol::decide(msg, caller, &ctx, existing.as_ref()) {
        Step::Refuse(refusal) => {
            tracing::info!(caller = caller.recorded(), id = %msg.id, reason = refusal.reason(), "DIDComm message refused");
            let status = match refusal {
                Refusal::Repeat => HttpResponse::Conflict(),
                Refusal::Expired | Refusal::NotForUs => {
                    release();
                    HttpResponse::BadRequest()
                }
            };
            Err(line(status, refusal.reason()))
        }
        Step::Reply(reply) => {
            tracing::info!(caller = caller.recorded(), thid = %msg.thid, "DIDComm request answered with a problem report");
            Ok(reply)
        }
        Step::Create(plan) => {
            let watch = WriteWatch::new(store);
            match links::create_document(
                store,
                &didcomm_author(caller),
                &plan.doc,
                plan.key.as_ref(),
            )
            .await
            {
                Ok(key) => {
                    tracing::info!(caller = caller.recorded(), %key, "DIDComm short URL created");
                    if let Some(warning) = watch.warning() {
                        tracing::warn!(%key, "{warning}");
                    }
                    Ok(plan.reply(&key, &public_url))
                }
                // A tombstone's key is taken for good.
                Err(LinkError::KeyTaken(_) | LinkError::Deleted { .. }) => Ok(plan.slug_taken()),
                Err(LinkError::TakesOver { parent, .. }) => Ok(plan.slug_unavailable(&parent)),
                Err(e) => Err(unavailable(&e)),
            }
        }
        Step::Invalidate(plan) => {
            let watch = WriteWatch::new(store);
            match links::update(store, &didcomm_author(caller), &plan.key, |d| plan.apply(d)).await
            {
                Ok(_) => {
                    tracing::info!(caller = caller.recorded(), key = %plan.key, "DIDComm short URL invalidated");
                    if let Some(warning) = watch.warning() {
                        tracing::warn!(key = %plan.key, "{warning}");
                    }
                    Ok(plan.ack)
                }
                Err(LinkError::NotFound(_) | LinkError::Deleted { .. }) => Ok(Problem::new(
                    Code::ShortUrlInvalid,
                    "no such short URL here, or it has expired or was invalidated already",
                )
                .report(msg.version, &reply_id, &msg.thid)),
                Err(e) => Err(unavailable(&e)),
            }
        }
    }
}

/// Issue 36: a request's `domain` (the default when absent; an unknown
/// one is `Err` with its name), or the domain an invalidation's short URL
/// is on (the default when it is on none, whose origin check refuses it).
fn domain_of<'a>(
    msg: &Incoming,
    domains: &'a crate::server::rest::domain::RestDomains,
) -> Result<&'a crate::server::rest::RestState, String> {
    let at = match &msg.kind {
        message::Kind::Request(r) => domains
            .domains
            .position(r.domain.as_deref())
            .map_err(|_| r.domain.clone().unwrap_or_default())?,
        message::Kind::Invalidate { shortened_url } => shortened_url
            .as_deref()
            .and_then(|u| url::Url::parse(u).ok())
            .and_then(|u| u.host_str().map(str::to_owned))
            .and_then(|host| domains.domains.position(Some(&host)).ok())
            .unwrap_or(0),
    };
    Ok(domains
        .states
        .get(at)
        .unwrap_or_else(|| domains.default_state()))
}

// Issue 35 (history): a DIDComm write's author.
/// The agent behind a DIDComm write, by the DID it sent from (`token` for
/// a plaintext request admitted by the operator's token).
fn didcomm_author(caller: &Caller) -> crate::link::Author {
    crate::link::Author::new(
        Via::Didcomm,
        crate::values::actor::Actor::Didcomm {
            did: caller.recorded().to_owned(),
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_envelope_is_read_under_the_types_clients_send_and_no_others() {
        for media in [ENCRYPTED, ENCRYPTED_ALIAS, JSON, PLAIN, OCTET_STREAM, ""] {
            assert_eq!(reading(media, true), Reading::Encrypted, "{media:?}");
        }
        assert_eq!(reading(ENCRYPTED, false), Reading::Encrypted, "then a 400");
        for media in [PLAIN, JSON] {
            assert_eq!(reading(media, false), Reading::Plaintext, "{media}");
        }
        for media in [
            "text/plain",
            "application/x-www-form-urlencoded",
            "application/xml",
        ] {
            for is_jwe in [true, false] {
                assert_eq!(reading(media, is_jwe), Reading::Unsupported, "{media}");
            }
        }
        assert_eq!(reading(OCTET_STREAM, false), Reading::Unsupported);
        assert_eq!(reading("", false), Reading::Unsupported);
    }

    #[test]
    fn bearer_tokens() {
        let mut h = HeaderMap::new();
        let secret = Secret::new("s3cret");
        assert!(!has_token(&h, Some(&secret)));
        h.insert(
            header::AUTHORIZATION,
            "Bearer s3cret".parse().expect("value"),
        );
        assert!(has_token(&h, Some(&secret)));
        assert!(!has_token(&h, None), "no token configured: nobody has it");
        h.insert(
            header::AUTHORIZATION,
            "Bearer s3cre".parse().expect("value"),
        );
        assert!(!has_token(&h, Some(&secret)));
        h.insert(
            header::AUTHORIZATION,
            "Basic s3cret".parse().expect("value"),
        );
        assert!(!has_token(&h, Some(&secret)));
    }
}
