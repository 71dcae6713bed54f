//! Every surface per domain (issue 36): the REST API, the CLI and the
//! service's health taking a domain, over real sockets against the real
//! application (two domains whose stores hold the same key leading to
//! different places).

#[path = "support/pdf_decode.rs"]
mod pdf_decode;
#[path = "support/qr_decode.rs"]
mod qr_decode;
mod support;

use std::path::Path;
use std::time::Duration;

use qrtag::server::api::ApiSettings;
use qrtag::settings::Settings;
use qrtag::settings::domains::{DomainSettings, ServedDomains};
use qrtag::store::options::StoreSettings;
use qrtag::values::host::Host;
use qrtag::values::public_url::PublicUrl;
use serde_json::{Value, json};
use support::api::{api, new_key, post};
use support::{TestApp, eventually, header, spawn_with, test_settings};

const B: &str = "qr.brand-b.ie";
const IPHONE: &str = "Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.0 Mobile/15E148 Safari/604.1";

/// `0x1f.ie`, the default (the test's database), and `qr.brand-b.ie` with
/// `b.db` and `b.log` beside it.
fn two_domains(dir: &Path, settings: &mut Settings) {
    settings.domains = ServedDomains {
        default_host: Some(Host::parse("0x1f.ie").expect("host")),
        others: vec![DomainSettings {
            host: Host::parse(B).expect("host"),
            public_url: PublicUrl::parse("https://qr.brand-b.ie").expect("url"),
            store: StoreSettings::Sqlite {
                path: dir.join("b.db"),
            },
            access_log: dir.join("b.log"),
            snapshot_file: None,
            dead_tag: Default::default(),
            root: None,
        }],
        unknown_host: Default::default(),
    };
}

/// The application with two domains, the REST API and the scan index on.
async fn spawn_two_domains() -> TestApp {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut settings = test_settings(dir.path());
    two_domains(dir.path(), &mut settings);
    settings.api = Some(ApiSettings::new(
        "127.0.0.1:0",
        dir.path().join("didcomm-keys.json"),
    ));
    let qrtag::settings::AccessLogTarget::Path(log) = settings.access_log.clone() else {
        panic!("a log file");
    };
    let mut index = qrtag::scan_index::ScanIndexSettings::beside(&log);
    index.poll_interval = Duration::from_millis(20);
    settings.scan_index = Some(index);
    spawn_with(settings, dir).await
}

async fn get(app: &TestApp, path: &str, key: &str) -> reqwest::Response {
    app.client
        .get(api(app, path))
        .bearer_auth(key)
        .send()
        .await
        .expect("request")
}

/// A scan of `target` on the public listener as `host`: status, Location.
async fn scan(app: &TestApp, host: &str, target: &str) -> (u16, Option<String>) {
    let r = app
        .client
        .get(app.url(target))
        .header(reqwest::header::HOST, host)
        .header(reqwest::header::USER_AGENT, IPHONE)
        .send()
        .await
        .expect("scan");
    let location = header(&r, "location").map(str::to_owned);
    (r.status().as_u16(), location)
}

