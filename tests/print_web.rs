//! Print-ready PDFs from every surface (issues 20 and 22): `qrtag print` on
//! the real binary, the admin listener's `/qr/KEY.pdf`, the console's PDF
//! forms (a link's label and poster, a print run) and the REST API's
//! `print.pdf`, all from one server over real sockets, must give the same
//! bytes for the same options; the codes are read back by `zbarimg` from
//! `pdftoppm`'s rendering (poppler-utils and zbar-tools, as `tests/print.rs`).
//! Then the refusals of each surface: a short 400 naming the option, a 404
//! for an unknown key, the console's form again with the message beside
//! its field.

mod support;

#[path = "support/pdf_decode.rs"]
mod pdf_decode;

use std::path::Path;
use std::process::Command;

use pdf_decode::{decode_pdf, decode_pdf_at};
use qrtag::console::ConsoleSettings;
use qrtag::server::api::ApiSettings;
use reqwest::StatusCode;
use serde_json::{Value, json};
use support::console::{browser, csrf, log_in};
use support::{PUBLIC_URL, TestApp, header, spawn_with, test_settings};

const PASSWORD: &str = "labels-on-l7163";
const PDF: &str = "application/pdf";

struct Server {
    app: TestApp,
    /// A logged-in console session.
    console: reqwest::Client,
    api_key: String,
}

/// One server with the console and the API on, links `door` (with notes)
/// and `docs/api`, a console session and a read-only API key.
async fn server() -> Server {
    server_with_logo(None).await
}

/// [`server`], with `serve --print-logo`'s image when given.
async fn server_with_logo(logo: Option<image::RgbaImage>) -> Server {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut settings = test_settings(dir.path());
    settings.print_logo = logo.map(|image| {
        let file = dir.path().join("server-logo.png");
        image.save(&file).expect("logo");
        std::sync::Arc::new(qrtag::print::tag_image::ServerLogo {
            image: std::sync::Arc::new(image),
            png: std::fs::read(&file).expect("logo"),
        })
    });
    settings.console = Some(ConsoleSettings::default());
    settings.api = Some(ApiSettings::new(
        "127.0.0.1:0",
        dir.path().join("didcomm-keys.json"),
    ));
    let app = spawn_with(settings, dir).await;
    qrtag::console::password::set(&app.store(), PASSWORD)
        .await
        .expect("password set");
    app.link("door", "https://example.com/door").await;
    app.link("docs/api", "https://example.com/docs").await;
    let set = app.cli(&["set", "door", "--notes", "Front door, level 2\nsecond line"]);
    assert!(set.status.success(), "{set:?}");
    for key in ["door", "docs/api"] {
        app.wait_for_status(&format!("/{key}"), 302).await;
    }
    let out = app.cli(&["api-key", "create", "--name", "print", "--scope", "read"]);
    assert!(out.status.success(), "{out:?}");
    let api_key = String::from_utf8(out.stdout)
        .expect("utf-8")
        .trim()
        .to_owned();

    let s = Server {
        app,
        console: browser(),
        api_key,
    };
    log_in(&s.console, &s.console_url(""), PASSWORD).await;
    s
}

impl Server {
    fn console_url(&self, path: &str) -> String {
        format!("http://{}/console{path}", self.app.admin)
    }

    async fn console_get(&self, path: &str) -> reqwest::Response {
        self.console
            .get(self.console_url(path))
            .send()
            .await
            .expect("GET")
    }

    async fn console_text(&self, path: &str) -> String {
        self.console_get(path).await.text().await.expect("body")
    }

    fn api_url(&self, path: &str) -> String {
        format!("http://{}/api/v1{path}", self.app.api.expect("API on"))
    }

    async fn api_get(&self, path: &str) -> reqwest::Response {
        self.app
            .client
            .get(self.api_url(path))
            .bearer_auth(&self.api_key)
            .send()
            .await
            .expect("GET")
    }

    async fn api_post(&self, path: &str, body: &Value) -> reqwest::Response {
        self.app
            .client
            .post(self.api_url(path))
            .bearer_auth(&self.api_key)
            .json(body)
            .send()
            .await
            .expect("POST")
    }

