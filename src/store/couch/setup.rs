//! `qrtag setup`: makes a CouchDB database ready to hold links.
//!
//! Idempotent, so it can run on every deploy: it creates only what is
//! missing, rewrites the validation only when it differs, and adds the two
//! qrtag roles to `_security` without removing anyone else's access.
//!
//! Access model: CouchDB lets every member of a database write to it unless a
//! `validate_doc_update` function refuses, so qrtag's roles are made members
//! and the function refuses writes from anyone who is neither an admin nor a
//! `qrtag_editor` or `qrtag_admin`, and a delete (a tombstone) from anyone
//! but an admin or a `qrtag_admin` (issue 35). The service itself follows the links with a
//! `qrtag_reader` account, and writes (the API listener) with an editor one.
//!
//! `qrtag import --new-database` ([`NewDatabase`]) takes the same steps
//! after its writes: it creates the database itself, locked to server
//! admins, writes every document with no validation function installed
//! (CouchDB spends most of a write's CPU calling one), and only then
//! installs the validation and opens the database to qrtag's roles.
//!
//! The REST API's keys live in a second database, `LINKS-keys`
//! ([`super::couch_keys`]): only the editor and qrtag admin roles are
//! members there, so a
//! reader can neither read nor write a key, and its own validation lets an
//! editor create and revoke keys but never change or un-revoke one.

use reqwest::Method;
use serde_json::{Map, Value, json};

use super::CouchHttp;
use crate::store::StoreError;
use crate::store::options::CouchSettings;
use crate::values::couch::CouchDbName;

/// The role of the account `qrtag serve` reads with.
pub const READER_ROLE: &str = "qrtag_reader";
/// The role that may create and edit links (besides admins).
pub const EDITOR_ROLE: &str = "qrtag_editor";
/// The design document that carries the validation.
pub const DESIGN_ID: &str = "_design/qrtag";
/// The validation function, kept as a JavaScript file so it can be read and
/// linted as what it is.
pub const VALIDATE_DOC_UPDATE: &str =
    include_str!("../../../assets/couchdb/validate_doc_update.js");
/// The API keys database's validation (the same design document ID there).
pub const VALIDATE_API_KEY: &str = include_str!("../../../assets/couchdb/validate_api_key.js");
/// The map function of the `links` view of `_design/qrtag`: every link's
/// document as the full load reads it (everything but `_id` and `_rev`), so
/// a new node reads a prebuilt index instead of opening each document
/// ([`super::couch_load`]). One line, as installed: the load trusts the
/// view only when its function is exactly this text. Values pass through
/// JavaScript, so a number past 2^53 would read rounded; no field qrtag
/// reads is one (times are RFC 3339 strings).
pub const LINKS_VIEW_MAP: &str =
    include_str!("../../../assets/couchdb/links_view.js").trim_ascii_end();
/// The view's name in `_design/qrtag`.
pub const LINKS_VIEW: &str = "links";
/// Issue 35: the console's viewers (any role but these two is a viewer;
/// this one is made a member so a viewer can read).
pub const VIEWER_ROLE: &str = "qrtag_viewer";
/// Issue 35: qrtag's admins, who also delete links (the validation's
/// `ADMIN_ROLE`), the first of the roles the console maps to admin.
pub const ADMIN_ROLE_NAME: &str = crate::values::role::COUCH_ADMIN_ROLES[0];
/// The members of the links database: the service reads, editors write;
/// viewers read and admins also delete (issue 35).
pub const LINK_ROLES: [&str; 4] = [READER_ROLE, EDITOR_ROLE, VIEWER_ROLE, ADMIN_ROLE_NAME];
/// The members of the API keys database: editors and qrtag admins (issue
/// 35: `qrtag api-key` is an admin's task too), never the reader.
pub const KEY_ROLES: [&str; 2] = [EDITOR_ROLE, ADMIN_ROLE_NAME];

// Issue 35: the audit log's database (`super::audit`).
/// The audit database's validation: append-only, for everyone.
pub const VALIDATE_AUDIT: &str = include_str!("../../../assets/couchdb/validate_audit.js");
/// Issue 35: the history database's validation: append-only, for everyone.
pub const VALIDATE_HISTORY: &str = include_str!("../../../assets/couchdb/validate_history.js");
/// The role CouchDB users administering qrtag have (`values::role`).
pub const ADMIN_QRTAG_ROLE: &str = "qrtag_admin";
/// The members of the audit database: the service's reader (a failed
/// login is recorded with it), editors and qrtag admins.
pub const AUDIT_ROLES: [&str; 3] = [READER_ROLE, EDITOR_ROLE, ADMIN_QRTAG_ROLE];

/// How many times the design document is re-read after a conflicting write.
const ATTEMPTS: usize = 5;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Created,
    Updated,
    Unchanged,
}

impl std::fmt::Display for Outcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Created => "created",
            Self::Updated => "updated",
            Self::Unchanged => "unchanged",
        })
    }
}

/// What `setup` did to each part.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SetupReport {
    pub database: Outcome,
    pub design: Outcome,
    /// A public URL found where any member could write it, moved into the
    /// design document ([`super::couch_public_url::move_legacy`]).
    pub public_url_moved: Option<String>,
    pub security: Outcome,
    /// The API keys database (`LINKS-keys`), its validation and `_security`.
    pub keys: PartReport,
    /// Issue 35: the audit database (`LINKS-audit`), the same three.
    pub audit: PartReport,
    /// Issue 35: the links' history database (`LINKS-history`).
    pub history: PartReport,
    /// Issue 35: `_users` opened to the API keys' members (names and roles).
    pub users: UsersReport,
    /// The database's copies and shards, where the server says (Apache
    /// CouchDB does; PouchDB Server has no cluster).
    pub placement: Option<Placement>,
    /// Nodes the cluster is configured with (`_membership`), where the
    /// account may read it.
    pub cluster_nodes: Option<usize>,
}

/// Issue 35: what `setup` did so the API keys' members read each CouchDB
/// user's name and roles (`super::users`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UsersReport {
    Done(Outcome),
    /// This server would not (PouchDB Server has no `_node/…/_config`):
    /// why. An API key's user is then not checked.
    Skipped(String),
}

