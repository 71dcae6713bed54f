//! Building the running service from [`Settings`]: open the store, start the
//! follower that fills the snapshot, bind both listeners.
//!
//! Binding happens in [`Application::build`], before anything runs, so that
//! callers (tests on port 0 especially) learn the real addresses up front.

pub mod fd_budget;
pub mod file_size_limit;
// Issue 36: one domain's running parts.
pub mod site;

use std::net::{SocketAddr, TcpListener};
use std::sync::Arc;
use std::time::Duration;

use actix_http::body::MessageBody;
use actix_http::error::DispatchError;
use actix_http::{HttpService, KeepAlive};
use actix_server::Server;
use actix_service::{
    IntoServiceFactory, Service, ServiceFactory, ServiceFactoryExt, fn_service, map_config,
};
use actix_web::dev::AppConfig;
use actix_web::{App, web};

use crate::access_log::{AccessLog, AccessLogError, AccessLogTarget};
use crate::server::request_line::{LogOwnAnswer, OwnAnswerLog, RequestLineIo};
use crate::server::{admin, public};
use crate::settings::Settings;
use crate::snapshot::Snapshot;
use crate::store::options::StoreSettings;
use crate::store::saver::{self, Saver};
use crate::store::{self, StoreError};
use crate::tracking::cookie::TrackingCookie;
use crate::values::public_url::PublicUrl;

