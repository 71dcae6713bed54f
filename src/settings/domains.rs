//! Several domains on one service (issue 36): the configuration file's
//! `[[domains]]`, read and checked before anything starts.
//!
//! The default domain is the service as it was before there were domains:
//! its store, access log, snapshot file, dead-tag page and public URL are
//! the top-level settings, and what its `[[domains]]` entry says of them is
//! written there (see [`DomainEntry::top_level`]), so every command that
//! reads `db` or `public_url` keeps using the default domain's, and a
//! configuration without `[[domains]]` is one default domain with nothing
//! changed. Every other domain brings its own store and files, which no
//! two domains may share: each domain's links, scans and snapshot stay its
//! own.
//!
//! Pure: the text is judged here, the files are opened by `startup`.

use std::path::{Path, PathBuf};

use crate::server::dead_tag::DeadTagPage;
use crate::store::options::StoreSettings;
use crate::values::couch::CouchDbName;
use crate::values::destination::Destination;
use crate::values::host::Host;
use crate::values::public_url::PublicUrl;

pub use crate::server::sites::UnknownHost;

/// The fields a `[[domains]]` entry may hold.
const FIELDS: [&str; 12] = [
    "host",
    "default",
    "public_url",
    "sqlite",
    "couchdb_db",
    "access_log",
    "snapshot_file",
    "operator_name",
    "operator_contact",
    "dead_tag_page",
    "root",
    // Issue 36: the domain's own certificate files.
    "tls",
];

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DomainError {
    #[error("expected a list of tables, written [[domains]] with host = \"…\" under each")]
    NotAList,
    #[error("domain {n}: expected a table of fields (host, public_url, sqlite, …)")]
    NotATable { n: usize },
    #[error("domain {n}: unknown field `{field}` (known: {})", FIELDS.join(", "))]
    UnknownField { n: usize, field: String },
    #[error("domain {n}: give its `{field}`")]
    Missing { n: usize, field: &'static str },
    #[error("domain {at}: `{field}`: {why}")]
    BadValue {
        at: String,
        field: &'static str,
        why: String,
    },
    #[error("domain {0} is listed twice")]
    Twice(Host),
    #[error("domains {0} and {1} are both marked default: mark one")]
    TwoDefaults(Host, Host),
    #[error(
        "domain {host}: its public_url {url} is on another host; a domain's public URL must be on its own host"
    )]
    OtherHost { host: Host, url: String },
    #[error("domain {0}: give its store, sqlite = \"PATH\" or couchdb_db = \"NAME\", not both")]
    TwoStores(Host),
    #[error(
        "domain {host}: give its store (sqlite = \"PATH\" or couchdb_db = \"NAME\"); only the default domain uses the top-level one"
    )]
    NoStore { host: Host },
    #[error(
        "domain {host}: a CouchDB database needs a CouchDB server: set couchdb_url at the top level"
    )]
    NoCouchServer { host: Host },
    #[error(
        "domain {host}: give its access_log (a file of its own: each domain's scans are counted from its log)"
    )]
    NoAccessLog { host: Host },
    #[error(
        "the default domain's `{field}` and the top-level `{key}` are both set: set it in one place"
    )]
    SetTwice {
        field: &'static str,
        key: &'static str,
    },
    #[error("domains {a} and {b} share the {what} {shared}: each domain needs its own")]
    Shared {
        a: Host,
        b: Host,
        what: &'static str,
        shared: String,
    },
}

/// A domain's own store, named in its entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DomainStore {
    Sqlite(PathBuf),
    /// A database on the top-level `couchdb_url`, with its credentials.
    CouchDb(CouchDbName),
}

/// One `[[domains]]` entry as written (paths as in the file).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DomainEntry {
    pub host: Host,
    pub default: bool,
    pub public_url: Option<PublicUrl>,
    pub store: Option<DomainStore>,
    pub access_log: Option<PathBuf>,
    pub snapshot_file: Option<PathBuf>,
    pub operator_name: Option<String>,
    pub operator_contact: Option<String>,
    pub dead_tag_page: Option<PathBuf>,
    /// Where `/` sends a browser.
    pub root: Option<Destination>,
    /// Issue 36: `tls = { cert = "…", key = "…" }`, the domain's own
    /// certificate files; `None`: an ACME order of its own with
    /// `tls = "acme"`, else the default domain's certificate.
    pub tls: Option<CertFiles>,
}

/// A domain's certificate chain (end-entity first) and key, PEM files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CertFiles {
    pub cert: PathBuf,
    pub key: PathBuf,
}

