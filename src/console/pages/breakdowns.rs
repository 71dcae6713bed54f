//! Where scans come from (issue 21): each breakdown the scan index keeps
//! (device, OS, browser, places, referrer) as horizontal bars with their
//! numbers, the top [`TOP`] and the rest as one "Other" row, and the hour ×
//! weekday map as a table of shaded cells. Everything is a table, read by
//! screen readers as one; the bars are inline SVG (attributes only, so the
//! strict Content-Security-Policy holds) and no JavaScript is needed.
//! [`csv`] writes what the page shows.

use maud::{Markup, html};

use super::chart::short;
use crate::console::scans::Shares;
use crate::scan_index::breakdowns::OTHER;
use crate::stats::dimensions::Dimension;

/// Rows shown of a breakdown before the rest is one "Other" row.
pub const TOP: usize = 8;

/// What the rest of a breakdown is called.
const REST: &str = "Other";

/// A breakdown's rows as shown: the busiest [`TOP`] values (never the
/// index's own "other" row, values past its caps) and what the rest add
/// up to, those included.
pub fn shown(rows: &[(String, u64)]) -> (Vec<(&str, u64)>, u64) {
    let mut top = Vec::with_capacity(TOP);
    let mut rest = 0;
    for (value, n) in rows {
        if top.len() < TOP && value != OTHER {
            top.push((value.as_str(), *n));
        } else {
            rest += n;
        }
    }
    (top, rest)
}

fn title(d: Dimension) -> &'static str {
    match d {
        Dimension::Device => "Devices",
        Dimension::Os => "Operating systems",
        Dimension::Browser => "Browsers",
        Dimension::Country => "Countries",
        Dimension::Region => "Regions",
        Dimension::City => "Cities",
        Dimension::Referrer => "Referrers",
        Dimension::Hour => "Hours",
        Dimension::Weekday => "Weekdays",
        Dimension::Destination => "Destinations",
    }
}

fn column(d: Dimension) -> &'static str {
    match d {
        Dimension::Device => "Device",
        Dimension::Os => "Operating system",
        Dimension::Browser => "Browser",
        Dimension::Country => "Country",
        Dimension::Region => "Region",
        Dimension::City => "City",
        Dimension::Referrer => "Referrer",
        Dimension::Hour => "Hour",
        Dimension::Weekday => "Weekday",
        Dimension::Destination => "Destination",
    }
}

/// A share in whole percent, "<1%" for a small non-zero one.
fn percent(n: u64, total: u64) -> String {
    match (n * 100).checked_div(total) {
        None => "0%".into(),
        Some(0) if n > 0 => "<1%".into(),
        Some(p) => format!("{p}%"),
    }
}

/// Shading of a heat-map cell: 0 for none, 1–4 by its share of the
/// busiest cell.
pub fn shade(n: u64, max: u64) -> u8 {
    if n == 0 || max == 0 {
        return 0;
    }
    (1 + (n * 4 - 1) / max).min(4) as u8
}

const WEEKDAYS: [&str; 7] = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"];

/// The section: `scope` says what the numbers cover ("of all time", "in
/// the last 30 days"), `csv_href` where the download is. `None`: not available.
pub fn section(shares: Option<&Shares>, scope: &str, csv_href: &str) -> Markup {
    let Some(s) = shares else {
        return html! {
            p #breakdowns.muted data-available="false" { "Breakdowns not available." }
        };
    };
    let total = s.scans();
    html! {
        section #breakdowns data-available="true" data-scans=(total) {
            p.muted {
                "Scans " (scope) ", bots left out; hours and weekdays in " (s.time_zone.name()) ". "
                a.button #breakdowns-csv href=(csv_href) download { "Download CSV" }
            }
            @if total == 0 {
                p.muted { "No scans yet." }
            } @else {
                div.breakdowns {
                    @for share in &s.dimensions {
                        (bars(share.dimension, &share.rows, total))
                    }
                }
                (heat_map(s))
            }
        }
    }
}

/// Where a value may break between lines: after a slash, and in a host
/// name (a referrer's) after a dot.
fn breaks_after(dim: Dimension, c: char) -> bool {
    c == '/' || (c == '.' && dim == Dimension::Referrer)
}

