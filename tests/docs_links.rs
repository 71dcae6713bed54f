//! The guide's links, checked without a link-checking crate: every page
//! `docs/src/SUMMARY.md` names exists and every page is named there, and
//! every relative link in the guide and in README.md leads to a file that
//! exists and, with a `#fragment`, to a heading of that page (the id
//! mdBook gives it). `mdbook build docs` in `.ci/test` builds the book.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn markdown_under(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("read dir") {
        let path = entry.expect("entry").path();
        if path.is_dir() {
            markdown_under(&path, out);
        } else if path.extension().is_some_and(|e| e == "md") {
            out.push(path);
        }
    }
}

/// The lines outside fenced code blocks, with inline code spans removed
/// (a link's text may be code: its target stays).
fn prose(text: &str) -> Vec<String> {
    let mut fenced = false;
    let mut out = Vec::new();
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            out.push(String::new());
            continue;
        }
        if fenced {
            // Kept as an empty line, so a link's line number is the file's.
            out.push(String::new());
            continue;
        }
        let mut kept = String::new();
        for (i, part) in line.split('`').enumerate() {
            if i % 2 == 0 {
                kept.push_str(part);
            }
        }
        out.push(kept);
    }
    out
}

/// mdBook's id for a heading: the text without markup, lowercased, spaces
/// to `-`, anything but letters, digits, `_` and `-` dropped; a repeated id
/// gets `-1`, `-2`, … (mdBook's `normalize_id` and `unique_id_from_content`).
fn normalize(heading: &str) -> String {
    heading
        .chars()
        .filter_map(|c| {
            if c.is_alphanumeric() || c == '_' || c == '-' {
                Some(c.to_lowercase().collect::<String>())
            } else if c.is_whitespace() {
                Some("-".to_owned())
            } else {
                None
            }
        })
        .collect()
}

fn anchors(text: &str) -> BTreeSet<String> {
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    let mut out = BTreeSet::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        let hashes = line.chars().take_while(|c| *c == '#').count();
        if fenced || !(1..=6).contains(&hashes) || !line[hashes..].starts_with(' ') {
            continue;
        }
        // A link in a heading shows its text only.
        let text: String = link_text(line[hashes..].trim());
        let id = normalize(&text);
        let n = seen.entry(id.clone()).or_insert(0);
        out.insert(if *n == 0 { id } else { format!("{id}-{n}") });
        *n += 1;
    }
    out
}

/// `a [b](c) d` → `a b d`.
fn link_text(s: &str) -> String {
    let mut out = String::new();
    let mut rest = s;
    while let Some(at) = rest.find("](") {
        out.push_str(&rest[..at]);
        let after = &rest[at + 2..];
        rest = after.find(')').map_or("", |end| &after[end + 1..]);
    }
    out.push_str(rest);
    out.replace('[', "")
}

/// Every `[text](target)` target on the prose lines.
fn links(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for (n, line) in prose(text).iter().enumerate() {
        let mut rest = line.as_str();
        while let Some(at) = rest.find("](") {
            let after = &rest[at + 2..];
            let Some(end) = after.find(')') else { break };
            out.push((n + 1, after[..end].to_owned()));
            rest = &after[end + 1..];
        }
    }
    out
}

/// `path` with its `..` and `.` parts taken out (no file system access).
fn normal(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            std::path::Component::ParentDir => {
                out.pop();
            }
            std::path::Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// What is wrong with the links of `file`, one line each.
fn broken(file: &Path) -> Vec<String> {
    broken_in(file, &root().join("docs/src"))
}

/// The same, for a book whose pages are under `book`.
fn broken_in(file: &Path, book: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(file).expect("read");
    let dir = file.parent().expect("dir");
    let mut out = Vec::new();
    for (line, target) in links(&text) {
        if target.contains("://") || target.starts_with("mailto:") {
            continue;
        }
        let (path, fragment) = target.split_once('#').unwrap_or((&target, ""));
        let to = if path.is_empty() {
            file.to_path_buf()
        } else {
            dir.join(path)
        };
        let at = format!("{}:{line}: {target}", file.display());
        if !to.exists() {
            out.push(format!("{at}: no such file"));
        } else if file.starts_with(book) && !normal(&to).starts_with(book) {
            // The built book holds docs/src only: a link out of it works
            // in a clone and is a dead link in the HTML.
            out.push(format!("{at}: leaves the book (docs/src)"));
        } else if !fragment.is_empty() && to.extension().is_some_and(|e| e == "md") {
            let ids = anchors(&std::fs::read_to_string(&to).expect("read target"));
            if !ids.contains(fragment) {
                out.push(format!("{at}: no heading with that id"));
            }
        }
    }
    out
}

#[test]
fn every_relative_link_leads_to_a_page_and_heading() {
    let mut files = vec![root().join("README.md"), root().join("deploy/README.md")];
    markdown_under(&root().join("docs/src"), &mut files);
    let bad: Vec<String> = files.iter().flat_map(|f| broken(f)).collect();
    assert!(bad.is_empty(), "broken links:\n{}", bad.join("\n"));
}

#[test]
fn the_summary_names_every_page_and_only_pages_that_exist() {
    let src = root().join("docs/src");
    let summary = std::fs::read_to_string(src.join("SUMMARY.md")).expect("SUMMARY.md");
    let named: BTreeSet<PathBuf> = links(&summary)
        .into_iter()
        .map(|(_, t)| src.join(t))
        .collect();
    for page in &named {
        assert!(
            page.is_file(),
            "SUMMARY.md names {}, which is missing",
            page.display()
        );
    }
    let mut pages = Vec::new();
    markdown_under(&src, &mut pages);
    for page in pages {
        if page.file_name().is_some_and(|n| n == "SUMMARY.md") {
            continue;
        }
        assert!(
            named.contains(&page),
            "{} is not in SUMMARY.md",
            page.display()
        );
    }
}

#[test]
fn a_link_out_of_the_book_is_refused() {
    let dir = tempfile::tempdir().expect("temp dir");
    let book = dir.path().join("src");
    std::fs::create_dir(&book).expect("book");
    std::fs::write(dir.path().join("README.md"), "# Up\n").expect("readme");
    std::fs::write(book.join("tags.md"), "# Tags\n").expect("page");
    let page = book.join("page.md");
    std::fs::write(
        &page,
        "[up](../README.md) [in](tags.md) [also](./../src/tags.md)\n",
    )
    .expect("probe");
    let bad = broken_in(&page, &book);
    assert_eq!(bad.len(), 1, "{bad:?}");
    assert!(bad[0].contains("../README.md: leaves the book"), "{bad:?}");
}

#[test]
fn ids_are_mdbooks() {
    let ids = anchors(
        "# `/readyz`: what a load balancer should ask\n## A\n## A\n```\n# not\n```\n## One console for every node's scans\n## [Link](x.md) here\n",
    );
    let want = [
        "readyz-what-a-load-balancer-should-ask",
        "a",
        "a-1",
        "one-console-for-every-nodes-scans",
        "link-here",
    ];
    assert_eq!(ids, want.iter().map(|s| s.to_string()).collect());
}
