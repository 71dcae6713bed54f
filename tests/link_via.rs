//! By which surface a link was made and last changed (issue 33): a link
//! made by one surface and changed by others, each through the real
//! application on port 0 (the console's forms, the REST API, the `qrtag`
//! binary), read back through the REST API's `created_via`/`changed_via`
//! and the console link page's words.

mod support;

use qrtag::console::ConsoleSettings;
use qrtag::console::password;
use qrtag::server::api::ApiSettings;
use qrtag::store::LinkStore;
use reqwest::StatusCode;
use serde_json::{Value, json};
use support::api::{api, new_key};
use support::console::{browser, csrf, get_page, log_in, post_form};
use support::{TestApp, spawn_with, test_settings};

const PASSWORD: &str = "poster-printing-42";

struct Both {
    app: TestApp,
    http: reqwest::Client,
    write: String,
}

async fn both() -> Both {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut settings = test_settings(dir.path());
    settings.console = Some(ConsoleSettings::default());
    settings.api = Some(ApiSettings::new(
        "127.0.0.1:0",
        dir.path().join("didcomm-keys.json"),
    ));
    let app = spawn_with(settings, dir).await;
    password::set(&app.store(), PASSWORD)
        .await
        .expect("password set");
    let write = new_key(&app, "write");
    let b = Both {
        app,
        http: browser(),
        write,
    };
    log_in(&b.http, &b.url(""), PASSWORD).await;
    b
}

/// The text of the page's `<dd id="ID">`, tags dropped.
fn fact(html: &str, id: &str) -> String {
    let open = format!(r#"<dd id="{id}""#);
    let at = html
        .find(&open)
        .unwrap_or_else(|| panic!("no #{id} in {html}"));
    let rest = &html[at..];
    let body = &rest[rest.find('>').expect("tag end") + 1..rest.find("</dd>").expect("dd end")];
    let mut text = String::new();
    let mut in_tag = false;
    for c in body.chars() {
        match c {
            '<' => in_tag = true,
            '>' => in_tag = false,
            c if !in_tag => text.push(c),
            _ => {}
        }
    }
    text
}

impl Both {
    fn url(&self, path: &str) -> String {
        format!("http://{}/console{path}", self.app.admin)
    }

    async fn page(&self, path: &str) -> String {
        get_page(&self.http, &self.url(path)).await
    }

    async fn post(&self, path: &str, form: &[(&str, &str)]) -> reqwest::Response {
        post_form(&self.http, &self.url(path), form).await
    }

    /// A console form on the link's page, sent with its token.
    async fn console_edit(&self, key: &str, path: &str, fields: &[(&str, &str)]) {
        let token = csrf(&self.page(&format!("/link?key={key}")).await);
        let mut all = vec![("csrf", token.as_str()), ("key", key)];
        all.extend_from_slice(fields);
        let res = self.post(path, &all).await;
        assert_eq!(res.status(), StatusCode::SEE_OTHER, "POST {path}");
    }

    /// The REST API's view of the link: (created_via, changed_via).
    async fn rest_via(&self, key: &str) -> (Value, Value) {
        let res = self
            .app
            .client
            .get(api(&self.app, &format!("/links/{key}")))
            .bearer_auth(&self.write)
            .send()
            .await
            .expect("request");
        assert_eq!(res.status(), StatusCode::OK);
        let v: Value = res.json().await.expect("json");
        (v["created_via"].clone(), v["changed_via"].clone())
    }

    /// The link page's "Created" and "Last changed" facts.
    async fn page_via(&self, key: &str) -> (String, String) {
        let html = self.page(&format!("/link?key={key}")).await;
        (fact(&html, "created"), fact(&html, "changed"))
    }
}

#[tokio::test]
async fn each_surface_stamps_itself_beside_its_time() {
    let b = both().await;

    // Made in the console.
    let token = csrf(&b.page("/links").await);
    let res = b
        .post(
            "/links",
            &[
                ("csrf", &token),
                ("key", "poster"),
                ("url", "https://example.com/a"),
            ],
        )
        .await;
    assert_eq!(res.status(), StatusCode::SEE_OTHER, "created");
    assert_eq!(
        b.rest_via("poster").await,
        (json!("console"), json!("console"))
    );
    let (created, changed) = b.page_via("poster").await;
    assert!(created.ends_with(" via the console"), "{created}");
    assert!(changed.ends_with(" via the console"), "{changed}");

    // Changed through the REST API.
    let res = b
        .app
        .client
        .patch(api(&b.app, "/links/poster"))
        .bearer_auth(&b.write)
        .json(&json!({"url": "https://example.com/b"}))
        .send()
        .await
        .expect("request");
    assert_eq!(res.status(), StatusCode::OK);
    let body: Value = res.json().await.expect("json");
    assert_eq!(body["changed_via"], json!("api"), "the write's own answer");
    assert_eq!(b.rest_via("poster").await, (json!("console"), json!("api")));
    let (created, changed) = b.page_via("poster").await;
    assert!(created.ends_with(" via the console"), "{created}");
    assert!(changed.ends_with(" via the REST API"), "{changed}");

    // Changed by the binary.
    let out = b.app.cli(&["disable", "poster"]);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(b.rest_via("poster").await, (json!("console"), json!("cli")));
    let (_, changed) = b.page_via("poster").await;
    assert!(changed.ends_with(" via the command line"), "{changed}");

    // And in the console again: its name replaces the binary's.
    b.console_edit("poster", "/link/notes", &[("notes", "by the door")])
        .await;
    assert_eq!(
        b.rest_via("poster").await,
        (json!("console"), json!("console"))
    );

    // Made by the binary, made through the REST API.
    let out = b
        .app
        .cli(&["new", "https://example.com/c", "--key", "flyer"]);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(b.rest_via("flyer").await, (json!("cli"), json!("cli")));
    let res = b
        .app
        .client
        .post(api(&b.app, "/links"))
        .bearer_auth(&b.write)
        .json(&json!({"key": "banner", "url": "https://example.com/d"}))
        .send()
        .await
        .expect("request");
    assert_eq!(res.status(), StatusCode::CREATED);
    assert_eq!(b.rest_via("banner").await, (json!("api"), json!("api")));
    b.console_edit("banner", "/link/title", &[("title", "Banner")])
        .await;
    let (created, changed) = b.page_via("banner").await;
    assert!(created.ends_with(" via the REST API"), "{created}");
    assert!(changed.ends_with(" via the console"), "{changed}");
}

/// A document from before the fields: its times shown, no surface named,
/// and the API says nothing rather than guessing.
#[tokio::test]
async fn an_old_document_names_no_surface() {
    let b = both().await;
    let key: qrtag::values::link_key::LinkKey = "old01".parse().expect("key");
    let doc = json!({"url": "https://example.com/old", "inactive": false,
                     "created_at": "2025-01-02T03:04:05Z", "changed_at": "2025-01-02T03:04:05Z"});
    let doc = doc.as_object().cloned().expect("object");
    b.app.store().create(&key, &doc).await.expect("stored");
    support::eventually(std::time::Duration::from_secs(5), || async {
        b.http
            .get(b.url("/link?key=old01"))
            .send()
            .await
            .is_ok_and(|r| r.status() == StatusCode::OK)
    })
    .await;
    assert_eq!(b.rest_via("old01").await, (Value::Null, Value::Null));
    let (created, changed) = b.page_via("old01").await;
    assert!(
        !created.contains("via") && created.contains("2025"),
        "{created}"
    );
    assert!(!changed.contains("via"), "{changed}");
}
