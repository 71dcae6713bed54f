//! `qrtag export` and `qrtag import`: the shell around [`crate::transfer`].
//!
//! Import reads and checks the whole input before the first write, so a bad
//! line, a duplicate key or (without `--update`) a key that exists means
//! nothing is written. Which keys exist is asked once for the whole file
//! (`LinkStore::existing_all`). Then it writes in the store's batches:
//! SQLite transactions of 10,000 rows, one at a time; CouchDB `_bulk_docs`
//! requests of 250, four under way at once (`LinkStore::writes_in_flight`),
//! in key order (CouchDB's cost per document a quarter of that in file
//! order), their answers taken in that order.
//! Export streams the store's consistent view to standard output or to a
//! file written under a temporary name and renamed when complete.

use std::fs::File;
use std::io::{self, BufReader, BufWriter, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::Context;
use clap::Args;
use futures_util::StreamExt;
use indicatif::{ProgressBar, ProgressStyle};
use tokio::signal::unix::{SignalKind, signal};

use super::Cli;
use crate::snapshot::TableBuilder;
use crate::store::couch::setup::{self, NewDatabase};
use crate::store::options::{CouchSettings, StoreSettings};
use crate::store::saver;
use crate::store::{self, BulkDoc, BulkOutcome, ExportPage, LinkStore, OnExisting};
use crate::transfer::check::{Check, Problems};
use crate::transfer::parse::{self, Format};
use crate::transfer::{LineError, Problem, Record, export};
use crate::values::link_key::LinkKey;
use crate::values::public_url::PublicUrl;
use crate::values::usage::UsageError;

#[derive(Debug, Clone, Args)]
pub struct ExportArgs {
    /// Write to FILE (atomically: complete or not at all) instead of standard
    /// output; `-` is standard output.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Export deleted links' tombstones too: a backup that restores them
    /// keeps those keys from being handed out again.
    #[arg(long)]
    pub deleted: bool,
    /// JSON lines (every field as stored), or CSV with a header: key, url,
    /// inactive, expires, notes, created_at, changed_at, deleted_at,
    /// fallback_url, title, created_via, changed_via, rules (a JSON array;
    /// the columns `import` reads; a field beyond them is left out, and
    /// said).
    #[arg(long, value_enum, default_value_t = ExportFormat::Json)]
    pub format: ExportFormat,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ExportFormat {
    Json,
    Csv,
}

#[derive(Debug, Clone, Args)]
pub struct ImportArgs {
    /// JSON lines as `qrtag export` writes them, or CSV with a header naming
    /// url (optional: key, inactive, expires, notes, created_at, changed_at,
    /// deleted_at, fallback_url, title, created_via, changed_via, rules); a key left out or empty is drawn; `-` reads standard
    /// input.
    #[arg(value_name = "FILE", required_unless_present = "source_url")]
    pub file: Option<PathBuf>,
    /// Overwrite links that exist (by default an existing key stops the import
    /// before anything is written).
    #[arg(long)]
    pub update: bool,
    /// Check the whole file and report what an import would do; write nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Import new keys even when they take over URLs of a shorter link the
    /// store has (docs/api/v1 while docs/api exists: /docs/api/v1 then leads
    /// to the imported link, no longer to docs/api with /v1 appended).
    #[arg(long)]
    pub take_over: bool,
    /// CouchDB: create --couchdb-db (it must not exist; needs a server
    /// admin account), locked to admins, write every link without running
    /// CouchDB's validation on each (several times faster), then prepare it
    /// as `qrtag setup` does. A failure deletes the database (and the API
    /// keys database made beside it) again.
    #[arg(long, conflicts_with = "update")]
    pub new_database: bool,
    /// With --new-database: the snapshot file `serve` reads (as its
    /// --snapshot-file; the same default). The import leaves the links
    /// there, so the first `serve` starts from them instead of reading
    /// every document from CouchDB.
    #[arg(
        help_heading = "Snapshot",
        long,
        env = "QRTAG_SNAPSHOT_FILE",
        value_name = "PATH"
    )]
    pub snapshot_file: Option<PathBuf>,
    /// With --new-database: leave no snapshot file.
    #[arg(
        help_heading = "Snapshot",
        long,
        env = "QRTAG_NO_SNAPSHOT_FILE",
        conflicts_with = "snapshot_file",
        value_parser = clap::builder::BoolishValueParser::new()
    )]
    pub no_snapshot_file: bool,
    #[command(flatten)]
    pub placement: super::setup::SetupArgs,
    /// Issue 37: `--from SOURCE`, another shortener's links and visits.
    #[command(flatten)]
    pub from: super::migrate::FromArgs,
}