/// What `setup` did to one more database.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartReport {
    pub name: String,
    pub database: Outcome,
    pub design: Outcome,
    pub security: Outcome,
}

/// How CouchDB spreads a database: `n` copies of each of `q` shards.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Placement {
    pub n: u32,
    pub q: u32,
}

/// What the person running `setup` asked for (`--replicas`, `--shards`);
/// CouchDB's defaults (`[cluster] n` and `q`) for what they did not.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Requested {
    pub n: Option<u32>,
    pub q: Option<u32>,
}

impl Requested {
    /// The same copies in one shard: the side databases (keys, audit,
    /// certificates) hold few small documents.
    fn one_shard(self) -> Self {
        Self {
            n: self.n,
            q: Some(1),
        }
    }

    /// What an existing database has that differs from the request: CouchDB
    /// fixes both when it creates a database, so setup cannot apply them.
    fn unmet(self, has: Placement) -> Option<String> {
        let mut parts = Vec::new();
        if self.n.is_some_and(|n| n != has.n) {
            parts.push(format!(
                "--replicas {} (it has n = {})",
                self.n.unwrap_or_default(),
                has.n
            ));
        }
        if self.q.is_some_and(|q| q != has.q) {
            parts.push(format!(
                "--shards {} (it has q = {})",
                self.q.unwrap_or_default(),
                has.q
            ));
        }
        (!parts.is_empty()).then(|| parts.join(" and "))
    }
}

/// A warning about copies that do not match the cluster: one copy on a
/// cluster (losing one node loses links), or more copies than nodes (every
/// write is accepted with fewer copies than asked for, a 202).
pub fn placement_warning(placement: Placement, cluster_nodes: usize) -> Option<String> {
    let Placement { n, .. } = placement;
    if n == 1 && cluster_nodes > 1 {
        return Some(format!(
            "n = 1 on a cluster of {cluster_nodes} nodes: each link is on one node only, and losing that node loses it; \
             create the database with --replicas {}",
            cluster_nodes.min(3)
        ));
    }
    if n as usize > cluster_nodes {
        return Some(format!(
            "n = {n} on a cluster of {cluster_nodes} node{}: every write keeps fewer copies than asked for \
             (CouchDB answers 202)",
            if cluster_nodes == 1 { "" } else { "s" }
        ));
    }
    None
}

/// A warning when CouchDB created the database with fewer copies than
/// `--replicas` asked for: it answers the request with success and keeps
/// at most as many copies as the cluster has nodes (Apache CouchDB 3.5 on
/// one node makes n = 1 of `?n=3`), which nothing else would say.
pub fn fewer_copies_than_asked(
    db: &str,
    replicas: Option<u32>,
    has: Placement,
    cluster_nodes: Option<usize>,
) -> Option<String> {
    let asked = replicas.filter(|r| *r > has.n)?;
    let nodes = cluster_nodes
        .map(|c| format!(" on a cluster of {c} node{}", if c == 1 { "" } else { "s" }))
        .unwrap_or_default();
    Some(format!(
        "--replicas {asked} asked for {asked} copies of each link, but CouchDB created \
         database {db} with n = {n}{nodes}: each link has {n} cop{}",
        if has.n == 1 { "y" } else { "ies" },
        n = has.n,
    ))
}

/// Creates the database, installs the validation and sets `_security`.
/// Needs a server admin account.
pub async fn setup(
    settings: &CouchSettings,
    requested: Requested,
) -> Result<SetupReport, StoreError> {
    let http = CouchHttp::new(settings)?;
    let database = ensure_database(&http, requested).await?;
    let report = prepare(&http, requested, database, Lock::Keep).await?;
    // Issue 36: made by `qrtag setup` only, not by an import's new database.
    setup_certs(&http, requested).await?;
    Ok(report)
}

/// Whether the setup steps take out the admins-only lock a
/// [`NewDatabase`] was made with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Lock {
    Keep,
    Open,
}

/// Everything `setup` does once the database is there: checks the copies
/// and shards, installs the validation, then (never before it) admits the
/// roles, and prepares the API keys database.
async fn prepare(
    http: &CouchHttp,
    requested: Requested,
    database: Outcome,
    lock: Lock,
) -> Result<SetupReport, StoreError> {
    let placement = placement(http).await?;
    if let (Outcome::Unchanged, Some(has)) = (database, placement)
        && let Some(unmet) = requested.unmet(has)
    {
        return Err(StoreError::Other(format!(
            "database {} exists, so {unmet} cannot be applied: CouchDB sets copies and shards \
             when it creates a database (replicate into a new one to change them)",
            http.db()
        )));
    }
    let design = ensure_design(http, VALIDATE_DOC_UPDATE, Some(LINKS_VIEW_MAP)).await?;
    let public_url_moved = super::public_url::move_legacy(http).await?;
    let security = ensure_security(http, &LINK_ROLES, lock).await?;
    let named = named_members(http).await?;
    let keys = setup_keys(http, requested, named.as_deref()).await?;
    let audit = setup_audit(http, requested, named.as_deref()).await?;
    let history = setup_history(http, requested, named.as_deref()).await?;
    let users = setup_users(http).await?;
    Ok(SetupReport {
        database,
        design,
        public_url_moved,
        security,
        keys,
        audit,
        history,
        users,
        placement,
        cluster_nodes: cluster_nodes(http).await,
    })
}

/// The role every server admin has and nobody else: a database whose only
/// member role it is admits server admins alone, on Apache CouchDB (which
/// also makes new databases admin-only by default) and PouchDB Server
/// alike.
const ADMIN_ROLE: &str = "_admin";

/// `_security` of a database only server admins may read or write.
fn admins_only() -> Value {
    json!({
        "admins": {"names": [], "roles": []},
        "members": {"names": [], "roles": [ADMIN_ROLE]}
    })
}

