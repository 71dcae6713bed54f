//! Device class, OS family and major version, and browser family from a
//! User-Agent, by the uap-core rules (`assets/uap-core/`, the rules every
//! ua-parser port shares) through the `ua-parser` crate.
//!
//! uap-core names a device's maker and model, not its class: the class is
//! decided here from what it names, in the order the families are certain
//! (a bot, then a tablet, a phone, a desktop).

use std::fmt;

use ua_parser::Extractor;

/// What a scanner held.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DeviceClass {
    Phone,
    Tablet,
    Desktop,
    Bot,
    Other,
}

impl DeviceClass {
    pub fn name(self) -> &'static str {
        match self {
            DeviceClass::Phone => "phone",
            DeviceClass::Tablet => "tablet",
            DeviceClass::Desktop => "desktop",
            DeviceClass::Bot => "bot",
            DeviceClass::Other => "other",
        }
    }
}

impl fmt::Display for DeviceClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One User-Agent's answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Device {
    pub class: DeviceClass,
    /// uap-core's OS family (`iOS`, `Android`, `Windows`, `Mac OS X`, `Other`).
    pub os_family: String,
    /// The OS's major version as the User-Agent gives it, if it does.
    pub os_major: Option<String>,
    /// uap-core's browser family (`Mobile Safari`, `Chrome Mobile`, `Other`).
    pub browser: String,
}

impl Device {
    /// The OS as a breakdown shows it: family and major version (`iOS 17`).
    pub fn os(&self) -> String {
        match &self.os_major {
            Some(major) => format!("{} {major}", self.os_family),
            None => self.os_family.clone(),
        }
    }
}

/// The uap-core rules, compiled. Building them takes a quarter of a second,
/// so a run builds them once (shared by the breakdowns and the export), and
/// only when it needs them.
#[derive(Clone)]
pub struct Parser {
    rules: std::sync::Arc<Extractor<'static>>,
}

/// The rules as uap-core publishes them (`regexes.yaml`), turned into JSON
/// once so that no YAML parser is needed (see `assets/uap-core/README.md`).
const RULES: &str = include_str!("../../../assets/uap-core/regexes.json");

/// Why the embedded rules did not compile: a build of qrtag with broken
/// assets, never the user's input.
#[derive(Debug, thiserror::Error)]
#[error("the embedded User-Agent rules do not compile: {0}")]
pub struct RulesError(String);

impl Parser {
    pub fn new() -> Result<Parser, RulesError> {
        let regexes: ua_parser::Regexes<'static> =
            serde_json::from_str(RULES).map_err(|e| RulesError(e.to_string()))?;
        let rules = Extractor::try_from(regexes).map_err(|e| RulesError(e.to_string()))?;
        Ok(Parser {
            rules: std::sync::Arc::new(rules),
        })
    }

    /// The answers for one decoded User-Agent; `bot` is the caller's bot
    /// verdict ([`crate::stats::aggregate::BotFilter`]), which uap-core's
    /// `Spider` device adds to.
    pub fn parse(&self, ua: &str, bot: bool) -> Device {
        let browser = self
            .rules
            .ua
            .extract(ua)
            .map_or_else(|| "Other".to_owned(), |v| v.family.into_owned());
        let (os_family, os_major) = self.rules.os.extract(ua).map_or_else(
            || ("Other".to_owned(), None),
            |v| (v.os.into_owned(), v.major.map(|m| m.to_string())),
        );
        let device_family = self
            .rules
            .dev
            .extract(ua)
            .map_or_else(|| "Other".to_owned(), |v| v.device.into_owned());
        let class = if bot || device_family == "Spider" {
            DeviceClass::Bot
        } else {
            class_of(ua, &os_family, &device_family, &browser)
        };
        Device {
            class,
            os_family,
            os_major,
            browser,
        }
    }
}