pub async fn export(cli: &Cli, args: &ExportArgs) -> anyhow::Result<ExitCode> {
    let store = cli.open_store(store::Access::Read)?;
    let file = match args.output.as_deref() {
        Some(path) if path != Path::new("-") => {
            Some(AtomicFile::create(path).with_context(|| format!("creating {}", path.display()))?)
        }
        _ => None,
    };
    let out: Box<dyn Write> = match &file {
        Some(f) => Box::new(&f.file),
        None => Box::new(io::stdout().lock()),
    };
    let mut out = BufWriter::with_capacity(1 << 16, out);
    let bar = progress(None, "{spinner} {human_pos} links exported");
    let mut invalid = Unimportable::default();
    let mut left_out = LeftOut::default();
    let csv = args.format == ExportFormat::Csv;

    let (pages, mut received) = tokio::sync::mpsc::channel::<ExportPage>(4);
    let writing = async {
        let mut count = 0u64;
        let mut written = if csv {
            export::write_csv_header(&mut out)
        } else {
            Ok(())
        };
        while let Some(page) = received.recv().await {
            if written.is_err() {
                break;
            }
            let mut shown = 0u64;
            for (key, doc) in &page {
                if !args.deleted && crate::link::is_tombstone(doc) {
                    continue;
                }
                shown += 1;
                written = if csv {
                    export::write_csv(&mut out, key, doc).map(|left| {
                        if let Some(field) = left {
                            left_out.note(key, field);
                        }
                    })
                } else {
                    export::write(&mut out, key, doc)
                };
                if written.is_err() {
                    break;
                }
                if let Err(why) = parse::check_document(key, doc) {
                    invalid.note(key, &why);
                }
                count += 1;
            }
            bar.inc(shown);
            if written.is_err() {
                break;
            }
        }
        // Closing the channel stops the store's reading when writing failed.
        drop(received);
        written.and_then(|()| out.flush()).map(|()| count)
    };
    let (read, written) = tokio::join!(store.export(pages), writing);
    drop(out);
    bar.finish_and_clear();
    let target = || match &args.output {
        Some(p) if p != Path::new("-") => p.display().to_string(),
        _ => "standard output".into(),
    };
    // `qrtag export | head`: the reader has all it wanted; stop quietly,
    // as other Unix tools do.
    if file.is_none() && matches!(&written, Err(e) if e.kind() == io::ErrorKind::BrokenPipe) {
        return Ok(ExitCode::SUCCESS);
    }
    let count = written.with_context(|| format!("writing the export to {}", target()))?;
    read.context("reading the links to export")?;
    if let Some(f) = file {
        f.commit()
            .with_context(|| format!("writing the export to {}", target()))?;
    }
    invalid.warn();
    left_out.warn();
    if io::stderr().is_terminal() {
        eprintln!("exported {count} links to {}", target());
    }
    Ok(ExitCode::SUCCESS)
}

/// Documents exported as they are but that `import` would refuse: the
/// first few, and how many.
#[derive(Default)]
struct Unimportable {
    first: Vec<String>,
    total: u64,
}

impl Unimportable {
    fn note(&mut self, key: &str, why: &Problem) {
        self.total += 1;
        if self.first.len() < crate::transfer::check::SHOWN {
            self.first.push(format!("{key:?}: {why}"));
        }
    }

    fn warn(&self) {
        if self.total == 0 {
            return;
        }
        let mut err = io::stderr().lock();
        for w in &self.first {
            let _ = writeln!(err, "qrtag: warning: exported {w}");
        }
        let more = self.total - self.first.len() as u64;
        if more > 0 {
            let _ = writeln!(err, "qrtag: warning: ... and {more} more");
        }
        let _ = writeln!(
            err,
            "qrtag: warning: {} exported documents are not valid links; import refuses them until they are fixed",
            self.total
        );
    }
}

/// Documents with a field the CSV export has no column for: how many, and
/// the first, so that a CSV backup does not lose data unsaid.
#[derive(Default)]
struct LeftOut {
    first: Option<String>,
    total: u64,
}

impl LeftOut {
    fn note(&mut self, key: &str, field: &str) {
        self.total += 1;
        if self.first.is_none() {
            self.first = Some(format!("{key:?}: {field}"));
        }
    }

    fn warn(&self) {
        if let Some(first) = &self.first {
            let links = match self.total {
                1 => "1 link has".to_owned(),
                n => format!("{n} links have"),
            };
            eprintln!(
                "qrtag: warning: {links} fields CSV has no column for ({first}), left out; --format json keeps every field"
            );
        }
    }
}

