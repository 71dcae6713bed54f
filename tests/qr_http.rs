//! `GET /qr/{key}.png|svg` on the admin listener, end to end: the real
//! application on port 0, images decoded back the way a scanner reads them.

#[path = "support/qr_decode.rs"]
mod qr_decode;
mod support;

use std::time::Duration;

use qr_decode::{decode_png, decode_svg};
use qrtag::qr::EcLevel;
use qrtag::values::destination::Destination;
use qrtag::values::link_key::LinkKey;
use support::{PUBLIC_URL, TestApp, eventually, header, spawn_app, spawn_with, test_settings};

async fn qr_get(app: &TestApp, path: &str) -> reqwest::Response {
    app.admin_get(path).await.expect("admin listener answers")
}

/// Creates a link without going through the snapshot, and waits until the
/// admin listener sees it.
async fn link(app: &TestApp, key: &str, inactive: bool) {
    let key = LinkKey::parse(key).expect("valid key");
    let url = Destination::parse("https://example.com/").expect("valid url");
    qrtag::links::create(
        &app.store(),
        &qrtag::link::Author::cli(qrtag::link::Via::Cli, "test", "host"),
        &url,
        Some(&key),
        inactive,
    )
    .await
    .expect("create link");
    let path = format!("/qr/{key}.svg");
    eventually(Duration::from_secs(2), || async {
        qr_get(app, &path).await.status() == 200
    })
    .await;
}

/// Modules across the symbol for `text` at `ec`, quiet zone excluded.
fn width(text: &str, ec: EcLevel) -> u32 {
    let code = qrtag::qr::encode(text, ec).expect("fits");
    u32::try_from(code.width()).expect("small")
}

#[tokio::test]
async fn png_and_svg_decode_to_exactly_the_short_url() {
    let app = spawn_app().await;
    link(&app, "H83if", false).await;
    link(&app, "docs/api", false).await;

    for key in ["H83if", "docs/api"] {
        let want = format!("{PUBLIC_URL}/{key}");

        let r = qr_get(&app, &format!("/qr/{key}.png")).await;
        assert_eq!(r.status(), 200, "{key}");
        assert_eq!(header(&r, "content-type"), Some("image/png"));
        assert_eq!(header(&r, "cache-control"), Some("no-cache"));
        let (text, size) = decode_png(&r.bytes().await.expect("body"));
        assert_eq!(text, want);
        let side = (width(&want, EcLevel::L) + 2 * 4) * 8;
        assert_eq!(size, (side, side), "default scale 8, margin 4");

        let r = qr_get(&app, &format!("/qr/{key}.svg")).await;
        assert_eq!(r.status(), 200, "{key}");
        assert_eq!(header(&r, "content-type"), Some("image/svg+xml"));
        assert_eq!(header(&r, "cache-control"), Some("no-cache"));
        assert_eq!(decode_svg(&r.text().await.expect("body")), want);
    }
}

#[tokio::test]
async fn scale_margin_and_ec_shape_the_image() {
    let app = spawn_app().await;
    link(&app, "H83if", false).await;
    let want = format!("{PUBLIC_URL}/H83if");

    let r = qr_get(&app, "/qr/H83if.png?scale=3&margin=0&ec=H&v=2").await;
    assert_eq!(r.status(), 200);
    let (text, size) = decode_png_margin0(&r.bytes().await.expect("body"));
    assert_eq!(text, want);
    let side = width(&want, EcLevel::H) * 3;
    assert_eq!(size, (side, side));
    assert!(
        width(&want, EcLevel::H) > width(&want, EcLevel::L),
        "H really is a bigger symbol, so ec was applied"
    );

    let r = qr_get(&app, "/qr/H83if.svg?scale=5&margin=2&ec=q").await;
    let svg = r.text().await.expect("body");
    let n = width(&want, EcLevel::Q) + 4;
    assert!(
        svg.contains(&format!(
            r#"width="{}" height="{}" viewBox="0 0 {n} {n}""#,
            n * 5,
            n * 5
        )),
        "{svg}"
    );
    assert_eq!(decode_svg(&svg), want);
}

/// rqrr needs some light border to find the finder patterns; a margin-0 PNG
/// is padded white before decoding, which a printed tag gets from its paper.
fn decode_png_margin0(png: &[u8]) -> (String, (u32, u32)) {
    let image = image::load_from_memory(png).expect("PNG").to_luma8();
    let (w, h) = image.dimensions();
    let mut padded = image::GrayImage::from_pixel(w + 40, h + 40, image::Luma([255]));
    image::imageops::replace(&mut padded, &image, 20, 20);
    let mut buf = Vec::new();
    padded
        .write_to(&mut std::io::Cursor::new(&mut buf), image::ImageFormat::Png)
        .expect("re-encode");
    (decode_png(&buf).0, (w, h))
}

