//! One domain's running parts (issue 36): what [`Application::build`]
//! made once for the one store before there were domains, made once per
//! domain: the store, its snapshot (from the snapshot file, then
//! followed), the saver, the public URL followed from the store, and the
//! access log.
//!
//! [`Application::build`]: super::Application::build

use std::path::PathBuf;
use std::sync::Arc;

use crate::access_log::{AccessLog, AccessLogTarget, WriterOptions};
use crate::snapshot::Snapshot;
use crate::store::live_url::LiveUrl;
use crate::store::options::StoreSettings;
use crate::store::saver::Saver;
use crate::store::{self, LinkStore};
use crate::values::public_url::PublicUrl;

use super::StartupError;

/// What a domain is started from.
pub struct SiteSpec<'a> {
    pub store: &'a StoreSettings,
    pub access_log: &'a AccessLogTarget,
    pub access_log_options: WriterOptions,
    pub snapshot_file: Option<PathBuf>,
    pub public_url: PublicUrl,
    /// Follow the public URL recorded with the links (the default domain,
    /// unless `--public-url` was a one-off).
    pub follow_recorded_url: bool,
}

/// A domain started: its store opened and followed into its snapshot.
pub struct RunningSite {
    pub store: Arc<dyn LinkStore>,
    pub snapshot: Arc<Snapshot>,
    pub follower: tokio::task::JoinHandle<()>,
    pub url_watch: Option<tokio::task::JoinHandle<()>>,
    pub saver: Option<Arc<Saver>>,
    pub access_log: AccessLog,
    pub live_url: LiveUrl,
}

/// Opens the domain's store and access log, serves its snapshot file if
/// the store can resume from it, and starts following the store into
/// `snapshot` (made by the caller, so the scan index can watch it first).
pub async fn start(
    spec: SiteSpec<'_>,
    snapshot: Arc<Snapshot>,
) -> Result<RunningSite, StartupError> {
    let store = store::open(spec.store, store::Access::Create)?;
    let access_log = AccessLog::open(spec.access_log, spec.access_log_options)?;
    let identity = store.snapshot_identity();
    let resume = match &spec.snapshot_file {
        Some(path) => super::restore(path, &identity, store.as_ref(), &snapshot).await,
        None => None,
    };
    let saver = spec.snapshot_file.map(|path| {
        // A file held for confirmation is saved again once served, under
        // this node's URL, so its next restart serves at once.
        let on_disk = resume
            .as_ref()
            .is_some_and(|r| r.unconfirmed.is_none())
            .then(|| snapshot.generation());
        Saver::new(path, Arc::clone(&store), Arc::clone(&snapshot), on_disk)
    });
    let follower = Arc::clone(&store).follow(Arc::clone(&snapshot), resume);
    let live_url = LiveUrl::new(spec.public_url);
    let url_watch = spec
        .follow_recorded_url
        .then(|| crate::store::live_url::watch(Arc::clone(&store), live_url.clone()));
    Ok(RunningSite {
        store,
        snapshot,
        follower,
        url_watch,
        saver,
        access_log,
        live_url,
    })
}

impl RunningSite {
    /// Stops following the store and writes the snapshot file one last
    /// time, so the next start serves exactly what this one last did.
    pub async fn stop_following(&self) {
        self.follower.abort();
        if let Some(watch) = &self.url_watch {
            watch.abort();
        }
        if let Some(saver) = &self.saver
            && let Err(e) = saver.save_if_changed().await
        {
            tracing::warn!(path = %saver.path().display(), error = %e, "cannot write the snapshot file");
        }
    }
}

/// Issue 36: a root URL as the `Location` a domain's `/` answers with
/// (a destination is printable ASCII; one that were not is left out).
pub fn root_location(
    root: Option<&crate::values::destination::Destination>,
) -> Option<actix_web::http::header::HeaderValue> {
    let root = root?;
    let value = crate::server::header_value::printable(root.as_str().as_bytes().to_vec());
    if value.is_none() {
        tracing::warn!(root = %root.as_str(), "the root URL cannot be a Location header; / answers as an unknown key");
    }
    value
}