pub async fn import(cli: &Cli, args: &ImportArgs) -> anyhow::Result<ExitCode> {
    // Issue 37: another shortener's export or API.
    if let Some(source) = args
        .from
        .from
        .filter(|s| *s != crate::migrate::sources::SourceName::Csv)
    {
        return super::migrate::import_from(cli, args, source).await;
    }
    let Some(file) = args.file.as_deref() else {
        return Err(UsageError("import reads a FILE (or --from with --source-url)".into()).into());
    };
    let name = if file == Path::new("-") {
        "stdin".to_owned()
    } else {
        file.display().to_string()
    };
    // Before the file is read: a database that exists, or an account that
    // may not create one, is said at once.
    let new_database = new_database_target(cli, args).await?;
    // And a database that is not there (a million lines take seconds).
    let store = store_first(cli, args, new_database.is_some()).await?;
    // Issue 33: the public URLs a fallback must not loop back through.
    let origins = match &store {
        Some(store) => super::public_url::known(cli, store.as_ref()).await?,
        None => cli.public_url.clone().into_iter().collect(),
    };
    let Some(Input {
        format,
        mut docs,
        problems: bad_lines,
        drawn,
    }) = read_input(file, &name, &origins)?
    else {
        println!("{name}: no links");
        return Ok(ExitCode::SUCCESS);
    };
    let total = docs.len() as u64;
    let on_existing = if args.update {
        OnExisting::Overwrite
    } else {
        OnExisting::Refuse
    };
    // Which keys exist: needed to refuse them before writing anything
    // (tombstones even with --update), and for the dry run's counts. The
    // file's own problems and the store's are found in the same run, so one
    // report names them all.
    let mut existing = match &store {
        Some(store) => existing(store.as_ref(), &docs).await?,
        None => vec![false; docs.len()],
    };
    if let Some(store) = &store {
        draw_again(store.as_ref(), &mut docs, &drawn, &mut existing).await?;
    }
    let exists = existing.iter().filter(|e| **e).count() as u64;
    let (refused, deleted) = match &store {
        Some(store) => refusals(store.as_ref(), &docs, &existing, args.update).await?,
        None => (Problems::default(), 0),
    };
    let taking_over = match &store {
        Some(store) if !args.take_over => take_overs(store.as_ref(), &docs, &existing).await?,
        _ => Problems::default(),
    };
    let refusal = Refused {
        bad: bad_lines.total,
        exist: refused.total - deleted,
        deleted,
        take_over: taking_over.total,
    };
    let problems = bad_lines.merge(refused).merge(taking_over);
    if !args.dry_run && !problems.is_empty() {
        report(&name, &problems);
        anyhow::bail!("{}", refusal_line(&name, &refusal, false));
    }
    if args.dry_run {
        report(&name, &problems);
        let counts = if args.update {
            format!("{} to create, {exists} to update", total - exists)
        } else if exists > 0 {
            format!(
                "{} to create, {exists} refused because they exist (--update overwrites them)",
                total - exists
            )
        } else {
            format!("{total} to create")
        };
        println!(
            "dry run: {name} ({}): {total} links, {counts}; nothing written",
            format_name(format)
        );
        if !problems.is_empty() {
            anyhow::bail!("{}", refusal_line(&name, &refusal, true));
        }
        return Ok(ExitCode::SUCCESS);
    }
    // Consumed as they are made: one copy of the URLs at a time.
    let drawn_lines: Vec<String> = drawn
        .into_iter()
        .map(|(i, url)| format!("{}\t{url}", docs[i].1.key()))
        .collect();
    // In key order: each batch then lands in a few neighbouring leaves of
    // the store's ID tree (CouchDB's, SQLite's), not in as many leaves as
    // it has documents. Sorted in place: no second copy of the file.
    docs.sort_unstable_by(|(_, a), (_, b)| a.key().as_str().cmp(b.key().as_str()));
    if let Some(couch) = new_database {
        let done = import_new(cli, args, &couch, docs, &name, format).await?;
        print_drawn(&drawn_lines);
        return Ok(done);
    }
    let Some(store) = store else {
        anyhow::bail!("internal error: no store to import into");
    };
    let batch = store.batch_size();
    let written = match write_all(
        store.as_ref(),
        docs,
        on_existing,
        batch,
        &AtomicBool::new(false),
        None,
    )
    .await
    {
        Ok(written) => written,
        Err(Stopped { written, error }) => {
            return Err(anyhow::Error::new(error).context(format!(
                "importing {name}: {written} of {total} links were written before this failed (import again with --update to finish)"
            )));
        }
    };
    print_drawn(&drawn_lines);
    written.report(&name, format, total)
}

/// The store to import into, opened (and a CouchDB database asked for)
/// before the file is read, so that a database that is not there is said
/// at once. `None` where nothing is to be asked: a database
/// `--new-database` will make, or a dry run beside no SQLite file (a dry
/// run creates none).
pub(super) async fn store_first(
    cli: &Cli,
    args: &ImportArgs,
    new_database: bool,
) -> anyhow::Result<Option<std::sync::Arc<dyn LinkStore>>> {
    // Issue 36: `--domain`'s store.
    match cli.store_settings()? {
        _ if new_database => Ok(None),
        StoreSettings::Sqlite { path } if args.dry_run && !path.exists() => Ok(None),
        StoreSettings::Sqlite { .. } => Ok(Some(cli.open_store(store::Access::Write)?)),
        StoreSettings::CouchDb(couch) => {
            let store = cli.open_store(store::Access::Write)?;
            if !setup::database_exists(&couch)
                .await
                .with_context(|| format!("asking {} for database {}", couch.url, couch.db))?
            {
                anyhow::bail!(
                    "the database {} does not exist on {}; create it with `qrtag setup`, \
                     or import into a new one with --new-database",
                    couch.db,
                    couch.url
                );
            }
            Ok(Some(store))
        }
    }
}

/// The keys drawn for a file's rows without one, `KEY<TAB>URL` a line on
/// standard output, so a person knows which tag is which.
fn print_drawn(lines: &[String]) {
    let mut out = io::stdout().lock();
    for line in lines {
        let _ = writeln!(out, "{line}");
    }
}

