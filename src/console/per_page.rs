//! How many rows a page of the links list shows (issue 33): a hundred
//! unless the address asks for one of a few other sizes (`?per=`).
//!
//! A hundred, because a person looking for a tag scrolls a page more
//! readily than they click through pages, and a hundred thumbnails load on
//! a two-core machine busy with other work (`tests/console_glance.rs`).
//! A fixed set rather than any number: each size is one whose page was
//! tried, and a page never holds more than [`super::list::PAGE_BYTES`]
//! of keys and destinations whatever its rows.

/// Rows a page shows when the address does not say.
pub const DEFAULT: usize = 100;

/// The sizes `?per=` takes.
pub const CHOICES: [usize; 4] = [25, 50, 100, 200];

/// One of [`CHOICES`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PerPage(usize);

impl Default for PerPage {
    fn default() -> Self {
        PerPage(DEFAULT)
    }
}

impl PerPage {
    /// Every size, for the form's choice.
    pub fn all() -> impl Iterator<Item = PerPage> {
        CHOICES.into_iter().map(PerPage)
    }

    /// A `per` parameter's value; anything but a listed size is refused
    /// with a one-line message naming them.
    pub fn parse(value: &str) -> Result<PerPage, String> {
        CHOICES
            .into_iter()
            .find(|n| n.to_string() == value)
            .map(PerPage)
            .ok_or_else(|| {
                let sizes: Vec<String> = CHOICES.iter().map(usize::to_string).collect();
                format!("bad per: `{value}`; one of {}", sizes.join(", "))
            })
    }

    pub fn rows(self) -> usize {
        self.0
    }

    pub fn is_default(self) -> bool {
        self.0 == DEFAULT
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn takes_the_listed_sizes_and_refuses_the_rest() {
        assert_eq!(PerPage::default().rows(), 100);
        for n in CHOICES {
            assert_eq!(PerPage::parse(&n.to_string()).map(PerPage::rows), Ok(n));
        }
        for bad in ["", "0", "7", "1000", "100 ", "+100", "0100", "-1", "all"] {
            let msg = PerPage::parse(bad).expect_err(bad);
            assert_eq!(msg, format!("bad per: `{bad}`; one of 25, 50, 100, 200"));
        }
    }
}
