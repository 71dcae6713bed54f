//! Pebble, Let's Encrypt's test CA (Debian's `pebble` package), on free
//! loopback ports, with `pebble-challtestsrv` as its DNS server answering
//! 127.0.0.1 for every name, so the CA validates HTTP-01 on the test's own
//! responder. Its HTTPS certificate is made here with rcgen (the package
//! ships none). `Drop` stops both.
//!
//! Where `pebble` is missing outside CI, each test says so and returns; with
//! `QRTAG_REQUIRE_PEBBLE` set (`.ci/test` sets it) a missing binary fails.
#![allow(dead_code)]

use std::collections::HashMap;
use std::net::{SocketAddr, TcpListener, UdpSocket};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use qrtag::acme::{CertificateBundle, Http01Responder, Installer};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::poll;

/// The name Pebble's policy refuses (its `domainBlocklist`).
pub const BLOCKED: &str = "blocked.qrtag.test";

pub struct Pebble {
    dir: tempfile::TempDir,
    pebble: Child,
    dns: Child,
    pub directory: String,
    /// Where Pebble's HTTPS chains to: the `ca_root` of the settings.
    pub ca_root: PathBuf,
    /// The port Pebble validates HTTP-01 on; the test's responder listens here.
    pub http01_port: u16,
    /// Issue 36: the port Pebble validates TLS-ALPN-01 on (its `tlsPort`).
    pub tls_alpn01_port: u16,
    management: u16,
}

impl Drop for Pebble {
    fn drop(&mut self) {
        for child in [&mut self.pebble, &mut self.dns] {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

fn find(program: &str) -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|dir| dir.join(program))
            .find(|p| p.is_file())
    })
}

fn free_tcp() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free TCP port")
}

fn free_udp() -> u16 {
    UdpSocket::bind("127.0.0.1:0")
        .and_then(|s| s.local_addr())
        .map(|a| a.port())
        .expect("a free UDP port")
}

/// Pebble's own HTTPS certificate, for 127.0.0.1 and localhost, issued by a
/// throw-away CA whose certificate is returned as the root to trust.
fn https_identity(dir: &Path) -> (PathBuf, PathBuf, PathBuf) {
    let ca_key = rcgen::KeyPair::generate().unwrap();
    let mut ca = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    ca.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    ca.distinguished_name
        .push(rcgen::DnType::CommonName, "qrtag test CA for Pebble");
    let ca_cert = ca.self_signed(&ca_key).unwrap();
    let issuer = rcgen::Issuer::new(ca, ca_key);
    let key = rcgen::KeyPair::generate().unwrap();
    let leaf = rcgen::CertificateParams::new(vec!["127.0.0.1".to_string(), "localhost".into()])
        .unwrap()
        .signed_by(&key, &issuer)
        .unwrap();
    let paths = (
        dir.join("ca.pem"),
        dir.join("cert.pem"),
        dir.join("key.pem"),
    );
    std::fs::write(&paths.0, ca_cert.pem()).unwrap();
    std::fs::write(&paths.1, leaf.pem()).unwrap();
    std::fs::write(&paths.2, key.serialize_pem()).unwrap();
    paths
}

