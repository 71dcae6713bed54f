//! `qrtag serve --tls acme` as a real process against Pebble (issue 36):
//! the certificate ordered over HTTP-01 on `--http-listen`, then served on
//! the public listener; a refused order said on `/readyz`; the settings
//! that cannot work refused in one line.

use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

use qrtag::store::sqlite::SqliteStore;
use qrtag::values::destination::Destination;
use qrtag::values::link_key::LinkKey;

use crate::pebble::{BLOCKED, Pebble};
use crate::poll;
use crate::process::ServerProcess;

const KEY: &str = "abcde";
const DEST: &str = "https://example.com/whelans";
const NAME: &str = "serve.qrtag.test";

async fn database(dir: &Path) -> std::path::PathBuf {
    let db = dir.join("qrtag.db");
    let store = SqliteStore::open(&db).expect("open store");
    qrtag::links::create(
        &store,
        &qrtag::link::Author::cli(qrtag::link::Via::Cli, "test", "host"),
        &Destination::parse(DEST).expect("destination"),
        Some(&LinkKey::parse(KEY).expect("key")),
        false,
    )
    .await
    .expect("create link");
    db
}

async fn serve_acme(pebble: &Pebble, db: &Path, name: &str) -> ServerProcess {
    let public_url = format!("https://{name}");
    let http_listen = format!("127.0.0.1:{}", pebble.http01_port);
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
        "--acme-email",
        "ops@qrtag.test",
        "--http-listen",
        &http_listen,
    ];
    ServerProcess::spawn(db, &args, &[], false).await
}

