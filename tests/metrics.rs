//! `/metrics` and `/readyz` as a scraper and a load balancer see them: the
//! real application on port 0, real traffic, and the exposition checked by
//! `promtool` (Debian's `prometheus` package; `.ci/test` installs it).

mod support;

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use serde_json::Value;

use qrtag::snapshot::{Change, Snapshot};
use qrtag::startup::Application;
use qrtag::store::options::{CouchSettings, StoreSettings};
use qrtag::values::couch::{CouchDbName, CouchUrl};
use qrtag::values::node_name::NodeName;
use support::process::ServerProcess;
use support::promtool::promtool_check;
use support::{TestApp, poll, spawn_app, spawn_with, test_settings};

const WITHIN: Duration = Duration::from_secs(10);

/// One scrape: every sample by its series (`name{labels}`), as written.
struct Scrape {
    text: String,
    samples: BTreeMap<String, f64>,
}

impl Scrape {
    fn parse(text: String) -> Self {
        let samples = text
            .lines()
            .filter(|l| !l.starts_with('#') && !l.is_empty())
            .map(|l| {
                let (series, value) = l.rsplit_once(' ').expect("a sample line");
                let value = value.parse().unwrap_or_else(|_| panic!("a number: {l}"));
                (series.to_owned(), value)
            })
            .collect();
        Self { text, samples }
    }

    /// A series' value; 0 for one not exported yet (a counter never moved).
    fn get(&self, series: &str) -> f64 {
        self.samples.get(series).copied().unwrap_or(0.0)
    }

    /// The sum over every series of the metric `name`.
    fn sum(&self, name: &str) -> f64 {
        self.samples
            .iter()
            .filter(|(s, _)| s.as_str() == name || s.starts_with(&format!("{name}{{")))
            .map(|(_, v)| v)
            .sum()
    }

    /// Sample names (without labels): what a query can name.
    fn names(&self) -> BTreeSet<String> {
        self.samples
            .keys()
            .map(|s| s.split('{').next().unwrap_or(s).to_owned())
            .collect()
    }
}

async fn scrape(app: &TestApp) -> Scrape {
    scrape_at(&app.client, app.admin).await
}

/// `/metrics` as promtool and curl get it: the classic text format.
async fn scrape_at(client: &reqwest::Client, admin: std::net::SocketAddr) -> Scrape {
    let r = client
        .get(format!("http://{admin}/metrics"))
        .send()
        .await
        .expect("metrics answered");
    assert_eq!(r.status(), 200);
    assert_eq!(
        support::header(&r, "content-type"),
        Some("text/plain; version=0.0.4; charset=utf-8")
    );
    Scrape::parse(r.text().await.expect("body"))
}

async fn readyz_json(client: &reqwest::Client, admin: std::net::SocketAddr) -> (u16, Value) {
    let r = client
        .get(format!("http://{admin}/readyz"))
        .header("accept", "application/json")
        .send()
        .await
        .expect("readyz answered");
    let status = r.status().as_u16();
    assert_eq!(
        support::header(&r, "content-type"),
        Some("application/json")
    );
    (status, r.json().await.expect("JSON"))
}

/// A server with one link and traffic of every kind the metrics count.
async fn busy_app() -> TestApp {
    let app = spawn_app().await;
    app.link("H83if", "https://example.com/whelans").await;
    app.wait_for_status("/H83if", 302).await;
    assert_eq!(app.get("/nope1").await.status(), 404);
    let png = app.admin_get("/qr/H83if.png").await.expect("qr");
    assert_eq!(png.status(), 200);
    app
}

