//! Shlink: the REST API v3 (links, every visit, oldest first, with ids a
//! second run gives again) and the web client's CSV export.

use std::collections::HashSet;
use std::time::Instant;

use chrono::Duration;
use qrtag::migrate::shlink::ShlinkApi;
use qrtag::migrate::shlink_csv;
use qrtag::migrate::source::{LeftOut, Source, SourceLink};
use serde_json::{Value, json};

use crate::fake_api::{Answer, FakeApi, query};
use crate::{VecSink, fixture, quick, time};

pub const KEY: &str = "shlink-key-1";
pub const MANY: u64 = 10_000;
const PER_PAGE: u64 = 300;

fn short_url(code: &str, domain: Option<&str>, url: &str, visits: u64, extra: Value) -> Value {
    let mut v = json!({
        "shortCode": code,
        "shortUrl": format!("https://{}/{code}", domain.unwrap_or("s.example")),
        "longUrl": url,
        "dateCreated": "2021-03-04T05:06:07+00:00",
        "tags": [],
        "meta": {"validSince": null, "validUntil": null, "maxVisits": null},
        "domain": domain,
        "title": null,
        "crawlable": true,
        "forwardQuery": true,
        "visitsSummary": {"total": visits, "nonBots": visits, "bots": 0},
        "hasRedirectRules": false,
    });
    if let (Some(v), Some(extra)) = (v.as_object_mut(), extra.as_object()) {
        for (k, x) in extra {
            v.insert(k.clone(), x.clone());
        }
    }
    v
}

fn pages(data: Vec<Value>, page: u64, pages: u64) -> Value {
    json!({"data": data, "pagination": {
        "currentPage": page, "pagesCount": pages, "itemsPerPage": 3,
        "itemsInCurrentPage": 3, "totalItems": 6}})
}

/// Visit `i` (0 the oldest) of `many`, as Shlink shows it.
fn many_visit(i: u64) -> Value {
    let t = time("2020-01-01T00:00:00Z") + Duration::seconds(i as i64);
    json!({
        "referer": format!("https://ref.example/{}", i % 7),
        "date": t.to_rfc3339(),
        "userAgent": format!("Mozilla/5.0 test {}", i % 3),
        "visitLocation": if i.is_multiple_of(2) { json!({"countryCode": "IE", "countryName": "Ireland",
            "regionName": "", "cityName": "", "latitude": 0.0, "longitude": 0.0,
            "timezone": "", "isEmpty": false}) } else { Value::Null },
        "potentialBot": false,
        "visitedUrl": "https://s.example/many",
        "redirectUrl": "https://example.com/many",
    })
}

fn small_visit(date: &str, referer: &str) -> Value {
    json!({"referer": referer, "date": date, "userAgent": "UA", "visitLocation": null,
        "potentialBot": false, "visitedUrl": "", "redirectUrl": null})
}