async fn readyz(srv: &ServerProcess) -> Option<(u16, String)> {
    let r = reqwest::get(srv.admin_url("/readyz")).await.ok()?;
    let status = r.status().as_u16();
    Some((status, r.text().await.ok()?))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_orders_its_certificate_and_answers_scans_over_https() {
    let Some(pebble) = Pebble::start("serve_orders_its_certificate", None).await else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let db = database(dir.path()).await;
    let srv = serve_acme(&pebble, &db, NAME).await;
    let root = pebble.issuing_root().await;
    let public: SocketAddr = srv.public;
    // Trusts Pebble's issuing root only, and reaches the name on loopback.
    let client = reqwest::Client::builder()
        .tls_certs_only([reqwest::Certificate::from_pem(root.as_bytes()).unwrap()])
        .resolve(NAME, public)
        .redirect(reqwest::redirect::Policy::none())
        .pool_max_idle_per_host(0)
        .timeout(Duration::from_secs(10))
        .build()
        .unwrap();
    let url = format!("https://{NAME}:{}/{KEY}", public.port());
    let answer = poll::until(
        Duration::from_secs(60),
        "a scan answered over HTTPS with the ordered certificate",
        || {
            let (client, url) = (client.clone(), url.clone());
            async move { client.get(&url).send().await.ok() }
        },
    )
    .await;
    assert_eq!(answer.status(), 302, "{}", srv.stderr());
    assert_eq!(
        answer
            .headers()
            .get("location")
            .and_then(|v| v.to_str().ok()),
        Some(DEST)
    );
    // Stored beside the database, where the next start finds it.
    assert!(
        std::fs::read_dir(qrtag::acme::store::disk::default_dir(&db))
            .unwrap()
            .next()
            .is_some()
    );
    let (status, body) = readyz(&srv).await.expect("/readyz answers");
    assert_eq!(status, 200, "{body}");
    assert!(body.starts_with("ready"), "{body}");
    assert!(!body.contains("degraded"), "{body}");
    srv.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_order_is_said_on_readyz() {
    let Some(pebble) = Pebble::start("a_refused_order_on_readyz", None).await else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let db = database(dir.path()).await;
    let srv = serve_acme(&pebble, &db, BLOCKED).await;
    let (status, body) = poll::until(
        Duration::from_secs(60),
        "/readyz to say the refused order",
        || async { readyz(&srv).await.filter(|(_, body)| body.contains("ACME")) },
    )
    .await;
    assert_eq!(status, 200, "degraded, still serving: {body}");
    let line = body
        .lines()
        .find(|l| l.contains("ACME"))
        .expect("the ACME line");
    assert!(
        line.starts_with(&format!(
            "degraded: ACME: renewing the certificate for {BLOCKED} failed (1 in a row):"
        )) && line.contains("rejectedIdentifier"),
        "{body}"
    );
    srv.stop().await;
}

const TWO: &str = "two.qrtag.test";

/// `serve` under `tls = "acme"` (HTTP-01) with the default domain [`NAME`]
/// and each of `others` a `[[domains]]` entry of its own.
async fn serve_domains(pebble: &Pebble, dir: &Path, db: &Path, others: &[&str]) -> ServerProcess {
    let mut text = format!(
        "public_url = \"https://{NAME}\"\ntls = \"acme\"\nhttp_listen = \"127.0.0.1:{}\"\n\
         [acme]\ndirectory = \"{}\"\nca_root = \"{}\"\nemail = \"ops@qrtag.test\"\n\
         [[domains]]\nhost = \"{NAME}\"\n",
        pebble.http01_port,
        pebble.directory,
        pebble.ca_root.display(),
    );
    for host in others {
        text.push_str(&format!(
            "[[domains]]\nhost = \"{host}\"\nsqlite = \"{host}.db\"\naccess_log = \"{host}.log\"\n"
        ));
    }
    let config = dir.join("qrtag.toml");
    std::fs::write(&config, text).unwrap();
    let config = config.display().to_string();
    ServerProcess::spawn(db, &[], &[("QRTAG_CONFIG", &config)], false).await
}

/// Issue 36: three domains under `tls = "acme"`, each ordered on its own:
/// the two the CA certifies are each served their own certificate (by SNI)
/// while the third, which the CA refuses, is named on `/readyz`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_domain_is_ordered_on_its_own_and_a_refused_one_stops_no_other() {
    let Some(pebble) = Pebble::start("each_domain_is_ordered_on_its_own", None).await else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let db = database(dir.path()).await;
    let srv = serve_domains(&pebble, dir.path(), &db, &[TWO, BLOCKED]).await;
    let root = pebble.issuing_root().await;
    let public: SocketAddr = srv.public;
    let client = reqwest::Client::builder()
        .tls_certs_only([reqwest::Certificate::from_pem(root.as_bytes()).unwrap()])
        .tls_info(true)
        .resolve(NAME, public)
        .resolve(TWO, public)
        .redirect(reqwest::redirect::Policy::none())
        .pool_max_idle_per_host(0)
        .timeout(Duration::from_secs(10))
        .build()
        .unwrap();
    for name in [NAME, TWO] {
        let url = format!("https://{name}:{}/{KEY}", public.port());
        let answer = poll::until(
            Duration::from_secs(60),
            "each certified domain served over HTTPS with its own certificate",
            || {
                let (client, url) = (client.clone(), url.clone());
                async move { client.get(&url).send().await.ok() }
            },
        )
        .await;
        let der = answer
            .extensions()
            .get::<reqwest::tls::TlsInfo>()
            .and_then(|t| t.peer_certificate())
            .expect("TLS")
            .to_vec();
        let (_, cert) = x509_parser::parse_x509_certificate(&der).unwrap();
        let names: Vec<String> = cert
            .subject_alternative_name()
            .unwrap()
            .unwrap()
            .value
            .general_names
            .iter()
            .map(|n| n.to_string())
            .collect();
        assert_eq!(names, [format!("DNSName({name})")], "{}", srv.stderr());
    }
    let (status, body) = poll::until(
        Duration::from_secs(60),
        "/readyz to name the refused domain",
        || async { readyz(&srv).await.filter(|(_, body)| body.contains("ACME")) },
    )
    .await;
    assert_eq!(status, 200, "degraded, still serving: {body}");
    let acme: Vec<&str> = body.lines().filter(|l| l.contains("ACME")).collect();
    assert_eq!(acme.len(), 1, "{body}");
    assert!(
        acme[0].starts_with(&format!(
            "degraded: ACME: renewing the certificate for {BLOCKED} failed"
        )),
        "{body}"
    );
    // Stored on their own, one file a domain.
    let store =
        qrtag::acme::store::disk::DiskStore::open(qrtag::acme::store::disk::default_dir(&db))
            .unwrap();
    for name in [NAME, TWO] {
        assert!(store.certificate_path(name).exists(), "{name}");
    }
    assert!(!store.certificate_path(BLOCKED).exists());
    srv.stop().await;
}

/// Issue 36: Pebble's 15-second certificates, two domains each renewed on
/// its own every ten seconds or so; scans of one, each on a new connection
/// (a handshake), flow with no failed request while the other's
/// certificate is replaced.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_domain_renews_while_the_others_scans_flow() {
    let Some(pebble) = Pebble::start("one_domain_renews", Some(15)).await else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let db = database(dir.path()).await;
    let srv = serve_domains(&pebble, dir.path(), &db, &[TWO]).await;
    let root = pebble.issuing_root().await;
    // A new client each time: one client resumes its TLS session, which
    // keeps the certificate (and the check) it was made with.
    let public = srv.public;
    let fresh = move || {
        reqwest::Client::builder()
            .tls_certs_only([reqwest::Certificate::from_pem(root.as_bytes()).unwrap()])
            .tls_info(true)
            .resolve(NAME, public)
            .resolve(TWO, public)
            .redirect(reqwest::redirect::Policy::none())
            .pool_max_idle_per_host(0)
            .timeout(Duration::from_secs(10))
            .build()
            .unwrap()
    };
    let port = srv.public.port();
    let serial = |r: &reqwest::Response| {
        let der = r
            .extensions()
            .get::<reqwest::tls::TlsInfo>()
            .and_then(|t| t.peer_certificate())
            .expect("TLS")
            .to_vec();
        let (_, cert) = x509_parser::parse_x509_certificate(&der).unwrap();
        cert.raw_serial_as_string()
    };
    for name in [NAME, TWO] {
        let url = format!("https://{name}:{port}/{KEY}");
        poll::until(Duration::from_secs(60), "both domains served", || {
            let (client, url) = (fresh(), url.clone());
            async move { client.get(&url).send().await.ok() }
        })
        .await;
    }

    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let scanner = {
        let (fresh, stop) = (fresh.clone(), stop.clone());
        let url = format!("https://{NAME}:{port}/{KEY}");
        tokio::spawn(async move {
            let (mut scans, mut errors) = (0usize, Vec::new());
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                match fresh().get(&url).send().await {
                    Ok(r) if r.status() == 302 => scans += 1,
                    other => errors.push(format!("{other:?}")),
                }
            }
            (scans, errors)
        })
    };
    // TWO's certificate replaced twice while NAME's scans flow.
    let url = format!("https://{TWO}:{port}/{KEY}");
    let mut seen = std::collections::BTreeSet::new();
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while seen.len() < 3 {
        assert!(
            std::time::Instant::now() < deadline,
            "not two renewals of {TWO} within 60 s: {seen:?}\n{:?}\n{}",
            readyz(&srv).await,
            srv.stderr()
        );
        if let Ok(r) = fresh().get(&url).send().await {
            seen.insert(serial(&r));
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let (scans, errors) = scanner.await.unwrap();
    assert!(
        errors.is_empty(),
        "{} failed of {}: {errors:?}",
        errors.len(),
        scans + errors.len()
    );
    assert!(scans > 0);
    let (status, body) = readyz(&srv).await.expect("/readyz answers");
    assert_eq!(status, 200, "{body}");
    assert!(!body.contains("ACME"), "{body}");
    srv.stop().await;
}

/// Issue 36: `--acme-challenge tls-alpn-01`: no port 80 at all; the CA
/// validates on the HTTPS port itself (Pebble's `tlsPort`), where the
/// public listener serves the answer to its `acme-tls/1` handshake.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_alpn_01_gets_the_certificate_on_the_https_port_without_port_80() {
    let Some(pebble) = Pebble::start("tls_alpn_01", None).await else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let db = database(dir.path()).await;
    let listen = format!("127.0.0.1:{}", pebble.tls_alpn01_port);
    let public_url = format!("https://{NAME}");
    let ca_root = pebble.ca_root.display().to_string();
    let args = [
        "--listen",
        &listen,
        "--public-url",
        &public_url,
        "--tls",
        "acme",
        "--acme-challenge",
        "tls-alpn-01",
        "--acme-directory",
        &pebble.directory,
        "--acme-ca-root",
        &ca_root,
        "--acme-email",
        "ops@qrtag.test",
    ];
    let srv = ServerProcess::spawn(&db, &args, &[], false).await;
    assert!(!srv.stderr().contains("http="), "{}", srv.stderr());
    let root = pebble.issuing_root().await;
    let client = reqwest::Client::builder()
        .tls_certs_only([reqwest::Certificate::from_pem(root.as_bytes()).unwrap()])
        .resolve(NAME, srv.public)
        .redirect(reqwest::redirect::Policy::none())
        .pool_max_idle_per_host(0)
        .timeout(Duration::from_secs(10))
        .build()
        .unwrap();
    let url = format!("https://{NAME}:{}/{KEY}", srv.public.port());
    // A scan answered, or a failed order said on /readyz.
    let answer = poll::until(
        Duration::from_secs(60),
        "a scan answered over HTTPS with the certificate ordered over TLS-ALPN-01",
        || {
            let (client, url, srv) = (client.clone(), url.clone(), &srv);
            async move {
                if let Some((_, body)) = readyz(srv).await.filter(|(_, b)| b.contains("ACME")) {
                    return Some(Err(body));
                }
                client.get(&url).send().await.ok().map(Ok)
            }
        },
    )
    .await
    .unwrap_or_else(|readyz| panic!("{readyz}\n{}", srv.stderr()));
    assert_eq!(answer.status(), 302, "{}", srv.stderr());
    let (status, body) = readyz(&srv).await.expect("/readyz answers");
    assert_eq!(status, 200, "{body}");
    assert!(!body.contains("ACME"), "{body}");
    srv.stop().await;
}

