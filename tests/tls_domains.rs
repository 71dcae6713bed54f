//! A certificate per domain (issue 36), through the real binary: each
//! `[[domains]]` entry's `tls = { cert, key }` served to a handshake naming
//! it (SNI), the default domain's to one naming no domain or an unknown
//! one; one domain's certificate replaced on SIGHUP while the other's scans
//! flow; a bad file of one named on `/readyz`; expiry per domain on
//! `/metrics`.

mod support;

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use support::process::ServerProcess;
use support::promtool::promtool_check;

const TIMEOUT: Duration = Duration::from_secs(20);
const A: &str = "a.qrtag.test";
const B: &str = "b.qrtag.test";
const A_DEST: &str = "https://example.com/a";
const B_DEST: &str = "https://example.com/b";

struct Ca {
    issuer: rcgen::CertifiedIssuer<'static, rcgen::KeyPair>,
}

struct Leaf {
    cert: String,
    key: String,
    der: Vec<u8>,
}

impl Ca {
    fn new() -> Self {
        let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).expect("params");
        params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, "qrtag test CA");
        let key = rcgen::KeyPair::generate().expect("CA key");
        Self {
            issuer: rcgen::CertifiedIssuer::self_signed(params, key).expect("CA"),
        }
    }

    /// A leaf for `name` ending `days` from now.
    fn leaf(&self, name: &str, serial: u64, days: i64) -> Leaf {
        use chrono::Datelike;
        let mut params = rcgen::CertificateParams::new(vec![name.to_owned()]).expect("params");
        params.serial_number = Some(serial.into());
        let end = chrono::Utc::now() + chrono::Duration::days(days);
        params.not_after = rcgen::date_time_ymd(
            end.year(),
            u8::try_from(end.month()).expect("month"),
            u8::try_from(end.day()).expect("day"),
        );
        params.not_before = rcgen::date_time_ymd(2020, 1, 1);
        let key = rcgen::KeyPair::generate().expect("leaf key");
        let cert = params.signed_by(&key, &self.issuer).expect("leaf");
        Leaf {
            cert: cert.pem(),
            key: key.serialize_pem(),
            der: cert.der().to_vec(),
        }
    }

    fn client(&self, public: SocketAddr) -> reqwest::Client {
        client_trusting(&self.issuer.pem(), public)
    }
}

/// A client that trusts only `ca_pem` and reaches both domains at
/// `public`, a new connection for every request. A client resumes its own
/// TLS sessions (keeping the certificate they were made with), so a test
/// that watches which certificate is picked makes one for each request.
fn client_trusting(ca_pem: &str, public: SocketAddr) -> reqwest::Client {
    reqwest::Client::builder()
        .tls_certs_only([reqwest::Certificate::from_pem(ca_pem.as_bytes()).expect("CA")])
        .tls_info(true)
        .resolve(A, public)
        .resolve(B, public)
        .pool_max_idle_per_host(0)
        .redirect(reqwest::redirect::Policy::none())
        .timeout(TIMEOUT)
        .build()
        .expect("client")
}

/// Writes `leaf` as `stem.pem` and `stem.key` in `dir`, each file renamed
/// into place whole.
fn install(dir: &Path, stem: &str, leaf: &Leaf) {
    for (ext, text) in [("key", &leaf.key), ("pem", &leaf.cert)] {
        let path = dir.join(format!("{stem}.{ext}"));
        let tmp = dir.join(format!("{stem}.{ext}.tmp"));
        std::fs::write(&tmp, text).expect("write");
        std::fs::rename(&tmp, &path).expect("rename");
    }
}

async fn add(db: &Path, key: &str, url: &str) {
    let store = qrtag::store::sqlite::SqliteStore::open(db).expect("store");
    qrtag::links::create(
        &store,
        &qrtag::link::Author::cli(qrtag::link::Via::Cli, "test", "host"),
        &qrtag::values::destination::Destination::parse(url).expect("url"),
        Some(&qrtag::values::link_key::LinkKey::parse(key).expect("key")),
        false,
    )
    .await
    .expect("create");
}

