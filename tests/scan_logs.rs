//! Every node's scans on one console (issue 21): three real `qrtag serve`
//! nodes on one SQLite database, each writing its own access log into the
//! directory a central rsyslog would fill (`nodes/NAME.log`); the first is
//! also the console host, following `--scan-log 'nodes/*'`. One node
//! starts only after the console has caught up (a new file picked up while
//! running), one log is rotated mid-traffic. The console's numbers, read
//! over HTTP logged in, must equal `qrtag stats` over the same files, and
//! both the traffic the test sent; then a restart from the checkpoint must
//! give the same numbers again.

mod support;

#[path = "support/rsyslog.rs"]
mod rsyslog;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::Duration;

use rsyslog::Rsyslogd;
use serde_json::Value;
use support::console::{logged_in, set_password};
use support::process::ServerProcess;
use support::{init_db, poll, qrtag_bin, qrtag_cmd};

const IPHONE: &str = "Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.0 Mobile/15E148 Safari/604.1";
const GOOGLEBOT: &str = "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)";
const PASSWORD: &str = "three-nodes-one-console";
const KEYS: [&str; 3] = ["poster", "flyer", "menu"];
const WITHIN: Duration = Duration::from_secs(20);

struct Cluster {
    dir: tempfile::TempDir,
}

impl Cluster {
    /// A fresh database with the links `KEYS` and a console password, and
    /// an empty `nodes/`.
    fn new() -> Cluster {
        let cluster = Cluster {
            dir: tempfile::tempdir().expect("tempdir"),
        };
        std::fs::create_dir(cluster.nodes()).expect("nodes");
        init_db(&cluster.db());
        for key in KEYS {
            let out = qrtag_cmd(
                &cluster.db(),
                &["new", "https://example.com/", "--key", key],
            );
            assert!(out.status.success(), "{out:?}");
        }
        set_password(&cluster.db(), PASSWORD);
        cluster
    }

    fn db(&self) -> PathBuf {
        self.dir.path().join("qrtag.db")
    }

    fn nodes(&self) -> PathBuf {
        self.dir.path().join("nodes")
    }

    fn log(&self, node: &str) -> PathBuf {
        self.nodes().join(format!("{node}.log"))
    }

    /// One node: its own log, no snapshot file (the three share the
    /// database), the shared tracking secret beside the database.
    async fn node(&self, name: &str, extra: &[&str]) -> ServerProcess {
        self.node_logging_to(&self.log(name), extra).await
    }

    /// A node writing its access log to `log`.
    async fn node_logging_to(&self, log: &Path, extra: &[&str]) -> ServerProcess {
        let mut args = vec![
            "--access-log",
            log.to_str().expect("UTF-8"),
            "--no-snapshot-file",
        ];
        args.extend(extra);
        let node = ServerProcess::spawn(&self.db(), &args, &[], false).await;
        // Ready (links loaded) on the admin listener, which logs nothing.
        let http = reqwest::Client::new();
        let readyz = node.admin_url("/readyz");
        poll::until(WITHIN, "the node is ready", || async {
            let res = http.get(&readyz).send().await.ok()?;
            (res.status() == 200).then_some(())
        })
        .await;
        node
    }

    /// The console host: node `a`, following every node's log.
    async fn console_host(&self) -> ServerProcess {
        // `*`, not `*.log`: rotations and the checkpoint match too, and
        // must still count once.
        let pattern = format!("{}/*", self.nodes().display());
        self.node("a", &["--console", "--scan-log", pattern.as_str()])
            .await
    }
}

/// What the test sent that `qrtag stats` counts: scans and scanners per key.
#[derive(Default)]
struct Sent {
    scans: BTreeMap<&'static str, u64>,
    scanners: BTreeMap<&'static str, BTreeSet<String>>,
}

