//! Issue 36 on Apache CouchDB: `qrtag setup` makes the certificates database
//! `links-certs` with `_security` admitting server admins only; the lease is
//! one node's at a time, taken at the revision read and lapsing at its
//! expiry; and two renewers (two nodes) sharing it make one order with
//! Pebble and serve the one certificate.

use std::sync::Arc;
use std::time::Duration;

use qrtag::acme::store::couch::CouchCertStore;
use qrtag::acme::{AcmeSettings, CertStore, CertificateBundle, Renewer, Timing};
use qrtag::values::secret::Secret;
use serde_json::json;

use crate::apache::{ADMIN, ApacheCouch};
use crate::harness::{couch_settings, editor_and_reader, qrtag, stderr, user_env};
use crate::pebble::{Pebble, TestInstaller, TestResponder};
use crate::poll;
use crate::pouchdb::PouchDb;
use crate::process::ServerProcess;

fn admin_store(url: &str) -> CouchCertStore {
    let settings =
        couch_settings(url, "links").with_credentials(ADMIN.0, Some(Secret::new(ADMIN.1)));
    CouchCertStore::new(&settings).unwrap()
}

async fn setup(server: &ApacheCouch) {
    let env = user_env(&server.url(), ADMIN.0, ADMIN.1);
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let out = qrtag(&["setup"], &env).await;
    assert!(out.status.success(), "{}", stderr(&out));
}