/// Draws again every drawn key the store already holds (never one of the
/// file's keys), until none is taken: a drawn key never overwrites or
/// collides with a link. Rare (a 5-character key space of 62⁵), so the
/// file's keys are gathered only when one is taken.
async fn draw_again(
    store: &dyn LinkStore,
    docs: &mut [(u64, BulkDoc)],
    drawn: &[(usize, String)],
    existing: &mut [bool],
) -> anyhow::Result<()> {
    let mut taken: Vec<usize> = drawn
        .iter()
        .map(|(i, _)| *i)
        .filter(|&i| existing[i])
        .collect();
    if taken.is_empty() {
        return Ok(());
    }
    let mut in_file: std::collections::HashSet<LinkKey> =
        docs.iter().map(|(_, d)| d.key().clone()).collect();
    while !taken.is_empty() {
        let mut keys = Vec::with_capacity(taken.len());
        for &i in &taken {
            let key = loop {
                let key: LinkKey = crate::values::short_id::ShortId::random().into();
                if in_file.insert(key.clone()) {
                    break key;
                }
            };
            docs[i].1.set_key(key.clone());
            keys.push(key);
        }
        let found = store
            .existing_all(&keys)
            .await
            .context("looking up which keys exist")?;
        for (&i, &f) in taken.iter().zip(&found) {
            existing[i] = f;
        }
        taken.retain(|&i| existing[i]);
    }
    Ok(())
}

/// With `--new-database`: the CouchDB database to create, checked to be
/// creatable (a server admin's account, no database of that name) before
/// the file is read. `None` without it.
async fn new_database_target(
    cli: &Cli,
    args: &ImportArgs,
) -> anyhow::Result<Option<CouchSettings>> {
    if !args.new_database {
        if args.placement.replicas.is_some() || args.placement.shards.is_some() {
            return Err(UsageError(
                "--replicas and --shards apply to the database --new-database creates".into(),
            )
            .into());
        }
        return Ok(None);
    }
    let StoreSettings::CouchDb(couch) = cli.store.settings() else {
        return Err(UsageError(
            "--new-database creates a CouchDB database: give --couchdb-url".into(),
        )
        .into());
    };
    let admin = setup::is_server_admin(&couch)
        .await
        .with_context(|| format!("asking {} who the account is", couch.url))?;
    if !admin {
        let who = couch
            .credentials
            .as_ref()
            .map_or_else(|| "an anonymous request".to_owned(), |c| c.user.clone());
        anyhow::bail!(
            "--new-database creates a database, which needs a CouchDB server admin account \
             (--couchdb-user): {who} is not one on {}",
            couch.url
        );
    }
    if setup::database_exists(&couch)
        .await
        .with_context(|| format!("asking {} for database {}", couch.url, couch.db))?
    {
        return Err(exists(&couch).into());
    }
    Ok(Some(couch))
}

/// The refusal of `--new-database` for a database that is there.
fn exists(couch: &CouchSettings) -> UsageError {
    UsageError(format!(
        "database {} exists on {}; --new-database imports only into a database it creates \
         (without it the import adds to this one)",
        couch.db, couch.url
    ))
}

/// `import --new-database` once the file is checked: creates the database
/// locked to server admins, writes every document while no validation
/// function is there (the file's every line has been checked as the
/// validation would, and nobody else can reach the database), then runs
/// `setup`'s steps. Any failure, or an interrupt, deletes the database
/// again: all or nothing.
async fn import_new(
    cli: &Cli,
    args: &ImportArgs,
    couch: &CouchSettings,
    docs: Vec<(u64, BulkDoc)>,
    name: &str,
    format: Format,
) -> anyhow::Result<ExitCode> {
    let total = docs.len() as u64;
    // Listened for before the database exists, so that no interrupt can
    // leave it behind half-filled.
    let mut interrupt = signal(SignalKind::interrupt()).context("listening for SIGINT")?;
    let mut terminate = signal(SignalKind::terminate()).context("listening for SIGTERM")?;
    let Some(database) = NewDatabase::create(couch, args.placement.requested())
        .await
        .with_context(|| format!("creating database {} on {}", couch.db, couch.url))?
    else {
        // Made by someone else since it was looked for.
        return Err(exists(couch).into());
    };
    let db = database.name().to_string();
    let store = cli.open_store(store::Access::Write)?;
    // Set on a signal: no further batch is sent, and those under way are
    // answered before the database is deleted. A request dropped
    // mid-flight may still be written after the delete, and on PouchDB
    // Server such a write makes the database again.
    let stop = AtomicBool::new(false);
    let snapshot_file = cli.snapshot_file(args.snapshot_file.as_deref(), args.no_snapshot_file);
    let table = snapshot_file.as_ref().map(|_| TableBuilder::default());
    let work = async {
        let mut table = table;
        let written = write_all(
            store.as_ref(),
            docs,
            OnExisting::Refuse,
            NewDatabase::BATCH,
            &stop,
            table.as_mut(),
        )
        .await
        .map_err(|Stopped { written, error }| {
            anyhow::Error::new(error).context(format!(
                "importing {name}: {written} of {total} links were written before this failed"
            ))
        })?;
        if stop.load(Ordering::Relaxed) {
            anyhow::bail!("stopped");
        }
        if !written.failed.is_empty() {
            report(name, &written.failed);
            anyhow::bail!(
                "{} links of {name} were not written (see above)",
                written.failed.total
            );
        }
        // Nobody else writes to the database yet: this sequence is that of
        // exactly the documents written, the one the snapshot file is at.
        let seq = match &snapshot_file {
            Some(_) => database.update_seq().await.ok(),
            None => None,
        };
        let bar = progress(None, "{spinner} installing the validation and the roles");
        let ready = database
            .open()
            .await
            .with_context(|| format!("setting up {db} after the import"));
        bar.finish_and_clear();
        let ready = ready?;
        database.start_view_build().await;
        Ok((written, ready, table.zip(seq)))
    };
    tokio::pin!(work);
    let signalled = tokio::select! {
        done = &mut work => Ok(done),
        _ = interrupt.recv() => Err("interrupted"),
        _ = terminate.recv() => Err("terminated"),
    };
    let outcome = match signalled {
        Ok(done) => done,
        Err(signal) => {
            stop.store(true, Ordering::Relaxed);
            // The batches under way are bounded (`writes_in_flight`), each
            // by the HTTP timeout; a second signal does not wait for them.
            tokio::select! {
                _ = &mut work => {}
                _ = interrupt.recv() => {}
                _ = terminate.recv() => {}
            }
            Err(anyhow::anyhow!(signal))
        }
    };
    let (written, report, snapshot) = match outcome {
        Ok(done) => done,
        Err(e) => {
            let removed = match database.remove().await {
                Ok(()) => format!("database {db} deleted again; nothing was imported"),
                Err(why) => format!(
                    "deleting database {db} failed too ({why}): delete it before importing again"
                ),
            };
            return Err(e.context(removed));
        }
    };
    written.report(name, format, total)?;
    super::setup::print_report(couch, &report, &args.placement)?;
    if let Some(path) = &snapshot_file {
        leave_snapshot(store.as_ref(), path, snapshot).await;
    }
    Ok(ExitCode::SUCCESS)
}