// Issue 36: who may read and write the certificates database.
/// The role of the accounts `serve --tls acme` runs with on CouchDB: with
/// it an account is a member of `LINKS-certs` (reads the keys, writes the
/// certificates, leases and HTTP-01 answers there) and nothing more, so a
/// node renews without a server admin's account, and the links' readers,
/// viewers and editors, who lack it, still read no private key. Given by
/// the operator (`_users`), never by `setup`.
pub const CERTS_ROLE: &str = "qrtag_certs";

/// `_security` of the certificates database: server admins and
/// [`CERTS_ROLE`] as members, no database admins (so no member changes
/// `_security` or a design document).
fn certs_security() -> Value {
    json!({
        "admins": {"names": [], "roles": []},
        "members": {"names": [], "roles": [ADMIN_ROLE, CERTS_ROLE]}
    })
}

/// Whether the account is a server admin, the only one that may create a
/// database (`GET /_session`: the roles of the account the request was made
/// with; an admin party, with no admin configured, makes everyone one).
pub async fn is_server_admin(settings: &CouchSettings) -> Result<bool, StoreError> {
    let http = CouchHttp::new(settings)?;
    let mut url = http.server().as_url().clone();
    url.set_path("/_session");
    let session: Value = http
        .json(http.request(Method::GET, url), "reading _session")
        .await?;
    Ok(session
        .pointer("/userCtx/roles")
        .and_then(Value::as_array)
        .is_some_and(|roles| roles.iter().any(|r| r == ADMIN_ROLE)))
}

/// Whether the database exists (`HEAD`; any answer but a 404 means there is
/// something by that name).
pub async fn database_exists(settings: &CouchSettings) -> Result<bool, StoreError> {
    let http = CouchHttp::new(settings)?;
    let head = http
        .send(http.request(Method::HEAD, http.db_url(&[])))
        .await?;
    Ok(head.status().as_u16() != 404)
}

/// A database made by [`NewDatabase::create`]: only server admins may read
/// or write it, and it has no validation function, until
/// [`open`](Self::open) runs the setup steps; [`remove`](Self::remove)
/// deletes it instead. Dropping it leaves it as it is.
pub struct NewDatabase {
    http: CouchHttp,
    requested: Requested,
    /// The API keys database [`open`](Self::open) makes beside it; `None`
    /// when one was there before (not this import's to delete).
    keys: Option<CouchHttp>,
    /// Issue 35: the audit database, the same way.
    audit: Option<CouchHttp>,
    /// Issue 35: the history database, the same way.
    history: Option<CouchHttp>,
}

impl NewDatabase {
    /// Documents per `_bulk_docs` request while no validation runs: with
    /// the documents in key order, a batch of 1,000 cost Apache CouchDB 3.5
    /// 0.066–0.075 ms of CPU a document, one of 250 0.089–0.095 ms (in the
    /// order of a file of random keys, 0.33 ms at 250), answered well
    /// within the response-head limit.
    pub const BATCH: usize = 1000;

    /// Creates the database (copies and shards as asked), admins only.
    /// `None` when a database of that name exists: it is left untouched.
    pub async fn create(
        settings: &CouchSettings,
        requested: Requested,
    ) -> Result<Option<Self>, StoreError> {
        let http = CouchHttp::new(settings)?;
        let keys = http.for_db(super::keys::database_name(http.db())?);
        let keys_there = keys
            .send(keys.request(Method::HEAD, keys.db_url(&[])))
            .await?
            .status()
            .as_u16()
            != 404;
        let audit = http.for_db(super::audit::database_name(http.db())?);
        let audit_there = audit
            .send(audit.request(Method::HEAD, audit.db_url(&[])))
            .await?
            .status()
            .as_u16()
            != 404;
        let history = http.for_db(super::history::database_name(http.db())?);
        let history_there = history
            .send(history.request(Method::HEAD, history.db_url(&[])))
            .await?
            .status()
            .as_u16()
            != 404;
        let resp = http
            .send(http.request(Method::PUT, placement_url(&http, requested)))
            .await?;
        match resp.status().as_u16() {
            200..=299 => {}
            412 => return Ok(None),
            _ => {
                let what = format!("creating database {}", http.db());
                return Err(http.refusal(resp, &what).await);
            }
        }
        let created = Self {
            http,
            requested,
            keys: (!keys_there).then_some(keys),
            audit: (!audit_there).then_some(audit),
            history: (!history_there).then_some(history),
        };
        let what = format!("writing {}/_security", created.http.db());
        let locked: Result<Value, StoreError> = created
            .http
            .json(
                created
                    .http
                    .request(Method::PUT, created.http.db_url(&["_security"]))
                    .json(&admins_only()),
                &what,
            )
            .await;
        match locked {
            Ok(_) => Ok(Some(created)),
            Err(e) => {
                // Never leave behind a database open to members without
                // its validation.
                let _ = created.remove().await;
                Err(e)
            }
        }
    }

    /// The database's name.
    pub fn name(&self) -> &CouchDbName {
        self.http.db()
    }

    /// Runs `setup`'s steps on it: the validation first, then the roles
    /// admitted (the admins-only lock taken out), then the API keys
    /// database.
    pub async fn open(&self) -> Result<SetupReport, StoreError> {
        prepare(&self.http, self.requested, Outcome::Created, Lock::Open).await
    }

    /// The database's `update_seq` once the import's writes are answered:
    /// the sequence a snapshot of exactly those documents is at, which the
    /// first `serve`'s follower resumes from.
    pub async fn update_seq(&self) -> Result<Value, StoreError> {
        super::load::update_seq(&self.http).await
    }

    /// Asks CouchDB to build the `links` view's index now, in the
    /// background (`update=lazy` answers at once), so a later full load
    /// reads the view instead of every document. Best effort: the view is
    /// built on its first read anyway.
    pub async fn start_view_build(&self) {
        let mut url = self.http.db_url(&["_design", "qrtag", "_view", LINKS_VIEW]);
        url.query_pairs_mut()
            .append_pair("limit", "0")
            .append_pair("update", "lazy");
        let req = self
            .http
            .request(Method::GET, url)
            .timeout(std::time::Duration::from_secs(2));
        if let Err(e) = self.http.send(req).await {
            tracing::debug!(error = %e, "could not ask for the links view's index");
        }
    }

