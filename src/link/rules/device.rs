//! A scanner's OS (iOS, iPadOS, Android, other) and device class (phone,
//! tablet, desktop) from its User-Agent, for the `os` and `class` rules.
//!
//! Why not the uap-core rules `qrtag stats` uses (`stats::dimensions::device`):
//! they are about 1,200 regular expressions, a quarter of a second to build
//! and microseconds a string, and a redirect with rules must stay within a
//! fifth of a plain one's instructions (issue 34). A rule needs three OS
//! families, not a hundred, so the User-Agent is read once, byte by byte,
//! for a few dozen markers (each checked only where its first byte stands),
//! and the answer is decided from the markers in the order the uap-core
//! rules give them precedence: a Windows Phone that claims Android is not
//! Android; an app on a Mac that names `CriOS` is iOS, as uap-core says;
//! `Android 9` wins over a later `Windows`; `iPhone` comes after Windows
//! and macOS; a bare `Android` (no version) last.
//!
//! Checked against the project's corpus (`tests/fixtures/ua/reference.tsv`,
//! the Python ua-parser's answers): the OS family (iOS, Android, other)
//! agrees on at least 99% of the strings, asserted by
//! `device_agrees_with_the_ua_parser_corpus` in `rules/tests.rs`, which
//! prints both rates. The class agrees less
//! well, on purpose: the reference (`user-agents`) calls an Android
//! User-Agent a tablet unless it says `Mobile Safari`, so Android apps and
//! browsers that say only `Mobile` (Firefox, in-app browsers) count as
//! tablets there; here Android is a phone when it says `Mobile` (the
//! convention Android browsers keep: tablets leave it out), a tablet
//! otherwise.
//!
//! What a User-Agent cannot tell: iPadOS 13 and later ask for desktop sites
//! by default and then send a Mac's User-Agent, so such an iPad is `other`
//! and `desktop` here, as it is for every server.

/// The OS a rule names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Os {
    Ios,
    IpadOs,
    Android,
    Other,
}

impl Os {
    /// Every OS, in the order of its bit in [`OsSet`].
    pub const ALL: [Os; 4] = [Os::Ios, Os::IpadOs, Os::Android, Os::Other];

    /// As a rule writes it.
    pub fn name(self) -> &'static str {
        match self {
            Os::Ios => "ios",
            Os::IpadOs => "ipados",
            Os::Android => "android",
            Os::Other => "other",
        }
    }

    pub fn from_name(s: &str) -> Option<Os> {
        Os::ALL.into_iter().find(|o| o.name() == s)
    }

    fn bit(self) -> u8 {
        1 << (self as u8)
    }
}

/// The device class a rule names. A User-Agent that shows none of the three
/// (a bot, a TV, an HTTP library) has class `None` and holds no class rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Class {
    Phone,
    Tablet,
    Desktop,
}

impl Class {
    pub const ALL: [Class; 3] = [Class::Phone, Class::Tablet, Class::Desktop];

    pub fn name(self) -> &'static str {
        match self {
            Class::Phone => "phone",
            Class::Tablet => "tablet",
            Class::Desktop => "desktop",
        }
    }

    pub fn from_name(s: &str) -> Option<Class> {
        Class::ALL.into_iter().find(|c| c.name() == s)
    }

    fn bit(self) -> u8 {
        1 << (self as u8)
    }
}

/// A set of OSes (a rule's `os`), one bit each.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct OsSet(u8);

impl OsSet {
    pub fn insert(&mut self, os: Os) {
        self.0 |= os.bit();
    }
    pub fn contains(self, os: Os) -> bool {
        self.0 & os.bit() != 0
    }
}

/// A set of device classes (a rule's `class`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ClassSet(u8);

impl ClassSet {
    pub fn insert(&mut self, class: Class) {
        self.0 |= class.bit();
    }
    pub fn contains(self, class: Option<Class>) -> bool {
        class.is_some_and(|c| self.0 & c.bit() != 0)
    }
}