#[tokio::test]
async fn the_rest_api_keeps_each_domains_links_urls_and_scans_apart() {
    let app = spawn_two_domains().await;
    let write = new_key(&app, "write");

    // The same key on both domains, leading to two places.
    let made = post(
        &app,
        "/links",
        &write,
        &json!({"url": "https://brand-a.example/poster", "key": "poster"}),
    )
    .await;
    assert_eq!(made.status().as_u16(), 201);
    let made: Value = made.json().await.expect("json");
    assert_eq!(made["short_url"], "https://0x1f.ie/poster");
    let made = post(
        &app,
        &format!("/links?domain={B}"),
        &write,
        &json!({"url": "https://brand-b.example/poster", "key": "poster"}),
    )
    .await;
    assert_eq!(made.status().as_u16(), 201);
    let made: Value = made.json().await.expect("json");
    assert_eq!(made["short_url"], "https://qr.brand-b.ie/poster");
    let only_b = post(
        &app,
        "/links?domain=QR.Brand-B.ie",
        &write,
        &json!({"url": "https://brand-b.example/menu", "key": "menu"}),
    )
    .await;
    assert_eq!(only_b.status().as_u16(), 201);

    // Served at once (read-your-writes), each domain its own place.
    assert_eq!(
        scan(&app, "0x1f.ie", "/poster").await,
        (302, Some("https://brand-a.example/poster".into()))
    );
    assert_eq!(
        scan(&app, B, "/poster").await,
        (302, Some("https://brand-b.example/poster".into()))
    );
    assert_eq!(scan(&app, "0x1f.ie", "/menu").await.0, 404);

    // Each domain's link and list hold only its own.
    let link: Value = get(&app, &format!("/links/poster?domain={B}"), &write)
        .await
        .json()
        .await
        .expect("json");
    assert_eq!(link["url"], "https://brand-b.example/poster", "{link}");
    let keys = |page: &Value| -> Vec<String> {
        page["links"]
            .as_array()
            .expect("links")
            .iter()
            .map(|l| format!("{} {}", l["short_url"].as_str().expect("url"), l["url"]))
            .collect()
    };
    eventually(Duration::from_secs(5), || async {
        let page: Value = get(&app, &format!("/links?domain={B}"), &write)
            .await
            .json()
            .await
            .expect("json");
        keys(&page).len() == 2
    })
    .await;
    let a: Value = get(&app, "/links", &write)
        .await
        .json()
        .await
        .expect("json");
    assert_eq!(
        keys(&a),
        ["https://0x1f.ie/poster \"https://brand-a.example/poster\""]
    );
    let b: Value = get(&app, &format!("/links?domain={B}"), &write)
        .await
        .json()
        .await
        .expect("json");
    assert_eq!(
        keys(&b),
        [
            "https://qr.brand-b.ie/menu \"https://brand-b.example/menu\"",
            "https://qr.brand-b.ie/poster \"https://brand-b.example/poster\""
        ]
    );
    // An edit on one domain leaves the other's link alone.
    let r = app
        .client
        .patch(api(&app, &format!("/links/poster?domain={B}")))
        .bearer_auth(&write)
        .json(&json!({"url": "https://brand-b.example/poster-2"}))
        .send()
        .await
        .expect("patch");
    assert_eq!(r.status().as_u16(), 200);
    assert_eq!(
        scan(&app, B, "/poster").await,
        (302, Some("https://brand-b.example/poster-2".into()))
    );
    assert_eq!(
        scan(&app, "0x1f.ie", "/poster").await,
        (302, Some("https://brand-a.example/poster".into()))
    );

    // Scans of each key counted on its own domain: three more on b.
    for _ in 0..3 {
        assert_eq!(scan(&app, B, "/poster").await.0, 302);
    }
    let count = |domain: Option<&'static str>| {
        let app = &app;
        let write = &write;
        async move {
            let path = match domain {
                Some(d) => format!("/links/poster/scans?domain={d}"),
                None => "/links/poster/scans".to_owned(),
            };
            let r = get(app, &path, write).await;
            if r.status().as_u16() != 200 {
                return None;
            }
            r.json::<Value>().await.expect("json")["scans"].as_u64()
        }
    };
    eventually(Duration::from_secs(5), || async {
        count(Some(B)).await == Some(5) && count(None).await == Some(2)
    })
    .await;
    let all: Value = get(&app, &format!("/scans?domain={B}"), &write)
        .await
        .json()
        .await
        .expect("json");
    assert_eq!(all["top"][0]["key"], "poster", "{all}");
    assert_eq!(all["top"][0]["scans"].as_u64(), Some(5), "{all}");

    // The QR image encodes the domain's short URL.
    let svg = get(&app, &format!("/links/poster/qr.svg?domain={B}"), &write).await;
    assert_eq!(svg.status().as_u16(), 200);

    // An unknown domain: a 400 problem naming it, to a caller with a key;
    // a stranger learns nothing of the domains.
    let r = get(&app, "/links?domain=nope.example", &write).await;
    assert_eq!(r.status().as_u16(), 400);
    assert_eq!(header(&r, "content-type"), Some("application/problem+json"));
    let problem: Value = r.json().await.expect("json");
    let detail = problem["detail"].as_str().expect("detail");
    assert!(
        detail.starts_with("domain: no domain nope.example here"),
        "{detail}"
    );
    let r = app
        .client
        .post(api(&app, "/links?domain=nope.example"))
        .bearer_auth(&write)
        .json(&json!({"url": "https://x.example/"}))
        .send()
        .await
        .expect("post");
    assert_eq!(r.status().as_u16(), 400);
    let r = app
        .client
        .get(api(&app, "/links?domain=nope.example"))
        .send()
        .await
        .expect("get");
    assert_eq!(r.status().as_u16(), 401);
    let text = r.text().await.expect("body");
    assert!(!text.contains("brand-b"), "{text}");
}

