//! Picking a domain by `Host` allocates nothing (issue 36): it runs on
//! every request of a server with `[[domains]]`. Counted by a global
//! allocator that counts this thread's allocations, alone in its test
//! binary (as `tests/rules_alloc.rs`).

#[path = "support/counting_alloc.rs"]
mod counting_alloc;

use counting_alloc::allocations;

use qrtag::server::sites::{Route, Site, Sites, UnknownHost};

fn site(host: &str) -> Site {
    let public_url =
        qrtag::values::public_url::PublicUrl::parse(&format!("https://{host}")).expect("url");
    Site {
        host: Some(qrtag::values::host::Host::parse(host).expect("host")),
        snapshot: qrtag::snapshot::Snapshot::new(),
        public_url: qrtag::store::live_url::LiveUrl::new(public_url),
        access_log: qrtag::access_log::AccessLog::open(
            &qrtag::access_log::AccessLogTarget::Path("/dev/null".into()),
            qrtag::access_log::WriterOptions::default(),
        )
        .expect("a log to nowhere"),
        tracking: None,
        dead_tag: qrtag::server::dead_tag::DeadTagPage::default(),
        root: None,
    }
}

#[test]
fn picking_one_of_three_domains_allocates_nothing() {
    let sites = Sites::new(
        site("a.example"),
        vec![site("b.example"), site("0x1f.ie")],
        UnknownHost::NotFound,
    );
    // (Host, a trusted proxy's X-Forwarded-Host, the site that answers)
    type Asked = (&'static [u8], Option<&'static [u8]>, Route);
    let asked: [Asked; 5] = [
        (b"0x1f.ie", None, Route::Site(2)),
        (b"0X1F.IE:8080", None, Route::Site(2)),
        (b"b.example.", None, Route::Site(1)),
        (
            b"a.example",
            Some(b"proxy.example, 0x1f.ie"),
            Route::Site(2),
        ),
        (b"c.example", None, Route::Unknown),
    ];
    let before = allocations();
    for (host, forwarded, want) in asked {
        assert_eq!(sites.route(Some(host), || forwarded), want);
    }
    assert_eq!(allocations() - before, 0, "Sites::route allocated");
}
