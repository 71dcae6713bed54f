//! The renewal task of one certificate on one node: installs what the store
//! holds when it changes (another node renewed it), and when renewing is due
//! (see [`schedule`](super::schedule)) takes the lease, reads the store again
//! (the last holder may have just renewed), orders, stores and installs. A
//! failed order leaves the installed certificate alone, is reported in the
//! [`RenewalStatus`] and tried again after a back-off.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::bundle::Leaf;
use super::schedule::{Decision, backoff, decide};
use super::{
    AcmeClient, AcmeError, AcmeSettings, CertStore, CertificateBundle, Http01Responder, Installer,
};

/// How often the renewer looks, and how long it waits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timing {
    /// The store is read at least this often, so a certificate another node
    /// renewed is installed here within it (5 minutes).
    pub poll: Duration,
    /// The first wait after a failed renewal (1 minute), doubled after each
    /// further failure up to `retry_cap` (1 hour).
    pub retry_base: Duration,
    pub retry_cap: Duration,
    /// An order not done within this is given up (5 minutes).
    pub order_deadline: Duration,
    /// A lease not released lapses after this (on CouchDB; 10 minutes,
    /// longer than an order may take).
    pub lease_ttl: Duration,
}

impl Default for Timing {
    fn default() -> Self {
        Self {
            poll: Duration::from_secs(300),
            retry_base: Duration::from_secs(60),
            retry_cap: Duration::from_secs(3600),
            order_deadline: Duration::from_secs(300),
            lease_ttl: Duration::from_secs(600),
        }
    }
}

/// What `/readyz` and `/metrics` show of a certificate; times are Unix
/// seconds.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RenewalStatus {
    /// The certificate's first name.
    pub name: String,
    /// The installed certificate's serial (hex) and end.
    pub serial: Option<String>,
    pub not_after: Option<i64>,
    /// When renewing is next due.
    pub renew_at: Option<i64>,
    /// When this node last stored a certificate it ordered.
    pub last_renewed: Option<i64>,
    /// The last failure in one line, cleared by a success.
    pub last_error: Option<String>,
    /// Failures in a row.
    pub failures: u32,
    /// While failing, when the next order may be placed.
    pub next_attempt: Option<i64>,
    /// Orders this node placed.
    pub orders: u64,
}

pub struct Renewer {
    settings: AcmeSettings,
    store: Arc<dyn CertStore>,
    responder: Arc<dyn Http01Responder>,
    installer: Arc<dyn Installer>,
    timing: Timing,
    holder: String,
    status: Arc<Mutex<RenewalStatus>>,
    /// The chain installed last, to install a changed one only.
    installed: Mutex<Option<String>>,
    /// Issue 36: with `challenge = "tls-alpn-01"`, where its answers go.
    alpn: Option<Arc<dyn super::TlsAlpn01Responder>>,
}

/// How soon a node that found the lease taken looks again: an order takes
/// seconds, and reading the store is one request.
pub const LEASE_WAIT: Duration = Duration::from_secs(5);

fn unix_now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

fn secs_until(now: i64, at: i64) -> Duration {
    Duration::from_secs(at.saturating_sub(now).max(0) as u64)
}

impl Renewer {
    /// `holder` names this node in the lease (its node name).
    pub fn new(
        settings: AcmeSettings,
        store: Arc<dyn CertStore>,
        responder: Arc<dyn Http01Responder>,
        installer: Arc<dyn Installer>,
        timing: Timing,
        holder: impl Into<String>,
    ) -> Self {
        let status = RenewalStatus {
            name: settings.primary().to_string(),
            ..RenewalStatus::default()
        };
        Self {
            settings,
            store,
            responder,
            installer,
            timing,
            holder: holder.into(),
            status: Arc::new(Mutex::new(status)),
            installed: Mutex::new(None),
            alpn: None,
        }
    }

    /// Issue 36: answers TLS-ALPN-01 through `responder` when the settings
    /// ask for it.
    pub fn with_tls_alpn01(mut self, responder: Arc<dyn super::TlsAlpn01Responder>) -> Self {
        self.alpn = Some(responder);
        self
    }