#[tokio::test]
async fn the_exposition_passes_promtool_and_names_every_metric() {
    let app = busy_app().await;
    let s = scrape(&app).await;
    promtool_check(&s.text);
    for name in [
        "qrtag_requests_total",
        "qrtag_request_duration_seconds_bucket",
        "qrtag_request_duration_seconds_sum",
        "qrtag_request_duration_seconds_count",
        "qrtag_snapshot_links",
        "qrtag_snapshot_invalid_documents",
        "qrtag_ready",
        "qrtag_degraded",
        "qrtag_store_up",
        "qrtag_store_follower_lag_seconds",
        "qrtag_store_last_change_age_seconds",
        "qrtag_store_changes_applied_total",
        "qrtag_store_reconnects_total",
        "qrtag_access_log_lines_written_total",
        "qrtag_access_log_lines_dropped_total",
        "qrtag_access_log_write_errors_total",
        "qrtag_access_log_backpressure_waits_total",
        "qrtag_access_log_reopens_total",
        "qrtag_access_log_queued_bytes",
        "qrtag_access_log_failing",
        "qrtag_qr_images_rendered_total",
        "qrtag_render_slots",
        "qrtag_renders_in_flight",
        "qrtag_build_info",
        "process_resident_memory_bytes",
        "process_cpu_seconds_total",
        "process_open_fds",
        "process_start_time_seconds",
    ] {
        assert!(s.names().contains(name), "{name} missing from:\n{}", s.text);
    }
    for line in s.text.lines().filter(|l| l.starts_with("# TYPE ")) {
        let name = line.split(' ').nth(2).expect("a name");
        assert!(
            s.text.contains(&format!("# HELP {name} ")),
            "{name} has no HELP"
        );
    }
    assert_eq!(s.get("qrtag_ready"), 1.0);
    assert_eq!(s.get("qrtag_degraded"), 0.0);
    assert_eq!(s.get("qrtag_store_up"), 1.0);
    assert_eq!(s.get("qrtag_snapshot_links"), 1.0);
    assert_eq!(
        s.get("qrtag_store_changes_applied_total"),
        1.0,
        "one link created"
    );
    assert!(s.get("process_resident_memory_bytes") > 1e6);
    assert!(s.get("process_open_fds") > 3.0);
    let version = format!(
        "qrtag_build_info{{version=\"{}\"}}",
        env!("CARGO_PKG_VERSION")
    );
    assert_eq!(s.get(&version), 1.0);
    assert!(
        !s.names().contains("qrtag_node_info"),
        "no node name, no node info"
    );
}

#[tokio::test]
async fn prometheus_gets_openmetrics_when_it_asks() {
    let app = busy_app().await;
    let r = app
        .client
        .get(format!("http://{}/metrics", app.admin))
        .header(
            "accept",
            "application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5,*/*;q=0.1",
        )
        .send()
        .await
        .expect("metrics");
    assert_eq!(
        support::header(&r, "content-type"),
        Some("application/openmetrics-text; version=1.0.0; charset=utf-8")
    );
    let text = r.text().await.expect("body");
    assert!(text.ends_with("# EOF\n"), "{text}");
    assert!(text.contains("# TYPE qrtag_requests counter\n"));
    assert!(text.contains("# UNIT qrtag_request_duration_seconds seconds\n"));
}

