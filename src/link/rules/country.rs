//! The `country` rule's codes: ISO 3166-1 alpha-2, as GeoIP databases give
//! a country (`iso_code`), so that a code no database returns is refused
//! when the rule is saved rather than never holding. `XK` (Kosovo) is not
//! assigned by ISO but MaxMind's and DB-IP's databases use it.
//!
//! The list is ISO's assigned codes (checked against tzdata's
//! `iso3166.tab` when written, 249 codes) and `XK`.

const CODES: &str = "\
AD AE AF AG AI AL AM AO AQ AR AS AT AU AW AX AZ BA BB BD BE BF BG BH BI BJ BL BM BN BO BQ BR BS \
BT BV BW BY BZ CA CC CD CF CG CH CI CK CL CM CN CO CR CU CV CW CX CY CZ DE DJ DK DM DO DZ EC EE \
EG EH ER ES ET FI FJ FK FM FO FR GA GB GD GE GF GG GH GI GL GM GN GP GQ GR GS GT GU GW GY HK HM \
HN HR HT HU ID IE IL IM IN IO IQ IR IS IT JE JM JO JP KE KG KH KI KM KN KP KR KW KY KZ LA LB LC \
LI LK LR LS LT LU LV LY MA MC MD ME MF MG MH MK ML MM MN MO MP MQ MR MS MT MU MV MW MX MY MZ NA \
NC NE NF NG NI NL NO NP NR NU NZ OM PA PE PF PG PH PK PL PM PN PR PS PT PW PY QA RE RO RS RU RW \
SA SB SC SD SE SG SH SI SJ SK SL SM SN SO SR SS ST SV SX SY SZ TC TD TF TG TH TJ TK TL TM TN TO \
TR TT TV TW TZ UA UG UM US UY UZ VA VC VE VG VI VN VU WF WS YE YT ZA ZM ZW XK";

/// Whether `code` is a country a rule may name: two capitals on the list.
pub fn is_country(code: &str) -> bool {
    code.len() == 2
        && code.bytes().all(|b| b.is_ascii_uppercase())
        && CODES.split(' ').any(|c| c == code)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_list() {
        assert_eq!(CODES.split(' ').count(), 250);
        assert!(CODES.split(' ').all(|c| c.len() == 2));
        for good in ["GB", "IE", "US", "DE", "XK", "ZW", "AD"] {
            assert!(is_country(good), "{good}");
        }
        for bad in ["UK", "gb", "Gb", "EU", "G", "GBR", "", "  ", "G "] {
            assert!(!is_country(bad), "{bad}");
        }
    }
}