    /// Deletes the database and everything written to it, and the API keys
    /// database `open` made (if it got that far) with it.
    pub async fn remove(&self) -> Result<(), StoreError> {
        drop_database(&self.http, false).await?;
        if let Some(keys) = &self.keys {
            drop_database(keys, true).await?;
        }
        if let Some(audit) = &self.audit {
            drop_database(audit, true).await?;
        }
        if let Some(history) = &self.history {
            drop_database(history, true).await?;
        }
        Ok(())
    }
}

/// `DELETE`s a database; `missing_ok`: one that is not there is no error.
async fn drop_database(http: &CouchHttp, missing_ok: bool) -> Result<(), StoreError> {
    let resp = http
        .send(http.request(Method::DELETE, http.db_url(&[])))
        .await?;
    let status = resp.status().as_u16();
    if resp.status().is_success() || (missing_ok && status == 404) {
        Ok(())
    } else {
        let what = format!("deleting database {}", http.db());
        Err(http.refusal(resp, &what).await)
    }
}

/// The database's URL with CouchDB's `n` and `q` when asked for.
fn placement_url(http: &CouchHttp, requested: Requested) -> url::Url {
    let mut url = http.db_url(&[]);
    for (name, value) in [("n", requested.n), ("q", requested.q)] {
        if let Some(value) = value {
            url.query_pairs_mut().append_pair(name, &value.to_string());
        }
    }
    url
}

/// The API keys database beside the links one: a single shard (a few
/// small documents), as many copies as the links get.
async fn setup_keys(
    links: &CouchHttp,
    requested: Requested,
    named: Option<&[Member]>,
) -> Result<PartReport, StoreError> {
    let http = links.for_db(super::keys::database_name(links.db())?);
    Ok(PartReport {
        name: http.db().to_string(),
        database: ensure_database(&http, requested.one_shard()).await?,
        design: ensure_design(&http, VALIDATE_API_KEY, None).await?,
        security: ensure_side_security(&http, &KEY_ROLES, named).await?,
    })
}

/// Issue 35: the audit database beside the links one, a single shard like
/// the keys' (entries are small and read a page at a time).
async fn setup_audit(
    links: &CouchHttp,
    requested: Requested,
    named: Option<&[Member]>,
) -> Result<PartReport, StoreError> {
    let http = links.for_db(super::audit::database_name(links.db())?);
    Ok(PartReport {
        name: http.db().to_string(),
        database: ensure_database(&http, requested.one_shard()).await?,
        design: ensure_design(&http, VALIDATE_AUDIT, None).await?,
        security: ensure_side_security(&http, &AUDIT_ROLES, named).await?,
    })
}

/// Issue 35: the links' history database (`super::history`): the audit
/// log's members (the follower writes with the service's reader account)
/// and the same append-only validation, which admits its entries
/// (its own, `assets/couchdb/validate_history.js`).
async fn setup_history(
    links: &CouchHttp,
    requested: Requested,
    named: Option<&[Member]>,
) -> Result<PartReport, StoreError> {
    let http = links.for_db(super::history::database_name(links.db())?);
    Ok(PartReport {
        name: http.db().to_string(),
        database: ensure_database(&http, requested).await?,
        design: ensure_design(&http, VALIDATE_HISTORY, None).await?,
        security: ensure_side_security(&http, &AUDIT_ROLES, named).await?,
    })
}

/// Issue 36: the ACME certificates database (`super::certs`), one shard,
/// its `_security` admitting server admins only whatever it held before.
async fn setup_certs(links: &CouchHttp, requested: Requested) -> Result<Outcome, StoreError> {
    let http = links.for_db(super::certs::database_name(links.db())?);
    ensure_database(&http, requested.one_shard()).await?;
    if get_doc(&http, &["_security"]).await?.as_ref() == Some(&certs_security()) {
        return Ok(Outcome::Unchanged);
    }
    let what = format!("writing {}/_security", http.db());
    let _: Value = http
        .json(
            http.request(Method::PUT, http.db_url(&["_security"]))
                .json(&certs_security()),
            &what,
        )
        .await?;
    Ok(Outcome::Updated)
}

/// Issue 35: `_users` opened to the API keys' members, on every node of
/// the cluster (`_membership`'s `all_nodes`, or `_local`):
/// `users_db_security_editable`, `public_fields` with name and roles, then
/// `_users`' `_security`, then the mark that says so in `_design/qrtag`
/// (`super::users`). A server that refuses a step is said, not a failure.
async fn setup_users(http: &CouchHttp) -> Result<UsersReport, StoreError> {
    if !is_apache_couchdb(http).await {
        return Ok(UsersReport::Skipped(
            "this server is not Apache CouchDB (PouchDB Server answers a member's read of \
             _users with an error)"
                .into(),
        ));
    }
    let nodes = all_nodes(http)
        .await
        .unwrap_or_else(|| vec!["_local".to_owned()]);
    let mut changed = false;
    for node in &nodes {
        let editable = set_config(http, node, "couchdb", "users_db_security_editable", |v| {
            (v != Some("true")).then(|| "true".to_owned())
        });
        match editable.await? {
            Ok(c) => changed |= c,
            Err(why) => return Ok(UsersReport::Skipped(why)),
        }
        let public = set_config(
            http,
            node,
            "chttpd_auth",
            "public_fields",
            super::users::with_public_fields,
        );
        match public.await? {
            Ok(c) => changed |= c,
            Err(why) => return Ok(UsersReport::Skipped(why)),
        }
    }
    let mut url = http.server().as_url().clone();
    url.set_path("/_users/_security");
    let resp = http.send(http.request(Method::GET, url.clone())).await?;
    if !resp.status().is_success() {
        return Ok(UsersReport::Skipped(format!(
            "_users/_security could not be read ({})",
            resp.status().as_u16()
        )));
    }
    let current: Value = http.read_json(resp, "reading _users/_security").await?;
    if let Some(sec) = desired_security(&current, &KEY_ROLES, Lock::Keep) {
        let resp = http.send(http.request(Method::PUT, url).json(&sec)).await?;
        if !resp.status().is_success() {
            return Ok(UsersReport::Skipped(format!(
                "_users/_security was refused ({})",
                resp.status().as_u16()
            )));
        }
        changed = true;
    }
    changed |= mark_users_open(http).await?;
    Ok(UsersReport::Done(if changed {
        Outcome::Updated
    } else {
        Outcome::Unchanged
    }))
}

