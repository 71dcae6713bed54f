//! `.ci/layers.py`, the module-graph check CI runs before clippy: it must pass
//! on the real `src/` against ARCHITECTURE.md's table, and it must fail, naming
//! the line, on each thing the rule forbids (issue 32). The bad trees are made
//! here, so a checker that stopped looking would turn these tests red.

use std::fs;
use std::path::Path;
use std::process::{Command, Output};

fn run(args: &[&str]) -> Output {
    Command::new("python3")
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join(".ci/layers.py"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("python3 runs .ci/layers.py")
}

/// A small crate: `values` (0) below `link` (1) below `store` (2).
fn tree(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    for (path, text) in files {
        let path = dir.path().join("src").join(path);
        fs::create_dir_all(path.parent().expect("parent")).expect("dirs");
        fs::write(path, text).expect("write");
    }
    let table = "```layers\ncrate 2\nstore 2\nlink 1\nvalues 0\n```\n";
    fs::write(dir.path().join("LAYERS.md"), table).expect("table");
    dir
}

fn check(dir: &tempfile::TempDir) -> (i32, String) {
    let src = dir.path().join("src");
    let layers = dir.path().join("LAYERS.md");
    let out = run(&[
        "--src",
        src.to_str().expect("utf-8"),
        "--layers",
        layers.to_str().expect("utf-8"),
    ]);
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    (out.status.code().unwrap_or(-1), text)
}

const LIB: &str = "pub mod link;\npub mod store;\npub mod values;\n";

#[test]
fn the_real_tree_keeps_the_architecture_table() {
    let out = run(&[]);
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn a_tree_that_keeps_the_rule_passes() {
    let dir = tree(&[
        ("lib.rs", LIB),
        ("values/mod.rs", "pub struct Key;\n"),
        (
            "link/mod.rs",
            "use crate::values::Key;\npub fn k() -> Key { Key }\n",
        ),
        (
            "store/mod.rs",
            "use crate::link;\npub fn s() { link::k(); }\n",
        ),
    ]);
    let (code, text) = check(&dir);
    assert_eq!(code, 0, "{text}");
}

#[test]
fn an_upward_import_fails_naming_its_line() {
    let dir = tree(&[
        ("lib.rs", LIB),
        ("values/mod.rs", "pub struct Key;\n\nuse crate::store::s;\n"),
        ("link/mod.rs", "pub fn k() {}\n"),
        ("store/mod.rs", "pub fn s() {}\n"),
    ]);
    let (code, text) = check(&dir);
    assert_eq!(code, 1, "{text}");
    assert!(
        text.contains("values/mod.rs:3") && text.contains("layer 0") && text.contains("layer 2"),
        "{text}"
    );
}

#[test]
fn a_circle_between_folders_fails() {
    let dir = tree(&[
        ("lib.rs", LIB),
        ("values/mod.rs", "pub struct Key;\n"),
        ("link/mod.rs", "pub mod a;\n"),
        ("link/a.rs", "pub fn a() { crate::store::b::b(); }\n"),
        ("store/mod.rs", "pub mod b;\n"),
        ("store/b.rs", "pub fn b() { crate::link::a::a(); }\n"),
    ]);
    // Both layer 1 for this case, so only the circle can fail it.
    fs::write(
        dir.path().join("LAYERS.md"),
        "```layers\ncrate 2\nstore 1\nlink 1\nvalues 0\n```\n",
    )
    .expect("table");
    let (code, text) = check(&dir);
    assert_eq!(code, 1, "{text}");
    assert!(text.contains("circle across folders"), "{text}");
}

#[test]
fn a_module_the_table_does_not_place_fails() {
    let dir = tree(&[
        (
            "lib.rs",
            "pub mod link;\npub mod store;\npub mod values;\npub mod extra;\n",
        ),
        ("values/mod.rs", "pub struct Key;\n"),
        ("link/mod.rs", "pub fn k() {}\n"),
        ("store/mod.rs", "pub fn s() {}\n"),
        ("extra.rs", "pub fn e() {}\n"),
    ]);
    let (code, text) = check(&dir);
    assert_eq!(code, 1, "{text}");
    assert!(text.contains("extra"), "{text}");
}
