//! Certificates from an ACME CA (issue 36) against Pebble, Let's Encrypt's
//! test CA: obtained over HTTP-01, renewed before they end, ordered once for
//! two nodes on one store, and a refused order reported in one line while
//! the old certificate stays.

mod pebble;
#[path = "../support/poll.rs"]
mod poll;
#[path = "../support/process.rs"]
mod process;
mod serve;

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use qrtag::acme::store::disk::DiskStore;
use qrtag::acme::{
    AcmeClient, AcmeSettings, CertStore, CertificateBundle, RenewalStatus, Renewer, Timing,
};

use pebble::{BLOCKED, Pebble, TestInstaller, TestResponder, chains_to};

fn settings(pebble: &Pebble, names: &[&str]) -> AcmeSettings {
    AcmeSettings::new(
        &pebble.directory,
        Some("ops@qrtag.test"),
        Some(pebble.ca_root.clone()),
        names,
    )
    .unwrap()
}

/// Quick enough for a test: the store read every 100 ms, a failure retried
/// after 200 ms doubling to 2 s.
fn fast() -> Timing {
    Timing {
        poll: Duration::from_millis(100),
        retry_base: Duration::from_millis(200),
        retry_cap: Duration::from_secs(2),
        order_deadline: Duration::from_secs(30),
        lease_ttl: Duration::from_secs(60),
    }
}

fn unix_now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn obtains_a_certificate_over_http01_that_chains_to_pebbles_root() {
    let Some(pebble) = Pebble::start("obtains_a_certificate", None).await else {
        return;
    };
    let responder = Arc::new(TestResponder::default());
    responder.serve(pebble.http01_port).await;
    let dir = tempfile::tempdir().unwrap();
    let store = DiskStore::open(dir.path().join("acme")).unwrap();
    let names = ["one.qrtag.test", "www.one.qrtag.test"];
    let settings = settings(&pebble, &names);

    let client = AcmeClient::connect(&settings, &store).await.unwrap();
    let account_file = store.account_path(&pebble.directory);
    assert!(account_file.exists(), "the account is stored");
    let stored = std::fs::read(&account_file).unwrap();

    let owned: Vec<String> = names.iter().map(|n| n.to_string()).collect();
    let bundle = client
        .order(&owned, responder.as_ref(), Duration::from_secs(60))
        .await
        .unwrap_or_else(|e| panic!("{e}\n{}", pebble.log()));
    assert_eq!(
        responder.puts.load(Ordering::SeqCst),
        2,
        "one challenge a name"
    );
    assert!(
        responder.served.load(Ordering::SeqCst) >= 2,
        "Pebble fetched them"
    );
    assert_eq!(responder.tokens(), 0, "every token removed after the order");

    let root = pebble.issuing_root().await;
    for name in names {
        chains_to(&bundle, &root, name).unwrap_or_else(|e| panic!("{name}: {e}"));
    }
    assert!(chains_to(&bundle, &root, "other.qrtag.test").is_err());
    let leaf = bundle.leaf().unwrap();
    assert_eq!(leaf.names, names);
    // The key is ours: the leaf's public key is the stored key's.
    let key = rcgen::KeyPair::from_pem(&bundle.key_pem).unwrap();
    let der = rustls_pem_first(&bundle.chain_pem);
    let (_, cert) = x509_parser::parse_x509_certificate(&der).unwrap();
    assert_eq!(
        cert.public_key().subject_public_key.data.as_ref(),
        key.public_key_raw()
    );

    // The account is created once: a second connect reads it back.
    let again = AcmeClient::connect(&settings, &store).await.unwrap();
    assert_eq!(again.account_id(), client.account_id());
    assert_eq!(std::fs::read(&account_file).unwrap(), stored);
}

fn rustls_pem_first(pem: &str) -> Vec<u8> {
    use rustls::pki_types::CertificateDer;
    use rustls::pki_types::pem::PemObject;
    CertificateDer::pem_slice_iter(pem.as_bytes())
        .next()
        .unwrap()
        .unwrap()
        .to_vec()
}