/// Whether the server's welcome names Apache as its vendor.
async fn is_apache_couchdb(http: &CouchHttp) -> bool {
    let mut url = http.server().as_url().clone();
    url.set_path("/");
    let Ok(resp) = http.send(http.request(Method::GET, url)).await else {
        return false;
    };
    let welcome: Option<Value> = http.read_json(resp, "reading the welcome").await.ok();
    welcome
        .as_ref()
        .and_then(|w| w.pointer("/vendor/name"))
        .and_then(Value::as_str)
        .is_some_and(|v| v.contains("Apache"))
}

/// The cluster's nodes, where the account may read `_membership`.
async fn all_nodes(http: &CouchHttp) -> Option<Vec<String>> {
    let mut url = http.server().as_url().clone();
    url.set_path("/_membership");
    let resp = http.send(http.request(Method::GET, url)).await.ok()?;
    if !resp.status().is_success() {
        return None;
    }
    let body: Value = http.read_json(resp, "reading _membership").await.ok()?;
    let nodes: Vec<String> = body
        .get("all_nodes")?
        .as_array()?
        .iter()
        .filter_map(|n| n.as_str().map(str::to_owned))
        .collect();
    (!nodes.is_empty()).then_some(nodes)
}

/// Sets `section/key` on `node` to what `want` makes of its value, when it
/// makes one: `Ok(Ok(changed))`, or `Ok(Err(why))` when the server has no
/// such setting to write.
async fn set_config(
    http: &CouchHttp,
    node: &str,
    section: &str,
    key: &str,
    want: impl FnOnce(Option<&str>) -> Option<String>,
) -> Result<Result<bool, String>, StoreError> {
    let mut url = http.server().as_url().clone();
    if let Ok(mut path) = url.path_segments_mut() {
        path.clear()
            .extend(["_node", node, "_config", section, key]);
    }
    let resp = http.send(http.request(Method::GET, url.clone())).await?;
    let current: Option<String> = match resp.status().as_u16() {
        200 => http.read_json(resp, "reading the configuration").await.ok(),
        _ => None,
    };
    let Some(value) = want(current.as_deref()) else {
        return Ok(Ok(false));
    };
    let resp = http
        .send(http.request(Method::PUT, url).json(&value))
        .await?;
    if resp.status().is_success() {
        Ok(Ok(true))
    } else {
        Ok(Err(format!(
            "[{section}] {key} on node {node} could not be set ({})",
            resp.status().as_u16()
        )))
    }
}

/// Records [`super::users::MARK`] in the links database's `_design/qrtag`;
/// whether it wrote.
async fn mark_users_open(http: &CouchHttp) -> Result<bool, StoreError> {
    let segments = ["_design", "qrtag"];
    for _ in 0..ATTEMPTS {
        let Some(Value::Object(mut doc)) = get_doc(http, &segments).await? else {
            return Ok(false);
        };
        if doc.get(super::users::MARK) == Some(&Value::Bool(true)) {
            return Ok(false);
        }
        doc.insert(super::users::MARK.into(), Value::Bool(true));
        let resp = http
            .send(http.request(Method::PUT, http.db_url(&segments)).json(&doc))
            .await?;
        match resp.status().as_u16() {
            200..=299 => return Ok(true),
            409 => continue,
            _ => return Err(http.refusal(resp, &format!("writing {DESIGN_ID}")).await),
        }
    }
    Err(StoreError::Conflict(DESIGN_ID.into()))
}

/// `cluster.n` and `cluster.q` of the database's information.
async fn placement(http: &CouchHttp) -> Result<Option<Placement>, StoreError> {
    let info: Value = http
        .json(
            http.request(Method::GET, http.db_url(&[])),
            "reading the database's information",
        )
        .await?;
    let number = |name: &str| {
        info.pointer(&format!("/cluster/{name}"))
            .and_then(Value::as_u64)
            .and_then(|v| u32::try_from(v).ok())
    };
    Ok(number("n")
        .zip(number("q"))
        .map(|(n, q)| Placement { n, q }))
}

/// The nodes the cluster is configured with; `None` where `_membership` is
/// not offered or not readable by the account.
async fn cluster_nodes(http: &CouchHttp) -> Option<usize> {
    let mut url = http.server().as_url().clone();
    url.set_path("/_membership");
    let resp = http.send(http.request(Method::GET, url)).await.ok()?;
    if !resp.status().is_success() {
        return None;
    }
    let body: Value = http.read_json(resp, "reading _membership").await.ok()?;
    body.get("cluster_nodes")?.as_array().map(Vec::len)
}

async fn ensure_database(http: &CouchHttp, requested: Requested) -> Result<Outcome, StoreError> {
    // Look before creating: only a server admin may PUT a database, even one
    // that exists, and a database admin should be able to re-run setup.
    let head = http
        .send(http.request(Method::HEAD, http.db_url(&[])))
        .await?;
    if head.status().is_success() {
        return Ok(Outcome::Unchanged);
    }
    let what = format!("creating database {}", http.db());
    let resp = http
        .send(http.request(Method::PUT, placement_url(http, requested)))
        .await?;
    match resp.status().as_u16() {
        200..=299 => Ok(Outcome::Created),
        // 412 file_exists: CouchDB's answer for a database that is there.
        412 => Ok(Outcome::Unchanged),
        _ => Err(http.refusal(resp, &what).await),
    }
}

/// Reads a document, `None` when missing.
async fn get_doc(http: &CouchHttp, segments: &[&str]) -> Result<Option<Value>, StoreError> {
    let what = format!("reading {}", segments.join("/"));
    let resp = http
        .send(http.request(Method::GET, http.db_url(segments)))
        .await?;
    match resp.status().as_u16() {
        200..=299 => http.read_json(resp, &what).await.map(Some),
        404 => Ok(None),
        _ => Err(http.refusal(resp, &what).await),
    }
}