fn bundle() -> CertificateBundle {
    let key = rcgen::KeyPair::generate().unwrap();
    let cert = rcgen::CertificateParams::new(vec!["a.qrtag.test".to_string()])
        .unwrap()
        .self_signed(&key)
        .unwrap();
    CertificateBundle {
        chain_pem: cert.pem(),
        key_pem: key.serialize_pem(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn apache_couchdb_keeps_certificates_for_admins_only_and_leases_one_node_at_a_time() {
    let Some(server) = ApacheCouch::start("apache_couchdb_keeps_certificates").await else {
        return;
    };
    let admin = server.admin();
    editor_and_reader(&admin).await;
    setup(&server).await;

    let (status, security) = admin
        .call(reqwest::Method::GET, "links-certs/_security", None)
        .await;
    assert_eq!(status, 200);
    // Issue 36: server admins and the role `serve --tls acme` runs with.
    assert_eq!(
        security["members"]["roles"],
        json!(["_admin", "qrtag_certs"]),
        "{security}"
    );
    assert_eq!(security["members"]["names"], json!([]), "{security}");

    let one = admin_store(&server.url());
    let two = admin_store(&server.url());
    let stored = bundle();
    one.put_certificate("a.qrtag.test", &stored).await.unwrap();
    assert_eq!(
        two.certificate("a.qrtag.test").await.unwrap(),
        Some(stored.clone())
    );
    one.put_account("https://ca.test/dir", "{\"id\":1}")
        .await
        .unwrap();
    assert_eq!(
        two.account("https://ca.test/dir").await.unwrap().as_deref(),
        Some("{\"id\":1}")
    );

    // Neither the editor nor the reader of the links may read a key.
    for (user, password) in [("ed", "ed-pw-1"), ("rd", "rd-pw-1")] {
        let member = crate::harness::Couch::new(&server.url(), "links").with_user(user, password);
        let (status, body) = member
            .call(reqwest::Method::GET, "links-certs/cert-a.qrtag.test", None)
            .await;
        assert!(status == 401 || status == 403, "{user}: {status} {body}");
        assert!(!body.to_string().contains("PRIVATE KEY"));
    }

    // One holder at a time; released, the other takes it.
    let ttl = Duration::from_secs(60);
    let held = one.try_lease("a.qrtag.test", "node-1", ttl).await.unwrap();
    assert!(held.is_some());
    assert!(
        two.try_lease("a.qrtag.test", "node-2", ttl)
            .await
            .unwrap()
            .is_none()
    );
    held.unwrap().release().await.unwrap();
    let held = two
        .try_lease("a.qrtag.test", "node-2", Duration::from_secs(3))
        .await
        .unwrap();
    assert!(held.is_some(), "free after release");
    // node-2 dies holding it: the lease lapses at its expiry.
    drop(held);
    assert!(
        one.try_lease("a.qrtag.test", "node-1", ttl)
            .await
            .unwrap()
            .is_none()
    );
    let store = &one;
    let lapsed = poll::until(Duration::from_secs(10), "the lease lapses", || async move {
        store
            .try_lease("a.qrtag.test", "node-1", ttl)
            .await
            .unwrap()
    })
    .await;
    lapsed.release().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn apache_couchdb_two_nodes_share_one_certificate_from_one_order() {
    let Some(server) = ApacheCouch::start("apache_couchdb_two_nodes_share").await else {
        return;
    };
    let Some(pebble) = Pebble::start("apache_couchdb_two_nodes_share", None).await else {
        return;
    };
    setup(&server).await;
    let responder = Arc::new(TestResponder::default());
    responder.serve(pebble.http01_port).await;
    let settings = AcmeSettings::new(
        &pebble.directory,
        None,
        Some(pebble.ca_root.clone()),
        &["couch.qrtag.test"],
    )
    .unwrap();
    let timing = Timing {
        poll: Duration::from_millis(100),
        ..Timing::default()
    };
    let mut nodes = Vec::new();
    for holder in ["node-1", "node-2"] {
        let installer = Arc::new(TestInstaller::default());
        let renewer = Arc::new(Renewer::new(
            settings.clone(),
            Arc::new(admin_store(&server.url())),
            responder.clone(),
            installer.clone(),
            timing,
            holder,
        ));
        let task = tokio::spawn(renewer.clone().run());
        nodes.push((renewer, installer, task));
    }
    poll::until(
        Duration::from_secs(60),
        "both nodes installed a certificate",
        || {
            let done = nodes.iter().all(|(_, i, _)| !i.serials().is_empty());
            async move { done.then_some(()) }
        },
    )
    .await;
    let statuses: Vec<_> = nodes.iter().map(|(r, _, _)| r.status()).collect();
    for (_, _, task) in &nodes {
        task.abort();
    }
    assert_eq!(
        statuses.iter().map(|s| s.orders).sum::<u64>(),
        1,
        "{statuses:?}"
    );
    assert_eq!(nodes[0].1.serials(), nodes[1].1.serials());
    // The one account, stored once.
    let admin = server.admin();
    let (_, all) = admin
        .call(reqwest::Method::GET, "links-certs/_all_docs", None)
        .await;
    let ids: Vec<&str> = all["rows"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| r["id"].as_str())
        .collect();
    assert_eq!(
        ids.iter().filter(|id| id.starts_with("account-")).count(),
        1,
        "{ids:?}"
    );
    assert!(ids.contains(&"cert-couch.qrtag.test"), "{ids:?}");
}

// Issue 36: `serve --tls acme` on CouchDB, with an account that is no
// server admin but has the role `qrtag_certs`.

const SERVED: &str = "couch.qrtag.test";
const DEST: &str = "https://example.com/couch";

/// `qrtag serve --tls acme` on CouchDB `url` as `user`, its port-80
/// listener on `http_listen`.
async fn acme_node(
    dir: &std::path::Path,
    node: &str,
    url: &str,
    user: (&str, &str),
    pebble: &Pebble,
    http_listen: &str,
) -> ServerProcess {
    let dir = dir.join(node);
    std::fs::create_dir_all(&dir).unwrap();
    let public_url = format!("https://{SERVED}");
    let ca_root = pebble.ca_root.display().to_string();
    let args = [
        "--public-url",
        &public_url,
        "--tls",
        "acme",
        "--acme-directory",
        &pebble.directory,
        "--acme-ca-root",
        &ca_root,
        "--http-listen",
        http_listen,
        "--node-name",
        node,
        "--no-snapshot-file",
        "--no-tracking",
    ];
    let env = [
        ("QRTAG_COUCHDB_URL", url),
        ("QRTAG_COUCHDB_DB", "links"),
        ("QRTAG_COUCHDB_USER", user.0),
        ("QRTAG_COUCHDB_PASSWORD", user.1),
    ];
    ServerProcess::spawn(&dir.join("unused.db"), &args, &env, false).await
}

/// The `_users` account `name` (password `NAME-pw-1`) with `roles`.
async fn account(admin: &crate::harness::Couch, name: &str, roles: &[&str]) {
    let (status, body) = admin
        .call(
            reqwest::Method::PUT,
            &format!("_users/org.couchdb.user:{name}"),
            Some(json!({"name": name, "password": format!("{name}-pw-1"),
                        "roles": roles, "type": "user"})),
        )
        .await;
    assert_eq!(status, 201, "{body}");
}

/// Two nodes on one CouchDB, the CA reaching only the first one's port 80:
/// one order (whichever node holds the lease; its answers are shared
/// through `LINKS-certs`), one account, the same certificate served by
/// both, no answer left behind.
async fn two_serve_nodes_share_one_certificate_from_one_order(
    url: &str,
    admin: &crate::harness::Couch,
    pebble: &Pebble,
) {
    let env = user_env(url, ADMIN.0, ADMIN.1);
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let out = qrtag(&["setup"], &env).await;
    assert!(out.status.success(), "{}", stderr(&out));
    account(admin, "srv", &["qrtag_reader", "qrtag_certs"]).await;
    admin.put("abcde", json!({"url": DEST})).await;

    let dir = tempfile::tempdir().unwrap();
    let srv = ("srv", "srv-pw-1");
    let port80 = format!("127.0.0.1:{}", pebble.http01_port);
    let one = acme_node(dir.path(), "node-1", url, srv, pebble, &port80).await;
    let two = acme_node(dir.path(), "node-2", url, srv, pebble, "127.0.0.1:0").await;
    let root = pebble.issuing_root().await;
    let mut served = Vec::new();
    for node in [&one, &two] {
        let client = reqwest::Client::builder()
            .tls_certs_only([reqwest::Certificate::from_pem(root.as_bytes()).unwrap()])
            .tls_info(true)
            .resolve(SERVED, node.public)
            .redirect(reqwest::redirect::Policy::none())
            .pool_max_idle_per_host(0)
            .timeout(Duration::from_secs(10))
            .build()
            .unwrap();
        let target = format!("https://{SERVED}:{}/abcde", node.public.port());
        let answer = poll::until(
            Duration::from_secs(90),
            "each node serving the ordered certificate",
            || {
                let (client, target) = (client.clone(), target.clone());
                async move {
                    let r = client.get(&target).send().await.ok()?;
                    (r.status() == 302).then_some(r)
                }
            },
        )
        .await;
        assert_eq!(
            answer
                .headers()
                .get("location")
                .and_then(|v| v.to_str().ok()),
            Some(DEST)
        );
        served.push(
            answer
                .extensions()
                .get::<reqwest::tls::TlsInfo>()
                .and_then(|t| t.peer_certificate())
                .unwrap()
                .to_vec(),
        );
    }
    assert_eq!(served[0], served[1], "both serve the one certificate");

    let (_, all) = admin
        .call(reqwest::Method::GET, "links-certs/_all_docs", None)
        .await;
    let ids: Vec<&str> = all["rows"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| r["id"].as_str())
        .collect();
    assert_eq!(
        ids.iter().filter(|id| id.starts_with("account-")).count(),
        1,
        "{ids:?}"
    );
    assert!(
        !ids.iter().any(|id| id.starts_with("challenge-")),
        "answers removed after the order: {ids:?}"
    );
    let (_, cert) = admin
        .call(
            reqwest::Method::GET,
            &format!("links-certs/cert-{SERVED}"),
            None,
        )
        .await;
    assert!(
        cert["_rev"].as_str().unwrap_or("").starts_with("1-"),
        "stored once, by one order: {cert}"
    );

    // The first node's port 80 answers a token only the store holds (the
    // CA's request for another node's order).
    let token = "sharedToken_0123456789-abc";
    let (status, body) = admin
        .call(
            reqwest::Method::PUT,
            &format!("links-certs/challenge-{token}"),
            Some(json!({"key_authorization": format!("{token}.thumbprint")})),
        )
        .await;
    assert_eq!(status, 201, "{body}");
    let answer = reqwest::get(format!(
        "http://{port80}/.well-known/acme-challenge/{token}"
    ))
    .await
    .unwrap();
    assert_eq!(answer.status(), 200);
    assert_eq!(answer.text().await.unwrap(), format!("{token}.thumbprint"));
    let missing = reqwest::get(format!(
        "http://{port80}/.well-known/acme-challenge/notThere_0123456789"
    ))
    .await
    .unwrap();
    assert_eq!(missing.status(), 404);
    one.stop().await;
    two.stop().await;
}

/// `serve --tls acme` on CouchDB as `user`, expected to refuse: its line.
async fn acme_refused(url: &str, user: (&str, &str)) -> String {
    let mut env = user_env(url, user.0, user.1).to_vec();
    env.push(("QRTAG_PUBLIC_URL", format!("https://{SERVED}")));
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let out = qrtag(
        &[
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--admin-listen",
            "127.0.0.1:0",
            "--tls",
            "acme",
            "--http-listen",
            "127.0.0.1:0",
            "--no-tracking",
            "--access-log",
            "-",
        ],
        &env,
    )
    .await;
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    err
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pouchdb_two_serve_nodes_share_one_certificate_from_one_order() {
    let Some(pebble) = Pebble::start("pouchdb_two_serve_nodes_share", None).await else {
        return;
    };
    let pouch = PouchDb::start().await;
    let url = pouch.url();
    let admin = crate::harness::server_admin(&url, ADMIN.0, ADMIN.1).await;
    two_serve_nodes_share_one_certificate_from_one_order(&url, &admin, &pebble).await;
    // PouchDB Server does not enforce `_security` (Apache CouchDB's test
    // has the account without the role); without the certificates
    // database (no `qrtag setup` run), one line.
    let (status, body) = admin
        .call(reqwest::Method::DELETE, "links-certs", None)
        .await;
    assert_eq!(status, 200, "{body}");
    let err = acme_refused(&url, ("srv", "srv-pw-1")).await;
    assert!(
        err.starts_with("qrtag: --tls acme on CouchDB: there is no certificates database links-certs: run `qrtag setup` as a server admin, then give the account srv the role qrtag_certs"),
        "{err}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn apache_couchdb_two_serve_nodes_share_one_certificate_and_refuse_an_account_without_the_role()
 {
    let Some(server) = ApacheCouch::start("apache_couchdb_two_serve_nodes_share").await else {
        return;
    };
    let Some(pebble) = Pebble::start("apache_couchdb_two_serve_nodes_share", None).await else {
        return;
    };
    let admin = server.admin();
    two_serve_nodes_share_one_certificate_from_one_order(&server.url(), &admin, &pebble).await;
    // A reader without the role: one line naming the role, exit 2; and it
    // reads no private key.
    account(&admin, "plain", &["qrtag_reader"]).await;
    let err = acme_refused(&server.url(), ("plain", "plain-pw-1")).await;
    assert!(
        err.starts_with("qrtag: --tls acme on CouchDB: the account plain may not read the certificates database links-certs: give it the role qrtag_certs"),
        "{err}"
    );
    let member =
        crate::harness::Couch::new(&server.url(), "links").with_user("plain", "plain-pw-1");
    let (status, body) = member
        .call(
            reqwest::Method::GET,
            &format!("links-certs/cert-{SERVED}"),
            None,
        )
        .await;
    assert!(status == 401 || status == 403, "{status} {body}");
    assert!(!body.to_string().contains("PRIVATE KEY"));
}
