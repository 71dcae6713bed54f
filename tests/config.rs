//! The configuration file and the public URL kept with the links (issue 18,
//! "The service's identity, in one place"): the real binary, real files, a
//! real server over real sockets.

#[path = "support/qr_decode.rs"]
mod qr_decode;
mod support;

use std::path::Path;
use std::process::{Output, Stdio};

use support::process::ServerProcess;
use support::{PUBLIC_URL, qrtag_bin};

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Runs the binary in `cwd` with `env` (the configuration file too: none
/// unless `env` names one).
fn run_in(cwd: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    qrtag_bin()
        .args(args)
        .envs(env.iter().copied())
        .current_dir(cwd)
        .stdin(Stdio::null())
        .output()
        .expect("run qrtag")
}

fn files_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .expect("read dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// The trap: `qrtag new` with no configuration printed
/// `http://127.0.0.1:8080/…`, a tag that decodes and never redirects.
#[test]
fn new_without_a_public_url_prints_no_tag() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    let out = run_in(d, &["init"], &[]);
    assert!(out.status.success(), "{out:?}");
    let out = run_in(d, &["new", "https://example.com/a"], &[]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(out.stdout.is_empty(), "printed {}", stdout(&out));
    let err = stderr(&out);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with("qrtag: no public URL to print short URLs with: set public_url in")
            && err.contains("QRTAG_PUBLIC_URL")
            && err.contains("--public-url"),
        "{err}"
    );
    // A loopback one given needs --allow-local-url, and nothing is written.
    let out = run_in(
        d,
        &[
            "--public-url",
            "http://127.0.0.1:8080",
            "new",
            "https://example.com/a",
        ],
        &[],
    );
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(stderr(&out).contains("--allow-local-url"), "{out:?}");
    let list = run_in(d, &["list"], &[]);
    assert!(list.status.success() && list.stdout.is_empty(), "{list:?}");
    for args in [
        &["qr", "abcde", "--format", "svg"][..],
        &["batch", "1", "--sheet", "s.svg"],
    ] {
        let out = run_in(
            d,
            &[&["--public-url", "http://localhost:8080"], args].concat(),
            &[],
        );
        assert_eq!(
            out.status.code(),
            Some(if args[0] == "qr" { 1 } else { 2 }),
            "{args:?}: {out:?}"
        );
        assert!(out.stdout.is_empty(), "{args:?}: {out:?}");
    }
    assert!(!d.join("s.svg").exists(), "no sheet written");
    // Allowed, it is printed, and recorded for the next commands.
    let out = run_in(
        d,
        &[
            "--allow-local-url",
            "--public-url",
            "http://127.0.0.1:8080",
            "new",
            "https://example.com/a",
        ],
        &[],
    );
    assert!(out.status.success(), "{out:?}");
    assert!(
        stdout(&out).starts_with("http://127.0.0.1:8080/"),
        "{out:?}"
    );
    let out = run_in(
        d,
        &["--allow-local-url", "new", "https://example.com/b"],
        &[],
    );
    assert!(
        stdout(&out).starts_with("http://127.0.0.1:8080/"),
        "{out:?}"
    );
}

/// The trap: `serve --listen 127.0.0.1:8280` answered with 8080 in its
/// `Link` header (and DIDComm replies). Without any public URL it answers
/// with its own address, warns, and records nothing.
#[tokio::test]
async fn serve_without_a_public_url_answers_with_its_own_address() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("qrtag.db");
    let out = run_in(
        dir.path(),
        &["--db", db.to_str().expect("utf-8"), "init"],
        &[],
    );
    assert!(out.status.success(), "{out:?}");
    {
        let store = qrtag::store::sqlite::SqliteStore::open(&db).expect("store");
        let key = qrtag::values::link_key::LinkKey::parse("poster").expect("key");
        let url =
            qrtag::values::destination::Destination::parse("https://example.com/p").expect("url");
        qrtag::links::create(
            &store,
            &qrtag::link::Author::cli(qrtag::link::Via::Cli, "test", "host"),
            &url,
            Some(&key),
            false,
        )
        .await
        .expect("create");
    }
    let token = "walkthrough-token-1";
    let srv = ServerProcess::spawn(
        &db,
        &["--api-listen", "127.0.0.1:0", "--api-token", token],
        &[],
        false,
    )
    .await;
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .expect("client");
    let link = support::poll::until(std::time::Duration::from_secs(5), "the link served", || {
        let client = client.clone();
        let url = srv.url("/poster");
        async move {
            let r = client.get(url).send().await.ok()?;
            (r.status() == 302).then(|| support::header(&r, "link").map(str::to_owned))?
        }
    })
    .await;
    assert_eq!(
        link,
        format!("<http://{}/poster>; rel=\"shortlink\"", srv.public)
    );
    // DIDComm answers with the same origin.
    let api = srv
        .stderr()
        .split_whitespace()
        .find_map(|w| w.strip_prefix("api="))
        .expect("the DIDComm listener's address")
        .to_owned();
    let msg = serde_json::json!({
        "@type": "https://didcomm.org/shorten-url/1.0/request-shortened-url",
        "@id": "req-1",
        "url": "https://example.com/invite?oob=eyJ9",
        "goal_code": "shorten.oobv1",
        "requested_validity_seconds": 0,
        "~transport": {"return_route": "all"}
    });
    let reply: serde_json::Value = client
        .post(format!("http://{api}/didcomm"))
        .header("content-type", "application/json")
        .bearer_auth(token)
        .body(msg.to_string())
        .send()
        .await
        .expect("DIDComm request")
        .json()
        .await
        .expect("a JSON reply");
    let short = reply["shortened_url"].as_str().unwrap_or_default();
    assert!(
        short.starts_with(&format!("http://{}/", srv.public)),
        "{reply}"
    );
    assert!(
        srv.stderr().contains(&format!(
            "qrtag: warning: serving with the local public URL http://{}",
            srv.public
        )),
        "{}",
        srv.stderr()
    );
    srv.stop().await;
    let out = run_in(
        dir.path(),
        &["--db", db.to_str().expect("utf-8"), "config"],
        &[],
    );
    assert!(
        stdout(&out).contains("# public URL recorded with the links: none"),
        "{out:?}"
    );
}

