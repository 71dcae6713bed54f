//! `qrtag edit KEY`: a link's whole document in the user's editor.
//!
//! The embedded store has no Fauxton, so this is how a person adds a note,
//! an expiry or any field of their own. The edited text is checked with the
//! same rules the stores apply ([`Link::from_document`]) before anything is
//! written, and saved only if nobody changed the link meanwhile (its
//! revision), so an edit never silently undoes another.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};

use crate::link::{Document, Link};
use crate::store::{LinkStore, StoreError};
use crate::values::link_key::LinkKey;

pub async fn run(store: &dyn LinkStore, key: &LinkKey) -> anyhow::Result<()> {
    let Some(stored) = store.get(key).await? else {
        return Err(StoreError::NotFound(key.to_string()).into());
    };
    // A tombstone stays one: removing `deleted_at` by hand would hand the
    // key out again.
    if let Some(deleted) = crate::links::deleted(key, &stored.doc) {
        return Err(deleted.into());
    }
    let original = serde_json::to_string_pretty(&serde_json::Value::Object(stored.doc.clone()))?;
    let file = EditFile::create(key, &original)?;
    let doc = loop {
        open_editor(file.path())?;
        let text = std::fs::read_to_string(file.path())
            .with_context(|| format!("reading {}", file.path().display()))?;
        if text.trim() == original.trim() {
            eprintln!("qrtag: {key} unchanged");
            return Ok(());
        }
        match check(&text) {
            Ok(doc) => break doc,
            Err(why) if ask_again(&why) => continue,
            Err(why) => bail!(
                "{key} not saved: {why} (your text is kept in {})",
                file.keep().display()
            ),
        }
    };
    let mut doc = doc;
    crate::link::stamp_changed(
        &mut doc,
        chrono::Utc::now(),
        &crate::cli::author::author(crate::link::Via::Edit),
    );
    match store.replace(key, &doc, &stored.rev).await {
        Ok(()) => {
            eprintln!("qrtag: {key} saved");
            Ok(())
        }
        Err(StoreError::Conflict(_)) => bail!(
            "{key} not saved: it was changed by someone else while you edited; \
             your text is kept in {}, run qrtag edit {key} again",
            file.keep().display()
        ),
        Err(e) => Err(e.into()),
    }
}

/// The edited text as a document the stores accept, or why not.
pub fn check(text: &str) -> Result<Document, String> {
    let value: serde_json::Value =
        serde_json::from_str(text).map_err(|e| format!("not valid JSON: {e}"))?;
    let serde_json::Value::Object(doc) = value else {
        return Err("the document must be a JSON object".into());
    };
    if let Some(field) = doc.keys().find(|k| k.starts_with('_')) {
        return Err(format!(
            "field {field:?}: names starting with _ belong to the store"
        ));
    }
    Link::from_document(&doc).map_err(|e| format!("not a valid link: {e}"))?;
    // Issue 33: the save stamps changed_via, but created_via is kept as
    // typed, and CouchDB's validation would refuse a name it does not know.
    crate::link::check_via(&doc).map_err(|e| format!("not a valid link: {e}"))?;
    // Issue 34: rules the server could not use would leave the link
    // answering with its url alone; named by their field. A country rule is
    // kept as stored (the server that serves it decides).
    crate::link::rules::Rules::from_stored(&doc).map_err(|e| format!("not a valid link: {e}"))?;
    Ok(doc)
}

/// On a terminal, offers to edit again; elsewhere there is nobody to ask.
fn ask_again(why: &str) -> bool {
    if !std::io::stdin().is_terminal() || !std::io::stderr().is_terminal() {
        return false;
    }
    eprint!("qrtag: {why}\nEdit again? [Y/n] ");
    let _ = std::io::stderr().flush();
    let mut answer = String::new();
    std::io::stdin().read_line(&mut answer).is_ok() && !answer.trim().eq_ignore_ascii_case("n")
}

/// $VISUAL, then $EDITOR, then vi, run through the shell so that an editor
/// with arguments (`code --wait`) works.
fn open_editor(path: &Path) -> anyhow::Result<()> {
    let editor = ["VISUAL", "EDITOR"]
        .iter()
        .find_map(|v| std::env::var(v).ok().filter(|e| !e.trim().is_empty()))
        .unwrap_or_else(|| "vi".to_owned());
    let status = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!("{editor} \"$1\""))
        .arg("sh")
        .arg(path)
        .status()
        .with_context(|| format!("starting the editor {editor:?}"))?;
    if !status.success() {
        bail!("the editor {editor:?} failed ({status}); nothing was saved");
    }
    Ok(())
}

/// The temporary file the document is edited in: private (0600), removed
/// when done unless [`keep`](Self::keep) says the user's text must survive.
struct EditFile {
    path: PathBuf,
    kept: bool,
}

impl EditFile {
    fn create(key: &LinkKey, text: &str) -> anyhow::Result<Self> {
        use std::os::unix::fs::OpenOptionsExt;
        let name = format!(
            "qrtag-edit-{}-{:08x}.json",
            key.as_str().replace('/', "_"),
            rand::random::<u32>()
        );
        let path = std::env::temp_dir().join(name);
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)
            .with_context(|| format!("creating {}", path.display()))?;
        file.write_all(text.as_bytes())
            .and_then(|()| file.write_all(b"\n"))
            .with_context(|| format!("writing {}", path.display()))?;
        Ok(Self { path, kept: false })
    }

    fn path(&self) -> &Path {
        &self.path
    }

    fn keep(mut self) -> PathBuf {
        self.kept = true;
        self.path.clone()
    }
}

impl Drop for EditFile {
    fn drop(&mut self) {
        if !self.kept {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_valid_link_object_is_accepted() {
        assert!(check(r#"{"url": "https://a.example/", "note": "bus stop", "expires": "2026-12-31T00:00:00Z"}"#).is_ok());
        assert!(
            check(r#"{"url": "/x", "rules": [{"url": "https://a.example/", "country": ["IE"]}]}"#)
                .is_ok()
        );
        for (text, says) in [
            ("{", "not valid JSON"),
            ("[1]", "JSON object"),
            (r#"{"url": "javascript:alert(1)"}"#, "bad \"url\""),
            (r#"{"url": "/x", "expires": "soon"}"#, "\"expires\""),
            (r#"{"url": "/x", "_rev": "1-a"}"#, "belong to the store"),
            (
                r#"{"url": "/x", "created_via": "web"}"#,
                "\"created_via\" must be one of",
            ),
            (
                r#"{"url": "/x", "rules": [{"url": "https://a.example/"}]}"#,
                "not a valid link: rules[0]: a rule needs at least one condition",
            ),
            (
                r#"{"url": "/x", "rules": [{"url": "https://a.example/", "hours": ["11:00", "15:00"]}]}"#,
                "rules[0].tz: ",
            ),
            (
                r#"{"url": "/x", "rules": [{"url": "https://b.example/", "hours": ["11:00", "11:00"], "tz": "UTC"}]}"#,
                "rules[0].hours: start and end are the same time",
            ),
        ] {
            let err = check(text).expect_err(text);
            assert!(err.contains(says), "{text}: {err}");
        }
    }
}
