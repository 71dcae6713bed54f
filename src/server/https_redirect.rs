//! The plain listener beside HTTPS (`--http-listen`, port 80): every request
//! is sent to the same host and path over HTTPS, except an ACME HTTP-01
//! challenge, answered from [`Challenges`] (a CA asks for it over plain
//! HTTP before any certificate exists).

use std::sync::Arc;

use actix_web::http::{Method, StatusCode, header};
use actix_web::{HttpRequest, HttpResponse, web};

use crate::tls::challenges::Challenges;

/// Where ACME HTTP-01 challenges are asked for.
pub const CHALLENGE_PREFIX: &str = "/.well-known/acme-challenge/";

pub struct RedirectState {
    pub challenges: Arc<Challenges>,
    /// The HTTPS listener's port as the public URL says it (`None`: 443).
    pub https_port: Option<u16>,
    /// The host used when a request names none (HTTP/1.0).
    pub default_host: String,
}

#[derive(Debug, PartialEq, Eq, thiserror::Error)]
#[error("the Host header is not a host name")]
pub struct BadHost;

/// The https URL for a request to `host` (the Host header, its port
/// dropped) and `target` (path and query), or [`BadHost`] for a Host that
/// is no host name (so nothing odd reaches a Location header).
pub fn location(host: &str, https_port: Option<u16>, target: &str) -> Result<String, BadHost> {
    let name = match host.strip_prefix('[') {
        Some(rest) => {
            let end = rest.find(']').ok_or(BadHost)?;
            let inner = &rest[..end];
            if inner.is_empty()
                || !inner
                    .bytes()
                    .all(|b| b.is_ascii_hexdigit() || b == b':' || b == b'.')
            {
                return Err(BadHost);
            }
            &host[..end + 2]
        }
        None => {
            let name = host.split(':').next().unwrap_or_default();
            if name.is_empty()
                || name.len() > 253
                || !name
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'-')
            {
                return Err(BadHost);
            }
            name
        }
    };
    let port = https_port.map(|p| format!(":{p}")).unwrap_or_default();
    let target = if target.starts_with('/') { target } else { "/" };
    Ok(format!(
        "https://{}{port}{target}",
        name.to_ascii_lowercase()
    ))
}

/// Every request on the plain listener.
pub async fn handle(req: HttpRequest, state: web::Data<RedirectState>) -> HttpResponse {
    let path = req.uri().path();
    if let Some(token) = path.strip_prefix(CHALLENGE_PREFIX) {
        return match state.challenges.answer(token).await {
            Some(answer) => HttpResponse::Ok()
                .content_type("application/octet-stream")
                .body(answer),
            None => HttpResponse::NotFound()
                .content_type("text/plain; charset=utf-8")
                .body("no such ACME challenge\n"),
        };
    }
    let host = req
        .headers()
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .unwrap_or(&state.default_host);
    let target = req.uri().path_and_query().map_or("/", |p| p.as_str());
    match location(host, state.https_port, target) {
        Ok(to) => {
            // 301 keeps what browsers and crawlers know; 308 keeps the
            // method and body of anything else.
            let status = if matches!(*req.method(), Method::GET | Method::HEAD) {
                StatusCode::MOVED_PERMANENTLY
            } else {
                StatusCode::PERMANENT_REDIRECT
            };
            HttpResponse::build(status)
                .insert_header((header::LOCATION, to))
                .content_type("text/plain; charset=utf-8")
                .body("this service answers over HTTPS\n")
        }
        Err(e) => HttpResponse::BadRequest()
            .content_type("text/plain; charset=utf-8")
            .body(format!("{e}\n")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_host_and_path_over_https() {
        let cases = [
            ("go.example", None, "/abc?x=1", "https://go.example/abc?x=1"),
            ("Go.Example:80", None, "/", "https://go.example/"),
            (
                "go.example:8080",
                Some(8443),
                "/a/b",
                "https://go.example:8443/a/b",
            ),
            ("[::1]:80", Some(8443), "/k", "https://[::1]:8443/k"),
            ("127.0.0.1:80", None, "*", "https://127.0.0.1/"),
        ];
        for (host, port, target, want) in cases {
            assert_eq!(location(host, port, target).as_deref(), Ok(want), "{host}");
        }
        for bad in ["", "evil.example/x", "a@b", "[zz]", "[::1", "a b", ":80"] {
            assert_eq!(location(bad, None, "/"), Err(BadHost), "{bad:?}");
        }
    }
}
