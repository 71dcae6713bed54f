//! Which link a logged request counts under.
//!
//! A log line names the path requested (`/docs/api/v1`), not the link that
//! answered it: a hierarchical key (`docs`) answers every path below it,
//! the rest appended to its destination. The line alone cannot say which
//! prefix was the key (`docs/api` may be a link too), and the access log's
//! nine fields are a promise to every tool that reads it, so the key is not
//! logged: it is found again the way the server found it, by the
//! resolver's longest-prefix match over the links. `qrtag stats` takes the
//! links from the store, the console's scan index from the snapshot the
//! server answers from. Pure: the links are a lookup function.

use std::collections::HashSet;

/// The key of the link that answers a request for `path` (a log line's
/// [`key`](crate::access_log::format::LogLine::key): the path without its
/// leading `/` and query): its longest prefix ending before a `/` (or the
/// whole path) for which `is_link` holds, as the resolver matches; `path`
/// itself when none is a link. A path without a `/` is its own answer
/// either way, so the commonest line, a plain scan, costs no lookup.
pub fn link_key(path: &str, is_link: impl Fn(&str) -> bool) -> &str {
    if !path.contains('/') {
        return path;
    }
    let mut candidate = path;
    loop {
        if is_link(candidate) {
            return candidate;
        }
        match candidate.rfind('/') {
            Some(slash) => candidate = &candidate[..slash],
            None => return path,
        }
    }
}

/// The keys of every link in a store (active or not: an inactive link's
/// 404s are its own), for `qrtag stats`.
#[derive(Debug, Clone, Default)]
pub struct LinkKeys {
    keys: HashSet<Box<str>, foldhash::fast::RandomState>,
}

impl LinkKeys {
    pub fn contains(&self, key: &str) -> bool {
        self.keys.contains(key)
    }

    /// [`link_key`] over these links.
    pub fn link_key<'p>(&self, path: &'p str) -> &'p str {
        link_key(path, |k| self.contains(k))
    }

    pub fn len(&self) -> usize {
        self.keys.len()
    }

    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// The keys, in no order (for suggestions).
    pub fn iter(&self) -> impl Iterator<Item = &str> {
        self.keys.iter().map(|k| &**k)
    }
}

impl<S: Into<Box<str>>> FromIterator<S> for LinkKeys {
    fn from_iter<I: IntoIterator<Item = S>>(iter: I) -> Self {
        LinkKeys {
            keys: iter.into_iter().map(Into::into).collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn keys(list: &[&str]) -> LinkKeys {
        list.iter().copied().collect()
    }

    #[test]
    fn the_longest_prefix_that_is_a_link_answers() {
        let links = keys(&["docs", "docs/api", "H83if"]);
        assert_eq!(links.link_key("docs/api/v1"), "docs/api");
        assert_eq!(links.link_key("docs/guide/intro"), "docs");
        assert_eq!(links.link_key("docs"), "docs");
        assert_eq!(links.link_key("H83if"), "H83if");
    }

    #[test]
    fn a_path_under_no_link_stays_itself() {
        let links = keys(&["docs"]);
        assert_eq!(links.link_key("doc/api"), "doc/api");
        assert_eq!(links.link_key("docsx/a"), "docsx/a");
        assert_eq!(links.link_key("wp-login.php"), "wp-login.php");
        assert_eq!(links.link_key(""), "");
    }

    proptest! {
        /// The answer is the path or a link that is a prefix of it at a
        /// segment boundary, and no longer such prefix is a link.
        #[test]
        fn the_answer_is_the_longest_link_prefix(
            path in "[ab/]{0,8}",
            links in proptest::collection::vec("[ab/]{1,6}", 0..6),
        ) {
            let links: LinkKeys = links.into_iter().collect();
            let got = links.link_key(&path);
            let prefixes: Vec<&str> = std::iter::once(path.as_str())
                .chain(path.match_indices('/').map(|(i, _)| &path[..i]))
                .filter(|p| links.contains(p))
                .collect();
            match prefixes.iter().max_by_key(|p| p.len()) {
                Some(longest) => prop_assert_eq!(got, *longest),
                None => prop_assert_eq!(got, path.as_str()),
            }
        }
    }
}