/// The trap: `cd elsewhere && qrtag new …` made an empty `./qrtag.db` and
/// printed a short URL that 404s. With the configuration file named, it
/// uses the configured database (its path relative to the file); without
/// one, it says there is no database and creates none.
#[test]
fn a_command_run_elsewhere_uses_the_configured_database() {
    let dir = tempfile::tempdir().expect("tempdir");
    let service = dir.path().join("srv");
    let elsewhere = dir.path().join("elsewhere");
    std::fs::create_dir_all(&service).expect("mkdir");
    std::fs::create_dir_all(&elsewhere).expect("mkdir");
    let toml = service.join("qrtag.toml");
    std::fs::write(
        &toml,
        format!("db = \"links.db\"\npublic_url = \"{PUBLIC_URL}\"\n"),
    )
    .expect("toml");
    let config = [("QRTAG_CONFIG", toml.to_str().expect("utf-8"))];
    let out = run_in(&elsewhere, &["init"], &config);
    assert!(out.status.success(), "{out:?}");
    let out = run_in(
        &elsewhere,
        &["new", "https://example.com/x", "--key", "x"],
        &config,
    );
    assert!(out.status.success(), "{out:?}");
    assert_eq!(stdout(&out), format!("{PUBLIC_URL}/x\n"));
    assert_eq!(files_in(&elsewhere), Vec::<String>::new(), "nothing here");
    let out = run_in(&service, &["--config", "qrtag.toml", "list"], &[]);
    assert!(
        stdout(&out).starts_with("x\thttps://example.com/x\t"),
        "{out:?}"
    );
    // The file found in the working directory, no variable needed.
    let out = qrtag_bin()
        .env_remove("QRTAG_CONFIG")
        .arg("show")
        .arg("x")
        .current_dir(&service)
        .output()
        .expect("run");
    assert!(out.status.success(), "{out:?}");

    // No configuration: no database here, said with where db came from.
    let out = run_in(
        &elsewhere,
        &["--public-url", PUBLIC_URL, "new", "https://example.com/y"],
        &[],
    );
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert_eq!(
        stderr(&out),
        "qrtag: no database at qrtag.db (db from default); create it with qrtag init, or start qrtag serve\n"
    );
    assert_eq!(
        files_in(&elsewhere),
        Vec::<String>::new(),
        "no stray database"
    );
}