pub fn shlink(target: &str, times: usize) -> Answer {
    let page: u64 = query(target, "page")
        .and_then(|p| p.parse().ok())
        .unwrap_or(1);
    let path = target.split('?').next().unwrap_or("");
    match path {
        "/rest/v3/short-urls" => {
            if page == 1 && times == 0 {
                return Answer::rate_limited("1");
            }
            let data = if page == 1 {
                vec![
                    short_url(
                        "ABC1234",
                        None,
                        "https://example.com/menü?x=1#top",
                        3,
                        json!({"title": "Menu", "tags": ["food", "print"]}),
                    ),
                    short_url(
                        "abc_def-1234",
                        Some("go.example"),
                        "https://example.com/a",
                        2,
                        json!({"crawlable": false, "forwardQuery": false}),
                    ),
                    short_url("café.v2", None, "https://example.org/", 0, json!({})),
                ]
            } else {
                let mut old = short_url(
                    "old",
                    None,
                    "https://example.com/old",
                    0,
                    json!({"meta": {"validSince": null, "validUntil": "2020-01-01T00:00:00+00:00", "maxVisits": null}}),
                );
                // Shlink 2's spelling of the count.
                if let Some(o) = old.as_object_mut() {
                    o.remove("visitsSummary");
                    o.insert("visitsCount".into(), json!(0));
                }
                vec![
                    short_url("many", None, "https://example.com/many", MANY, json!({})),
                    old,
                    short_url(
                        "later",
                        None,
                        "https://example.com/later",
                        0,
                        json!({"meta": {"validSince": "2999-01-01T00:00:00+00:00", "validUntil": null, "maxVisits": 100},
                               "hasRedirectRules": true}),
                    ),
                ]
            };
            Answer::json(json!({"shortUrls": pages(data, page, 2)}))
        }
        "/rest/v3/short-urls/ABC1234/visits" => {
            // Newest first; two identical visits in one second.
            let data = vec![
                small_visit("2021-05-01T10:00:00+00:00", "https://b.example/"),
                small_visit("2021-04-01T10:00:00+00:00", ""),
                small_visit("2021-04-01T10:00:00+00:00", ""),
            ];
            Answer::json(json!({"visits": pages(data, 1, 1)}))
        }
        "/rest/v3/short-urls/abc_def-1234/visits" => {
            if query(target, "domain") != Some("go.example") {
                return Answer::status(404);
            }
            let data = vec![
                small_visit("2022-02-02T00:00:01+00:00", ""),
                small_visit("2022-02-02T00:00:00+00:00", ""),
            ];
            Answer::json(json!({"visits": pages(data, 1, 1)}))
        }
        "/rest/v3/short-urls/many/visits" => {
            if page == 7 && times == 0 {
                return Answer::status(500);
            }
            let pages_count = MANY.div_ceil(PER_PAGE);
            let first = (page - 1) * PER_PAGE;
            let data: Vec<Value> = (first..(first + PER_PAGE).min(MANY))
                .map(|k| many_visit(MANY - 1 - k))
                .collect();
            Answer::json(json!({"visits": {"data": data, "pagination": {
                "currentPage": page, "pagesCount": pages_count}}}))
        }
        _ => Answer::status(404),
    }
}

