use std::net::{Ipv4Addr, Ipv6Addr};
use std::path::Path;

use super::*;
use crate::access_log::format::parse_line;

const IPHONE: &str = "Mozilla%2F5.0%20%28iPhone%3B%20CPU%20iPhone%20OS%2017_0%20like%20Mac%20OS%20X%29%20AppleWebKit%2F605.1.15%20%28KHTML%2C%20like%20Gecko%29%20Version%2F17.0%20Mobile%2F15E148%20Safari%2F604.1";
const WINDOWS: &str = "Mozilla%2F5.0%20%28Windows%20NT%2010.0%3B%20Win64%3B%20x64%29%20AppleWebKit%2F537.36%20%28KHTML%2C%20like%20Gecko%29%20Chrome%2F120.0.0.0%20Safari%2F537.36";

fn geo() -> GeoDb {
    GeoDb::open(&Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/geoip/test.mmdb"))
        .unwrap()
}

fn deriver() -> Deriver {
    Deriver::new(
        chrono_tz::Europe::Dublin,
        device::Parser::new().ok(),
        Some(geo()),
    )
}

/// The ids a counter keeps name the values [`Deriver::value`] writes, one
/// id per value, for every dimension.
#[test]
fn value_ids_name_the_values() {
    let lines = [
        format!("20261121100000.0 203.0.113.9 - {IPHONE} /a 302 https://e.com/ GET -"),
        format!(
            "20261121230000.0 2001:db8:1::5 - {WINDOWS} /a 302 https://e.com/ GET https%3A%2F%2Fwww.example.org%2Fx"
        ),
        format!("20261122090000.0 192.0.2.1 - {IPHONE} /a 302 https://e.com/ GET -"),
        "20261122090000.0 - - - /a 302 https://e.com/ GET -".to_owned(),
        format!("20261123090000.0 ::ffff:203.0.113.7 - {IPHONE} /a 302 https://e.com/ GET -"),
    ];
    let mut d = deriver();
    let mut by_value: Map<(Dimension, String), u32> = Map::default();
    let mut out = String::new();
    for _ in 0..2 {
        for l in &lines {
            let line = parse_line(l).unwrap();
            for dim in Dimension::ALL {
                d.value(dim, &line, false, &mut out);
                let id = d.value_id(dim, &line, false);
                assert_eq!(d.value_name(dim, id), out, "{dim} of {l}");
                let first = *by_value.entry((dim, out.clone())).or_insert(id);
                assert_eq!(first, id, "{dim} {out}: one id");
            }
        }
    }
    let line = parse_line(&lines[0]).unwrap();
    let mut name = |dim| {
        let id = d.value_id(dim, &line, false);
        (id, d.value_name(dim, id).to_owned())
    };
    assert_eq!(name(Dimension::Device).1, "phone");
    assert_eq!(name(Dimension::Hour), (10, "10:00".to_owned()));
    assert_eq!(name(Dimension::Weekday), (5, "Saturday".to_owned()));
    assert_eq!(name(Dimension::Country).1, "IE");
    // The ids of the classes are their order.
    for (i, class) in CLASSES.iter().enumerate() {
        assert_eq!(*class as usize, i);
        assert_eq!(d.value_name(Dimension::Device, i as u32), class.name());
    }
    assert_eq!(d.value_name(Dimension::Os, 10_000), "", "an id never given");
}

/// The address cache is direct-mapped and overwritten on collisions:
/// thousands more addresses than slots, in and out of the database, IPv4,
/// IPv6 and IPv4-mapped, each asked three times in a shuffled order, give
/// the database's own answer every time.
#[test]
fn the_address_cache_answers_as_the_database() {
    use rand::seq::SliceRandom;
    use rand::{Rng, SeedableRng};
    let mut rng = rand::rngs::StdRng::seed_from_u64(7);
    let mut ips: Vec<IpAddr> = Vec::new();
    for _ in 0..(ADDRESS_SLOTS * 2) {
        let net = [[203, 0, 113], [198, 51, 100], [192, 0, 2]][rng.random_range(0..3)];
        let v4 = Ipv4Addr::new(net[0], net[1], net[2], rng.random());
        ips.push(IpAddr::V4(v4));
        ips.push(IpAddr::V6(v4.to_ipv6_mapped()));
        let block = [1u16, 2, 0xffff][rng.random_range(0..3)];
        ips.push(IpAddr::V6(Ipv6Addr::new(
            0x2001,
            0xdb8,
            block,
            0,
            0,
            0,
            rng.random(),
            rng.random(),
        )));
    }
    let mut asked: Vec<IpAddr> = ips.iter().chain(&ips).chain(&ips).copied().collect();
    asked.shuffle(&mut rng);
    let db = geo();
    let mut d = deriver();
    for ip in asked {
        let want = match db.record(ip.to_canonical()) {
            Some(_) => db.place(ip.to_canonical()),
            None => db.place("192.0.2.1".parse().unwrap()),
        };
        assert_eq!(d.place(Some(ip)), Some(&want), "{ip}");
    }
    assert_eq!(
        d.place(None).map(|p| p.country.as_str()),
        Some(place::UNKNOWN)
    );
}