/// What one User-Agent says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Device {
    pub os: Os,
    pub class: Option<Class>,
}

/// Only this much of a User-Agent is read: real ones are a few hundred
/// bytes, and the work per scan stays bounded whatever a client sends.
pub const MAX_READ: usize = 2048;

// The markers, one bit each.
const WIN_PHONE: u32 = 1 << 0; // Windows Phone, XBLWP7, Windows Mobile
const NOT_AN_OS: u32 = 1 << 1; // Chromecast, two crawlers that claim Android
const OUTLOOK_IOS: u32 = 1 << 2; // Outlook-iOS-Android: uap-core says iOS
const ANDROID_VERSION: u32 = 1 << 3; // Android, then [ -/:] and a digit
const ANDROID_HINT: u32 = 1 << 4; // Android forks and browsers that hide it
const ANDROID: u32 = 1 << 5;
const WINDOWS: u32 = 1 << 6;
const WINDOWS_NT: u32 = 1 << 7;
const MAC: u32 = 1 << 8; // a Mac beyond doubt
const MAC_OS_X: u32 = 1 << 9; // also in every iPhone's "like Mac OS X"
const IOS_APP: u32 = 1 << 10; // CriOS/, EdgiOS/
const INTEL: u32 = 1 << 11;
const APPLE_OTHER: u32 = 1 << 12; // watchOS, Apple TV
const IOS: u32 = 1 << 13;
const IPAD: u32 = 1 << 14;
const MOBILE: u32 = 1 << 15;
const PHONE_HINT: u32 = 1 << 16;
const TABLET_HINT: u32 = 1 << 17;
const DESKTOP_HINT: u32 = 1 << 18;
const ARM: u32 = 1 << 19;

/// One marker: its bytes, and its first eight (or fewer) as a
/// little-endian word with a mask, so that a position is ruled out by one
/// compare of a loaded word, not a call to `memcmp`: most candidate
/// positions (`M` of `Mozilla`, `(`, `C` of `CPU`) fail in the first bytes.
#[derive(Clone, Copy)]
struct Marker {
    word: u64,
    mask: u64,
    pattern: &'static [u8],
    bits: u32,
}

impl Marker {
    const fn new(pattern: &'static [u8], bits: u32) -> Marker {
        let (mut word, mut mask, mut i) = (0u64, 0u64, 0);
        while i < pattern.len() && i < 8 {
            // No marker holds a NUL byte, so the zeros `word_at` pads a
            // short tail with never match one (see the test).
            word |= (pattern[i] as u64) << (8 * i);
            mask |= 0xff << (8 * i);
            i += 1;
        }
        Marker {
            word,
            mask,
            pattern,
            bits,
        }
    }

    /// Whether the marker starts `rest`, whose first eight bytes are `word`.
    #[inline(always)]
    fn starts(&self, word: u64, rest: &[u8]) -> bool {
        word & self.mask == self.word && (self.pattern.len() <= 8 || rest.starts_with(self.pattern))
    }
}

/// The first eight bytes of `rest` as a little-endian word, zeros past its
/// end.
#[inline(always)]
fn word_at(rest: &[u8]) -> u64 {
    match rest.first_chunk::<8>() {
        Some(w) => u64::from_le_bytes(*w),
        None => {
            let mut w = [0u8; 8];
            w[..rest.len()].copy_from_slice(rest);
            u64::from_le_bytes(w)
        }
    }
}

/// The bytes some marker (or the `iOS` word) starts with: every other byte
/// of a User-Agent, most of them, costs one table read.
const FIRST_BYTES: &[u8] = b"ABCEIJKMNOPQSTWXaiw(;";

const IS_FIRST: [bool; 256] = {
    let mut t = [false; 256];
    let mut i = 0;
    while i < FIRST_BYTES.len() {
        t[FIRST_BYTES[i] as usize] = true;
        i += 1;
    }
    t
};