impl Pebble {
    /// Starts Pebble issuing certificates valid `validity_secs` (its default,
    /// about five years, when `None`), or returns `None` (after saying why)
    /// where the package is not installed.
    pub async fn start(test: &str, validity_secs: Option<u64>) -> Option<Self> {
        let (Some(pebble), Some(challtestsrv)) = (find("pebble"), find("pebble-challtestsrv"))
        else {
            assert!(
                std::env::var_os("QRTAG_REQUIRE_PEBBLE").is_none(),
                "{test}: pebble and pebble-challtestsrv must be installed (apt-get install pebble)"
            );
            eprintln!("{test}: skipped, no pebble on PATH (apt-get install pebble)");
            return None;
        };
        let dir = tempfile::tempdir().unwrap();
        let (ca_root, cert, key) = https_identity(dir.path());
        let (listen, management, http01, tls, dns, dns_management) = (
            free_tcp(),
            free_tcp(),
            free_tcp(),
            free_tcp(),
            free_udp(),
            free_tcp(),
        );
        let mut config = serde_json::json!({"pebble": {
            "listenAddress": format!("127.0.0.1:{listen}"),
            "managementListenAddress": format!("127.0.0.1:{management}"),
            "certificate": cert,
            "privateKey": key,
            "httpPort": http01,
            "tlsPort": tls,
            "ocspResponderURL": "",
            "externalAccountBindingRequired": false,
            "domainBlocklist": [BLOCKED],
        }});
        if let Some(secs) = validity_secs {
            config["pebble"]["certificateValidityPeriod"] = secs.into();
        }
        let config_path = dir.path().join("pebble-config.json");
        std::fs::write(&config_path, config.to_string()).unwrap();

        let log = |name: &str| std::fs::File::create(dir.path().join(name)).unwrap();
        let dns_child = Command::new(challtestsrv)
            .args(["-dns01", &format!("127.0.0.1:{dns}")])
            .args(["-management", &format!("127.0.0.1:{dns_management}")])
            .args(["-http01", "", "-https01", "", "-tlsalpn01", ""])
            .args(["-defaultIPv4", "127.0.0.1", "-defaultIPv6", ""])
            .stdout(log("challtestsrv.log"))
            .stderr(Stdio::null())
            .spawn()
            .expect("pebble-challtestsrv starts");
        let pebble_child = Command::new(pebble)
            .arg("-config")
            .arg(&config_path)
            .args(["-dnsserver", &format!("127.0.0.1:{dns}"), "-strict=false"])
            // No random sleeps before validating, no nonce refused at random,
            // and a fresh authorisation every order, so each order validates.
            .env("PEBBLE_VA_NOSLEEP", "1")
            .env("PEBBLE_WFE_NONCEREJECT", "0")
            .env("PEBBLE_AUTHZREUSE", "0")
            .stdout(log("pebble.log"))
            .stderr(Stdio::null())
            .spawn()
            .expect("pebble starts");
        let pebble = Self {
            dir,
            pebble: pebble_child,
            dns: dns_child,
            directory: format!("https://127.0.0.1:{listen}/dir"),
            ca_root,
            http01_port: http01,
            tls_alpn01_port: tls,
            management,
        };
        let client = pebble.https_client();
        let directory = pebble.directory.clone();
        poll::until(
            Duration::from_secs(30),
            "Pebble answers its directory",
            || {
                let client = client.clone();
                let directory = directory.clone();
                async move {
                    let answer = client.get(&directory).send().await.ok()?;
                    answer.status().is_success().then_some(())
                }
            },
        )
        .await;
        Some(pebble)
    }

    fn https_client(&self) -> reqwest::Client {
        let root = reqwest::Certificate::from_pem(&std::fs::read(&self.ca_root).unwrap()).unwrap();
        reqwest::Client::builder()
            .tls_certs_only([root])
            .build()
            .unwrap()
    }

    /// The root Pebble issues under (made anew at each start).
    pub async fn issuing_root(&self) -> String {
        let url = format!("https://127.0.0.1:{}/roots/0", self.management);
        let answer = self.https_client().get(url).send().await.unwrap();
        assert!(answer.status().is_success());
        answer.text().await.unwrap()
    }

    /// Pebble's log, for a failure's message.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("pebble.log")).unwrap_or_default()
    }
}

/// A small HTTP-01 responder, as the port-80 listener will be: answers
/// `/.well-known/acme-challenge/TOKEN` from its map, 404 otherwise.
#[derive(Default)]
pub struct TestResponder {
    map: Mutex<HashMap<String, String>>,
    pub puts: AtomicUsize,
    pub served: AtomicUsize,
}

