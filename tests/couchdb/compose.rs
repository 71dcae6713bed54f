//! The compose kit's steps (`deploy/compose.yaml`) run without Docker,
//! against PouchDB Server: each service's command and environment exactly as
//! compose would give them from `deploy/.env.example`, with only the
//! addresses and paths changed to the test's. The images themselves are not
//! built here (no image registry is reachable).

use std::collections::BTreeMap;

use crate::deploy_kit::{command, compose, env_file, interpolate, read, service, service_env};
use crate::harness::{PUBLIC_URL, TestApp, qrtag, server_admin, stderr, stdout};
use crate::pouchdb::PouchDb;
use crate::process::ServerProcess;
use crate::{PROPAGATION, START};

/// Runs the `couchdb-init` service's shell script with its environment, as
/// its entrypoint (`/bin/sh -euc`) would.
fn run_init(script: &str, env: &BTreeMap<String, String>) -> std::process::Output {
    let mut cmd = std::process::Command::new("/bin/sh");
    cmd.arg("-euc").arg(script).env_clear().envs(env);
    if let Some(path) = std::env::var_os("PATH") {
        cmd.env("PATH", path);
    }
    cmd.output().expect("sh runs")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_compose_kit_sets_up_couchdb_and_serves_with_the_reader_account() {
    let pouch = PouchDb::start().await;
    let url = pouch.url();
    let compose = compose();
    let vars = env_file(&read("deploy/.env.example"));
    // What the couchdb image does with COUCHDB_USER and COUCHDB_PASSWORD.
    server_admin(&url, &vars["COUCHDB_USER"], &vars["COUCHDB_PASSWORD"]).await;
    let with_url = |name: &str, variable: &str| {
        let mut env = service_env(service(&compose, name), &vars).expect("environment");
        assert_eq!(env[variable], "http://couchdb:5984", "{name}");
        env.insert(variable.to_owned(), url.clone());
        env
    };

    // couchdb-init: system databases and accounts; a second run changes
    // nothing and still succeeds.
    let init = service(&compose, "couchdb-init");
    let entrypoint: Vec<&str> = init["entrypoint"]
        .as_sequence()
        .expect("entrypoint")
        .iter()
        .filter_map(|w| w.as_str())
        .collect();
    assert_eq!(entrypoint, ["/bin/sh", "-euc"]);
    let script = interpolate(&command(init)[0], &vars).expect("the script");
    let env = with_url("couchdb-init", "COUCHDB_URL");
    let out = run_init(&script, &env);
    assert!(out.status.success(), "{}", stderr(&out));
    for line in [
        "_users/org.couchdb.user:qrtag-reader: created",
        "_users/org.couchdb.user:qrtag-editor: created",
    ] {
        assert!(stdout(&out).contains(line), "{}", stdout(&out));
    }
    let out = run_init(&script, &env);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!stdout(&out).contains("created"), "{}", stdout(&out));
    let mut wrong = env.clone();
    wrong.insert("COUCHDB_PASSWORD".into(), "wrong".into());
    let out = run_init(&script, &wrong);
    assert!(!out.status.success(), "a refusal must fail the step");
    assert!(stderr(&out).contains("HTTP 401"), "{}", stderr(&out));

    // setup, as the server admin.
    let env = with_url("setup", "QRTAG_COUCHDB_URL");
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let args = command(service(&compose, "setup"));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = qrtag(&args, &env).await;
    assert!(out.status.success(), "{}", stderr(&out));

    // serve, with the reader account; only its listeners and files moved.
    let dir = tempfile::tempdir().expect("temporary directory");
    let mut env = with_url("qrtag", "QRTAG_COUCHDB_URL");
    assert_eq!(env["QRTAG_COUCHDB_USER"], "qrtag-reader");
    for (_, value) in env.iter_mut() {
        for volume in ["/var/lib/qrtag", "/var/log/qrtag"] {
            if let Some(file) = value.strip_prefix(volume) {
                *value = format!("{}{file}", dir.path().display());
            }
        }
    }
    env.insert("QRTAG_PUBLIC_URL".into(), PUBLIC_URL.into());
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    assert_eq!(command(service(&compose, "qrtag")), ["serve"]);
    let server = ServerProcess::spawn(&dir.path().join("unused.db"), &[], &env, false).await;
    let app = TestApp::at(server.public, server.admin);
    let ready = app.wait_ready(START).await;
    assert!(ready.contains("0 links"), "{ready}");

    // The editor account the init step made can write; the server follows.
    let editor = [
        ("QRTAG_COUCHDB_URL", url.as_str()),
        ("QRTAG_COUCHDB_USER", "qrtag-editor"),
        (
            "QRTAG_COUCHDB_PASSWORD",
            vars["COUCHDB_EDITOR_PASSWORD"].as_str(),
        ),
    ];
    let out = qrtag(
        &["new", "--key", "H83if", "https://a.example/compose"],
        &editor,
    )
    .await;
    assert!(out.status.success(), "{}", stderr(&out));
    app.wait_location("H83if", Some("https://a.example/compose"), PROPAGATION)
        .await;
    assert!(dir.path().join("tracking-secret").exists());
    server.stop().await;
}