/// The markers by their first byte.
fn candidates(first: u8) -> &'static [Marker] {
    match first {
        b'A' => {
            const {
                &[
                    Marker::new(b"Android", ANDROID),
                    Marker::new(b"AspiegelBot", NOT_AN_OS),
                    Marker::new(b"Apple TV", APPLE_OTHER),
                    Marker::new(b"AppleTV", APPLE_OTHER),
                    Marker::new(b"ARM;", ARM),
                ]
            }
        }
        b'B' => {
            const {
                &[
                    Marker::new(b"BlackBerry", PHONE_HINT),
                    Marker::new(b"BB10", PHONE_HINT),
                ]
            }
        }
        b'C' => {
            const {
                &[
                    Marker::new(b"CFNetwork/720.", MAC),
                    Marker::new(b"CFNetwork/760.", MAC),
                    Marker::new(b"CFNetwork/", IOS),
                    Marker::new(b"CrKey", NOT_AN_OS),
                    Marker::new(b"CriOS/", IOS_APP),
                    Marker::new(b"CrOS", DESKTOP_HINT),
                ]
            }
        }
        b'E' => const { &[Marker::new(b"EdgiOS/", IOS_APP)] },
        b'I' => {
            const {
                &[
                    Marker::new(b"Intel", INTEL),
                    Marker::new(b"IEMobile", PHONE_HINT),
                ]
            }
        }
        b'J' => const { &[Marker::new(b"J2ME", PHONE_HINT)] },
        b'K' => {
            const {
                &[
                    Marker::new(b"Kindle", TABLET_HINT),
                    Marker::new(b"KFTT", TABLET_HINT),
                    Marker::new(b"KFOT", TABLET_HINT),
                    Marker::new(b"KaiOS", PHONE_HINT),
                ]
            }
        }
        b'M' => {
            const {
                &[
                    Marker::new(b"Macintosh", MAC | DESKTOP_HINT),
                    Marker::new(b"Mac_PowerPC", MAC | DESKTOP_HINT),
                    Marker::new(b"Mac OS X", MAC_OS_X | DESKTOP_HINT),
                    Marker::new(b"Mobile", MOBILE),
                    Marker::new(b"MIDP", PHONE_HINT),
                ]
            }
        }
        b'N' => const { &[Marker::new(b"Nokia", PHONE_HINT)] },
        b'O' => {
            const {
                &[
                    Marker::new(b"Outlook-iOS-Android", OUTLOOK_IOS),
                    Marker::new(b"Opera Mini", PHONE_HINT),
                    Marker::new(b"Opera Mobi", PHONE_HINT),
                ]
            }
        }
        b'P' => {
            const {
                &[
                    Marker::new(b"PetalBot", NOT_AN_OS),
                    Marker::new(b"PlayBook", TABLET_HINT),
                ]
            }
        }
        b'Q' => const { &[Marker::new(b"Quest", ANDROID_HINT)] },
        b'S' => {
            const {
                &[
                    Marker::new(b"Silk-Accelerated=", ANDROID_HINT | TABLET_HINT),
                    Marker::new(b"Silk", TABLET_HINT),
                    Marker::new(b"Symbian", PHONE_HINT),
                    Marker::new(b"SymbOS", PHONE_HINT),
                    Marker::new(b"Series40", PHONE_HINT),
                    Marker::new(b"Series 60", PHONE_HINT),
                ]
            }
        }
        b'T' => {
            const {
                &[
                    Marker::new(b"Tizen", WINDOWS),
                    Marker::new(b"Tablet", TABLET_HINT),
                ]
            }
        }
        b'W' => {
            const {
                &[
                    Marker::new(b"Windows Phone", WIN_PHONE | WINDOWS),
                    Marker::new(b"Windows Mobile", WIN_PHONE | WINDOWS),
                    Marker::new(b"WindowsMobile", WIN_PHONE | WINDOWS),
                    Marker::new(b"Windows NT", WINDOWS | WINDOWS_NT | DESKTOP_HINT),
                    Marker::new(b"Windows", WINDOWS),
                    Marker::new(b"Win32", WINDOWS),
                    Marker::new(b"Win16", WINDOWS),
                    Marker::new(b"Win64", WINDOWS),
                    Marker::new(b"WinNT", WINDOWS),
                    Marker::new(b"Win9", WINDOWS),
                ]
            }
        }
        b'X' => {
            const {
                &[
                    Marker::new(b"XBLWP7", WIN_PHONE),
                    Marker::new(b"X11", DESKTOP_HINT),
                ]
            }
        }
        b'a' => const { &[Marker::new(b"android mobile/", ANDROID_HINT)] },
        b'i' => {
            const {
                &[
                    Marker::new(b"iPhone", IOS),
                    Marker::new(b"iPad", IOS | IPAD),
                    Marker::new(b"iPod", IOS),
                    Marker::new(b"iPh OS", IOS),
                    Marker::new(b"iPd OS", IOS),
                ]
            }
        }
        b'w' => const { &[Marker::new(b"watchOS", APPLE_OTHER)] },
        b'(' => {
            const {
                &[
                    Marker::new(b"(x86_64)", MAC | DESKTOP_HINT),
                    Marker::new(b"(i386)", MAC | DESKTOP_HINT),
                ]
            }
        }
        b';' => const { &[Marker::new(b"; Adr ", ANDROID_HINT)] },
        _ => &[],
    }
}

