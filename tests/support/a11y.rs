//! axe-core over the console's pages (issue 33), shared by
//! `tests/console_a11y.rs` (SQLite) and the CouchDB binary's console
//! tests: one verdict per page, kept, and one failure listing them all.
#![allow(dead_code)]

use std::time::Duration;

use serde_json::{Value, json};

use crate::browser::{Browser, Screen, screenshots};

/// A laptop's screen, the desktop width the issue names.
pub const LAPTOP: Screen = Screen {
    name: "laptop",
    width: 1440,
    height: 900,
    scale: 1.0,
    mobile: false,
};

/// The impacts that fail the test; `moderate` and `minor` are reported only.
pub const FAILING: [&str; 2] = ["serious", "critical"];

/// The checks find what they are there to find: axe-core an image with no
/// text, `svg_contrast.js` faint text in a drawing, both planted in the page
/// shown (which is then no longer the page; load another).
pub fn assert_axe_finds_a_planted_fault(b: &mut Browser) {
    b.script(
        "document.querySelector('main').insertAdjacentHTML('beforeend', '<img src=\"data:,\">');",
        json!([]),
    );
    let planted = b.axe();
    assert!(
        planted["violations"].as_array().is_some_and(|v| v
            .iter()
            .any(|v| v["id"] == "image-alt" && v["impact"] == "critical")),
        "axe-core did not find an image without alt text: {planted}"
    );
    // And the SVG text check a faint label in a drawing (#aaa on white, 2.3:1).
    b.script(
        "document.querySelector('main').insertAdjacentHTML('beforeend', \
         '<svg viewBox=\"0 0 100 20\" width=\"300\"><text x=\"2\" y=\"15\" font-size=\"12\" fill=\"#aaa\">faint</text></svg>');",
        json!([]),
    );
    let faint = b.script(
        include_str!("../console/browser/svg_contrast.js"),
        json!([]),
    );
    assert!(
        faint
            .as_array()
            .is_some_and(|f| f.len() == 1 && f[0]["ratio"].as_f64() < Some(4.5)),
        "svg_contrast.js did not find faint SVG text: {faint}"
    );
}

/// The violations found so far, one line each, and how many pages were checked.
#[derive(Default)]
pub struct Findings {
    failing: Vec<String>,
    /// Moderate and minor violations: reported, not failing.
    reported: Vec<String>,
    /// What axe-core could not decide and nothing here measured instead
    /// (its rule and page, once).
    review: Vec<String>,
    pages: usize,
}

impl Findings {
    /// Runs axe-core over the page shown (`page` names it) and keeps its
    /// violations: rule, impact, each element's selector, page and screen.
    /// A screenshot is saved as `a11y-<screen>-<page>.png`, to see why.
    pub fn check(&mut self, b: &mut Browser, screen: Screen, page: &str) {
        let kind = b.script("return document.contentType;", json!([]));
        assert_eq!(kind, json!("text/html"), "{page} is not a page");
        b.screenshot(&screenshots().join(format!("a11y-{}-{page}.png", screen.name)));
        self.pages += 1;
        self.check_svg_text(b, screen, page);
        let got = b.axe();
        let rules = |list: &Value| list.as_array().cloned().unwrap_or_default();
        let line = |v: &Value, impact: &str, n: &Value, more: &str| {
            format!(
                "{} ({impact}) on {page} at {} px: {} — {}{more}",
                v["id"].as_str().unwrap_or("?"),
                screen.width,
                n["target"],
                v["help"].as_str().unwrap_or(""),
            )
        };
        for v in rules(&got["violations"]) {
            let impact = v["impact"].as_str().unwrap_or("unknown");
            for n in rules(&v["nodes"]) {
                let found = line(&v, impact, &n, "");
                if FAILING.contains(&impact) {
                    self.failing.push(found);
                } else {
                    self.reported.push(found);
                }
            }
        }
        for v in rules(&got["incomplete"]) {
            for n in rules(&v["nodes"]) {
                if svg_text(&v, &n) {
                    continue;
                }
                match short_text_contrast(&v, &n) {
                    Some(ratios) => self.failing.push(line(&v, "serious", &n, &ratios)),
                    None => {
                        // Once a rule, page and why (axe-core's message key).
                        let why = n["data"]
                            .as_array()
                            .and_then(|d| d.iter().find_map(|d| d["messageKey"].as_str()))
                            .unwrap_or("?");
                        let what = format!(
                            "{} ({why}) on {page} at {} px",
                            v["id"].as_str().unwrap_or("?"),
                            screen.width,
                        );
                        if !self.review.iter().any(|r| r.starts_with(&what)) {
                            let html = n["html"].as_str().unwrap_or("?");
                            let first: String = html.chars().take(80).collect();
                            self.review.push(format!("{what}, first at {first}"));
                        }
                    }
                }
            }
        }
    }

