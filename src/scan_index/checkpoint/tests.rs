use super::*;
use crate::access_log::format::parse_line;
use crate::stats::aggregate::BotFilter;
use crate::stats::dimensions::{Deriver, device::Parser};

const IPHONE: &str = "Mozilla%2F5.0%20%28iPhone%3B%20CPU%20iPhone%20OS%2017_0%29";

fn basis() -> Basis {
    Basis {
        time_zone: chrono_tz::Europe::Dublin,
        geoip: None,
    }
}

fn deriver() -> Deriver {
    Deriver::new(chrono_tz::Europe::Dublin, Parser::new().ok(), None)
}

fn sample() -> IndexState {
    let mut state = IndexState::new().with_breakdowns(basis());
    let mut bots = BotFilter::new();
    let mut deriver = deriver();
    for (time, id, key, status, location) in [
        (
            "20261121100000.0",
            "0Vh3kY2s4fLq9ZxA01b",
            "/H83if",
            302,
            "https://a.example/a",
        ),
        (
            "20261122100000.0",
            "0Vh3kY2s4fLq9ZxA01c",
            "/H83if",
            302,
            "https://a.example/b",
        ),
        (
            "20261122110000.0",
            "-",
            "/docs/api",
            302,
            "https://docs.example/",
        ),
        ("20261122120000.0", "-", "/nope", 404, "-"),
    ] {
        let line = format!("{time} 192.0.2.1 {id} {IPHONE} {key} {status} {location} GET -");
        let line = parse_line(&line).expect("line");
        state.add_with(&line, line.key(), &mut bots, Some(&mut deriver));
    }
    state.add_malformed();
    state
}

fn marks() -> Vec<LogMarks> {
    let mark = FileMark {
        dev: 1,
        ino: 2,
        size: 300,
        offset: 250,
        head: [7; 16],
        complete: true,
    };
    vec![
        LogMarks {
            log: "/var/log/qrtag/nodes/a.log".into(),
            marks: vec![mark],
        },
        // Another node's file may begin with the same line.
        LogMarks {
            log: "/var/log/qrtag/nodes/b.log".into(),
            marks: vec![
                mark,
                FileMark {
                    offset: 10,
                    complete: false,
                    ..mark
                },
            ],
        },
    ]
}

fn encoded() -> Vec<u8> {
    let mut bytes = Vec::new();
    encode(&sample(), &marks(), "/var/log/qrtag/access.log", &mut bytes).expect("encode");
    bytes
}

#[test]
fn round_trip_keeps_every_count_and_mark() {
    let state = sample();
    let decoded = decode(
        &encoded()[..],
        encoded().len() as u64,
        "/var/log/qrtag/access.log",
        Some(&basis()),
    )
    .expect("decode");
    assert_eq!(decoded.logs, marks());
    let got = decoded.state;
    assert_eq!(got.totals(), state.totals());
    assert_eq!((got.lines_read(), got.malformed()), (5, 1));
    for key in ["H83if", "docs/api", "nope"] {
        assert_eq!(got.key(key), state.key(key), "{key}");
    }
    assert_eq!(got.key("H83if").unique_scanners, 2);
    let (from, to) = (
        NaiveDate::from_ymd_opt(2026, 11, 1).expect("date"),
        NaiveDate::from_ymd_opt(2026, 11, 30).expect("date"),
    );
    assert_eq!(got.daily_totals(from, to), state.daily_totals(from, to));
    assert_eq!(
        got.key_days("H83if", from, to),
        state.key_days("H83if", from, to)
    );
    for key in ["H83if", "docs/api", "nope"] {
        assert_eq!(got.key_shares(key), state.key_shares(key), "{key}");
    }
    let shares = got.key_shares("H83if").expect("kept");
    assert_eq!(shares.scans(), 2);
    // 10:00 UTC in November is 10:00 in Dublin; the 21st was a Saturday.
    assert_eq!(shares.heat[5][10], 1);
    assert_eq!(
        shares.get(Dimension::Os).map(|s| s.rows.clone()),
        Some(vec![("iOS 17".to_owned(), 2)])
    );
    assert_eq!(got.day_shares(from, to), state.day_shares(from, to));
    assert_eq!(got.day_shares(from, to).map(|s| s.scans()), Some(3));
}

