//! `GET /metrics` on the admin listener: Prometheus metrics through the
//! Prometheus project's `prometheus-client` crate.
//!
//! Almost everything is read at scrape time from state the service keeps
//! anyway (the snapshot, the follower's counters, the access log's stats,
//! `/proc`), so serving metrics adds no work to requests. The one exception
//! is the public listener's request counts and latencies, which only exist
//! if each request records them: [`requests`] does that with plain atomics,
//! never a lock.
//!
//! - [`requests`] — per-request counts by (method, status) and the latency histogram.
//! - [`service`] — links, store follower, access log, DIDComm, build and node info.
//! - [`qr`] — QR images rendered, by format.
//! - [`process`] — the standard `process_*` metrics from `/proc`.
//! - [`exposition`] — OpenMetrics or the classic text format, by `Accept`.

use std::sync::Arc;

use prometheus_client::registry::Registry;

use crate::metrics::health::Health;

// Issue 36: /readyz and /metrics per domain.
pub mod domains;
pub mod exposition;
pub mod health;
pub mod process;
pub mod qr;
pub mod requests;
mod service;

pub use exposition::Format;
pub use qr::QrRenders;
pub use requests::RequestMetrics;

/// Every metric the server exposes, registered once at startup.
#[derive(Debug)]
pub struct Metrics {
    registry: Registry,
}

impl Metrics {
    pub fn new(
        requests: Arc<RequestMetrics>,
        health: Arc<Health>,
        qr: &QrRenders,
        gate: crate::print::tag_image::RenderGate,
    ) -> Self {
        let mut registry = Registry::default();
        registry.register_collector(Box::new(service::ServiceCollector(health)));
        registry.register_collector(Box::new(requests::RequestsCollector(requests)));
        registry.register(
            "qrtag_qr_images_rendered",
            // prometheus-client adds the full stop.
            "QR images rendered by the admin listener, by format",
            qr.family(),
        );
        registry.register_collector(Box::new(qr::RenderSlots(gate)));
        registry.register_collector(Box::new(process::ProcessCollector));
        // Issue 35: audit entries the store did not take.
        registry.register(
            "qrtag_audit_write_failures",
            "Audit log entries lost because the store refused or could not be reached",
            crate::store::audit::failures(),
        );
        Self { registry }
    }

    /// The exposition in `format`.
    pub fn encode(&self, format: Format) -> Result<String, std::fmt::Error> {
        let mut text = String::with_capacity(8 << 10);
        prometheus_client::encoding::text::encode(&mut text, &self.registry)?;
        Ok(match format {
            Format::OpenMetrics => text,
            Format::Prometheus => exposition::to_prometheus(&text),
        })
    }
}