/// Every marker in the first [`MAX_READ`] bytes, in one pass.
fn markers(ua: &[u8]) -> u32 {
    let ua = &ua[..ua.len().min(MAX_READ)];
    let mut m = 0;
    if ua.starts_with(b"JUC") {
        m |= ANDROID_HINT;
    }
    for (i, &b) in ua.iter().enumerate() {
        if !IS_FIRST[usize::from(b)] {
            continue;
        }
        let rest = &ua[i..];
        let word = word_at(rest);
        for marker in candidates(b) {
            if marker.starts(word, rest) {
                m |= marker.bits;
                if marker.bits & ANDROID != 0 && versioned(&rest[marker.pattern.len()..]) {
                    m |= ANDROID_VERSION;
                }
            }
        }
        // `iOS` as a word: not KaiOS, not "iOSApp".
        if b == b'i'
            && word & 0xff_ffff == u64::from_le_bytes(*b"iOS\0\0\0\0\0")
            && (i == 0 || !ua[i - 1].is_ascii_alphabetic())
            && rest
                .get(3)
                .is_none_or(|c| matches!(c, b' ' | b'/' | b';' | b'-' | b')' | b'_'))
        {
            m |= IOS;
        }
    }
    m
}

/// `Android 9`, `Android/4.0`, `Android-4`, `Android: 11`.
fn versioned(after: &[u8]) -> bool {
    matches!(after, [b' ' | b'-' | b'/' | b':', d, ..] if d.is_ascii_digit())
}

impl Device {
    /// The OS and class a User-Agent (the header's bytes) says.
    pub fn of(user_agent: &[u8]) -> Device {
        let m = markers(user_agent);
        let os = os_of(m);
        Device {
            os,
            class: class_of(os, m),
        }
    }
}

fn os_of(m: u32) -> Os {
    let apple = if m & IPAD != 0 { Os::IpadOs } else { Os::Ios };
    let has = |bits: u32| m & bits != 0;
    if has(WIN_PHONE | NOT_AN_OS) {
        Os::Other
    } else if has(OUTLOOK_IOS) {
        apple
    } else if has(ANDROID_VERSION | ANDROID_HINT) {
        Os::Android
    } else if has(WINDOWS) {
        Os::Other
    } else if m & (MAC_OS_X | IOS_APP | INTEL) == MAC_OS_X | IOS_APP | INTEL {
        apple
    } else if has(MAC | APPLE_OTHER) {
        Os::Other
    } else if has(IOS) {
        apple
    } else if has(ANDROID) {
        Os::Android
    } else {
        Os::Other
    }
}