#[derive(Debug, thiserror::Error)]
pub enum StartupError {
    #[error("cannot listen on {addr} ({}, {}): {source}", listener.option(), listener.env())]
    Bind {
        addr: String,
        listener: Listener,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    AccessLog(#[from] AccessLogError),
    #[error("cannot listen for SIGHUP: {0}")]
    Signal(#[source] std::io::Error),
    #[error(transparent)]
    Identity(#[from] crate::didcomm::identity::IdentityError),
    #[error(transparent)]
    TrackingSecret(#[from] crate::tracking::secret::SecretFileError),
    #[error(
        "the scan index follows an access log file, not standard output: give --scan-log PATTERN"
    )]
    ScanIndexWithoutFile,
    #[error("cannot start the scan index: {0}")]
    ScanIndex(#[source] std::io::Error),
    #[error("cannot start the console's key order: {0}")]
    ConsoleKeys(#[source] std::io::Error),
    #[error(transparent)]
    Descriptors(#[from] fd_budget::TooFewDescriptors),
    #[error(transparent)]
    FileSize(#[from] file_size_limit::BelowDatabase),
    /// Issue 36: a certificate or key that cannot be served.
    #[error(transparent)]
    Tls(#[from] crate::tls::certified::CertError),
    #[error("cannot set up TLS: {0}")]
    TlsConfig(#[source] rustls::Error),
    #[error("cannot open the ACME certificate store: {0}")]
    AcmeStore(#[source] crate::acme::StoreError),
    /// Issue 36: on CouchDB, the account `serve` runs with may not read
    /// the certificates database: the operator's to fix (exit 2).
    #[error("--tls acme on CouchDB: {0}")]
    AcmeAccess(#[source] crate::acme::StoreError),
    /// Issue 38: ClickHouse refused the user, or holds no (or another)
    /// qrtag schema: the operator's to fix (exit 2).
    #[error(transparent)]
    ScanSink(#[from] crate::clickhouse::sink::SinkRefused),
    #[error("cannot start the ClickHouse scan sink: {0}")]
    ScanSinkThread(#[source] std::io::Error),
}

/// Which listener an address is for, so a port clash names the setting to
/// change: every listener's default is a fixed port, and two services (or two
/// qrtag instances) on one machine meet on the admin port first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Listener {
    Public,
    Admin,
    Api,
    /// Issue 36: the plain listener beside HTTPS.
    Http,
}

impl Listener {
    pub fn option(self) -> &'static str {
        match self {
            Self::Public => "--listen",
            Self::Admin => "--admin-listen",
            Self::Api => "--api-listen",
            Self::Http => "--http-listen",
        }
    }

    pub fn env(self) -> &'static str {
        match self {
            Self::Public => "QRTAG_LISTEN",
            Self::Admin => "QRTAG_ADMIN_LISTEN",
            Self::Api => "QRTAG_API_LISTEN",
            Self::Http => "QRTAG_HTTP_LISTEN",
        }
    }

    fn bind_error(self, addr: &str) -> impl FnOnce(std::io::Error) -> StartupError {
        let addr = addr.to_owned();
        move |source| StartupError::Bind {
            addr,
            listener: self,
            source,
        }
    }
}

pub struct Application {
    public_addr: SocketAddr,
    admin_addr: SocketAddr,
    /// Issue 36: the plain listener beside HTTPS, when `--http-listen`.
    http: Option<Server>,
    http_addr: Option<SocketAddr>,
    /// Issue 36: the certificates served, reloaded on SIGHUP.
    tls: Option<Arc<crate::tls::Tls>>,
    /// Issue 36: with `--tls acme`, the task that orders and renews them.
    renewers: Vec<Arc<crate::acme::Renewer>>,
    /// Issue 38: with `--scans-from`, what rolls up every domain's closed
    /// days in ClickHouse.
    roller: Option<crate::clickhouse::roller::Roller>,
    public: Server,
    admin: Server,
    api_addr: Option<SocketAddr>,
    api: Option<Server>,
    didcomm_did: Option<crate::didcomm::did::Did>,
    didcomm_on: bool,
    snapshot: Arc<Snapshot>,
    /// Issue 36: each domain's store, follower, saver, URL watch and
    /// access log; the default domain first.
    sites: Vec<site::RunningSite>,
    scan_index: Option<crate::scan_index::RunningIndex>,
    /// Issue 36: the other domains' scan indexes, each over its own log.
    other_indexes: Vec<crate::scan_index::RunningIndex>,
    /// The console's first-run setup link, when it offers one.
    console_setup_url: Option<String>,
    /// The origin short URLs are answered with (configured, or the bound
    /// public address).
    public_url: PublicUrl,
    /// What `serve` says at start when the open-file limit lowered the
    /// public listener's cap ([`fd_budget::lowered_line`]).
    connection_warning: Option<String>,
    /// Registered in `build`, so a SIGHUP that arrives once the addresses are
    /// known reopens the log instead of killing the process.
    hangup: tokio::signal::unix::Signal,
    /// SIGTERM and SIGINT, handled here rather than by each actix server,
    /// so the listeners keep serving through the drain.
    stop_signals: StopSignals,
    health: Arc<crate::metrics::health::Health>,
    /// Issue 38: `--scans-to`, finished after the access log's last line.
    scan_sink: Option<Arc<crate::clickhouse::sink::ScanSink>>,
    shutdown_grace: Duration,
}

/// The signals that stop the server.
struct StopSignals {
    terminate: tokio::signal::unix::Signal,
    interrupt: tokio::signal::unix::Signal,
}

impl StopSignals {
    fn register() -> Result<Self, StartupError> {
        use tokio::signal::unix::{SignalKind, signal};
        Ok(Self {
            terminate: signal(SignalKind::terminate()).map_err(StartupError::Signal)?,
            interrupt: signal(SignalKind::interrupt()).map_err(StartupError::Signal)?,
        })
    }

    /// The next SIGTERM or SIGINT.
    async fn next(&mut self) {
        tokio::select! {
            _ = self.terminate.recv() => {}
            _ = self.interrupt.recv() => {}
        }
    }
}

fn bind(addr: &str, which: Listener) -> Result<(TcpListener, SocketAddr), StartupError> {
    let listener = TcpListener::bind(addr).map_err(which.bind_error(addr))?;
    let local = listener.local_addr().map_err(which.bind_error(addr))?;
    Ok((listener, local))
}

/// What a listener's connections are held to: slow clients cannot hold
/// connections open (a deadline from a request's first byte to its last),
/// nor can one network take them all (a cap per /24 or /64) or everyone
/// together exhaust the process (a cap in all; from 75 % of it, waits
/// are cut short, `server::waits`).
struct Guards {
    workers: usize,
    request_timeout: Duration,
    max_connections: usize,
    max_connections_per_ip: usize,
    /// Counted by their own address, not their network.
    trusted_proxies: Vec<ipnet::IpNet>,
}

impl Guards {
    /// `caps` is the listener's share of the descriptor limit
    /// ([`fd_budget::split`]), not the bare settings.
    fn new(settings: &Settings, workers: usize, caps: fd_budget::ListenerCaps) -> Self {
        Self {
            workers: workers.max(1),
            request_timeout: settings.request_timeout,
            max_connections: caps.total,
            max_connections_per_ip: caps.per_ip,
            trusted_proxies: settings.trusted_proxies.clone(),
        }
    }
}

/// Worker threads of the public listener (`--workers`, else one per core).
fn public_workers(settings: &Settings) -> usize {
    settings
        .workers
        .unwrap_or_else(|| {
            std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get)
        })
        .max(1)
}

/// Worker threads of the DIDComm listener: a few, whatever the cores.
fn api_workers(settings: &Settings) -> usize {
    settings.workers.unwrap_or(2).clamp(1, 4)
}

/// The connection caps of every listener from the open-file limit the
/// process has (its soft limit raised to the hard one first).
fn connection_caps(
    settings: &Settings,
) -> Result<(fd_budget::Caps, fd_budget::Needs), StartupError> {
    let needs = fd_budget::Needs {
        max_connections: settings.max_connections,
        max_connections_per_ip: settings.max_connections_per_ip,
        worker_threads: public_workers(settings)
            + 1
            + settings.api.as_ref().map_or(0, |_| api_workers(settings)),
        api: settings.api.is_some(),
        couchdb: matches!(settings.store, StoreSettings::CouchDb(_)),
        other_domains: other_domains(settings),
    };
    let caps = fd_budget::split(fd_budget::open_file_limit(), &needs)?;
    Ok((caps, needs))
}

/// Issue 36: the other domains' stores by kind, for the descriptor budget.
fn other_domains(settings: &Settings) -> fd_budget::OtherDomains {
    let couchdb = settings
        .domains
        .others
        .iter()
        .filter(|d| matches!(d.store, StoreSettings::CouchDb(_)))
        .count();
    fd_budget::OtherDomains {
        sqlite: settings.domains.others.len() - couchdb,
        couchdb,
    }
}

/// A listener served by actix-http directly rather than through
/// `HttpServer`, which offers no way to wrap a connection: every connection
/// goes through [`RequestLineIo`], which gives each request its deadline
/// (and on the public listener lets a raw non-ASCII target reach the handler
/// and the access log instead of being refused by actix's parser), after
/// the per-network cap took its slot. The public and the admin listener are
/// both built here, so neither lacks what the other has.
///
/// The settings are `HttpServer`'s defaults, spelled out; so is its graceful
/// shutdown signal, which lets idle keep-alive connections close at once.
/// `AppConfig::default()` stands in for the host and address `HttpServer`
/// would give the app: nothing on either listener builds URLs from them.
/// `own_answers` logs the answers actix gives on its own (the public
/// listener's access log).
///
/// Issue 36: `accept` turns the accepted socket into the stream served,
/// given the request deadline: [`plain`] serves the socket itself, the
/// TLS handshake (`tls::listener::accept`) a TLS stream. The stream's type
/// is a type parameter, not an enum of the two, so a plain listener's reads
/// and writes reach the socket as they did before HTTPS.
fn guarded_server<F, I, S, B, A, Conn, Io>(
    name: &str,
    listener: TcpListener,
    addr: SocketAddr,
    guards: &Guards,
    own_answers: Option<LogOwnAnswer>,
    accept: A,
    app: F,
) -> std::io::Result<Server>
where
    A: Fn(tokio::net::TcpStream, Duration) -> Conn + Send + Clone + 'static,
    Conn: std::future::Future<Output = std::io::Result<Io>> + 'static,
    Io: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + 'static,
    F: Fn() -> I + Send + Clone + 'static,
    I: IntoServiceFactory<S, actix_http::Request>,
    S: ServiceFactory<actix_http::Request, Config = AppConfig> + 'static,
    S::Error: Into<actix_web::Error> + 'static,
    S::InitError: std::fmt::Debug,
    S::Response: Into<actix_http::Response<B>> + 'static,
    <S::Service as Service<actix_http::Request>>::Future: 'static,
    S::Service: 'static,
    B: MessageBody + 'static,
{
    socket2::SockRef::from(&listener).listen(backlog(guards.max_connections))?;
    let mut builder = Server::build();
    builder = builder
        // `run_until_stopped` handles SIGTERM and SIGINT: a drain first.
        .disable_signals()
        .workers(guards.workers)
        // actix counts per worker; the setting is for the whole listener.
        .max_concurrent_connections(guards.max_connections.div_ceil(guards.workers).max(1));
    let limiter = crate::server::limits::ConnectionLimiter::new(
        guards.max_connections_per_ip,
        guards.max_connections,
        guards.trusted_proxies.clone(),
    );
    let request_timeout = guards.request_timeout;
    let shutdown = builder.graceful_shutdown_signal();
    let builder = builder.listen(name, listener, move || {
        let app = app()
            .into_factory()
            .map_err(|err: S::Error| err.into().error_response());
        let shutdown = shutdown.clone();
        let h1 = HttpService::build()
            .graceful_shutdown_signal(move || {
                let shutdown = shutdown.clone();
                async move { shutdown.notified().await }
            })
            .keep_alive(KeepAlive::default())
            .client_request_timeout(request_timeout)
            .client_disconnect_timeout(Duration::from_secs(1))
            .local_addr(addr)
            .on_connect_ext(|io: &RequestLineIo<Io>, ext| {
                ext.insert(io.answered());
            })
            .h1(map_config(app, |()| AppConfig::default()));
        let limiter = std::sync::Arc::clone(&limiter);
        let own_answers = own_answers.clone();
        let accept = accept.clone();
        fn_service(move |io: tokio::net::TcpStream| {
            let peer = io.peer_addr().ok();
            let slot = limiter.acquire(peer.map(|p| p.ip()));
            let own_answers = own_answers.clone();
            // Nothing runs until awaited: a TLS handshake starts once the
            // slot is taken.
            let conn = accept(io, request_timeout);
            async move {
                // Over its network's share: the connection is closed at once.
                let slot = slot.ok_or_else(|| {
                    DispatchError::Io(std::io::Error::other(
                        "too many connections from one address",
                    ))
                })?;
                // Issue 36: the handshake holds the slot, within the
                // request deadline.
                let io = conn.await.map_err(DispatchError::Io)?;
                let io = RequestLineIo::with_limits(io, request_timeout, Some(slot));
                let io = match &own_answers {
                    Some(log) => io.with_own_answers(OwnAnswerLog {
                        log: Arc::clone(log),
                        peer,
                    }),
                    None => io,
                };
                Ok((io, peer))
            }
        })
        .and_then(h1)
    })?;
    Ok(builder.run())
}

/// The kernel's queue of connections a listener has not accepted yet.
/// std listens with 128, and past a listener's cap connections wait there:
/// a full queue drops a SYN, which a client sends again only after 1, 3,
/// 7 s (issue 30: scans behind a flood of silent connections timed out).
/// About the cap (at least 128, at most the usual `somaxconn`, 4096), a
/// full queue drains within a crowded listener's short wait
/// (`server::waits::CROWDED_WAIT`).
fn backlog(cap: usize) -> i32 {
    i32::try_from(cap.clamp(128, 4096)).unwrap_or(128)
}

/// Issue 36: a listener without TLS serves the accepted socket itself.
fn plain(
    tcp: tokio::net::TcpStream,
    _deadline: Duration,
) -> std::future::Ready<std::io::Result<tokio::net::TcpStream>> {
    std::future::ready(Ok(tcp))
}

/// The public listener: every path is a redirect request.
fn public_server(
    listener: TcpListener,
    addr: SocketAddr,
    state: web::Data<public::PublicState>,
    settings: &Settings,
    caps: fd_budget::ListenerCaps,
    tls: Option<tokio_rustls::TlsAcceptor>,
) -> std::io::Result<Server> {
    // Issue 36: an answer actix gives itself, before any host is read,
    // is the default domain's line.
    let log_own_answer = public::own_answer_logger(
        state.sites.default_site().access_log.clone(),
        state.trusted_proxies.clone(),
        state.client_ip_mode,
    );
    let guards = Guards::new(settings, public_workers(settings), caps);
    // Issue 36: without TLS the socket itself and no middleware, as the
    // redirect path was before HTTPS.
    let Some(acceptor) = tls else {
        return guarded_server(
            "qrtag-public",
            listener,
            addr,
            &guards,
            Some(log_own_answer),
            plain,
            move || {
                App::new()
                    .app_data(state.clone())
                    .default_service(web::to(public::handle))
            },
        );
    };
    // Issue 36: HSTS on HTTPS answers only, and only when asked for.
    let hsts = settings
        .tls
        .as_ref()
        .and_then(|t| t.hsts)
        .map(crate::tls::hsts::Hsts::header_value);
    guarded_server(
        "qrtag-public",
        listener,
        addr,
        &guards,
        Some(log_own_answer),
        move |tcp, deadline| crate::tls::listener::accept(acceptor.clone(), tcp, deadline),
        move || {
            let headers = actix_web::middleware::DefaultHeaders::new().add((
                actix_web::http::header::STRICT_TRANSPORT_SECURITY,
                hsts.clone().unwrap_or_default(),
            ));
            App::new()
                .app_data(state.clone())
                .wrap(actix_web::middleware::Condition::new(
                    hsts.is_some(),
                    headers,
                ))
                .default_service(web::to(public::handle))
        },
    )
}

/// Issue 36: the plain listener beside HTTPS (`--http-listen`): redirects
/// and ACME challenges, one worker, the admin listener's guards.
fn http_server(
    listener: TcpListener,
    addr: SocketAddr,
    state: web::Data<crate::server::https_redirect::RedirectState>,
    settings: &Settings,
    caps: fd_budget::ListenerCaps,
) -> std::io::Result<Server> {
    guarded_server(
        "qrtag-http",
        listener,
        addr,
        &Guards::new(settings, 1, caps),
        None,
        plain,
        move || {
            App::new()
                .app_data(state.clone())
                .default_service(web::to(crate::server::https_redirect::handle))
        },
    )
}

/// The store the API listener writes with (and reads API keys with) when
/// it has an account of its own (`--api-couchdb-user`): the same CouchDB
/// database as an editor, its writes counted in the service's cluster
/// stats (a 202 shows on `/readyz` and in the answer). `None`: the
/// service's own store.
fn api_writer(
    api: &crate::server::api::ApiSettings,
    store_settings: &StoreSettings,
    store: &Arc<dyn store::LinkStore>,
) -> Result<Option<Arc<dyn store::LinkStore>>, StartupError> {
    let (Some(writer), StoreSettings::CouchDb(couch)) = (&api.couch_writer, store_settings) else {
        return Ok(None);
    };
    tracing::info!(
        user = %writer.user,
        "the API listener writes to CouchDB with its own account"
    );
    let mut settings = couch.clone();
    settings.credentials = Some(writer.clone());
    let mut writer = store::couch::CouchStore::new(&settings)?;
    if let Some(cluster) = store.cluster() {
        writer = writer.sharing(cluster);
    }
    Ok(Some(Arc::new(writer)))
}

/// Issue 36: the REST API's state, one a domain (its writes, snapshot,
/// key order, scan counts and public URL, from `domains`), sharing the
/// process's one render gate, the rate limiters and the API keys (the
/// default domain's store). `writers[i]` is what domain `i` is written
/// through.
fn rest_states(
    api: &crate::server::api::ApiSettings,
    domains: &Arc<crate::console::domains::Domains>,
    writers: Vec<Arc<dyn store::LinkStore>>,
    settings: &Settings,
    gate: crate::print::tag_image::RenderGate,
) -> web::Data<crate::server::rest::domain::RestDomains> {
    let limiter = Arc::new(crate::server::rest::auth::RateLimiter::new(
        api.rate_per_second,
    ));
    let strangers = Arc::new(crate::server::rest::strangers::StrangerLimiter::new(
        api.strangers_per_second,
        settings.trusted_proxies.clone(),
    ));
    let keys = Arc::clone(&writers[0]);
    let states = domains
        .all()
        .iter()
        .zip(writers)
        .map(|(domain, store)| {
            web::Data::new(crate::server::rest::RestState {
                store,
                public_url: domain.public_url.clone(),
                uppercase_prefix: settings.qr_uppercase_prefix,
                gate: gate.clone(),
                limiter: Arc::clone(&limiter),
                strangers: Arc::clone(&strangers),
                keys: Arc::clone(&keys),
                snapshot: Arc::clone(&domain.snapshot),
                order: Arc::clone(&domain.order),
                scans: Arc::clone(&domain.scans),
                rule_capabilities: settings.rule_capabilities(),
                // Issue 38: the domain's scans in ClickHouse, where its
                // counts are read there (the default domain's, with
                // --scans-from).
                scans_from: domain.scans.ask_first().cloned(),
            })
        })
        .collect();
    web::Data::new(crate::server::rest::domain::RestDomains {
        domains: Arc::clone(domains),
        states,
    })
}

/// Issue 38: the host the default domain's scans carry in ClickHouse:
/// the configured default domain's, else the public URL's.
/// Issue 38: the default domain's scans in ClickHouse with `--scans-from`,
/// breakdowns in the time zone and with the places the index would use.
fn scans_from(settings: &Settings, host: String) -> Option<crate::clickhouse::read::DomainScans> {
    let url = settings.scans_from.as_ref()?;
    let basis = settings
        .scan_index
        .as_ref()
        .and_then(|i| i.breakdowns.as_ref())
        .map_or_else(
            || crate::scan_index::Basis {
                time_zone: chrono_tz::UTC,
                geoip: None,
            },
            |b| b.basis.clone(),
        );
    Some(crate::clickhouse::read::DomainScans {
        client: crate::clickhouse::Client::new(url.clone(), crate::console::scans_from::TIMEOUT),
        domain: host,
        basis,
    })
}

/// Issue 38: the default domain's scan counts: ClickHouse with
/// `--scans-from` (asked before a page renders), else its scan index.
fn default_scans(
    settings: &Settings,
    index: Option<&crate::scan_index::RunningIndex>,
    host: String,
) -> Option<Arc<dyn crate::console::scans::ScanCounts>> {
    match scans_from(settings, host) {
        Some(scans) => Some(Arc::new(crate::console::scans_from::FromClickHouse {
            scans,
        })),
        None => index.map(|i| i.index() as Arc<dyn crate::console::scans::ScanCounts>),
    }
}

/// Issue 36: a domain's view for the surfaces: its writes answered once
/// served, its scan counts, and its key order, kept following its
/// snapshot when a surface lists links (`follow`).
/// Issue 38: one domain's access log as the scan sink takes it: rows with
/// `host`, each line under the link of `snapshot` that answered it.
fn tapped_log(host: String, snapshot: &Arc<Snapshot>) -> crate::clickhouse::sink::TappedLog {
    use crate::scan_index::Links;
    let links = Arc::clone(snapshot);
    let ready = Arc::clone(snapshot);
    crate::clickhouse::sink::TappedLog {
        source: crate::clickhouse::rows::LogSource {
            domain: host,
            is_link: Box::new(move |key| links.is_link(key)),
        },
        ready: Box::new(move || ready.ready()),
    }
}

fn domain_view(
    host: Option<crate::values::host::Host>,
    running: &site::RunningSite,
    scans: Option<Arc<dyn crate::console::scans::ScanCounts>>,
    follow: bool,
) -> Result<crate::console::domains::Domain, StartupError> {
    let scans: Arc<dyn crate::console::scans::ScanCounts> = match scans {
        Some(counts) => counts,
        None => Arc::new(crate::console::scans::NoScanCounts),
    };
    let order = Arc::default();
    if follow {
        crate::console::key_order::keep_following_with(
            &order,
            Arc::clone(&running.snapshot),
            Some(Arc::clone(&scans)),
        )
        .map_err(StartupError::ConsoleKeys)?;
    }
    Ok(crate::console::domains::Domain {
        host,
        snapshot: Arc::clone(&running.snapshot),
        writes: crate::links::served::Served::wrap(
            Arc::clone(&running.store),
            Arc::clone(&running.snapshot),
        ),
        public_url: running.live_url.clone(),
        order,
        scans,
    })
}

/// Issue 36: the scan index of a domain other than the default, over its
/// own access log, with the default's settings and a checkpoint beside
/// the domain's log.
fn domain_scan_index(
    index: &crate::scan_index::ScanIndexSettings,
    log: &std::path::Path,
    snapshot: &Arc<Snapshot>,
) -> Result<crate::scan_index::RunningIndex, StartupError> {
    let settings = crate::scan_index::ScanIndexSettings {
        checkpoint: crate::scan_index::default_checkpoint(log),
        logs: None,
        ..index.clone()
    };
    crate::scan_index::start_with_links(
        log.to_path_buf(),
        settings,
        Arc::clone(snapshot) as Arc<dyn crate::scan_index::Links>,
    )
    .map_err(StartupError::ScanIndex)
}

/// The API listener: the service identity from its key file,
/// `POST /didcomm`, and the REST API under `/api/v1`. Returns the server
/// and the service's DID.
fn api_server(
    api: &crate::server::api::ApiSettings,
    listener: TcpListener,
    addr: SocketAddr,
    rest: web::Data<crate::server::rest::domain::RestDomains>,
    delivery: crate::didcomm::delivery::Delivery,
    settings: &Settings,
    caps: fd_budget::ListenerCaps,
) -> Result<(Server, crate::didcomm::did::Did), StartupError> {
    use crate::didcomm::identity::{self, ServiceIdentity};
    let keys = identity::load_or_create(&api.key_file)?;
    let endpoint = match &api.public_url {
        Some(url) => format!("{url}/didcomm"),
        None => format!("http://{addr}/didcomm"),
    };
    let me = ServiceIdentity::new(keys, Some(&endpoint));
    let did = me.did().clone();
    if api.didcomm_on() {
        tracing::info!(%did, %endpoint, "DIDComm url-shortener");
    } else {
        tracing::info!(
            "the API listener serves the REST API; DIDComm is off (give --api-token, --didcomm-allow, --didcomm-allow-any or --didcomm-admin to turn it on)"
        );
    }
    let state = web::Data::new(crate::server::api::ApiState {
        store: Arc::clone(&rest.default_state().store),
        domains: rest.clone(),
        identity: me,
        public_url: rest.default_state().public_url.clone(),
        token: api.token.clone(),
        policy: api.policy.clone(),
        delivery,
        seen: crate::didcomm::replay::Seen::default(),
    });
    // The same guards as the other listeners: a slow body or one address
    // must not hold the connections (and descriptors) agents need.
    let server = guarded_server(
        "qrtag-api",
        listener,
        addr,
        &Guards::new(settings, api_workers(settings), caps),
        None,
        plain,
        move || {
            App::new()
                .app_data(state.clone())
                .app_data(rest.clone())
                .configure(crate::server::api::routes)
        },
    )
    .map_err(Listener::Api.bind_error(&api.listen))?;
    Ok((server, did))
}

/// The line `qrtag serve` prints on stderr once bound, for scripts and
/// tests that start it on port 0: one stable format whatever the logging.
pub fn listening_line(public: SocketAddr, admin: SocketAddr) -> String {
    format!("listening public={public} admin={admin}")
}

/// Reads a [`listening_line`] back: (public, admin).
pub fn parse_listening_line(line: &str) -> Option<(SocketAddr, SocketAddr)> {
    let rest = line.strip_prefix("listening ")?;
    let addr = |name: &str| {
        rest.split(' ')
            .find_map(|f| f.strip_prefix(name))
            .and_then(|a| a.parse().ok())
    };
    Some((addr("public=")?, addr("admin=")?))
}

/// Serves the links from the snapshot file, if there is one this store can
/// resume from; returns where to follow the store from. A file that
/// cannot be believed is reported and left for the next save to replace.
async fn restore(
    path: &std::path::Path,
    identity: &str,
    store: &dyn store::LinkStore,
    snapshot: &Snapshot,
) -> Option<crate::store::Resume> {
    let started = std::time::Instant::now();
    // Read on this thread, before anything is served, rather than on the
    // blocking pool: the follower (on the runtime's thread) later replaces
    // the table's shards one by one, and glibc returns freed memory to the
    // arena of the thread that allocated it. Shards built on a pool thread
    // would leave the freed ones stranded there, growing the resident set
    // by a shard per edit (measured: 30 KB an edit at 1M links).
    for leftover in saver::remove_leftovers(path) {
        tracing::info!(path = %leftover.display(), "removed a snapshot file a stopped save left unfinished");
    }
    let file = saver::mark_name(path);
    let loaded = if store.checks_mark_when_following() {
        saver::load_any_state_from(path, identity, |named| store.same_data_as(named)).map(|found| {
            found.map(|found| {
                let mark = crate::store::FileMark {
                    file: file.clone(),
                    in_file: found.mark,
                };
                (found.table, Some(mark), found.moved)
            })
        })
    } else {
        let mark = match store.snapshot_mark(&file).await {
            Ok(mark) => mark,
            Err(e) => {
                tracing::warn!(error = %e, "cannot read the snapshot file's marker; loading every link from the store instead");
                return None;
            }
        };
        let identity = crate::snapshot::file::marked_identity(identity, mark.as_deref());
        saver::load(path, &identity).map(|found| found.map(|table| (table, None, false)))
    };
    let (table, unchecked_mark, moved) = match loaded {
        Ok(Some(found)) => found,
        Ok(None) => return None,
        Err(e) => {
            tracing::warn!(error = %e, "loading every link from the store instead");
            return None;
        }
    };
    let seq = table.seq().cloned()?;
    if let Err(why) = store.check_seq(&seq).await {
        tracing::warn!(path = %path.display(), reason = %why, "ignoring snapshot file; loading every link from the store instead");
        return None;
    }
    if moved {
        // Saved by a node that reached the database at another URL: held
        // until the follower has read the file's marker from the database,
        // so a copy pointed at another database of the same name is never
        // served.
        tracing::info!(
            path = %path.display(),
            links = table.len(),
            seq = %seq,
            took = ?started.elapsed(),
            "snapshot file saved through another URL; serving it once the database confirms its marker"
        );
        snapshot.set_problem(Some(format!(
            "confirming the snapshot file (store sequence {seq}, saved through another URL) with the store"
        )));
        return Some(crate::store::Resume {
            seq,
            unchecked_mark,
            unconfirmed: Some(table),
        });
    }
    tracing::info!(
        path = %path.display(),
        links = table.len(),
        seq = %seq,
        took = ?started.elapsed(),
        "serving links from the snapshot file; catching up with the store"
    );
    snapshot.publish(table);
    snapshot.mark_loaded();
    snapshot.set_problem(Some(format!(
        "serving the snapshot file (store sequence {seq}); catching up with the store"
    )));
    Some(crate::store::Resume {
        seq,
        unchecked_mark,
        unconfirmed: None,
    })
}

/// The console's state: logins against the embedded store's users or
/// CouchDB's accounts, over every domain (issue 36).
fn console_state(
    console: &crate::console::ConsoleSettings,
    settings: &Settings,
    domains: &Arc<crate::console::domains::Domains>,
    renders: crate::print::tag_image::RenderGate,
    device_key: Option<[u8; 32]>,
) -> Result<crate::console::ConsoleState, StartupError> {
    use crate::console::auth::Accounts;
    let default = domains.default_domain();
    let accounts = match &settings.store {
        crate::store::options::StoreSettings::Sqlite { path } => Accounts::Password {
            db: store::sqlite::SqliteStore::open_with(path, store::Access::Write)?,
            domains: Arc::clone(domains),
        },
        crate::store::options::StoreSettings::CouchDb(couch) => {
            // Issue 36: each domain's database, for the user's own account.
            let databases = std::iter::once(Some(couch.clone()))
                .chain(settings.domains.others.iter().map(|d| match &d.store {
                    StoreSettings::CouchDb(c) => Some(c.clone()),
                    StoreSettings::Sqlite { .. } => None,
                }))
                .collect();
            Accounts::couch(databases, domains, default.writes.cluster())
                .map_err(|e| StartupError::Store(StoreError::Other(format!("console: {e}"))))?
        }
    };
    let mut state = crate::console::ConsoleState::new(
        settings.qr_uppercase_prefix,
        accounts,
        console.secure_cookie,
    );
    state.time_zone = console.time_zone;
    state.console_url = console.console_url.clone();
    state.geoip = settings.rule_capabilities().geoip;
    state.renders = renders;
    state.trusted_proxies = settings.trusted_proxies.clone();
    // Issue 35: the console's audit entries, with the service's account.
    state.audit = Some(Arc::clone(&default.writes));
    if let Some(key) = device_key {
        state.devices = crate::console::device::DeviceKeys::new(key);
    }
    Ok(state)
}

/// A file-size limit (`RLIMIT_FSIZE`, `ulimit -f`, systemd's `LimitFSIZE`)
/// makes the kernel send SIGXFSZ on a write past it, whose default action
/// kills the process mid-line with nothing said. With a handler installed
/// the write fails with `EFBIG` instead, which the access log treats like a
/// full disk (reported, retried, the file cut back to whole lines). Tokio
/// keeps a handler registered for the life of the process, so the stream
/// itself can be dropped.
fn ignore_file_size_signal() -> Result<(), StartupError> {
    let kind = tokio::signal::unix::SignalKind::from_raw(libc::SIGXFSZ);
    tokio::signal::unix::signal(kind)
        .map(drop)
        .map_err(StartupError::Signal)
}

/// What must come before the first write to any file (`serve` calls it
/// before it reads the recorded public URL from the store, `build` again):
/// the SIGXFSZ handler, without which a write past a file-size limit kills
/// the process with nothing said, and the refusal of a limit below the
/// database's size, which no write could get past.
pub fn before_any_write(settings: &Settings) -> Result<(), StartupError> {
    ignore_file_size_signal()?;
    if let StoreSettings::Sqlite { path } = &settings.store {
        file_size_limit::check_file(path)?;
    }
    Ok(())
}

/// Issue 36: the renewers of `serve`'s ACME certificates, one a domain
/// ordered over ACME (so one domain's failing order stops no other's
/// renewal), their store beside the database, their challenges answered by
/// the port-80 listener and their certificates installed for the public
/// listener; none with files.
async fn acme_renewers(
    tls: &crate::tls::Tls,
    domain: &str,
    settings: &Settings,
) -> Result<Vec<Arc<crate::acme::Renewer>>, StartupError> {
    let orders: Vec<(bool, &crate::acme::AcmeSettings)> = tls
        .settings()
        .sources(domain)
        .enumerate()
        .filter_map(|(i, (_, source))| match source {
            crate::tls::CertSource::Acme(acme) => Some((i == 0, acme)),
            crate::tls::CertSource::Files { .. } => None,
        })
        .collect();
    if orders.is_empty() {
        return Ok(Vec::new());
    }
    let store: Arc<dyn crate::acme::CertStore> = match &settings.store {
        StoreSettings::Sqlite { path } => Arc::new(
            crate::acme::store::disk::DiskStore::open(crate::acme::store::disk::default_dir(path))
                .map_err(StartupError::AcmeStore)?,
        ),
        // Issue 36: the default domain's `LINKS-certs`, shared by every
        // node on the server, and its HTTP-01 answers with them.
        StoreSettings::CouchDb(couch) => {
            let store = crate::acme::store::couch::CouchCertStore::new(couch)
                .map_err(StartupError::AcmeStore)?;
            let user = couch
                .credentials
                .as_ref()
                .map_or("(none)", |c| c.user.as_str());
            store
                .check_access(user)
                .await
                .map_err(StartupError::AcmeAccess)?;
            let store: Arc<dyn crate::acme::CertStore> = Arc::new(store);
            tls.challenges.share_through(Arc::clone(&store));
            store
        }
    };
    let holder = settings
        .node_name
        .as_ref()
        .map_or_else(|| "serve".to_owned(), |n| n.as_str().to_owned());
    let mut renewers = Vec::with_capacity(orders.len());
    for (default, acme) in orders {
        let installer = crate::tls::acme_seams::ServedFor {
            certificates: Arc::clone(&tls.certificates),
            default,
        };
        let renewer = crate::acme::Renewer::new(
            acme.clone(),
            Arc::clone(&store),
            Arc::clone(&tls.challenges) as Arc<dyn crate::acme::Http01Responder>,
            Arc::new(installer),
            crate::acme::Timing::default(),
            holder.clone(),
        );
        // Issue 36: TLS-ALPN-01 answered on the public listener itself.
        let renewer = Arc::new(match acme.challenge {
            crate::acme::Challenge::TlsAlpn01 => renewer
                .with_tls_alpn01(
                    Arc::clone(&tls.certificates) as Arc<dyn crate::acme::TlsAlpn01Responder>
                ),
            crate::acme::Challenge::Http01 => renewer,
        });
        tls.watch_renewal(renewer.status_handle());
        renewers.push(renewer);
    }
    Ok(renewers)
}

/// Aborts a task when dropped, however `run_until_stopped` returns.
struct AbortOnDrop(Option<tokio::task::JoinHandle<()>>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        if let Some(task) = &self.0 {
            task.abort();
        }
    }
}

impl Application {
    /// Opens the store, starts following it and binds both listeners. Must
    /// be called inside a Tokio runtime; nothing is served until
    /// [`run_until_stopped`](Self::run_until_stopped).
    pub async fn build(settings: Settings) -> Result<Self, StartupError> {
        before_any_write(&settings)?;
        // First the listeners: a port in use stops the start before any
        // file (database, log, secret) is created.
        let (public_listener, public_addr) = bind(&settings.listen, Listener::Public)?;
        // No public URL configured: answer with the address actually bound,
        // so `--listen 127.0.0.1:8280` says 8280 (and port 0 its real port).
        let mut settings = settings;
        let (caps, needs) = connection_caps(&settings)?;
        let connection_warning = caps
            .worth_warning(&needs, settings.max_connections_chosen)
            .then(|| fd_budget::lowered_line(&caps, &needs));
        let tls_on = settings.tls.is_some();
        // Issue 38: the host the default domain's ClickHouse rows carry,
        // from the public URL given or recorded, not the listener's.
        let rows_host = crate::clickhouse::row::rows_host(
            settings.domains.default_host.as_ref().map(|h| h.as_str()),
            settings.public_url.as_ref().map(|u| u.origin()),
        );
        let public_url = settings
            .public_url
            .get_or_insert_with(|| match tls_on {
                // Issue 36: the listener's own address answers over HTTPS.
                true => PublicUrl::parse(&format!("https://{public_addr}"))
                    .unwrap_or_else(|_| PublicUrl::of_listener(public_addr)),
                false => PublicUrl::of_listener(public_addr),
            })
            .clone();
        let (admin_listener, admin_addr) = bind(&settings.admin_listen, Listener::Admin)?;
        let http_listener = settings
            .tls
            .as_ref()
            .and_then(|t| t.http_listen.as_deref())
            .map(|addr| bind(addr, Listener::Http))
            .transpose()?;
        // Issue 36: the certificate is read before any file is written, so
        // a bad one stops the start with one line.
        let tls_domain = url::Url::parse(public_url.origin())
            .ok()
            .and_then(|u| u.host_str().map(str::to_owned))
            .unwrap_or_default();
        let tls = match &settings.tls {
            Some(files) => Some(Arc::new(crate::tls::Tls::start(
                files.clone(),
                &tls_domain,
            )?)),
            None => None,
        };
        let renewers = match &tls {
            Some(tls) => acme_renewers(tls, &tls_domain, &settings).await?,
            None => Vec::new(),
        };
        let acceptor = tls
            .as_ref()
            .map(|t| crate::tls::listener::acceptor(Arc::clone(&t.certificates)))
            .transpose()
            .map_err(StartupError::TlsConfig)?;
        let api_listener = settings
            .api
            .as_ref()
            .map(|api| bind(&api.listen, Listener::Api))
            .transpose()?;
        // Then the secret file: a bad one stops the start before the store.
        let mut device_key = None;
        let tracking_keys = match &settings.tracking {
            Some(t) => {
                let keys = crate::tracking::secret::load_or_create(&t.secret_file)?;
                device_key = Some(keys.derived_key(crate::console::device::KEY_PURPOSE));
                Some((t.cookie_name.clone(), keys))
            }
            None => None,
        };
        // Issue 36: one cookie a domain (one secret), `Secure` as its
        // public URL is https.
        let tracking_for = |url: &PublicUrl| {
            tracking_keys
                .as_ref()
                .map(|(name, keys)| TrackingCookie::new(name.clone(), url.is_https(), keys.clone()))
        };
        let hangup = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup())
            .map_err(StartupError::Signal)?;
        let stop_signals = StopSignals::register()?;
        // Issue 38: a ClickHouse that refuses the user or lacks qrtag's
        // schema stops the start; one that is away is retried.
        if let Some(sink) = &settings.scans_to
            && let Some(away) =
                crate::clickhouse::sink::check_at_start(&sink.url, "--scans-to").await?
        {
            tracing::warn!(
                error = %away,
                "--scans-to: ClickHouse cannot be reached; serving anyway, scans wait in the queue and are retried"
            );
        }
        if let Some(url) = &settings.scans_from
            && let Some(away) = crate::clickhouse::sink::check_at_start(url, "--scans-from").await?
        {
            tracing::warn!(
                error = %away,
                "--scans-from: ClickHouse cannot be reached; serving anyway, the scans it answers are 503 until it is"
            );
        }
        let snapshot = Snapshot::new();
        // Issue 38: with --scans-from the default domain's numbers come
        // from ClickHouse, so its logs are not read into memory as well.
        let scan_index = match settings
            .scan_index
            .as_ref()
            .filter(|_| settings.scans_from.is_none())
        {
            None => None,
            Some(index) => Some(
                crate::scan_index::start_with_links(
                    match (&index.logs, &settings.access_log) {
                        (Some(logs), _) => logs.clone(),
                        (None, AccessLogTarget::Path(log)) => log.clone().into(),
                        (None, AccessLogTarget::Stdout) => {
                            return Err(StartupError::ScanIndexWithoutFile);
                        }
                    },
                    index.clone(),
                    Arc::clone(&snapshot) as Arc<dyn crate::scan_index::Links>,
                )
                .map_err(StartupError::ScanIndex)?,
            ),
        };
        // Issue 36: the default domain is the service as it was; the
        // console, REST API, DIDComm, print and stats stay on it.
        let default_site = site::start(
            site::SiteSpec {
                store: &settings.store,
                access_log: &settings.access_log,
                access_log_options: settings.access_log_options.clone(),
                snapshot_file: settings.snapshot_file.clone(),
                public_url: public_url.clone(),
                follow_recorded_url: settings.follow_recorded_url,
            },
            Arc::clone(&snapshot),
        )
        .await?;
        let store = Arc::clone(&default_site.store);
        let access_log = default_site.access_log.clone();
        // Issue 38: every domain's log lines to ClickHouse, each row with
        // its domain's host (the default domain's here, the others' below).
        let scan_sink = match &settings.scans_to {
            Some(sink) => {
                let sink = crate::clickhouse::sink::ScanSink::start(
                    sink,
                    settings
                        .node_name
                        .as_ref()
                        .map(|n| n.as_str().to_owned())
                        .unwrap_or_default(),
                    settings.geoip.as_ref().map(|g| g.0.clone()),
                )
                .map_err(StartupError::ScanSinkThread)?;
                access_log.set_tap(sink.tap(tapped_log(rows_host.clone(), &snapshot)));
                Some(Arc::new(sink))
            }
            None => None,
        };
        let live_url = default_site.live_url.clone();
        // Issue 36: what the console and the REST API see of each domain.
        let lists = settings.console.is_some() || settings.api.is_some();
        let default_view = domain_view(
            settings.domains.default_host.clone(),
            &default_site,
            default_scans(&settings, scan_index.as_ref(), rows_host.clone()),
            lists,
        )?;
        // Issue 38: each domain's closed days rolled up in ClickHouse, so
        // the dashboard costs its days, not their scans.
        let roller = settings.scans_from.as_ref().map(|url| {
            let mut domains = vec![rows_host.clone()];
            domains.extend(
                settings
                    .domains
                    .others
                    .iter()
                    .map(|d| d.host.as_str().to_owned()),
            );
            crate::clickhouse::roller::Roller::new(url.clone(), domains)
        });
        let mut other_views = Vec::with_capacity(settings.domains.others.len());
        let mut other_indexes = Vec::new();
        let mut sites = vec![default_site];
        let mut public_sites = Vec::with_capacity(settings.domains.others.len());
        for domain in &settings.domains.others {
            let running = site::start(
                site::SiteSpec {
                    store: &domain.store,
                    access_log: &AccessLogTarget::Path(domain.access_log.clone()),
                    access_log_options: settings.access_log_options.clone(),
                    snapshot_file: domain.snapshot_file.clone(),
                    public_url: domain.public_url.clone(),
                    follow_recorded_url: false,
                },
                Snapshot::new(),
            )
            .await?;
            if let Some(sink) = &scan_sink {
                let log = tapped_log(domain.host.as_str().to_owned(), &running.snapshot);
                running.access_log.set_tap(sink.tap(log));
            }
            public_sites.push(crate::server::sites::Site {
                host: Some(domain.host.clone()),
                snapshot: Arc::clone(&running.snapshot),
                public_url: running.live_url.clone(),
                access_log: running.access_log.clone(),
                tracking: tracking_for(&domain.public_url),
                dead_tag: domain.dead_tag.clone(),
                root: site::root_location(domain.root.as_ref()),
            });
            // Issue 38: with --scans-from every domain reads its own rows
            // in ClickHouse, and runs no scan index.
            let from_clickhouse = scans_from(&settings, domain.host.as_str().to_owned());
            let index = match (&settings.scan_index, &from_clickhouse) {
                (Some(index), None) => Some(domain_scan_index(
                    index,
                    &domain.access_log,
                    &running.snapshot,
                )?),
                _ => None,
            };
            let scans = match from_clickhouse {
                Some(scans) => Some(
                    Arc::new(crate::console::scans_from::FromClickHouse { scans })
                        as Arc<dyn crate::console::scans::ScanCounts>,
                ),
                None => index
                    .as_ref()
                    .map(|i| i.index() as Arc<dyn crate::console::scans::ScanCounts>),
            };
            other_views.push(domain_view(
                Some(domain.host.clone()),
                &running,
                scans,
                lists,
            )?);
            other_indexes.extend(index);
            sites.push(running);
        }
        let domains = Arc::new(crate::console::domains::Domains::new(
            default_view,
            other_views,
        ));

        let requests = Arc::new(crate::metrics::RequestMetrics::default());
        let default_public = crate::server::sites::Site {
            host: settings.domains.default_host.clone(),
            snapshot: Arc::clone(&snapshot),
            public_url: live_url.clone(),
            access_log: access_log.clone(),
            tracking: tracking_for(&public_url),
            dead_tag: settings.dead_tag.clone(),
            root: site::root_location(settings.root_url.as_ref()),
        };
        let public_state = web::Data::new(public::PublicState {
            sites: crate::server::sites::Sites::new(
                default_public,
                public_sites,
                settings.domains.unknown_host,
            ),
            trusted_proxies: settings.trusted_proxies.clone(),
            client_ip_mode: settings.client_ip_mode,
            metrics: Arc::clone(&requests),
            geoip: settings.geoip.as_ref().map(|g| g.0.clone()),
        });
        let public_server = public_server(
            public_listener,
            public_addr,
            public_state,
            &settings,
            caps.public,
            acceptor,
        )
        .map_err(Listener::Public.bind_error(&settings.listen))?;
        let http = match (&tls, http_listener) {
            (Some(tls), Some((listener, addr))) => {
                let state = web::Data::new(crate::server::https_redirect::RedirectState {
                    challenges: Arc::clone(&tls.challenges),
                    https_port: url::Url::parse(public_url.origin())
                        .ok()
                        .and_then(|u| u.port()),
                    default_host: url::Url::parse(public_url.origin())
                        .ok()
                        .and_then(|u| u.host_str().map(str::to_owned))
                        .unwrap_or_default(),
                });
                let listen = tls.settings().http_listen.clone().unwrap_or_default();
                let server = http_server(listener, addr, state, &settings, caps.admin)
                    .map_err(Listener::Http.bind_error(&listen))?;
                Some((server, addr))
            }
            _ => None,
        };

        let qr_renders = crate::metrics::QrRenders::default();
        let render_gate = crate::print::tag_image::RenderGate::for_cores()
            .with_print_logo(settings.print_logo.clone());
        let qr_state = web::Data::new(crate::server::qr::QrState {
            snapshot: Arc::clone(&snapshot),
            store: Arc::clone(&store),
            public_url: live_url.clone(),
            uppercase_prefix: settings.qr_uppercase_prefix,
            renders: qr_renders.clone(),
            gate: render_gate.clone(),
            domains: Some(Arc::clone(&domains)),
        });
        let delivery = crate::didcomm::delivery::Delivery::new(
            settings
                .api
                .as_ref()
                .is_some_and(|a| a.allow_private_endpoints),
        );
        let health = Arc::new(crate::metrics::health::Health {
            snapshot: Arc::clone(&snapshot),
            access_log: access_log.clone(),
            deliveries: settings
                .api
                .as_ref()
                .filter(|api| api.didcomm_on())
                .map(|_| delivery.counters()),
            node: settings.node_name.clone(),
            cluster: store.cluster(),
            scans: scan_index
                .as_ref()
                .map(crate::scan_index::RunningIndex::index),
            draining: std::sync::atomic::AtomicBool::new(false),
            scan_sink: scan_sink.clone(),
            tls: tls.clone(),
            // Issue 36: every domain's links loaded before /readyz is 200.
            domains: crate::metrics::domains::DomainsHealth {
                default_name: settings
                    .domains
                    .default_host
                    .as_ref()
                    .map(ToString::to_string),
                others: settings
                    .domains
                    .others
                    .iter()
                    .zip(&sites[1..])
                    .map(|(domain, site)| crate::metrics::domains::DomainHealth {
                        name: domain.host.to_string(),
                        snapshot: Arc::clone(&site.snapshot),
                        access_log: site.access_log.clone(),
                    })
                    .collect(),
            },
        });
        let metrics = crate::metrics::Metrics::new(
            requests,
            Arc::clone(&health),
            &qr_renders,
            render_gate.clone(),
        );
        let console = match &settings.console {
            Some(console) => Some(web::Data::new(console_state(
                console,
                &settings,
                &domains,
                render_gate.clone(),
                device_key,
            )?)),
            None => None,
        };
        let console_setup_url = match &console {
            Some(console) => console.offer_setup(admin_addr).await?,
            None => None,
        };
        // Issue 35 (i35-users): sessions follow their users' changes.
        if let Some(console) = &console {
            crate::console::user_sync::keep_sessions_held(&console.clone().into_inner());
        }
        let admin_state = web::Data::new(admin::AdminState {
            health: Arc::clone(&health),
            metrics: Arc::new(metrics),
            console: console.is_some(),
        });
        // One worker: nothing here is a scan. The same guards as the public
        // listener, since the console behind a proxy is as exposed.
        let admin_server = guarded_server(
            "qrtag-admin",
            admin_listener,
            admin_addr,
            &Guards::new(&settings, 1, caps.admin),
            None,
            plain,
            move || {
                App::new()
                    .app_data(admin_state.clone())
                    .configure(admin::routes)
                    .service(crate::server::qr::service(qr_state.clone()))
                    .configure(|cfg| {
                        if let Some(console) = &console {
                            crate::console::configure(cfg, console.clone());
                        }
                    })
            },
        )
        .map_err(Listener::Admin.bind_error(&settings.admin_listen))?;

        let (api, api_addr, didcomm_did) = match (&settings.api, api_listener) {
            (Some(api), Some((listener, addr))) => {
                // Every write the API listener makes (DIDComm and REST) is
                // answered once this server serves it (`Served`), and made
                // with the account meant for writing.
                // Issue 36: each domain's writes with that account too.
                let stores = std::iter::once(&settings.store)
                    .chain(settings.domains.others.iter().map(|d| &d.store));
                let mut writers = Vec::with_capacity(domains.all().len());
                for ((domain, site), store_settings) in domains.all().iter().zip(&sites).zip(stores)
                {
                    writers.push(match api_writer(api, store_settings, &site.store)? {
                        Some(writer) => {
                            crate::links::served::Served::wrap(writer, Arc::clone(&domain.snapshot))
                        }
                        None => Arc::clone(&domain.writes),
                    });
                }
                let rest = rest_states(api, &domains, writers, &settings, render_gate.clone());
                let (server, did) =
                    api_server(api, listener, addr, rest, delivery, &settings, caps.api)?;
                (Some(server), Some(addr), Some(did))
            }
            _ => (None, None, None),
        };

        // Logged once the start succeeded: a failed start says one line.
        tracing::info!(
            limit = caps.limit,
            public = caps.public.total,
            admin = caps.admin.total,
            api = caps.api.total,
            "connection caps from the open-file limit"
        );
        let (http, http_addr) = match http {
            Some((server, addr)) => (Some(server), Some(addr)),
            None => (None, None),
        };
        Ok(Self {
            public_addr,
            admin_addr,
            http,
            http_addr,
            tls,
            renewers,
            roller,
            public: public_server,
            admin: admin_server,
            api_addr,
            api,
            didcomm_did,
            didcomm_on: settings.api.as_ref().is_some_and(|a| a.didcomm_on()),
            snapshot,
            sites,
            scan_index,
            other_indexes,
            console_setup_url,
            public_url,
            hangup,
            stop_signals,
            health,
            scan_sink,
            shutdown_grace: settings.shutdown_grace,
            connection_warning,
        })
    }

    /// One line naming the open-file limit, the public listener's cap in
    /// force and how to raise it, when the limit lowered the cap.
    pub fn connection_warning(&self) -> Option<&str> {
        self.connection_warning.as_deref()
    }

    pub fn public_url(&self) -> &PublicUrl {
        &self.public_url
    }

    pub fn public_addr(&self) -> SocketAddr {
        self.public_addr
    }

    pub fn admin_addr(&self) -> SocketAddr {
        self.admin_addr
    }

    /// The plain listener's address (issue 36), when `--http-listen` is set.
    pub fn http_addr(&self) -> Option<SocketAddr> {
        self.http_addr
    }

    /// The running TLS state (issue 36), when the public listener is HTTPS.
    pub fn tls(&self) -> Option<Arc<crate::tls::Tls>> {
        self.tls.clone()
    }

    /// The DIDComm listener's address, when `--api-listen` is set.
    pub fn api_addr(&self) -> Option<SocketAddr> {
        self.api_addr
    }

    /// The service's DID, when the DIDComm listener is on.
    pub fn didcomm_did(&self) -> Option<&crate::didcomm::did::Did> {
        self.didcomm_did.as_ref()
    }

    /// Whether DIDComm is on (`ApiSettings::didcomm_on`), not only the
    /// API listener.
    pub fn didcomm_on(&self) -> bool {
        self.didcomm_on
    }

    pub fn snapshot(&self) -> Arc<Snapshot> {
        Arc::clone(&self.snapshot)
    }

    /// Issue 36: every domain's snapshot, the default domain's first, so
    /// a caller can wait until each domain's links are loaded.
    pub fn snapshots(&self) -> Vec<Arc<Snapshot>> {
        self.sites.iter().map(|s| Arc::clone(&s.snapshot)).collect()
    }

    pub fn access_log(&self) -> AccessLog {
        self.sites[0].access_log.clone()
    }

    /// The scan counts, when `settings.scan_index` turned them on.
    pub fn scan_index(&self) -> Option<Arc<crate::scan_index::ScanIndex>> {
        self.scan_index
            .as_ref()
            .map(crate::scan_index::RunningIndex::index)
    }

    /// The console's first-run setup link (`/console/setup?token=…` on the
    /// admin listener's bound address), when `--console` runs on the
    /// embedded store with no password set. It works once; never log it.
    pub fn console_setup_url(&self) -> Option<&str> {
        self.console_setup_url.as_deref()
    }

    /// Serves until SIGINT or SIGTERM; in-flight requests are finished first,
    /// then every access log line is written and synced. SIGHUP reopens the
    /// access log and (issue 36) reads the TLS certificate files again.
    pub async fn run_until_stopped(self) -> std::io::Result<()> {
        let reopener = {
            // Issue 36: every domain's log.
            let logs: Vec<AccessLog> = self.sites.iter().map(|s| s.access_log.clone()).collect();
            let tls = self.tls.clone();
            let mut hangup = self.hangup;
            tokio::spawn(async move {
                while hangup.recv().await.is_some() {
                    for log in &logs {
                        let log = log.clone();
                        // Waits for the flusher, which may be mid-write.
                        let _ = tokio::task::spawn_blocking(move || log.reopen()).await;
                    }
                    if let Some(tls) = &tls {
                        let tls = Arc::clone(tls);
                        // A failure keeps the old certificate; `reload`
                        // logs it and `/readyz` says it.
                        let _ = tokio::task::spawn_blocking(move || tls.reload()).await;
                    }
                }
            })
        };
        // Issue 36: runs while the listeners serve; aborted with them.
        let _stop_renewing: Vec<AbortOnDrop> = self
            .renewers
            .into_iter()
            .map(|r| AbortOnDrop(Some(tokio::spawn(r.run()))))
            .collect();
        let _stop_rolling = self
            .roller
            .map(|r| AbortOnDrop(Some(tokio::spawn(r.run()))));
        let saving: Vec<_> = self
            .sites
            .iter()
            .filter_map(|s| s.saver.as_ref().map(Saver::spawn))
            .collect();
        let public_handle = self.public.handle();
        let admin_handle = self.admin.handle();
        let api_handle = self.api.as_ref().map(Server::handle);
        let http_handle = self.http.as_ref().map(Server::handle);
        let http = self.http.map(tokio::spawn);
        let public = tokio::spawn(self.public);
        let admin = tokio::spawn(self.admin);
        let api = self.api.map(tokio::spawn);
        let api_done = async move {
            match api {
                Some(task) => task.await,
                None => std::future::pending().await,
            }
        };
        // On SIGTERM or SIGINT: draining (every listener serving, `/readyz`
        // 503) for the grace period or until a second signal, then every
        // listener stops, finishing its requests in flight. A listener that
        // ends on its own stops the others too.
        let mut signals = self.stop_signals;
        let health = self.health;
        let grace = self.shutdown_grace;
        let drain = async move {
            signals.next().await;
            health
                .draining
                .store(true, std::sync::atomic::Ordering::Relaxed);
            tracing::info!(grace = ?grace, "draining: /readyz answers 503 while the listeners serve on");
            tokio::select! {
                _ = tokio::time::sleep(grace) => {}
                _ = signals.next() => tracing::info!("a second signal: stopping now"),
            }
        };
        let mut public = public;
        let mut admin = admin;
        let first = tokio::select! {
            () = drain => None,
            r = &mut public => Some(r),
            r = &mut admin => Some(r),
            r = api_done => Some(r),
        };
        public_handle.stop(true).await;
        admin_handle.stop(true).await;
        if let Some(handle) = api_handle {
            handle.stop(true).await;
        }
        if let Some(handle) = http_handle {
            handle.stop(true).await;
        }
        if let Some(task) = http {
            let _ = task.await;
        }
        let first = match first {
            Some(r) => r,
            None => public.await,
        };
        reopener.abort();
        for task in saving {
            task.abort();
        }
        for site in &self.sites {
            site.stop_following().await;
        }
        // Both listeners have stopped, so no line can be appended any more.
        // Issue 36: every domain's log drained; the default's is reported.
        let others: Vec<AccessLog> = self.sites[1..]
            .iter()
            .map(|s| s.access_log.clone())
            .collect();
        let log = self.sites[0].access_log.clone();
        let drained = tokio::task::spawn_blocking(move || {
            for other in others {
                if let Err(e) = other.shutdown() {
                    tracing::warn!(log = ?other.target(), error = %e, "a domain's access log lost lines");
                }
            }
            log.shutdown()
        })
        .await
        .map_err(std::io::Error::other)
        .and_then(|r| r.map_err(std::io::Error::other));
        if let Some(index) = self.scan_index {
            // After the drain, so its last checkpoint holds every line.
            let _ = tokio::task::spawn_blocking(move || index.stop()).await;
        }
        for index in self.other_indexes {
            let _ = tokio::task::spawn_blocking(move || index.stop()).await;
        }
        if let Some(sink) = self.scan_sink {
            // After the drain, so the log's last lines are in its queue.
            let _ = tokio::task::spawn_blocking(move || {
                sink.finish(crate::clickhouse::sink::SEND_TIMEOUT)
            })
            .await;
        }
        let served = first.map_err(std::io::Error::other)?;
        let stats = drained?;
        tracing::info!(
            lines_written = stats.lines_written,
            lines_dropped = stats.lines_dropped,
            write_errors = stats.write_errors,
            "access log closed"
        );
        served
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_listening_line_reads_back() {
        let (p, a): (SocketAddr, SocketAddr) = (
            "127.0.0.1:8080".parse().expect("addr"),
            "[::1]:8081".parse().expect("addr"),
        );
        assert_eq!(parse_listening_line(&listening_line(p, a)), Some((p, a)));
        assert_eq!(parse_listening_line("listening public=x admin=y"), None);
        assert_eq!(parse_listening_line("INFO qrtag is serving"), None);
    }
}
