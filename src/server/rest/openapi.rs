//! The OpenAPI 3.1 document, derived by `utoipa` from the handlers'
//! `#[utoipa::path]` attributes and the request and response types, so it
//! cannot drift from what the handlers take and give. `assets/openapi.json`
//! is a committed copy that a test keeps equal to [`document`].

use std::sync::LazyLock;

use actix_web::HttpResponse;
use actix_web::web::Bytes;
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{Modify, OpenApi};

use super::problem::Problem;
use super::{history, links, print, scans};

#[derive(OpenApi)]
#[openapi(
    info(
        title = "qrtag REST API",
        version = "1",
        description = "Links, QR images, print-ready PDFs and scans of a qrtag server. Every refusal is an RFC 9457 problem (application/problem+json) with a stable `type`. A write that CouchDB stored with fewer copies than the database's n (HTTP 202, cluster nodes down) is answered as usual, with a `warning` in the body."
    ),
    paths(
        links::create,
        links::bulk,
        links::list,
        links::get,
        links::edit,
        links::qr_png_doc,
        links::qr_svg_doc,
        print::print_pdf_doc,
        print::sheet,
        scans::of_link,
        scans::all,
        // Issue 35.
        history::link_history,
        history::revert,
    ),
    components(schemas(
        Problem,
        links::NewLink,
        links::LinkEdit,
        links::LinkView,
        links::BulkCreate,
        links::BulkResult,
        links::BulkItem,
        links::LinkPage,
        print::PrintKeys,
        scans::LinkScans,
        scans::AllScans,
        scans::Day,
        scans::TopLink,
        scans::Breakdowns,
        scans::Breakdown,
        scans::ValueScans,
        scans::DestinationRow,
        // Issue 35.
        history::HistoryView,
        history::EntryView,
        history::ChangeView,
        history::Revert,
    )),
    modifiers(&Bearer)
)]
struct ApiDoc;

struct Bearer;

impl Modify for Bearer {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .description(Some("An API key from `qrtag api-key create`"))
                    .build(),
            ),
        );
    }
}

/// The document as served, pretty-printed with a final newline: what
/// `utoipa` derives, with what the handlers refuse declared
/// ([`super::enforced`]).
pub fn document() -> String {
    let mut text = serde_json::to_value(ApiDoc::openapi())
        .and_then(|mut doc| {
            super::enforced::apply(&mut doc);
            super::rules::add_rule_schema(&mut doc);
            // Issue 35: the role each operation's key needs.
            super::needs::add_to(&mut doc);
            // Issue 36: every operation takes the domain.
            super::domain::add_to(&mut doc);
            serde_json::to_string_pretty(&doc)
        })
        .unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"));
    text.push('\n');
    text
}

/// Built once: deriving and printing it took 10-20 ms a request, and it
/// cannot change while the process runs.
static DOCUMENT: LazyLock<Bytes> = LazyLock::new(|| Bytes::from(document()));

pub async fn serve() -> HttpResponse {
    HttpResponse::Ok()
        .content_type("application/json")
        .body(DOCUMENT.clone())
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_committed_copy_is_the_served_document() {
        let committed = include_str!("../../../assets/openapi.json");
        let served = super::document();
        if committed != served {
            if std::env::var_os("QRTAG_BLESS").is_some() {
                std::fs::write(
                    concat!(env!("CARGO_MANIFEST_DIR"), "/assets/openapi.json"),
                    &served,
                )
                .expect("write");
            }
            panic!(
                "assets/openapi.json differs from the served document; run with QRTAG_BLESS=1 to rewrite it"
            );
        }
        assert!(served.contains("\"openapi\": \"3.1"));
    }
}
