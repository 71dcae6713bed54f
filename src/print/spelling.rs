//! How an option is named to the person who gave it: `qrtag print`'s flag
//! on the command line, the query parameter or form field over HTTP. Kept
//! apart so the layout's own refusals (below the request) can name an
//! option either way.

/// How an option is named to the person who gave it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Spelling {
    /// `--code-size`, on the command line.
    Flag,
    /// `code-size`, in a query string or a form.
    Param,
}

impl Spelling {
    /// The option `field` (its query name): `--code-size` or `code-size`.
    pub fn name(self, field: &str) -> String {
        match self {
            Spelling::Flag => format!("--{field}"),
            Spelling::Param => field.to_owned(),
        }
    }

    /// The option given `value`: `--caption key` or `caption=key`.
    pub fn with_value(self, field: &str, value: &str) -> String {
        match self {
            Spelling::Flag => format!("--{field} {value}"),
            Spelling::Param => format!("{field}={value}"),
        }
    }
}
