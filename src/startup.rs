//! Building the running service from [`Settings`]: open the store, start the
//! follower that fills the snapshot, bind both listeners.
//!
//! Binding happens in [`Application::build`], before anything runs, so that
//! callers (tests on port 0 especially) learn the real addresses up front.

use std::net::{SocketAddr, TcpListener};
use std::sync::Arc;

use actix_web::dev::Server;
use actix_web::{App, HttpServer, web};

use crate::server::{admin, public};
use crate::settings::Settings;
use crate::snapshot::Snapshot;
use crate::store::{self, StoreError};

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
}

pub struct Application {
    public_addr: SocketAddr,
    admin_addr: SocketAddr,
    public: Server,
    admin: Server,
    snapshot: Arc<Snapshot>,
    follower: tokio::task::JoinHandle<()>,
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
        let snapshot = Snapshot::new();
        let follower = store.follow(Arc::clone(&snapshot));

        let public_state = web::Data::new(public::PublicState {
            snapshot: Arc::clone(&snapshot),
            public_url: settings.public_url.clone(),
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

    /// Serves until SIGINT or SIGTERM; in-flight requests are finished first.
    pub async fn run_until_stopped(self) -> std::io::Result<()> {
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
        first.map_err(std::io::Error::other)?
    }
}