/// Pebble issues 15-second certificates: renewing is due with 5 s left, so
/// the renewer must order again, and install the new one before the first
/// ends.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn renewal_with_short_lifetimes_replaces_the_certificate() {
    let Some(pebble) = Pebble::start("renewal_with_short_lifetimes", Some(15)).await else {
        return;
    };
    let responder = Arc::new(TestResponder::default());
    responder.serve(pebble.http01_port).await;
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(DiskStore::open(dir.path()).unwrap());
    let installer = Arc::new(TestInstaller::default());
    let renewer = Arc::new(Renewer::new(
        settings(&pebble, &["short.qrtag.test"]),
        store.clone(),
        responder.clone(),
        installer.clone(),
        fast(),
        "node-1",
    ));
    let task = tokio::spawn(renewer.clone().run());

    poll::until(
        Duration::from_secs(60),
        "a second certificate installed",
        || {
            let serials = installer.serials();
            async move { (serials.len() >= 2).then_some(()) }
        },
    )
    .await;
    task.abort();

    let installed = installer.installed.lock().unwrap().clone();
    let (first, second) = (&installed[0].1, &installed[1].1);
    let (one, two) = (first.leaf().unwrap(), second.leaf().unwrap());
    assert_ne!(one.serial, two.serial);
    assert_ne!(first.key_pem, second.key_pem, "a new key each time");
    let swapped_at = installed[1].2.duration_since(UNIX_EPOCH).unwrap().as_secs() as i64;
    assert!(
        swapped_at < one.validity.not_after,
        "installed at {swapped_at}, before the first ended at {}",
        one.validity.not_after
    );
    assert!(swapped_at >= one.validity.renew_at(), "not renewed early");
    let root = pebble.issuing_root().await;
    chains_to(second, &root, "short.qrtag.test").unwrap();
    let stored = store
        .certificate("short.qrtag.test")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        stored.leaf().unwrap().serial,
        installed.last().unwrap().1.leaf().unwrap().serial
    );
    let status = renewer.status();
    assert_eq!(status.failures, 0, "{status:?}");
    assert_eq!(status.last_error, None);
    assert!(status.orders >= 2);
}

/// Two renewers (two nodes) on one certificate folder, both starting with
/// nothing: one orders, the other waits on the lease and installs what the
/// first stored.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_renewers_on_one_store_make_one_order() {
    let Some(pebble) = Pebble::start("two_renewers", None).await else {
        return;
    };
    let responder = Arc::new(TestResponder::default());
    responder.serve(pebble.http01_port).await;
    let dir = tempfile::tempdir().unwrap();
    let mut nodes = Vec::new();
    for holder in ["node-1", "node-2"] {
        let store = Arc::new(DiskStore::open(dir.path()).unwrap());
        let installer = Arc::new(TestInstaller::default());
        let renewer = Arc::new(Renewer::new(
            settings(&pebble, &["shared.qrtag.test"]),
            store,
            responder.clone(),
            installer.clone(),
            fast(),
            holder,
        ));
        let task = tokio::spawn(renewer.clone().run());
        nodes.push((renewer, installer, task));
    }
    poll::until(
        Duration::from_secs(60),
        "both nodes installed a certificate",
        || {
            let done = nodes
                .iter()
                .all(|(_, installer, _)| !installer.serials().is_empty());
            async move { done.then_some(()) }
        },
    )
    .await;
    // A few more looks at the store by both: nobody orders again.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let statuses: Vec<RenewalStatus> = nodes.iter().map(|(r, _, _)| r.status()).collect();
    for (_, _, task) in &nodes {
        task.abort();
    }
    let orders: u64 = statuses.iter().map(|s| s.orders).sum();
    assert_eq!(orders, 1, "{statuses:?}");
    assert_eq!(responder.puts.load(Ordering::SeqCst), 1, "one challenge");
    let (a, b) = (nodes[0].1.serials(), nodes[1].1.serials());
    assert_eq!(a, b, "both serve the one certificate");
    assert_eq!(a.len(), 1);
    assert!(
        statuses
            .iter()
            .all(|s| s.failures == 0 && s.last_error.is_none())
    );
}