fn bars(dim: Dimension, rows: &[(String, u64)], total: u64) -> Markup {
    let (top, rest) = shown(rows);
    let max = top
        .iter()
        .map(|r| r.1)
        .chain([rest])
        .max()
        .unwrap_or(0)
        .max(1);
    let row = |value: &str, n: u64, class: &str| {
        let width = n as f64 * 100.0 / max as f64;
        html! {
            tr class=(class) data-value=(value) data-scans=(n) {
                // A line may break after a slash ("Mobile Safari UI/WKWebView",
                // "Mac OS X/…"), and a host name after a dot, rather than
                // mid-word in a narrow column ("www.google.co|m").
                th scope="row" {
                    @for part in value.split_inclusive(|c| breaks_after(dim, c)) {
                        (part)
                        @if part.ends_with(|c| breaks_after(dim, c)) { wbr; }
                    }
                }
                td.bar {
                    svg viewBox="0 0 100 10" preserveAspectRatio="none" aria-hidden="true" focusable="false" {
                        rect width=(format!("{width:.1}")) height="10" fill="#2a6f97" {}
                    }
                }
                td.n { (n) " " span.muted { "(" (percent(n, total)) ")" } }
            }
        }
    };
    html! {
        figure.bars id={ "by-" (dim.name()) } data-dimension=(dim.name()) {
            figcaption { h3 { (title(dim)) } }
            table.bars {
                thead { tr { th scope="col" { (column(dim)) } th scope="col" { span.visually-hidden { "Bar" } } th scope="col" { "Scans" } } }
                tbody {
                    @for (value, n) in &top { (row(value, *n, "value")) }
                    @if rest > 0 { (row(REST, rest, "rest")) }
                }
            }
        }
    }
}

fn heat_map(s: &Shares) -> Markup {
    let max = s.heat.iter().flatten().copied().max().unwrap_or(0);
    html! {
        figure.heat #heat-map {
            figcaption { h3 { "Hour and weekday" } }
            table.heat {
                caption.visually-hidden { "Scans by hour (rows) and weekday (columns), in " (s.time_zone.name()) }
                thead { tr { th scope="col" { "Hour" } @for d in WEEKDAYS { th scope="col" { (d) } } } }
                tbody {
                    @for hour in 0..24 {
                        tr {
                            th scope="row" { (format!("{hour:02}")) }
                            @for (day, name) in WEEKDAYS.iter().enumerate() {
                                @let n = s.heat[day][hour];
                                td class={ "h" (shade(n, max)) } data-day=(name) data-hour=(hour) data-scans=(n) { (short(n)) }
                            }
                        }
                    }
                }
            }
        }
    }
}

/// What the section shows as CSV: `dimension,value,scans`, each
/// breakdown's rows (the top and "Other"), then the heat map's cells with
/// scans (`hour-weekday`, `Mon 09`).
pub fn csv(s: &Shares) -> String {
    let mut out = String::from("dimension,value,scans\n");
    let mut line = |dim: &str, value: &str, n: u64| {
        out.push_str(dim);
        out.push(',');
        out.push_str(&quoted(value));
        out.push(',');
        out.push_str(&n.to_string());
        out.push('\n');
    };
    for share in &s.dimensions {
        let (top, rest) = shown(&share.rows);
        for (value, n) in top {
            line(share.dimension.name(), value, n);
        }
        if rest > 0 {
            line(share.dimension.name(), REST, rest);
        }
    }
    for (day, name) in WEEKDAYS.iter().enumerate() {
        for hour in 0..24 {
            let n = s.heat[day][hour];
            if n > 0 {
                line("hour-weekday", &format!("{name} {hour:02}"), n);
            }
        }
    }
    out
}

// --- Fallback answers beside the breakdowns (issue 33) ---

/// The CSV row of scans answered by a fallback: the index counts them
/// apart from scans, with no device, place or hour, so they are in no
/// other row.
pub const FALLBACK_ROW: &str = "fallback,all";

/// A breakdowns CSV ([`csv`], [`link_csv`]) with the [`FALLBACK_ROW`] at
/// its end: `fallback,all,N` over the same span.
pub fn with_fallback(mut csv: String, fallback: u64) -> String {
    csv.push_str(&format!("{FALLBACK_ROW},{fallback}\n"));
    csv
}

/// Under the breakdowns: how many scans `scope` were sent to a fallback
/// instead, which the bars above leave out (nothing when none were).
pub fn fallback_note(fallback: Option<u64>, scope: &str) -> Markup {
    html! {
        @if let Some(n) = fallback.filter(|n| *n > 0) {
            p.muted #breakdowns-fallback data-fallback=(n) {
                "Besides these, " (n) " " (if n == 1 { "scan" } else { "scans" }) " " (scope)
                " went to a link's fallback (the link disabled or expired); the breakdowns leave "
                (if n == 1 { "it" } else { "them" }) " out."
            }
        }
    }
}

