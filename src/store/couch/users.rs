//! Issue 35: an API key's user on CouchDB. The users are CouchDB accounts
//! in `_users`, which only server admins may read by default; `qrtag setup`
//! (run as one) opens it just enough for the members of the API keys
//! database (`setup::KEY_ROLES`): `_users`' `_security` admits them (for
//! which CouchDB needs `[couchdb] users_db_security_editable = true`), and
//! `[chttpd_auth] public_fields` holds `name, roles`, so they read each
//! account's name and roles and never its password hash. Then every REST
//! request reads its key's user ([`key_owner`]): a lowered role holds from
//! the next request, on every node, with no cache.
//!
//! CouchDB answers 404 both for a user that does not exist and for one
//! whose public fields are not set, so a 404 means "removed" only once
//! setup has recorded ([`MARK`], in the links database's `_design/qrtag`,
//! which only admins write) that it opened the roles.

use reqwest::Method;
use serde_json::Value;

use super::CouchHttp;
use crate::store::{KeyOwner, StoreError};
use crate::values::api_key::LEGACY_OWNER;
use crate::values::role::Role;

/// The field of the links database's `_design/qrtag` that says setup made
/// the users' roles readable.
pub(crate) const MARK: &str = "key_owner_roles";

/// The users' fields setup makes public.
pub(crate) const PUBLIC_FIELDS: [&str; 2] = ["name", "roles"];

/// The user document's URL (also read by `setup`, for the roles of the
/// accounts a brand's databases are kept to).
pub(crate) fn user_url(http: &CouchHttp, name: &str) -> url::Url {
    let mut url = http.server().as_url().clone();
    if let Ok(mut path) = url.path_segments_mut() {
        path.clear()
            .push("_users")
            .push(&format!("org.couchdb.user:{name}"));
    }
    url
}

/// What CouchDB says of `name`: its role when its roles are readable;
/// [`KeyOwner::Gone`] when it does not exist and setup said they are;
/// otherwise [`KeyOwner::Unchecked`] (the key's scope alone decides, as
/// before setup ran, and on PouchDB Server). A key made without a user
/// (named [`LEGACY_OWNER`]) that no account of that name owns is unchecked.
pub(crate) async fn key_owner(http: &CouchHttp, name: &str) -> Result<KeyOwner, StoreError> {
    let resp = http
        .send(http.request(Method::GET, user_url(http, name)))
        .await?;
    match resp.status().as_u16() {
        200 => {
            let doc: Value = http.read_json(resp, "reading a key's user").await?;
            Ok(owner_of(&doc))
        }
        401 | 403 => Ok(KeyOwner::Unchecked),
        404 if name == LEGACY_OWNER => Ok(KeyOwner::Unchecked),
        404 if marked(http).await? => Ok(KeyOwner::Gone),
        404 => Ok(KeyOwner::Unchecked),
        // Once setup opened the roles, a user that cannot be read is not
        // let in (the API answers 503); before, it is the key's scope
        // (PouchDB Server answers a member's read of `_users` with a 500).
        _ if marked(http).await? => Err(http.refusal(resp, "reading a key's user").await),
        _ => Ok(KeyOwner::Unchecked),
    }
}

/// The role of a `_users` document as a member reads it; unchecked when
/// its roles are not among the fields shown.
fn owner_of(doc: &Value) -> KeyOwner {
    match doc.get("roles").and_then(Value::as_array) {
        Some(roles) => {
            let roles: Vec<&str> = roles.iter().filter_map(Value::as_str).collect();
            KeyOwner::Role(Role::from_couch_roles(&roles))
        }
        None => KeyOwner::Unchecked,
    }
}

/// Whether setup recorded that it opened the users' roles.
async fn marked(http: &CouchHttp) -> Result<bool, StoreError> {
    let resp = http
        .send(http.request(Method::GET, http.db_url(&["_design", "qrtag"])))
        .await?;
    match resp.status().as_u16() {
        200 => {
            let doc: Value = http.read_json(resp, "reading _design/qrtag").await?;
            Ok(doc.get(MARK) == Some(&Value::Bool(true)))
        }
        404 => Ok(false),
        _ => Err(http.refusal(resp, "reading _design/qrtag").await),
    }
}

/// `public_fields` with [`PUBLIC_FIELDS`] added to what is there (kept, in
/// its order); `None` when they are all there already.
pub(crate) fn with_public_fields(current: Option<&str>) -> Option<String> {
    let mut fields: Vec<String> = current
        .unwrap_or_default()
        .split(',')
        .map(str::trim)
        .filter(|f| !f.is_empty())
        .map(str::to_owned)
        .collect();
    let before = fields.len();
    for f in PUBLIC_FIELDS {
        if !fields.iter().any(|x| x == f) {
            fields.push(f.to_owned());
        }
    }
    (fields.len() != before).then(|| fields.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn public_fields_are_added_to_what_is_there() {
        assert_eq!(with_public_fields(None).as_deref(), Some("name, roles"));
        assert_eq!(
            with_public_fields(Some("email")).as_deref(),
            Some("email, name, roles")
        );
        assert_eq!(with_public_fields(Some("roles , name")), None);
    }

    #[test]
    fn the_roles_shown_decide() {
        assert_eq!(
            owner_of(&json!({"name": "ed", "roles": ["qrtag_editor"]})),
            KeyOwner::Role(Role::Editor)
        );
        assert_eq!(
            owner_of(&json!({"name": "vi", "roles": []})),
            KeyOwner::Role(Role::Viewer)
        );
        assert_eq!(owner_of(&json!({"name": "ed"})), KeyOwner::Unchecked);
    }
}