#[tokio::test]
async fn the_document_declares_the_domain_on_every_operation() {
    let doc: Value = serde_json::from_str(&qrtag::server::rest::openapi::document()).expect("json");
    let mut seen = 0;
    for (path, ops) in doc["paths"].as_object().expect("paths") {
        if path.ends_with("/openapi.json") {
            continue;
        }
        for (method, op) in ops.as_object().expect("operations") {
            let params = op["parameters"].as_array().expect("parameters");
            let domain: Vec<&Value> = params.iter().filter(|p| p["name"] == "domain").collect();
            assert_eq!(domain.len(), 1, "{method} {path}");
            assert_eq!(domain[0]["in"], "query", "{method} {path}");
            assert!(op["responses"]["400"].is_object(), "{method} {path}");
            seen += 1;
        }
    }
    assert!(seen >= 13, "{seen}");
}

/// `qrtag ARGS` in `dir` with its `qrtag.toml`.
fn cli(dir: &Path, args: &[&str]) -> std::process::Output {
    support::qrtag_bin()
        .args(args)
        .env("QRTAG_CONFIG", dir.join("qrtag.toml"))
        .current_dir(dir)
        .stdin(std::process::Stdio::null())
        .output()
        .expect("run qrtag")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// An iPhone's scan of `/k`, as the access log holds it.
const SCAN_OF_K: &str = "20261122070000.0 198.51.100.7 0VhAAAAA0000000000a Mozilla%2F5.0%20%28iPhone%3B%20CPU%20iPhone%20OS%2017_0%20like%20Mac%20OS%20X%29%20AppleWebKit%2F605.1.15%20%28KHTML%2C%20like%20Gecko%29%20Version%2F17.0%20Mobile%2F15E148%20Safari%2F604.1 /k 302 https://brand-b.example/x GET -\n";

#[test]
fn every_link_command_takes_a_domain() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    std::fs::write(
        d.join("qrtag.toml"),
        r#"db = "a.db"
public_url = "https://0x1f.ie"
access_log = "access.log"

[[domains]]
host = "0x1f.ie"

[[domains]]
host = "qr.brand-b.ie"
public_url = "https://qr.brand-b.ie"
sqlite = "b.db"
access_log = "b.log"
"#,
    )
    .expect("config");
    let ok = |args: &[&str]| {
        let out = cli(d, args);
        assert!(out.status.success(), "{args:?}: {}", text(&out.stderr));
        out
    };
    fn b<'a>(args: &[&'a str]) -> Vec<&'a str> {
        [args, &["--domain", B][..]].concat()
    }
    ok(&["init"]);
    let out = support::qrtag_bin()
        .arg("--db")
        .arg(d.join("b.db"))
        .args(["--public-url", "https://qr.brand-b.ie", "init"])
        .env("QRTAG_CONFIG", "/dev/null")
        .output()
        .expect("init b");
    assert!(out.status.success(), "{out:?}");
    ok(&["new", "https://brand-a.example/x", "--key", "k"]);
    ok(&b(&["new", "https://brand-b.example/x", "--key", "k"]));

    // history, disable, enable, rule, try, export, qr, print, stats, delete:
    // each on b's link alone.
    let history = text(&ok(&b(&["history", "k"])).stdout);
    assert!(history.contains("https://brand-b.example/x"), "{history}");
    assert!(!history.contains("brand-a"), "{history}");
    ok(&b(&["disable", "k"]));
    let tried = cli(d, &b(&["try", "k"]));
    assert!(text(&tried.stdout).contains("404"), "{tried:?}");
    let tried = text(&ok(&["try", "k"]).stdout);
    assert!(tried.contains("https://brand-a.example/x"), "{tried}");
    ok(&b(&["enable", "k"]));
    ok(&b(&[
        "rule",
        "add",
        "k",
        "--os",
        "ios",
        "https://brand-b.example/ios",
    ]));
    let rules = text(&ok(&b(&["rule", "list", "k"])).stdout);
    assert!(rules.contains("https://brand-b.example/ios"), "{rules}");
    let rules = text(&ok(&["rule", "list", "k"]).stdout);
    assert!(!rules.contains("brand-b"), "{rules}");
    let exported = text(&ok(&b(&["export"])).stdout);
    assert_eq!(exported.lines().count(), 1, "{exported}");
    assert!(exported.contains("https://brand-b.example/x"), "{exported}");
    ok(&b(&["qr", "k", "--format", "png", "-o", "b.png"]));
    let png = std::fs::read(d.join("b.png")).expect("png");
    assert_eq!(qr_decode::decode_png(&png).0, "https://qr.brand-b.ie/k");
    ok(&b(&["print", "k", "--template", "L7163", "-o", "b.pdf"]));
    let pdf = std::fs::read(d.join("b.pdf")).expect("pdf");
    assert_eq!(pdf_decode::decode_pdf(d, &pdf), ["https://qr.brand-b.ie/k"]);
    // stats reads the domain's own access log from the configuration.
    std::fs::write(d.join("b.log"), SCAN_OF_K).expect("b.log");
    std::fs::write(d.join("access.log"), "").expect("access.log");
    let counted = text(&ok(&b(&["stats"])).stdout);
    assert!(counted.lines().any(|l| l.starts_with("k ")), "{counted}");
    let counted = text(&ok(&["stats"]).stdout);
    assert!(!counted.lines().any(|l| l.starts_with("k ")), "{counted}");
    ok(&b(&["delete", "k", "--yes"]));
    let shown = text(&ok(&["show", "k"]).stdout);
    assert!(!shown.contains("deleted_at"), "{shown}");
    let shown = text(&ok(&b(&["show", "k"])).stdout);
    assert!(shown.contains("deleted_at"), "{shown}");

    // A domain the file does not list, and a command that is the
    // service's: one line, exit 2.
    let out = cli(d, &["history", "k", "--domain", "nope.example"]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert_eq!(
        text(&out.stderr),
        "qrtag: no domain nope.example (domains: 0x1f.ie, qr.brand-b.ie)\n"
    );
    let out = cli(d, &b(&["api-key", "list"]));
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert_eq!(text(&out.stderr).lines().count(), 1, "{out:?}");
}