#[tokio::test]
async fn counters_move_exactly_with_the_traffic_sent() {
    let app = busy_app().await;
    let before = scrape(&app).await;
    let (redirects, misses, heads) = (7, 5, 3);
    for _ in 0..redirects {
        assert_eq!(app.get("/H83if").await.status(), 302);
    }
    for i in 0..misses {
        assert_eq!(app.get(&format!("/zz{i}")).await.status(), 404);
    }
    for _ in 0..heads {
        let r = app
            .client
            .head(app.url("/H83if"))
            .send()
            .await
            .expect("HEAD");
        assert_eq!(r.status(), 302);
    }
    let r = app
        .client
        .post(app.url("/H83if"))
        .send()
        .await
        .expect("POST");
    assert_eq!(r.status(), 501);
    for path in [
        "/qr/H83if.png",
        "/qr/H83if.svg",
        "/qr/H83if.svg",
        "/qr/H83if.pdf?template=L7163",
    ] {
        assert_eq!(app.admin_get(path).await.expect("qr").status(), 200);
    }
    let after = scrape(&app).await;
    let moved = |series: &str| after.get(series) - before.get(series);
    assert_eq!(
        moved(r#"qrtag_requests_total{method="GET",status="302"}"#),
        redirects as f64
    );
    assert_eq!(
        moved(r#"qrtag_requests_total{method="GET",status="404"}"#),
        misses as f64
    );
    assert_eq!(
        moved(r#"qrtag_requests_total{method="HEAD",status="302"}"#),
        heads as f64
    );
    assert_eq!(
        moved(r#"qrtag_requests_total{method="POST",status="501"}"#),
        1.0
    );
    let sent = (redirects + misses + heads + 1) as f64;
    assert_eq!(
        after.sum("qrtag_requests_total") - before.sum("qrtag_requests_total"),
        sent
    );
    assert_eq!(
        moved("qrtag_request_duration_seconds_count"),
        sent,
        "every request timed"
    );
    assert_eq!(
        moved(r#"qrtag_request_duration_seconds_bucket{le="+Inf"}"#),
        sent
    );
    assert!(moved("qrtag_request_duration_seconds_sum") > 0.0);
    assert_eq!(
        moved(r#"qrtag_qr_images_rendered_total{format="png"}"#),
        1.0
    );
    assert_eq!(
        moved(r#"qrtag_qr_images_rendered_total{format="svg"}"#),
        2.0
    );
    assert_eq!(
        moved(r#"qrtag_qr_images_rendered_total{format="pdf"}"#),
        1.0
    );

    // Every answered request is one access log line: once the flusher has
    // caught up, lines written equal requests counted, and the file holds them.
    let s = poll::until(WITHIN, "the access log to catch up", || async {
        let s = scrape(&app).await;
        (s.get("qrtag_access_log_lines_written_total") == s.sum("qrtag_requests_total"))
            .then_some(s)
    })
    .await;
    let log = std::fs::read_to_string(app.dir.path().join("access.log")).expect("access log");
    assert_eq!(
        log.lines().count() as f64,
        s.get("qrtag_access_log_lines_written_total")
    );
    assert_eq!(s.get("qrtag_access_log_lines_dropped_total"), 0.0);
    assert_eq!(s.get("qrtag_access_log_queued_bytes"), 0.0);
}

#[tokio::test]
async fn readyz_json_says_ready_with_counts() {
    let app = busy_app().await;
    let (status, r) = readyz_json(&app.client, app.admin).await;
    assert_eq!(status, 200);
    assert_eq!(r["status"], "ready");
    assert_eq!(r["reasons"], serde_json::json!([]));
    assert_eq!(r["links"], 1);
    assert_eq!(r["invalid_documents"], 0);
    assert_eq!(r["version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(r["node"], Value::Null);
    assert_eq!(r["store"]["up"], true);
    assert_eq!(r["store"]["follower_lag_seconds"], 0.0);
    assert!(r["store"]["seconds_since_last_change"].as_f64().is_some());
    assert_eq!(r["access_log"]["healthy"], true);
    assert!(
        r["access_log"]["target"]
            .as_str()
            .is_some_and(|t| t.ends_with("access.log"))
    );

    // Also by query, for a client that cannot set headers.
    let q = app.admin_get("/readyz?format=json").await.expect("readyz");
    assert_eq!(
        support::header(&q, "content-type"),
        Some("application/json")
    );
    // And plain text stays the default.
    let t = app.admin_get("/readyz").await.expect("readyz");
    let text = t.text().await.expect("body");
    assert!(
        text.starts_with("ready: 1 links, 0 invalid documents skipped\n"),
        "{text}"
    );
}

/// CouchDB settings for a server that never answers: a port just closed.
fn unreachable_couch(dir: &std::path::Path) -> qrtag::settings::Settings {
    let closed = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = closed.local_addr().expect("addr").port();
    drop(closed);
    let mut settings = test_settings(dir);
    settings.store = StoreSettings::CouchDb(CouchSettings::new(
        CouchUrl::parse(&format!("http://127.0.0.1:{port}")).expect("url"),
        CouchDbName::parse("links").expect("name"),
    ));
    settings.snapshot_file = Some(dir.join("links.snapshot"));
    settings
}

async fn start(
    settings: qrtag::settings::Settings,
) -> (std::net::SocketAddr, std::net::SocketAddr) {
    let app = Application::build(settings).await.expect("builds");
    let addrs = (app.public_addr(), app.admin_addr());
    tokio::spawn(app.run_until_stopped());
    addrs
}

#[tokio::test]
async fn readyz_json_is_503_until_links_load() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (_, admin) = start(unreachable_couch(dir.path())).await;
    let client = reqwest::Client::new();
    let (status, r) = readyz_json(&client, admin).await;
    assert_eq!(status, 503);
    assert_eq!(r["status"], "starting");
    assert_eq!(r["store"]["up"], false);
    assert!(r["reasons"][0].as_str().is_some(), "{r}");
    let s = scrape_at(&client, admin).await;
    assert_eq!(s.get("qrtag_ready"), 0.0);
    assert_eq!(s.get("qrtag_degraded"), 0.0, "not serving, so not degraded");
    assert_eq!(s.get("qrtag_store_up"), 0.0);
}

#[tokio::test]
async fn a_node_serving_its_snapshot_file_with_the_store_away_is_degraded_not_down() {
    let dir = tempfile::tempdir().expect("tempdir");
    let settings = unreachable_couch(dir.path());
    // The snapshot file a previous run against this database left behind.
    let identity = qrtag::store::open(&settings.store, qrtag::store::Access::Read)
        .expect("opens without connecting")
        .snapshot_identity();
    let previous = Snapshot::new();
    let doc = match serde_json::json!({"url": "https://example.com/kept"}) {
        Value::Object(m) => m,
        _ => unreachable!("an object literal"),
    };
    previous.apply(
        vec![Change::Upsert {
            key: "H83if".into(),
            doc,
        }],
        Some(serde_json::json!("7-abc")),
    );
    let path = settings.snapshot_file.clone().expect("a snapshot file");
    qrtag::store::saver::save(&path, &identity, &previous.load()).expect("save");

    let (public, admin) = start(settings).await;
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .expect("client");
    let r = poll::until(WITHIN, "readyz to say degraded", || async {
        let (status, r) = readyz_json(&client, admin).await;
        (status == 200 && r["status"] == "degraded" && r["store"]["reconnects"] != 0).then_some(r)
    })
    .await;
    assert_eq!(r["links"], 1);
    assert_eq!(r["store"]["up"], false);
    assert!(
        r["store"]["follower_lag_seconds"]
            .as_f64()
            .is_some_and(|s| s > 0.0)
    );
    assert!(
        r["reasons"][0]
            .as_str()
            .is_some_and(|why| why.contains("CouchDB")),
        "{r}"
    );
    // And it still answers scans from the snapshot.
    let scan = client
        .get(format!("http://{public}/H83if"))
        .send()
        .await
        .expect("scan");
    assert_eq!(scan.status(), 302);
    let s = scrape_at(&client, admin).await;
    assert_eq!(s.get("qrtag_ready"), 1.0);
    assert_eq!(s.get("qrtag_degraded"), 1.0);
    assert_eq!(s.get("qrtag_store_up"), 0.0);
    assert!(s.get("qrtag_store_reconnects_total") >= 1.0);
    assert!(s.get("qrtag_store_follower_lag_seconds") > 0.0);
}

#[tokio::test]
async fn the_node_name_shows_in_readyz_and_metrics_but_not_the_access_log() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut settings = test_settings(dir.path());
    settings.node_name = Some(NodeName::parse("edge-7").expect("a name"));
    let app = spawn_with(settings, dir).await;
    app.link("H83if", "https://example.com/whelans").await;
    app.wait_for_status("/H83if", 302).await;

    let (_, r) = readyz_json(&app.client, app.admin).await;
    assert_eq!(r["node"], "edge-7");
    let s = scrape(&app).await;
    assert_eq!(
        s.get(r#"qrtag_node_info{node="edge-7"}"#),
        1.0,
        "{}",
        s.text
    );
    let log = poll::until(WITHIN, "the scan's log line", || async {
        let log = std::fs::read_to_string(app.dir.path().join("access.log")).ok()?;
        log.contains("/H83if").then_some(log)
    })
    .await;
    assert!(!log.contains("edge-7"), "{log}");
}

#[tokio::test]
async fn qrtag_serve_takes_the_node_name_from_its_environment() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("qrtag.db");
    let srv = ServerProcess::spawn(
        &db,
        &[],
        &[("QRTAG_NODE_NAME", "dub-2"), ("QRTAG_LOG", "info")],
        false,
    )
    .await;
    let client = reqwest::Client::new();
    let (_, r) = poll::until(WITHIN, "links to load", || async {
        let (status, r) = readyz_json(&client, srv.admin).await;
        (status == 200).then_some((status, r))
    })
    .await;
    assert_eq!(r["node"], "dub-2");
    let startup = srv.stderr();
    assert!(
        startup
            .lines()
            .any(|l| l.contains("qrtag is serving") && l.contains("node=dub-2")),
        "{startup}"
    );
    srv.stop().await;
}

/// Metric names a PromQL expression refers to (ours and the process ones).
fn metric_names(expr: &str) -> Vec<String> {
    expr.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == ':'))
        .filter(|w| w.starts_with("qrtag_") || w.starts_with("process_"))
        .map(str::to_owned)
        .collect()
}

/// Every query in the dashboard: panel targets' `expr`, template variables' `query`.
fn exprs(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::Object(m) => {
            for (k, v) in m {
                match (k.as_str(), v) {
                    ("expr" | "query", Value::String(e)) => out.push(e.clone()),
                    _ => exprs(v, out),
                }
            }
        }
        Value::Array(a) => a.iter().for_each(|v| exprs(v, out)),
        _ => {}
    }
}

#[tokio::test]
async fn the_grafana_dashboard_queries_only_metrics_the_server_exports() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/deploy/grafana-dashboard.json");
    let dashboard: Value =
        serde_json::from_str(&std::fs::read_to_string(path).expect("dashboard file"))
            .expect("valid JSON");
    assert!(
        dashboard["__inputs"].as_array().is_some_and(|i| i
            .iter()
            .any(|i| i["name"] == "DS_PROMETHEUS" && i["pluginId"] == "prometheus")),
        "a Prometheus datasource input"
    );
    let mut all = Vec::new();
    exprs(&dashboard, &mut all);
    assert!(all.len() >= 8, "{} queries", all.len());

    let app = busy_app().await;
    let exported = scrape(&app).await.names();
    let mut used = BTreeSet::new();
    for e in &all {
        let names = metric_names(e);
        assert!(!names.is_empty(), "a query names no metric: {e}");
        used.extend(names);
    }
    let missing: Vec<_> = used.difference(&exported).collect();
    assert!(missing.is_empty(), "not exported: {missing:?}");
    for panel in dashboard["panels"].as_array().expect("panels") {
        if panel["type"] == "row" {
            continue;
        }
        assert_eq!(
            panel["datasource"]["uid"], "${DS_PROMETHEUS}",
            "panel {}",
            panel["title"]
        );
    }
}

/// `/` on the admin listener without the console lists what it serves
/// (issue 18: it was an empty 404).
#[tokio::test]
async fn the_admin_root_lists_its_endpoints() {
    let app = spawn_app().await;
    let r = app.admin_get("/").await.expect("answered");
    assert_eq!(r.status(), 200);
    assert_eq!(
        support::header(&r, "content-type"),
        Some("text/plain; charset=utf-8")
    );
    let body = r.text().await.expect("body");
    for endpoint in [
        "/healthz",
        "/readyz",
        "/metrics",
        "/qr/KEY.png|svg",
        "--console",
    ] {
        assert!(body.contains(endpoint), "{endpoint}: {body}");
    }
}
