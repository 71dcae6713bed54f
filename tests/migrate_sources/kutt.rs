//! Kutt: API v2 pages of at most 50 links, by `skip`.

use qrtag::migrate::kutt::KuttApi;
use qrtag::migrate::source::{Source, SourceLink};
use serde_json::{Value, json};

use crate::fake_api::{Answer, FakeApi, query};
use crate::{VecSink, quick, time};

pub const KEY: &str = "kutt-key-2";
pub const TOTAL: u64 = 120;

fn link(i: u64) -> Value {
    let mut v = json!({
        "id": format!("uuid-{i}"),
        "address": format!("k{i:03}"),
        "banned": false,
        "created_at": "2023-05-06T07:08:09.000Z",
        "updated_at": "2023-05-06T07:08:09.000Z",
        "password": false,
        "description": null,
        "expire_in": null,
        "target": format!("https://example.com/{i}"),
        "visit_count": i,
        "domain": null,
        "link": format!("https://kutt.it/k{i:03}"),
    });
    let special = match i {
        0 => json!({"address": "UPPER12", "description": "Poster, hall B",
            "target": "https://example.com/menü#top"}),
        1 => json!({"address": "a-b_c-d_e-f1", "domain": "go.example"}),
        2 => json!({"address": "has.dot"}),
        // SQLite's form: UTC without a zone.
        3 => json!({"expire_in": "2020-02-03 04:05:06"}),
        4 => json!({"password": true}),
        5 => json!({"expire_in": "2999-01-01T00:00:00.000Z"}),
        _ => json!({}),
    };
    if let (Some(v), Some(s)) = (v.as_object_mut(), special.as_object()) {
        for (k, x) in s {
            v.insert(k.clone(), x.clone());
        }
    }
    v
}

pub fn kutt(target: &str, times: usize) -> Answer {
    if !target.starts_with("/api/v2/links?") {
        return Answer::status(404);
    }
    let skip: u64 = query(target, "skip")
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let limit: u64 = query(target, "limit")
        .and_then(|s| s.parse().ok())
        .unwrap_or(10)
        .min(50);
    if skip == 50 && times == 0 {
        return Answer::rate_limited("1");
    }
    if skip == 100 && times == 0 {
        return Answer::status(503);
    }
    let data: Vec<Value> = (skip..(skip + limit).min(TOTAL)).map(link).collect();
    Answer::json(json!({"total": TOTAL, "limit": limit, "skip": skip, "data": data}))
}

#[tokio::test]
async fn kutt_api_reads_every_page_with_totals_and_refuses_passwords_open() {
    let fake = FakeApi::start("x-api-key", KEY, kutt);
    let mut source = KuttApi::with_retries(&fake.base, KEY, quick()).expect("source");
    let mut sink = VecSink::default();
    source.read(&mut sink).await.expect("read");
    assert_eq!(sink.links.len() as u64, TOTAL);
    assert_eq!(
        sink.links[0],
        SourceLink {
            code: "UPPER12".into(),
            url: "https://example.com/menü#top".into(),
            notes: Some("Poster, hall B".into()),
            created: Some(time("2023-05-06T07:08:09Z")),
            total_clicks: Some(0),
            ..SourceLink::default()
        }
    );
    assert_eq!(sink.links[1].code, "a-b_c-d_e-f1");
    assert_eq!(sink.links[1].domain.as_deref(), Some("go.example"));
    assert_eq!(sink.links[2].code, "has.dot", "kept as Kutt has it");
    assert_eq!(sink.links[3].expires, Some(time("2020-02-03T04:05:06Z")));
    assert!(sink.links[3].inactive, "expired");
    let locked = &sink.links[4];
    assert!(locked.inactive, "a password link is not opened to everyone");
    assert_eq!(locked.left_out.len(), 1);
    assert_eq!(locked.left_out[0].what, "password");
    assert!(!sink.links[5].inactive);
    assert_eq!(sink.links[5].expires, Some(time("2999-01-01T00:00:00Z")));
    for (i, l) in sink.links.iter().enumerate().skip(6) {
        assert_eq!(l.code, format!("k{i:03}"));
        assert_eq!(l.url, format!("https://example.com/{i}"));
        assert_eq!(l.total_clicks, Some(i as u64));
    }
    let requests = fake.requests();
    assert_eq!(
        requests,
        [
            "/api/v2/links?limit=50&skip=0",
            "/api/v2/links?limit=50&skip=50",
            "/api/v2/links?limit=50&skip=50",
            "/api/v2/links?limit=50&skip=100",
            "/api/v2/links?limit=50&skip=100",
        ]
    );
}

#[tokio::test]
async fn kutt_api_names_a_refused_key() {
    let fake = FakeApi::start("x-api-key", KEY, kutt);
    let mut source = KuttApi::with_retries(&fake.base, "nope", quick()).expect("source");
    let e = source
        .read(&mut VecSink::default())
        .await
        .expect_err("refused")
        .to_string();
    assert!(e.contains("/api/v2/links?limit=50&skip=0: the source refused the key given as x-api-key (HTTP 401)"), "{e}");
}
