use super::*;
use crate::access_log::format::parse_line;
use crate::stats::aggregate::{Aggregator, Filter, Report};
use crate::stats::dimensions::device::Parser;

const IPHONE: &str = "Mozilla%2F5.0%20%28iPhone%3B%20CPU%20iPhone%20OS%2017_0%20like%20Mac%20OS%20X%29%20AppleWebKit%2F605.1.15%20%28KHTML%2C%20like%20Gecko%29%20Version%2F17.0%20Mobile%2F15E148%20Safari%2F604.1";
const WINDOWS: &str = "Mozilla%2F5.0%20%28Windows%20NT%2010.0%3B%20Win64%3B%20x64%29%20AppleWebKit%2F537.36%20%28KHTML%2C%20like%20Gecko%29%20Chrome%2F120.0.0.0%20Safari%2F537.36";
const GOOGLEBOT: &str = "Mozilla%2F5.0%20%28compatible%3B%20Googlebot%2F2.1%3B%20%2Bhttp%3A%2F%2Fwww.google.com%2Fbot.html%29";
const ID_A: &str = "0Vh3kY2s4fLq9ZxA01b";
const ID_B: &str = "0Vh3kY2s4fLq9ZxA01c";

fn line(time: &str, id: &str, ua: &str, target: &str, referer: &str) -> String {
    format!("{time} 192.0.2.1 {id} {ua} {target} 302 https://example.com/ GET {referer}")
}

fn lines() -> Vec<String> {
    vec![
        // Read out of order: A's first scan is the one at 09:00, on Windows.
        line("20261121100000.0", ID_A, IPHONE, "/H83if", "-"),
        line(
            "20261121090000.0",
            ID_A,
            WINDOWS,
            "/other",
            "https%3A%2F%2Fwww.example.org%2Fx",
        ),
        line("20261122090000.0", ID_B, IPHONE, "/H83if", "-"),
        line("20261122090500.0", ID_B, IPHONE, "/H83if", "-"),
        line("20261120080000.5", "-", IPHONE, "/H83if", "-"),
        line("20261121110000.0", "-", GOOGLEBOT, "/H83if", "-"),
    ]
}

fn report(filter: Filter, dims: &[Dimension], bots: bool) -> Report {
    let wanted = Wanted {
        dimensions: dims.to_vec(),
        bots,
        time_zone: chrono_tz::Tz::UTC,
    };
    let deriver = Deriver::new(chrono_tz::Tz::UTC, Parser::new().ok(), None);
    let mut agg = Aggregator::new(filter).with_breakdowns(Breakdowns::new(wanted, deriver, true));
    for l in lines() {
        agg.add(&parse_line(&l).unwrap());
    }
    agg.finish()
}

fn row<'r>(b: &'r Breakdown, value: &str) -> &'r Row {
    b.rows.iter().find(|r| r.value == value).unwrap()
}

#[test]
fn scans_by_device_with_new_and_returning() {
    let r = report(
        Filter::default(),
        &[Dimension::Device, Dimension::Referrer],
        false,
    );
    let device = &r.breakdowns[0];
    assert_eq!(device.rows.len(), 2, "{device:?}");
    // Busiest first; bots left out.
    assert_eq!(device.rows[0].value, "phone");
    assert_eq!(
        (
            row(device, "phone").scans,
            row(device, "phone").new,
            row(device, "phone").returning
        ),
        (4, 1, 2)
    );
    assert_eq!(
        (row(device, "desktop").scans, row(device, "desktop").new),
        (1, 1)
    );
    let referrer = &r.breakdowns[1];
    assert_eq!(row(referrer, "none").scans, 4);
    assert_eq!(row(referrer, "www.example.org").scans, 1);
    // The rows add up to the scans of the key table.
    assert_eq!(
        device.rows.iter().map(|r| r.scans).sum::<u64>(),
        r.total.scans
    );
}

#[test]
fn a_key_filter_keeps_first_appearances_from_every_key() {
    let filter = Filter {
        key: Some("H83if".to_owned()),
        ..Filter::default()
    };
    let r = report(filter, &[Dimension::Device], false);
    // A scanned /other first: on H83if A only returns; B is new there.
    let phone = row(&r.breakdowns[0], "phone");
    assert_eq!((phone.scans, phone.new, phone.returning), (4, 1, 2));
}

#[test]
fn bots_only_when_asked() {
    let r = report(Filter::default(), &[Dimension::Device], true);
    assert_eq!(row(&r.breakdowns[0], "bot").scans, 1);
    assert!(r.breakdowns[0].bots);
}

#[test]
fn hours_and_weekdays_in_order_with_a_heat_map() {
    let r = report(
        Filter::default(),
        &[Dimension::Hour, Dimension::Weekday],
        false,
    );
    let hours: Vec<&str> = r.breakdowns[0]
        .rows
        .iter()
        .map(|r| r.value.as_str())
        .collect();
    assert_eq!(hours.len(), 24);
    assert_eq!(hours[0], "00:00");
    assert_eq!(row(&r.breakdowns[0], "09:00").scans, 3);
    let days = &r.breakdowns[1].rows;
    assert_eq!(days.len(), 7);
    assert_eq!(days[0].value, "Monday");
    // 2026-11-21 is a Saturday, the 22nd a Sunday, the 20th a Friday.
    assert_eq!((days[4].scans, days[5].scans, days[6].scans), (1, 2, 2));
    let heat = r.heat_map.unwrap();
    assert_eq!(heat[6][9], 2);
    assert_eq!(heat.iter().flatten().sum::<u64>(), 5);
}
