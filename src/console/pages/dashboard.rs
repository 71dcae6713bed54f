//! The dashboard: busiest links and scans across all links over the period
//! picked, charted by [`super::chart`].

use chrono::NaiveDate;
use maud::{Markup, html};

use super::chart::{self, Period};
use super::{BASE, Viewer, layout, q};
use crate::console::scans::Shares;

pub struct View<'a> {
    pub viewer: Viewer<'a>,
    pub period: Period,
    /// Key, scans, and whether the key is a link now.
    pub top: Option<Vec<(String, u64, bool)>>,
    pub daily: Option<Vec<(NaiveDate, u64)>>,
    /// All links' breakdowns over the period.
    pub shares: Option<Shares>,
}

pub fn page(v: &View<'_>) -> Markup {
    layout(
        "Dashboard",
        Some(&v.viewer),
        html! {
            h1 { "Dashboard" }
            (chart::picker(v.period, |days| format!("{BASE}/dashboard?days={days}")))
            h2 { "Scans per " (v.period.unit_noun()) ", " (v.period.words()) }
            @match &v.daily {
                Some(daily) => (chart::chart("daily", "Scans", v.period, daily)),
                None => p #daily.muted data-available="false" { "Scan counts not available." },
            }
            h2 { "Busiest links, " (v.period.words()) }
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
            h2 { "Where and when, " (v.period.words()) }
            (super::breakdowns::section(
                v.shares.as_ref(),
                &format!("in {}", v.period.words()),
                &format!("{BASE}/dashboard/breakdowns.csv?days={}", v.period.days()),
            ))
        },
    )
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
            period: Period::Month,
            top: Some(vec![("docs".into(), 5, true), ("gone".into(), 2, false)]),
            daily: None,
            shares: None,
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