/// A link in the embedded store at `db`, as the CLI writes it.
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

#[tokio::test]
async fn readyz_and_metrics_count_each_domains_links() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut settings = test_settings(dir.path());
    two_domains(dir.path(), &mut settings);
    add(
        &dir.path().join("qrtag.db"),
        "poster",
        "https://brand-a.example/poster",
    )
    .await;
    for key in ["poster", "menu"] {
        add(&dir.path().join("b.db"), key, "https://brand-b.example/").await;
    }
    let app = spawn_with(settings, dir).await;
    let r = app.admin_get("/readyz?format=json").await.expect("readyz");
    assert_eq!(r.status().as_u16(), 200);
    let report: Value = r.json().await.expect("json");
    let domains: Vec<(String, u64, bool)> = report["domains"]
        .as_array()
        .expect("domains")
        .iter()
        .map(|d| {
            (
                d["domain"].as_str().expect("name").to_owned(),
                d["links"].as_u64().expect("links"),
                d["loaded"].as_bool().expect("loaded"),
            )
        })
        .collect();
    assert_eq!(
        domains,
        [("0x1f.ie".to_owned(), 1, true), (B.to_owned(), 2, true)]
    );
    // Scans land in each domain's own log, counted by domain.
    assert_eq!(scan(&app, B, "/menu").await.0, 302);
    let metrics = app
        .admin_get("/metrics")
        .await
        .expect("metrics")
        .text()
        .await
        .expect("text");
    support::promtool::promtool_check(&metrics);
    for line in [
        "qrtag_snapshot_links{domain=\"0x1f.ie\"} 1",
        "qrtag_snapshot_links{domain=\"qr.brand-b.ie\"} 2",
        "qrtag_domain_loaded{domain=\"qr.brand-b.ie\"} 1",
    ] {
        assert!(metrics.lines().any(|l| l == line), "{line}\n{metrics}");
    }
    eventually(Duration::from_secs(5), || async {
        let metrics = app
            .admin_get("/metrics")
            .await
            .expect("metrics")
            .text()
            .await
            .expect("text");
        metrics
            .lines()
            .any(|l| l == "qrtag_domain_access_log_lines_written_total{domain=\"qr.brand-b.ie\"} 1")
    })
    .await;
}