/// One phone's scan of `key` on `node`, keeping the cookie the node sets.
async fn scan(
    http: &reqwest::Client,
    node: &ServerProcess,
    key: &'static str,
    cookie: &mut Option<String>,
    sent: &mut Sent,
) {
    let mut req = http
        .get(node.url(&format!("/{key}")))
        .header("user-agent", IPHONE);
    if let Some(c) = cookie.as_deref() {
        req = req.header("cookie", format!("qrtag={c}"));
    }
    let res = req.send().await.expect("scan");
    assert_eq!(res.status(), 302, "{key}");
    if let Some(set) = res.headers().get("set-cookie") {
        let set = set.to_str().expect("ASCII");
        let value = cookie::Cookie::parse(set)
            .expect("cookie")
            .value()
            .to_owned();
        *cookie = Some(value);
    }
    let id = cookie.as_deref().expect("a cookie")[..19].to_owned();
    *sent.scans.entry(key).or_default() += 1;
    sent.scanners.entry(key).or_default().insert(id);
}

/// Traffic that is not scans: a crawler, a HEAD, an unknown key.
async fn noise(http: &reqwest::Client, node: &ServerProcess) {
    for (method, path, agent, status) in [
        (reqwest::Method::GET, "/poster", GOOGLEBOT, 302),
        (reqwest::Method::HEAD, "/menu", IPHONE, 302),
        (reqwest::Method::GET, "/nope1", IPHONE, 404),
    ] {
        let res = http
            .request(method, node.url(path))
            .header("user-agent", agent)
            .send()
            .await
            .expect("request");
        assert_eq!(res.status(), status, "{path}");
    }
}

/// The console host's checkpoint (`.a.log.scan-index`) is no log.
fn is_hidden(p: &Path) -> bool {
    p.file_name()
        .is_some_and(|n| n.to_string_lossy().starts_with('.'))
}

/// Lines in all logs (rotations included) so far.
fn lines_logged(dir: &Path) -> usize {
    std::fs::read_dir(dir)
        .expect("nodes")
        .map(|e| e.expect("entry").path())
        .filter(|p| !is_hidden(p))
        .map(|p| std::fs::read_to_string(&p).expect("log").lines().count())
        .sum()
}

/// `qrtag stats --format json` over every file in `nodes/`: per key (scans,
/// unique scanners), and the total requests.
fn stats(cluster: &Cluster) -> (BTreeMap<String, (u64, u64)>, u64) {
    let mut files: Vec<PathBuf> = std::fs::read_dir(cluster.nodes())
        .expect("nodes")
        .map(|e| e.expect("entry").path())
        .filter(|p| !is_hidden(p))
        .collect();
    files.sort();
    let out = qrtag_bin()
        .arg("--db")
        .arg(cluster.db())
        .args(["stats", "--format", "json"])
        .args(&files)
        .output()
        .expect("qrtag stats");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let keys = report["keys"]
        .as_array()
        .expect("keys")
        .iter()
        .map(|k| {
            (
                k["key"].as_str().expect("key").to_owned(),
                (
                    k["scans"].as_u64().expect("scans"),
                    k["unique_scanners"].as_u64().expect("unique"),
                ),
            )
        })
        .collect();
    (keys, report["total"]["requests"].as_u64().expect("total"))
}

/// A logged-in console session on `host`.
struct Console {
    http: reqwest::Client,
    base: String,
}

impl Console {
    async fn login(host: &ServerProcess) -> Console {
        let base = format!("http://{}/console", host.admin);
        let http = logged_in(&base, PASSWORD).await;
        Console { http, base }
    }

    async fn page(&self, path: &str) -> String {
        let res = self
            .http
            .get(format!("{}{path}", self.base))
            .send()
            .await
            .expect("page");
        assert_eq!(res.status(), 200, "{path}");
        res.text().await.expect("body")
    }

    /// A link's (scans, unique scanners) on its page, `None` while the
    /// index is still catching up.
    async fn link_scans(&self, key: &str) -> Option<(u64, u64)> {
        let html = self.page(&format!("/link?key={key}")).await;
        let scans = attribute_after(&html, "data-scans=\"")?.parse().ok()?;
        let unique = attribute_after(&html, "data-unique=\"")?.parse().ok()?;
        Some((scans, unique))
    }

