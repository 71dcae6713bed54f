//! Several `qrtag serve` nodes on one CouchDB database, the scale-out shape
//! the deploy README describes: real processes (so a node can be stopped and
//! started the way a load balancer sees it), one shared tracking secret, an
//! access log each, and `qrtag stats` over all the logs.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use qrtag::tracking::id::TrackingId;
use serde_json::{Value, json};

use crate::harness::{Couch, PUBLIC_URL, TestApp, eventually, qrtag, stderr, stdout};
use crate::pouchdb::PouchDb;
use crate::process::ServerProcess;
use crate::proxy::CutProxy;
use crate::{PROPAGATION, RECOVERY, START};

/// `qrtag stats` counts only what a person scanned: a phone's User-Agent.
const PHONE: &str = "Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 \
                     (KHTML, like Gecko) Version/17.0 Mobile/15E148 Safari/604.1";

/// One node's files: its access log and snapshot file, as on its own machine.
struct NodeFiles {
    dir: PathBuf,
}

impl NodeFiles {
    fn new(root: &Path, name: &str) -> Self {
        let dir = root.join(name);
        std::fs::create_dir(&dir).expect("node directory");
        Self { dir }
    }

    /// `ServerProcess` writes the access log beside this (unused) database.
    fn db(&self) -> PathBuf {
        self.dir.join("unused.db")
    }

    fn access_log(&self) -> PathBuf {
        self.dir.join("access.log")
    }
}

/// Starts `qrtag serve` on CouchDB `url` as the node `files` describes, with
/// the tracking secret file every node shares; `extra` are further options.
async fn start_node(
    files: &NodeFiles,
    url: &str,
    secret: &Path,
    extra: &[&str],
) -> (ServerProcess, TestApp) {
    let snapshot = files.dir.join("links.snapshot");
    let secret = secret.to_str().expect("UTF-8 path");
    let snapshot = snapshot.to_str().expect("UTF-8 path");
    let mut args = vec!["--public-url", PUBLIC_URL, "--tracking-secret-file", secret];
    if !extra.contains(&"--no-snapshot-file") {
        args.extend(["--snapshot-file", snapshot]);
    }
    args.extend(extra);
    let env = [("QRTAG_COUCHDB_URL", url), ("QRTAG_COUCHDB_DB", "links")];
    let process = ServerProcess::spawn(&files.db(), &args, &env, false).await;
    let app = TestApp::at(process.public, process.admin);
    (process, app)
}

/// What one request got back.
struct Answer {
    status: u16,
    location: Option<String>,
    /// The tracking cookie's value (ID, `.`, MAC) the response set.
    cookie: Option<String>,
}

/// A request from a phone, carrying its tracking cookie when it has one.
async fn request(
    http: &reqwest::Client,
    method: reqwest::Method,
    url: String,
    cookie: Option<&str>,
) -> Answer {
    let mut req = http.request(method, url).header("user-agent", PHONE);
    if let Some(value) = cookie {
        req = req.header("cookie", format!("qrtag={value}"));
    }
    let resp = req.send().await.expect("the node answers");
    let header = |name: &str| {
        resp.headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    };
    let cookie = header("set-cookie").map(|c| {
        cookie::Cookie::parse(c)
            .expect("a valid Set-Cookie")
            .value()
            .to_owned()
    });
    Answer {
        status: resp.status().as_u16(),
        location: header("location"),
        cookie,
    }
}

/// [`request`] for `/key` on `node`.
async fn send(
    http: &reqwest::Client,
    node: &TestApp,
    method: &reqwest::Method,
    key: &str,
    cookie: Option<&str>,
) -> Answer {
    request(
        http,
        method.clone(),
        format!("{}/{key}", node.public),
        cookie,
    )
    .await
}

/// The tracking ID a cookie value (ID, `.`, MAC) carries, as the log has it.
fn tracking_id(cookie: &str) -> String {
    let id = cookie.get(..TrackingId::LEN).expect("an ID before the MAC");
    TrackingId::parse(id)
        .expect("a tracking ID")
        .as_str()
        .to_owned()
}

/// The per-key counts `qrtag stats` should report for the requests sent,
/// tallied from what each request got back.
#[derive(Default)]
struct Tally {
    lines: u64,
    keys: BTreeMap<String, Counts>,
}

#[derive(Default)]
struct Counts {
    scans: u64,
    scanners: BTreeSet<String>,
    head: u64,
    not_found: u64,
    requests: u64,
}