/// Two domains with a certificate each: the default's in its `[[domains]]`
/// entry (the top-level `tls_cert`/`tls_key` it stands for), the other's in
/// its own.
async fn two_domains(dir: &Path, a: &Leaf, b: &Leaf) -> ServerProcess {
    install(dir, "a", a);
    install(dir, "b", b);
    let db = dir.join("a.db");
    add(&db, "aaaaa", A_DEST).await;
    add(&dir.join("b.db"), "bbbbb", B_DEST).await;
    let config = dir.join("qrtag.toml");
    std::fs::write(
        &config,
        format!(
            "public_url = \"https://{A}\"\n\
             [[domains]]\nhost = \"{A}\"\ntls = {{ cert = \"a.pem\", key = \"a.key\" }}\n\
             [[domains]]\nhost = \"{B}\"\nsqlite = \"b.db\"\naccess_log = \"b.log\"\n\
             tls = {{ cert = \"b.pem\", key = \"b.key\" }}\n"
        ),
    )
    .expect("config");
    let config = config.display().to_string();
    ServerProcess::spawn(&db, &[], &[("QRTAG_CONFIG", &config)], false).await
}

/// Accepts any server certificate: the test reads which one was served.
#[derive(Debug)]
struct AnyCertificate(Arc<rustls::crypto::CryptoProvider>);