impl Http01Responder for TestResponder {
    fn put(&self, token: &str, key_authorization: &str) {
        self.puts.fetch_add(1, Ordering::SeqCst);
        self.map
            .lock()
            .unwrap()
            .insert(token.into(), key_authorization.into());
    }

    fn remove(&self, token: &str) {
        self.map.lock().unwrap().remove(token);
    }
}

impl TestResponder {
    pub fn tokens(&self) -> usize {
        self.map.lock().unwrap().len()
    }

    /// Serves on 127.0.0.1:`port` until the runtime ends.
    pub async fn serve(self: &Arc<Self>, port: u16) {
        let listener = tokio::net::TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], port)))
            .await
            .expect("the HTTP-01 port is free");
        let this = Arc::clone(self);
        tokio::spawn(async move {
            while let Ok((mut socket, _)) = listener.accept().await {
                let this = Arc::clone(&this);
                tokio::spawn(async move {
                    let mut head = Vec::new();
                    let mut buf = [0u8; 1024];
                    while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < 16_384 {
                        match socket.read(&mut buf).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => head.extend_from_slice(&buf[..n]),
                        }
                    }
                    let head = String::from_utf8_lossy(&head);
                    let path = head.split(' ').nth(1).unwrap_or("");
                    let answer = path
                        .strip_prefix("/.well-known/acme-challenge/")
                        .and_then(|token| this.map.lock().unwrap().get(token).cloned());
                    let response = match answer {
                        Some(body) => {
                            this.served.fetch_add(1, Ordering::SeqCst);
                            format!(
                                "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                                body.len()
                            )
                        }
                        None => "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".into(),
                    };
                    let _ = socket.write_all(response.as_bytes()).await;
                    let _ = socket.shutdown().await;
                });
            }
        });
    }
}

/// Records what the renewer installs, as the TLS listener's resolver would
/// take it.
#[derive(Default)]
pub struct TestInstaller {
    pub installed: Mutex<Vec<(String, CertificateBundle, std::time::SystemTime)>>,
}

impl Installer for TestInstaller {
    fn install(&self, name: &str, bundle: &CertificateBundle) -> Result<(), String> {
        self.installed.lock().unwrap().push((
            name.to_string(),
            bundle.clone(),
            std::time::SystemTime::now(),
        ));
        Ok(())
    }
}

impl TestInstaller {
    pub fn serials(&self) -> Vec<String> {
        self.installed
            .lock()
            .unwrap()
            .iter()
            .map(|(_, b, _)| b.leaf().unwrap().serial)
            .collect()
    }
}

/// Whether `bundle`'s chain verifies for `name` against `root_pem` as a TLS
/// client (rustls, webpki) would check a server: the leaf for the name, the
/// chain up to the root, the dates now.
pub fn chains_to(bundle: &CertificateBundle, root_pem: &str, name: &str) -> Result<(), String> {
    use rustls::client::danger::ServerCertVerifier;
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, ServerName, UnixTime};

    let mut roots = rustls::RootCertStore::empty();
    for root in CertificateDer::pem_slice_iter(root_pem.as_bytes()) {
        roots
            .add(root.map_err(|e| e.to_string())?)
            .map_err(|e| e.to_string())?;
    }
    let chain: Vec<CertificateDer<'static>> =
        CertificateDer::pem_slice_iter(bundle.chain_pem.as_bytes())
            .collect::<Result<_, _>>()
            .map_err(|e| e.to_string())?;
    let (leaf, intermediates) = chain.split_first().ok_or("an empty chain")?;
    let verifier = rustls::client::WebPkiServerVerifier::builder(Arc::new(roots))
        .build()
        .map_err(|e| e.to_string())?;
    verifier
        .verify_server_cert(
            leaf,
            intermediates,
            &ServerName::try_from(name.to_string()).map_err(|e| e.to_string())?,
            &[],
            UnixTime::now(),
        )
        .map(|_| ())
        .map_err(|e| e.to_string())
}
