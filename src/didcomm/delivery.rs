//! Outbound delivery of replies that were not asked for on the HTTP
//! response: an HTTP POST of the encrypted reply to the sender's DIDComm
//! endpoint, a few tries with backoff; failures are logged and counted.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

pub const MEDIA_TYPE: &str = "application/didcomm-encrypted+json";

/// Pauses before the second, third and fourth tries.
const BACKOFF: [Duration; 3] = [
    Duration::from_millis(200),
    Duration::from_secs(1),
    Duration::from_secs(3),
];

#[derive(Debug, Default)]
pub struct Counters {
    pub delivered: AtomicU64,
    pub failed: AtomicU64,
}

#[derive(Clone)]
pub struct Delivery {
    client: reqwest::Client,
    counters: Arc<Counters>,
}

impl Delivery {
    pub fn new() -> Self {
        let client = reqwest::Client::builder()
            .timeout(Duration::from_secs(10))
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .unwrap_or_else(|_| reqwest::Client::new());
        Self {
            client,
            counters: Arc::default(),
        }
    }

    pub fn counters(&self) -> Arc<Counters> {
        Arc::clone(&self.counters)
    }

    /// Sends `body` to `endpoint` in the background.
    pub fn send(&self, endpoint: String, body: String) {
        let this = self.clone();
        tokio::spawn(async move { this.deliver(&endpoint, body).await });
    }

    async fn deliver(&self, endpoint: &str, body: String) {
        let mut last = String::new();
        for attempt in 0..=BACKOFF.len() {
            if attempt > 0 {
                tokio::time::sleep(BACKOFF[attempt - 1]).await;
            }
            let sent = self
                .client
                .post(endpoint)
                .header(reqwest::header::CONTENT_TYPE, MEDIA_TYPE)
                .body(body.clone())
                .send()
                .await;
            match sent {
                Ok(r) if r.status().is_success() => {
                    self.counters.delivered.fetch_add(1, Ordering::Relaxed);
                    return;
                }
                Ok(r) => last = format!("answered {}", r.status()),
                Err(e) => last = e.to_string(),
            }
        }
        let failed = self.counters.failed.fetch_add(1, Ordering::Relaxed) + 1;
        tracing::warn!(%endpoint, error = %last, failed_deliveries = failed, "could not deliver a DIDComm reply");
    }
}

impl Default for Delivery {
    fn default() -> Self {
        Self::new()
    }
}