    /// Text in inline SVG, which axe-core cannot see behind, by
    /// `svg_contrast.js`'s measure: each too faint is a serious failure.
    fn check_svg_text(&mut self, b: &mut Browser, screen: Screen, page: &str) {
        let faint = b.script(
            include_str!("../console/browser/svg_contrast.js"),
            json!([]),
        );
        for t in faint.as_array().cloned().unwrap_or_default() {
            self.failing.push(format!(
                "svg-text-contrast (serious) on {page} at {} px: {} — {} on {}, {}:1 where {}:1 is needed",
                screen.width, t["target"], t["fill"], t["background"], t["ratio"], t["needed"]
            ));
        }
    }

    /// Fails with every serious or critical violation kept, one a line;
    /// else says how many pages passed in `took`, with what is reported only.
    pub fn assert_none(&self, took: Duration) {
        eprintln!(
            "axe-core: {} pages checked in {took:?}; moderate and minor, not failing:\n{}\n\
             undecided by axe-core, to review:\n{}",
            self.pages,
            self.reported.join("\n"),
            self.review.join("\n"),
        );
        assert!(
            self.failing.is_empty(),
            "{} serious or critical violations:\n{}",
            self.failing.len(),
            self.failing.join("\n")
        );
    }
}

/// Text in an SVG drawing, whose contrast axe-core leaves undecided (it
/// cannot tell what is behind it) and `svg_contrast.js` measures instead.
fn svg_text(rule: &Value, node: &Value) -> bool {
    // HTML has no <text> element: this is SVG's.
    rule["id"] == "color-contrast"
        && node["html"]
            .as_str()
            .is_some_and(|h| h.starts_with("<text"))
}

/// A colour contrast axe-core measured below what the text needs but left
/// undecided because the text is short (one digit in a table cell might be
/// an icon): in the console such text is a number people read, so it is
/// held to the same ratio. The measured and the needed ratio, or `None`.
fn short_text_contrast(rule: &Value, node: &Value) -> Option<String> {
    if rule["id"] != "color-contrast" {
        return None;
    }
    node["data"].as_array()?.iter().find_map(|d| {
        // Text over an SVG drawing has no colours axe-core can read: not this case.
        let (fg, bg) = (d["fgColor"].as_str()?, d["bgColor"].as_str()?);
        let measured = d["contrastRatio"].as_f64()?;
        let needed: f64 = d["expectedContrastRatio"]
            .as_str()?
            .trim_end_matches(":1")
            .parse()
            .ok()?;
        (d["messageKey"] == "shortTextContent" && measured < needed).then(|| {
            format!(
                " (short text, left undecided by axe-core: {fg} on {bg}, \
                 {measured}:1 where {needed}:1 is needed)"
            )
        })
    })
}

/// Presses Tab until the focused element is the one `wanted` accepts, at
/// most `limit` times; returns how many it took. Each element the focus
/// lands on must show it (an outline or a shadow), or a keyboard user is lost.
pub fn tab_to(b: &mut Browser, what: &str, limit: usize, wanted: impl Fn(&Value) -> bool) -> usize {
    for n in 1..=limit {
        b.press(&["TAB"]);
        let f = b.focused();
        assert!(!f.is_null(), "Tab {n} towards {what} left the page");
        let outline = f["outline"].as_str().unwrap_or_default();
        let shadow = f["shadow"].as_str().unwrap_or("none");
        assert!(
            !outline.starts_with("none") || shadow != "none",
            "{what}: the focus on {f} cannot be seen"
        );
        if wanted(&f) {
            return n;
        }
    }
    panic!("{what} not reached in {limit} presses of Tab");
}
