//! The deploy kit (`deploy/`, the `Dockerfile`) against the binary it ships.
//! The image is not built here (no image registry is reachable), so these
//! checks are what keeps the kit from drifting: every `QRTAG_…` variable it
//! sets is one the real `qrtag … --help` documents, the paths and ports its
//! files name agree with each other, and the example environment starts a
//! server. The CouchDB tests run the compose kit's steps against PouchDB
//! Server (`tests/couchdb/compose.rs`).

#[path = "support/deploy_kit.rs"]
mod deploy_kit;
#[path = "support/poll.rs"]
mod poll;
#[path = "support/process.rs"]
mod process;

use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::time::Duration;

use deploy_kit::{
    command, compose, env_file, help, interpolate, qrtag_variables, read, repo_file, service,
    service_env,
};

/// The variables `qrtag SUBCOMMAND --help` names.
fn documented(subcommand: &str) -> BTreeSet<String> {
    qrtag_variables(&help(subcommand))
}

fn undocumented(used: &BTreeSet<String>, subcommand: &str) -> BTreeSet<String> {
    used.difference(&documented(subcommand)).cloned().collect()
}

fn port(addr: &str) -> u16 {
    addr.parse::<SocketAddr>()
        .unwrap_or_else(|e| panic!("{addr}: {e}"))
        .port()
}

fn is_loopback(addr: &str) -> bool {
    addr.parse::<SocketAddr>()
        .map(|a| a.ip().is_loopback())
        .unwrap_or(false)
}

/// The deploy/.env an operator makes from the template.
fn dot_env_example() -> BTreeMap<String, String> {
    env_file(&read("deploy/.env.example"))
}

#[test]
fn compose_sets_only_variables_the_binary_documents() {
    let compose = compose();
    let vars = dot_env_example();
    for (name, subcommand, at_least) in [("setup", "setup", 4), ("qrtag", "serve", 10)] {
        let service = service(&compose, name);
        assert_eq!(
            service["image"].as_str(),
            Some("qrtag:local"),
            "{name} runs qrtag"
        );
        assert_eq!(command(service), [subcommand], "{name}'s command");
        let env = service_env(service, &vars).unwrap_or_else(|e| panic!("{name}: {e}"));
        let used: BTreeSet<String> = env
            .keys()
            .filter(|k| k.starts_with("QRTAG_"))
            .cloned()
            .collect();
        assert!(used.len() >= at_least, "{name} sets {used:?}");
        assert_eq!(
            undocumented(&used, subcommand),
            BTreeSet::new(),
            "{name} sets variables `qrtag {subcommand} --help` does not name"
        );
    }
}

#[test]
fn compose_takes_every_value_from_the_env_template_and_it_holds_no_stray_ones() {
    let text = read("deploy/compose.yaml");
    let vars = dot_env_example();
    // Every substitution resolves from the template alone, so an operator
    // who fills it in has set everything compose asks for.
    for line in text.lines().filter(|l| !l.trim_start().starts_with('#')) {
        if let Err(e) = interpolate(line, &vars) {
            panic!("deploy/.env.example does not cover {line:?}: {e}");
        }
    }
    for name in vars.keys() {
        assert!(
            text.contains(&format!("${{{name}")),
            "deploy/.env.example sets {name}, which compose.yaml never uses"
        );
    }
    let qrtag_own: BTreeSet<String> = vars
        .keys()
        .filter(|k| k.starts_with("QRTAG_"))
        .cloned()
        .collect();
    assert_eq!(undocumented(&qrtag_own, "serve"), BTreeSet::new());
    let ignored = read(".gitignore");
    assert!(
        ignored.lines().any(|l| l == "/deploy/.env"),
        "deploy/.env holds passwords: git must ignore it"
    );
}

