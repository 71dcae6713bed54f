//! The application with its DIDComm listener on, and agents to talk to it.

use std::time::Duration;

use qrtag::didcomm::did::Did;
use qrtag::didcomm::envelope;
use qrtag::didcomm::identity::{Keys, ServiceIdentity};
use qrtag::didcomm::protocol::Policy;
use qrtag::server::api::ApiSettings;
use qrtag::values::secret::Secret;
use serde_json::{Value, json};

use crate::support::{TestApp, spawn_with, test_settings};

pub const TOKEN: &str = "test-token-7f3a";
pub const REQUEST: &str = "https://didcomm.org/shorten-url/1.0/request-shortened-url";
pub const INVALIDATE: &str = "https://didcomm.org/shorten-url/1.0/invalidate-shortened-url";

/// Starts the service with the DIDComm listener; `policy` edits the rules.
/// The test agents' endpoints are on loopback, so replies may be posted to
/// private addresses (`--didcomm-allow-private-endpoints`).
pub async fn spawn_didcomm(policy: impl FnOnce(&mut Policy)) -> TestApp {
    spawn_didcomm_api(|api| {
        api.allow_private_endpoints = true;
        policy(&mut api.policy);
    })
    .await
}

/// Starts the service with the DIDComm listener as `edit` sets it up.
pub async fn spawn_didcomm_api(edit: impl FnOnce(&mut ApiSettings)) -> TestApp {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut settings = test_settings(dir.path());
    let mut api = ApiSettings::new("127.0.0.1:0", dir.path().join("didcomm-keys.json"));
    api.token = Some(Secret::new(TOKEN));
    edit(&mut api);
    settings.api = Some(api);
    spawn_with(settings, dir).await
}

pub fn api_url(app: &TestApp) -> String {
    format!("http://{}/didcomm", app.api.expect("DIDComm listener on"))
}

/// POSTs `body` as `media_type`, with the bearer token when `token`.
pub async fn post(
    app: &TestApp,
    media_type: &str,
    body: impl Into<reqwest::Body>,
    token: Option<&str>,
) -> reqwest::Response {
    let mut req = app
        .client
        .post(api_url(app))
        .header("content-type", media_type)
        .body(body);
    if let Some(t) = token {
        req = req.bearer_auth(t);
    }
    req.send().await.expect("request")
}

/// A plaintext v2 request with the token; the reply message.
pub async fn plain_v2(app: &TestApp, msg: Value) -> Value {
    let r = post(
        app,
        "application/didcomm-plain+json",
        msg.to_string(),
        Some(TOKEN),
    )
    .await;
    assert_eq!(r.status().as_u16(), 200);
    assert_eq!(
        crate::support::header(&r, "content-type"),
        Some("application/didcomm-plain+json")
    );
    r.json().await.expect("JSON reply")
}

pub fn request_v2(id: &str, body: Value) -> Value {
    json!({"type": REQUEST, "id": id, "return_route": "all", "body": body})
}

/// The problem code of a v1 or v2 report, without the `e.p.msg.` prefix.
pub fn problem_code(reply: &Value) -> Option<&str> {
    reply["body"]["code"]
        .as_str()
        .map(|c| c.trim_start_matches("e.p.msg."))
        .or_else(|| reply["description"]["code"].as_str())
}

/// The key of a short URL on the test public origin.
pub fn key_of(short: &str) -> String {
    let rest = short
        .strip_prefix(&format!("{}/", crate::support::PUBLIC_URL))
        .expect("short URL on the public origin");
    rest.split('?').next().unwrap_or(rest).to_owned()
}

/// An agent built on the crate qrtag uses, with its own did:peer:2.
pub struct Agent {
    pub me: ServiceIdentity,
}

impl Agent {
    pub fn new(endpoint: &str) -> Self {
        Self {
            me: ServiceIdentity::new(Keys::generate(), Some(endpoint)),
        }
    }

    pub fn did(&self) -> Did {
        self.me.did().clone()
    }

    /// Authcrypts `msg` (from this agent) to the service.
    pub fn seal(&self, app: &TestApp, mut msg: Value) -> String {
        let service = app.did.clone().expect("service DID");
        msg["from"] = json!(self.me.did().as_str());
        msg["to"] = json!([service]);
        envelope::seal(
            &msg,
            &self.me,
            &self.me.agreement_kid(),
            &format!("{service}#key-1"),
        )
        .expect("sealed")
    }

    /// Opens a reply from the service.
    pub fn open(&self, jwe: &str) -> Value {
        let opened = envelope::open(jwe, &self.me).expect("the reply opens");
        assert_eq!(
            opened.message["from"].as_str(),
            Some(opened.sender.did.as_str())
        );
        opened.message
    }

    /// Sends `msg` encrypted with return_route and opens the reply.
    pub async fn ask(&self, app: &TestApp, mut msg: Value) -> Value {
        msg["return_route"] = json!("all");
        let r = post(
            app,
            "application/didcomm-encrypted+json",
            self.seal(app, msg),
            None,
        )
        .await;
        assert_eq!(r.status().as_u16(), 200);
        assert_eq!(
            crate::support::header(&r, "content-type"),
            Some("application/didcomm-encrypted+json")
        );
        self.open(&r.text().await.expect("body"))
    }
}

/// Polls the public listener until `path` answers `status`.
pub async fn until_status(app: &TestApp, path: &str, status: u16, within: Duration) {
    crate::support::poll::until(within, &format!("{path} answers {status}"), || async {
        (app.get(path).await.status().as_u16() == status).then_some(())
    })
    .await;
}

/// The admin listener's `/readyz` text (delivery counts among it).
pub async fn readyz(app: &TestApp) -> String {
    app.admin_get("/readyz")
        .await
        .expect("readyz")
        .text()
        .await
        .expect("body")
}