/// Writes the imported links as the snapshot file `serve` starts from,
/// under a fresh marker of the new database's state (checked by the
/// follower as for any file): the first start serves them at once instead
/// of reading every document. A failure costs only that: a warning.
async fn leave_snapshot(
    store: &dyn LinkStore,
    path: &Path,
    snapshot: Option<(TableBuilder, serde_json::Value)>,
) {
    let shown = path.display();
    let Some((table, seq)) = snapshot else {
        eprintln!(
            "qrtag: warning: no snapshot file written (the database's sequence could not be read); the first `qrtag serve` reads every link from CouchDB"
        );
        return;
    };
    let table = std::sync::Arc::new(table.build(Some(seq)));
    let links = table.len();
    let identity = store.snapshot_identity();
    match saver::save_marked(path, store, &identity, None, table).await {
        Ok(_) => println!(
            "snapshot file {shown}: {links} links; `qrtag serve` with these settings starts from it"
        ),
        Err(why) => eprintln!(
            "qrtag: warning: snapshot file {shown} not written ({why}); the first `qrtag serve` reads every link from CouchDB"
        ),
    }
}

/// What the writes did: counts, and the documents the store refused.
pub(super) struct Written {
    pub(super) created: u64,
    pub(super) updated: u64,
    pub(super) failed: Problems,
}

/// A write that failed part-way: how many were written before it.
pub(super) struct Stopped {
    pub(super) written: u64,
    pub(super) error: store::StoreError,
}

impl Written {
    /// The refusals (`FILE:LINE: ...`) on standard error and the count
    /// line on standard output; an error when some were refused.
    fn report(&self, name: &str, format: Format, total: u64) -> anyhow::Result<ExitCode> {
        let Self {
            created,
            updated,
            failed,
        } = self;
        report(name, failed);
        println!(
            "{name} ({}): {} of {total} links imported, {created} created, {updated} updated",
            format_name(format),
            created + updated
        );
        if !failed.is_empty() {
            anyhow::bail!(
                "{} links of {name} were not written (see above)",
                failed.total
            );
        }
        Ok(ExitCode::SUCCESS)
    }
}

/// Writes the checked documents (in key order) in the store's batches,
/// several under way (as many as the store takes at once), their answers
/// taken in that order,
/// with a progress bar in links a second. A failed batch, or `stop` set,
/// stops the sending: those already under way are awaited and counted, so
/// that when this returns the store receives nothing more from it.
pub(super) async fn write_all(
    store: &dyn LinkStore,
    docs: Vec<(u64, BulkDoc)>,
    on_existing: OnExisting,
    batch: usize,
    stop: &AtomicBool,
    mut table: Option<&mut TableBuilder>,
) -> Result<Written, Stopped> {
    let total = docs.len() as u64;
    let bar = progress(
        Some(total),
        "{bar:40} {human_pos}/{human_len} links written ({per_sec}), ETA {eta}",
    );
    let (mut created, mut updated) = (0u64, 0u64);
    let mut failed = Problems::default();
    let size = batch.max(1);
    let mut docs = docs.into_iter().peekable();
    let mut first_error = None;
    let batches = std::iter::from_fn(|| {
        if stop.load(Ordering::Relaxed) {
            return None;
        }
        docs.peek()?;
        let (lines, batch): (Vec<u64>, Vec<BulkDoc>) = docs.by_ref().take(size).unzip();
        // Judged as a full load of the store judges them, while each
        // document is in hand: the import's memory holds the documents or
        // the table, not both.
        if let Some(table) = table.as_deref_mut() {
            for doc in &batch {
                table.push_json(doc.key().as_str(), doc.json());
            }
        }
        Some((lines, batch))
    });
    let mut written = futures_util::stream::iter(batches)
        .map(|(lines, batch)| async move {
            let keys: Vec<LinkKey> = batch.iter().map(|d| d.key().clone()).collect();
            (lines, keys, store.write_batch(batch, on_existing).await)
        })
        .buffered(store.writes_in_flight().max(1));
    while let Some((lines, keys, outcomes)) = written.next().await {
        let outcomes = match outcomes {
            Ok(outcomes) => outcomes,
            Err(error) => {
                stop.store(true, Ordering::Relaxed);
                first_error.get_or_insert(error);
                continue;
            }
        };
        for ((line, key), outcome) in lines.into_iter().zip(keys).zip(outcomes) {
            match outcome {
                BulkOutcome::Created => created += 1,
                BulkOutcome::Updated => updated += 1,
                BulkOutcome::Exists => failed.push(LineError::new(line, Problem::Exists(key))),
                BulkOutcome::Refused(reason) => {
                    failed.push(LineError::new(line, Problem::NotWritten { key, reason }))
                }
            }
        }
        bar.set_position(created + updated + failed.total);
    }
    bar.finish_and_clear();
    // Written in key order: the first refused in that order are kept, and
    // said in line order.
    failed.first.sort_by_key(|e| e.line);
    if let Some(error) = first_error {
        return Err(Stopped {
            written: created + updated,
            error,
        });
    }
    Ok(Written {
        created,
        updated,
        failed,
    })
}

