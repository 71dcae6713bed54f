//! The admin listener: health and readiness here, QR codes in
//! [`qr`](super::qr); API and metrics later. Bound to loopback by default,
//! because nothing here is for scanners.

use std::sync::Arc;

use actix_web::{HttpResponse, web};

use crate::access_log::AccessLog;
use crate::snapshot::Snapshot;

pub struct AdminState {
    pub snapshot: Arc<Snapshot>,
    pub access_log: AccessLog,
    /// DIDComm reply deliveries, when the DIDComm listener is on.
    pub deliveries: Option<Arc<crate::didcomm::delivery::Counters>>,
}

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.route("/healthz", web::get().to(healthz))
        .route("/readyz", web::get().to(readyz));
}

/// The process is up and answering.
async fn healthz() -> HttpResponse {
    HttpResponse::Ok()
        .content_type("text/plain; charset=utf-8")
        .body("ok\n")
}

/// Links are loaded, so redirects are answered from real data. After the
/// first load it stays ready while the store is away (redirects go on from the
/// snapshot) but names the problem. A failing access log does not make it
/// unready either (redirects matter more than their log lines), but it is
/// named, and the log's counters are always shown.
async fn readyz(state: web::Data<AdminState>) -> HttpResponse {
    let snapshot = &state.snapshot;
    let table = snapshot.load();
    let problem = snapshot.problem();
    if snapshot.is_loaded() {
        let mut body = format!(
            "ready: {} links, {} invalid documents skipped\n",
            table.len(),
            table.invalid_count()
        );
        if let Some(p) = problem {
            body.push_str(&format!("degraded: {p}\n"));
        }
        access_log_status(&state.access_log, &mut body);
        if let Some(d) = &state.deliveries {
            use std::sync::atomic::Ordering::Relaxed;
            body.push_str(&format!(
                "didcomm replies delivered: {}, failed: {}\n",
                d.delivered.load(Relaxed),
                d.failed.load(Relaxed)
            ));
        }
        HttpResponse::Ok()
            .content_type("text/plain; charset=utf-8")
            .body(body)
    } else {
        let why = problem.unwrap_or_else(|| "links not loaded yet".into());
        let mut body = format!("not ready: {why}\n");
        access_log_status(&state.access_log, &mut body);
        HttpResponse::ServiceUnavailable()
            .content_type("text/plain; charset=utf-8")
            .body(body)
    }
}

fn access_log_status(log: &AccessLog, body: &mut String) {
    use std::fmt::Write;
    let s = log.stats();
    if s.failing {
        let err = s.last_error.as_deref().unwrap_or("unknown error");
        let _ = writeln!(body, "degraded: access log writes failing: {err}");
    }
    let _ = writeln!(
        body,
        "access log {}: {} lines written, {} write errors, {} lines dropped, {} waits for room, {} reopens",
        log.target(),
        s.lines_written,
        s.write_errors,
        s.lines_dropped,
        s.backpressure_waits,
        s.reopens
    );
    if let (false, Some(err)) = (s.failing, &s.last_error) {
        let _ = writeln!(body, "access log last error: {err}");
    }
}