#[tokio::test]
async fn shlink_api_reads_every_link_and_every_visit_oldest_first() {
    let fake = FakeApi::start("x-api-key", KEY, shlink);
    let started = Instant::now();
    let mut source = ShlinkApi::with_retries(&fake.base, KEY, quick()).expect("source");
    let mut sink = VecSink::default();
    source.read(&mut sink).await.expect("read");
    assert!(
        started.elapsed() >= std::time::Duration::from_secs(1),
        "the 429's Retry-After was waited"
    );

    assert_eq!(
        sink.codes(),
        ["ABC1234", "abc_def-1234", "café.v2", "many", "old", "later"]
    );
    assert_eq!(
        sink.link("ABC1234"),
        &SourceLink {
            code: "ABC1234".into(),
            url: "https://example.com/menü?x=1#top".into(),
            title: Some("Menu".into()),
            tags: vec!["food".into(), "print".into()],
            created: Some(time("2021-03-04T05:06:07Z")),
            ..SourceLink::default()
        }
    );
    let other = sink.link("abc_def-1234");
    assert_eq!(other.domain.as_deref(), Some("go.example"));
    assert_eq!(
        other
            .left_out
            .iter()
            .map(|l| l.what.as_str())
            .collect::<Vec<_>>(),
        ["crawlable", "forwardQuery"]
    );
    assert!(!other.inactive);
    assert_eq!(
        sink.link("café.v2").code,
        "café.v2",
        "kept as Shlink has it"
    );
    let old = sink.link("old");
    assert!(old.inactive, "past its validUntil");
    assert_eq!(old.expires, Some(time("2020-01-01T00:00:00Z")));
    let later = sink.link("later");
    assert!(later.inactive, "not valid yet");
    assert_eq!(
        later
            .left_out
            .iter()
            .map(|l| l.what.as_str())
            .collect::<Vec<_>>(),
        ["validSince", "maxVisits", "redirectRules"]
    );
    assert!(
        later.left_out[0].why.contains("2999-01-01"),
        "{:?}",
        later.left_out
    );
    assert!(
        sink.links.iter().all(|l| l.total_clicks.is_none()),
        "Shlink's visits come one by one"
    );

    let of = |code: &str| {
        sink.visits
            .iter()
            .filter(|v| v.code == code)
            .collect::<Vec<_>>()
    };
    let many = of("many");
    assert_eq!(many.len() as u64, MANY);
    for (i, v) in many.iter().enumerate() {
        assert_eq!(
            v.time,
            time("2020-01-01T00:00:00Z") + Duration::seconds(i as i64),
            "visit {i} in time order"
        );
        assert_eq!(
            v.referrer.as_deref(),
            Some(&*format!("https://ref.example/{}", i % 7))
        );
        assert_eq!(
            v.user_agent.as_deref(),
            Some(&*format!("Mozilla/5.0 test {}", i % 3))
        );
        assert_eq!(v.country.as_deref(), i.is_multiple_of(2).then_some("IE"));
        assert_eq!(v.address, None);
    }
    let small = of("ABC1234");
    assert_eq!(small.len(), 3);
    assert_eq!(small[0].time, time("2021-04-01T10:00:00Z"));
    assert_eq!(small[0].referrer, None, "an empty referer is none");
    assert_eq!(small[2].referrer.as_deref(), Some("https://b.example/"));
    assert_ne!(
        small[0].source_id, small[1].source_id,
        "twin visits stay two"
    );
    let other = of("abc_def-1234");
    assert_eq!(other.len(), 2);
    assert!(
        other
            .iter()
            .all(|v| v.domain.as_deref() == Some("go.example"))
    );
    assert_eq!(sink.visits.len() as u64, MANY + 5);
    let ids: HashSet<&str> = sink.visits.iter().map(|v| v.source_id.as_str()).collect();
    assert_eq!(ids.len(), sink.visits.len(), "every visit its own id");

    let requests = fake.requests();
    let asked = |p: &str| requests.iter().filter(|r| r.starts_with(p)).count();
    assert_eq!(
        asked("/rest/v3/short-urls?page=1&"),
        2,
        "the 429 was retried"
    );
    assert_eq!(
        asked("/rest/v3/short-urls/many/visits?page=7&"),
        2,
        "the failed page was retried"
    );
    assert_eq!(
        asked("/rest/v3/short-urls/caf"),
        0,
        "no visits asked of a link with none"
    );

    // A second run gives every visit the same id.
    let mut again = VecSink::default();
    source.read(&mut again).await.expect("read again");
    assert_eq!(again.links, sink.links);
    let ids_again: Vec<&str> = again.visits.iter().map(|v| v.source_id.as_str()).collect();
    let ids_first: Vec<&str> = sink.visits.iter().map(|v| v.source_id.as_str()).collect();
    assert_eq!(ids_again, ids_first);
}

#[tokio::test]
async fn shlink_api_names_a_refused_key_without_showing_it() {
    let fake = FakeApi::start("x-api-key", KEY, shlink);
    let mut source = ShlinkApi::with_retries(&fake.base, "wrong-key-77", quick()).expect("source");
    let e = source
        .read(&mut VecSink::default())
        .await
        .expect_err("refused")
        .to_string();
    assert!(
        e.contains("refused the key given as x-api-key (HTTP 401)"),
        "{e}"
    );
    assert!(!e.contains("wrong-key-77"), "{e}");
    assert_eq!(fake.requests().len(), 1, "a refused key is not retried");
}

