//! Everything the service is started with, already validated: the CLI and the
//! tests both build a [`Settings`] and hand it to
//! [`Application::build`](crate::startup::Application::build).

use std::path::PathBuf;

// Issue 36: `[[domains]]`.
pub mod domains;

pub use crate::access_log::{AccessLogTarget, WriterOptions};
use crate::console::ConsoleSettings;
use crate::server::api::ApiSettings;
use crate::store::options::StoreSettings;
use crate::tracking::TrackingSettings;
use crate::tracking::cookie::CookieName;
use crate::values::node_name::NodeName;
use crate::values::public_url::PublicUrl;

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
    /// Issue 38: `--scans-to`, the access log's lines sent to ClickHouse.
    pub scans_to: Option<crate::clickhouse::sink::SinkSettings>,
    /// Issue 38: `--scans-from`, where the REST API reads a link's scans.
    pub scans_from: Option<crate::clickhouse::ClickHouseUrl>,
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
    /// (see [`crate::store::saver`]); `None` turns it off.
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
    /// The page a browser gets for a key that leads nowhere (issue 33).
    pub dead_tag: crate::server::dead_tag::DeadTagPage,
    /// Issue 34: `--geoip-db`, opened, for the public listener's `country`
    /// rules (the scan index has its own copy in `scan_index`). Whether a
    /// console or REST write may save such a rule is read from here too
    /// ([`Settings::rule_capabilities`]).
    pub geoip: Option<GeoIp>,
    /// Issue 36: HTTPS on the public listener with these certificate
    /// files (and the port 80 redirect, HSTS); `None`, the default and the
    /// reverse-proxy setup, serves plain HTTP.
    pub tls: Option<crate::tls::TlsSettings>,
    /// Issue 36: where `/` sends a browser on the default domain
    /// (`--root-url`); `None`: `/` is an unknown key, as before.
    pub root_url: Option<crate::values::destination::Destination>,
    /// Issue 36: the domains besides the default one, and how a host of
    /// none is answered; the default (no `[[domains]]`) routes nothing.
    pub domains: domains::ServedDomains,
}

/// Issue 34: an opened `--geoip-db` in the settings (the database itself
/// prints as nothing).
#[derive(Clone)]
pub struct GeoIp(pub crate::stats::dimensions::place::GeoDb);

impl std::fmt::Debug for GeoIp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("GeoIp")
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

impl Settings {
    /// What a link's rules may ask of this server, for every surface that
    /// judges a rule before saving it: derived from [`Settings::geoip`]
    /// alone, so the console and the REST API cannot take a `country`
    /// rule the public listener has no database to answer.
    pub fn rule_capabilities(&self) -> crate::link::rules::Capabilities {
        crate::link::rules::Capabilities {
            geoip: self.geoip.is_some(),
        }
    }

    /// The public URL once [`Application::build`](crate::startup::Application::build)
    /// has filled it in from the bound address if it was `None`.
    pub fn public_url(&self) -> PublicUrl {
        self.public_url
            .clone()
            .unwrap_or_else(|| PublicUrl::of_listen_address(&self.listen))
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
            scans_to: None,
            scans_from: None,
            api: None,
            scan_index: None,
            console: None,
            dead_tag: Default::default(),
            geoip: None,
            tls: None,
            root_url: None,
            domains: Default::default(),
        }
    }
}