/// The domains of a configuration file: which one is the default, and the
/// others' entries (their paths already relative to the file's directory).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Domains {
    /// `None`: no `[[domains]]`, so no host is routed (every request is
    /// the one domain's, as before issue 36).
    pub default_host: Option<Host>,
    pub others: Vec<DomainEntry>,
}

/// Reads the `domains` value of the file: a list of tables, each a known
/// field set, no host twice, at most one marked default (else the first
/// is), each public URL on its own host.
pub fn parse(value: &toml::Value) -> Result<Vec<DomainEntry>, DomainError> {
    let list = value.as_array().ok_or(DomainError::NotAList)?;
    if list.is_empty() {
        return Err(DomainError::NotAList);
    }
    let mut entries: Vec<DomainEntry> = Vec::with_capacity(list.len());
    for (i, item) in list.iter().enumerate() {
        let entry = entry(i + 1, item)?;
        if entries.iter().any(|e| e.host == entry.host) {
            return Err(DomainError::Twice(entry.host));
        }
        if entry.default
            && let Some(other) = entries.iter().find(|e| e.default)
        {
            return Err(DomainError::TwoDefaults(other.host.clone(), entry.host));
        }
        entries.push(entry);
    }
    if !entries.iter().any(|e| e.default)
        && let Some(first) = entries.first_mut()
    {
        first.default = true;
    }
    Ok(entries)
}

fn entry(n: usize, item: &toml::Value) -> Result<DomainEntry, DomainError> {
    let table = item.as_table().ok_or(DomainError::NotATable { n })?;
    if let Some(field) = table.keys().find(|k| !FIELDS.contains(&k.as_str())) {
        return Err(DomainError::UnknownField {
            n,
            field: field.clone(),
        });
    }
    let at = |name: Option<&Host>| name.map_or_else(|| n.to_string(), Host::to_string);
    let text = |field: &'static str, host: Option<&Host>| -> Result<Option<String>, DomainError> {
        match table.get(field) {
            None => Ok(None),
            Some(toml::Value::String(s)) => Ok(Some(s.clone())),
            Some(_) => Err(DomainError::BadValue {
                at: at(host),
                field,
                why: "expected a string".into(),
            }),
        }
    };
    let bad = |host: &Host, field: &'static str, why: String| DomainError::BadValue {
        at: host.to_string(),
        field,
        why,
    };
    let host = text("host", None)?.ok_or(DomainError::Missing { n, field: "host" })?;
    let host = Host::parse(&host).map_err(|e| DomainError::BadValue {
        at: n.to_string(),
        field: "host",
        why: e.to_string(),
    })?;
    let h = Some(&host);
    let default = match table.get("default") {
        None => false,
        Some(toml::Value::Boolean(b)) => *b,
        Some(_) => return Err(bad(&host, "default", "expected true or false".into())),
    };
    let public_url = text("public_url", h)?
        .map(|u| PublicUrl::parse(&u).map_err(|e| bad(&host, "public_url", e.to_string())))
        .transpose()?;
    if let Some(url) = &public_url
        && !on_host(url, &host)
    {
        return Err(DomainError::OtherHost {
            host,
            url: url.to_string(),
        });
    }
    let store = match (text("sqlite", h)?, text("couchdb_db", h)?) {
        (Some(_), Some(_)) => return Err(DomainError::TwoStores(host)),
        (Some(path), None) if !path.is_empty() => Some(DomainStore::Sqlite(path.into())),
        (Some(_), None) => return Err(bad(&host, "sqlite", "an empty path".into())),
        (None, Some(db)) => Some(DomainStore::CouchDb(
            CouchDbName::parse(&db).map_err(|e| bad(&host, "couchdb_db", e.to_string()))?,
        )),
        (None, None) => None,
    };
    let path = |field: &'static str| -> Result<Option<PathBuf>, DomainError> {
        match text(field, h)? {
            Some(p) if p.is_empty() || p == "-" => Err(bad(
                &host,
                field,
                "give a file (a domain's own file, never standard output)".into(),
            )),
            other => Ok(other.map(PathBuf::from)),
        }
    };
    let root = text("root", h)?
        .map(|r| Destination::parse_absolute(&r).map_err(|e| bad(&host, "root", e.to_string())))
        .transpose()?;
    let operator_name = text("operator_name", h)?
        .map(|s| {
            crate::server::dead_tag::parse_name(&s)
                .map_err(|e| bad(&host, "operator_name", e.to_string()))
        })
        .transpose()?;
    let operator_contact = text("operator_contact", h)?;
    if let Some(contact) = &operator_contact {
        crate::server::dead_tag::Contact::parse(contact)
            .map_err(|e| bad(&host, "operator_contact", e.to_string()))?;
    }
    let tls = cert_files(table.get("tls"), &host)?;
    Ok(DomainEntry {
        tls,
        default,
        public_url,
        store,
        access_log: path("access_log")?,
        snapshot_file: path("snapshot_file")?,
        dead_tag_page: path("dead_tag_page")?,
        operator_name,
        operator_contact,
        root,
        host,
    })
}