/// A certificate for a name Pebble's policy refuses, due for renewal: the
/// order is refused with Pebble's reason in one line, the old certificate
/// stays installed and stored, and the next try waits for the back-off.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_order_gives_one_line_and_keeps_the_old_certificate() {
    let Some(pebble) = Pebble::start("a_refused_order", None).await else {
        return;
    };
    let responder = Arc::new(TestResponder::default());
    responder.serve(pebble.http01_port).await;
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(DiskStore::open(dir.path()).unwrap());
    let settings = settings(&pebble, &[BLOCKED]);

    // The order itself: one line naming the name and Pebble's reason.
    let client = AcmeClient::connect(&settings, store.as_ref())
        .await
        .unwrap();
    let refused = client
        .order(
            &[BLOCKED.to_string()],
            responder.as_ref(),
            Duration::from_secs(30),
        )
        .await
        .expect_err("Pebble refuses the blocked name")
        .to_string();
    assert!(!refused.contains('\n'), "{refused}");
    assert!(
        refused.starts_with(&format!("the ACME CA refused the order for {BLOCKED}: ")),
        "{refused}"
    );
    assert!(refused.contains("rejectedIdentifier"), "{refused}");

    // An old certificate with 10 minutes left of 70: due.
    let old = expiring_certificate(BLOCKED, 3600, 600);
    store.put_certificate(BLOCKED, &old).await.unwrap();
    let installer = Arc::new(TestInstaller::default());
    let renewer = Renewer::new(
        settings,
        store.clone(),
        responder.clone(),
        installer.clone(),
        Timing {
            retry_base: Duration::from_secs(30),
            retry_cap: Duration::from_secs(60),
            ..fast()
        },
        "node-1",
    );
    let wait = renewer.step().await;
    let status = renewer.status();
    assert_eq!(status.failures, 1, "{status:?}");
    assert_eq!(status.orders, 1);
    let line = status.last_error.clone().unwrap();
    assert!(
        !line.contains('\n') && line.contains(BLOCKED) && line.contains("rejectedIdentifier"),
        "{line}"
    );
    assert!(wait <= fast().poll);
    let next = status.next_attempt.unwrap();
    assert!(next >= unix_now() + 25, "backed off 30 s: {status:?}");

    // The old certificate was installed and stays so, and stays stored.
    let old_serial = old.leaf().unwrap().serial;
    assert_eq!(installer.serials(), std::slice::from_ref(&old_serial));
    assert_eq!(status.serial.as_deref(), Some(old_serial.as_str()));
    let kept = store.certificate(BLOCKED).await.unwrap().unwrap();
    assert_eq!(kept.leaf().unwrap().serial, old_serial);

    // Looking again within the back-off places no order.
    renewer.step().await;
    assert_eq!(renewer.status().orders, 1);
    assert_eq!(installer.serials().len(), 1);
}

/// A self-signed certificate for `name` that began `age` seconds ago and
/// ends in `left` seconds.
fn expiring_certificate(name: &str, age: i64, left: i64) -> CertificateBundle {
    let key = rcgen::KeyPair::generate().unwrap();
    let mut params = rcgen::CertificateParams::new(vec![name.to_string()]).unwrap();
    let now = time::OffsetDateTime::now_utc();
    params.not_before = now - time::Duration::seconds(age);
    params.not_after = now + time::Duration::seconds(left);
    let cert = params.self_signed(&key).unwrap();
    CertificateBundle {
        chain_pem: cert.pem(),
        key_pem: key.serialize_pem(),
    }
}

/// Nothing answers the challenge (no listener on the HTTP-01 port): the
/// order fails in one line naming the name and the CA's reason, and the
/// token is removed again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_validation_says_why_in_one_line() {
    let Some(pebble) = Pebble::start("a_failed_validation", None).await else {
        return;
    };
    let responder = TestResponder::default();
    let dir = tempfile::tempdir().unwrap();
    let store = DiskStore::open(dir.path()).unwrap();
    let client = AcmeClient::connect(&settings(&pebble, &["unanswered.qrtag.test"]), &store)
        .await
        .unwrap();
    let failed = client
        .order(
            &["unanswered.qrtag.test".to_string()],
            &responder,
            Duration::from_secs(30),
        )
        .await
        .expect_err("nothing answers the challenge")
        .to_string();
    assert!(!failed.contains('\n'), "{failed}");
    assert!(
        failed.starts_with("the ACME CA could not validate unanswered.qrtag.test over HTTP-01: "),
        "{failed}"
    );
    assert!(
        failed.contains("(connection)") || failed.contains("(unauthorized)"),
        "{failed}"
    );
    assert_eq!(responder.puts.load(Ordering::SeqCst), 1);
    assert_eq!(responder.tokens(), 0);
}
