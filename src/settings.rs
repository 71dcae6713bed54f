//! Everything the service is started with, already validated: the CLI and the
//! tests both build a [`Settings`] and hand it to
//! [`Application::build`](crate::startup::Application::build).

use std::fmt;
use std::path::PathBuf;

pub use crate::access_log::{AccessLogTarget, WriterOptions};
use crate::tracking::cookie::CookieName;

/// The origin that short URLs are printed with, e.g. `https://0x1f.ie`.
#[derive(Clone, PartialEq, Eq)]
pub struct PublicUrl {
    /// ASCII-serialized origin, no trailing slash.
    origin: String,
    https: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "the public URL must be an http(s) origin with nothing after the host, like https://0x1f.ie: {0:?}"
)]
pub struct InvalidPublicUrl(pub String);

impl PublicUrl {
    pub fn parse(s: &str) -> Result<Self, InvalidPublicUrl> {
        let bad = || InvalidPublicUrl(s.to_owned());
        let u = url::Url::parse(s).map_err(|_| bad())?;
        let plain_origin = matches!(u.scheme(), "http" | "https")
            && u.host_str().is_some()
            && u.username().is_empty()
            && u.password().is_none()
            && u.path() == "/"
            && u.query().is_none()
            && u.fragment().is_none();
        if !plain_origin {
            return Err(bad());
        }
        Ok(Self {
            origin: u.origin().ascii_serialization(),
            https: u.scheme() == "https",
        })
    }

    pub fn origin(&self) -> &str {
        &self.origin
    }

    pub fn is_https(&self) -> bool {
        self.https
    }

    /// The short URL for `key`: what is printed on the tag.
    pub fn short_url(&self, key: &str) -> String {
        format!("{}/{}", self.origin, key)
    }

    /// The origin a listener answers on when no public URL is configured:
    /// `http://` and its bound address (an unspecified address is not one
    /// anybody can reach, so it stays as bound and counts as local).
    pub fn of_listener(addr: std::net::SocketAddr) -> Self {
        Self {
            origin: format!("http://{addr}"),
            https: false,
        }
    }

    /// Whether a tag printed with this origin can only work on this machine
    /// or its own network: a loopback, private-range, link-local or
    /// unspecified address (IPv4 or IPv6), or `localhost` and its
    /// subdomains. Printing one needs `--allow-local-url`.
    pub fn is_local(&self) -> bool {
        let Ok(u) = url::Url::parse(&self.origin) else {
            return false;
        };
        match u.host() {
            Some(url::Host::Domain(d)) => {
                let d = d.trim_end_matches('.').to_ascii_lowercase();
                d == "localhost" || d.ends_with(".localhost")
            }
            Some(url::Host::Ipv4(ip)) => is_local_v4(ip),
            Some(url::Host::Ipv6(ip)) => match ip.to_ipv4_mapped() {
                Some(v4) => is_local_v4(v4),
                None => {
                    let first = ip.segments()[0];
                    ip.is_loopback()
                        || ip.is_unspecified()
                        || (first & 0xfe00) == 0xfc00 // unique local, fc00::/7
                        || (first & 0xffc0) == 0xfe80 // link-local, fe80::/10
                }
            },
            None => false,
        }
    }
}

fn is_local_v4(ip: std::net::Ipv4Addr) -> bool {
    let [a, b, ..] = ip.octets();
    ip.is_loopback()
        || ip.is_private()
        || ip.is_link_local()
        || ip.is_unspecified()
        // Carrier-grade NAT, 100.64.0.0/10: no more reachable from outside.
        || (a == 100 && (64..128).contains(&b))
}

impl std::str::FromStr for PublicUrl {
    type Err = InvalidPublicUrl;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

impl fmt::Display for PublicUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.origin)
    }
}

impl fmt::Debug for PublicUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "PublicUrl({})", self.origin)
    }
}

/// Which store holds the links.
#[derive(Debug, Clone)]
pub enum StoreSettings {
    /// The embedded SQLite file.
    Sqlite { path: PathBuf },
    /// A CouchDB database (or another server speaking its HTTP API).
    CouchDb(CouchSettings),
}

