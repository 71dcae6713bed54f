//! `qrtag setup-clickhouse --cluster` (issue 38) on a real three-shard
//! ClickHouse 18.16 cluster: three servers on free loopback ports naming
//! each other in `remote_servers`, each with its `shard` and `replica`
//! macros, coordinated by a real ZooKeeper (`support/zookeeper.rs`).

#[path = "support/clickhouse.rs"]
mod clickhouse;
mod support;
#[path = "support/zookeeper.rs"]
mod zookeeper;

use clickhouse::{ClickHouse, Ports};
use zookeeper::ZooKeeper;

const IPHONE: &str = "Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.0 Mobile/15E148 Safari/604.1";
const ANDROID: &str = "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Mobile Safari/537.36";

fn text(out: &[u8]) -> String {
    String::from_utf8_lossy(out).into_owned()
}

/// The `remote_servers`, `zookeeper` and `macros` of node `n` (0-based)
/// of a cluster `three` of one replica a shard.
fn cluster_config(all: &[Ports], n: usize, zk: u16) -> String {
    let shards: String = all
        .iter()
        .map(|p| {
            format!(
                "<shard><replica><host>127.0.0.1</host><port>{}</port></replica></shard>",
                p.tcp
            )
        })
        .collect();
    format!(
        "<remote_servers><three>{shards}</three></remote_servers>\n\
         <zookeeper><node><host>127.0.0.1</host><port>{zk}</port></node></zookeeper>\n\
         <macros><shard>0{}</shard><replica>node{}</replica></macros>\n\
         <distributed_ddl><path>/clickhouse/task_queue/ddl</path></distributed_ddl>",
        n + 1,
        n + 1
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_three_shard_cluster_counts_a_log_loaded_twice_once() {
    if !clickhouse::available() || !zookeeper::available() {
        return;
    }
    let app = support::spawn_app().await;
    let zk = ZooKeeper::start(&app.dir.path().join("zk")).await;
    let ports: Vec<Ports> = (0..3).map(|_| Ports::free()).collect();
    let mut nodes = Vec::new();
    for n in 0..3 {
        let dir = app.dir.path().join(format!("ch{n}"));
        nodes.push(
            ClickHouse::start_with(&dir, ports[n], &cluster_config(&ports, n, zk.port)).await,
        );
    }

    let out = app.cli(&[
        "setup-clickhouse",
        "--clickhouse",
        &nodes[0].url("qt"),
        "--cluster",
        "three",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let said = text(&out.stdout);
    assert!(
        said.contains("(cluster three)") && said.contains("schema version 3: created"),
        "{said}"
    );
    for node in &nodes {
        assert_eq!(
            node.must("SELECT name, engine FROM system.tables WHERE database = 'qt' ORDER BY name FORMAT TSV")
                .await,
            "link_days\tDistributed\nlink_days_local\tReplicatedAggregatingMergeTree\n\
             link_days_mv\tMaterializedView\nlink_shares\tDistributed\nlink_shares_local\tReplicatedAggregatingMergeTree\n\
             link_shares_mv\tMaterializedView\nscans\tDistributed\nscans_local\tReplicatedReplacingMergeTree\n\
             schema_version\tReplicatedMergeTree\n",
            "every node has the schema, made on the first"
        );
    }
    // The version is replicated to every node: the third answers it.
    let again = app.cli(&[
        "setup-clickhouse",
        "--clickhouse",
        &nodes[2].url("qt"),
        "--cluster",
        "three",
    ]);
    assert!(again.status.success(), "{}", text(&again.stderr));
    assert!(
        text(&again.stdout).contains("schema version 3: already current"),
        "{}",
        text(&again.stdout)
    );

    // Traffic: 12 links, scanned by several phones, some twice.
    for i in 0..12 {
        app.link(
            &format!("pos{i:02}"),
            &format!("https://example.com/poster/{i}"),
        )
        .await;
    }
    for i in 0..12 {
        app.wait_for_status(&format!("/pos{i:02}"), 302).await;
    }
    for round in 0..5 {
        for i in 0..12 {
            let ua = if (i + round) % 2 == 0 {
                IPHONE
            } else {
                ANDROID
            };
            app.client
                .get(app.url(&format!("/pos{i:02}")))
                .header("user-agent", ua)
                .send()
                .await
                .expect("scan");
        }
    }
    let log = app.dir.path().join("access.log");
    let lines = || std::fs::read_to_string(&log).unwrap_or_default();
    let scans = || lines().lines().filter(|l| l.contains(" 302 ")).count();
    support::eventually(std::time::Duration::from_secs(10), || async {
        scans() >= 72
    })
    .await;
    let copy = app.dir.path().join("copy.log");
    std::fs::write(&copy, lines()).unwrap();
    let line_count = lines().lines().count();
    let out = app.cli(&["stats", "--format", "json", copy.to_str().unwrap()]);
    assert!(out.status.success(), "{out:?}");
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();

    // Loaded twice, through two different nodes.
    for node in [&nodes[1], &nodes[2]] {
        let out = app.cli(&[
            "stats",
            "--load-into",
            &node.url("qt"),
            "--node-name",
            "edge-1",
            copy.to_str().unwrap(),
        ]);
        assert!(out.status.success(), "{}", text(&out.stderr));
    }

    let mut on_shards = 0;
    for (n, node) in nodes.iter().enumerate() {
        let here: usize = node
            .must("SELECT count() FROM qt.scans_local FINAL")
            .await
            .trim()
            .parse()
            .unwrap();
        assert!(here > 0, "shard {n} holds none of {line_count} rows");
        on_shards += here;
    }
    assert_eq!(on_shards, line_count, "each line on one shard, once");
    assert_eq!(
        nodes[0].must("SELECT count() FROM qt.scans FINAL").await,
        format!("{line_count}\n")
    );
    for entry in report["keys"].as_array().expect("keys") {
        let key = entry["key"].as_str().unwrap();
        let got = nodes[0]
            .must(&format!(
                "SELECT uniqExactMerge(requests), uniqExactIfMerge(scans), \
                 uniqExactIfMerge(scanners) FROM qt.link_days WHERE link = '{key}' FORMAT TSV"
            ))
            .await;
        let want = format!(
            "{}\t{}\t{}\n",
            entry["requests"], entry["scans"], entry["unique_scanners"]
        );
        assert_eq!(got, want, "{key}: {entry}");
    }

    // A database made for one server is not joined to the cluster, nor the
    // cluster's taken for one server's: one line each, exit 2.
    let solo = app.cli(&["setup-clickhouse", "--clickhouse", &nodes[0].url("solo")]);
    assert!(solo.status.success(), "{}", text(&solo.stderr));
    for (url, cluster, want) in [
        (
            nodes[0].url("solo"),
            true,
            "database solo holds qrtag's schema for one server, not for cluster three",
        ),
        (
            nodes[0].url("qt"),
            false,
            "database qt holds qrtag's schema for a cluster, not for one server",
        ),
    ] {
        let mut args = vec!["setup-clickhouse", "--clickhouse", &url];
        if cluster {
            args.extend(["--cluster", "three"]);
        }
        let out = app.cli(&args);
        assert_eq!(out.status.code(), Some(2), "{out:?}");
        let err = text(&out.stderr);
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains(want), "{err}");
    }
    let bad = app.cli(&[
        "setup-clickhouse",
        "--clickhouse",
        &nodes[0].url("qt"),
        "--cluster",
        "a-b",
    ]);
    assert_eq!(bad.status.code(), Some(2), "{bad:?}");
    assert!(
        text(&bad.stderr).contains("not a cluster name"),
        "{}",
        text(&bad.stderr)
    );
}