/// The design document with qrtag's fields set (and, for the links, the
/// `links` view); other fields (views someone added) are kept. `None` when
/// nothing needs to change.
fn desired_design(current: Option<&Value>, validation: &str, view: Option<&str>) -> Option<Value> {
    let mut doc = match current {
        Some(Value::Object(m)) => m.clone(),
        _ => Map::new(),
    };
    let before = doc.clone();
    doc.insert("_id".into(), Value::String(DESIGN_ID.into()));
    doc.insert("language".into(), Value::String("javascript".into()));
    doc.insert(
        "validate_doc_update".into(),
        Value::String(validation.into()),
    );
    if let Some(map) = view {
        let views = doc
            .entry("views")
            .or_insert_with(|| Value::Object(Map::new()));
        if !views.is_object() {
            *views = Value::Object(Map::new());
        }
        if let Value::Object(views) = views {
            views.insert(LINKS_VIEW.into(), serde_json::json!({ "map": map }));
        }
    }
    (current.is_none() || doc != before).then_some(Value::Object(doc))
}

async fn ensure_design(
    http: &CouchHttp,
    validation: &str,
    view: Option<&str>,
) -> Result<Outcome, StoreError> {
    let segments = ["_design", "qrtag"];
    for _ in 0..ATTEMPTS {
        let current = get_doc(http, &segments).await?;
        let Some(doc) = desired_design(current.as_ref(), validation, view) else {
            return Ok(Outcome::Unchanged);
        };
        let resp = http
            .send(http.request(Method::PUT, http.db_url(&segments)).json(&doc))
            .await?;
        match resp.status().as_u16() {
            200..=299 if current.is_none() => return Ok(Outcome::Created),
            200..=299 => return Ok(Outcome::Updated),
            // Someone else wrote it in between: read again.
            409 => continue,
            _ => return Err(http.refusal(resp, &format!("writing {DESIGN_ID}")).await),
        }
    }
    Err(StoreError::Conflict(DESIGN_ID.into()))
}

/// `_security` with `roles` among the members, everything already there
/// kept (with [`Lock::Open`], but the admins-only member role). `None`
/// when nothing needs to change.
fn desired_security(current: &Value, roles_wanted: &[&str], lock: Lock) -> Option<Value> {
    let mut sec = match current {
        Value::Object(m) => m.clone(),
        _ => Map::new(),
    };
    if members_named_by_hand(current, roles_wanted) {
        return None;
    }
    let before = sec.clone();
    if lock == Lock::Open
        && let Some(Value::Array(roles)) = sec.get_mut("members").and_then(|m| m.get_mut("roles"))
    {
        roles.retain(|r| r != ADMIN_ROLE);
    }
    for part in ["admins", "members"] {
        let group = sec.entry(part).or_insert_with(|| json!({}));
        if !group.is_object() {
            *group = json!({});
        }
        if let Value::Object(group) = group {
            for list in ["names", "roles"] {
                let entry = group.entry(list).or_insert_with(|| json!([]));
                if !entry.is_array() {
                    *entry = json!([]);
                }
            }
            if part == "members"
                && let Some(Value::Array(roles)) = group.get_mut("roles")
            {
                for role in roles_wanted {
                    if !roles.iter().any(|r| r == role) {
                        roles.push(Value::String((*role).into()));
                    }
                }
            }
        }
    }
    (sec != before).then_some(Value::Object(sec))
}

/// Issue 36: whether an admin chose this database's members by name,
/// taking every one of qrtag's roles out: a domain's database kept to its
/// own brand's editors (the roles are server-wide, so a role among the
/// members would admit every brand's editors). Setup keeps that choice
/// instead of admitting the roles again on the next deploy.
fn members_named_by_hand(current: &Value, roles_wanted: &[&str]) -> bool {
    let named = current
        .pointer("/members/names")
        .and_then(Value::as_array)
        .is_some_and(|names| !names.is_empty());
    let roles = current.pointer("/members/roles").and_then(Value::as_array);
    let no_qrtag_role =
        roles.is_none_or(|roles| !roles.iter().any(|r| roles_wanted.iter().any(|w| r == *w)));
    named && no_qrtag_role
}

/// A member named in a links database's `_security`, with the roles its
/// `_users` document gives it (none for a name without one, such as a
/// server admin, who needs no membership).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Member {
    name: String,
    roles: Vec<String>,
}

/// Issue 36: the people a links database was kept to, when an admin named
/// its members by hand (see [`members_named_by_hand`]); `None` when its
/// members are qrtag's server-wide roles. Their side databases (keys,
/// audit log, history) are then kept to the same people, since a role
/// there would admit every brand's editors again.
async fn named_members(http: &CouchHttp) -> Result<Option<Vec<Member>>, StoreError> {
    let current = get_doc(http, &["_security"]).await?.unwrap_or(json!({}));
    if !members_named_by_hand(&current, &LINK_ROLES) {
        return Ok(None);
    }
    let names = current
        .pointer("/members/names")
        .and_then(Value::as_array)
        .map(|names| names.iter().filter_map(Value::as_str).map(str::to_owned))
        .into_iter()
        .flatten();
    let mut members = Vec::new();
    for name in names {
        let url = super::users::user_url(http, &name);
        let resp = http.send(http.request(Method::GET, url)).await?;
        let roles = if resp.status().is_success() {
            let doc: Value = http
                .read_json(resp, &format!("reading the account {name}"))
                .await?;
            doc.get("roles")
                .and_then(Value::as_array)
                .map(|r| {
                    r.iter()
                        .filter_map(Value::as_str)
                        .map(str::to_owned)
                        .collect()
                })
                .unwrap_or_default()
        } else {
            Vec::new()
        };
        members.push(Member { name, roles });
    }
    Ok(Some(members))
}