/// A checked input file: every valid document with the line it came from,
/// and the file's problems (bad lines, duplicate keys).
struct Input {
    format: Format,
    docs: Vec<(u64, BulkDoc)>,
    problems: Problems,
    /// The records whose keys were drawn: their place in `docs`, and URL.
    drawn: Vec<(usize, String)>,
}

/// Reads and checks the whole input. `None` for input without a record.
/// Documents without a `created_at` get one, and a `changed_at`: the
/// import creates them; a document with its own times (an export) is
/// written as it is.
fn read_input(file: &Path, name: &str, origins: &[PublicUrl]) -> anyhow::Result<Option<Input>> {
    let (input, size): (Box<dyn io::Read>, Option<u64>) = if file == Path::new("-") {
        (Box::new(io::stdin().lock()), None)
    } else {
        let f = File::open(file).with_context(|| format!("reading {name}"))?;
        let size = f.metadata().ok().map(|m| m.len());
        (Box::new(f), size)
    };
    let bar = progress(
        size,
        match size {
            Some(_) => "{bar:40} {bytes}/{total_bytes} read and checked ({bytes_per_sec})",
            None => "{spinner} {bytes} read and checked ({bytes_per_sec})",
        },
    );
    let input = BufReader::with_capacity(1 << 16, bar.wrap_read(input));
    let mut check = Check::new();
    let mut docs = Vec::new();
    let mut drawn = Vec::new();
    let now = chrono::Utc::now();
    // Issue 35: an import is a command's write; its history names who ran
    // it where the import stamps the document (one that brings its own
    // times is written as it is, byte for byte).
    let import_author = crate::cli::author::author(crate::link::Via::Import);
    // The valid records are kept even after a bad line: their keys are
    // looked up in the store, so every problem is said in one run.
    let format = parse::read(input, |item| {
        let item = item
            .and_then(|r| refuse_looping_fallback(r, origins))
            .and_then(|r| refuse_looping_rules(r, origins));
        if let Some(mut r) = check.take(item) {
            if r.doc.get("created_at").is_none() {
                crate::link::stamp_created(&mut r.doc, now, &import_author);
            }
            if r.drawn {
                let url = r
                    .doc
                    .get("url")
                    .and_then(|u| u.as_str())
                    .unwrap_or_default();
                drawn.push((docs.len(), url.to_owned()));
            }
            docs.push((r.line, BulkDoc::new(r.key, r.doc)));
        }
    })
    .with_context(|| format!("reading {name}"))?;
    bar.finish_and_clear();
    let problems = check.finish().err().unwrap_or_default();
    Ok(format.map(|format| Input {
        format,
        docs,
        problems,
        drawn,
    }))
}

/// The last line of an import refused (or a dry run that would be): what
/// was wrong, counted by kind.
/// How many records of a file are refused, by reason.
struct Refused {
    bad: u64,
    exist: u64,
    deleted: u64,
    take_over: u64,
}

fn refusal_line(name: &str, counts: &Refused, dry_run: bool) -> String {
    let Refused {
        bad,
        exist: exists,
        deleted,
        take_over,
    } = *counts;
    let outcome = if dry_run {
        ": an import would write nothing"
    } else {
        "; nothing was imported"
    };
    let mut parts = Vec::new();
    if bad > 0 {
        parts.push(format!("{bad} bad lines"));
    }
    if exists > 0 && parts.is_empty() && deleted == 0 && take_over == 0 {
        let hint = if dry_run {
            ""
        } else {
            " (--update overwrites them)"
        };
        return format!("{exists} keys of {name} exist already{outcome}{hint}");
    }
    if exists > 0 {
        parts.push(format!("{exists} keys that exist already"));
    }
    if deleted > 0 {
        parts.push(format!("{deleted} deleted keys"));
    }
    if take_over > 0 {
        parts.push(format!(
            "{take_over} keys that would take over URLs of existing links (--take-over imports them)"
        ));
    }
    let hint = if exists > 0 && !dry_run {
        " (--update overwrites existing keys)"
    } else {
        ""
    };
    format!("{} in {name}{outcome}{hint}", parts.join(", "))
}