/// The trap: a different public URL in the environment was used silently,
/// printing tags for an origin the service does not answer on.
#[test]
fn a_different_public_url_is_refused_unless_typed() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    let out = run_in(d, &["--public-url", PUBLIC_URL, "init"], &[]);
    assert!(out.status.success(), "{out:?}");
    let other = [("QRTAG_PUBLIC_URL", "https://other.example")];
    let out = run_in(d, &["new", "https://example.com/a"], &other);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(out.stdout.is_empty());
    assert!(
        stderr(&out).starts_with(
            "qrtag: the public URL https://other.example (from QRTAG_PUBLIC_URL) is not https://0x1f.ie, the one recorded with the links"
        ),
        "{out:?}"
    );
    let toml = d.join("other.toml");
    std::fs::write(&toml, "public_url = \"https://other.example\"\n").expect("toml");
    let out = run_in(
        d,
        &["--config", "other.toml", "new", "https://example.com/a"],
        &[],
    );
    assert!(
        stderr(&out).contains(&format!("(from file other.toml) is not {PUBLIC_URL}")),
        "{out:?}"
    );
    let list = run_in(d, &["list"], &[]);
    assert!(list.stdout.is_empty(), "nothing written: {list:?}");
    // The environment beats the file.
    let out = run_in(
        d,
        &["--config", "other.toml", "new", "https://example.com/a"],
        &[("QRTAG_PUBLIC_URL", PUBLIC_URL)],
    );
    assert!(
        stdout(&out).starts_with(&format!("{PUBLIC_URL}/")),
        "{out:?}"
    );
    // Typed on the command line: a one-off, said on stderr.
    let out = run_in(
        d,
        &[
            "--public-url",
            "https://other.example",
            "new",
            "https://example.com/a",
        ],
        &[],
    );
    assert!(out.status.success(), "{out:?}");
    assert!(
        stdout(&out).starts_with("https://other.example/"),
        "{out:?}"
    );
    assert!(stderr(&out).contains("this once"), "{out:?}");
    // Changing the recorded one is explicit, and warned of.
    let out = run_in(d, &["--public-url", "https://other.example", "init"], &[]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(stderr(&out).contains("--force"), "{out:?}");
    let out = run_in(
        d,
        &["--public-url", "https://other.example", "init", "--force"],
        &[],
    );
    assert!(out.status.success(), "{out:?}");
    assert!(stderr(&out).contains("stop working"), "{out:?}");
    let out = run_in(d, &["new", "https://example.com/b"], &other);
    assert!(
        stdout(&out).starts_with("https://other.example/"),
        "{out:?}"
    );
}