#[test]
fn settings_acme_cannot_work_with_are_refused_in_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("qrtag.db");
    let acme = ["--tls", "acme", "--http-listen", "127.0.0.1:0"];
    let cases: Vec<(Vec<&str>, Vec<&str>, &str)> = vec![
        (
            vec!["--public-url", "https://go.brand.example"],
            vec!["--tls", "acme", "--tls-cert", "c.pem", "--tls-key", "k.pem"],
            "leave out --tls-cert and --tls-key",
        ),
        (
            vec!["--public-url", "https://go.brand.example"],
            vec!["--tls", "acme"],
            "give --http-listen",
        ),
        (
            vec!["--public-url", "https://go.brand.example"],
            [&acme[..], &["--acme-challenge", "dns-01"]].concat(),
            "ACME challenge \"dns-01\" is not one qrtag answers: http-01 or tls-alpn-01",
        ),
        (
            vec!["--public-url", "http://go.brand.example"],
            acme.to_vec(),
            "must be an https:// URL",
        ),
        (
            vec!["--public-url", "https://192.0.2.1"],
            acme.to_vec(),
            "not the IP address",
        ),
        (vec![], acme.to_vec(), "give --public-url"),
        (
            vec![],
            vec!["--acme-email", "ops@brand.example"],
            "go with --tls acme",
        ),
        (
            vec!["--public-url", "https://go.brand.example"],
            [&acme[..], &["--acme-directory", "http://ca.example/dir"]].concat(),
            "is not an https:// URL",
        ),
    ];
    for (global, serve, says) in cases {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_qrtag"))
            .arg("--db")
            .arg(&db)
            .args(&global)
            .arg("serve")
            .args(["--listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0"])
            .args(&serve)
            .env("QRTAG_CONFIG", "/dev/null")
            .output()
            .expect("run qrtag");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{serve:?}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{serve:?}: {stderr}");
        assert!(stderr.contains(says), "{serve:?}: {stderr}");
    }
}

#[test]
fn the_configuration_file_says_tls_acme_and_an_acme_table() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("qrtag.db");
    let config = dir.path().join("qrtag.toml");
    std::fs::write(
        &config,
        "public_url = \"https://go.brand.example\"\ntls = \"acme\"\nhttp_listen = \"127.0.0.1:0\"\n\
         [acme]\nemail = \"ops@brand.example\"\ndirectory = \"http://ca.example/dir\"\n",
    )
    .unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_qrtag"))
        .arg("--db")
        .arg(&db)
        .arg("--config")
        .arg(&config)
        .arg("serve")
        .args(["--listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0"])
        .output()
        .expect("run qrtag");
    let stderr = String::from_utf8_lossy(&out.stderr);
    // The table's directory was read (and refused): `tls = "acme"` and
    // `[acme]` reached the settings.
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("ACME directory \"http://ca.example/dir\" is not an https:// URL"),
        "{stderr}"
    );
}