/// The keys the import may not write: every existing key without
/// `--update`, and with it a deleted link's tombstone (unless the file
/// brings the tombstone itself, as an export does). Tombstones are told
/// apart by reading the existing documents, all of them with `--update`
/// and, without it, only as many as the report shows.
async fn refusals(
    store: &dyn LinkStore,
    docs: &[(u64, BulkDoc)],
    existing: &[bool],
    update: bool,
) -> anyhow::Result<(Problems, u64)> {
    let mut refused = Problems::default();
    let mut deleted = 0;
    let exist = || {
        docs.iter()
            .zip(existing)
            .filter(|(_, e)| **e)
            .map(|(d, _)| d)
    };
    let read_max = if update {
        usize::MAX
    } else {
        crate::transfer::check::SHOWN
    };
    let to_read: Vec<LinkKey> = exist()
        .take(read_max)
        .map(|(_, d)| d.key().clone())
        .collect();
    let mut stored_docs = store
        .get_all(&to_read)
        .await
        .context("reading the links that exist")?
        .into_iter();
    for (line, doc) in exist() {
        let key = doc.key();
        let Some(stored) = stored_docs.next() else {
            refused.push(LineError::new(*line, Problem::Exists(key.clone())));
            continue;
        };
        let tombstone = stored
            .as_ref()
            .filter(|s| crate::link::is_tombstone(&s.doc))
            .map(|s| crate::link::deleted_at(&s.doc));
        let problem = match tombstone {
            Some(_) if update && crate::link::is_tombstone(&doc.document()) => continue,
            Some(on) => {
                deleted += 1;
                Problem::Deleted {
                    key: key.clone(),
                    on,
                }
            }
            None if update => continue,
            None => Problem::Exists(key.clone()),
        };
        refused.push(LineError::new(*line, problem));
    }
    Ok((refused, deleted))
}

/// The new keys of the file that would take over URLs of a link the store
/// has now (keys the file brings itself do not count: an export of
/// `docs/api` and `docs/api/v1` restores as it was), as problems: the
/// first few and the count ([`taking_over`] has them all).
pub(super) async fn take_overs(
    store: &dyn LinkStore,
    docs: &[(u64, BulkDoc)],
    existing: &[bool],
) -> anyhow::Result<Problems> {
    let mut problems = Problems::default();
    for (line, key, parent) in taking_over(store, docs, existing).await? {
        problems.push(LineError::new(line, Problem::TakesOver { key, parent }));
    }
    Ok(problems)
}

/// Every new key that would take over URLs of a stored link, with its
/// line and that link, none left out: `import --from` leaves each of them
/// out and names it in its report, however many there are (issue 37).
/// Every parent of every new key is looked up once, a batch at a time.
pub(super) async fn taking_over(
    store: &dyn LinkStore,
    docs: &[(u64, BulkDoc)],
    existing: &[bool],
) -> anyhow::Result<Vec<(u64, LinkKey, LinkKey)>> {
    let new = || {
        docs.iter()
            .zip(existing)
            .filter(|(_, e)| !**e)
            .map(|((line, doc), _)| (*line, doc.key()))
    };
    let mut parents: Vec<LinkKey> = new().flat_map(|(_, k)| k.parents()).collect();
    parents.sort_unstable();
    parents.dedup();
    let found = store
        .existing_all(&parents)
        .await
        .context("looking up which keys exist")?;
    let stored: Vec<LinkKey> = parents
        .into_iter()
        .zip(found)
        .filter(|(_, e)| *e)
        .map(|(k, _)| k)
        .collect();
    let mut taking = Vec::new();
    if stored.is_empty() {
        return Ok(taking);
    }
    for (line, key) in new() {
        let mine: Vec<LinkKey> = key
            .parents()
            .filter(|p| stored.binary_search(p).is_ok())
            .collect();
        if let Some(parent) = crate::values::link_key::taken_over(key, &mine) {
            taking.push((line, key.clone(), parent.clone()));
        }
    }
    Ok(taking)
}

/// Asks the store which keys of the file exist, all at once (the store
/// picks how: see `LinkStore::existing_all`).
async fn existing(store: &dyn LinkStore, docs: &[(u64, BulkDoc)]) -> anyhow::Result<Vec<bool>> {
    let bar = progress(None, "{spinner} looking up which keys exist ({elapsed})");
    let keys: Vec<LinkKey> = docs.iter().map(|(_, d)| d.key().clone()).collect();
    let found = store
        .existing_all(&keys)
        .await
        .context("looking up which keys exist")?;
    bar.finish_and_clear();
    Ok(found)
}

/// Each problem as `FILE:LINE: message`, the first few and a count of the rest.
fn report(name: &str, problems: &Problems) {
    let mut err = io::stderr().lock();
    for e in &problems.first {
        let _ = writeln!(err, "{name}:{}: {}", e.line, e.problem);
    }
    if problems.not_shown() > 0 {
        let _ = writeln!(
            err,
            "{name}: ... and {} more like these",
            problems.not_shown()
        );
    }
}

fn format_name(format: Format) -> &'static str {
    match format {
        Format::JsonLines => "JSON lines",
        Format::Csv => "CSV",
    }
}

/// A progress bar on standard error when it is a terminal; hidden otherwise,
/// so pipes and logs get no control characters. `None`: length unknown.
pub(super) fn progress(len: Option<u64>, template: &str) -> ProgressBar {
    if !io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = match len {
        Some(n) => ProgressBar::new(n),
        None => ProgressBar::new_spinner(),
    };
    if let Ok(style) = ProgressStyle::with_template(template) {
        bar.set_style(style);
    }
    bar.enable_steady_tick(Duration::from_millis(200));
    bar
}