#[tokio::test]
async fn a_domain_whose_links_are_not_loaded_keeps_readyz_not_ready_naming_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut settings = test_settings(dir.path());
    two_domains(dir.path(), &mut settings);
    // b's CouchDB is nowhere: its links never load.
    let nowhere = std::net::TcpListener::bind("127.0.0.1:0").expect("port");
    let port = nowhere.local_addr().expect("addr").port();
    drop(nowhere);
    settings.domains.others[0].store =
        StoreSettings::CouchDb(qrtag::store::options::CouchSettings::new(
            qrtag::values::couch::CouchUrl::parse(&format!("http://127.0.0.1:{port}"))
                .expect("url"),
            qrtag::values::couch::CouchDbName::parse("b").expect("name"),
        ));
    let app = qrtag::startup::Application::build(settings)
        .await
        .expect("builds");
    let admin = app.admin_addr();
    let default = app.snapshots()[0].clone();
    tokio::spawn(app.run_until_stopped());
    let client = reqwest::Client::new();
    let body = support::poll::until(Duration::from_secs(10), "the default domain loaded", || {
        let client = client.clone();
        let default = default.clone();
        async move {
            if !default.is_loaded() {
                return None;
            }
            let r = client
                .get(format!("http://{admin}/readyz"))
                .send()
                .await
                .ok()?;
            Some((r.status().as_u16(), r.text().await.ok()?))
        }
    })
    .await;
    assert_eq!(body.0, 503, "{}", body.1);
    assert!(
        body.1.starts_with("not ready: domain qr.brand-b.ie: "),
        "{}",
        body.1
    );
}

/// A plaintext DIDComm v2 message with the operator's token; the reply.
async fn didcomm(app: &TestApp, msg: Value) -> Value {
    let r = app
        .client
        .post(format!("http://{}/didcomm", app.api.expect("API listener")))
        .header("content-type", "application/didcomm-plain+json")
        .bearer_auth("domain-token")
        .body(msg.to_string())
        .send()
        .await
        .expect("didcomm");
    assert_eq!(r.status().as_u16(), 200);
    r.json().await.expect("reply")
}

