//! The admin listener: health and readiness here, QR codes in
//! [`qr`](super::qr); API and metrics later. Bound to loopback by default,
//! because nothing here is for scanners.

use std::sync::Arc;

use actix_web::{HttpResponse, web};

use crate::snapshot::Snapshot;

pub struct AdminState {
    pub snapshot: Arc<Snapshot>,
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
/// snapshot) but names the problem.
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
        HttpResponse::Ok()
            .content_type("text/plain; charset=utf-8")
            .body(body)
    } else {
        let why = problem.unwrap_or_else(|| "links not loaded yet".into());
        HttpResponse::ServiceUnavailable()
            .content_type("text/plain; charset=utf-8")
            .body(format!("not ready: {why}\n"))
    }
}
