//! Bitly: API v4 (a group's bitlinks by `search_after`, clicks summaries)
//! and the CSV export.

use qrtag::migrate::bitly::BitlyApi;
use qrtag::migrate::bitly_csv;
use qrtag::migrate::source::{Source, SourceLink};
use serde_json::json;

use crate::fake_api::{Answer, FakeApi, query};
use crate::{VecSink, fixture, quick, time};

pub const TOKEN: &str = "bitly-token-3";

pub fn bitly(target: &str, times: usize) -> Answer {
    let path = target.split('?').next().unwrap_or("");
    match path {
        "/groups" => Answer::json(json!({"groups": [{"guid": "Ba1b2c3"}]})),
        "/groups/Ba1b2c3/bitlinks" => {
            if query(target, "archived") != Some("both") {
                return Answer::status(400);
            }
            match query(target, "search_after") {
                None => Answer::json(json!({
                    "links": [
                        {"id": "bit.ly/3xYz", "link": "https://bit.ly/3xYz",
                         "custom_bitlinks": ["https://brand.co/SpringSale", "https://brand.co/spring-sale_24"],
                         "long_url": "https://example.com/menü?x=1#top", "title": "Spring",
                         "archived": false, "created_at": "2019-08-27T15:55:20+0000",
                         "tags": ["print", "2019"]},
                        {"id": "bit.ly/AbCdEfG", "link": "https://bit.ly/AbCdEfG",
                         "custom_bitlinks": [], "long_url": "https://example.com/old",
                         "archived": true, "created_at": "2018-01-02T03:04:05+0000", "tags": []},
                        {"id": "bit.ly/nourl", "link": "https://bit.ly/nourl", "custom_bitlinks": []}
                    ],
                    "pagination": {"prev": "", "size": 100, "page": 1, "total": 3,
                        "next": "https://api-ssl.bitly.com/v4/groups/Ba1b2c3/bitlinks?search_after=abc%3D&size=100",
                        "search_after": "abc="}
                })),
                Some("abc%3D") => Answer::json(json!({
                    "links": [
                        {"id": "brand.co/caf", "link": "https://brand.co/caf",
                         "custom_bitlinks": ["https://brand.co/café.menu"],
                         "long_url": "https://example.org/", "archived": false,
                         "created_at": "2020-06-07T08:09:10+0000", "tags": []}
                    ],
                    "pagination": {"prev": "", "next": "", "size": 100, "page": 2, "total": 3, "search_after": ""}
                })),
                Some(_) => Answer::status(400),
            }
        }
        "/bitlinks/bit.ly/3xYz/clicks/summary" => {
            if times == 0 {
                Answer::status(500)
            } else {
                Answer::json(
                    json!({"unit_reference": "2026-11-28T00:00:00+0000", "total_clicks": 1234, "units": -1, "unit": "day"}),
                )
            }
        }
        "/bitlinks/bit.ly/AbCdEfG/clicks/summary" => {
            if times == 0 {
                Answer::rate_limited("1")
            } else {
                Answer::json(json!({"total_clicks": 5, "units": -1, "unit": "day"}))
            }
        }
        "/bitlinks/brand.co/caf/clicks/summary" => Answer::json(json!({"total_clicks": 0})),
        _ => Answer::status(404),
    }
}