/// A side database's `_security`: qrtag's `roles` among its members, or,
/// where the links database's members were `named`, exactly those of
/// them whose account holds one of `roles` (the service's reader stays out
/// of the keys database, a viewer out of the audit log), its admins kept.
/// `None` when nothing needs to change.
fn desired_side_security(
    current: &Value,
    roles: &[&str],
    named: Option<&[Member]>,
) -> Option<Value> {
    let Some(named) = named else {
        return desired_security(current, roles, Lock::Keep);
    };
    let names: Vec<Value> = named
        .iter()
        .filter(|m| m.roles.iter().any(|r| roles.contains(&r.as_str())))
        .map(|m| Value::String(m.name.clone()))
        .collect();
    let mut sec = match current {
        Value::Object(m) => m.clone(),
        _ => Map::new(),
    };
    sec.insert("members".into(), json!({"names": names, "roles": []}));
    let sec = Value::Object(sec);
    (&sec != current).then_some(sec)
}

async fn ensure_side_security(
    http: &CouchHttp,
    roles: &[&str],
    named: Option<&[Member]>,
) -> Result<Outcome, StoreError> {
    let current = get_doc(http, &["_security"]).await?.unwrap_or(json!({}));
    let Some(sec) = desired_side_security(&current, roles, named) else {
        return Ok(Outcome::Unchanged);
    };
    put_security(http, &sec).await
}

async fn put_security(http: &CouchHttp, sec: &Value) -> Result<Outcome, StoreError> {
    let what = format!("writing {}/_security", http.db());
    let _: Value = http
        .json(
            http.request(Method::PUT, http.db_url(&["_security"]))
                .json(sec),
            &what,
        )
        .await?;
    Ok(Outcome::Updated)
}