    async fn admin(&self, path: &str) -> reqwest::Response {
        self.app.admin_get(path).await.expect("admin listener")
    }

    /// `qrtag print KEYS ARGS` on the server's database.
    fn cli(&self, keys: &[&str], args: &[&str]) -> Vec<u8> {
        let out = self.app.dir.path().join("cli.pdf");
        let mut all = vec!["print"];
        all.extend_from_slice(keys);
        all.extend_from_slice(args);
        all.extend_from_slice(&["-o", out.to_str().expect("utf-8")]);
        let run = self.app.cli(&all);
        assert!(run.status.success(), "print {args:?}: {run:?}");
        std::fs::read(out).expect("the PDF")
    }
}

async fn pdf_body(res: reqwest::Response, what: &str) -> Vec<u8> {
    assert_eq!(res.status(), StatusCode::OK, "{what}");
    assert_eq!(header(&res, "content-type"), Some(PDF), "{what}");
    res.bytes().await.expect("body").to_vec()
}

fn text_of(dir: &Path, pdf: &[u8]) -> String {
    let file = dir.join("text.pdf");
    std::fs::write(&file, pdf).expect("write");
    let out = Command::new("pdftotext")
        .arg(&file)
        .arg("-")
        .output()
        .expect("pdftotext (poppler-utils)");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn query_to_args(query: &str) -> Vec<String> {
    query
        .split('&')
        .flat_map(|pair| {
            let (name, value) = pair.split_once('=').expect("name=value");
            let flag = format!("--{name}");
            if value == "true" {
                vec![flag]
            } else {
                vec![flag, value.to_owned()]
            }
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_surface_gives_the_cli_bytes_and_the_codes_scan() {
    let s = server().await;
    let dir = tempfile::tempdir().expect("tempdir");
    for (query, dpi) in [
        // One label at the fourth position, captioned with its notes,
        // borders drawn: the link page's label form.
        (
            "template=L7163&skip=3&caption=notes&code-size=20mm&outline=true",
            300,
        ),
        // A poster with bleed and crop marks: the link page's poster form.
        (
            "poster=A4&code-size=120mm&bleed=3mm&crop-marks=true&ec=M",
            100,
        ),
    ] {
        let args = query_to_args(query);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let cli = s.cli(&["door"], &args);
        assert!(cli.starts_with(b"%PDF-"));
        let admin = pdf_body(s.admin(&format!("/qr/door.pdf?{query}")).await, query).await;
        let form = if query.starts_with("poster") {
            "poster"
        } else {
            "label"
        };
        let res = s
            .console_get(&format!("/link/pdf?key=door&form={form}&{query}"))
            .await;
        assert!(
            header(&res, "content-disposition").is_some_and(|d| d.contains("door-")),
            "an attachment"
        );
        let console = pdf_body(res, query).await;
        let rest = pdf_body(
            s.api_get(&format!("/links/door/print.pdf?{query}")).await,
            query,
        )
        .await;
        assert!(
            admin == cli,
            "{query}: /qr/door.pdf differs from qrtag print"
        );
        assert!(
            console == cli,
            "{query}: the console differs from qrtag print"
        );
        assert!(
            rest == cli,
            "{query}: the REST API differs from qrtag print"
        );
        assert_eq!(
            decode_pdf_at(dir.path(), &cli, dpi),
            [format!("{PUBLIC_URL}/door")]
        );
        if form == "label" {
            let text = text_of(dir.path(), &cli);
            assert!(text.contains("Front door, level 2"), "{text}");
        }
    }

    // Several keys: the REST API's print run against `qrtag print`.
    let query = "template=L7160&caption=key";
    let cli = s.cli(
        &["door", "docs/api"],
        &["--template", "L7160", "--caption", "key"],
    );
    let rest = pdf_body(
        s.api_post(
            &format!("/print.pdf?{query}"),
            &json!({"keys": ["door", "docs/api"]}),
        )
        .await,
        query,
    )
    .await;
    assert!(
        rest == cli,
        "POST /api/v1/print.pdf differs from qrtag print"
    );
    assert_eq!(
        decode_pdf(dir.path(), &cli),
        [
            format!("{PUBLIC_URL}/docs/api"),
            format!("{PUBLIC_URL}/door")
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_console_print_run_as_a_pdf_is_the_cli_file() {
    let s = server().await;
    let page = s.console_text("/sheet").await;
    let res = s
        .console
        .post(s.console_url("/sheet"))
        .form(&[("csrf", csrf(&page).as_str()), ("count", "3")])
        .send()
        .await
        .expect("POST");
    assert_eq!(res.status(), StatusCode::SEE_OTHER);
    let run_page = header(&res, "location").expect("to the run").to_owned();
    let run = run_page
        .strip_prefix("/console/sheet?batch=")
        .expect("a run")
        .to_owned();
    let page = s.console_text(&format!("/sheet?batch={run}")).await;
    assert!(page.contains(r#"id="run-pdf""#), "the PDF form");
    for stock in qrtag::print::stock::STOCK {
        assert!(
            page.contains(&format!(r#"<option value="{}""#, stock.name)),
            "{} offered",
            stock.name
        );
    }
    // The run's keys, in order, from the page's list.
    let keys: Vec<String> = page
        .split(r#"<a href="/console/link?key="#)
        .skip(1)
        .map(|rest| rest[..rest.find('"').expect("end")].to_owned())
        .collect();
    assert_eq!(keys.len(), 3, "{page}");
    let keys: Vec<&str> = keys.iter().map(String::as_str).collect();

    let query = "template=L7160&skip=2&caption=url";
    let console = pdf_body(
        s.console_get(&format!("/sheet/pdf?batch={run}&form=run&{query}"))
            .await,
        query,
    )
    .await;
    let cli = s.cli(&keys, &["--template", "L7160", "--skip", "2"]);
    assert!(console == cli, "the run's PDF differs from qrtag print");
    let dir = tempfile::tempdir().expect("tempdir");
    let mut want: Vec<String> = keys.iter().map(|k| format!("{PUBLIC_URL}/{k}")).collect();
    want.sort();
    assert_eq!(decode_pdf(dir.path(), &cli), want);

    // A run's form refused: the page again, 400, the message beside the
    // field, what was typed kept.
    let res = s
        .console_get(&format!(
            "/sheet/pdf?batch={run}&form=run&template=L7163&skip=14&code-size=31mm"
        ))
        .await;
    assert_eq!(res.status(), StatusCode::BAD_REQUEST);
    let page = res.text().await.expect("page");
    assert!(page.contains(r#"id="run-pdf-skip-problem""#), "{page}");
    assert!(page.contains("beyond the sheet"), "{page}");
    assert!(page.contains(r#"value="31mm""#), "typed value kept");

    // A run whose link was deleted since is not printed: a deleted key's
    // tag could only lead to a 404.
    let deleted = s.app.cli(&["delete", keys[1], "--yes"]);
    assert!(deleted.status.success(), "{deleted:?}");
    support::eventually(std::time::Duration::from_secs(2), || async {
        s.console_get(&format!("/sheet/pdf?batch={run}&form=run&{query}"))
            .await
            .status()
            == StatusCode::NOT_FOUND
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_options_are_short_refusals_on_every_surface() {
    let s = server().await;
    // The admin listener: one plain line naming the option, never a 500.
    for (query, says) in [
        ("template=L7136", "bad template"),
        ("template=L7163&code-size=60mm", "does not fit"),
        ("template=L7651&code-size=8mm", "minimum of 0.33 mm"),
        ("template=L7163&skip=14", "beyond the sheet"),
        ("template=L7163&skip=x", "bad skip"),
        ("poster=A9", "bad poster"),
        ("poster=A3&skip=2", "not a poster"),
        ("template=L7163&scale=4", "unknown parameter"),
        ("", "template=NAME or poster=SIZE"),
    ] {
        let res = s.admin(&format!("/qr/door.pdf?{query}")).await;
        assert_eq!(res.status(), StatusCode::BAD_REQUEST, "{query}");
        assert_eq!(header(&res, "cache-control"), Some("no-store"));
        let body = res.text().await.expect("body");
        assert_eq!(body.lines().count(), 1, "{query}: {body}");
        assert!(body.contains(says), "{query}: {body}");
    }
    let res = s.admin("/qr/nosuchkey.pdf?template=L7163").await;
    assert_eq!(res.status(), StatusCode::NOT_FOUND);
    let res = s.admin("/qr/door.PDF").await;
    assert_eq!(res.status(), StatusCode::BAD_REQUEST);
    // Revalidated like an image, the notes too when they are printed.
    let res = s.admin("/qr/door.pdf?template=L7163").await;
    assert_eq!(header(&res, "cache-control"), Some("no-cache"));
    let res = s.admin("/qr/door.pdf?template=L7163&caption=notes").await;
    assert_eq!(header(&res, "cache-control"), Some("no-cache"));
    assert!(header(&res, "etag").is_some());

    // The REST API: problems.
    let problem = |res: reqwest::Response, status: StatusCode| async move {
        assert_eq!(res.status(), status);
        assert_eq!(
            header(&res, "content-type"),
            Some("application/problem+json")
        );
        let body: Value = res.json().await.expect("problem");
        body["detail"].as_str().expect("detail").to_owned()
    };
    let detail = problem(
        s.api_get("/links/door/print.pdf?template=L7163&code-size=60mm")
            .await,
        StatusCode::BAD_REQUEST,
    )
    .await;
    assert!(detail.contains("does not fit"), "{detail}");
    problem(
        s.api_get("/links/nosuchkey/print.pdf?template=L7163").await,
        StatusCode::NOT_FOUND,
    )
    .await;
    let detail = problem(
        s.api_post(
            "/print.pdf?template=L7163",
            &json!({"keys": ["door", "nosuchkey"]}),
        )
        .await,
        StatusCode::NOT_FOUND,
    )
    .await;
    assert!(detail.contains("nosuchkey"), "{detail}");
    problem(
        s.api_post("/print.pdf?template=L7163", &json!({"keys": []}))
            .await,
        StatusCode::BAD_REQUEST,
    )
    .await;
    let many: Vec<String> = (0..1001).map(|i| format!("k{i}")).collect();
    problem(
        s.api_post("/print.pdf?template=L7163", &json!({ "keys": many }))
            .await,
        StatusCode::PAYLOAD_TOO_LARGE,
    )
    .await;

    // The console: the link page again with the message beside the field.
    let res = s
        .console_get("/link/pdf?key=door&form=label&template=L7163&code-size=60mm")
        .await;
    assert_eq!(res.status(), StatusCode::BAD_REQUEST);
    let page = res.text().await.expect("page");
    assert!(
        page.contains(r#"id="label-pdf-code-size-problem""#),
        "{page}"
    );
    assert!(page.contains(r#"value="60mm""#), "typed value kept");
    let res = s
        .console_get("/link/pdf?key=door&form=poster&poster=A3&bleed=lots")
        .await;
    assert_eq!(res.status(), StatusCode::BAD_REQUEST);
    let page = res.text().await.expect("page");
    assert!(page.contains(r#"id="poster-pdf-bleed-problem""#), "{page}");
    assert!(!page.contains(r#"id="label-pdf-bleed-problem""#));
    let res = s
        .console_get("/link/pdf?key=nosuchkey&template=L7163")
        .await;
    assert_eq!(res.status(), StatusCode::NOT_FOUND);
}

/// The value of a gauge in the admin listener's `/metrics`.
async fn gauge(s: &Server, name: &str) -> Option<f64> {
    let text = s.admin("/metrics").await.text().await.expect("metrics");
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.trim().parse().ok())
}

/// Issue 30, item 8: a custom label without `paper=` is its own page, and
/// `label=99999x99999mm` was a 283,462 pt page. A page is at most 5080 mm
/// a side on every surface.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_custom_label_larger_than_a_page_is_refused_on_every_surface() {
    let s = server().await;
    s.app.link("docs", "https://example.com/docs").await;
    s.app.wait_for_status("/docs", 302).await;
    let template = "custom:label=99999x99999mm";
    let limit = "at most 5080 mm (200 in)";

    let res = s.admin(&format!("/qr/docs.pdf?template={template}")).await;
    assert_eq!(res.status(), StatusCode::BAD_REQUEST);
    let body = res.text().await.expect("body");
    assert_eq!(body.lines().count(), 1, "{body}");
    assert!(body.contains(limit), "{body}");

    let res = s
        .api_get(&format!("/links/docs/print.pdf?template={template}"))
        .await;
    assert_eq!(res.status(), StatusCode::BAD_REQUEST);
    assert_eq!(
        header(&res, "content-type"),
        Some("application/problem+json")
    );
    let problem: Value = res.json().await.expect("problem");
    assert!(
        problem["detail"]
            .as_str()
            .is_some_and(|d| d.contains(limit)),
        "{problem}"
    );

    let res = s
        .console_get(&format!(
            "/link/pdf?key=docs&form=label&template={template}"
        ))
        .await;
    assert_eq!(res.status(), StatusCode::BAD_REQUEST);
    let page = res.text().await.expect("page");
    assert!(
        page.contains(r#"id="label-pdf-template-problem""#),
        "{page}"
    );
    assert!(page.contains(limit), "{page}");

    let out = s.app.dir.path().join("huge.pdf");
    let run = s.app.cli(&[
        "print",
        "docs",
        "--template",
        template,
        "-o",
        out.to_str().expect("utf-8"),
    ]);
    assert_eq!(run.status.code(), Some(2), "{run:?}");
    let err = String::from_utf8_lossy(&run.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains(limit), "{err}");
    assert!(!out.exists(), "nothing written");
}

/// Issue 30, item 4: 1,000 copies of a long key as A4 posters at level H
/// in one `POST print.pdf` were 24 CPU-seconds and a 60 MB PDF. A job over
/// the served budget is refused before any code is built, with a problem
/// that says what to reduce; the same job at level L in fewer copies is
/// printed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_print_job_over_the_work_budget_is_a_problem_saying_what_to_reduce() {
    let s = server().await;
    let segments = vec!["k".repeat(64); 4].join("/");
    let long = &segments[..qrtag::values::link_key::MAX_KEY_LEN];
    s.app.link(long, "https://example.com/long").await;
    s.app.wait_for_status(&format!("/{long}"), 302).await;
    let keys = vec![long; 1000];
    let started = std::time::Instant::now();
    let res = s
        .api_post("/print.pdf?poster=A4&ec=H", &json!({ "keys": keys }))
        .await;
    let took = started.elapsed();
    assert_eq!(res.status(), StatusCode::BAD_REQUEST, "after {took:?}");
    assert_eq!(
        header(&res, "content-type"),
        Some("application/problem+json")
    );
    let problem: Value = res.json().await.expect("problem");
    let detail = problem["detail"].as_str().expect("detail");
    assert!(detail.contains("print fewer keys at once"), "{detail}");
    assert!(
        detail.contains(&format!("at most {}", qrtag::print::budget::SERVED_MODULES)),
        "{detail}"
    );
    // A key longer than any key can be: refused by name, not echoed whole.
    let over = vec!["k".repeat(64); 20].join("/");
    let res = s
        .api_post("/print.pdf?poster=A4", &json!({ "keys": [&over[..1039]] }))
        .await;
    assert_eq!(res.status(), StatusCode::BAD_REQUEST);
    let problem: Value = res.json().await.expect("problem");
    let detail = problem["detail"].as_str().expect("detail");
    assert!(detail.contains("at most 256"), "{detail}");
    assert!(detail.len() < 400, "{detail}");
    // Within the budget: printed.
    let res = s
        .api_post("/print.pdf?poster=A4&ec=L", &json!({ "keys": &keys[..10] }))
        .await;
    pdf_body(res, "ten long keys").await;
}

/// Issue 30, item 4: the REST API had render slots of its own beside the
/// admin listener's, so twice the documented cap rendered at once. With
/// every slot held by the API's print runs, the admin listener's next
/// image is a 503 with `Retry-After`, and `/metrics` shows the one gate.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn one_render_gate_holds_across_the_admin_listener_and_the_api() {
    let s = server().await;
    let slots = gauge(&s, "qrtag_render_slots")
        .await
        .expect("qrtag_render_slots in /metrics");
    let expected = std::thread::available_parallelism()
        .map_or(1, usize::from)
        .min(qrtag::print::tag_image::RenderGate::MAX_SLOTS);
    assert_eq!(slots, expected as f64);
    assert_eq!(gauge(&s, "qrtag_renders_in_flight").await, Some(0.0));

    // As many slow print runs on the API as there are slots: 1,000 posters
    // each, within the budget.
    let keys = vec!["door"; 1000];
    let runs: Vec<_> = (0..expected)
        .map(|_| {
            let request = s
                .app
                .client
                .post(s.api_url("/print.pdf?poster=A4&ec=H&caption=none"))
                .bearer_auth(&s.api_key)
                .json(&json!({ "keys": keys }));
            tokio::spawn(async move { request.send().await.expect("POST").status() })
        })
        .collect();
    let mut refused = None;
    for attempt in 0..200 {
        if gauge(&s, "qrtag_renders_in_flight").await == Some(slots) {
            let res = s.admin(&format!("/qr/door.png?v={attempt}")).await;
            if res.status() == StatusCode::SERVICE_UNAVAILABLE {
                refused = Some(res);
                break;
            }
        }
        if runs.iter().all(tokio::task::JoinHandle::is_finished) {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let res = refused.expect("the admin listener rendered while the API held every slot");
    assert_eq!(header(&res, "retry-after"), Some("1"));
    for run in runs {
        assert_eq!(run.await.expect("joined"), StatusCode::OK);
    }
    assert_eq!(gauge(&s, "qrtag_renders_in_flight").await, Some(0.0));
    let res = s.admin("/qr/door.png?v=after").await;
    assert_eq!(res.status(), StatusCode::OK);
}

/// A layout refused over HTTP names the query parameter or form field to
/// change, not `qrtag print`'s flag; the CLI keeps naming its flag (issue
/// 31, item 18).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn layout_refusals_name_the_parameter_over_http_and_the_flag_in_the_cli() {
    let s = server().await;
    s.app.link("long", "https://example.com/long").await;
    let notes = "a caption far too long for a small label ".repeat(4);
    let set = s.app.cli(&["set", "long", "--notes", &notes]);
    assert!(set.status.success(), "{set:?}");
    s.app.wait_for_status("/long", 302).await;
    for (key, query, says, flag) in [
        (
            "door",
            "template=L7651&code-size=8mm",
            "or a larger code-size",
            "or a larger --code-size",
        ),
        (
            "long",
            "template=L7651&caption=notes",
            "use caption=key or caption=none",
            "use --caption key or --caption none",
        ),
    ] {
        let res = s.admin(&format!("/qr/{key}.pdf?{query}")).await;
        assert_eq!(res.status(), StatusCode::BAD_REQUEST, "{query}");
        let body = res.text().await.expect("body");
        assert!(
            body.contains(says) && !body.contains("--"),
            "{query}: {body}"
        );

        let res = s.api_get(&format!("/links/{key}/print.pdf?{query}")).await;
        assert_eq!(res.status(), StatusCode::BAD_REQUEST, "{query}");
        let body: Value = res.json().await.expect("problem");
        let detail = body["detail"].as_str().expect("detail");
        assert!(
            detail.contains(says) && !detail.contains("--"),
            "{query}: {detail}"
        );

        let page = s
            .console_text(&format!("/link/pdf?key={key}&form=label&{query}"))
            .await;
        assert!(page.contains(says), "{query}: console");
        assert!(!page.contains(flag), "{query}: console");

        let args = query_to_args(query);
        let mut all = vec!["print", key];
        all.extend(args.iter().map(String::as_str));
        all.extend(["-o", "/dev/null"]);
        let run = s.app.cli(&all);
        assert!(!run.status.success(), "{query}");
        let err = String::from_utf8_lossy(&run.stderr);
        assert!(err.contains(flag), "{query}: {err}");
    }
    // No `--list-templates` to give a URL: the command that lists them.
    let res = s.admin("/qr/door.pdf?template=L7136").await;
    let body = res.text().await.expect("body");
    assert!(
        body.contains("(see `qrtag print --list-templates`)"),
        "{body}"
    );
}

/// A two-colour logo, wider than tall.
fn logo() -> image::RgbaImage {
    image::RgbaImage::from_fn(96, 64, |x, _| {
        if x < 48 {
            image::Rgba([200, 30, 30, 255])
        } else {
            image::Rgba([30, 160, 60, 255])
        }
    })
}

/// Issue 31: colours and a logo on every surface that makes tags. The
/// server's logo (`serve --print-logo`, configured once, not uploaded with
/// each request) and the colours through `/qr/KEY.pdf`, the console's
/// label form and the REST API give `qrtag print --logo`'s bytes, and the
/// codes scan; a logo too large to read back is a 422 everywhere, a logo
/// asked of a server without one a 400 naming `logo`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_logo_and_colours_on_every_surface_give_the_cli_bytes_and_scan() {
    let s = server_with_logo(Some(logo())).await;
    let dir = tempfile::tempdir().expect("tempdir");
    // Apart from the scratch space `decode_pdf` renders pages into.
    let logo_dir = tempfile::tempdir().expect("tempdir");
    let file = logo_dir.path().join("logo.png");
    logo().save(&file).expect("logo");
    let query = "template=L7160&skip=1&dark=%231e3a8a&light=%23fffbe6&logo=true&logo-size=25";
    let flags = [
        "--template",
        "L7160",
        "--skip",
        "1",
        "--dark",
        "#1e3a8a",
        "--light",
        "#fffbe6",
        "--logo",
        file.to_str().expect("utf-8"),
        "--logo-size",
        "25",
    ];
    let cli = s.cli(&["door"], &flags);
    let admin = pdf_body(s.admin(&format!("/qr/door.pdf?{query}")).await, "admin").await;
    let console = pdf_body(
        s.console_get(&format!("/link/pdf?key=door&form=label&{query}"))
            .await,
        "console",
    )
    .await;
    let rest = pdf_body(
        s.api_get(&format!("/links/door/print.pdf?{query}")).await,
        "rest",
    )
    .await;
    assert!(admin == cli, "/qr/door.pdf differs from qrtag print --logo");
    assert!(
        console == cli,
        "the console's form differs from qrtag print --logo"
    );
    assert!(rest == cli, "the REST API differs from qrtag print --logo");
    assert_eq!(decode_pdf(dir.path(), &cli), [format!("{PUBLIC_URL}/door")]);
    let run = s.cli(&["door", "docs/api"], &flags);
    let rest_run = pdf_body(
        s.api_post(
            &format!("/print.pdf?{query}"),
            &json!({"keys": ["door", "docs/api"]}),
        )
        .await,
        "rest run",
    )
    .await;
    assert!(
        rest_run == run,
        "the REST run differs from qrtag print --logo"
    );
    assert_eq!(
        decode_pdf(dir.path(), &run),
        [
            format!("{PUBLIC_URL}/docs/api"),
            format!("{PUBLIC_URL}/door")
        ]
    );

    // The images: the admin listener, the REST API and the console's
    // download give `qrtag qr --logo`'s bytes, PNG and SVG alike.
    for format in ["png", "svg"] {
        let image_query = "scale=6&dark=%231e3a8a&light=%23fffbe6&logo=true&logo-size=25";
        let out = logo_dir.path().join(format!("door.{format}"));
        let run = s.app.cli(&[
            "qr",
            "door",
            "--scale",
            "6",
            "--dark",
            "#1e3a8a",
            "--light",
            "#fffbe6",
            "--logo",
            file.to_str().expect("utf-8"),
            "--logo-size",
            "25",
            "-o",
            out.to_str().expect("utf-8"),
        ]);
        assert!(run.status.success(), "{run:?}");
        let cli = std::fs::read(&out).expect("image");
        let admin = s.admin(&format!("/qr/door.{format}?{image_query}")).await;
        assert_eq!(admin.status(), StatusCode::OK, "{format}");
        let admin = admin.bytes().await.expect("body").to_vec();
        let rest = s
            .api_get(&format!("/links/door/qr.{format}?{image_query}"))
            .await;
        assert_eq!(rest.status(), StatusCode::OK, "{format}");
        let rest = rest.bytes().await.expect("body").to_vec();
        let console = s
            .console_get(&format!(
                "/link/download?key=door&format={format}&{image_query}"
            ))
            .await;
        assert_eq!(console.status(), StatusCode::OK, "{format}");
        let console = console.bytes().await.expect("body").to_vec();
        assert!(
            admin == cli,
            "/qr/door.{format} differs from qrtag qr --logo"
        );
        assert!(
            rest == cli,
            "the REST {format} differs from qrtag qr --logo"
        );
        assert!(
            console == cli,
            "the console's {format} differs from qrtag qr --logo"
        );
        if format == "png" {
            let zbar = Command::new("zbarimg")
                .args(["-q", "--raw", "-Sdisable", "-Sqrcode.enable"])
                .arg(&out)
                .output()
                .expect("zbarimg");
            assert_eq!(
                String::from_utf8_lossy(&zbar.stdout).trim(),
                format!("{PUBLIC_URL}/door")
            );
        }
    }
    // The link page offers it, and shows the code with the logo.
    let page = s
        .console_text("/link?key=door&dark=%231e3a8a&light=&logo=true")
        .await;
    assert!(page.contains(r#"name="logo""#), "{page}");
    assert!(page.contains("logo=true&amp;logo-size=20"), "{page}");

    // A logo that hides too much: refused, with the reason, not printed.
    let big = "template=L7160&logo=true&logo-size=45";
    let res = s.admin(&format!("/qr/door.pdf?{big}")).await;
    assert_eq!(res.status(), StatusCode::UNPROCESSABLE_ENTITY);
    let body = res.text().await.expect("body");
    assert!(
        body.contains("does not read back") && body.contains("logo-size"),
        "{body}"
    );
    let res = s.api_get(&format!("/links/door/print.pdf?{big}")).await;
    assert_eq!(res.status(), StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(
        header(&res, "content-type"),
        Some("application/problem+json")
    );
    let res = s
        .console_get(&format!("/link/pdf?key=door&form=label&{big}"))
        .await;
    assert!(res.status().is_client_error(), "{}", res.status());
    // Colours a camera cannot read: the field named.
    let res = s
        .admin("/qr/door.pdf?template=L7160&dark=%23777&light=%23888")
        .await;
    assert_eq!(res.status(), StatusCode::BAD_REQUEST);
    assert!(res.text().await.expect("body").contains("contrast ratio"));

    // A server without a logo says so, naming the parameter and the flag.
    let plain = server().await;
    let res = plain.admin("/qr/door.pdf?template=L7160&logo=true").await;
    assert_eq!(res.status(), StatusCode::BAD_REQUEST);
    let body = res.text().await.expect("body");
    assert!(
        body.contains("no logo") && body.contains("--print-logo"),
        "{body}"
    );
    let res = plain
        .console_get("/link/pdf?key=door&form=label&template=L7160&logo=true")
        .await;
    assert_eq!(res.status(), StatusCode::BAD_REQUEST);
    let page = res.text().await.expect("page");
    assert!(page.contains(r#"id="label-pdf-logo-problem""#), "{page}");
    let res = plain.admin("/qr/door.png?logo=true").await;
    assert_eq!(res.status(), StatusCode::BAD_REQUEST);
    assert!(res.text().await.expect("body").contains("--print-logo"));
    let res = plain.api_get("/links/door/qr.svg?logo=true").await;
    assert_eq!(res.status(), StatusCode::BAD_REQUEST);
    let res = s.admin("/qr/door.png?logo=true&logo-size=45").await;
    assert_eq!(res.status(), StatusCode::UNPROCESSABLE_ENTITY);
    let res = s.admin("/qr/door.png?logo-size=30").await;
    assert_eq!(res.status(), StatusCode::BAD_REQUEST);
}