/// One link's breakdowns as CSV (issue 33): [`csv`] with the link named in
/// its first rows, in the file's own shape: `link,"KEY",` and, when it has
/// one, `title,"TITLE",` (no scans in those rows), so a file saved to a
/// folder still says which poster it is about.
pub fn link_csv(key: &str, title: Option<&str>, s: &Shares) -> String {
    let all = csv(s);
    let (header, rows) = all.split_at(all.find('\n').map_or(all.len(), |i| i + 1));
    let mut out = String::from(header);
    out.push_str(&format!("link,{},\n", quoted(key)));
    if let Some(title) = title {
        out.push_str(&format!("title,{},\n", quoted(title)));
    }
    out.push_str(rows);
    out
}

/// A CSV field: quoted, quotes doubled, and a leading `=`, `+`, `-` or `@`
/// escaped so a spreadsheet does not run it as a formula.
fn quoted(value: &str) -> String {
    let guard = if value.starts_with(['=', '+', '-', '@']) {
        "'"
    } else {
        ""
    };
    format!("\"{guard}{}\"", value.replace('"', "\"\""))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scan_index::Share;

    fn shares() -> Shares {
        let mut heat = [[0; 24]; 7];
        heat[0][9] = 3;
        heat[6][23] = 1;
        Shares {
            dimensions: vec![
                Share {
                    dimension: Dimension::Device,
                    rows: vec![("phone".into(), 3), ("desktop".into(), 1)],
                },
                Share {
                    dimension: Dimension::City,
                    rows: (0..10)
                        .map(|i| (format!("Town {i}, IE"), 10 - i))
                        .chain([(OTHER.to_owned(), 4)])
                        .collect(),
                },
            ],
            heat,
            time_zone: chrono_tz::Europe::Dublin,
        }
    }

    #[test]
    fn the_top_eight_are_shown_and_the_rest_is_one_row() {
        let s = shares();
        let (top, rest) = shown(&s.dimensions[1].rows);
        assert_eq!(top.len(), TOP);
        assert_eq!(top[0], ("Town 0, IE", 10));
        // Towns 8 and 9 (2 and 1 scans) and the index's own "other" (4).
        assert_eq!(rest, 7);
    }

    #[test]
    fn every_number_is_in_a_table_and_the_map_is_shaded() {
        let html = section(Some(&shares()), "of all time", "/x.csv").into_string();
        assert!(
            html.contains(r#"data-value="phone" data-scans="3""#),
            "{html}"
        );
        assert!(
            html.contains(r#"class="rest" data-value="Other" data-scans="7""#),
            "{html}"
        );
        assert!(html.contains("(75%)"), "{html}");
        assert!(
            html.contains(r#"class="h4" data-day="Mon" data-hour="9" data-scans="3""#),
            "{html}"
        );
        assert!(
            html.contains(r#"class="h2" data-day="Sun" data-hour="23" data-scans="1""#),
            "{html}"
        );
        assert!(html.contains("in Europe/Dublin"), "{html}");
        assert_eq!(html.matches("<rect").count(), 2 + TOP + 1);
        assert!(!html.contains("<script"), "no JavaScript");
        let none = section(None, "", "").into_string();
        assert!(none.contains(r#"data-available="false""#));
    }

    #[test]
    fn csv_is_what_is_shown() {
        let csv = csv(&shares());
        let lines: Vec<&str> = csv.lines().collect();
        assert_eq!(lines[0], "dimension,value,scans");
        assert_eq!(lines[1], "device,\"phone\",3");
        assert!(lines.contains(&"city,\"Town 0, IE\",10"), "{csv}");
        assert!(lines.contains(&"city,\"Other\",7"), "{csv}");
        assert!(lines.contains(&"hour-weekday,\"Mon 09\",3"), "{csv}");
        assert_eq!(lines.len(), 1 + 2 + TOP + 1 + 2);
        assert_eq!(quoted("=cmd|x"), "\"'=cmd|x\"");
    }

    #[test]
    fn a_link_s_csv_names_the_link_and_its_title_first() {
        let all = csv(&shares());
        let titled = link_csv("poster", Some("Spring \"poster\""), &shares());
        let lines: Vec<&str> = titled.lines().collect();
        assert_eq!(lines[0], "dimension,value,scans");
        assert_eq!(lines[1], "link,\"poster\",");
        assert_eq!(lines[2], "title,\"Spring \"\"poster\"\"\",");
        assert_eq!(lines[3..], all.lines().collect::<Vec<_>>()[1..]);
        let plain = link_csv("p", None, &shares());
        assert_eq!(plain.lines().nth(2), all.lines().nth(1), "no title row");
    }

    #[test]
    fn shades_rise_with_the_count() {
        assert_eq!(shade(0, 10), 0);
        assert_eq!(shade(1, 10), 1);
        assert_eq!(shade(10, 10), 4);
        assert_eq!(shade(5, 10), 2);
        assert_eq!(shade(6, 10), 3);
    }
}