/// Issue 36: an entry's `tls`, a table of exactly `cert` and `key`, both
/// paths (`tls = "acme"` is the top level's alone: every domain is ordered
/// then).
fn cert_files(value: Option<&toml::Value>, host: &Host) -> Result<Option<CertFiles>, DomainError> {
    let Some(value) = value else {
        return Ok(None);
    };
    let bad = |why: &str| DomainError::BadValue {
        at: host.to_string(),
        field: "tls",
        why: why.to_owned(),
    };
    let shape = "expected tls = { cert = \"PATH\", key = \"PATH\" }";
    let table = value.as_table().ok_or_else(|| bad(shape))?;
    if table.keys().any(|k| k != "cert" && k != "key") {
        return Err(bad(shape));
    }
    let path = |k: &str| match table.get(k) {
        Some(toml::Value::String(p)) if !p.is_empty() => Ok(PathBuf::from(p)),
        _ => Err(bad(shape)),
    };
    Ok(Some(CertFiles {
        cert: path("cert")?,
        key: path("key")?,
    }))
}

/// Whether a public URL's host is `host` (its port aside).
pub fn on_host(url: &PublicUrl, host: &Host) -> bool {
    let origin = url.origin();
    let rest = origin.split_once("://").map_or(origin, |(_, rest)| rest);
    host.matches(rest.as_bytes())
}

impl DomainEntry {
    /// The default domain's entry as the top-level keys it stands for
    /// (`sqlite` is `db`, `root` is `root_url`), each with its value as the
    /// file would hold it there.
    pub fn top_level(&self) -> Vec<(&'static str, &'static str, String)> {
        let path = |p: &Option<PathBuf>| p.as_ref().map(|p| p.display().to_string());
        let store = match &self.store {
            Some(DomainStore::Sqlite(p)) => Some(("sqlite", "db", p.display().to_string())),
            Some(DomainStore::CouchDb(db)) => {
                Some(("couchdb_db", "couchdb_db", db.as_str().to_owned()))
            }
            None => None,
        };
        [
            self.public_url
                .as_ref()
                .map(|u| ("public_url", "public_url", u.to_string())),
            store,
            path(&self.access_log).map(|p| ("access_log", "access_log", p)),
            path(&self.snapshot_file).map(|p| ("snapshot_file", "snapshot_file", p)),
            self.operator_name
                .clone()
                .map(|s| ("operator_name", "operator_name", s)),
            self.operator_contact
                .clone()
                .map(|s| ("operator_contact", "operator_contact", s)),
            path(&self.dead_tag_page).map(|p| ("dead_tag_page", "dead_tag_page", p)),
            self.root
                .as_ref()
                .map(|r| ("root", "root_url", r.as_str().to_owned())),
            path(&self.tls.as_ref().map(|t| t.cert.clone())).map(|p| ("tls", "tls_cert", p)),
            path(&self.tls.as_ref().map(|t| t.key.clone())).map(|p| ("tls", "tls_key", p)),
        ]
        .into_iter()
        .flatten()
        .collect()
    }

    /// The entry with its paths relative to `dir` (the file's directory),
    /// as the top-level paths are.
    pub fn relative_to(mut self, dir: &Path) -> Self {
        let fix = |p: &mut PathBuf| {
            if p.is_relative() {
                *p = dir.join(&*p);
            }
        };
        if let Some(DomainStore::Sqlite(p)) = &mut self.store {
            fix(p);
        }
        for p in [
            &mut self.access_log,
            &mut self.snapshot_file,
            &mut self.dead_tag_page,
        ]
        .into_iter()
        .flatten()
        {
            fix(p);
        }
        if let Some(tls) = &mut self.tls {
            fix(&mut tls.cert);
            fix(&mut tls.key);
        }
        self
    }
}

