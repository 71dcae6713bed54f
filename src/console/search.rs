//! The list's search box (issue 33): one text matched, ignoring case, as a
//! piece of a link's key, title, notes or destination, which is what a
//! person remembers of a tag ("bus stop", "spring").
//!
//! Pure. Most fields are ASCII, and for those the match is a byte search
//! for the text's first letter in either case, then a case-blind compare,
//! with no allocation; a field or a text with other characters is lowered
//! in full (Unicode's lower case), which costs an allocation per field.

/// The search text, lowered once.
#[derive(Debug, Clone)]
pub struct Needle {
    lower: String,
}

impl Needle {
    pub fn new(text: &str) -> Self {
        Self {
            lower: text.to_lowercase(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.lower.is_empty()
    }

    /// The text as [`Needle::found_in`] compares it, for the list's index,
    /// which keeps its texts lowered the same way.
    pub fn lowered(&self) -> &str {
        &self.lower
    }

    /// Whether the text is a piece of `hay`, ignoring case.
    pub fn found_in(&self, hay: &str) -> bool {
        if self.lower.len() > hay.len() && hay.is_ascii() {
            return false;
        }
        if self.lower.is_ascii() && hay.is_ascii() {
            return ascii_find(hay.as_bytes(), self.lower.as_bytes());
        }
        hay.to_lowercase().contains(&self.lower)
    }
}

/// Whether `needle` (ASCII, lower case) is in `hay` (ASCII), ignoring case.
fn ascii_find(hay: &[u8], needle: &[u8]) -> bool {
    let Some(&first) = needle.first() else {
        return true;
    };
    let Some(last_start) = hay.len().checked_sub(needle.len()) else {
        return false;
    };
    memchr::memchr2_iter(first, first.to_ascii_uppercase(), &hay[..=last_start])
        .any(|i| hay[i..i + needle.len()].eq_ignore_ascii_case(needle))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pieces_are_found_whatever_their_case() {
        let n = Needle::new("Bus Stop");
        assert!(n.found_in("Poster at the bus stop, Main St"));
        assert!(n.found_in("BUS STOP"));
        assert!(!n.found_in("bus-stop"));
        assert!(!n.found_in("bus"));
        assert!(Needle::new("").found_in("anything"));
        assert!(Needle::new("ÉTÉ").found_in("Affiche d'été 🎟"));
        assert!(Needle::new("🎟").found_in("Spring 🎟"));
        assert!(Needle::new("x").found_in("X"));
        assert!(!Needle::new("é").found_in("e"));
    }

    proptest::proptest! {
        #[test]
        fn the_same_as_lowering_both(hay in "[a-zA-Z é\u{c9}🎟]{0,30}", at in 0usize..30, len in 0usize..6) {
            let chars: Vec<char> = hay.chars().collect();
            let start = at.min(chars.len());
            let end = (start + len).min(chars.len());
            let piece: String = chars[start..end].iter().collect();
            for text in [piece.to_uppercase(), piece.clone(), "zq".to_owned()] {
                let want = hay.to_lowercase().contains(&text.to_lowercase());
                proptest::prop_assert_eq!(Needle::new(&text).found_in(&hay), want, "{:?} in {:?}", text, hay);
            }
        }
    }
}