impl Tally {
    fn record(&mut self, key: &str, method: &reqwest::Method, answer: &Answer) {
        self.lines += 1;
        let counts = self.keys.entry(key.to_owned()).or_default();
        counts.requests += 1;
        match (method.as_str(), answer.status) {
            ("GET", 302) => {
                counts.scans += 1;
                let id = answer
                    .cookie
                    .as_deref()
                    .expect("every answer sets the cookie");
                counts.scanners.insert(tracking_id(id));
            }
            ("HEAD", _) => counts.head += 1,
            (_, 404) => counts.not_found += 1,
            _ => {}
        }
    }

    /// The report `qrtag stats --format json` gives for these counts.
    fn expected(&self) -> Value {
        let keys: Vec<Value> = self
            .keys
            .iter()
            .map(|(key, c)| {
                json!({"key": key, "scans": c.scans, "unique_scanners": c.scanners.len(),
                       "head": c.head, "not_found": c.not_found, "requests": c.requests})
            })
            .collect();
        json!({"lines_read": self.lines, "keys": keys})
    }
}

/// The fields of `qrtag stats --format json` that [`Tally::expected`] covers,
/// less the test's own probes: `wait_location` and friends send no
/// User-Agent, so stats counts them as bots and nothing else.
fn counted(report: &Value) -> Value {
    let count = |v: &Value, field: &str| v[field].as_u64().unwrap_or(u64::MAX);
    let mut keys: BTreeMap<String, Value> = BTreeMap::new();
    for k in report["keys"].as_array().expect("keys") {
        let key = k["key"].as_str().expect("key").to_owned();
        let c = json!({"key": key, "scans": k["scans"], "unique_scanners": k["unique_scanners"],
                       "head": k["head"], "not_found": k["not_found"],
                       "requests": count(k, "requests") - count(k, "bot")});
        keys.insert(key, c);
    }
    let keys: Vec<Value> = keys.into_values().collect();
    let probes = count(&report["total"], "bot");
    json!({"lines_read": count(report, "lines_read") - probes, "keys": keys})
}