fn class_of(os: Os, m: u32) -> Option<Class> {
    let has = |bits: u32| m & bits != 0;
    match os {
        Os::Ios => Some(Class::Phone),
        Os::IpadOs => Some(Class::Tablet),
        Os::Android if has(TABLET_HINT) || !has(MOBILE) => Some(Class::Tablet),
        Os::Android => Some(Class::Phone),
        Os::Other if has(TABLET_HINT) => Some(Class::Tablet),
        Os::Other if has(WIN_PHONE | PHONE_HINT | MOBILE) => Some(Class::Phone),
        // Windows RT.
        Os::Other if has(WINDOWS_NT) && has(ARM) => Some(Class::Tablet),
        Os::Other if has(DESKTOP_HINT) => Some(Class::Desktop),
        Os::Other => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn of(ua: &str) -> (Os, Option<Class>) {
        let d = Device::of(ua.as_bytes());
        (d.os, d.class)
    }

    #[test]
    fn common_devices() {
        use Class::*;
        let cases: &[(&str, Os, Option<Class>)] = &[
            (
                "Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.0 Mobile/15E148 Safari/604.1",
                Os::Ios,
                Some(Phone),
            ),
            (
                "Mozilla/5.0 (iPad; CPU OS 12_5_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/12.0 EdgiOS/46.3.26 Mobile/15E148 Safari/605.1.15",
                Os::IpadOs,
                Some(Tablet),
            ),
            (
                "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Mobile Safari/537.36",
                Os::Android,
                Some(Phone),
            ),
            (
                "Mozilla/5.0 (Linux; Android 5.0.2; SAMSUNG SM-T800 Build/LRX22G) AppleWebKit/537.36 (KHTML, like Gecko) SamsungBrowser/3.0 Chrome/38.0.2125.102 Safari/537.36",
                Os::Android,
                Some(Tablet),
            ),
            (
                "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36",
                Os::Other,
                Some(Desktop),
            ),
            (
                "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.0 Safari/605.1.15",
                Os::Other,
                Some(Desktop),
            ),
            (
                "Mozilla/5.0 (X11; Linux x86_64; rv:120.0) Gecko/20100101 Firefox/120.0",
                Os::Other,
                Some(Desktop),
            ),
            // A Windows Phone that claims Android and iPhone is neither.
            (
                "Mozilla/5.0 (Mobile; Windows Phone 8.1; Android 4.0; ARM; Trident/7.0; Touch; rv:11.0; IEMobile/11.0; NOKIA; Lumia 920) like iPhone OS 7_0_3 Mac OS X AppleWebKit/537 (KHTML, like Gecko) Mobile Safari/537",
                Os::Other,
                Some(Phone),
            ),
            (
                "App/1.0.0 CFNetwork/1240.0.4 Darwin/20.5.0",
                Os::Ios,
                Some(Phone),
            ),
            (
                "Reader Notifier/5 CFNetwork/596.3.3 Darwin/12.3.0 (x86_64) (MacBookPro7,1)",
                Os::Other,
                Some(Desktop),
            ),
            (
                "Mozilla/5.0 (Mobile; rv:37.0) Gecko/37.0 Firefox/37.0 KaiOS/1.0",
                Os::Other,
                Some(Phone),
            ),
            ("curl/8.5.0", Os::Other, None),
            ("", Os::Other, None),
            (
                "Googlebot/2.1 (+http://www.google.com/bot.html)",
                Os::Other,
                None,
            ),
        ];
        for (ua, os, class) in cases {
            assert_eq!(of(ua), (*os, *class), "{ua}");
        }
    }

    #[test]
    fn reads_a_bounded_prefix() {
        let mut ua = vec![b'x'; MAX_READ];
        ua.extend_from_slice(b" iPhone");
        assert_eq!(Device::of(&ua).os, Os::Other);
        assert_eq!(Device::of(&ua[MAX_READ - 10..]).os, Os::Ios);
    }

    /// The first-byte table and the markers agree, and no marker holds a
    /// NUL (which the zero padding of a short tail could match).
    #[test]
    fn marker_table_is_consistent() {
        for b in 0..=255u8 {
            let group = candidates(b);
            assert_eq!(
                IS_FIRST[usize::from(b)],
                !group.is_empty() || b == b'i',
                "{:?}",
                b as char
            );
            for m in group {
                assert_eq!(m.pattern[0], b);
                assert!(!m.pattern.contains(&0));
            }
        }
    }

    /// The markers as first written: every candidate compared in full at
    /// every position of its first byte. The word compare must find the
    /// same.
    fn markers_in_full(ua: &[u8]) -> u32 {
        let ua = &ua[..ua.len().min(MAX_READ)];
        let mut m = 0;
        if ua.starts_with(b"JUC") {
            m |= ANDROID_HINT;
        }
        for (i, &b) in ua.iter().enumerate() {
            let rest = &ua[i..];
            for c in candidates(b) {
                if rest.starts_with(c.pattern) {
                    m |= c.bits;
                    if c.bits & ANDROID != 0 && versioned(&rest[c.pattern.len()..]) {
                        m |= ANDROID_VERSION;
                    }
                }
            }
            if b == b'i'
                && rest.starts_with(b"iOS")
                && (i == 0 || !ua[i - 1].is_ascii_alphabetic())
                && rest
                    .get(3)
                    .is_none_or(|c| matches!(c, b' ' | b'/' | b';' | b'-' | b')' | b'_'))
            {
                m |= IOS;
            }
        }
        m
    }

    /// User-Agents built from pieces of markers (cut anywhere, so many end
    /// in the middle of one), NUL and other bytes.
    fn pieces() -> impl proptest::strategy::Strategy<Value = Vec<u8>> {
        use proptest::prelude::*;
        let mut all: Vec<&'static [u8]> = (0..=255u8)
            .flat_map(|b| candidates(b).iter().map(|m| m.pattern))
            .collect();
        all.extend([
            &b"iOS"[..],
            b"JUC",
            b" 9",
            b"/",
            b"\0",
            b"x",
            b"i",
            b"iO",
            b"KaiOS;",
        ]);
        let piece = (proptest::sample::select(all), 0usize..20)
            .prop_map(|(p, cut)| p[..p.len().min(cut.max(1))].to_vec());
        proptest::collection::vec(piece, 0..12).prop_map(|v| v.concat())
    }

    proptest::proptest! {
        #[test]
        fn word_compare_finds_what_full_compare_finds(ua in pieces()) {
            proptest::prop_assert_eq!(markers(&ua), markers_in_full(&ua));
        }
    }

    #[test]
    fn word_compare_on_the_corpus() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/ua/reference.tsv"
        );
        let text = std::fs::read_to_string(path).expect("reference");
        for line in text.lines() {
            let ua = line.split('\t').next().unwrap_or_default().as_bytes();
            assert_eq!(markers(ua), markers_in_full(ua), "{line}");
        }
    }

    #[test]
    fn names_round_trip() {
        for os in Os::ALL {
            assert_eq!(Os::from_name(os.name()), Some(os));
        }
        for c in Class::ALL {
            assert_eq!(Class::from_name(c.name()), Some(c));
        }
        assert_eq!(Os::from_name("iOS"), None);
        let mut set = OsSet::default();
        set.insert(Os::Android);
        assert!(set.contains(Os::Android) && !set.contains(Os::Ios));
        let mut classes = ClassSet::default();
        classes.insert(Class::Tablet);
        assert!(classes.contains(Some(Class::Tablet)));
        assert!(!classes.contains(None) && !classes.contains(Some(Class::Phone)));
    }
}