/// Where the CouchDB store is and whom to be there. `Debug` is safe to log:
/// the password is a [`Secret`] and the URL cannot carry credentials.
#[derive(Debug, Clone)]
pub struct CouchSettings {
    pub url: CouchUrl,
    pub db: CouchDbName,
    pub credentials: Option<Credentials>,
}

impl CouchSettings {
    pub fn new(url: CouchUrl, db: CouchDbName) -> Self {
        Self {
            url,
            db,
            credentials: None,
        }
    }

    pub fn with_credentials(mut self, user: impl Into<String>, password: Option<Secret>) -> Self {
        self.credentials = Some(Credentials {
            user: user.into(),
            password,
        });
        self
    }
}

/// HTTP basic credentials for CouchDB.
#[derive(Debug, Clone)]
pub struct Credentials {
    pub user: String,
    pub password: Option<Secret>,
}

/// A value that must never reach a log line, an error message or `--help`.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    pub fn new(s: impl Into<String>) -> Self {
        Self(s.into())
    }

    /// The secret itself, for the one place that sends it.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(***)")
    }
}

impl std::str::FromStr for Secret {
    type Err = std::convert::Infallible;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Ok(Self::new(s))
    }
}

/// The root of a CouchDB server, e.g. `http://127.0.0.1:5984`.
///
/// Credentials in the URL are refused rather than stripped: a URL is printed
/// in errors and logs, so the only safe URL is one that never held a secret.
/// A path prefix (a CouchDB behind a reverse proxy under `/couch/`) is refused
/// too, because every request path is built from the server root.
#[derive(Clone, PartialEq, Eq)]
pub struct CouchUrl(url::Url);

/// Why a CouchDB URL or database name was refused. The messages never repeat
/// the URL, since a refused one may hold a password.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InvalidCouchSettings {
    #[error("the CouchDB URL must be an http(s) server root like http://127.0.0.1:5984")]
    BadUrl,
    #[error(
        "put CouchDB credentials in --couchdb-user and --couchdb-password (or QRTAG_COUCHDB_USER and QRTAG_COUCHDB_PASSWORD), not in the URL"
    )]
    CredentialsInUrl,
    #[error(
        "the CouchDB URL must be the server root, without a path, query or fragment (a path prefix is not supported)"
    )]
    PathPrefix,
    #[error(
        "a CouchDB database name starts with a lowercase letter and continues with a-z, 0-9 and _$()+-/, at most 238 characters: {0:?}"
    )]
    BadDbName(String),
}

impl CouchUrl {
    pub fn parse(s: &str) -> Result<Self, InvalidCouchSettings> {
        let u = url::Url::parse(s).map_err(|_| InvalidCouchSettings::BadUrl)?;
        if !matches!(u.scheme(), "http" | "https") || u.host_str().is_none_or(str::is_empty) {
            return Err(InvalidCouchSettings::BadUrl);
        }
        if !u.username().is_empty() || u.password().is_some() {
            return Err(InvalidCouchSettings::CredentialsInUrl);
        }
        if u.path() != "/" || u.query().is_some() || u.fragment().is_some() {
            return Err(InvalidCouchSettings::PathPrefix);
        }
        Ok(Self(u))
    }

    pub fn as_url(&self) -> &url::Url {
        &self.0
    }

    /// The origin, for messages: `http://127.0.0.1:5984`.
    pub fn origin(&self) -> String {
        self.0.origin().ascii_serialization()
    }
}

impl fmt::Display for CouchUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.origin())
    }
}

impl fmt::Debug for CouchUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "CouchUrl({})", self.origin())
    }
}

/// A database name CouchDB accepts. Checked up front so that a typo is a
/// one-line usage error rather than an HTTP 400 at the first request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CouchDbName(String);