use crate::stats::dimensions::Dimension;

/// Counts past what an entry holds (65,535) come back from their excess.
#[test]
fn counts_past_an_entrys_width_round_trip() {
    let mut state = IndexState::new().with_breakdowns(basis());
    let (mut bots, mut deriver) = (BotFilter::new(), deriver());
    let n = 70_000;
    for i in 0..n {
        let line = format!(
            "20261121{:02}{:02}{:02}.0 192.0.2.1 - {IPHONE} /H83if 302 - GET -",
            10 + i / 3600 % 2,
            i / 60 % 60,
            i % 60
        );
        let line = parse_line(&line).expect("line");
        state.add_with(&line, line.key(), &mut bots, Some(&mut deriver));
    }
    let mut bytes = Vec::new();
    encode(&state, &[], "access.log", &mut bytes).expect("encode");
    let got = decode(&bytes[..], bytes.len() as u64, "access.log", Some(&basis()))
        .expect("decode")
        .state;
    let shares = got.key_shares("H83if").expect("kept");
    assert_eq!(shares, state.key_shares("H83if").expect("kept"));
    assert_eq!(shares.scans(), n as u64);
    assert_eq!(
        shares.get(Dimension::Device).map(|s| s.rows.clone()),
        Some(vec![("phone".to_owned(), n as u64)])
    );
}

/// Breakdowns counted in another time zone, or none at all, are rebuilt.
#[test]
fn a_checkpoint_of_another_basis_is_refused() {
    let bytes = encoded();
    let utc = Basis {
        time_zone: chrono_tz::Tz::UTC,
        geoip: None,
    };
    for basis in [Some(&utc), None] {
        let err = decode(
            &bytes[..],
            bytes.len() as u64,
            "/var/log/qrtag/access.log",
            basis,
        )
        .expect_err("other basis");
        assert!(matches!(err, DecodeError::OtherBasis { .. }), "{err}");
    }
}

use chrono::NaiveDate;

#[test]
fn every_damaged_byte_is_refused() {
    let bytes = encoded();
    for i in 0..bytes.len() {
        let mut damaged = bytes.clone();
        damaged[i] ^= 0x41;
        assert!(
            decode(
                &damaged[..],
                damaged.len() as u64,
                "/var/log/qrtag/access.log",
                Some(&basis())
            )
            .is_err(),
            "byte {i} flipped and still believed"
        );
    }
}

#[test]
fn a_cut_file_is_refused() {
    let bytes = encoded();
    for len in [0, 4, 8, 12, bytes.len() / 2, bytes.len() - 1] {
        let err = decode(
            &bytes[..len],
            len as u64,
            "/var/log/qrtag/access.log",
            Some(&basis()),
        )
        .expect_err("cut");
        assert!(
            matches!(err, DecodeError::NotACheckpoint | DecodeError::Checksum),
            "{len}: {err}"
        );
    }
    let mut longer = bytes.clone();
    longer.push(0);
    assert!(
        decode(
            &longer[..],
            longer.len() as u64,
            "/var/log/qrtag/access.log",
            Some(&basis())
        )
        .is_err()
    );
}

#[test]
fn a_checkpoint_of_another_log_is_refused() {
    let err = decode(
        &encoded()[..],
        encoded().len() as u64,
        "/srv/other/access.log",
        Some(&basis()),
    )
    .expect_err("other log");
    assert!(matches!(err, DecodeError::OtherLog { .. }), "{err}");
}

#[test]
fn another_version_is_refused() {
    let mut bytes = encoded();
    bytes[8] = 10;
    assert!(matches!(
        decode(
            &bytes[..],
            bytes.len() as u64,
            "/var/log/qrtag/access.log",
            Some(&basis())
        ),
        Err(DecodeError::Version(10))
    ));
}

