//! HTTPS on the public listener with certificates managed elsewhere (issue
//! 36), through the real binary and real sockets: the certificate served,
//! a bad one refused at start, SIGHUP swapping it while scans keep flowing,
//! the port 80 redirect and its ACME challenges, HSTS, expiry on
//! `/metrics` and `/readyz`.

mod support;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use qrtag::store::sqlite::SqliteStore;
use qrtag::values::destination::Destination;
use qrtag::values::link_key::LinkKey;
use support::process::ServerProcess;
use support::promtool::promtool_check;

const KEY: &str = "abcde";
const DEST: &str = "https://example.com/whelans";
const TIMEOUT: Duration = Duration::from_secs(20);

/// A test CA and the leaf certificates it signs.
struct Ca {
    issuer: rcgen::CertifiedIssuer<'static, rcgen::KeyPair>,
}

/// A leaf certificate and its key, as PEM, and its DER.
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

    fn pem(&self) -> String {
        self.issuer.pem()
    }

    /// A leaf for `names` with `serial`, ending `days` from today (`None`:
    /// rcgen's far default).
    fn leaf(&self, names: &[&str], serial: u64, days: Option<i64>) -> Leaf {
        let mut params = rcgen::CertificateParams::new(
            names.iter().map(|n| (*n).to_owned()).collect::<Vec<_>>(),
        )
        .expect("params");
        params.serial_number = Some(serial.into());
        if let Some(days) = days {
            use chrono::Datelike;
            let end = chrono::Utc::now() + chrono::Duration::days(days);
            params.not_after = rcgen::date_time_ymd(
                end.year(),
                u8::try_from(end.month()).expect("month"),
                u8::try_from(end.day()).expect("day"),
            );
            params.not_before = rcgen::date_time_ymd(2020, 1, 1);
        }
        let key = rcgen::KeyPair::generate().expect("leaf key");
        let cert = params.signed_by(&key, &self.issuer).expect("leaf");
        Leaf {
            cert: cert.pem(),
            key: key.serialize_pem(),
            der: cert.der().to_vec(),
        }
    }
}

/// Writes `text` to `path` whole, as a deploy tool does: a temporary file
/// renamed into place, so the server never reads half a file.
fn put(path: &Path, text: &str) {
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, text).expect("write");
    std::fs::rename(&tmp, path).expect("rename");
}

struct Site {
    dir: tempfile::TempDir,
    db: PathBuf,
    cert: PathBuf,
    key: PathBuf,
    ca: Ca,
}

impl Site {
    async fn new() -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let db = dir.path().join("qrtag.db");
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
        let cert = dir.path().join("cert.pem");
        let key = dir.path().join("key.pem");
        Self {
            dir,
            db,
            cert,
            key,
            ca: Ca::new(),
        }
    }

    fn install(&self, leaf: &Leaf) {
        put(&self.key, &leaf.key);
        put(&self.cert, &leaf.cert);
    }

    fn tls_args(&self) -> Vec<String> {
        vec![
            "--tls-cert".into(),
            self.cert.display().to_string(),
            "--tls-key".into(),
            self.key.display().to_string(),
        ]
    }

    async fn serve(&self, extra: &[&str]) -> ServerProcess {
        let mut args = self.tls_args();
        args.extend(extra.iter().map(|a| (*a).to_owned()));
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        ServerProcess::spawn(&self.db, &args, &[], false).await
    }

    /// A client that trusts only the test CA; keeps connections alive.
    fn client(&self) -> reqwest::Client {
        reqwest::Client::builder()
            .tls_certs_only([reqwest::Certificate::from_pem(self.ca.pem().as_bytes()).expect("CA")])
            .tls_info(true)
            .redirect(reqwest::redirect::Policy::none())
            .timeout(TIMEOUT)
            .build()
            .expect("client")
    }

    /// As [`client`](Self::client), a new connection for every request.
    fn fresh_client(&self) -> reqwest::Client {
        reqwest::Client::builder()
            .tls_certs_only([reqwest::Certificate::from_pem(self.ca.pem().as_bytes()).expect("CA")])
            .tls_info(true)
            .pool_max_idle_per_host(0)
            .redirect(reqwest::redirect::Policy::none())
            .timeout(TIMEOUT)
            .build()
            .expect("client")
    }
}

