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

/// The markers by their first byte.
fn candidates(first: u8) -> &'static [(&'static [u8], u32)] {
    match first {
        b'A' => &[
            (b"Android", ANDROID),
            (b"AspiegelBot", NOT_AN_OS),
            (b"Apple TV", APPLE_OTHER),
            (b"AppleTV", APPLE_OTHER),
            (b"ARM;", ARM),
        ],
        b'B' => &[(b"BlackBerry", PHONE_HINT), (b"BB10", PHONE_HINT)],
        b'C' => &[
            (b"CFNetwork/720.", MAC),
            (b"CFNetwork/760.", MAC),
            (b"CFNetwork/", IOS),
            (b"CrKey", NOT_AN_OS),
            (b"CriOS/", IOS_APP),
            (b"CrOS", DESKTOP_HINT),
        ],
        b'E' => &[(b"EdgiOS/", IOS_APP)],
        b'I' => &[(b"Intel", INTEL), (b"IEMobile", PHONE_HINT)],
        b'J' => &[(b"J2ME", PHONE_HINT)],
        b'K' => &[
            (b"Kindle", TABLET_HINT),
            (b"KFTT", TABLET_HINT),
            (b"KFOT", TABLET_HINT),
            (b"KaiOS", PHONE_HINT),
        ],
        b'M' => &[
            (b"Macintosh", MAC | DESKTOP_HINT),
            (b"Mac_PowerPC", MAC | DESKTOP_HINT),
            (b"Mac OS X", MAC_OS_X | DESKTOP_HINT),
            (b"Mobile", MOBILE),
            (b"MIDP", PHONE_HINT),
        ],
        b'N' => &[(b"Nokia", PHONE_HINT)],
        b'O' => &[
            (b"Outlook-iOS-Android", OUTLOOK_IOS),
            (b"Opera Mini", PHONE_HINT),
            (b"Opera Mobi", PHONE_HINT),
        ],
        b'P' => &[(b"PetalBot", NOT_AN_OS), (b"PlayBook", TABLET_HINT)],
        b'Q' => &[(b"Quest", ANDROID_HINT)],
        b'S' => &[
            (b"Silk-Accelerated=", ANDROID_HINT | TABLET_HINT),
            (b"Silk", TABLET_HINT),
            (b"Symbian", PHONE_HINT),
            (b"SymbOS", PHONE_HINT),
            (b"Series40", PHONE_HINT),
            (b"Series 60", PHONE_HINT),
        ],
        b'T' => &[(b"Tizen", WINDOWS), (b"Tablet", TABLET_HINT)],
        b'W' => &[
            (b"Windows Phone", WIN_PHONE | WINDOWS),
            (b"Windows Mobile", WIN_PHONE | WINDOWS),
            (b"WindowsMobile", WIN_PHONE | WINDOWS),
            (b"Windows NT", WINDOWS | WINDOWS_NT | DESKTOP_HINT),
            (b"Windows", WINDOWS),
            (b"Win32", WINDOWS),
            (b"Win16", WINDOWS),
            (b"Win64", WINDOWS),
            (b"WinNT", WINDOWS),
            (b"Win9", WINDOWS),
        ],
        b'X' => &[(b"XBLWP7", WIN_PHONE), (b"X11", DESKTOP_HINT)],
        b'a' => &[(b"android mobile/", ANDROID_HINT)],
        b'i' => &[
            (b"iPhone", IOS),
            (b"iPad", IOS | IPAD),
            (b"iPod", IOS),
            (b"iPh OS", IOS),
            (b"iPd OS", IOS),
        ],
        b'w' => &[(b"watchOS", APPLE_OTHER)],
        b'(' => &[
            (b"(x86_64)", MAC | DESKTOP_HINT),
            (b"(i386)", MAC | DESKTOP_HINT),
        ],
        b';' => &[(b"; Adr ", ANDROID_HINT)],
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
        let rest = &ua[i..];
        for &(pattern, bits) in candidates(b) {
            if rest.starts_with(pattern) {
                m |= bits;
                if bits & ANDROID != 0 && versioned(&rest[pattern.len()..]) {
                    m |= ANDROID_VERSION;
                }
            }
        }
        // `iOS` as a word: not KaiOS, not "iOSApp".
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