/// What the file may hold, how a mistake in it is said, and `qrtag config`.
#[test]
fn the_file_its_mistakes_and_qrtag_config() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    let toml = d.join("qrtag.toml");
    let config = [("QRTAG_CONFIG", toml.to_str().expect("utf-8"))];
    for (text, said) in [
        (
            "dbb = 'x.db'\n",
            "qrtag.toml: unknown key `dbb` (did you mean `db`?)",
        ),
        (
            "workers = '4'\n",
            "qrtag.toml: key `workers`: expected an integer",
        ),
        ("console = 'yes'\n", "key `console`: expected a boolean"),
        (
            "listen = 'nowhere'\n",
            "key `listen`: invalid value 'nowhere'",
        ),
        (
            "trusted_proxies = ['example.com']\n",
            "key `trusted_proxies`",
        ),
        (
            "public_url = 'https://a.example/path'\n",
            "key `public_url`",
        ),
        ("db = \n", "line 1: not valid TOML"),
    ] {
        std::fs::write(&toml, text).expect("toml");
        let out = run_in(d, &["list"], &config);
        assert_eq!(out.status.code(), Some(2), "{text}: {out:?}");
        let err = stderr(&out);
        assert_eq!(err.lines().count(), 1, "{text}: {err}");
        assert!(
            err.starts_with("qrtag: ") && err.contains(said),
            "{text}: {err}"
        );
    }
    let out = run_in(d, &["--config", "missing.toml", "list"], &[]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert_eq!(
        stderr(&out),
        "qrtag: the configuration file missing.toml (named by --config) does not exist\n"
    );

    std::fs::write(
        &toml,
        "db = 'links.db'\npublic_url = 'https://0x1f.ie'\nworkers = 4\nconsole = true\n\
         trusted_proxies = ['10.0.0.0/8', '::1']\ncouchdb_user = 'qrtag'\ncouchdb_password = 'hunter2'\n",
    )
    .expect("toml");
    std::fs::set_permissions(&toml, std::os::unix::fs::PermissionsExt::from_mode(0o644))
        .expect("chmod");
    let out = run_in(
        d,
        &["--db", "other.db", "config"],
        &[config[0], ("QRTAG_LISTEN", "127.0.0.1:9999")],
    );
    assert!(out.status.success(), "{out:?}");
    let text = stdout(&out);
    let file = format!("file {}", toml.display());
    for line in [
        format!(
            "# configuration file: {} (named by QRTAG_CONFIG)",
            toml.display()
        ),
        "db = \"other.db\"  # --db".into(),
        "listen = \"127.0.0.1:9999\"  # QRTAG_LISTEN".into(),
        format!("public_url = \"https://0x1f.ie\"  # {file}"),
        format!("workers = 4  # {file}"),
        format!("console = true  # {file}"),
        format!("trusted_proxies = [\"10.0.0.0/8\", \"::1\"]  # {file}"),
        format!("couchdb_password = (set)  # {file}"),
        "admin_listen = \"127.0.0.1:8081\"  # default".into(),
        "# public URL recorded with the links: unknown (no database at other.db (db from --db)"
            .into(),
    ] {
        assert!(text.contains(&line), "{line:?} not in\n{text}");
    }
    assert!(!text.contains("hunter2"), "{text}");
    assert!(
        stderr(&out).contains("holds couchdb_password and others can read it (mode 644)"),
        "{out:?}"
    );
    // A relative db in the file is beside the file.
    let out = run_in(d, &["config"], &config);
    assert!(
        stdout(&out).contains(&format!(
            "db = \"{}\"",
            d.canonicalize().expect("dir").join("links.db").display()
        )),
        "{out:?}"
    );
}

/// `serve` records the public URL it is given the first time, and refuses
/// to start with a different one from its environment.
#[tokio::test]
async fn serve_records_its_public_url_and_refuses_another() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("qrtag.db");
    let db_arg = db.to_str().expect("utf-8");
    let srv = ServerProcess::spawn(&db, &[], &[("QRTAG_PUBLIC_URL", PUBLIC_URL)], false).await;
    let ready = srv.admin_url("/readyz");
    support::poll::until(std::time::Duration::from_secs(10), "ready", || {
        let ready = ready.clone();
        async move {
            let r = reqwest::get(ready).await.ok()?;
            (r.status() == 200).then_some(())
        }
    })
    .await;
    srv.stop().await;
    let out = run_in(dir.path(), &["--db", db_arg, "config"], &[]);
    assert!(
        stdout(&out).contains(&format!(
            "# public URL recorded with the links: {PUBLIC_URL}"
        )),
        "{out:?}"
    );
    let out = run_in(
        dir.path(),
        &[
            "--db",
            db_arg,
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--admin-listen",
            "127.0.0.1:0",
        ],
        &[("QRTAG_PUBLIC_URL", "https://other.example")],
    );
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(
        stderr(&out).starts_with(
            "qrtag: the public URL https://other.example (from QRTAG_PUBLIC_URL) is not https://0x1f.ie"
        ),
        "{out:?}"
    );
}