/// Issue 34: a file older than version 9 lacks the links' destinations,
/// which its lines hold: it is refused, so the index is rebuilt from the
/// logs rather than showing destinations counted only since the upgrade.
#[test]
fn a_checkpoint_without_destinations_is_refused_so_the_index_is_rebuilt() {
    for version in [6, 7, 8] {
        let mut bytes = Vec::new();
        encode_as(
            version,
            &sample(),
            &marks(),
            "/var/log/qrtag/access.log",
            &mut bytes,
        )
        .expect("encode");
        let got = decode(
            &bytes[..],
            bytes.len() as u64,
            "/var/log/qrtag/access.log",
            Some(&basis()),
        );
        assert!(
            matches!(got, Err(DecodeError::Version(v)) if v == version),
            "version {version}: {got:?}"
        );
    }
}

/// Issue 34: each link's scans per destination, a fallback's apart, are
/// kept over a restart; a damaged entry is refused like any other.
#[test]
fn destinations_round_trip() {
    let mut state = sample();
    let mut bots = BotFilter::new();
    let mut deriver = deriver();
    for location in ["https://a.example/b", "~https://gone.example/"] {
        let line = format!("20261123100000.0 192.0.2.1 - {IPHONE} /H83if 302 {location} GET -");
        let line = parse_line(&line).expect("line");
        state.add_with(&line, line.key(), &mut bots, Some(&mut deriver));
    }
    let want = state.key_destinations("H83if");
    assert_eq!(want.len(), 3, "{want:?}");
    assert_eq!(want[0].destination.as_deref(), Some("https://a.example/b"));
    assert_eq!(want[0].scans, 2);
    let mut bytes = Vec::new();
    encode(&state, &marks(), "/var/log/qrtag/access.log", &mut bytes).expect("encode");
    let got = decode(
        &bytes[..],
        bytes.len() as u64,
        "/var/log/qrtag/access.log",
        Some(&basis()),
    )
    .expect("decode")
    .state;
    assert_eq!(got.key_destinations("H83if"), want);
    assert_eq!(
        got.key_destinations("docs/api"),
        state.key_destinations("docs/api")
    );
    assert!(got.key_destinations("nope").is_empty());
    // The last entry's count (its low half, first in little-endian) set
    // to 0, and the checksum made to match:
    // refused, not read as a destination never sent to.
    let body = bytes.len() - 4;
    let mut damaged = bytes[..body].to_vec();
    damaged[body - 8..body - 4].copy_from_slice(&[0; 4]);
    let crc = crc32fast::hash(&damaged);
    damaged.extend_from_slice(&crc.to_le_bytes());
    assert!(matches!(
        decode(
            &damaged[..],
            damaged.len() as u64,
            "/var/log/qrtag/access.log",
            Some(&basis()),
        ),
        Err(DecodeError::Malformed(_))
    ));
}

/// Issue 33: fallback answers are kept over a restart (version 8; a
/// version 7 file, written before the log marked them, was read with none
/// until version 9 needed every file rebuilt).
#[test]
fn fallback_answers_round_trip() {
    let mut state = sample();
    let mut bots = BotFilter::new();
    let mut deriver = deriver();
    for _ in 0..3 {
        let line = format!(
            "20261123100000.0 192.0.2.1 - {IPHONE} /H83if 302 ~https://venue.example/ GET -"
        );
        let line = parse_line(&line).expect("line");
        state.add_with(&line, line.key(), &mut bots, Some(&mut deriver));
    }
    assert_eq!(state.key("H83if").fallback, 3);
    let decoded = |version: u32| {
        let mut bytes = Vec::new();
        encode_as(
            version,
            &state,
            &marks(),
            "/var/log/qrtag/access.log",
            &mut bytes,
        )
        .expect("encode");
        decode(
            &bytes[..],
            bytes.len() as u64,
            "/var/log/qrtag/access.log",
            Some(&basis()),
        )
        .expect("decode")
        .state
    };
    let got = decoded(VERSION);
    assert_eq!(got.key("H83if"), state.key("H83if"));
    assert_eq!(got.totals(), state.totals());
}