/// A domain other than the default, ready to start: what `startup` builds
/// its site from.
#[derive(Debug, Clone)]
pub struct DomainSettings {
    pub host: Host,
    pub public_url: PublicUrl,
    pub store: StoreSettings,
    pub access_log: PathBuf,
    /// `None`: no snapshot file.
    pub snapshot_file: Option<PathBuf>,
    pub dead_tag: DeadTagPage,
    pub root: Option<Destination>,
}

/// The domains `serve` starts with (issue 36).
#[derive(Debug, Clone, Default)]
pub struct ServedDomains {
    /// The default domain's host; `None` without `[[domains]]`, when no
    /// request's host is looked at.
    pub default_host: Option<Host>,
    pub others: Vec<DomainSettings>,
    pub unknown_host: UnknownHost,
}

/// What no two domains may share, one row a domain: its store (a path or
/// `couchdb:NAME`), access log and snapshot file.
#[derive(Debug, Clone)]
pub struct DomainFiles {
    pub host: Host,
    pub store: String,
    pub access_log: Option<PathBuf>,
    pub snapshot_file: Option<PathBuf>,
}

impl DomainFiles {
    /// The row for a domain on `store`; paths compared made absolute, so
    /// `./a.db` and `a.db` are one file.
    pub fn new(
        host: Host,
        store: &StoreSettings,
        access_log: Option<&Path>,
        snapshot_file: Option<&Path>,
    ) -> Self {
        let abs = |p: &Path| std::path::absolute(p).unwrap_or_else(|_| p.to_owned());
        Self {
            host,
            store: match store {
                StoreSettings::Sqlite { path } => abs(path).display().to_string(),
                StoreSettings::CouchDb(c) => format!("CouchDB database {}", c.db.as_str()),
            },
            access_log: access_log.map(abs),
            snapshot_file: snapshot_file.map(abs),
        }
    }
}