#[tokio::test]
async fn didcomm_shortens_on_the_domain_a_request_names() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut settings = test_settings(dir.path());
    two_domains(dir.path(), &mut settings);
    let mut api = ApiSettings::new("127.0.0.1:0", dir.path().join("didcomm-keys.json"));
    api.token = Some(qrtag::values::secret::Secret::new("domain-token"));
    settings.api = Some(api);
    let app = spawn_with(settings, dir).await;
    const REQUEST: &str = "https://didcomm.org/shorten-url/1.0/request-shortened-url";
    let request = |id: &str, url: &str, domain: Option<&str>| {
        let mut body = json!({"url": url, "goal_code": "shorten", "short_url_slug": "invite"});
        if let Some(d) = domain {
            body["domain"] = json!(d);
        }
        json!({"type": REQUEST, "id": id, "return_route": "all", "body": body})
    };

    // The same slug on both domains, two places.
    let a = didcomm(&app, request("r1", "https://brand-a.example/join", None)).await;
    assert_eq!(a["body"]["shortened_url"], "https://0x1f.ie/invite", "{a}");
    let b = didcomm(
        &app,
        request("r2", "https://brand-b.example/join", Some("QR.Brand-B.ie")),
    )
    .await;
    assert_eq!(
        b["body"]["shortened_url"], "https://qr.brand-b.ie/invite",
        "{b}"
    );
    assert_eq!(
        scan(&app, "0x1f.ie", "/invite").await,
        (302, Some("https://brand-a.example/join".into()))
    );
    assert_eq!(
        scan(&app, B, "/invite").await,
        (302, Some("https://brand-b.example/join".into()))
    );

    // An invalidation acts on the domain its short URL is on.
    let inv = json!({"type": "https://didcomm.org/shorten-url/1.0/invalidate-shortened-url",
        "id": "i1", "return_route": "all",
        "body": {"shortened_url": "https://qr.brand-b.ie/invite"}});
    let ack = didcomm(&app, inv).await;
    assert_eq!(ack["ack"], json!(["i1"]), "{ack}");
    assert_eq!(scan(&app, B, "/invite").await.0, 404);
    assert_eq!(scan(&app, "0x1f.ie", "/invite").await.0, 302);

    // A domain the service does not serve: a problem report naming it.
    let refused = didcomm(
        &app,
        request("r3", "https://x.example/", Some("nope.example")),
    )
    .await;
    assert_eq!(
        refused["body"]["code"]
            .as_str()
            .map(|c| c.trim_start_matches("e.p.msg.")),
        Some("unknown_domain"),
        "{refused}"
    );
    assert!(
        refused["body"]["comment"]
            .as_str()
            .is_some_and(|c| c.contains("nope.example")),
        "{refused}"
    );
}

#[tokio::test]
async fn the_admin_listeners_qr_codes_and_pdfs_take_the_domain() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut settings = test_settings(dir.path());
    two_domains(dir.path(), &mut settings);
    add(
        &dir.path().join("qrtag.db"),
        "poster",
        "https://brand-a.example/poster",
    )
    .await;
    for key in ["poster", "menu"] {
        add(&dir.path().join("b.db"), key, "https://brand-b.example/").await;
    }
    let app = spawn_with(settings, dir).await;
    let get = |path: String| {
        let app = &app;
        async move { app.admin_get(&path).await.expect("answer") }
    };
    let png = |r: reqwest::Response| async move {
        assert_eq!(r.status().as_u16(), 200);
        qr_decode::decode_png(&r.bytes().await.expect("png")).0
    };
    assert_eq!(
        png(get("/qr/poster.png".into()).await).await,
        "https://0x1f.ie/poster"
    );
    assert_eq!(
        png(get(format!("/qr/poster.png?domain={B}")).await).await,
        "https://qr.brand-b.ie/poster"
    );
    assert_eq!(
        png(get(format!("/qr/menu.png?scale=4&domain={B}")).await).await,
        "https://qr.brand-b.ie/menu"
    );
    assert_eq!(get("/qr/menu.png".into()).await.status().as_u16(), 404);
    let r = get(format!("/qr/poster.pdf?template=L7163&domain={B}")).await;
    assert_eq!(r.status().as_u16(), 200);
    let pdf = r.bytes().await.expect("pdf");
    assert_eq!(
        pdf_decode::decode_pdf(app.dir.path(), &pdf),
        ["https://qr.brand-b.ie/poster"]
    );
    let r = get("/qr/poster.svg?domain=nope.example".into()).await;
    assert_eq!(r.status().as_u16(), 400);
    let body = r.text().await.expect("body");
    assert!(body.starts_with("domain: no domain nope.example"), "{body}");
}
