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
/// of a cluster `three` of one replica a shard. `internal_replication`,
/// as ClickHouse's guide sets it for `Replicated*` tables behind a
/// `Distributed` one: 18.16 refuses an `ALTER … ON CLUSTER` of such a
/// table (the upgrade's) without it.
fn cluster_config(all: &[Ports], n: usize, zk: u16) -> String {
    let shards: String = all
        .iter()
        .map(|p| {
            format!(
                "<shard><internal_replication>true</internal_replication>\
                 <replica><host>127.0.0.1</host><port>{}</port></replica></shard>",
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
            ClickHouse::start_with(&dir, ports[n].clone(), &cluster_config(&ports, n, zk.port))
                .await,
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
        said.contains("(cluster three)") && said.contains("schema version 6: created"),
        "{said}"
    );
    for node in &nodes {
        assert_eq!(
            node.must("SELECT name, engine FROM system.tables WHERE database = 'qt' ORDER BY name FORMAT TSV")
                .await,
            "busy_days\tReplicatedReplacingMergeTree\nday_totals\tReplicatedReplacingMergeTree\n\
             link_counts\tReplicatedReplacingMergeTree\nlink_days\tDistributed\nlink_days_local\tReplicatedAggregatingMergeTree\n\
             link_days_mv\tMaterializedView\nlink_destinations\tDistributed\n\
             link_destinations_local\tReplicatedAggregatingMergeTree\nlink_destinations_mv\tMaterializedView\n\
             link_scanners\tDistributed\nlink_scanners_local\tReplicatedAggregatingMergeTree\nlink_scanners_mv\tMaterializedView\n\
             link_shares\tDistributed\nlink_shares_local\tReplicatedAggregatingMergeTree\n\
             link_shares_mv\tMaterializedView\nrolled_days\tReplicatedReplacingMergeTree\nscans\tDistributed\nscans_local\tReplicatedReplacingMergeTree\n\
             schema_version\tReplicatedMergeTree\nwindow_totals\tReplicatedMergeTree\nwindows\tReplicatedMergeTree\n",
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
        text(&again.stdout).contains("schema version 6: already current"),
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

    // A back-fill of a closed day is rolled up (`clickhouse::rollup`) into
    // the tables every node holds whole: 120 scans of one link, spread
    // over the shards, so the roll keeps the link's day as its own counts
    // too (`clickhouse::busy`).
    let old_day = chrono::Utc::now().date_naive() - chrono::Days::new(3);
    let old = app.dir.path().join("old.log");
    let busy: String = (0..120)
        .map(|i| {
            format!(
                "{}12{:02}{:02}.0 192.0.2.1 - Mozilla%2F5.0%20%28iPhone%3B%20CPU%20iPhone%20OS%2017_0%20like%20Mac%20OS%20X%29 \
                 /pos00 302 https://example.com/poster/0 GET -\n",
                old_day.format("%Y%m%d"),
                i / 60,
                i % 60
            )
        })
        .collect();
    std::fs::write(&old, busy).unwrap();
    let out = app.cli(&[
        "stats",
        "--load-into",
        &nodes[1].url("qt"),
        old.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("1 closed day rolled up again"),
        "{}",
        text(&out.stdout)
    );
    // And the periods' windows (`clickhouse::windows`) summed from it, on
    // every node.
    assert!(
        text(&out.stdout).contains("4 periods summed again"),
        "{}",
        text(&out.stdout)
    );
    for node in &nodes {
        support::eventually(std::time::Duration::from_secs(20), || async {
            node.query("SELECT days, link, scans FROM qt.window_totals ORDER BY days FORMAT TSV")
                .await
                .as_deref()
                == Ok("6\tpos00\t120\n29\tpos00\t120\n89\tpos00\t120\n364\tpos00\t120\n")
                && node
                    .query("SELECT count(), sum(links) FROM qt.windows FORMAT TSV")
                    .await
                    .as_deref()
                    == Ok("4\t4\n")
        })
        .await;
    }
    for node in &nodes {
        let sql = format!(
            "SELECT r.scans, t.value, t.scans FROM qt.rolled_days AS r \
             ANY INNER JOIN (SELECT day, value, scans FROM qt.day_totals WHERE kind = 'link') AS t \
             USING day WHERE day = '{old_day}' FORMAT TSV"
        );
        support::eventually(std::time::Duration::from_secs(20), || async {
            node.query(&sql).await.as_deref() == Ok("120\tpos00\t120\n")
        })
        .await;
        // Its own counts, summed from every shard's states.
        let busy = format!(
            "SELECT b.link, c.value, c.n FROM qt.busy_days AS b ANY INNER JOIN \
             (SELECT link, day, value, n FROM qt.link_counts FINAL WHERE kind = 'total' \
             AND value = 'scans') AS c USING link, day WHERE day = '{old_day}' FORMAT TSV"
        );
        support::eventually(std::time::Duration::from_secs(20), || async {
            node.query(&busy).await.as_deref() == Ok("pos00\tscans\t120\n")
        })
        .await;
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

    // Schema version 3 (issue 38): a version-2 database on the cluster is
    // upgraded in place, its rows the default domain's, its counts kept
    // and its breakdowns filled, read across the shards.
    for statement in version_2_cluster("old") {
        nodes[0].must(&statement).await;
    }
    for (i, (link, day, device)) in [
        ("a", "2026-10-05", "phone"),
        ("a", "2026-11-27", "tablet"),
        ("a", "2026-11-27", "phone"),
        ("b", "2026-11-27", "phone"),
        ("b", "2026-11-28", "desktop"),
        ("a", "2026-11-28", "phone"),
    ]
    .iter()
    .enumerate()
    {
        nodes[i % 3]
            .must(&format!(
                "INSERT INTO old.scans (node, log_id, line_offset, time, day, link, scan, tracking, device, location) \
                 VALUES ('e', 9, {i}, '{day} 10:00:00', '{day}', '{link}', 1, 'id{i}', '{device}', 'https://x.example/{link}')"
            ))
            .await;
    }
    support::eventually(std::time::Duration::from_secs(20), || async {
        nodes[0]
            .query("SELECT count() FROM old.scans")
            .await
            .as_deref()
            == Ok("6\n")
    })
    .await;
    let out = app.cli(&[
        "--domain",
        "0x1f.ie",
        "setup-clickhouse",
        "--clickhouse",
        &nodes[0].url("old"),
        "--cluster",
        "three",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("schema version 6: upgraded from 2"),
        "{}",
        text(&out.stdout)
    );
    for node in &nodes {
        assert_eq!(
            node.must(
                "SELECT domain, link, uniqExactIfMerge(scans), uniqExactIfMerge(scanners) \
                 FROM old.link_days GROUP BY domain, link ORDER BY link FORMAT TSV"
            )
            .await,
            "0x1f.ie\ta\t4\t4\n0x1f.ie\tb\t2\t2\n",
            "every node reads the counts it had, under the domain"
        );
        assert_eq!(
            node.must(
                "SELECT value, uniqExactMerge(scans) FROM old.link_shares \
                 WHERE domain = '0x1f.ie' AND link = 'a' AND dimension = 'device' \
                 GROUP BY value ORDER BY value FORMAT TSV"
            )
            .await,
            "phone\t3\ntablet\t1\n"
        );
        // Version 4: the destinations of the rows already there.
        assert_eq!(
            node.must(
                "SELECT link, location, uniqExactMerge(scans) FROM old.link_destinations \
                 WHERE domain = '0x1f.ie' GROUP BY link, location ORDER BY link FORMAT TSV"
            )
            .await,
            "a\thttps://x.example/a\t4\nb\thttps://x.example/b\t2\n"
        );
    }
}

/// Version 2's schema on the cluster as `setup-clickhouse --cluster` made
/// it before version 3 (`5c45642`).
fn version_2_cluster(db: &str) -> Vec<String> {
    use qrtag::clickhouse::schema::{LINK_DAYS_V2_COLUMNS, VERSION_COLUMNS, scans_v2_columns};
    let cols = |c: &[(&str, &str)]| {
        c.iter()
            .map(|(n, t)| format!("{n} {t}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let on = " ON CLUSTER three";
    vec![
        format!("CREATE DATABASE IF NOT EXISTS {db}{on}"),
        format!(
            "CREATE TABLE {db}.schema_version{on} ({}) ENGINE = \
             ReplicatedMergeTree('/clickhouse/qrtag/{db}/schema_version', '{{shard}}-{{replica}}') ORDER BY version",
            cols(VERSION_COLUMNS)
        ),
        format!(
            "CREATE TABLE {db}.scans_local{on} ({}) ENGINE = \
             ReplicatedReplacingMergeTree('/clickhouse/tables/{{shard}}/{db}/scans_local', '{{replica}}') \
             PARTITION BY toYYYYMM(day) ORDER BY (node, log_id, line_offset)",
            cols(scans_v2_columns())
        ),
        format!(
            "CREATE TABLE {db}.scans{on} ({}) ENGINE = \
             Distributed(three, {db}, scans_local, cityHash64(node, log_id, line_offset))",
            cols(scans_v2_columns())
        ),
        format!(
            "CREATE TABLE {db}.link_days_local{on} ({}) ENGINE = \
             ReplicatedAggregatingMergeTree('/clickhouse/tables/{{shard}}/{db}/link_days_local', '{{replica}}') \
             PARTITION BY toYYYYMM(day) ORDER BY (link, day)",
            cols(LINK_DAYS_V2_COLUMNS)
        ),
        format!(
            "CREATE MATERIALIZED VIEW {db}.link_days_mv{on} TO {db}.link_days_local AS SELECT \
             link, day, \
             uniqExactState(cityHash64(node, log_id, line_offset)) AS requests, \
             uniqExactIfState(cityHash64(node, log_id, line_offset), scan = 1) AS scans, \
             uniqExactIfState(cityHash64(node, log_id, line_offset), fallback_scan = 1) AS fallback, \
             uniqExactIfState(cityHash64(node, log_id, line_offset), bot = 1) AS bots, \
             uniqExactIfState(tracking, scan = 1 AND tracking != '') AS scanners, \
             uniqExactIfState(cityHash64(node, log_id, line_offset), method = 'HEAD') AS heads, \
             uniqExactIfState(cityHash64(node, log_id, line_offset), status = 404) AS not_found \
             FROM {db}.scans_local GROUP BY link, day"
        ),
        format!(
            "CREATE TABLE {db}.link_days{on} ({}) ENGINE = Distributed(three, {db}, link_days_local)",
            cols(LINK_DAYS_V2_COLUMNS)
        ),
        format!("INSERT INTO {db}.schema_version VALUES (2, now())"),
    ]
}
