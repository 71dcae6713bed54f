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
    pub top: Option<Vec<Busiest>>,
    pub daily: Option<Vec<(NaiveDate, u64)>>,
    /// All links' breakdowns over the period.
    pub shares: Option<Shares>,
    /// Issue 33: scans over the period sent to a link's fallback, which
    /// `daily` does not count.
    pub fallback: Option<u64>,
    /// Issue 38: ClickHouse (`--scans-from`) did not answer.
    pub scans_away: bool,
}

/// One of the busiest links: its key, scans, and whether the key is a link
/// now, with its title and destination (issue 33: a bare key tells nobody
/// which poster it is) when it is.
#[derive(Debug, Clone, Default)]
pub struct Busiest {
    pub key: String,
    pub scans: u64,
    pub is_link: bool,
    pub title: Option<String>,
    pub url: Option<String>,
    /// Issue 33: its scans sent to its fallback, of all time (the index
    /// keeps no per-day count of them per link); `None`: not available.
    pub fallback: Option<u64>,
}

pub fn page(v: &View<'_>) -> Markup {
    layout(
        "Dashboard",
        Some(&v.viewer),
        html! {
            h1 { "Dashboard" }
            (super::scans_away(v.scans_away))
            (chart::picker(v.period, |days| format!("{BASE}/dashboard?days={days}")))
            h2 { "Scans per " (v.period.unit_noun()) ", " (v.period.words()) }
            @if let Some(daily) = &v.daily {
                (totals(daily, v.fallback))
            }
            @match &v.daily {
                Some(daily) => (chart::chart("daily", "Scans", v.period, daily)),
                None => p #daily.muted data-available="false" { "Scan counts not available." },
            }
            h2 { "Busiest links, " (v.period.words()) }
            @match &v.top {
                Some(top) if !top.is_empty() => {
                    table #top {
                        thead { tr { th { "Link" } th { "Destination" } th { "Scans" } th { "Sent to its fallback (all time)" } } }
                        tbody { @for b in top {
                            tr data-key=(b.key) data-link=(b.is_link) {
                                td {
                                    @if b.is_link {
                                        a href={ (BASE) "/link?key=" (q(&b.key)) } {
                                            @if let Some(title) = &b.title { (title) } @else { (b.key) }
                                        }
                                        @if b.title.is_some() { " " small.key-beside { (b.key) } }
                                    } @else {
                                        (b.key) " " span.muted { "(no longer a link)" }
                                    }
                                }
                                td.url { @if let Some(url) = &b.url { (url) } }
                                td data-scans=(b.scans) { (b.scans) }
                                td data-fallback=[b.fallback] { (super::count(b.fallback)) }
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
            (super::breakdowns::fallback_note(v.fallback, &format!("in {}", v.period.words())))
        },
    )
}

/// Issue 33: the period's scans and, beside them, those a fallback
/// answered, which the scans (and the chart) do not include.
fn totals(daily: &[(NaiveDate, u64)], fallback: Option<u64>) -> Markup {
    let scans: u64 = daily.iter().map(|d| d.1).sum();
    html! {
        dl.counts #totals {
            div { dt { "Scans" } dd data-scans=(scans) { (scans) } }
            div { dt { "Sent to a fallback" } dd data-fallback=[fallback] { (super::count(fallback)) } }
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
                role: crate::values::role::Role::Admin,
                domain: None,
                switcher: None,
            },
            period: Period::Month,
            top: Some(vec![
                Busiest {
                    key: "docs".into(),
                    scans: 5,
                    is_link: true,
                    title: Some("The <docs> poster".into()),
                    url: Some("https://docs.example/".into()),
                    fallback: Some(0),
                },
                Busiest {
                    key: "gone".into(),
                    scans: 2,
                    ..Busiest::default()
                },
            ]),
            daily: None,
            shares: None,
            fallback: None,
            scans_away: false,
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
        // Issue 33: a link is named by its title, its destination beside it.
        assert!(
            html.contains(r#">The &lt;docs&gt; poster</a> <small class="key-beside">docs</small>"#),
            "{html}"
        );
        assert!(
            html.contains(r#"<td class="url">https://docs.example/</td>"#),
            "{html}"
        );
    }
}