/// Changing the public URL is one command (issue 31): `init --public-url
/// NEW --force` records it and changes the configuration file in force,
/// keeping its comments, so the next `qrtag new` prints with it instead of
/// refusing the old one the file still named. A `QRTAG_PUBLIC_URL` it
/// cannot change is named.
#[test]
fn init_force_changes_the_file_in_force_too() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    let toml = d.join("qrtag.toml");
    let before = "# qrtag for tags.example.org\n\n# printed on every tag: think twice\n\
                  public_url = \"https://tags.example.org\"   # since 2024\ndb = \"links.db\"\n";
    std::fs::write(&toml, before).expect("toml");
    let config = [("QRTAG_CONFIG", toml.to_str().expect("utf-8"))];
    let out = run_in(d, &["init"], &config);
    assert!(out.status.success(), "{out:?}");
    let out = run_in(
        d,
        &["--public-url", "https://go.example.org", "init", "--force"],
        &config,
    );
    assert!(out.status.success(), "{out:?}");
    assert!(
        stdout(&out).contains(&format!(
            "configuration file {}: public_url = \"https://go.example.org\" (was https://tags.example.org)",
            toml.display()
        )),
        "{out:?}"
    );
    assert_eq!(
        std::fs::read_to_string(&toml).expect("read"),
        before.replace("https://tags.example.org\"", "https://go.example.org\""),
        "only the value changed"
    );
    let out = run_in(d, &["new", "https://example.com/a"], &config);
    assert!(out.status.success(), "{out:?}");
    assert!(
        stdout(&out).starts_with("https://go.example.org/"),
        "{out:?}"
    );
    // The environment is not the command's to change: it is named.
    let env = [config[0], ("QRTAG_PUBLIC_URL", "https://go.example.org")];
    let out = run_in(
        d,
        &[
            "--public-url",
            "https://third.example.org",
            "init",
            "--force",
        ],
        &env,
    );
    assert!(out.status.success(), "{out:?}");
    assert!(
        stderr(&out).contains(
            "QRTAG_PUBLIC_URL is https://go.example.org: set it to https://third.example.org or unset it"
        ),
        "{out:?}"
    );
    assert!(
        std::fs::read_to_string(&toml)
            .expect("read")
            .contains("public_url = \"https://third.example.org\"   # since 2024"),
        "the file follows all the same"
    );
}

/// A running server answers with the recorded public URL within seconds
/// of its change (issue 31): the `Link` header and the admin listener's QR
/// codes follow `qrtag init --public-url NEW --force` run beside it,
/// without a restart.
#[tokio::test]
async fn a_running_server_follows_the_recorded_public_url() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("qrtag.db");
    let db_arg = db.to_str().expect("utf-8");
    let out = run_in(
        dir.path(),
        &["--db", db_arg, "--public-url", PUBLIC_URL, "init"],
        &[],
    );
    assert!(out.status.success(), "{out:?}");
    let out = run_in(
        dir.path(),
        &[
            "--db",
            db_arg,
            "new",
            "https://example.com/a",
            "--key",
            "poster",
        ],
        &[],
    );
    assert!(out.status.success(), "{out:?}");
    let srv = ServerProcess::spawn(&db, &[], &[("QRTAG_LOG", "info")], false).await;
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .expect("client");
    let link_is = |want: String| {
        let client = client.clone();
        let url = srv.url("/poster");
        move || {
            let client = client.clone();
            let url = url.clone();
            let want = want.clone();
            async move {
                let r = client.get(url).send().await.ok()?;
                (r.status() == 302 && support::header(&r, "link") == Some(want.as_str()))
                    .then_some(())
            }
        }
    };
    let within = std::time::Duration::from_secs(5);
    support::poll::until(
        within,
        "the recorded URL in the Link header",
        link_is(format!("<{PUBLIC_URL}/poster>; rel=\"shortlink\"")),
    )
    .await;
    let out = run_in(
        dir.path(),
        &[
            "--db",
            db_arg,
            "--public-url",
            "https://go.example.org",
            "init",
            "--force",
        ],
        &[],
    );
    assert!(out.status.success(), "{out:?}");
    support::poll::until(
        within,
        "the new URL in the Link header",
        link_is("<https://go.example.org/poster>; rel=\"shortlink\"".into()),
    )
    .await;
    let png = client
        .get(srv.admin_url("/qr/poster.png"))
        .send()
        .await
        .expect("qr")
        .bytes()
        .await
        .expect("png");
    assert_eq!(
        qr_decode::decode_png(&png).0,
        "https://go.example.org/poster"
    );
    let said = srv.stderr();
    assert_eq!(
        said.matches("public URL changed").count(),
        1,
        "one line for the change: {said}"
    );
    srv.stop().await;
}