#[tokio::test]
async fn inactive_links_get_images_but_still_no_redirect() {
    let app = spawn_app().await;
    link(&app, "dead1", true).await;

    let r = qr_get(&app, "/qr/dead1.png").await;
    assert_eq!(r.status(), 200);
    let (text, _) = decode_png(&r.bytes().await.expect("body"));
    assert_eq!(text, format!("{PUBLIC_URL}/dead1"));
    // Same snapshot, so the public answer is already settled.
    assert_eq!(app.get("/dead1").await.status(), 404);
}

#[tokio::test]
async fn unknown_keys_and_other_spellings_are_404() {
    let app = spawn_app().await;
    link(&app, "H83if", false).await;

    for path in [
        "/qr/nope1.png",
        "/qr/nope1.svg",
        "/qr/docs/H83if.png",
        "/qr/H83if",
        "/qr/H83if.png.png",
        "/qr/H8%33if.png",
        "/qr/.png",
        "/qr/",
        "/qr/nope1.png?scale=1",
    ] {
        let r = qr_get(&app, path).await;
        assert_eq!(r.status(), 404, "{path}");
        assert_eq!(
            header(&r, "content-type"),
            Some("text/plain; charset=utf-8"),
            "{path}"
        );
        assert_eq!(header(&r, "cache-control"), Some("no-store"), "{path}");
        assert_eq!(r.text().await.expect("body"), "no such link\n", "{path}");
    }
}

/// A format other than the two served is named, not "no such link"
/// (issue 18): the key may well exist.
#[tokio::test]
async fn other_formats_are_400_naming_the_format() {
    let app = spawn_app().await;
    link(&app, "H83if", false).await;
    for (path, ext) in [
        ("/qr/H83if.jpg", "jpg"),
        ("/qr/nope1.jpg", "jpg"),
        ("/qr/H83if.PNG", "PNG"),
        ("/qr/H83if.gif?scale=4", "gif"),
        ("/qr/H83if.", ""),
    ] {
        let r = qr_get(&app, path).await;
        assert_eq!(r.status(), 400, "{path}");
        assert_eq!(header(&r, "cache-control"), Some("no-store"), "{path}");
        assert_eq!(
            r.text().await.expect("body"),
            format!("unsupported format \"{ext}\": use .png, .svg or .pdf\n"),
            "{path}"
        );
    }
}

#[tokio::test]
async fn bad_parameters_are_400_naming_the_parameter() {
    let app = spawn_app().await;
    link(&app, "H83if", false).await;

    for (query, name) in [
        ("scale=1", "scale"),
        ("scale=65", "scale"),
        ("scale=big", "scale"),
        ("scale=", "scale"),
        ("margin=17", "margin"),
        ("margin=-1", "margin"),
        ("ec=X", "ec"),
        ("ec=LM", "ec"),
        ("ec=L&ec=H", "ec"),
    ] {
        for ext in ["png", "svg"] {
            let path = format!("/qr/H83if.{ext}?{query}");
            let r = qr_get(&app, &path).await;
            assert_eq!(r.status(), 400, "{path}");
            assert_eq!(
                header(&r, "content-type"),
                Some("text/plain; charset=utf-8")
            );
            let body = r.text().await.expect("body");
            assert!(body.starts_with(&format!("bad {name}: ")), "{path}: {body}");
            assert_eq!(body.lines().count(), 1, "{path}: {body}");
        }
    }
    // An unknown parameter (a typo) is named too; `v` busts caches.
    let r = qr_get(&app, "/qr/H83if.svg?foo=1").await;
    assert_eq!(r.status(), 400);
    let body = r.text().await.expect("body");
    assert!(body.starts_with("unknown parameter \"foo\""), "{body}");
    assert_eq!(
        qr_get(&app, "/qr/H83if.svg?v=2&scale=3").await.status(),
        200
    );
}

#[tokio::test]
async fn the_uppercase_setting_applies_to_every_image() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut settings = test_settings(dir.path());
    settings.qr_uppercase_prefix = true;
    let app = spawn_with(settings, dir).await;
    link(&app, "H83if", false).await;

    let r = qr_get(&app, "/qr/H83if.png").await;
    assert_eq!(
        decode_png(&r.bytes().await.expect("body")).0,
        "HTTPS://0X1F.IE/H83if"
    );
    let r = qr_get(&app, "/qr/H83if.svg").await;
    assert_eq!(
        decode_svg(&r.text().await.expect("body")),
        "HTTPS://0X1F.IE/H83if"
    );
}

#[tokio::test]
async fn the_public_listener_serves_no_images() {
    let app = spawn_app().await;
    link(&app, "H83if", false).await;
    for path in ["/qr/H83if.png", "/qr/H83if.svg"] {
        let r = app.get(path).await;
        assert_eq!(r.status(), 404, "{path}");
        assert!(header(&r, "content-type").is_some_and(|t| t.starts_with("text/plain")));
    }
}