    /// Every link's numbers as the console shows them.
    async fn numbers(&self) -> Option<BTreeMap<String, (u64, u64)>> {
        let mut all = BTreeMap::new();
        for key in KEYS {
            all.insert(key.to_owned(), self.link_scans(key).await?);
        }
        Some(all)
    }
}

/// The value of the attribute whose opening (`name="`) is `before`.
fn attribute_after(html: &str, before: &str) -> Option<String> {
    let rest = &html[html.find(before)? + before.len()..];
    Some(rest[..rest.find('"')?].to_owned())
}

fn expected(sent: &Sent) -> BTreeMap<String, (u64, u64)> {
    KEYS.iter()
        .map(|k| {
            let scans = sent.scans.get(k).copied().unwrap_or(0);
            let unique = sent.scanners.get(k).map_or(0, |s| s.len() as u64);
            ((*k).to_owned(), (scans, unique))
        })
        .collect()
}

/// Waits until the console's numbers are `want`.
async fn console_shows(console: &Console, want: &BTreeMap<String, (u64, u64)>) {
    poll::until(WITHIN, &format!("the console shows {want:?}"), || async {
        (console.numbers().await.as_ref() == Some(want)).then_some(())
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_console_counts_every_nodes_scans_once_as_stats_does() {
    let cluster = Cluster::new();

    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .expect("client");
    let mut sent = Sent::default();
    let mut phones: Vec<Option<String>> = vec![None; 4];

    let a = cluster.console_host().await;
    let b = cluster.node("b", &[]).await;
    // Phones roam between nodes, keeping their cookies (one secret).
    for (i, key) in KEYS.iter().cycle().take(9).enumerate() {
        let node = if i % 2 == 0 { &a } else { &b };
        scan(&http, node, key, &mut phones[i % 3], &mut sent).await;
    }
    noise(&http, &a).await;
    let console = Console::login(&a).await;
    console_shows(&console, &expected(&sent)).await;

    // A node that joins later: its file appears while the console runs.
    let c = cluster.node("c", &[]).await;
    for key in ["poster", "menu", "poster"] {
        scan(&http, &c, key, &mut phones[3], &mut sent).await;
    }
    scan(&http, &c, "flyer", &mut phones[0], &mut sent).await;
    noise(&http, &c).await;

    // b's log rotated as logrotate does it (rename, SIGHUP).
    std::fs::rename(cluster.log("b"), cluster.nodes().join("b.log.1")).expect("rotate");
    b.signal("HUP");
    for key in KEYS {
        scan(&http, &b, key, &mut phones[1], &mut sent).await;
    }
    noise(&http, &b).await;

    let want = expected(&sent);
    console_shows(&console, &want).await;
    // Everything sent is on disk: 16 scans and 9 other requests.
    let total_sent: u64 = sent.scans.values().sum::<u64>() + 9;
    assert_eq!(total_sent, 25);
    poll::until(WITHIN, "every line on disk", || async {
        (lines_logged(&cluster.nodes()) == 25).then_some(())
    })
    .await;
    let (by_stats, requests) = stats(&cluster);
    assert_eq!(requests, total_sent);
    for key in KEYS {
        assert_eq!(by_stats.get(key), want.get(key), "stats for {key}");
    }
    assert_eq!(console.numbers().await.as_ref(), Some(&want));
    // The dashboard's busiest links agree too.
    let dashboard = console.page("/dashboard").await;
    for key in KEYS {
        let row = format!(r#"data-key="{key}""#);
        assert!(dashboard.contains(&row), "{key} on the dashboard");
    }

    // A restart resumes from the checkpoint of all three logs: same numbers.
    for node in [b, c] {
        node.stop().await;
    }
    a.stop().await;
    let checkpoint = cluster.nodes().join(".a.log.scan-index");
    assert!(checkpoint.exists(), "the checkpoint beside the host's log");
    let a = cluster.console_host().await;
    let console = Console::login(&a).await;
    console_shows(&console, &want).await;
    assert!(
        !a.stderr().contains("rebuilding"),
        "the checkpoint was used: {}",
        a.stderr()
    );
    a.stop().await;
}

/// A free loopback TCP port for the central rsyslogd.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port()
}

/// The README's way with Debian's rsyslog, run for real: three nodes, each
/// with its own rsyslogd running `deploy/rsyslog/qrtag-node.conf` (imfile
/// on the node's access log, forwarding over TCP), and a central rsyslogd
/// running `qrtag-central.conf`, writing `nodes/NODE.log` per node. The
/// first node is also the console host, following the README's pattern
/// over the central files. The central files must hold each node's log
/// byte for byte, and the console and `qrtag stats` over them must count
/// the traffic sent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_nodes_ship_through_rsyslog_to_one_console() {
    let cluster = Cluster::new();
    let root = cluster.dir.path().to_owned();
    let port = free_port();
    let mut central = Rsyslogd::start(
        &root.join("rsyslog-central"),
        None,
        &rsyslog::central_conf(&cluster.nodes(), port),
    );
    poll::until(WITHIN, "the central rsyslogd listens", || {
        let up = std::net::TcpStream::connect(("127.0.0.1", port)).is_ok();
        assert!(central.running(), "{}", central.report());
        std::future::ready(up.then_some(()))
    })
    .await;

    let names = ["node-a", "node-b", "node-c"];
    let access_log = |name: &str| root.join(name).join("access.log");
    for name in names {
        std::fs::create_dir(root.join(name)).expect("node directory");
    }
    // The README's pattern on the console host: the central files only.
    let pattern = format!("{}/*.log", cluster.nodes().display());
    let a = cluster
        .node_logging_to(
            &access_log("node-a"),
            &["--console", "--scan-log", pattern.as_str()],
        )
        .await;
    let b = cluster.node_logging_to(&access_log("node-b"), &[]).await;
    let c = cluster.node_logging_to(&access_log("node-c"), &[]).await;
    let mut shippers: Vec<Rsyslogd> = names
        .iter()
        .map(|name| {
            Rsyslogd::start(
                &root.join(format!("rsyslog-{name}")),
                Some(name),
                &rsyslog::node_conf(&access_log(name), port),
            )
        })
        .collect();

    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .expect("client");
    let mut sent = Sent::default();
    let mut phones: Vec<Option<String>> = vec![None; 4];
    let nodes = [&a, &b, &c];
    for (i, key) in KEYS.iter().cycle().take(11).enumerate() {
        scan(&http, nodes[i % 3], key, &mut phones[i % 4], &mut sent).await;
    }
    for node in nodes {
        noise(&http, node).await;
    }
    let total_sent: u64 = sent.scans.values().sum::<u64>() + 9;
    assert_eq!(total_sent, 20);

    // Each node's file on the central host is its access log, line for line.
    let shipped = |name: &str| {
        let here = std::fs::read(access_log(name)).unwrap_or_default();
        let there = std::fs::read(cluster.nodes().join(format!("{name}.log"))).unwrap_or_default();
        !here.is_empty() && here == there
    };
    poll::until(WITHIN, "every node's log on the central host", || {
        for r in shippers.iter_mut().chain(std::iter::once(&mut central)) {
            assert!(r.running(), "{}", r.report());
        }
        let all = names.iter().all(|n| shipped(n))
            && lines_logged(&cluster.nodes()) == total_sent as usize;
        std::future::ready(all.then_some(()))
    })
    .await;
    let mut files: Vec<String> = std::fs::read_dir(cluster.nodes())
        .expect("nodes")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    files.sort();
    assert_eq!(files, ["node-a.log", "node-b.log", "node-c.log"]);

    let want = expected(&sent);
    let (by_stats, requests) = stats(&cluster);
    assert_eq!(requests, total_sent);
    for key in KEYS {
        assert_eq!(by_stats.get(key), want.get(key), "stats for {key}");
    }
    let console = Console::login(&a).await;
    console_shows(&console, &want).await;
    drop(shippers);
    drop(central);
}