impl CouchDbName {
    pub fn parse(s: &str) -> Result<Self, InvalidCouchSettings> {
        let mut bytes = s.bytes();
        let valid = s.len() <= 238
            && bytes.next().is_some_and(|b| b.is_ascii_lowercase())
            && bytes
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"_$()+-/".contains(&b));
        if valid {
            Ok(Self(s.to_owned()))
        } else {
            Err(InvalidCouchSettings::BadDbName(s.to_owned()))
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::str::FromStr for CouchDbName {
    type Err = InvalidCouchSettings;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

impl fmt::Display for CouchDbName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// What one node of a several-node service calls itself in its own
/// diagnostics and metrics. Kept to characters that need no quoting in a log
/// line, a label value or a file name, so it reads the same everywhere.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeName(String);

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("a node name is 1 to 64 letters, digits, '.', '_' or '-': {0:?}")]
pub struct InvalidNodeName(pub String);

impl NodeName {
    pub fn parse(s: &str) -> Result<Self, InvalidNodeName> {
        let valid = (1..=64).contains(&s.len())
            && s.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b));
        if valid {
            Ok(Self(s.to_owned()))
        } else {
            Err(InvalidNodeName(s.to_owned()))
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::str::FromStr for NodeName {
    type Err = InvalidNodeName;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

impl fmt::Display for NodeName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[derive(Debug, Clone)]
pub struct Settings {
    /// Public listener: every path is a redirect request. Port 0 picks a free port.
    pub listen: String,
    /// Admin listener: health, readiness, metrics, QR codes. Never public by default.
    pub admin_listen: String,
    /// This node's name in diagnostics and metrics; the access log does not carry it.
    pub node_name: Option<NodeName>,
    /// The origin short URLs are printed with; `None` answers with the
    /// public listener's own address (`http://` and the bound address).
    pub public_url: Option<PublicUrl>,
    /// While serving, answer with the public URL recorded with the links
    /// when it changes ([`crate::store::live_url::watch`]); off for a one-off
    /// `--public-url`.
    pub follow_recorded_url: bool,
    /// QR codes from the admin listener print scheme and host in capitals.
    pub qr_uppercase_prefix: bool,
    /// `--print-logo`, decoded: what a print job's `logo=true` draws.
    pub print_logo: Option<std::sync::Arc<crate::print::tag_image::ServerLogo>>,
    pub store: StoreSettings,
    /// Worker threads of the public listener; `None` means one per core.
    pub workers: Option<usize>,
    /// Where the public listener's access log goes.
    pub access_log: AccessLogTarget,
    pub access_log_options: WriterOptions,
    /// The tracking cookie; `None` turns tracking off (the log shows `-`).
    pub tracking: Option<TrackingSettings>,
    /// Proxies whose `X-Forwarded-For` is believed; see [`crate::tracking::client_ip`].
    pub trusted_proxies: Vec<ipnet::IpNet>,
    /// How much of a client's address the access log keeps.
    pub client_ip_mode: crate::tracking::client_ip::ClientIpMode,
    /// How long a request may take from its first byte to its last, head
    /// and body, on the public and the admin listener.
    pub request_timeout: std::time::Duration,
    /// From SIGTERM to the listeners stopping, `/readyz` draining meanwhile.
    pub shutdown_grace: std::time::Duration,
    /// Open connections one client address may hold on each of the public
    /// and the admin listener (0: no cap).
    pub max_connections_per_ip: usize,
    /// Open connections on each of the public and the admin listener in all.
    pub max_connections: usize,
    /// Whether the operator set `max_connections` (not its default): the
    /// open-file limit lowering it is then worth a warning.
    pub max_connections_chosen: bool,
    /// Where the server keeps its copy of the links for a fast restart
    /// (see [`crate::snapshot::saver`]); `None` turns it off.
    pub snapshot_file: Option<PathBuf>,
    /// The DIDComm listener; `None` when `--api-listen` is not given.
    pub api: Option<ApiSettings>,
    /// Scan counts kept current from the access log for the console (see
    /// [`crate::scan_index`]); `None`, the default, reads nothing. Follows
    /// the access log, which must then be a file, unless its `logs` name
    /// others (`--scan-log`).
    pub scan_index: Option<crate::scan_index::ScanIndexSettings>,
    /// The web console on the admin listener; `None` unless `--console`.
    pub console: Option<ConsoleSettings>,
}

/// The web console (see [`crate::console`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ConsoleSettings {
    /// Mark the session cookie `Secure`: the console is reached over https
    /// (a TLS proxy in front of the admin listener). The public URL cannot
    /// tell: the console is usually reached over plain http on loopback or a
    /// tunnel even when the tags say https, and a `Secure` cookie over http
    /// would never come back.
    pub secure_cookie: bool,
    /// Where a bare expiry date ends (`--time-zone`).
    pub time_zone: chrono_tz::Tz,
}

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
    pub policy: crate::didcomm::protocol::Policy,
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
            policy: crate::didcomm::protocol::Policy {
                slugs: true,
                ..Default::default()
            },
            allow_private_endpoints: false,
            rate_per_second: crate::server::rest::auth::RATE_PER_SECOND,
            strangers_per_second: crate::server::rest::strangers::STRANGERS_PER_SECOND,
            couch_writer: None,
        }
    }
}

