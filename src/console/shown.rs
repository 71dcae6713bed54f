//! Which domain a console request shows (issue 36), and each user's way
//! into each domain.
//!
//! A page names its domain in `?domain=HOST` (links from elsewhere, the
//! switcher, GET forms) or in a form's `domain` field (every POST form
//! carries the domain of the page it was on, so a tab left open on one
//! brand never writes to another); without either, the `qrtag_domain`
//! cookie the console sets on every answer that named one; else the
//! user's first domain, the default when they may see it.
//!
//! A domain named outright that the service does not serve, or the user
//! may not see, is the same 404 as a page that does not exist, so the
//! answer tells no one which hosts are configured. A cookie naming such a
//! domain (a domain since removed, a user since limited) is ignored
//! rather than locking the person out.

use std::sync::Arc;

use super::domains::{Domain, Domains};
use crate::store::LinkStore;

/// The cookie that remembers the domain last shown.
pub const COOKIE: &str = "qrtag_domain";

/// The query parameter and form field naming a page's domain.
pub const FIELD: &str = "domain";

/// One user's access to every domain, in [`Domains::all`]'s order: the
/// store their writes go to there (the domain's own `Served` writes on the
/// embedded store; on CouchDB the user's own account on that domain's
/// database), or `None` where they may not go.
pub struct DomainAccess {
    stores: Vec<Option<Arc<dyn LinkStore>>>,
}

impl DomainAccess {
    /// Every domain, each through its own writes (the embedded store,
    /// where the console's gate is the only one).
    pub fn every(domains: &Domains) -> Self {
        Self {
            stores: domains
                .all()
                .iter()
                .map(|d| Some(Arc::clone(&d.writes)))
                .collect(),
        }
    }

    /// The stores given, one a domain (`None`: not this user's).
    pub fn from_stores(stores: Vec<Option<Arc<dyn LinkStore>>>) -> Self {
        Self { stores }
    }

    /// Only the domains `allowed` says yes to, each through its writes.
    pub fn only(domains: &Domains, allowed: impl Fn(&Domain) -> bool) -> Self {
        Self {
            stores: domains
                .all()
                .iter()
                .map(|d| allowed(d).then(|| Arc::clone(&d.writes)))
                .collect(),
        }
    }

    /// The store of the domain at `at`, when the user may go there.
    pub fn store(&self, at: usize) -> Option<&Arc<dyn LinkStore>> {
        self.stores.get(at).and_then(Option::as_ref)
    }

    /// Whether the service has more than one domain (pages then name it).
    pub fn several(&self) -> bool {
        self.stores.len() > 1
    }

    pub fn allows(&self, at: usize) -> bool {
        self.store(at).is_some()
    }

    /// The positions of the domains the user may see, the default first.
    pub fn allowed(&self) -> impl Iterator<Item = usize> + '_ {
        self.stores
            .iter()
            .enumerate()
            .filter_map(|(at, s)| s.as_ref().map(|_| at))
    }
}

impl std::fmt::Debug for DomainAccess {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.allowed()).finish()
    }
}

/// How a request asked for its domain.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Asked<'a> {
    /// `?domain=` or a form's field: the page's own domain.
    Named(&'a str),
    /// The cookie: the domain shown last.
    Remembered(&'a str),
    Nothing,
}

/// The domain asked for wasn't shown: answered as a missing page.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("no such page")]
pub struct NotShown;

/// The position of the domain a request shows.
pub fn choose(
    domains: &Domains,
    access: &DomainAccess,
    asked: Asked<'_>,
) -> Result<usize, NotShown> {
    let first = || access.allowed().next().ok_or(NotShown);
    match asked {
        Asked::Named(host) => match domains.position(Some(host)) {
            Ok(at) if access.allows(at) => Ok(at),
            _ => Err(NotShown),
        },
        Asked::Remembered(host) => match domains.position(Some(host)) {
            Ok(at) if access.allows(at) => Ok(at),
            _ => first(),
        },
        Asked::Nothing => first(),
    }
}

/// The domain a page shows and how it was chosen (kept in the request's
/// extensions, so the answer can set the cookie).
#[derive(Clone)]
pub struct Shown {
    pub domain: Arc<Domain>,
    /// Whether the cookie already names it.
    pub remembered: bool,
}

/// The switcher's content (a service of several domains): the domains
/// the user may see, the one shown, and the page to show again on the
/// domain picked (its path and query, without its domain).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Switcher {
    pub domains: Vec<String>,
    pub current: String,
    pub path: String,
    pub query: Vec<(String, String)>,
}

impl Switcher {
    /// The switcher of a page at `path` with `query`; `None` on a service
    /// of one domain. A POST's page returns to `list` instead, as a GET
    /// form cannot reach the POST's path.
    pub fn of(
        domains: &Domains,
        access: &DomainAccess,
        at: usize,
        (get, path, query): (bool, &str, &str),
        list: &str,
    ) -> Option<Self> {
        if !domains.several() {
            return None;
        }
        let names = access
            .allowed()
            .filter_map(|i| domains.all().get(i).map(|d| d.name()))
            .collect();
        let (path, query) = if get {
            let kept = form_urlencoded::parse(query.as_bytes())
                .filter(|(name, _)| name != FIELD)
                .map(|(n, v)| (n.into_owned(), v.into_owned()))
                .collect();
            (path.to_owned(), kept)
        } else {
            (list.to_owned(), Vec::new())
        };
        Some(Self {
            domains: names,
            current: domains.all().get(at)?.name(),
            path,
            query,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::snapshot::Snapshot;
    use crate::store::live_url::LiveUrl;
    use crate::values::host::Host;
    use crate::values::public_url::PublicUrl;

    fn domain(dir: &std::path::Path, host: &str) -> Domain {
        Domain {
            host: Some(Host::parse(host).expect("host")),
            writes: Arc::new(
                crate::store::sqlite::SqliteStore::open(&dir.join(format!("{host}.db")))
                    .expect("store"),
            ),
            public_url: LiveUrl::new(PublicUrl::parse(&format!("https://{host}")).expect("url")),
            order: Arc::default(),
            scans: Arc::new(super::super::scans::NoScanCounts),
            snapshot: Snapshot::new(),
        }
    }

    #[test]
    fn a_named_domain_must_be_served_and_allowed_a_remembered_one_falls_back() {
        let dir = tempfile::tempdir().expect("tempdir");
        let domains = Domains::new(
            domain(dir.path(), "a.example"),
            vec![domain(dir.path(), "b.example")],
        );
        let every = DomainAccess::every(&domains);
        let only_b = DomainAccess::only(&domains, |d| d.name() == "b.example");
        assert_eq!(choose(&domains, &every, Asked::Nothing), Ok(0));
        assert_eq!(choose(&domains, &every, Asked::Named("B.example")), Ok(1));
        assert_eq!(
            choose(&domains, &every, Asked::Named("c.example")),
            Err(NotShown)
        );
        assert_eq!(choose(&domains, &only_b, Asked::Nothing), Ok(1));
        assert_eq!(
            choose(&domains, &only_b, Asked::Named("a.example")),
            Err(NotShown)
        );
        assert_eq!(
            choose(&domains, &only_b, Asked::Remembered("a.example")),
            Ok(1)
        );
        assert_eq!(
            choose(&domains, &every, Asked::Remembered("gone.example")),
            Ok(0)
        );
        let none = DomainAccess::only(&domains, |_| false);
        assert_eq!(choose(&domains, &none, Asked::Nothing), Err(NotShown));
    }
}