#[test]
fn only_the_public_listener_leaves_the_container() {
    let compose = compose();
    let qrtag = service(&compose, "qrtag");
    let env = service_env(qrtag, &dot_env_example()).expect("environment");
    let public = port(&env["QRTAG_LISTEN"]);
    assert!(
        is_loopback(&env["QRTAG_ADMIN_LISTEN"]),
        "the admin listener stays inside the container: {}",
        env["QRTAG_ADMIN_LISTEN"]
    );
    let ports = qrtag["ports"].as_sequence().expect("ports");
    assert!(!ports.is_empty());
    for mapping in ports {
        let mapping = mapping.as_str().expect("a port mapping string");
        let container = mapping.rsplit(':').next().unwrap_or_default();
        assert_eq!(container, public.to_string(), "publishes {mapping}");
    }
    // The access log and the files a restart needs are on named volumes.
    let mounts: Vec<&str> = qrtag["volumes"]
        .as_sequence()
        .expect("volumes")
        .iter()
        .filter_map(|v| v.as_str()?.split(':').nth(1))
        .collect();
    for path in [
        "QRTAG_ACCESS_LOG",
        "QRTAG_SNAPSHOT_FILE",
        "QRTAG_TRACKING_SECRET_FILE",
    ] {
        let file = &env[path];
        assert!(
            mounts.iter().any(|m| file.starts_with(&format!("{m}/"))),
            "{path}={file} is not on a volume ({mounts:?})"
        );
    }

    // The image compose builds: the Dockerfile it names, exposing that port
    // only, running as a user of its own, on the toolchain Cargo.toml names.
    let build = &qrtag["build"];
    let context = repo_file("deploy").join(build["context"].as_str().expect("context"));
    let dockerfile = context.join(build["dockerfile"].as_str().expect("dockerfile"));
    let dockerfile = std::fs::read_to_string(&dockerfile)
        .unwrap_or_else(|e| panic!("{}: {e}", dockerfile.display()));
    assert!(context.join(".dockerignore").exists());
    let instructions: Vec<&str> = dockerfile
        .lines()
        .filter(|l| !l.starts_with('#') && !l.starts_with(' '))
        .collect();
    let exposed: Vec<&str> = instructions
        .iter()
        .filter_map(|l| l.strip_prefix("EXPOSE "))
        .collect();
    assert_eq!(exposed, [public.to_string()]);
    let user = instructions
        .iter()
        .filter_map(|l| l.strip_prefix("USER "))
        .next_back();
    assert!(
        user.is_some_and(|u| u != "root" && u != "0"),
        "runs as {user:?}"
    );
    assert!(
        dockerfile.contains("QRTAG_ADMIN_LISTEN=127.0.0.1:"),
        "the image's own default keeps the admin listener inside"
    );
    let rust_version = read("Cargo.toml")
        .lines()
        .find_map(|l| l.strip_prefix("rust-version = "))
        .map(|v| v.trim_matches('"').to_owned())
        .expect("rust-version in Cargo.toml");
    assert!(
        dockerfile.contains(&format!("ARG RUST_VERSION={rust_version}\n")),
        "the build stage's Rust is not {rust_version}"
    );
}

#[test]
fn the_unit_its_configuration_logrotate_and_nginx_agree() {
    let example = read("deploy/env.example");
    let mentioned = qrtag_variables(&example);
    assert_eq!(
        undocumented(&mentioned, "serve"),
        BTreeSet::new(),
        "env.example names variables `qrtag serve --help` does not"
    );
    let config = config_example();
    let setting_of = |key: &str| {
        config
            .get(key)
            .and_then(toml::Value::as_str)
            .unwrap_or_else(|| panic!("qrtag.toml.example has no {key}"))
            .to_owned()
    };

    let unit = read("deploy/qrtag.service");
    let setting = |name: &str| {
        unit.lines()
            .find_map(|l| l.strip_prefix(&format!("{name}=")))
            .unwrap_or_else(|| panic!("the unit has no {name}="))
            .to_owned()
    };
    let exec = setting("ExecStart");
    let mut words = exec.split_whitespace();
    assert_eq!(words.next(), Some("/usr/local/bin/qrtag"));
    assert_eq!(words.next(), Some("serve"));
    let serve_help = help("serve");
    for word in words {
        let flag = word.split('=').next().unwrap_or(word);
        assert!(
            flag.starts_with("--") && serve_help.contains(&format!("{flag} ")),
            "ExecStart passes {word}, which `qrtag serve --help` does not name"
        );
    }
    assert_eq!(setting("Environment"), "QRTAG_CONFIG=/etc/qrtag/qrtag.toml");
    assert_eq!(setting("ProtectSystem"), "strict");
    let state = format!("/var/lib/{}/", setting("StateDirectory"));
    let logs = format!("/var/log/{}/", setting("LogsDirectory"));
    let db = setting_of("db");
    assert!(db.starts_with(&state), "{db}");
    assert!(setting("WorkingDirectory").starts_with(state.trim_end_matches('/')));
    let access_log = setting_of("access_log");
    assert!(access_log.starts_with(&logs), "{access_log}");
    let rotated = read("deploy/logrotate.conf");
    assert!(
        rotated.contains(&format!("\n{access_log} {{\n")),
        "logrotate.conf rotates another file than {access_log}"
    );
    assert!(rotated.contains("--signal=HUP qrtag.service"));

    // Behind the TLS proxy: qrtag on loopback where nginx sends requests,
    // believing X-Forwarded-For from nginx's address; admin never proxied.
    let listen = setting_of("listen");
    assert!(is_loopback(&listen), "{listen}");
    assert!(is_loopback(&setting_of("admin_listen")));
    assert!(setting_of("public_url").starts_with("https://"));
    let proxies = config
        .get("trusted_proxies")
        .and_then(toml::Value::as_array);
    assert!(
        proxies.is_some_and(|p| p.iter().any(|p| p.as_str() == Some("127.0.0.1/32"))),
        "{proxies:?}"
    );
    let nginx = read("deploy/nginx-qrtag.conf");
    assert!(nginx.contains(&format!("server {listen};")), "{listen}");
    assert!(nginx.contains("X-Forwarded-For $proxy_add_x_forwarded_for"));
    assert!(!nginx.contains(&format!(":{}", port(&setting_of("admin_listen")))));
}

