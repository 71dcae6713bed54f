//! The domain a REST request acts on (issue 36): `?domain=HOST` on every
//! path, reads and writes alike, the default domain when left out. A
//! query parameter rather than a body field, so one rule covers the
//! reads, the writes and the images, and a client names the domain the
//! same way on each.
//!
//! Each domain has its own [`RestState`] (its store, snapshot, key order,
//! scan counts and public URL); the rate limits and the API keys are the
//! service's, shared by all. An unknown domain is a 400 problem naming
//! it, given only to a caller whose key is good, so a stranger learns no
//! domain from the answer.

use std::sync::Arc;

use actix_web::dev::Payload;
use actix_web::{FromRequest, HttpRequest, HttpResponse, web};
use serde_json::{Value, json};

use super::RestState;
use super::problem::{self, Kind};
use crate::console::domains::Domains;

/// Every domain's REST state, in [`Domains`]'s order (the default first).
pub struct RestDomains {
    pub domains: Arc<Domains>,
    pub states: Vec<web::Data<RestState>>,
}

impl RestDomains {
    pub fn default_state(&self) -> &web::Data<RestState> {
        &self.states[0]
    }

    /// The state of the domain the query names, or the default's.
    fn pick(&self, req: &HttpRequest) -> Result<&web::Data<RestState>, String> {
        let asked = form_urlencoded::parse(req.query_string().as_bytes())
            .find(|(name, _)| name == "domain")
            .map(|(_, value)| value.into_owned());
        let at = self
            .domains
            .position(asked.as_deref())
            .map_err(|e| e.to_string())?;
        self.states
            .get(at)
            .ok_or_else(|| "no such domain".to_owned())
    }
}

/// A handler's state: the domain's the request names.
#[derive(Clone)]
pub struct InDomain(web::Data<RestState>);

impl InDomain {
    pub fn into_inner(self) -> Arc<RestState> {
        self.0.into_inner()
    }
}

impl std::ops::Deref for InDomain {
    type Target = RestState;

    fn deref(&self) -> &RestState {
        &self.0
    }
}

impl FromRequest for InDomain {
    type Error = actix_web::Error;
    type Future = std::future::Ready<Result<Self, Self::Error>>;

    /// An unknown domain is the default's state here, refused by
    /// [`refuse_unknown`] once the key is checked: a stranger learns no
    /// domain, and a method the path does not take is still its 405.
    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        std::future::ready(match req.app_data::<web::Data<RestDomains>>() {
            Some(all) => Ok(InDomain(
                all.pick(req)
                    .unwrap_or_else(|_| all.default_state())
                    .clone(),
            )),
            None => Err(actix_web::error::ErrorInternalServerError(
                "the REST API has no domains",
            )),
        })
    }
}

/// The 400 problem for a domain the server does not serve, naming it
/// ([`super::admit`] asks, after the key).
pub fn refuse_unknown(req: &HttpRequest) -> Result<(), HttpResponse> {
    match req.app_data::<web::Data<RestDomains>>() {
        Some(all) => all
            .pick(req)
            .map(drop)
            .map_err(|unknown| problem::respond(Kind::BadRequest, format!("domain: {unknown}"))),
        None => Ok(()),
    }
}

/// The `domain` parameter every operation takes, as the document states it.
pub const DESCRIPTION: &str = "The domain (host) the request acts on, one of the server's `[[domains]]`; the default domain when left out. A domain the server does not serve is a 400 naming it.";

/// Declares `domain` on every operation but the document's own, and the
/// 400 an unknown one is answered with where an operation had none.
pub fn add_to(doc: &mut Value) {
    let Some(paths) = doc.get_mut("paths").and_then(Value::as_object_mut) else {
        return;
    };
    for (_, ops) in paths
        .iter_mut()
        .filter(|(path, _)| !path.ends_with("/openapi.json"))
    {
        let Some(ops) = ops.as_object_mut() else {
            continue;
        };
        for op in ops.values_mut().filter_map(Value::as_object_mut) {
            let params = op
                .entry("parameters")
                .or_insert_with(|| json!([]))
                .as_array_mut();
            if let Some(params) = params {
                // A query type's own `domain` field gives way to this one.
                params.retain(|p| p["name"] != "domain");
                params.push(json!({
                    "name": "domain",
                    "in": "query",
                    "description": DESCRIPTION,
                    "required": false,
                    "schema": {"type": "string", "minLength": 1, "maxLength": 253},
                    "example": "go.example.com",
                }));
            }
            if let Some(responses) = op.get_mut("responses").and_then(Value::as_object_mut)
                && !responses.contains_key("400")
            {
                responses.insert(
                    "400".into(),
                    json!({
                        "description": "",
                        "content": {"application/problem+json": {
                            "schema": {"$ref": "#/components/schemas/Problem"}
                        }}
                    }),
                );
            }
        }
    }
}