/// Devices uap-core names that are tablets whatever their OS.
const TABLET_DEVICES: &[&str] = &[
    "iPad",
    "Kindle",
    "Kindle Fire",
    "Kindle Fire HD",
    "BlackBerry Playbook",
    "Blackberry Playbook",
    "Galaxy Tab",
    "Xoom",
];

/// Operating systems only phones run.
const PHONE_OSES: &[&str] = &[
    "iOS",
    "Windows Phone",
    "Windows Mobile",
    "Windows CE",
    "BlackBerry OS",
    "Symbian OS",
    "Symbian^3",
    "Bada",
    "KaiOS",
    "Tizen",
    "Maemo",
    "MeeGo",
    "webOS",
];

/// The class of a device that is not a bot.
fn class_of(ua: &str, os: &str, device: &str, browser: &str) -> DeviceClass {
    if TABLET_DEVICES.contains(&device)
        || device.contains("Tablet")
        // Android's convention: a tablet's browser leaves out "Mobile".
        || (os == "Android" && !ua.contains("Mobile") && browser != "Firefox Mobile")
        || (os == "Firefox OS" && !browser.contains("Mobile"))
        // Windows RT: Windows on an ARM tablet.
        || (os == "Windows" && ua.contains("; ARM;"))
    {
        return DeviceClass::Tablet;
    }
    if matches!(
        device,
        "iPhone" | "iPod" | "Generic Smartphone" | "Generic Feature Phone"
    ) || os == "Android"
        || os == "Firefox OS"
        || PHONE_OSES.contains(&os)
        || browser.contains("Mobile")
        || browser == "Opera Mini"
        || ua.contains("Windows CE")
        || ua.contains("J2ME")
        || ua.contains("MIDP")
    {
        return DeviceClass::Phone;
    }
    // Linux and the BSDs run servers, TVs and HTTP libraries as well: only
    // a browser on a desktop's window system (X11) names one.
    if os.starts_with("Windows") || matches!(os, "Mac OS X" | "Chrome OS") || ua.contains("X11") {
        return DeviceClass::Desktop;
    }
    DeviceClass::Other
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(ua: &str) -> Device {
        Parser::new().unwrap().parse(ua, false)
    }

    #[test]
    fn common_devices() {
        let iphone = parse(
            "Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.0 Mobile/15E148 Safari/604.1",
        );
        assert_eq!(iphone.class, DeviceClass::Phone);
        assert_eq!(iphone.os(), "iOS 17");
        assert_eq!(iphone.browser, "Mobile Safari");
        let ipad = parse(
            "Mozilla/5.0 (iPad; CPU OS 16_6 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/16.6 Mobile/15E148 Safari/604.1",
        );
        assert_eq!(ipad.class, DeviceClass::Tablet);
        let pixel = parse(
            "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Mobile Safari/537.36",
        );
        assert_eq!(
            (pixel.class, pixel.os().as_str(), pixel.browser.as_str()),
            (DeviceClass::Phone, "Android 14", "Chrome Mobile")
        );
        let tab = parse(
            "Mozilla/5.0 (Linux; Android 13; SM-X710) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36",
        );
        assert_eq!(tab.class, DeviceClass::Tablet);
        let windows = parse(
            "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36",
        );
        assert_eq!(
            (
                windows.class,
                windows.os().as_str(),
                windows.browser.as_str()
            ),
            (DeviceClass::Desktop, "Windows 10", "Chrome")
        );
        let bot = parse("Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)");
        assert_eq!(bot.class, DeviceClass::Bot);
        let odd = parse("something/1.0");
        assert_eq!(
            (odd.class, odd.os().as_str()),
            (DeviceClass::Other, "Other")
        );
        // The caller's bot verdict wins over what the string looks like.
        assert_eq!(
            Parser::new()
                .unwrap()
                .parse("Mozilla/5.0 (iPhone)", true)
                .class,
            DeviceClass::Bot
        );
    }
}