async fn ensure_security(
    http: &CouchHttp,
    roles: &[&str],
    lock: Lock,
) -> Result<Outcome, StoreError> {
    let current = get_doc(http, &["_security"]).await?.unwrap_or(json!({}));
    let Some(sec) = desired_security(&current, roles, lock) else {
        return Ok(Outcome::Unchanged);
    };
    put_security(http, &sec).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fewer_copies_than_asked_are_said() {
        let one = Placement { n: 1, q: 2 };
        assert_eq!(
            fewer_copies_than_asked("links", Some(3), one, Some(1)).as_deref(),
            Some(
                "--replicas 3 asked for 3 copies of each link, but CouchDB created database links \
                 with n = 1 on a cluster of 1 node: each link has 1 copy"
            )
        );
        let two = Placement { n: 2, q: 2 };
        let w = fewer_copies_than_asked("links", Some(3), two, None).expect("fewer");
        assert!(w.ends_with("with n = 2: each link has 2 copies"), "{w}");
        assert_eq!(
            fewer_copies_than_asked("links", Some(1), one, Some(1)),
            None
        );
        assert_eq!(fewer_copies_than_asked("links", None, one, Some(3)), None);
        assert_eq!(
            fewer_copies_than_asked("links", Some(2), two, Some(1)),
            None
        );
    }

    #[test]
    fn copies_that_do_not_match_the_cluster_are_named() {
        let one = Placement { n: 1, q: 2 };
        assert_eq!(placement_warning(one, 1), None);
        let w = placement_warning(one, 3).expect("one copy on three nodes");
        assert!(
            w.contains("n = 1 on a cluster of 3 nodes") && w.contains("--replicas 3"),
            "{w}"
        );
        let three = Placement { n: 3, q: 2 };
        assert_eq!(placement_warning(three, 3), None);
        assert_eq!(placement_warning(three, 5), None);
        let w = placement_warning(three, 1).expect("three copies on one node");
        assert!(
            w.contains("n = 3 on a cluster of 1 node:") && w.contains("202"),
            "{w}"
        );
    }

    #[test]
    fn an_existing_database_names_what_setup_cannot_change() {
        let has = Placement { n: 1, q: 2 };
        assert_eq!(Requested::default().unmet(has), None);
        assert_eq!(
            Requested {
                n: Some(1),
                q: Some(2)
            }
            .unmet(has),
            None
        );
        assert_eq!(
            Requested {
                n: Some(3),
                q: Some(2)
            }
            .unmet(has)
            .as_deref(),
            Some("--replicas 3 (it has n = 1)")
        );
        assert_eq!(
            Requested {
                n: Some(3),
                q: Some(8)
            }
            .unmet(has)
            .as_deref(),
            Some("--replicas 3 (it has n = 1) and --shards 8 (it has q = 2)")
        );
    }

    #[test]
    fn the_validation_knows_the_editor_role() {
        assert!(VALIDATE_DOC_UPDATE.contains(&format!("'{EDITOR_ROLE}'")));
        assert!(VALIDATE_DOC_UPDATE.trim_start().starts_with("function"));
    }

    #[test]
    fn design_is_rewritten_only_when_it_differs() {
        let view = Some(LINKS_VIEW_MAP);
        let fresh = desired_design(None, VALIDATE_DOC_UPDATE, view).expect("a new design document");
        assert_eq!(fresh["validate_doc_update"], VALIDATE_DOC_UPDATE);
        assert_eq!(fresh["views"]["links"]["map"], LINKS_VIEW_MAP);
        let mut stored = fresh.clone();
        stored["_rev"] = json!("1-a");
        stored["views"]["by_url"] = json!({"map": "function (d) {}"});
        assert_eq!(
            desired_design(Some(&stored), VALIDATE_DOC_UPDATE, view),
            None
        );
        stored["validate_doc_update"] = json!("function () {}");
        stored["views"]["links"]["map"] = json!("function (d) { emit(d._id, 1); }");
        let updated = desired_design(Some(&stored), VALIDATE_DOC_UPDATE, view).expect("an update");
        assert_eq!(updated["_rev"], "1-a", "the update must name the revision");
        assert!(
            updated["views"]["by_url"].is_object(),
            "other views are kept"
        );
        assert_eq!(updated["views"]["links"]["map"], LINKS_VIEW_MAP);
        let keys = desired_design(None, VALIDATE_API_KEY, None).expect("a new design document");
        assert!(keys.get("views").is_none(), "no view on the API keys");
    }

    /// Issue 35: the validation, `_security` and the console's mapping
    /// name the same roles.
    #[test]
    fn the_validation_knows_the_roles_the_console_maps() {
        use crate::values::role::{COUCH_EDITOR_ROLES, Role};
        assert_eq!(ADMIN_ROLE_NAME, "qrtag_admin");
        assert!(VALIDATE_DOC_UPDATE.contains(&format!("'{ADMIN_ROLE_NAME}'")));
        assert_eq!(COUCH_EDITOR_ROLES, [EDITOR_ROLE]);
        assert_eq!(Role::from_couch_roles(&[VIEWER_ROLE]), Role::Viewer);
        assert_eq!(Role::from_couch_roles(&[READER_ROLE]), Role::Viewer);
        assert_eq!(Role::from_couch_roles(&[ADMIN_ROLE_NAME]), Role::Admin);
    }

    #[test]
    fn security_adds_roles_and_keeps_the_rest() {
        let set = desired_security(&json!({}), &LINK_ROLES, Lock::Keep).expect("a change");
        assert_eq!(
            set,
            json!({
                "admins": {"names": [], "roles": []},
                "members": {"names": [], "roles": LINK_ROLES}
            })
        );
        assert_eq!(
            desired_security(&set, &LINK_ROLES, Lock::Keep),
            None,
            "a second run changes nothing"
        );
        let other = json!({
            "admins": {"names": ["ops"], "roles": []},
            "members": {"names": ["alice"], "roles": ["staff", EDITOR_ROLE]}
        });
        let merged = desired_security(&other, &LINK_ROLES, Lock::Keep).expect("a change");
        assert_eq!(merged["admins"]["names"], json!(["ops"]));
        assert_eq!(merged["members"]["names"], json!(["alice"]));
        assert_eq!(
            merged["members"]["roles"],
            json!([
                "staff",
                EDITOR_ROLE,
                READER_ROLE,
                VIEWER_ROLE,
                ADMIN_ROLE_NAME
            ])
        );
        // The keys database admits the editors and never adds the reader.
        let keys = desired_security(&json!({}), &KEY_ROLES, Lock::Keep).expect("a change");
        assert_eq!(
            keys["members"]["roles"],
            json!([EDITOR_ROLE, "qrtag_admin"])
        );
    }

    /// Issue 36: members named by hand with no qrtag role (a domain's
    /// database kept to its brand's people) stay as they are; one qrtag
    /// role among them and setup adds the others, as before.
    #[test]
    fn security_named_by_hand_without_qrtag_roles_is_kept() {
        let brand = json!({
            "admins": {"names": [], "roles": []},
            "members": {"names": ["ed-b", "rd"], "roles": []}
        });
        assert_eq!(desired_security(&brand, &LINK_ROLES, Lock::Keep), None);
        assert_eq!(desired_security(&brand, &KEY_ROLES, Lock::Open), None);
        let with_one = json!({"members": {"names": ["ed-b"], "roles": [EDITOR_ROLE]}});
        assert!(desired_security(&with_one, &LINK_ROLES, Lock::Keep).is_some());
        let nobody = json!({"members": {"names": [], "roles": []}});
        assert!(desired_security(&nobody, &LINK_ROLES, Lock::Keep).is_some());
    }

    /// Issue 36: a brand's side databases are kept to the brand's named
    /// people who hold the database's roles: the reader stays out of the
    /// keys, a viewer out of the audit log and history; admins are kept.
    #[test]
    fn side_databases_follow_the_links_named_members() {
        let member = |name: &str, roles: &[&str]| Member {
            name: name.into(),
            roles: roles.iter().map(|r| (*r).to_owned()).collect(),
        };
        let named = [
            member("ed-b", &[EDITOR_ROLE]),
            member("rd", &[READER_ROLE]),
            member("view-b", &[VIEWER_ROLE]),
            member("boss", &[]),
        ];
        let made = json!({
            "admins": {"names": ["dba"], "roles": []},
            "members": {"names": [], "roles": KEY_ROLES}
        });
        let keys = desired_side_security(&made, &KEY_ROLES, Some(&named)).expect("a change");
        assert_eq!(keys["members"], json!({"names": ["ed-b"], "roles": []}));
        assert_eq!(keys["admins"], made["admins"]);
        let audit = desired_side_security(&made, &AUDIT_ROLES, Some(&named)).expect("a change");
        assert_eq!(
            audit["members"],
            json!({"names": ["ed-b", "rd"], "roles": []})
        );
        assert_eq!(desired_side_security(&keys, &KEY_ROLES, Some(&named)), None);
        assert_eq!(
            desired_side_security(&json!({}), &KEY_ROLES, None),
            desired_security(&json!({}), &KEY_ROLES, Lock::Keep),
            "without named members, the roles as before"
        );
    }

    #[test]
    fn opening_a_new_database_takes_out_only_the_admins_lock() {
        let locked = admins_only();
        assert_eq!(
            desired_security(&locked, &LINK_ROLES, Lock::Keep).expect("roles added")["members"]["roles"],
            json!([
                ADMIN_ROLE,
                READER_ROLE,
                EDITOR_ROLE,
                VIEWER_ROLE,
                ADMIN_ROLE_NAME
            ]),
            "setup on someone's locked database keeps their lock"
        );
        let opened = desired_security(&locked, &LINK_ROLES, Lock::Open).expect("a change");
        assert_eq!(
            opened,
            json!({
                "admins": {"names": [], "roles": []},
                "members": {"names": [], "roles": LINK_ROLES}
            }),
            "the same _security as setup gives a database of its own"
        );
        assert_eq!(
            opened,
            desired_security(&json!({}), &LINK_ROLES, Lock::Keep).expect("a change")
        );
    }

    #[test]
    fn the_key_validation_knows_the_editor_role_and_refuses_changes() {
        assert!(VALIDATE_API_KEY.contains(&format!("'{EDITOR_ROLE}'")));
        assert!(VALIDATE_API_KEY.trim_start().starts_with("function"));
        assert!(!VALIDATE_API_KEY.contains(READER_ROLE));
    }
}