/// Refuses two domains sharing a store, an access log or a snapshot file
/// (one domain's log may not be another's snapshot either).
pub fn check_distinct(rows: &[DomainFiles]) -> Result<(), DomainError> {
    let files = |r: &DomainFiles| {
        [
            ("store", Some(r.store.clone())),
            (
                "access log",
                r.access_log.as_ref().map(|p| p.display().to_string()),
            ),
            (
                "snapshot file",
                r.snapshot_file.as_ref().map(|p| p.display().to_string()),
            ),
        ]
        .into_iter()
        .filter_map(|(what, f)| Some((what, f?)))
        .collect::<Vec<_>>()
    };
    for (i, a) in rows.iter().enumerate() {
        for b in &rows[i + 1..] {
            for (what, fa) in files(a) {
                if files(b).iter().any(|(_, fb)| *fb == fa) {
                    return Err(DomainError::Shared {
                        a: a.host.clone(),
                        b: b.host.clone(),
                        what,
                        shared: fa,
                    });
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn domains(text: &str) -> Result<Vec<DomainEntry>, DomainError> {
        let table: toml::Table = text.parse().expect("TOML");
        parse(table.get("domains").expect("domains"))
    }

    const TWO: &str = r#"
        [[domains]]
        host = "go.brand-a.com"
        public_url = "https://go.brand-a.com"
        root = "https://brand-a.com/"

        [[domains]]
        host = "QR.Brand-B.ie"
        public_url = "https://qr.brand-b.ie"
        sqlite = "brand-b.db"
        access_log = "brand-b.access.log"
        operator_name = "Brand B"
        operator_contact = "tags@brand-b.ie"
    "#;

    #[test]
    fn the_first_is_the_default_unless_one_is_marked() {
        let d = domains(TWO).expect("valid");
        assert_eq!(d.len(), 2);
        assert!(d[0].default && !d[1].default);
        assert_eq!(d[1].host.as_str(), "qr.brand-b.ie");
        assert_eq!(d[1].store, Some(DomainStore::Sqlite("brand-b.db".into())));
        let marked = TWO.replace(
            "sqlite = \"brand-b.db\"",
            "sqlite = \"brand-b.db\"\ndefault = true",
        );
        let d = domains(&marked).expect("valid");
        assert!(!d[0].default && d[1].default);
        assert_eq!(
            d[0].root.as_ref().map(Destination::as_str),
            Some("https://brand-a.com/")
        );
    }

    #[test]
    fn the_default_entry_is_the_top_level_keys() {
        let d = domains(TWO).expect("valid");
        let keys: Vec<_> = d[0]
            .top_level()
            .into_iter()
            .map(|(_, k, v)| (k, v))
            .collect();
        assert_eq!(
            keys,
            [
                ("public_url", "https://go.brand-a.com".to_owned()),
                ("root_url", "https://brand-a.com/".to_owned())
            ]
        );
        let b = d[1].clone().relative_to(Path::new("/etc/q"));
        assert_eq!(
            b.store,
            Some(DomainStore::Sqlite("/etc/q/brand-b.db".into()))
        );
        assert_eq!(b.access_log, Some("/etc/q/brand-b.access.log".into()));
    }

    #[test]
    fn mistakes_are_one_line_each() {
        let one = |fields: &str| format!("[[domains]]\n{fields}\n");
        for (text, said) in [
            ("domains = 'x'".to_owned(), "expected a list of tables"),
            ("domains = []".to_owned(), "expected a list of tables"),
            (
                one("public_url = 'https://a.example'"),
                "domain 1: give its `host`",
            ),
            (
                one("host = 'a.example'\nsqllite = 'x'"),
                "unknown field `sqllite`",
            ),
            (
                one("host = 'https://a.example'"),
                "domain 1: `host`: not a host name",
            ),
            (
                one("host = 'a.example'\npublic_url = 'https://b.example'"),
                "domain a.example: its public_url https://b.example is on another host",
            ),
            (
                one("host = 'a.example'\npublic_url = 'https://a.example.evil'"),
                "is on another host",
            ),
            (
                format!(
                    "{}{}",
                    one("host = 'a.example'"),
                    one("host = 'A.example.'")
                ),
                "domain a.example is listed twice",
            ),
            (
                format!(
                    "{}{}",
                    one("host = 'a.example'\ndefault = true"),
                    one("host = 'b.example'\ndefault = true")
                ),
                "domains a.example and b.example are both marked default",
            ),
            (
                one("host = 'a.example'\nsqlite = 'a.db'\ncouchdb_db = 'a'"),
                "give its store, sqlite",
            ),
            (
                one("host = 'a.example'\naccess_log = '-'"),
                "never standard output",
            ),
            (
                one("host = 'a.example'\nroot = '/home'"),
                "domain a.example: `root`",
            ),
            (
                one("host = 'a.example'\ndefault = 'yes'"),
                "expected true or false",
            ),
            (one("host = 7"), "domain 1: `host`: expected a string"),
        ] {
            let table: toml::Table = text.parse().expect("TOML");
            let err = parse(table.get("domains").expect("domains")).expect_err(&text);
            let err = err.to_string();
            assert!(err.contains(said), "{text}: {err}");
            assert!(!err.contains('\n'), "{err}");
        }
    }

    #[test]
    fn a_public_url_with_a_port_is_on_its_host() {
        let host = Host::parse("a.example").expect("host");
        let url = PublicUrl::parse("http://a.example:8080").expect("url");
        assert!(on_host(&url, &host));
        let ip = Host::parse("127.0.0.1").expect("host");
        assert!(on_host(
            &PublicUrl::parse("http://127.0.0.1:9").expect("url"),
            &ip
        ));
    }

    #[test]
    fn no_two_domains_share_a_file() {
        let row = |host: &str, db: &str, log: &str, snap: Option<&str>| {
            DomainFiles::new(
                Host::parse(host).expect("host"),
                &StoreSettings::Sqlite { path: db.into() },
                Some(Path::new(log)),
                snap.map(Path::new),
            )
        };
        let a = row("a.example", "/d/a.db", "/d/a.log", Some("/d/a.snap"));
        let b = row("b.example", "/d/b.db", "/d/b.log", None);
        assert_eq!(check_distinct(&[a.clone(), b]), Ok(()));
        for (b, said) in [
            (
                row("b.example", "/d/a.db", "/d/b.log", None),
                "share the store /d/a.db",
            ),
            (
                row("b.example", "/d/b.db", "/d/a.log", None),
                "share the access log /d/a.log",
            ),
            (
                row("b.example", "/d/b.db", "/d/b.log", Some("/d/a.snap")),
                "share the snapshot file /d/a.snap",
            ),
            (
                row("b.example", "/d/b.db", "/d/a.snap", None),
                "share the snapshot file /d/a.snap",
            ),
        ] {
            let err = check_distinct(&[a.clone(), b]).expect_err(said).to_string();
            assert!(err.contains(said), "{err}");
            assert!(
                err.starts_with("domains a.example and b.example share"),
                "{err}"
            );
        }
    }
}
