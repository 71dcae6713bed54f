//! Picking a domain by `Host` allocates nothing (issue 36): it runs on
//! every request of a server with `[[domains]]`. Counted by a global
//! allocator that counts this thread's allocations, alone in its test
//! binary (as `tests/rules_alloc.rs`).

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use qrtag::server::sites::{Route, Site, Sites, UnknownHost};

struct Counting;

thread_local! {
    static ALLOCATIONS: Cell<usize> = const { Cell::new(0) };
}

// SAFETY: every call is passed to the system allocator as it came.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let _ = ALLOCATIONS.try_with(|n| n.set(n.get() + 1));
        // SAFETY: the caller's contract is passed on.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: as above.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let _ = ALLOCATIONS.try_with(|n| n.set(n.get() + 1));
        // SAFETY: as above.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn allocations() -> usize {
    ALLOCATIONS.with(Cell::get)
}

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
