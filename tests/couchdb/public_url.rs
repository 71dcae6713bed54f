//! Issue 31: a running `serve` answers with the public URL recorded with
//! the links (`_design/qrtag`) within seconds of `qrtag init --public-url
//! NEW --force`, on PouchDB Server and on Apache CouchDB (as the reader
//! account `serve` runs with there), without a restart.

use std::time::Duration;

use serde_json::json;

use crate::apache::{ADMIN, ApacheCouch};
use crate::harness::{Couch, PUBLIC_URL, editor_and_reader, qrtag, stderr, user_env};
use crate::pouchdb::PouchDb;
use crate::process::ServerProcess;

const NEW_URL: &str = "https://go.example.org";
/// "Within seconds": the watcher reads every second.
const WITHIN: Duration = Duration::from_secs(5);

/// Polls `/poster` on `server` until its `Link` header names `origin`.
async fn link_shows(server: &ServerProcess, origin: &str) {
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .expect("client");
    let want = format!("<{origin}/poster>; rel=\"shortlink\"");
    let url = server.url("/poster");
    crate::poll::until(WITHIN, &format!("Link: {want}"), || {
        let (client, url, want) = (client.clone(), url.clone(), want.clone());
        async move {
            let r = client.get(url).send().await.ok()?;
            let link = r.headers().get("link")?.to_str().ok()?;
            (r.status() == 302 && link == want).then_some(())
        }
    })
    .await;
}

/// Records [`PUBLIC_URL`], serves with `serve_env` (no public URL of its
/// own), changes the recorded URL with `cli_env` and waits for the server
/// to answer with it.
async fn serve_follows_the_change(serve_env: &[(&str, &str)], cli_env: &[(&str, &str)]) {
    let out = qrtag(&["init"], cli_env).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let dir = tempfile::tempdir().expect("tempdir");
    // Its files in its own directory, not the working directory.
    let snapshot = dir.path().join("links.snapshot");
    let secret = dir.path().join("tracking-secret");
    let files = [
        "--snapshot-file",
        snapshot.to_str().expect("UTF-8 path"),
        "--tracking-secret-file",
        secret.to_str().expect("UTF-8 path"),
    ];
    let server =
        ServerProcess::spawn(&dir.path().join("unused.db"), &files, serve_env, false).await;
    link_shows(&server, PUBLIC_URL).await;
    let mut env = cli_env.to_vec();
    env.push(("QRTAG_PUBLIC_URL", NEW_URL));
    let out = qrtag(&["init", "--force"], &env).await;
    assert!(out.status.success(), "{}", stderr(&out));
    link_shows(&server, NEW_URL).await;
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pouchdb_serve_follows_the_recorded_public_url() {
    let pouch = PouchDb::start().await;
    let url = pouch.url();
    let couch = Couch::new(&url, "links");
    couch.create_db().await;
    couch
        .put("poster", json!({"url": "https://example.com/a"}))
        .await;
    let env = [("QRTAG_COUCHDB_URL", url.as_str())];
    serve_follows_the_change(&env, &env).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn apache_couchdb_serve_follows_the_recorded_public_url() {
    let Some(server) = ApacheCouch::start("apache_couchdb_serve_follows_public_url").await else {
        return;
    };
    let url = server.url();
    let admin = server.admin();
    editor_and_reader(&admin).await;
    let admin_env = user_env(&url, ADMIN.0, ADMIN.1);
    let admin_env: Vec<(&str, &str)> = admin_env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let out = qrtag(&["setup"], &admin_env).await;
    assert!(out.status.success(), "{}", stderr(&out));
    admin
        .put("poster", json!({"url": "https://example.com/a"}))
        .await;
    let reader_env = user_env(&url, "rd", "rd-pw-1");
    let reader_env: Vec<(&str, &str)> = reader_env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    serve_follows_the_change(&reader_env, &admin_env).await;
}
