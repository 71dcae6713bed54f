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
    assert_eq!(
        security["members"]["roles"],
        json!(["_admin"]),
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
