//! Who is asking: the bearer key, read from the store on every request (no
//! cache, so a revocation on any node holds from the next request on every
//! node), and the per-key rate limit.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Instant;

use actix_web::HttpResponse;
use actix_web::http::header::{self, HeaderMap, HeaderValue};

use super::problem::{self, Kind};
use crate::store::{KeyOwner, LinkStore};
use crate::values::api_key::{Presented, Scope};
use crate::values::role::Role;

/// The key a request acts with.
#[derive(Debug, Clone)]
pub struct Caller {
    pub id: String,
    pub scope: Scope,
    /// Issue 35 (i35-users): the user the key belongs to (`KeyRecord::owner`),
    /// for `Actor::ApiKey { key, user }`.
    pub user: String,
    /// What the request may do (issue 35): the lower of [`scope_role`] of
    /// the key's scope and its user's current role.
    pub role: Role,
}

/// The role a key's scope gives (issue 35): a read key is a viewer's, a
/// write key an editor's, before its owner's role lowers it in [`caller`].
pub fn scope_role(scope: Scope) -> Role {
    match scope {
        Scope::Read => Role::Viewer,
        Scope::Write => Role::Editor,
    }
}

/// Checks `Authorization: Bearer qrt_…`: 401 for no key, an unknown or a
/// revoked one, 403 for a key whose role is below `need`, the operation's
/// ([`super::needs`]).
pub async fn caller(
    headers: &HeaderMap,
    store: &dyn LinkStore,
    need: Role,
) -> Result<Caller, HttpResponse> {
    let given = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::trim);
    let Some(given) = given else {
        return Err(problem::respond(
            Kind::Unauthorized,
            "send an API key as Authorization: Bearer KEY (qrtag api-key create)",
        ));
    };
    let Some(presented) = Presented::parse(given) else {
        return Err(problem::respond(Kind::Unauthorized, "no such API key"));
    };
    let record = match store.api_key(&presented.id).await {
        Ok(Some(record)) => record,
        Ok(None) => return Err(problem::respond(Kind::Unauthorized, "no such API key")),
        Err(e) => {
            tracing::warn!(error = %e, "API key could not be read");
            return Err(problem::respond(
                Kind::Unavailable,
                "the API keys could not be read; try again later",
            ));
        }
    };
    let scope = record
        .admit(&presented)
        .map_err(|e| problem::respond(Kind::Unauthorized, e))?;
    // Issue 35 (i35-users): the key's user, read after the key on every
    // request: removed is a 401 at once, and the key's role is at most theirs.
    let user = record.owner().to_owned();
    let role = match store.key_owner(&user).await {
        Ok(KeyOwner::Role(theirs)) => scope_role(scope).min(theirs),
        Ok(KeyOwner::Unchecked) => scope_role(scope),
        Ok(KeyOwner::Gone) => {
            return Err(problem::respond(
                Kind::Unauthorized,
                format!("the API key's user {user} was removed"),
            ));
        }
        Err(e) => {
            tracing::warn!(error = %e, "an API key's user could not be read");
            return Err(problem::respond(
                Kind::Unavailable,
                "the API keys could not be read; try again later",
            ));
        }
    };
    if role < need {
        return Err(problem::respond(
            Kind::Forbidden,
            format!(
                "API key {} ({} scope, the {role} role) may not do this: it needs the {need} role",
                record.id,
                scope.name()
            ),
        ));
    }
    Ok(Caller {
        id: record.id,
        scope,
        user,
        role,
    })
}

/// Requests per key per second, in a fixed one-second window.
pub const RATE_PER_SECOND: u32 = 100;

/// Counts each key's requests in the current second. Only the current
/// second's counts are kept, so the table holds at most the keys seen in
/// one second.
pub struct RateLimiter {
    started: Instant,
    per_second: u32,
    window: Mutex<(u64, HashMap<String, u32>)>,
}

impl RateLimiter {
    pub fn new(per_second: u32) -> Self {
        Self {
            started: Instant::now(),
            per_second,
            window: Mutex::new((0, HashMap::new())),
        }
    }

    /// Counts a request of `key`; 429 with `Retry-After` past the limit.
    pub fn admit(&self, key: &str) -> Result<(), HttpResponse> {
        let second = self.started.elapsed().as_secs();
        let over = {
            let mut window = self.window.lock().unwrap_or_else(|p| p.into_inner());
            count(&mut window, second, key) > self.per_second
        };
        if !over {
            return Ok(());
        }
        let mut res = problem::respond(
            Kind::RateLimited,
            format!(
                "more than {} requests in a second with this key",
                self.per_second
            ),
        );
        res.headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
        Err(res)
    }
}

/// The count of `key` in `second` after this request (pure but for the map).
fn count(window: &mut (u64, HashMap<String, u32>), second: u64, key: &str) -> u32 {
    if window.0 != second {
        *window = (second, HashMap::new());
    }
    let n = window.1.entry(key.to_owned()).or_insert(0);
    *n = n.saturating_add(1);
    *n
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_restart_each_second_and_per_key() {
        let mut w = (0, HashMap::new());
        assert_eq!(count(&mut w, 0, "a"), 1);
        assert_eq!(count(&mut w, 0, "a"), 2);
        assert_eq!(count(&mut w, 0, "b"), 1);
        assert_eq!(count(&mut w, 1, "a"), 1);
        assert_eq!(w.1.len(), 1, "the old second's keys are dropped");
    }
}