    /// The status now.
    pub fn status(&self) -> RenewalStatus {
        self.status_handle()
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// The status as shared with `/readyz`, which reads it under the lock.
    pub fn status_handle(&self) -> Arc<Mutex<RenewalStatus>> {
        Arc::clone(&self.status)
    }

    fn update(&self, change: impl FnOnce(&mut RenewalStatus)) {
        change(&mut self.status.lock().unwrap_or_else(PoisonError::into_inner));
    }

    /// Runs until the task is aborted (a lease held on disk is released as
    /// the task drops it; on CouchDB it lapses).
    pub async fn run(self: Arc<Self>) {
        loop {
            let wait = self.step().await;
            tokio::time::sleep(wait).await;
        }
    }

    /// One look: install, renew if due; returns how long to wait.
    pub async fn step(&self) -> Duration {
        let name = self.settings.primary().to_string();
        let now = unix_now();
        let stored = match self.store.certificate(&name).await {
            Ok(stored) => stored,
            Err(e) => return self.failed(now, &AcmeError::from(e).to_string()),
        };
        let leaf = stored.as_ref().and_then(|b| b.leaf().ok());
        if let (Some(bundle), Some(leaf)) = (&stored, &leaf) {
            self.install_if_new(bundle, leaf);
        }
        match decide(now, leaf.as_ref().map(|l| (l.validity, self.covers(l)))) {
            Decision::RenewAt(at) => {
                self.update(|s| s.renew_at = Some(at));
                self.timing.poll.min(secs_until(now, at))
            }
            Decision::RenewNow => {
                let next = self.status().next_attempt;
                if let Some(next) = next.filter(|&next| now < next) {
                    return self.timing.poll.min(secs_until(now, next));
                }
                self.renew(&name, now).await
            }
        }
    }

    async fn renew(&self, name: &str, now: i64) -> Duration {
        let lease = match self
            .store
            .try_lease(name, &self.holder, self.timing.lease_ttl)
            .await
        {
            Ok(Some(lease)) => lease,
            // Another node renews: its certificate is read at the next look,
            // soon (issue 36: a node starting beside the one that orders
            // serves its first certificate seconds after it, not a poll on).
            Ok(None) => return self.timing.poll.min(LEASE_WAIT),
            Err(e) => return self.failed(now, &AcmeError::from(e).to_string()),
        };
        let outcome = self.renew_under_lease(name).await;
        if let Err(e) = lease.release().await {
            tracing::warn!("ACME: releasing the renewal lease of {name}: {e}");
        }
        match outcome {
            Ok(()) => {
                self.update(|s| {
                    s.failures = 0;
                    s.last_error = None;
                    s.next_attempt = None;
                });
                Duration::ZERO
            }
            Err(e) => self.failed(unix_now(), &e.to_string()),
        }
    }

    async fn renew_under_lease(&self, name: &str) -> Result<(), AcmeError> {
        // The lease's last holder may have stored a certificate since this
        // node looked.
        if let Some(bundle) = self.store.certificate(name).await?
            && let Ok(leaf) = bundle.leaf()
            && self.covers(&leaf)
            && matches!(
                decide(unix_now(), Some((leaf.validity, true))),
                Decision::RenewAt(_)
            )
        {
            self.install_if_new(&bundle, &leaf);
            return Ok(());
        }
        let client = AcmeClient::connect(&self.settings, self.store.as_ref()).await?;
        self.update(|s| s.orders += 1);
        let answering = match (&self.settings.challenge, &self.alpn) {
            (super::Challenge::TlsAlpn01, Some(alpn)) => {
                super::order::Answering::TlsAlpn01(alpn.as_ref())
            }
            _ => super::order::Answering::Http01 {
                responder: self.responder.as_ref(),
                shared: Some(self.store.as_ref()),
            },
        };
        let bundle = client
            .order_answering(
                &self.settings.name_list(),
                answering,
                self.timing.order_deadline,
            )
            .await?;
        self.store.put_certificate(name, &bundle).await?;
        self.update(|s| s.last_renewed = Some(unix_now()));
        if let Ok(leaf) = bundle.leaf() {
            tracing::info!(
                "ACME: new certificate for {} (serial {}), stored and installed",
                leaf.names.join(", "),
                leaf.serial
            );
            self.install_if_new(&bundle, &leaf);
        }
        Ok(())
    }

    fn covers(&self, leaf: &Leaf) -> bool {
        self.settings
            .names
            .iter()
            .all(|n| leaf.names.iter().any(|l| l == n.as_str()))
    }

    fn install_if_new(&self, bundle: &CertificateBundle, leaf: &Leaf) {
        let mut installed = self
            .installed
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if installed.as_deref() == Some(bundle.chain_pem.as_str()) {
            return;
        }
        match self.installer.install(self.settings.primary(), bundle) {
            Ok(()) => {
                *installed = Some(bundle.chain_pem.clone());
                self.update(|s| {
                    s.serial = Some(leaf.serial.clone());
                    s.not_after = Some(leaf.validity.not_after);
                    s.renew_at = Some(leaf.validity.renew_at());
                });
            }
            Err(e) => {
                let line = format!(
                    "installing the certificate of {}: {e}",
                    self.settings.primary()
                );
                tracing::warn!("ACME: {line}");
                self.update(|s| s.last_error = Some(line));
            }
        }
    }

    fn failed(&self, now: i64, line: &str) -> Duration {
        let mut failures = 0;
        self.update(|s| {
            s.failures = s.failures.saturating_add(1);
            failures = s.failures;
        });
        let wait = backoff(failures, self.timing.retry_base, self.timing.retry_cap);
        tracing::warn!(
            "ACME: renewing {} failed ({failures} in a row), the installed certificate stays; next try in {} s: {line}",
            self.settings.primary(),
            wait.as_secs()
        );
        self.update(|s| {
            s.last_error = Some(line.to_string());
            s.next_attempt = Some(now.saturating_add(wait.as_secs() as i64));
        });
        self.timing.poll.min(wait)
    }
}
