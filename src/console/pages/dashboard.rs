//! The dashboard: busiest links and scans per day across all links, with a
//! bar chart drawn as inline SVG (attributes only, no style, so the strict
//! Content-Security-Policy holds).

use chrono::NaiveDate;
use maud::{Markup, html};

use super::{BASE, Viewer, layout, q};

pub struct View<'a> {
    pub viewer: Viewer<'a>,
    pub days: u32,
    /// Key, scans, and whether the key is a link now.
    pub top: Option<Vec<(String, u64, bool)>>,
    pub daily: Option<Vec<(NaiveDate, u64)>>,
}

pub fn page(v: &View<'_>) -> Markup {
    layout(
        "Dashboard",
        Some(&v.viewer),
        html! {
            h1 { "Dashboard" }
            h2 { "Scans per day, last " (v.days) " days" }
            @match &v.daily {
                Some(daily) => (bars(daily)),
                None => p #daily.muted data-available="false" { "Scan counts not available." },
            }
            h2 { "Busiest links" }
            @match &v.top {
                Some(top) if !top.is_empty() => {
                    table #top {
                        thead { tr { th { "Key" } th { "Scans" } } }
                        tbody { @for (key, n, is_link) in top {
                            tr data-key=(key) data-link=(is_link) {
                                td {
                                    @if *is_link {
                                        a href={ (BASE) "/link?key=" (q(key)) } { (key) }
                                    } @else {
                                        (key) " " span.muted { "(no longer a link)" }
                                    }
                                }
                                td data-scans=(n) { (n) }
                            }
                        } }
                    }
                }
                Some(_) => p #top.muted { "No scans yet." },
                None => p #top.muted data-available="false" { "Scan counts not available." },
            }
        },
    )
}

/// Scans per day as bars, tallest at full height, each with its day and
/// count in a `<title>` (a tooltip, and text for screen readers). The first
/// and last day are HTML under the drawing, not SVG text, so they stay
/// readable when a phone shrinks the drawing.
pub fn bars(daily: &[(NaiveDate, u64)]) -> Markup {
    const W: f64 = 600.0;
    const H: f64 = 160.0;
    let max = daily.iter().map(|d| d.1).max().unwrap_or(0).max(1) as f64;
    let slot = W / daily.len().max(1) as f64;
    html! {
        figure.chart {
            svg.chart #daily xmlns="http://www.w3.org/2000/svg" viewBox={ "0 0 " (W) " " (H) } role="img" aria-label="Scans per day" {
                @for (i, (day, n)) in daily.iter().enumerate() {
                    @let h = (*n as f64 / max) * H;
                    rect x=(format!("{:.1}", i as f64 * slot + 1.0)) y=(format!("{:.1}", H - h)) width=(format!("{:.1}", (slot - 2.0).max(1.0))) height=(format!("{h:.1}")) fill="#2a6f97" data-day=(day) data-scans=(n) {
                        title { (day) ": " (n) }
                    }
                }
            }
            @if let (Some(first), Some(last)) = (daily.first(), daily.last()) {
                figcaption.axis { span { (first.0) } span { (last.0) } }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A key whose link is gone is listed as such, with no way to a page
    /// that would only say it is unknown.
    #[test]
    fn a_key_that_is_no_longer_a_link_is_marked_not_linked() {
        let view = View {
            viewer: Viewer {
                name: "admin",
                can_edit: true,
                csrf: "t",
            },
            days: 30,
            top: Some(vec![("docs".into(), 5, true), ("gone".into(), 2, false)]),
            daily: None,
        };
        let html = page(&view).into_string();
        assert!(
            html.contains(r#"data-key="docs" data-link="true""#),
            "{html}"
        );
        assert!(
            html.contains(&format!(r#"href="{BASE}/link?key=docs""#)),
            "{html}"
        );
        assert!(
            html.contains(r#"data-key="gone" data-link="false""#),
            "{html}"
        );
        assert!(!html.contains("key=gone"), "{html}");
        assert!(html.contains("(no longer a link)"), "{html}");
    }
}
