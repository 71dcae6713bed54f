//! Dub: the Links page's CSV export, every column chosen.

use qrtag::migrate::dub;
use qrtag::migrate::source::{Source, SourceLink};

use crate::{VecSink, fixture, time};

/// `exportLinksColumns` in their order, as json-2-csv writes them (quoting
/// only what needs it); a tag made safe for spreadsheets with a `'`; the
/// domain's root link, which has no key.
const DUB_CSV: &str = "Short link,Destination URL,Clicks,Leads,Conversions,Revenue,Created at,Link ID,Updated at,Tags,Archived
https://dub.sh/UPPER12,https://example.com/menü?x=1#top,42,0,0,0,2024-01-02T03:04:05.000Z,link_1,2024-01-03T00:00:00.000Z,\"print, poster\",No
https://go.example/a-b_c-d_e-f1,https://example.com/a,0,0,0,0,2024-01-02T03:04:05.000Z,link_2,2024-01-03T00:00:00.000Z,'-minus,Yes
https://go.example/café.v2,https://example.org/,7,0,0,0,2024-01-02T03:04:05.000Z,link_3,2024-01-03T00:00:00.000Z,,No
https://go.example,https://example.org/home,3,0,0,0,2024-01-02T03:04:05.000Z,link_4,2024-01-03T00:00:00.000Z,,No
";

#[tokio::test]
async fn dub_csv_reads_the_export_with_click_totals() {
    let (_dir, path) = fixture("dub.csv", DUB_CSV);
    let mut sink = VecSink::default();
    dub::source(&path).read(&mut sink).await.expect("read");
    assert_eq!(sink.codes(), ["UPPER12", "a-b_c-d_e-f1", "café.v2"]);
    assert_eq!(
        sink.links[0],
        SourceLink {
            code: "UPPER12".into(),
            domain: Some("dub.sh".into()),
            url: "https://example.com/menü?x=1#top".into(),
            tags: vec!["print".into(), "poster".into()],
            created: Some(time("2024-01-02T03:04:05Z")),
            total_clicks: Some(42),
            ..SourceLink::default()
        }
    );
    assert_eq!(
        sink.links[1].tags,
        ["-minus"],
        "the formula guard taken off"
    );
    assert!(sink.links[1].inactive, "archived");
    assert_eq!(sink.links[2].total_clicks, Some(7));
}

#[tokio::test]
async fn dub_csv_with_the_default_columns_only() {
    let text = "Short link,Destination URL,Clicks,Created at\nhttps://dub.sh/abc,https://example.com/,1,2024-01-02T03:04:05.000Z\n";
    let (_dir, path) = fixture("dub.csv", text);
    let mut sink = VecSink::default();
    dub::source(&path).read(&mut sink).await.expect("read");
    assert_eq!(sink.codes(), ["abc"]);
    assert_eq!(sink.links[0].total_clicks, Some(1));

    let (_dir, path) = fixture("dub.csv", "Short link,Clicks\nhttps://dub.sh/abc,1\n");
    let e = dub::source(&path)
        .read(&mut VecSink::default())
        .await
        .expect_err("no destination")
        .to_string();
    assert!(
        e.ends_with(
            "dub.csv line 1: no Destination URL column: this is not Dub's CSV export of links"
        ),
        "{e}"
    );
}
