//! The link page's "Scans per destination" (issue 34, "which rule
//! answered"): where the link's scans were sent, from the scan index, each
//! destination named by what sends scans there today (a rule, the link's
//! `url`, its fallback) or as no longer on the link. The counts are of
//! what the log recorded at each scan, so a destination a rule sent scans
//! to last month still shows after the rule is gone.

use maud::{Markup, html};

use crate::console::scans::DestinationScans;
use crate::link::rules::Rules;
use crate::redirect::policy::direct_location;
use crate::values::destination::Destination;

/// What sends scans to a destination today.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Owner {
    /// Rule number N, counted from 1 as the rule editor shows them.
    Rule(usize),
    Url,
    Fallback,
}

/// One destination's row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    /// `None`: the destinations past those the index keeps apart.
    pub destination: Option<String>,
    pub fallback: bool,
    pub scans: u64,
    /// Empty: no longer on this link (or, for `None`, unknown).
    pub owners: Vec<Owner>,
}

/// The link as it is now: what each destination is matched against.
pub struct Today<'a> {
    pub key: &'a str,
    pub url: &'a Destination,
    pub rules: Option<&'a Rules>,
    pub fallback: Option<&'a Destination>,
}

/// Whether a logged location is what a scan of `/KEY` sent to `dest` gets:
/// the server's own answer for it ([`direct_location`]), or the text
/// itself.
fn sends_to(key: &str, dest: &Destination, logged: &str) -> bool {
    dest.as_str() == logged || direct_location(key, dest.as_str()).as_deref() == Some(logged)
}

/// Each destination with what sends scans there today (pure).
pub fn rows(scans: Vec<DestinationScans>, today: &Today<'_>) -> Vec<Row> {
    scans
        .into_iter()
        .map(|d| {
            let mut owners = Vec::new();
            if let Some(logged) = d.destination.as_deref() {
                if d.fallback {
                    if today
                        .fallback
                        .is_some_and(|f| sends_to(today.key, f, logged))
                    {
                        owners.push(Owner::Fallback);
                    }
                } else {
                    if let Some(rules) = today.rules {
                        owners.extend(
                            (0..rules.len())
                                .filter(|&i| {
                                    rules.url(i).is_some_and(|u| sends_to(today.key, u, logged))
                                })
                                .map(|i| Owner::Rule(i + 1)),
                        );
                    }
                    if sends_to(today.key, today.url, logged) {
                        owners.push(Owner::Url);
                    }
                }
            }
            Row {
                destination: d.destination,
                fallback: d.fallback,
                scans: d.scans,
                owners,
            }
        })
        .collect()
}

fn owner_text(o: Owner) -> String {
    match o {
        Owner::Rule(n) => format!("rule {n}"),
        Owner::Url => "url".to_owned(),
        Owner::Fallback => "fallback".to_owned(),
    }
}

/// The section: a table of the rows, or why there is none.
pub fn section(rows: Option<&[Row]>) -> Markup {
    html! {
        h3 #destinations-heading { "Scans per destination" }
        @match rows {
            None => p #destinations.muted data-available="false" { "Not available yet." },
            Some([]) => p #destinations.muted data-available="true" { "No scans sent anywhere yet." },
            Some(rows) => {
                p.muted {
                    "Where each scan was sent, of all time, as the access log recorded it, and what sends scans there today. A dead link's fallback answers are not scans: they are counted apart."
                }
                table #destinations data-available="true" aria-labelledby="destinations-heading" {
                    thead { tr { th scope="col" { "Destination" } th scope="col" { "Scans" } th scope="col" { "Today" } } }
                    tbody {
                        @for r in rows {
                            tr data-destination=[r.destination.as_deref()] data-fallback=(r.fallback) data-scans=(r.scans) {
                                td.url {
                                    @match &r.destination {
                                        Some(d) => (d),
                                        None => em { "Other destinations" },
                                    }
                                    @if r.fallback { " " span.muted { "(fallback answers)" } }
                                }
                                td.num { (r.scans) }
                                td.owner {
                                    @if r.owners.is_empty() {
                                        @if r.destination.is_some() { "no longer on this link" }
                                    } @else {
                                        (r.owners.iter().map(|o| owner_text(*o)).collect::<Vec<_>>().join(", "))
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::link::rules::Capabilities;

    fn scans(d: &str, fallback: bool, n: u64) -> DestinationScans {
        DestinationScans {
            destination: Some(d.to_owned()),
            fallback,
            scans: n,
        }
    }

    #[test]
    fn each_destination_is_named_by_what_sends_scans_there_today() {
        let rules = Rules::from_json(
            &serde_json::json!([
                {"url": "https://example.com/a", "split": [0, 50]},
                {"url": "https://example.com/b", "split": [50, 100]},
                {"url": "https://example.com/main", "os": ["ios"]},
            ]),
            &Capabilities { geoip: false },
        )
        .expect("rules");
        let url = Destination::parse("https://example.com/main").expect("url");
        let fallback = Destination::parse("https://example.com/gone").expect("fallback");
        let today = Today {
            key: "menu",
            url: &url,
            rules: Some(&rules),
            fallback: Some(&fallback),
        };
        let got = rows(
            vec![
                scans("https://example.com/b", false, 9),
                scans("https://example.com/a", false, 8),
                scans("https://example.com/main", false, 3),
                scans("https://example.com/old", false, 2),
                scans("https://example.com/gone", true, 1),
                scans("https://example.com/b", true, 1),
                DestinationScans {
                    destination: None,
                    fallback: false,
                    scans: 4,
                },
            ],
            &today,
        );
        let owners: Vec<&[Owner]> = got.iter().map(|r| r.owners.as_slice()).collect();
        assert_eq!(
            owners,
            [
                &[Owner::Rule(2)][..],
                &[Owner::Rule(1)],
                &[Owner::Rule(3), Owner::Url],
                &[],
                &[Owner::Fallback],
                // A fallback answer at a rule's destination is no rule's.
                &[],
                &[],
            ]
        );
        let html = section(Some(&got)).into_string();
        assert!(html.contains("rule 3, url"), "{html}");
        assert!(html.contains("no longer on this link"), "{html}");
        assert!(html.contains("Other destinations"), "{html}");
    }

    #[test]
    fn a_link_without_rules_or_counts_says_so() {
        let url = Destination::parse("https://example.com/").expect("url");
        let today = Today {
            key: "k",
            url: &url,
            rules: None,
            fallback: None,
        };
        let got = rows(vec![scans("https://example.com/", false, 5)], &today);
        assert_eq!(got[0].owners, [Owner::Url]);
        assert!(section(None).into_string().contains("Not available"));
        assert!(section(Some(&[])).into_string().contains("No scans"));
    }
}
