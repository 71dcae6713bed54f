//! Building the running service from [`Settings`]: open the store, start the
//! follower that fills the snapshot, bind both listeners.
//!
//! Binding happens in [`Application::build`], before anything runs, so that
//! callers (tests on port 0 especially) learn the real addresses up front.

use std::net::{SocketAddr, TcpListener};
use std::sync::Arc;

use actix_web::dev::Server;
use actix_web::{App, HttpServer, web};

use crate::access_log::{AccessLog, AccessLogError};
use crate::server::{admin, public};
use crate::settings::Settings;
use crate::snapshot::Snapshot;
use crate::store::{self, StoreError};
use crate::tracking_cookie::TrackingCookie;

#[derive(Debug, thiserror::Error)]
pub enum StartupError {
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        addr: String,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    AccessLog(#[from] AccessLogError),
    #[error("cannot listen for SIGHUP: {0}")]
    Signal(#[source] std::io::Error),
}

pub struct Application {
    public_addr: SocketAddr,
    admin_addr: SocketAddr,
    public: Server,
    admin: Server,
    snapshot: Arc<Snapshot>,
    follower: tokio::task::JoinHandle<()>,
    access_log: AccessLog,
    /// Registered in `build`, so a SIGHUP that arrives once the addresses are
    /// known reopens the log instead of killing the process.
    hangup: tokio::signal::unix::Signal,
}

fn bind(addr: &str) -> Result<(TcpListener, SocketAddr), StartupError> {
    let err = |source| StartupError::Bind {
        addr: addr.to_owned(),
        source,
    };
    let listener = TcpListener::bind(addr).map_err(err)?;
    let local = listener.local_addr().map_err(err)?;
    Ok((listener, local))
}

impl Application {
    /// Opens the store, starts following it and binds both listeners. Must
    /// be called inside a Tokio runtime; nothing is served until
    /// [`run_until_stopped`](Self::run_until_stopped).
    pub async fn build(settings: Settings) -> Result<Self, StartupError> {
        let (public_listener, public_addr) = bind(&settings.listen)?;
        let (admin_listener, admin_addr) = bind(&settings.admin_listen)?;
        let store = store::open(&settings.store)?;
        let access_log =
            AccessLog::open(&settings.access_log, settings.access_log_options.clone())?;
        let hangup = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup())
            .map_err(StartupError::Signal)?;
        let snapshot = Snapshot::new();
        let follower = store.follow(Arc::clone(&snapshot));

        let public_state = web::Data::new(public::PublicState {
            snapshot: Arc::clone(&snapshot),
            public_url: settings.public_url.clone(),
            access_log: access_log.clone(),
            tracking: settings.tracking.as_ref().map(|t| {
                TrackingCookie::new(t.cookie_name.clone(), settings.public_url.is_https())
            }),
            trusted_proxies: settings.trusted_proxies.clone(),
        });
        let mut public_server = HttpServer::new(move || {
            App::new()
                .app_data(public_state.clone())
                .default_service(web::to(public::handle))
        })
        .listen(public_listener)
        .map_err(|source| StartupError::Bind {
            addr: settings.listen.clone(),
            source,
        })?;
        if let Some(n) = settings.workers {
            public_server = public_server.workers(n.max(1));
        }

        let qr_state = web::Data::new(crate::server::qr::QrState {
            snapshot: Arc::clone(&snapshot),
            public_url: settings.public_url.clone(),
            uppercase_prefix: settings.qr_uppercase_prefix,
        });
        let admin_state = web::Data::new(admin::AdminState {
            snapshot: Arc::clone(&snapshot),
            access_log: access_log.clone(),
        });
        let admin_server = HttpServer::new(move || {
            App::new()
                .app_data(admin_state.clone())
                .configure(admin::routes)
                .service(crate::server::qr::service(qr_state.clone()))
        })
        .workers(1)
        .listen(admin_listener)
        .map_err(|source| StartupError::Bind {
            addr: settings.admin_listen.clone(),
            source,
        })?;

        Ok(Self {
            public_addr,
            admin_addr,
            public: public_server.run(),
            admin: admin_server.run(),
            snapshot,
            follower,
            access_log,
            hangup,
        })
    }

    pub fn public_addr(&self) -> SocketAddr {
        self.public_addr
    }

    pub fn admin_addr(&self) -> SocketAddr {
        self.admin_addr
    }

    pub fn snapshot(&self) -> Arc<Snapshot> {
        Arc::clone(&self.snapshot)
    }

    pub fn access_log(&self) -> AccessLog {
        self.access_log.clone()
    }

    /// Serves until SIGINT or SIGTERM; in-flight requests are finished first,
    /// then every access log line is written and synced. SIGHUP reopens the
    /// access log.
    pub async fn run_until_stopped(self) -> std::io::Result<()> {
        let reopener = {
            let log = self.access_log.clone();
            let mut hangup = self.hangup;
            tokio::spawn(async move {
                while hangup.recv().await.is_some() {
                    let log = log.clone();
                    // Waits for the flusher, which may be mid-write.
                    let _ = tokio::task::spawn_blocking(move || log.reopen()).await;
                }
            })
        };
        let public_handle = self.public.handle();
        let admin_handle = self.admin.handle();
        let public = tokio::spawn(self.public);
        let admin = tokio::spawn(self.admin);
        // Each actix server stops itself on SIGINT/SIGTERM; when either one
        // ends, stop the other too.
        let first = tokio::select! {
            r = public => { admin_handle.stop(true).await; r }
            r = admin => { public_handle.stop(true).await; r }
        };
        self.follower.abort();
        reopener.abort();
        // Both listeners have stopped, so no line can be appended any more.
        let log = self.access_log;
        let drained = tokio::task::spawn_blocking(move || log.shutdown())
            .await
            .map_err(std::io::Error::other)
            .and_then(|r| r.map_err(std::io::Error::other));
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
