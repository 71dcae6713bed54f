//! The admin listener: health, readiness and metrics here, QR codes in
//! [`qr`](super::qr). Bound to loopback by default, because nothing here is
//! for scanners.

use std::sync::Arc;

use actix_web::http::header;
use actix_web::{HttpRequest, HttpResponse, web};

use super::accept::accepts;

use crate::metrics::health::Health;
use crate::metrics::{Format, Metrics, exposition};

pub struct AdminState {
    pub health: Arc<Health>,
    pub metrics: Arc<Metrics>,
    /// Whether `serve --console` put the console on this listener.
    pub console: bool,
}

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.route("/", web::get().to(index))
        .route("/healthz", web::get().to(healthz))
        .route("/readyz", web::get().to(readyz))
        .route("/metrics", web::get().to(metrics));
}

/// What a person opening the admin address in a browser lands on: the
/// console when it is on, otherwise what this listener serves, so an empty
/// 404 does not read as a broken install.
async fn index(state: web::Data<AdminState>) -> HttpResponse {
    if state.console {
        return HttpResponse::SeeOther()
            .insert_header((header::LOCATION, crate::console::pages::BASE))
            .finish();
    }
    HttpResponse::Ok()
        .content_type("text/plain; charset=utf-8")
        .body(ENDPOINTS)
}

const ENDPOINTS: &str = "\
qrtag admin listener
/healthz              the process is up
/readyz               links loaded (503 until then), and any problem; ?format=json
/metrics              Prometheus metrics
/qr/KEY.png|svg       a link's tag image (?scale=, margin=, ec=)
/qr/KEY.pdf           print-ready PDF, qrtag print's options (?template=L7163 or ?poster=A3, skip=, ...)
/console              the web console, when serve runs with --console
";

/// The process is up and answering.
async fn healthz() -> HttpResponse {
    HttpResponse::Ok()
        .content_type("text/plain; charset=utf-8")
        .body("ok\n")
}

/// What a load balancer should ask: 503 until links are loaded, 200 from
/// then on. A store that goes away does not make it unready (redirects go on
/// from the snapshot), and neither does a failing access log (redirects
/// matter more than their log lines); both are named, as "degraded". Plain
/// text for people and scripts, JSON for anything that asks for it.
async fn readyz(req: HttpRequest, state: web::Data<AdminState>) -> HttpResponse {
    let report = state.health.report();
    let mut res = if report.status.takes_traffic() {
        HttpResponse::Ok()
    } else {
        HttpResponse::ServiceUnavailable()
    };
    if wants_json(&req) {
        res.json(&report)
    } else {
        res.content_type("text/plain; charset=utf-8")
            .body(report.text())
    }
}

/// `?format=json`, or `application/json` among the accepted types.
fn wants_json(req: &HttpRequest) -> bool {
    let by_query = form_urlencoded::parse(req.query_string().as_bytes())
        .any(|(name, value)| name == "format" && value == "json");
    by_query || accepts(req.headers(), "application/json")
}

async fn metrics(req: HttpRequest, state: web::Data<AdminState>) -> HttpResponse {
    // Prometheus names OpenMetrics; promtool and curl get the classic text.
    let format = if accepts(req.headers(), exposition::OPENMETRICS_TYPE) {
        Format::OpenMetrics
    } else {
        Format::Prometheus
    };
    match state.metrics.encode(format) {
        Ok(body) => HttpResponse::Ok()
            .content_type(format.content_type())
            .body(body),
        Err(e) => {
            tracing::error!(error = %e, "encoding metrics failed");
            HttpResponse::InternalServerError()
                .content_type("text/plain; charset=utf-8")
                .body("encoding metrics failed\n")
        }
    }
}
