//! `Rules::choose` allocates nothing (issue 34): it runs on every scan of
//! a link with rules, on the redirect path. Counted by a global allocator
//! that counts this thread's allocations, alone in its test binary.

#[path = "support/counting_alloc.rs"]
mod counting_alloc;

use counting_alloc::allocations;

use qrtag::link::rules::{Capabilities, Rules, ScanFacts};
use serde_json::json;

struct Scan {
    ua: &'static str,
    lang: &'static str,
    country: Option<[u8; 2]>,
    bucket: u8,
}

impl ScanFacts for Scan {
    fn user_agent(&self) -> &[u8] {
        self.ua.as_bytes()
    }
    fn accept_language(&self) -> &[u8] {
        self.lang.as_bytes()
    }
    fn country(&mut self) -> Option<[u8; 2]> {
        self.country
    }
    fn split_bucket(&mut self) -> u8 {
        self.bucket
    }
}

#[test]
fn choose_allocates_nothing() {
    let rules = Rules::from_json(
        &json!([
            {"url": "https://example.com/ios", "os": ["ios", "ipados"], "class": ["phone"]},
            {"url": "https://example.com/lunch", "days": ["mon", "tue", "wed", "thu", "fri"],
             "hours": ["11:00", "15:00"], "tz": "Europe/Dublin", "lang": ["en-GB", "de"]},
            {"url": "https://example.com/night", "hours": ["22:00", "02:00"], "tz": "America/New_York"},
            {"url": "https://example.com/ie", "country": ["IE"], "from": "2026-01-01T00:00:00Z"},
            {"url": "https://example.com/b", "split": [50, 100]}
        ]),
        &Capabilities { geoip: true },
    )
    .expect("rules");
    let uas = [
        "Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.0 Mobile/15E148 Safari/604.1",
        "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Mobile Safari/537.36",
        "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36",
        "",
    ];
    let langs = ["en-GB,en;q=0.9", "de, en;q=0.8", "", "fr;q=0.2, pt-BR"];
    let start = 1_795_000_000_000i64; // 2026-11-18
    let mut chosen = [0usize; 6];
    let before = allocations();
    for i in 0..4_000i64 {
        let mut scan = Scan {
            ua: uas[(i % 4) as usize],
            lang: langs[(i / 4 % 4) as usize],
            country: if i % 3 == 0 { Some(*b"IE") } else { None },
            bucket: (i % 100) as u8,
        };
        // Every 37 minutes over about four days, both sides of each window.
        let at = start + i * 37 * 60_000 / 16;
        let c = rules.choose(&mut scan, at);
        chosen[c.map_or(5, |c| c)] += 1;
    }
    let allocated = allocations() - before;
    // The counter counts: a rule list's JSON does allocate.
    let control = allocations();
    std::hint::black_box(rules.to_json());
    assert!(allocations() > control, "the allocator counts nothing");
    println!("4,000 scans: chosen {chosen:?}, {allocated} allocations");
    assert!(
        chosen.iter().all(|&n| n > 0),
        "every rule and the url were chosen: {chosen:?}"
    );
    assert_eq!(allocated, 0);
}