/// The unit's `LimitNOFILE=` holds the default `--max-connections` on the
/// public listener whole (with the DIDComm listener and many cores), so the
/// server starts without lowering its caps; systemd's own 1,024 would not.
#[test]
fn the_units_open_file_limit_keeps_the_default_connection_cap() {
    let unit = read("deploy/qrtag.service");
    let limit: u64 = unit
        .lines()
        .find_map(|l| l.strip_prefix("LimitNOFILE="))
        .expect("the unit sets LimitNOFILE=")
        .parse()
        .expect("LimitNOFILE= is a number");
    let defaults = qrtag::settings::Settings::local("qrtag.db".into());
    let needs = qrtag::startup::fd_budget::Needs {
        max_connections: defaults.max_connections,
        max_connections_per_ip: defaults.max_connections_per_ip,
        worker_threads: 64 + 1 + 4,
        api: true,
        couchdb: true,
        other_domains: Default::default(),
    };
    let caps =
        qrtag::startup::fd_budget::split(limit, &needs).expect("the limit is enough to start");
    assert!(!caps.lowered(&needs), "{caps:?}");
    let systemd = qrtag::startup::fd_budget::split(1024, &needs).expect("1,024 starts");
    assert!(systemd.lowered(&needs), "the test would tell nothing");
}

/// deploy/qrtag.toml.example, parsed.
fn config_example() -> toml::Table {
    read("deploy/qrtag.toml.example")
        .parse()
        .expect("qrtag.toml.example is TOML")
}

/// Every key of the example configuration, the commented-out ones too, is
/// one `qrtag config` takes and reports as coming from the file; the file
/// holds no secret.
#[test]
fn every_key_of_the_example_configuration_is_accepted() {
    let text = read("deploy/qrtag.toml.example");
    // Each commented-out `#key = value` line, switched on.
    let all: String = text
        .lines()
        .map(|l| match l.strip_prefix('#') {
            Some(rest)
                if rest
                    .split_once(" = ")
                    .is_some_and(|(k, _)| !k.contains(' ')) =>
            {
                rest
            }
            _ => l,
        })
        .map(|l| format!("{l}\n"))
        .collect();
    let table: toml::Table = all.parse().expect("TOML with every key on");
    assert!(table.len() >= 20, "{table:?}");
    let dir = tempfile::tempdir().expect("temporary directory");
    let path = dir.path().join("qrtag.toml");
    std::fs::write(&path, &all).expect("write");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_qrtag"))
        .env("QRTAG_CONFIG", &path)
        .env_remove("QRTAG_DB")
        .arg("config")
        .output()
        .expect("qrtag config");
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{out:?}");
    let from = format!("  # file {}", path.display());
    for key in table.keys() {
        assert!(
            said.lines()
                .any(|l| l.starts_with(&format!("{key} = ")) && l.ends_with(&from)),
            "{key} is not taken from the file:\n{said}"
        );
    }
    assert!(
        !said.contains("(set)"),
        "the example holds a secret: it goes in /etc/qrtag/env\n{said}"
    );
}

