//! Read-your-writes on the DIDComm listener: once a "shortened-url" reply
//! or an invalidation's ack is received, the public listener of the same
//! server already answers for it. Each scan is sent right after the reply,
//! with no sleep or retry between (issue 22).

use std::time::Instant;

use serde_json::json;

use crate::harness::*;
use crate::support::header;

/// Pairs of a write and the scan sent right after its reply.
const PAIRS: usize = 1000;

#[tokio::test]
async fn a_scan_right_after_the_reply_gets_the_new_link_and_the_invalidation() {
    let app = spawn_didcomm(|_| {}).await;
    let started = Instant::now();
    let mut shorts = Vec::with_capacity(PAIRS);
    let mut replies = Vec::with_capacity(PAIRS);
    for i in 0..PAIRS {
        let url = format!("https://example.com/invite/{i}");
        let asked = Instant::now();
        let reply = plain_v2(
            &app,
            request_v2(
                &format!("ryw-req-{i}"),
                json!({"url": url, "goal_code": "shorten"}),
            ),
        )
        .await;
        replies.push(asked.elapsed());
        let short = reply["body"]["shortened_url"]
            .as_str()
            .unwrap_or_else(|| panic!("a short URL in {reply}"))
            .to_owned();
        let key = key_of(&short);
        let r = app.get(&format!("/{key}")).await;
        assert_eq!(
            (r.status().as_u16(), header(&r, "location")),
            (302, Some(url.as_str())),
            "scan {i} of /{key}, sent right after the reply"
        );
        shorts.push((short, key));
    }
    let created = started.elapsed();
    for (i, (short, key)) in shorts.iter().enumerate() {
        let id = format!("ryw-inv-{i}");
        let inv = json!({"type": INVALIDATE, "id": id, "body": {"shortened_url": short}});
        let ack = plain_v2(&app, inv).await;
        assert_eq!(ack["ack"], json!([id]), "{ack}");
        let r = app.get(&format!("/{key}")).await;
        assert_eq!(
            r.status().as_u16(),
            404,
            "scan {i} of /{key}, sent right after the ack"
        );
    }
    replies.sort();
    eprintln!(
        "a create's reply: median {:?}, 99th percentile {:?}, slowest {:?}",
        replies[PAIRS / 2],
        replies[PAIRS * 99 / 100],
        replies[PAIRS - 1]
    );
    eprintln!(
        "{PAIRS} create-then-scan pairs in {created:?}, {PAIRS} invalidate-then-scan pairs in {:?}",
        started.elapsed() - created
    );
}