/// Issue 31: `qrtag stats` with no FILE refused to run although the
/// configuration names the access log. It reads the log `serve` writes,
/// with its rotations, from wherever it runs; or the `scan_logs` patterns;
/// with nothing configured it says what to give.
#[tokio::test]
async fn stats_reads_the_configured_access_log_and_its_rotations() {
    let dir = tempfile::tempdir().expect("tempdir");
    let service = dir.path().join("srv");
    let elsewhere = dir.path().join("elsewhere");
    std::fs::create_dir_all(service.join("logs")).expect("mkdir");
    std::fs::create_dir_all(&elsewhere).expect("mkdir");
    let toml = service.join("qrtag.toml");
    std::fs::write(
        &toml,
        format!(
            "db = \"links.db\"\npublic_url = \"{PUBLIC_URL}\"\naccess_log = \"logs/access.log\"\n"
        ),
    )
    .expect("toml");
    let config = [("QRTAG_CONFIG", toml.to_str().expect("utf-8"))];
    for args in [
        &["init"][..],
        &["new", "https://example.com/p", "--key", "poster"],
    ] {
        let out = run_in(&elsewhere, args, &config);
        assert!(out.status.success(), "{out:?}");
    }
    let db = service.join("links.db");
    let log = service.join("logs/access.log");
    // A phone's browser: a client without one is counted as a bot.
    let client = reqwest::Client::builder()
        .user_agent("Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.0 Mobile/15E148 Safari/604.1")
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .expect("client");
    // Three scans into a log then rotated as logrotate does, two into the
    // live one.
    for scans in [3, 2] {
        let srv = ServerProcess::spawn(
            &db,
            &["--access-log", log.to_str().expect("utf-8")],
            &[],
            false,
        )
        .await;
        // The first scan once the links are loaded (a 503 before is no scan).
        support::poll::until(std::time::Duration::from_secs(5), "the link served", || {
            let r = client.get(srv.url("/poster")).send();
            async move { (r.await.ok()?.status() == 302).then_some(()) }
        })
        .await;
        for _ in 1..scans {
            let r = client.get(srv.url("/poster")).send().await.expect("scan");
            assert_eq!(r.status(), 302);
        }
        srv.stop().await;
        if scans == 3 {
            std::fs::rename(&log, service.join("logs/access.log.1")).expect("rotate");
        }
    }
    let scans_of = |out: &Output| -> serde_json::Value {
        assert!(out.status.success(), "{out:?}");
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
        v["total"]["scans"].clone()
    };
    let out = run_in(&elsewhere, &["stats", "--format", "json"], &config);
    assert_eq!(scans_of(&out), 5, "{}", stdout(&out));
    let out = run_in(
        &elsewhere,
        &["stats", "--format", "json", "--key", "poster"],
        &config,
    );
    assert_eq!(scans_of(&out), 5);

    // The console's patterns, where the configuration names them.
    std::fs::write(
        service.join("nodes.toml"),
        "db = \"links.db\"\naccess_log = \"-\"\nscan_logs = [\"logs/*.log\"]\n",
    )
    .expect("toml");
    let out = run_in(
        &service,
        &["stats", "--format", "json"],
        &[("QRTAG_CONFIG", "nodes.toml")],
    );
    assert_eq!(scans_of(&out), 5);

    // A FILE given still wins.
    let out = run_in(
        &elsewhere,
        &["stats", "--format", "json", log.to_str().expect("utf-8")],
        &config,
    );
    assert_eq!(scans_of(&out), 2);

    // Nothing configured: one line saying what to give.
    let out = run_in(&elsewhere, &["stats"], &[]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert_eq!(
        stderr(&out),
        "qrtag: no access log to read: give FILE..., or set access_log (or scan_logs) in the configuration file (qrtag.toml) or QRTAG_ACCESS_LOG\n"
    );
    // Configured but not there yet.
    std::fs::write(
        elsewhere.join("qrtag.toml"),
        "access_log = \"none/access.log\"\n",
    )
    .expect("toml");
    let out = run_in(&elsewhere, &["stats"], &[("QRTAG_CONFIG", "qrtag.toml")]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(
        stderr(&out).starts_with("qrtag: no log file found for access_log ")
            && stderr(&out).ends_with("none/access.log: give FILE...\n")
            && stderr(&out).lines().count() == 1,
        "{out:?}"
    );
}