/// Waits until every node redirects `key` to `want`; returns how long each took.
async fn wait_everywhere(nodes: &[&TestApp], key: &str, want: &str) -> Vec<Duration> {
    let started = Instant::now();
    let waits = nodes.iter().map(|node| async move {
        node.wait_location(key, Some(want), PROPAGATION).await;
        started.elapsed()
    });
    futures_util::future::join_all(waits).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_nodes_follow_one_database_and_their_logs_count_together() {
    let pouch = PouchDb::start().await;
    let couch = Couch::with_two_links(&pouch.url()).await;

    // The operator copies one secret file to every node.
    let root = tempfile::tempdir().expect("temporary directory");
    let secret = root.path().join("tracking-secret");
    std::fs::write(&secret, format!("{}\n", "5e".repeat(32))).expect("secret file");
    let files = ["a", "b", "c"].map(|name| NodeFiles::new(root.path(), name));
    // C reaches CouchDB through a proxy the test can cut, and keeps no
    // snapshot file: restarted while cut off, it has nothing to serve.
    let proxy = CutProxy::start(pouch.url().replace("http://", "")).await;
    let (a_process, a) = start_node(&files[0], &pouch.url(), &secret, &[]).await;
    let (b_process, b) = start_node(&files[1], &pouch.url(), &secret, &[]).await;
    let (c_process, c) =
        start_node(&files[2], &proxy.url(), &secret, &["--no-snapshot-file"]).await;
    for node in [&a, &b, &c] {
        node.wait_ready(START).await;
    }

    // An edit made with plain HTTP reaches all three within the promise.
    couch
        .put("H83if", json!({"url": "https://a.example/two"}))
        .await;
    let took = wait_everywhere(&[&a, &b, &c], "H83if", "https://a.example/two").await;
    eprintln!("edit to served, nodes a, b, c: {took:?}");

    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .expect("HTTP client");
    let mut tally = Tally::default();
    let (get, head) = (reqwest::Method::GET, reqwest::Method::HEAD);

    // Phone 1 is first seen on A, then scans on B with A's cookie: the
    // shared secret makes B echo it, so both log one tracking ID.
    let first = send(&http, &a, &get, "H83if", None).await;
    tally.record("H83if", &get, &first);
    let phone1 = first.cookie.clone().expect("a new cookie");
    for node in [&a, &b, &b] {
        let answer = send(&http, node, &get, "H83if", Some(&phone1)).await;
        assert_eq!(answer.status, 302);
        assert_eq!(answer.cookie.as_deref(), Some(phone1.as_str()), "echoed");
        tally.record("H83if", &get, &answer);
    }
    // Phone 2 only ever meets C.
    let answer = send(&http, &c, &get, "other", None).await;
    let phone2 = answer.cookie.clone().expect("a new cookie");
    assert_ne!(tracking_id(&phone1), tracking_id(&phone2));
    tally.record("other", &get, &answer);
    let answer = send(&http, &c, &get, "H83if", Some(&phone2)).await;
    tally.record("H83if", &get, &answer);
    let answer = send(&http, &b, &head, "H83if", Some(&phone1)).await;
    assert_eq!(answer.status, 302);
    tally.record("H83if", &head, &answer);
    let answer = send(&http, &a, &get, "nope1", Some(&phone1)).await;
    assert_eq!(answer.status, 404);
    tally.record("nope1", &get, &answer);

    // C stops (gracefully, as a deploy would) while phone 1 keeps scanning
    // on A and B, and an edit is made: A and B answer every request and
    // serve the edit within the promise.
    let stopping = Arc::new(AtomicBool::new(false));
    let scans_meanwhile = {
        let (http, stopping) = (http.clone(), Arc::clone(&stopping));
        let urls = [&a, &b].map(|n| format!("{}/H83if", n.public));
        let phone1 = phone1.clone();
        tokio::spawn(async move {
            let mut answers = Vec::new();
            for url in urls.iter().cycle() {
                if stopping.load(Ordering::Relaxed) && answers.len() >= 10 {
                    break;
                }
                let answer = request(&http, reqwest::Method::GET, url.clone(), Some(&phone1)).await;
                answers.push(answer);
            }
            answers
        })
    };
    c_process.stop().await;
    couch
        .put("H83if", json!({"url": "https://a.example/three"}))
        .await;
    let took = wait_everywhere(&[&a, &b], "H83if", "https://a.example/three").await;
    eprintln!("edit to served with c down, nodes a, b: {took:?}");
    stopping.store(true, Ordering::Relaxed);
    let answers = scans_meanwhile.await.expect("the scanning task");
    for answer in &answers {
        assert_eq!(answer.status, 302);
        assert!(
            matches!(
                answer.location.as_deref(),
                Some("https://a.example/two" | "https://a.example/three")
            ),
            "{:?}",
            answer.location
        );
        tally.record("H83if", &get, answer);
    }
    for node in [&a, &b] {
        assert_eq!(node.readyz().await.0, 200);
    }

    // C comes back while it cannot reach CouchDB: with nothing loaded it
    // tells the load balancer so (503 on /readyz) and asks phones to retry
    // (503), never a 404; the others are not affected.
    proxy.cut();
    let (c_process, c) =
        start_node(&files[2], &proxy.url(), &secret, &["--no-snapshot-file"]).await;
    eventually(
        RECOVERY,
        "C's /readyz names the unreachable store",
        || async {
            let (status, body) = c.readyz().await;
            assert_eq!(status, 503, "ready with nothing loaded: {body}");
            body.contains("unreachable").then_some(())
        },
    )
    .await;
    let answer = send(&http, &c, &get, "H83if", Some(&phone1)).await;
    assert_eq!(answer.status, 503);
    tally.record("H83if", &get, &answer);
    assert_eq!(
        a.location("H83if").await.as_deref(),
        Some("https://a.example/three")
    );
    tally.record(
        "H83if",
        &get,
        &send(&http, &a, &get, "H83if", Some(&phone1)).await,
    );
    proxy.restore();
    c.wait_ready(RECOVERY).await;
    let answer = send(&http, &c, &get, "H83if", Some(&phone1)).await;
    assert_eq!(
        (answer.status, answer.location.as_deref()),
        (302, Some("https://a.example/three"))
    );
    tally.record("H83if", &get, &answer);

    // Stopped gracefully, every node has written every line it answered.
    for process in [a_process, b_process, c_process] {
        process.stop().await;
    }
    let logs: Vec<String> = files
        .iter()
        .map(|f| f.access_log().to_str().expect("UTF-8 path").to_owned())
        .collect();
    let mut args = vec!["stats", "--format", "json"];
    args.extend(logs.iter().map(String::as_str));
    let out = qrtag(&args, &[]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let report: Value = serde_json::from_str(&stdout(&out)).expect("JSON");
    assert_eq!(counted(&report), tally.expected(), "{report:#}");
    // Phone 1 scanned on all three nodes and phone 2 on one: two scanners.
    let h83if = report["keys"]
        .as_array()
        .and_then(|keys| keys.iter().find(|k| k["key"] == "H83if"))
        .expect("H83if counted");
    assert_eq!(h83if["unique_scanners"], 2, "{h83if}");
}