#[tokio::test]
async fn bitly_api_reads_every_group_page_and_custom_back_half() {
    let fake = FakeApi::start("authorization", "Bearer bitly-token-3", bitly);
    let mut source = BitlyApi::with_base(&fake.base, TOKEN, None, quick()).expect("source");
    let mut sink = VecSink::default();
    source.read(&mut sink).await.expect("read");
    assert_eq!(
        sink.codes(),
        ["SpringSale", "spring-sale_24", "AbCdEfG", "café.menu"]
    );
    let spring = SourceLink {
        code: "SpringSale".into(),
        domain: Some("brand.co".into()),
        url: "https://example.com/menü?x=1#top".into(),
        title: Some("Spring".into()),
        tags: vec!["print".into(), "2019".into()],
        created: Some(time("2019-08-27T15:55:20Z")),
        total_clicks: Some(1234),
        ..SourceLink::default()
    };
    assert_eq!(sink.links[0], spring);
    assert_eq!(
        sink.links[1],
        SourceLink {
            code: "spring-sale_24".into(),
            total_clicks: Some(0),
            ..spring
        },
        "a second back-half: the clicks counted once"
    );
    let old = &sink.links[2];
    assert_eq!(old.domain, None, "bit.ly is nobody's domain");
    assert!(old.inactive, "archived");
    assert_eq!(old.total_clicks, Some(5));
    assert_eq!(sink.links[3].domain.as_deref(), Some("brand.co"));

    let requests = fake.requests();
    assert_eq!(requests[0], "/groups");
    assert!(
        requests.contains(
            &"/groups/Ba1b2c3/bitlinks?size=100&archived=both&search_after=abc%3D".to_owned()
        ),
        "{requests:?}"
    );
    let asked = |p: &str| requests.iter().filter(|r| r.starts_with(p)).count();
    assert_eq!(asked("/bitlinks/bit.ly/3xYz/clicks/summary"), 2);
    assert_eq!(asked("/bitlinks/bit.ly/AbCdEfG/clicks/summary"), 2);
    assert_eq!(
        asked("/bitlinks/bit.ly/nourl"),
        0,
        "a bitlink without a URL is skipped"
    );
}

#[tokio::test]
async fn bitly_api_names_a_refused_token() {
    let fake = FakeApi::start("authorization", "Bearer bitly-token-3", bitly);
    let mut source =
        BitlyApi::with_base(&fake.base, "stale", Some("Ba1b2c3"), quick()).expect("source");
    let e = source
        .read(&mut VecSink::default())
        .await
        .expect_err("refused")
        .to_string();
    assert!(e.contains("/groups/Ba1b2c3/bitlinks?size=100&archived=both: the source refused the key given as authorization (HTTP 401)"), "{e}");
    assert!(!e.contains("stale"), "{e}");
}

/// The export's columns as a migration guide that reads real exports names
/// them ("Link", "Custom Link", "Destination URL"), with the others under
/// Bitly's display names.
pub const BITLY_CSV: &str = "\u{feff}Title,Link,Custom Link,Destination URL,Date Created,Tags,Clicks,Archived\r
Spring,https://bit.ly/3xYz,https://brand.co/SpringSale,https://example.com/menü?x=1#top,2019-08-27T15:55:20+0000,\"print,2019\",\"1,234\",false\r
,https://bit.ly/AbCdEfG,,https://example.com/old,2018-01-02 03:04:05,,5,true\r
Café,https://bit.ly/caf,https://brand.co/café.menu,https://example.org/,2020-06-07,,0,false\r
";

#[tokio::test]
async fn bitly_csv_reads_the_export() {
    let (_dir, path) = fixture("bitly.csv", BITLY_CSV);
    let mut sink = VecSink::default();
    bitly_csv::source(&path)
        .read(&mut sink)
        .await
        .expect("read");
    assert_eq!(sink.codes(), ["SpringSale", "AbCdEfG", "café.menu"]);
    assert_eq!(
        sink.links[0],
        SourceLink {
            code: "SpringSale".into(),
            domain: Some("brand.co".into()),
            url: "https://example.com/menü?x=1#top".into(),
            title: Some("Spring".into()),
            tags: vec!["print".into(), "2019".into()],
            created: Some(time("2019-08-27T15:55:20Z")),
            total_clicks: Some(1234),
            ..SourceLink::default()
        }
    );
    assert_eq!(sink.links[1].domain, None);
    assert!(sink.links[1].inactive);
    assert_eq!(sink.links[1].created, Some(time("2018-01-02T03:04:05Z")));
    assert_eq!(sink.links[2].created, Some(time("2020-06-07T00:00:00Z")));
}

#[tokio::test]
async fn bitly_csv_without_a_destination_column_is_refused_in_one_line() {
    let (_dir, path) = fixture("bitly.csv", "Title,Link\nx,https://bit.ly/x\n");
    let e = bitly_csv::source(&path)
        .read(&mut VecSink::default())
        .await
        .expect_err("refused")
        .to_string();
    assert!(e.ends_with("bitly.csv line 1: no destination column (Destination URL or long_url): this is not Bitly's CSV export of links"), "{e}");
}