/// The example configuration (and environment) as the unit passes them
/// starts a server, and its trusted proxy setting takes the client's
/// address from the header.
#[tokio::test]
async fn the_example_configuration_starts_a_server_that_believes_its_proxy() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let db = dir.path().join("qrtag.db");
    let mut env = env_file(&read("deploy/env.example"));
    let config = repo_file("deploy/qrtag.toml.example");
    env.insert("QRTAG_CONFIG".into(), config.display().to_string());
    // Where it would listen and write on a VM the server's flags replace
    // with the test's own (--listen, --admin-listen, --db, --access-log).
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let server = process::ServerProcess::spawn(&db, &[], &env, false).await;
    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .expect("client");
    poll::until(Duration::from_secs(10), "ready", || async {
        let r = http.get(server.admin_url("/readyz")).send().await.ok()?;
        (r.status() == 200).then_some(())
    })
    .await;
    let resp = http
        .get(server.url("/H83if"))
        .header("x-forwarded-for", "203.0.113.9")
        .send()
        .await
        .expect("answered");
    assert_eq!(resp.status(), 404);
    let cookie = resp
        .headers()
        .get("set-cookie")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    assert!(cookie.contains("; Secure"), "an https public URL: {cookie}");
    server.stop().await;
    let log = std::fs::read_to_string(dir.path().join("access.log")).expect("access log");
    assert_eq!(log.lines().count(), 1, "{log}");
    assert_eq!(log.split(' ').nth(1), Some("203.0.113.9"), "{log}");
}

/// What is shipped: a release binary without its 88 MB of debug info, and
/// the licence `Cargo.toml` names.
#[test]
fn the_release_build_is_stripped_and_the_licence_is_shipped() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let manifest = std::fs::read_to_string(root.join("Cargo.toml")).expect("Cargo.toml");
    let release = manifest
        .split("\n[")
        .find(|section| section.starts_with("profile.release]"))
        .expect("a [profile.release] section");
    assert!(release.contains("strip = \"debuginfo\""), "{release}");
    assert!(manifest.contains("license = \"MIT\""));
    let licence = std::fs::read_to_string(root.join("LICENSE")).expect("LICENSE");
    assert!(licence.starts_with("MIT License"), "{licence}");
}

/// The rsyslog pair ships what qrtag writes to where the console host's
/// `--scan-log` looks: the node reads the access log the example
/// configuration writes, both ends use one port and let a whole line
/// through (about 40 KB at most), the central file per node is matched by
/// the pattern the guide gives (its production chapter), and it holds the
/// bare line.
#[test]
fn the_rsyslog_pair_ships_the_access_log_to_the_scan_log_pattern() {
    let node = read("deploy/rsyslog/qrtag-node.conf");
    let central = read("deploy/rsyslog/qrtag-central.conf");
    let access_log = config_example()
        .get("access_log")
        .and_then(toml::Value::as_str)
        .expect("access_log")
        .to_owned();
    assert!(
        node.contains(&format!("File=\"{access_log}\"")),
        "{access_log}"
    );
    let port = |text: &str, key: &str| -> String {
        let at = text.find(key).unwrap_or_else(|| panic!("{key} in {text}"));
        let rest = &text[at + key.len()..];
        rest[..rest.find('"').expect("end")].to_owned()
    };
    assert_eq!(port(&node, "Port=\""), port(&central, "port=\""));
    for text in [&node, &central] {
        assert!(text.contains("maxMessageSize=\"64k\""), "{text}");
    }
    let tag = port(&node, "Tag=\"");
    assert!(central.contains(&format!("$programname == \"{tag}\"")));
    assert!(central.contains(r#"string="%msg%\n""#), "the bare line");
    let file = port(&central, "string=\"/var/log/qrtag/nodes/");
    assert_eq!(file, "%HOSTNAME%.log");
    let guide = read("docs/src/production.md");
    assert!(
        guide.contains("--scan-log '/var/log/qrtag/nodes/*.log'"),
        "the guide's pattern names the central files"
    );
    let glob = glob::Pattern::new("/var/log/qrtag/nodes/*.log").expect("pattern");
    assert!(glob.matches("/var/log/qrtag/nodes/node-1.example.log"));
}
