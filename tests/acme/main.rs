//! Certificates from an ACME CA (issue 36) against Pebble, Let's Encrypt's
//! test CA: obtained over HTTP-01.

mod pebble;
#[path = "../support/poll.rs"]
mod poll;

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use qrtag::acme::store::disk::DiskStore;
use qrtag::acme::{AcmeClient, AcmeSettings};

use pebble::{Pebble, TestResponder, chains_to};

fn settings(pebble: &Pebble, names: &[&str]) -> AcmeSettings {
    AcmeSettings::new(
        &pebble.directory,
        Some("ops@qrtag.test"),
        Some(pebble.ca_root.clone()),
        names,
    )
    .unwrap()
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