#[tokio::test]
async fn shlink_api_gives_up_on_a_page_that_keeps_failing_in_one_line() {
    let fake = FakeApi::start("x-api-key", KEY, |target, times| {
        if query(target, "page") == Some("2") {
            Answer::status(502)
        } else {
            shlink(target, times + 1)
        }
    });
    let mut source = ShlinkApi::with_retries(&fake.base, KEY, quick()).expect("source");
    let mut sink = VecSink::default();
    let e = source.read(&mut sink).await.expect_err("fails").to_string();
    assert!(
        e.contains("/rest/v3/short-urls?page=2&itemsPerPage=50: HTTP 502, 3 times"),
        "{e}"
    );
    assert!(!e.contains('\n'), "{e}");
    assert_eq!(sink.codes(), ["ABC1234", "abc_def-1234", "café.v2"]);
}

#[tokio::test]
async fn shlink_api_does_not_wait_an_hour_for_a_rate_limit() {
    let fake = FakeApi::start("x-api-key", KEY, |_, _| Answer::rate_limited("3600"));
    let mut source = ShlinkApi::with_retries(&fake.base, KEY, quick()).expect("source");
    let e = source
        .read(&mut VecSink::default())
        .await
        .expect_err("gives up")
        .to_string();
    assert!(e.contains("asked to wait 3600 s"), "{e}");
}

/// The web client's export (json2csv: every string quoted), a title
/// spanning two lines, a code percent-encoded in its short URL's path.
const SHLINK_CSV: &str = "\"createdAt\",\"domain\",\"shortCode\",\"shortUrl\",\"longUrl\",\"title\",\"tags\",\"visits\"
\"2021-03-04T05:06:07+00:00\",\"s.example\",\"ABC1234\",\"https://s.example/ABC1234\",\"https://example.com/menü?x=1#top\",\"Menu, two
lines\",\"food|print\",42
\"2022-01-01T00:00:00+00:00\",\"go.example\",\"abc_def-1234\",\"https://go.example/abc_def-1234\",\"https://example.com/\"\"q\"\"\",\"\",\"\",0
\"2022-01-01T00:00:00+00:00\",\"s.example\",\"caf%C3%A9.v2\",\"https://s.example/caf%C3%A9.v2\",\"https://example.org/\",\"\",\"\",7
";

#[tokio::test]
async fn shlink_csv_reads_the_web_clients_export() {
    let (_dir, path) = fixture("short_urls.csv", SHLINK_CSV);
    let mut sink = VecSink::default();
    shlink_csv::source(&path)
        .read(&mut sink)
        .await
        .expect("read");
    assert_eq!(sink.codes(), ["ABC1234", "abc_def-1234", "café.v2"]);
    assert_eq!(
        sink.links[0],
        SourceLink {
            code: "ABC1234".into(),
            domain: Some("s.example".into()),
            url: "https://example.com/menü?x=1#top".into(),
            title: Some("Menu, two\nlines".into()),
            tags: vec!["food".into(), "print".into()],
            created: Some(time("2021-03-04T05:06:07Z")),
            total_clicks: Some(42),
            ..SourceLink::default()
        }
    );
    assert_eq!(sink.links[1].url, "https://example.com/\"q\"");
    assert_eq!(sink.links[1].total_clicks, Some(0));
    assert_eq!(sink.links[2].total_clicks, Some(7));
    assert!(
        sink.links
            .iter()
            .all(|l| l.left_out == Vec::<LeftOut>::new())
    );
}

#[tokio::test]
async fn shlink_csv_names_the_line_of_a_bad_row_and_a_missing_column() {
    let bad = SHLINK_CSV.replace(",0\n", ",many\n");
    let (_dir, path) = fixture("short_urls.csv", &bad);
    let e = shlink_csv::source(&path)
        .read(&mut VecSink::default())
        .await
        .expect_err("bad count")
        .to_string();
    assert!(
        e.ends_with("short_urls.csv line 4: visits \"many\" is not a count"),
        "{e}"
    );

    let (_dir, path) = fixture("links.csv", "code,title\nabc,x\n");
    let e = shlink_csv::source(&path)
        .read(&mut VecSink::default())
        .await
        .expect_err("no longUrl")
        .to_string();
    assert!(
        e.ends_with(
            "links.csv line 1: no longUrl column: this is not Shlink's CSV export of short URLs"
        ),
        "{e}"
    );
}