/// The snapshot file beside an embedded database: `qrtag.db.snapshot`.
pub fn default_snapshot_file(db: &std::path::Path) -> PathBuf {
    let mut name = db.as_os_str().to_owned();
    name.push(".snapshot");
    PathBuf::from(name)
}

/// The tracking-secret file beside an embedded database:
/// `qrtag.db.tracking-secret`.
pub fn default_tracking_secret_file(db: &std::path::Path) -> PathBuf {
    let mut name = db.as_os_str().to_owned();
    name.push(".tracking-secret");
    PathBuf::from(name)
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TrackingSettings {
    pub cookie_name: CookieName,
    /// The secrets that sign and verify cookies (see
    /// [`crate::tracking::secret`]); created on first use, shared by all nodes.
    pub secret_file: PathBuf,
}

impl Settings {
    /// The public URL once [`Application::build`](crate::startup::Application::build)
    /// has filled it in from the bound address if it was `None`.
    pub fn public_url(&self) -> PublicUrl {
        self.public_url.clone().unwrap_or_else(|| PublicUrl {
            origin: format!("http://{}", self.listen),
            https: false,
        })
    }

    /// Settings for a local run on the embedded store at `db`. The access log
    /// goes beside the database (not into the working directory), so tests
    /// that use a temporary database leave nothing behind.
    pub fn local(db: PathBuf) -> Self {
        Self {
            listen: "127.0.0.1:8080".into(),
            qr_uppercase_prefix: false,
            print_logo: None,
            admin_listen: "127.0.0.1:8081".into(),
            node_name: None,
            public_url: None,
            follow_recorded_url: false,
            access_log: AccessLogTarget::Path(db.with_file_name("access.log")),
            snapshot_file: Some(default_snapshot_file(&db)),
            request_timeout: std::time::Duration::from_secs(10),
            shutdown_grace: std::time::Duration::from_secs(5),
            max_connections_per_ip: 256,
            max_connections: 25_000,
            max_connections_chosen: false,
            tracking: Some(TrackingSettings {
                cookie_name: CookieName::default(),
                secret_file: default_tracking_secret_file(&db),
            }),
            access_log_options: WriterOptions::default(),
            store: StoreSettings::Sqlite { path: db },
            workers: None,
            trusted_proxies: Vec::new(),
            client_ip_mode: crate::tracking::client_ip::ClientIpMode::Full,
            api: None,
            scan_index: None,
            console: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn node_name_needs_no_quoting() {
        for ok in ["a", "edge-1", "dub_2.example", &"n".repeat(64)] {
            assert_eq!(
                NodeName::parse(ok).map(|n| n.to_string()),
                Ok(ok.to_owned())
            );
        }
        for bad in ["", "edge 1", "a\"b", "node=1", "caf\u{e9}", &"n".repeat(65)] {
            assert!(NodeName::parse(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn local_origins() {
        for local in [
            "http://127.0.0.1:8080",
            "http://127.9.9.9",
            "http://10.1.2.3",
            "http://172.16.0.1",
            "http://192.168.1.10:8080",
            "http://169.254.1.1",
            "http://0.0.0.0:8080",
            "http://100.64.0.1",
            "http://[::1]:8080",
            "http://[::]",
            "http://[fd00::1]",
            "http://[fe80::1]",
            "http://[::ffff:192.168.0.1]",
            "http://localhost:8080",
            "http://LOCALHOST",
            "http://qrtag.localhost",
        ] {
            assert!(PublicUrl::parse(local).expect(local).is_local(), "{local}");
        }
        for public in [
            "https://0x1f.ie",
            "http://93.184.215.14",
            "http://172.32.0.1",
            "http://100.128.0.1",
            "http://[2001:db8::1]",
            "https://localhost.example",
            "https://mylocalhost",
        ] {
            assert!(
                !PublicUrl::parse(public).expect(public).is_local(),
                "{public}"
            );
        }
    }

    #[test]
    fn public_url_is_an_origin() {
        let p = PublicUrl::parse("https://0x1f.ie").expect("valid");
        assert_eq!(p.short_url("H83if"), "https://0x1f.ie/H83if");
        assert!(p.is_https());
        assert_eq!(
            PublicUrl::parse("HTTPS://Bücher.example:443/").map(|p| p.origin().to_owned()),
            Ok("https://xn--bcher-kva.example".into())
        );
        for bad in [
            "0x1f.ie",
            "ftp://a.example",
            "https://a.example/x",
            "https://a.example/?q",
            "https://u@a.example",
        ] {
            assert!(PublicUrl::parse(bad).is_err(), "{bad:?} accepted");
        }
    }

    #[test]
    fn couch_url_is_a_server_root_without_credentials() {
        let u = CouchUrl::parse("http://127.0.0.1:5984/").expect("valid");
        assert_eq!(u.to_string(), "http://127.0.0.1:5984");
        assert!(CouchUrl::parse("https://couch.example").is_ok());
        let cases = [
            ("127.0.0.1:5984", InvalidCouchSettings::BadUrl),
            ("ftp://couch.example", InvalidCouchSettings::BadUrl),
            ("mailto:a@b.example", InvalidCouchSettings::BadUrl),
            (
                "http://admin:hunter2@couch.example",
                InvalidCouchSettings::CredentialsInUrl,
            ),
            (
                "http://admin@couch.example",
                InvalidCouchSettings::CredentialsInUrl,
            ),
            (
                "http://couch.example/couch/",
                InvalidCouchSettings::PathPrefix,
            ),
            (
                "http://couch.example/?x=1",
                InvalidCouchSettings::PathPrefix,
            ),
        ];
        for (s, want) in cases {
            assert_eq!(CouchUrl::parse(s), Err(want), "{s}");
        }
        let msg = CouchUrl::parse("http://admin:hunter2@couch.example")
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(
            !msg.contains("hunter2"),
            "error repeats the password: {msg}"
        );
    }

    #[test]
    fn couch_db_names() {
        for ok in ["links", "a", "qr_tags$(1)+-/x"] {
            assert!(CouchDbName::parse(ok).is_ok(), "{ok:?} rejected");
        }
        for bad in [
            "",
            "Links",
            "_users",
            "1links",
            "links.db",
            &"a".repeat(239),
        ] {
            assert!(CouchDbName::parse(bad).is_err(), "{bad:?} accepted");
        }
    }

    #[test]
    fn secrets_stay_out_of_debug_output() {
        let s = CouchSettings::new(
            CouchUrl::parse("http://couch.example").expect("url"),
            CouchDbName::parse("links").expect("db"),
        )
        .with_credentials("qrtag", Some(Secret::new("hunter2")));
        let shown = format!("{:?}", StoreSettings::CouchDb(s));
        assert!(!shown.contains("hunter2"), "{shown}");
        assert!(shown.contains("qrtag") && shown.contains("couch.example"));
    }
}