fn https(srv: &ServerProcess, target: &str) -> String {
    format!("https://{}{target}", srv.public)
}

/// The certificate the server presented on this answer's connection.
fn served(r: &reqwest::Response) -> Vec<u8> {
    r.extensions()
        .get::<reqwest::tls::TlsInfo>()
        .and_then(|t| t.peer_certificate())
        .expect("a TLS connection")
        .to_vec()
}

async fn poll<T, F, Fut>(what: &str, f: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    support::poll::until(TIMEOUT, what, f).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn https_answers_scans_with_the_given_certificate_and_http_1_1() {
    let site = Site::new().await;
    let leaf = site.ca.leaf(&["127.0.0.1"], 1, None);
    site.install(&leaf);
    let srv = site.serve(&[]).await;
    let client = site.client();
    let r = client
        .get(https(&srv, "/abcde"))
        .send()
        .await
        .expect("HTTPS answers");
    assert_eq!(r.status(), 302);
    assert_eq!(support::header(&r, "location"), Some(DEST));
    assert_eq!(served(&r), leaf.der);
    // No HSTS unless asked for.
    assert_eq!(support::header(&r, "strict-transport-security"), None);
    // Plain HTTP on the HTTPS port gets no redirect.
    let plain = reqwest::Client::new()
        .get(format!("http://{}/abcde", srv.public))
        .timeout(TIMEOUT)
        .send()
        .await;
    assert!(
        plain.as_ref().map_or(true, |r| r.status() != 302),
        "{plain:?}"
    );
    // ALPN offers http/1.1 only (actix is built without HTTP/2): curl
    // asking for h2 gets 1.1.
    let ca = site.dir.path().join("ca.pem");
    std::fs::write(&ca, site.ca.pem()).expect("write CA");
    let out = Command::new("curl")
        .args([
            "-sS",
            "--http2",
            "-o",
            "/dev/null",
            "-w",
            "%{http_code} %{http_version}",
        ])
        .arg("--cacert")
        .arg(&ca)
        .arg(https(&srv, "/abcde"))
        .output()
        .expect("curl runs");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "302 1.1",
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    srv.stop().await;
}

/// `qrtag serve` with `args`, expected to refuse to start: its one line.
fn refused(db: &Path, args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_qrtag"))
        .arg("--db")
        .arg(db)
        .args([
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--admin-listen",
            "127.0.0.1:0",
        ])
        .args(args)
        .env("QRTAG_CONFIG", "/dev/null")
        .env("QRTAG_LOG", "warn")
        .stdin(Stdio::null())
        .output()
        .expect("qrtag runs");
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    err
}

#[tokio::test]
async fn a_certificate_that_cannot_be_served_stops_the_start_with_one_line() {
    let site = Site::new().await;
    let missing = site.dir.path().join("missing.pem");
    let key = site.key.display().to_string();
    let cert = site.cert.display().to_string();
    let err = refused(
        &site.db,
        &[
            "--tls-cert",
            &missing.display().to_string(),
            "--tls-key",
            &key,
        ],
    );
    assert!(
        err.starts_with(&format!(
            "qrtag: cannot read the TLS certificate {}: ",
            missing.display()
        )),
        "{err}"
    );
    // A key of another certificate.
    let one = site.ca.leaf(&["127.0.0.1"], 1, None);
    let other = site.ca.leaf(&["127.0.0.1"], 2, None);
    put(&site.cert, &one.cert);
    put(&site.key, &other.key);
    let err = refused(&site.db, &["--tls-cert", &cert, "--tls-key", &key]);
    assert!(err.contains("does not match the certificate"), "{err}");
    // A certificate file holding no certificate.
    put(&site.cert, &one.key);
    let err = refused(&site.db, &["--tls-cert", &cert, "--tls-key", &key]);
    assert!(err.contains("holds no PEM certificate"), "{err}");
    // Half the pair, or a redirect listener without HTTPS.
    let err = refused(&site.db, &["--tls-cert", &cert]);
    assert!(err.contains("--tls-cert needs --tls-key"), "{err}");
    let err = refused(&site.db, &["--http-listen", "127.0.0.1:0"]);
    assert!(err.contains("give --tls-cert and --tls-key"), "{err}");
    assert!(
        !site.dir.path().join("access.log").exists(),
        "nothing started"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sighup_swaps_the_certificate_while_scans_keep_flowing() {
    let site = Site::new().await;
    let old = site.ca.leaf(&["127.0.0.1"], 1, None);
    site.install(&old);
    let mut srv = site.serve(&[]).await;

    // A scanner on keep-alive connections for the whole test.
    let stop = Arc::new(AtomicBool::new(false));
    let (scans, failures) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let scanner = {
        let (client, url) = (site.client(), https(&srv, "/abcde"));
        let (stop, scans, failures) = (stop.clone(), scans.clone(), failures.clone());
        tokio::spawn(async move {
            let mut errors = Vec::new();
            while !stop.load(Ordering::Relaxed) {
                match client.get(&url).send().await {
                    Ok(r) if r.status() == 302 => {
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
    // A new client each time: a client of its own would resume its TLS
    // session, which keeps the certificate it was made with.
    let serving = |want: Vec<u8>| {
        let (fresh, url) = (site.fresh_client(), https(&srv, "/abcde"));
        async move {
            let r = fresh.get(&url).send().await.ok()?;
            (served(&r) == want).then_some(())
        }
    };
    poll("the old certificate served", || serving(old.der.clone())).await;
    poll("scans flowing", || {
        std::future::ready((scans.load(Ordering::Relaxed) > 0).then_some(()))
    })
    .await;

    let new = site.ca.leaf(&["127.0.0.1"], 2, None);
    site.install(&new);
    srv.signal("HUP");
    poll("the new certificate served after SIGHUP", || {
        serving(new.der.clone())
    })
    .await;

    // A file that cannot be served: the new certificate stays, /readyz says it.
    put(&site.cert, "not a certificate\n");
    srv.signal("HUP");
    let admin = reqwest::Client::new();
    let readyz = poll("/readyz to name the failed reload", || {
        let (admin, url) = (admin.clone(), srv.admin_url("/readyz"));
        async move {
            let r = admin.get(&url).send().await.ok()?;
            let status = r.status();
            let body = r.text().await.ok()?;
            body.contains("TLS reload failed").then_some((status, body))
        }
    })
    .await;
    assert_eq!(readyz.0, 200, "degraded, still serving: {}", readyz.1);
    assert!(
        readyz.1.contains(
            "degraded: TLS reload failed for 127.0.0.1, the old certificate is served: the TLS certificate file"
        ),
        "{}",
        readyz.1
    );
    let r = site
        .fresh_client()
        .get(https(&srv, "/abcde"))
        .send()
        .await
        .expect("served");
    assert_eq!(served(&r), new.der);
    // A good file again clears it.
    site.install(&new);
    srv.signal("HUP");
    poll("/readyz clear again", || {
        let (admin, url) = (admin.clone(), srv.admin_url("/readyz"));
        async move {
            let body = admin.get(&url).send().await.ok()?.text().await.ok()?;
            (!body.contains("TLS reload")).then_some(())
        }
    })
    .await;

    stop.store(true, Ordering::Relaxed);
    let errors = scanner.await.expect("scanner");
    assert_eq!(failures.load(Ordering::Relaxed), 0, "{errors:?}");
    assert!(scans.load(Ordering::Relaxed) > 0);
    assert!(
        srv.child.try_wait().expect("try_wait").is_none(),
        "still running"
    );
    srv.stop().await;
}

/// The `http=` address from the listening line.
async fn http_addr(srv: &ServerProcess) -> std::net::SocketAddr {
    poll("the listening line to name the http listener", || {
        std::future::ready(
            srv.stderr()
                .lines()
                .find(|l| l.starts_with("listening "))
                .and_then(|l| l.split(' ').find_map(|f| f.strip_prefix("http=")))
                .and_then(|a| a.parse().ok()),
        )
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn port_80_redirects_to_https_and_hsts_is_on_https_answers_only() {
    let site = Site::new().await;
    let leaf = site.ca.leaf(&["127.0.0.1"], 1, None);
    site.install(&leaf);
    let srv = site
        .serve(&["--http-listen", "127.0.0.1:0", "--hsts", "600"])
        .await;
    let http = http_addr(&srv).await;
    let plain = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(TIMEOUT)
        .build()
        .expect("client");
    let port = srv.public.port();
    let r = plain
        .get(format!("http://{http}/abcde?x=1"))
        .header("host", "Go.Example")
        .send()
        .await
        .expect("answered");
    assert_eq!(r.status(), 301);
    assert_eq!(
        support::header(&r, "location"),
        Some(format!("https://go.example:{port}/abcde?x=1").as_str())
    );
    assert_eq!(support::header(&r, "strict-transport-security"), None);
    let r = plain
        .post(format!("http://{http}/api/x"))
        .body("{}")
        .send()
        .await
        .expect("answered");
    assert_eq!(r.status(), 308);
    assert_eq!(
        support::header(&r, "location"),
        Some(format!("https://127.0.0.1:{port}/api/x").as_str())
    );
    // A Host that is no host name gets a 400, not a Location.
    let r = plain
        .get(format!("http://{http}/abcde"))
        .header("host", "evil.example@x")
        .send()
        .await
        .expect("answered");
    assert_eq!(r.status(), 400);
    // ACME challenges are answered, not redirected: none held here.
    let r = plain
        .get(format!("http://{http}/.well-known/acme-challenge/tok"))
        .send()
        .await
        .expect("answered");
    assert_eq!(r.status(), 404);
    // Following the redirect to the HTTPS listener: HSTS there.
    let r = site
        .client()
        .get(https(&srv, "/abcde"))
        .send()
        .await
        .expect("HTTPS");
    assert_eq!(r.status(), 302);
    assert_eq!(
        support::header(&r, "strict-transport-security"),
        Some("max-age=600")
    );
    srv.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acme_challenges_are_answered_on_port_80_from_the_challenges_map() {
    let site = Site::new().await;
    let leaf = site.ca.leaf(&["127.0.0.1"], 1, None);
    site.install(&leaf);
    let mut settings = support::test_settings(site.dir.path());
    settings.store = qrtag::store::options::StoreSettings::Sqlite {
        path: site.db.clone(),
    };
    settings.tls = Some(qrtag::tls::TlsSettings {
        source: qrtag::tls::CertSource::Files {
            cert: site.cert.clone(),
            key: site.key.clone(),
        },
        hsts: None,
        http_listen: Some("127.0.0.1:0".into()),
        domains: Vec::new(),
    });
    let app = qrtag::startup::Application::build(settings)
        .await
        .expect("builds");
    let http = app.http_addr().expect("the http listener");
    let tls = app.tls().expect("TLS on");
    tokio::spawn(app.run_until_stopped());
    tls.challenges
        .put("tok-1", "tok-1.thumbprint")
        .expect("room");
    let plain = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(TIMEOUT)
        .build()
        .expect("client");
    let url = format!("http://{http}/.well-known/acme-challenge/tok-1");
    let r = plain.get(&url).send().await.expect("answered");
    assert_eq!(r.status(), 200);
    assert_eq!(r.text().await.expect("body"), "tok-1.thumbprint");
    tls.challenges.remove("tok-1");
    assert_eq!(
        plain.get(&url).send().await.expect("answered").status(),
        404
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn certificate_expiry_is_on_metrics_and_a_readyz_warning_under_14_days() {
    let site = Site::new().await;
    let far = site.ca.leaf(&["127.0.0.1"], 1, Some(60));
    site.install(&far);
    let srv = site.serve(&[]).await;
    let admin = reqwest::Client::new();
    let get = |path: &str| {
        let (admin, url) = (admin.clone(), srv.admin_url(path));
        async move {
            let r = admin.get(&url).send().await.expect("admin answers");
            (r.status().as_u16(), r.text().await.expect("body"))
        }
    };
    let not_after = |der: &[u8]| {
        let (_, c) = x509_parser::parse_x509_certificate(der).expect("X.509");
        c.validity().not_after.timestamp()
    };
    let (_, metrics) = get("/metrics").await;
    promtool_check(&metrics);
    let line = format!(
        "qrtag_tls_certificate_expiry_seconds{{domain=\"127.0.0.1\"}} {}",
        not_after(&far.der)
    );
    assert!(metrics.lines().any(|l| l == line), "{line} in\n{metrics}");
    assert!(metrics.contains("# TYPE qrtag_tls_certificate_expiry_seconds gauge"));
    let (status, readyz) = poll("ready", || async {
        let r = get("/readyz").await;
        (r.0 == 200).then_some(r)
    })
    .await;
    assert_eq!(status, 200);
    assert!(!readyz.contains("TLS certificate"), "{readyz}");

    // A certificate with a few days left: a warning, still ready.
    let near = site.ca.leaf(&["127.0.0.1"], 2, Some(5));
    site.install(&near);
    srv.signal("HUP");
    let readyz = poll("the expiry warning", || async {
        let (status, body) = get("/readyz").await;
        assert_eq!(status, 200, "a warning, still taking traffic: {body}");
        body.contains("degraded: the TLS certificate for 127.0.0.1 expires in")
            .then_some(body)
    })
    .await;
    assert!(
        readyz.contains("expires in 4 days") || readyz.contains("expires in 5 days"),
        "{readyz}"
    );
    let (_, metrics) = get("/metrics").await;
    promtool_check(&metrics);
    let line = format!(
        "qrtag_tls_certificate_expiry_seconds{{domain=\"127.0.0.1\"}} {}",
        not_after(&near.der)
    );
    assert!(metrics.lines().any(|l| l == line), "{line} in\n{metrics}");
    assert!(metrics.contains("qrtag_degraded 1"), "{metrics}");
    srv.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_configuration_file_sets_tls_as_a_table() {
    let site = Site::new().await;
    let leaf = site.ca.leaf(&["127.0.0.1"], 1, None);
    site.install(&leaf);
    let config = site.dir.path().join("qrtag.toml");
    // Relative paths are the file's directory's.
    std::fs::write(
        &config,
        "tls = { cert = \"cert.pem\", key = \"key.pem\" }\nhsts = true\nhttp_listen = \"127.0.0.1:0\"\n",
    )
    .expect("write config");
    let config_text = config.display().to_string();
    let srv = ServerProcess::spawn(&site.db, &[], &[("QRTAG_CONFIG", &config_text)], false).await;
    let r = site
        .client()
        .get(https(&srv, "/abcde"))
        .send()
        .await
        .expect("HTTPS");
    assert_eq!(r.status(), 302);
    assert_eq!(served(&r), leaf.der);
    assert_eq!(
        support::header(&r, "strict-transport-security"),
        Some("max-age=31536000")
    );
    http_addr(&srv).await;
    srv.stop().await;

    // A key of the table that is no option is named in full.
    std::fs::write(
        &config,
        "tls = { cert = \"cert.pem\", kye = \"key.pem\" }\n",
    )
    .expect("write config");
    let out = Command::new(env!("CARGO_BIN_EXE_qrtag"))
        .arg("--db")
        .arg(&site.db)
        .arg("serve")
        .env("QRTAG_CONFIG", &config)
        .stdin(Stdio::null())
        .output()
        .expect("qrtag runs");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("unknown key `tls_kye`"), "{err}");
}