/// Issue 19: a 1,234-character key at scale 64, margin 16, level H was a
/// 13,376-pixel square PNG (179 MB of pixels), rendered for anyone who
/// asked. Past 4096 pixels a side the PNG is refused, naming the bound and
/// a scale that fits; the SVG, which holds no pixels, is still served.
/// (Keys are at most 256 bytes since issue 30; the longest is still over.)
#[tokio::test]
async fn a_png_over_the_pixel_bound_is_a_400_naming_it() {
    let app = spawn_app().await;
    let segments = vec!["k".repeat(64); 4].join("/");
    let long = &segments[..qrtag::values::link_key::MAX_KEY_LEN];
    link(&app, long, false).await;
    link(&app, "H83if", false).await;

    let r = qr_get(&app, &format!("/qr/{long}.png?scale=64&margin=16&ec=H")).await;
    assert_eq!(r.status(), 400);
    assert_eq!(header(&r, "cache-control"), Some("no-store"));
    let body = r.text().await.expect("body");
    assert!(body.starts_with("bad scale: "), "{body}");
    assert!(body.contains("over the limit of 4096×4096"), "{body}");
    assert_eq!(body.lines().count(), 1, "{body}");
    // The scale it offers is one that is served.
    let fits = body
        .split("use scale ")
        .nth(1)
        .and_then(|rest| rest.split(' ').next())
        .expect("a scale to use");
    let r = qr_get(&app, &format!("/qr/{long}.png?scale={fits}&margin=16&ec=H")).await;
    assert_eq!(r.status(), 200, "scale {fits}");

    let r = qr_get(&app, &format!("/qr/{long}.svg?scale=64&margin=16&ec=H")).await;
    assert_eq!(r.status(), 200);
    // A short key fits at the largest scale.
    let r = qr_get(&app, "/qr/H83if.png?scale=64&margin=16&ec=H").await;
    assert_eq!(r.status(), 200);
}

/// A tag's image or PDF is not kept by caches past its link (issue 31, item
/// 18): `no-cache` with an ETag, so a cache asks each time, gets a 304 while
/// the link stands, and a 404 once it is deleted. Through the real binary,
/// the link deleted by the CLI.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn images_and_pdfs_are_revalidated_and_gone_with_their_link() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("qrtag.db");
    let made = support::qrtag_cmd(&db, &["new", "https://example.com/", "--key", "gone1"]);
    assert!(
        made.status.success(),
        "{}",
        String::from_utf8_lossy(&made.stderr)
    );
    let srv =
        support::process::ServerProcess::spawn(&db, &["--no-snapshot-file"], &[], false).await;
    let http = reqwest::Client::new();
    // The listening line comes before the links are loaded: ask once ready.
    support::poll::until(
        Duration::from_secs(10),
        "the server to be ready",
        || async {
            let r = http.get(srv.admin_url("/readyz")).send().await.ok()?;
            (r.status() == 200).then_some(())
        },
    )
    .await;
    let paths = [
        "/qr/gone1.png",
        "/qr/gone1.svg",
        "/qr/gone1.pdf?template=L7163",
        "/qr/gone1.pdf?template=L7163&caption=notes",
    ];
    let mut tags = Vec::new();
    for path in paths {
        let r = http.get(srv.admin_url(path)).send().await.expect("answers");
        assert_eq!(r.status(), 200, "{path}");
        assert_eq!(header(&r, "cache-control"), Some("no-cache"), "{path}");
        let tag = header(&r, "etag").expect("an ETag").to_owned();
        assert!(tag.starts_with('"') && tag.ends_with('"'), "{tag}");
        let again = http
            .get(srv.admin_url(path))
            .header("If-None-Match", format!("\"other\", {tag}"))
            .send()
            .await
            .expect("answers");
        assert_eq!(again.status(), 304, "{path}");
        assert_eq!(header(&again, "etag"), Some(tag.as_str()), "{path}");
        assert!(again.bytes().await.expect("body").is_empty());
        let other = http
            .get(srv.admin_url(path))
            .header("If-None-Match", "\"other\"")
            .send()
            .await
            .expect("answers");
        assert_eq!(other.status(), 200, "{path}");
        tags.push(tag);
    }
    tags.sort();
    tags.dedup();
    assert_eq!(tags.len(), paths.len(), "each answer has its own tag");

    let deleted = support::qrtag_cmd(&db, &["delete", "--yes", "gone1"]);
    assert!(
        deleted.status.success(),
        "{}",
        String::from_utf8_lossy(&deleted.stderr)
    );
    for path in paths {
        support::poll::until(Duration::from_secs(10), "the image to go", || async {
            let r = http
                .get(srv.admin_url(path))
                .header("If-None-Match", "*")
                .send()
                .await
                .ok()?;
            (r.status() == 404).then_some(())
        })
        .await;
    }
    srv.stop().await;
}