/// A file written under a temporary name beside its destination and renamed
/// over it only when complete, so readers see the old file or the new one,
/// never a part. Removed if dropped before [`commit`](Self::commit).
pub(super) struct AtomicFile {
    pub(super) file: File,
    temp: PathBuf,
    dest: PathBuf,
    committed: bool,
}

impl AtomicFile {
    pub(super) fn create(dest: &Path) -> io::Result<Self> {
        let name = dest
            .file_name()
            .ok_or_else(|| io::Error::other("not a file name"))?;
        let dir = match dest.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("."),
        };
        let mut temp_name = std::ffi::OsString::from(".");
        temp_name.push(name);
        temp_name.push(format!(".{}.tmp", std::process::id()));
        let temp = dir.join(temp_name);
        let file = File::options().write(true).create_new(true).open(&temp)?;
        Ok(Self {
            file,
            temp,
            dest: dest.to_owned(),
            committed: false,
        })
    }

    pub(super) fn commit(mut self) -> io::Result<()> {
        self.file.sync_all()?;
        std::fs::rename(&self.temp, &self.dest)?;
        self.committed = true;
        // The rename itself reaches the disk with the directory; where a
        // directory cannot be opened or synced, the file is still complete.
        if let Some(dir) = self.dest.parent().filter(|p| !p.as_os_str().is_empty()) {
            let _ = File::open(dir).and_then(|d| d.sync_all());
        }
        Ok(())
    }
}

impl Drop for AtomicFile {
    fn drop(&mut self) {
        if !self.committed {
            let _ = std::fs::remove_file(&self.temp);
        }
    }
}

/// Issue 33: a record whose `fallback_url` is its own short URL on one of
/// `origins` would loop while the link is dead: refused by the line, as
/// `set --fallback` refuses it.
fn refuse_looping_fallback(r: Record, origins: &[PublicUrl]) -> Result<Record, LineError> {
    let Ok(Some(fallback)) = crate::link::fallback_url(&r.doc) else {
        return Ok(r);
    };
    for public_url in origins {
        if let Err(e) =
            crate::link::fallback_loop::check(&fallback, r.key.as_str(), public_url.origin())
        {
            return Err(LineError::new(r.line, e.into()));
        }
    }
    Ok(r)
}

/// Issue 34: a record with a rule whose destination is its own short URL
/// on one of `origins`: refused by the line, naming the rule.
fn refuse_looping_rules(r: Record, origins: &[PublicUrl]) -> Result<Record, LineError> {
    let Ok(rules) = crate::link::rules::Rules::from_stored(&r.doc) else {
        return Ok(r);
    };
    for public_url in origins {
        if let Err(e) = rules.check_loops(r.key.as_str(), public_url.origin()) {
            return Err(LineError::new(r.line, e.into()));
        }
    }
    Ok(r)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A drawn key the store holds is drawn again, to one it does not hold
    /// and the file does not name; a given key is left for the refusal.
    #[tokio::test]
    async fn a_drawn_key_the_store_holds_is_drawn_again() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store =
            crate::store::sqlite::SqliteStore::open(&dir.path().join("t.db")).expect("open");
        let url =
            crate::values::destination::Destination::parse("https://example.com/").expect("url");
        let taken = LinkKey::parse("abcde").expect("key");
        crate::links::create(
            &store,
            &crate::link::Author::cli(crate::link::Via::Cli, "test", "host"),
            &url,
            Some(&taken),
            false,
        )
        .await
        .expect("create");
        let doc = || crate::link::Link::new_document(&url, false);
        let mut docs = vec![
            (2, BulkDoc::new(taken.clone(), doc())),
            (3, BulkDoc::new(taken.clone(), doc())),
        ];
        let mut existing = vec![true, true];
        let drawn = [(1, "https://example.com/".to_owned())];
        draw_again(&store, &mut docs, &drawn, &mut existing)
            .await
            .expect("drawn again");
        assert_eq!(existing, [true, false]);
        assert_eq!(docs[0].1.key(), &taken);
        assert_ne!(docs[1].1.key(), &taken);
        let found = store
            .existing_all(&[docs[1].1.key().clone()])
            .await
            .expect("ask");
        assert_eq!(found, [false]);
    }

    #[test]
    fn an_atomic_file_appears_only_when_committed() {
        let dir = tempfile::tempdir().expect("tempdir");
        let dest = dir.path().join("links.jsonl");
        std::fs::write(&dest, "old\n").expect("write");
        let f = AtomicFile::create(&dest).expect("create");
        (&f.file).write_all(b"new\n").expect("write");
        assert_eq!(std::fs::read_to_string(&dest).expect("read"), "old\n");
        f.commit().expect("commit");
        assert_eq!(std::fs::read_to_string(&dest).expect("read"), "new\n");
        let f = AtomicFile::create(&dest).expect("create");
        (&f.file).write_all(b"half").expect("write");
        drop(f);
        assert_eq!(std::fs::read_to_string(&dest).expect("read"), "new\n");
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .expect("list")
            .map(|e| e.map(|e| e.file_name()))
            .collect::<Result<_, _>>()
            .expect("names");
        assert_eq!(names, ["links.jsonl"], "no temporary file left behind");
    }
}