impl rustls::client::danger::ServerCertVerifier for AnyCertificate {
    fn verify_server_cert(
        &self,
        _: &rustls::pki_types::CertificateDer<'_>,
        _: &[rustls::pki_types::CertificateDer<'_>],
        _: &rustls::pki_types::ServerName<'_>,
        _: &[u8],
        _: rustls::pki_types::UnixTime,
    ) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        Ok(rustls::client::danger::ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        _: &[u8],
        _: &rustls::pki_types::CertificateDer<'_>,
        _: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        Ok(rustls::client::danger::HandshakeSignatureValid::assertion())
    }

    fn verify_tls13_signature(
        &self,
        _: &[u8],
        _: &rustls::pki_types::CertificateDer<'_>,
        _: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        Ok(rustls::client::danger::HandshakeSignatureValid::assertion())
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// The certificate a handshake naming `sni` (`None`: no server name, as
/// a client connecting to an address sends) is served.
async fn served_to(public: SocketAddr, sni: Option<&str>) -> Vec<u8> {
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(Arc::clone(&provider))
        .with_safe_default_protocol_versions()
        .expect("versions")
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(AnyCertificate(provider)))
        .with_no_client_auth();
    let name = match sni {
        Some(n) => rustls::pki_types::ServerName::try_from(n.to_owned()).expect("a name"),
        None => rustls::pki_types::ServerName::IpAddress(public.ip().into()),
    };
    let tcp = tokio::net::TcpStream::connect(public)
        .await
        .expect("connect");
    let tls = tokio_rustls::TlsConnector::from(Arc::new(config))
        .connect(name, tcp)
        .await
        .expect("handshake");
    tls.get_ref().1.peer_certificates().expect("a certificate")[0].to_vec()
}

/// The DNS names of a DER certificate.
fn names(der: &[u8]) -> Vec<String> {
    let (_, cert) = x509_parser::parse_x509_certificate(der).expect("X.509");
    let san = cert
        .subject_alternative_name()
        .expect("SAN")
        .expect("a SAN extension");
    san.value
        .general_names
        .iter()
        .filter_map(|n| match n {
            x509_parser::extensions::GeneralName::DNSName(d) => Some((*d).to_owned()),
            _ => None,
        })
        .collect()
}

fn not_after(der: &[u8]) -> i64 {
    let (_, c) = x509_parser::parse_x509_certificate(der).expect("X.509");
    c.validity().not_after.timestamp()
}

fn served(r: &reqwest::Response) -> Vec<u8> {
    r.extensions()
        .get::<reqwest::tls::TlsInfo>()
        .and_then(|t| t.peer_certificate())
        .expect("a TLS connection")
        .to_vec()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_domain_is_served_its_own_certificate_by_sni() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ca = Ca::new();
    let (a, b) = (ca.leaf(A, 1, 60), ca.leaf(B, 2, 40));
    let srv = two_domains(dir.path(), &a, &b).await;
    let client = ca.client(srv.public);
    let port = srv.public.port();
    // A client that checks the name against the CA: each domain's scans
    // over its own certificate.
    for (host, key, dest, leaf) in [(A, "aaaaa", A_DEST, &a), (B, "bbbbb", B_DEST, &b)] {
        let r = client
            .get(format!("https://{host}:{port}/{key}"))
            .send()
            .await
            .unwrap_or_else(|e| panic!("{host}: {e:?}\n{}", srv.stderr()));
        assert_eq!(r.status(), 302, "{host}");
        assert_eq!(support::header(&r, "location"), Some(dest), "{host}");
        assert_eq!(served(&r), leaf.der, "{host}");
        assert_eq!(names(&served(&r)), [host]);
    }
    // Any case of the name; an unknown name and none get the default's.
    assert_eq!(
        names(&served_to(srv.public, Some("B.QRTAG.test")).await),
        [B]
    );
    assert_eq!(
        names(&served_to(srv.public, Some("c.qrtag.test")).await),
        [A]
    );
    assert_eq!(names(&served_to(srv.public, None).await), [A]);

    // One expiry series a domain, promtool-checked.
    let metrics = reqwest::get(srv.admin_url("/metrics"))
        .await
        .expect("metrics")
        .text()
        .await
        .expect("body");
    promtool_check(&metrics);
    for (host, leaf) in [(A, &a), (B, &b)] {
        let line = format!(
            "qrtag_tls_certificate_expiry_seconds{{domain=\"{host}\"}} {}",
            not_after(&leaf.der)
        );
        assert!(metrics.lines().any(|l| l == line), "{line} in\n{metrics}");
    }
    assert_eq!(
        metrics
            .lines()
            .filter(|l| l.starts_with("qrtag_tls_certificate_expiry_seconds{"))
            .count(),
        2,
        "{metrics}"
    );
    srv.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_domains_certificate_is_replaced_while_the_others_scans_flow() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ca = Ca::new();
    let (a, b) = (ca.leaf(A, 1, 60), ca.leaf(B, 2, 40));
    let mut srv = two_domains(dir.path(), &a, &b).await;
    let port = srv.public.port();

    // Scans of A, each on a new connection with a full handshake, for the
    // whole test.
    let stop = Arc::new(AtomicBool::new(false));
    let (scans, failures) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let scanner = {
        let (pem, public) = (ca.issuer.pem(), srv.public);
        let url = format!("https://{A}:{port}/aaaaa");
        let (stop, scans, failures) = (stop.clone(), scans.clone(), failures.clone());
        let a_der = a.der.clone();
        tokio::spawn(async move {
            let mut errors = Vec::new();
            while !stop.load(Ordering::Relaxed) {
                // A new client: a full handshake, the certificate picked anew.
                match client_trusting(&pem, public).get(&url).send().await {
                    Ok(r) if r.status() == 302 && served(&r) == a_der => {
                        scans.fetch_add(1, Ordering::Relaxed);
                    }
                    other => {
                        failures.fetch_add(1, Ordering::Relaxed);
                        errors.push(format!("{other:?}"));
                    }
                }
            }
            errors
        })
    };
    let poll = |what: &'static str, want: usize| {
        let scans = scans.clone();
        support::poll::until(TIMEOUT, what, move || {
            std::future::ready((scans.load(Ordering::Relaxed) > want).then_some(()))
        })
    };
    poll("scans of A flowing", 0).await;

    // B's certificate renewed: the next handshake naming B gets the new one.
    let renewed = ca.leaf(B, 3, 80);
    install(dir.path(), "b", &renewed);
    srv.signal("HUP");
    support::poll::until(TIMEOUT, "B's new certificate served", || async {
        (served_to(srv.public, Some(B)).await == renewed.der).then_some(())
    })
    .await;
    let seen = scans.load(Ordering::Relaxed);
    poll("scans of A still flowing", seen).await;

    // A file of B that cannot be served: B keeps its certificate, A is
    // untouched, /readyz names B.
    std::fs::write(dir.path().join("b.pem"), "not a certificate\n").expect("write");
    srv.signal("HUP");
    let admin = reqwest::Client::new();
    let (status, body) = support::poll::until(TIMEOUT, "/readyz to name B", || {
        let (admin, url) = (admin.clone(), srv.admin_url("/readyz"));
        async move {
            let r = admin.get(&url).send().await.ok()?;
            let status = r.status().as_u16();
            let body = r.text().await.ok()?;
            body.contains("TLS reload failed").then_some((status, body))
        }
    })
    .await;
    assert_eq!(status, 200, "degraded, still serving: {body}");
    let line = body
        .lines()
        .find(|l| l.contains("TLS reload failed"))
        .expect("the line");
    assert!(
        line.starts_with(&format!(
            "degraded: TLS reload failed for {B}, the old certificate is served: the TLS certificate file"
        )),
        "{body}"
    );
    assert!(!body.contains(&format!("for {A}")), "{body}");
    assert_eq!(served_to(srv.public, Some(B)).await, renewed.der);
    assert_eq!(served_to(srv.public, Some(A)).await, a.der);

    let seen = scans.load(Ordering::Relaxed);
    poll("scans of A flowing after the failed reload", seen).await;
    stop.store(true, Ordering::Relaxed);
    let errors = scanner.await.expect("scanner");
    assert_eq!(failures.load(Ordering::Relaxed), 0, "{errors:?}");
    assert!(
        srv.child.try_wait().expect("try_wait").is_none(),
        "still running"
    );
    srv.stop().await;
}

#[test]
fn a_domains_certificate_mistake_is_one_line_before_anything_starts() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    let ca = Ca::new();
    install(d, "a", &ca.leaf(A, 1, 60));
    let top = format!("public_url = \"https://{A}\"\ndb = \"a.db\"\n");
    let b = format!("[[domains]]\nhost = \"{B}\"\nsqlite = \"b.db\"\naccess_log = \"b.log\"\n");
    for (config, said) in [
        (
            format!(
                "{top}tls = {{ cert = \"a.pem\", key = \"a.key\" }}\n[[domains]]\nhost = \"{A}\"\n{b}tls = {{ cert = \"missing.pem\", key = \"a.key\" }}\n"
            ),
            "cannot read the TLS certificate",
        ),
        (
            format!(
                "{top}[[domains]]\nhost = \"{A}\"\n{b}tls = {{ cert = \"a.pem\", key = \"a.key\" }}\n"
            ),
            "domain b.qrtag.test: its tls = { cert, key } needs HTTPS on the default domain too",
        ),
        (
            format!(
                "{top}tls = {{ cert = \"a.pem\", key = \"a.key\" }}\n[[domains]]\nhost = \"{A}\"\n{b}tls = {{ cert = \"a.pem\" }}\n"
            ),
            "domain b.qrtag.test: `tls`: expected tls = { cert = \"PATH\", key = \"PATH\" }",
        ),
        (
            format!(
                "{top}tls = {{ cert = \"a.pem\", key = \"a.key\" }}\n[[domains]]\nhost = \"{A}\"\ntls = {{ cert = \"a.pem\", key = \"a.key\" }}\n"
            ),
            "the default domain's `tls` and the top-level `tls` are both set",
        ),
    ] {
        let file = d.join("qrtag.toml");
        std::fs::write(&file, &config).expect("write config");
        let out = support::qrtag_bin()
            .args([
                "serve",
                "--listen",
                "127.0.0.1:0",
                "--admin-listen",
                "127.0.0.1:0",
            ])
            .env("QRTAG_CONFIG", &file)
            .current_dir(d)
            .stdin(std::process::Stdio::null())
            .output()
            .expect("run qrtag");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{config}\n{err}");
        assert_eq!(err.lines().count(), 1, "{config}\n{err}");
        assert!(err.contains(said), "{config}\nwanted {said:?} in {err}");
        for file in ["a.db", "b.db", "b.log"] {
            assert!(!d.join(file).exists(), "{config}: {file} was made");
        }
    }
}
