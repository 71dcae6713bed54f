//! `qrtag import --from SOURCE`: another shortener's links (and visits)
//! read once through [`crate::migrate::sources`], planned
//! ([`crate::migrate::plan`]), compared with the stores of the domains
//! they go to, reported ([`crate::migrate::report`]) and written through
//! the same batched writes as `qrtag import`.
//!
//! Unlike a qrtag file, a source may hold links that can never come over (a
//! code no key can hold): those are refused in the report, and the others
//! are written, so one odd keyword does not keep a thousand printed tags
//! from working. The exit status says whether everything came over.

use std::collections::hash_map::Entry;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;

use anyhow::Context;
use chrono::{DateTime, Utc};
use clap::Args;

use super::Cli;
use super::transfer::{self, AtomicFile, ImportArgs, Stopped};
use crate::migrate::plan::{self, DomainMapping, Planned, PlannedLink, Seen, Target, Targets};
use crate::migrate::report::{Collision, Report, shown_key};
use crate::migrate::source::{Sink, SourceError, SourceLink, SourceVisit};
use crate::migrate::sources::{self, SourceArgs, SourceName};
use crate::migrate::visits::{self, Imported, Spool, visit_id};
use crate::store::{self, BulkDoc, LinkStore, OnExisting};
use crate::values::link_key::LinkKey;
use crate::values::secret::Secret;
use crate::values::usage::UsageError;

/// `import`'s options for another shortener (issue 37).
#[derive(Debug, Clone, Args)]
pub struct FromArgs {
    /// Import from another shortener: csv (qrtag's own, as without
    /// --from), yourls-sql (a mysqldump of YOURLS's tables), yourls-csv,
    /// yourls-api, shlink, shlink-csv, kutt, bitly, bitly-api, dub, chhoto.
    /// Codes are kept as keys exactly; what cannot come over is reported.
    #[arg(
        help_heading = "Import from another shortener",
        long,
        value_name = "SOURCE",
        value_parser = parse_source
    )]
    pub from: Option<SourceName>,
    /// The source's base URL, for sources read from a running service's API.
    #[arg(
        help_heading = "Import from another shortener",
        long,
        value_name = "URL",
        requires = "from"
    )]
    pub source_url: Option<String>,
    /// The source's API key or signature token.
    #[arg(
        help_heading = "Import from another shortener",
        long,
        value_name = "KEY",
        env = "QRTAG_SOURCE_KEY",
        hide_env_values = true,
        requires = "from"
    )]
    pub source_key: Option<Secret>,
    /// A source domain's links go to this qrtag domain (one of the
    /// configuration's [[domains]]). Repeatable. Links of the source's
    /// default domain go to qrtag's default domain, or to --domain's.
    #[arg(
        help_heading = "Import from another shortener",
        long,
        value_name = "OLD=NEW",
        requires = "from"
    )]
    pub domain_map: Vec<DomainMapping>,
    /// Where the real run keeps its report (default: beside the source
    /// file, FILE.qrtag-import.txt; for an API source in the working
    /// directory).
    #[arg(
        help_heading = "Import from another shortener",
        long,
        value_name = "FILE",
        requires = "from"
    )]
    pub report: Option<PathBuf>,
    /// The access log `serve` writes (as its --access-log): the source's
    /// visits become log lines in imported/SOURCE-DATE.log beside it.
    #[arg(
        help_heading = "Import from another shortener",
        long,
        value_name = "PATH",
        env = "QRTAG_ACCESS_LOG",
        default_value = "access.log"
    )]
    pub access_log: PathBuf,
    /// Instead of importing: ask a running qrtag's public listener at URL
    /// (https://go.example, or http://127.0.0.1:8080 beside it) for every
    /// key the source's links came over as, redirects not followed, and
    /// compare each Location with the source's destination. Prints those
    /// that differ; exit 1 if any does.
    #[arg(
        help_heading = "Import from another shortener",
        long,
        value_name = "URL",
        requires = "from"
    )]
    pub verify: Option<String>,
    /// yourls-csv: the yourls_log table's CSV export, beside FILE (the
    /// yourls_url table's); without it no visits come over.
    #[arg(
        help_heading = "Import from another shortener",
        long,
        value_name = "FILE",
        requires = "from"
    )]
    pub source_visits: Option<PathBuf>,
    /// YOURLS: the prefix of its tables (YOURLS_DB_PREFIX).
    #[arg(
        help_heading = "Import from another shortener",
        long,
        value_name = "PREFIX",
        default_value = "yourls_"
    )]
    pub table_prefix: String,
}

fn parse_source(s: &str) -> Result<SourceName, String> {
    s.parse().map_err(|e: sources::UnknownSource| e.to_string())
}

/// One domain's writes: its store (none for a dry run beside no
/// database), the new links and those to overwrite.
type Writes = (
    Target,
    Option<std::sync::Arc<dyn LinkStore>>,
    Vec<BulkDoc>,
    Vec<BulkDoc>,
);

/// Collects the source's links as planned, one at a time.
struct Collect {
    targets: Targets,
    now: DateTime<Utc>,
    seen: Seen,
    planned: Vec<PlannedLink>,
    report: Report,
    spool: Spool,
}

impl Sink for Collect {
    fn link(&mut self, link: SourceLink) -> Result<(), SourceError> {
        self.report.links += 1;
        let code = link.code.clone();
        match plan::plan(link, &self.targets, self.now) {
            Planned::Link(p) => {
                if !self.seen.first(&p.target, &p.key) {
                    self.report.refused.push(plan::Refusal {
                        code,
                        domain: None,
                        why: "the source has this code twice; the first came over".into(),
                        suggestion: None,
                    });
                    return Ok(());
                }
                self.report
                    .note_left_out(&shown_key(&p.target, &code), &p.left_out);
                self.planned.push(p);
            }
            Planned::Refused(r) => self.report.refused.push(r),
        }
        Ok(())
    }

    fn visit(&mut self, visit: SourceVisit) -> Result<(), SourceError> {
        self.report.visits.read += 1;
        self.spool
            .push(visit)
            .map_err(|e| SourceError::Sink(format!("spooling the visits: {e}")))
    }
}

pub async fn import_from(
    cli: &Cli,
    args: &ImportArgs,
    name: SourceName,
) -> anyhow::Result<ExitCode> {
    let from = &args.from;
    let source_args = SourceArgs {
        file: args.file.clone(),
        visits_file: from.source_visits.clone(),
        url: from.source_url.clone(),
        key: from.source_key.clone(),
        table_prefix: from.table_prefix.clone(),
    };
    let mut source = sources::open(name, &source_args).map_err(|e| UsageError(e.to_string()))?;
    if args.new_database {
        return Err(UsageError(
            "--from imports into an existing store, not with --new-database".into(),
        )
        .into());
    }
    let domains = &cli.origin.config.domains;
    // `--domain HOST`: where the links that name no domain go (a host the
    // configuration does not list is refused here, before the source is
    // read).
    let unnamed = match cli.other_domain(cli.domain.as_ref())? {
        Some(_) => cli.domain.clone().map_or(Target::Default, Target::Other),
        None => Target::Default,
    };
    let targets = Targets {
        default_host: domains.default_host.clone(),
        others: domains.others.iter().map(|e| e.host.clone()).collect(),
        map: from.domain_map.clone(),
        unnamed,
    };
    let shown_source = match (&args.file, &from.source_url) {
        (Some(f), _) => format!("{name} {}", f.display()),
        (None, Some(u)) => format!("{name} {u}"),
        (None, None) => name.to_string(),
    };
    let mut collect = Collect {
        targets,
        now: Utc::now(),
        seen: Seen::default(),
        planned: Vec::new(),
        report: Report {
            source: shown_source.clone(),
            ..Report::default()
        },
        // Beside the temporary files of the system (TMPDIR): a dry run
        // leaves nothing beside the logs.
        spool: Spool::create(&std::env::temp_dir()).context("making the visits' spool file")?,
    };
    let bar = transfer::progress(None, "{spinner} reading the source ({elapsed})");
    let read = source.read(&mut collect).await;
    bar.finish_and_clear();
    // A source that is not what it should be (a truncated dump, a refused
    // API key) is the input's fault: one line, exit 2, nothing written.
    read.map_err(|e| UsageError(e.to_string()))?;
    let Collect {
        planned,
        mut report,
        now,
        spool,
        targets,
        ..
    } = collect;
    if let Some(base) = &from.verify {
        return verify(base, &planned, &targets).await;
    }
    // Where each kept link's visits lead: its destination.
    let mut locations: HashMap<String, String> = planned
        .iter()
        .map(|p| {
            let url = p
                .doc
                .get("url")
                .and_then(|u| u.as_str())
                .unwrap_or_default();
            (shown_key(&p.target, p.key.as_str()), url.to_owned())
        })
        .collect();

    // One store a domain, each asked about its keys once.
    let mut by_target: BTreeMap<Target, Vec<PlannedLink>> = BTreeMap::new();
    for p in planned {
        report.expired += u64::from(p.expired);
        report.totals += u64::from(p.doc.contains_key(plan::IMPORTED_CLICKS));
        by_target.entry(p.target.clone()).or_default().push(p);
    }
    let mut writes: Vec<Writes> = Vec::new();
    for (target, links) in by_target {
        let store = open_target(cli, args, &target, &targets.unnamed).await?;
        let (new, update) = judge(store.as_deref(), &target, links, args, &mut report).await?;
        writes.push((target, store, new, update));
    }
    report.collisions.sort_by(|a, b| a.0.cmp(&b.0));
    for (shown, _) in &report.collisions {
        locations.remove(shown);
    }
    let logs = LogDirs {
        default: imported_dir(&from.access_log),
        others: cli
            .origin
            .config
            .domains
            .others
            .iter()
            .filter_map(|e| Some((e.host.clone(), imported_dir(e.access_log.as_deref()?))))
            .collect(),
    };
    let visit_logs = visit_logs(
        spool,
        &targets,
        &locations,
        &logs,
        name.family(),
        now,
        args.dry_run,
        &mut report,
    )?;
    let text = report.render();
    print!("{text}");
    if args.dry_run {
        println!("dry run: nothing written");
        return finish(&report);
    }
    let report_path = report_file(from.report.as_deref(), args.file.as_deref(), name, now);
    write_report(&report_path, &text)?;
    let author = super::author::author(crate::link::Via::Import);
    let (mut created, mut updated) = (0u64, 0u64);
    for (target, store, new, update) in writes {
        let Some(store) = store else { continue };
        for (docs, on_existing) in [(new, OnExisting::Refuse), (update, OnExisting::Overwrite)] {
            if docs.is_empty() {
                continue;
            }
            let mut lines: Vec<(u64, BulkDoc)> = docs
                .into_iter()
                .enumerate()
                .map(|(i, d)| {
                    let mut doc = d.document();
                    crate::link::stamp_created(&mut doc, now, &author);
                    (i as u64 + 1, BulkDoc::new(d.key().clone(), doc))
                })
                .collect();
            lines.sort_unstable_by(|(_, a), (_, b)| a.key().as_str().cmp(b.key().as_str()));
            let written = transfer::write_all(
                store.as_ref(),
                lines,
                on_existing,
                store.batch_size(),
                &AtomicBool::new(false),
                None,
            )
            .await
            .map_err(|Stopped { written, error }| {
                anyhow::Error::new(error).context(format!(
                    "importing into {}: {written} links were written before this failed (run the import again to finish: what came over is not written twice)",
                    target_name(&target)
                ))
            })?;
            created += written.created;
            updated += written.updated;
            if !written.failed.is_empty() {
                let mut err = std::io::stderr().lock();
                for e in &written.failed.first {
                    let _ = writeln!(err, "qrtag: {}", e.problem);
                }
                anyhow::bail!(
                    "{} links were not written (see above)",
                    written.failed.total
                );
            }
        }
    }
    let mut logs_written = Vec::new();
    for out in visit_logs {
        logs_written.push(out.commit()?);
    }
    println!(
        "written: {created} created, {updated} updated{}; report in {}",
        logs_written
            .iter()
            .map(|(p, n)| format!(", {n} visits to {}", p.display()))
            .collect::<String>(),
        report_path.display()
    );
    finish(&report)
}

/// Exit 0 when every link of the source is in qrtag; otherwise 1, the
/// report having said which did not come over.
fn finish(report: &Report) -> anyhow::Result<ExitCode> {
    if report.complete() {
        return Ok(ExitCode::SUCCESS);
    }
    eprintln!(
        "qrtag: {} links did not come over ({} colliding, {} refused; see the report)",
        report.collisions.len() + report.refused.len(),
        report.collisions.len(),
        report.refused.len()
    );
    Ok(ExitCode::FAILURE)
}

fn target_name(target: &Target) -> String {
    match target {
        Target::Default => "the default domain".into(),
        Target::Other(h) => h.to_string(),
    }
}

/// The store of a target domain. `None` for a dry run beside no SQLite
/// file (nothing exists there, and a dry run creates nothing). `unnamed`
/// is `--domain`'s, which `qrtag import` itself opens (and checks); the
/// default domain's is then opened by its own settings, not `--domain`'s.
async fn open_target(
    cli: &Cli,
    args: &ImportArgs,
    target: &Target,
    unnamed: &Target,
) -> anyhow::Result<Option<std::sync::Arc<dyn LinkStore>>> {
    if target == unnamed {
        return transfer::store_first(cli, args, false).await;
    }
    let settings = match target {
        Target::Default => cli.store.settings(),
        Target::Other(host) => match cli.other_domain(Some(host))? {
            Some((settings, _)) => settings,
            None => cli.store.settings(),
        },
    };
    if let crate::store::options::StoreSettings::Sqlite { path } = &settings
        && args.dry_run
        && !path.exists()
    {
        return Ok(None);
    }
    Ok(Some(
        cli.open_domain_store(&settings, store::Access::Write)?,
    ))
}

/// Sorts one domain's planned links into new, equal (a re-run), to
/// overwrite (`--update`) and colliding, noting them in the report.
async fn judge(
    store: Option<&dyn LinkStore>,
    target: &Target,
    links: Vec<PlannedLink>,
    args: &ImportArgs,
    report: &mut Report,
) -> anyhow::Result<(Vec<BulkDoc>, Vec<BulkDoc>)> {
    let Some(store) = store else {
        report.new += links.len() as u64;
        let docs = links
            .into_iter()
            .map(|p| BulkDoc::new(p.key, p.doc))
            .collect();
        return Ok((docs, Vec::new()));
    };
    let keys: Vec<LinkKey> = links.iter().map(|p| p.key.clone()).collect();
    let existing = store
        .existing_all(&keys)
        .await
        .context("looking up which keys exist")?;
    let there: Vec<LinkKey> = keys
        .iter()
        .zip(&existing)
        .filter(|(_, e)| **e)
        .map(|(k, _)| k.clone())
        .collect();
    let mut stored = store
        .get_all(&there)
        .await
        .context("reading the links that exist")?
        .into_iter();
    let mut new = Vec::new();
    let mut update = Vec::new();
    for (p, exists) in links.into_iter().zip(&existing) {
        if !exists {
            new.push(p);
            continue;
        }
        let shown = shown_key(target, p.key.as_str());
        let Some(Some(s)) = stored.next() else {
            // Deleted between the two questions: said as a collision.
            report.collisions.push((shown, Collision::Differs));
            continue;
        };
        if crate::link::is_tombstone(&s.doc) {
            let on = crate::link::deleted_at(&s.doc);
            report.collisions.push((shown, Collision::Deleted(on)));
        } else if plan::same_link(&p.doc, &s.doc) {
            report.equal += 1;
        } else if args.update {
            report.updated += 1;
            update.push(BulkDoc::new(p.key, p.doc));
        } else {
            report.collisions.push((shown, Collision::Differs));
        }
    }
    // A new key that would take over a stored shorter link's URLs.
    let mut new_docs: Vec<(u64, BulkDoc)> = new
        .into_iter()
        .enumerate()
        .map(|(i, p)| (i as u64, BulkDoc::new(p.key, p.doc)))
        .collect();
    if !args.take_over {
        // Each one left out and named, however many: a problem list's
        // first few would stop the import or lose the rest's names.
        let none = vec![false; new_docs.len()];
        let taking = transfer::taking_over(store, &new_docs, &none).await?;
        let mut out: HashSet<u64> = HashSet::with_capacity(taking.len());
        for (line, key, parent) in taking {
            report.collisions.push((
                shown_key(target, key.as_str()),
                Collision::TakesOver(parent),
            ));
            out.insert(line);
        }
        new_docs.retain(|(i, _)| !out.contains(i));
    }
    report.new += new_docs.len() as u64;
    Ok((new_docs.into_iter().map(|(_, d)| d).collect(), update))
}

/// The report's file: the one named, else beside the source file, else in
/// the working directory by source and date.
fn report_file(
    chosen: Option<&Path>,
    file: Option<&Path>,
    name: SourceName,
    now: DateTime<Utc>,
) -> PathBuf {
    if let Some(p) = chosen {
        return p.to_owned();
    }
    match file {
        Some(f) => {
            let mut s = f.as_os_str().to_owned();
            s.push(".qrtag-import.txt");
            PathBuf::from(s)
        }
        None => PathBuf::from(format!(
            "qrtag-import-{name}-{}.txt",
            now.format("%Y-%m-%d")
        )),
    }
}

/// `--verify URL`: every planned link asked for through the public
/// listener, a few at a time, in source order; those whose answer is not a
/// redirect to the source's destination printed, one a line.
async fn verify(
    base: &str,
    planned: &[PlannedLink],
    targets: &Targets,
) -> anyhow::Result<ExitCode> {
    use futures_util::StreamExt;
    let base = base.trim_end_matches('/');
    if !(base.starts_with("http://") || base.starts_with("https://")) {
        return Err(UsageError(format!(
            "--verify takes the public listener's http(s) URL, not {base:?}"
        ))
        .into());
    }
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(std::time::Duration::from_secs(30))
        .build()
        .context("making the HTTP client")?;
    let bar = transfer::progress(
        Some(planned.len() as u64),
        "{bar:40} {human_pos}/{human_len} keys asked",
    );
    let asks = planned.iter().map(|p| {
        let client = &client;
        let bar = &bar;
        async move {
            let shown = shown_key(&p.target, p.key.as_str());
            let want = p
                .doc
                .get("url")
                .and_then(|u| u.as_str())
                .unwrap_or_default();
            let mut req = client.get(format!("{base}/{}", p.key.as_str()));
            let host = match &p.target {
                Target::Other(h) => Some(h),
                Target::Default => targets.default_host.as_ref(),
            };
            if let Some(h) = host {
                req = req.header(reqwest::header::HOST, h.as_str());
            }
            let answer = req.send().await;
            bar.inc(1);
            let got = match answer {
                Err(e) => return Some(format!("{shown}: no answer ({e})")),
                Ok(r) => (
                    r.status().as_u16(),
                    r.headers()
                        .get(reqwest::header::LOCATION)
                        .and_then(|l| l.to_str().ok())
                        .map(str::to_owned),
                ),
            };
            match got {
                (302 | 301 | 307 | 308, Some(loc)) if same_location(&loc, want) => None,
                (status, Some(loc)) => Some(format!(
                    "{shown}: the source sent {want}; qrtag answers {status} to {loc}"
                )),
                (status, None) => Some(format!(
                    "{shown}: the source sent {want}; qrtag answers {status}"
                )),
            }
        }
    });
    let differ: Vec<String> = futures_util::stream::iter(asks)
        .buffered(16)
        .filter_map(|d| async move { d })
        .collect()
        .await;
    bar.finish_and_clear();
    let mut out = std::io::stdout().lock();
    for d in &differ {
        let _ = writeln!(out, "{d}");
    }
    let _ = writeln!(
        out,
        "verified {} keys at {base}: {} differ",
        planned.len(),
        differ.len()
    );
    if differ.is_empty() {
        return Ok(ExitCode::SUCCESS);
    }
    drop(out);
    eprintln!(
        "qrtag: {} of {} keys do not answer as the source did",
        differ.len(),
        planned.len()
    );
    Ok(ExitCode::FAILURE)
}

/// The same place for a browser: equal, or equal once both are in the URL
/// parser's form (`ü` and `%C3%BC`).
fn same_location(got: &str, want: &str) -> bool {
    got == want
        || matches!(
            (url::Url::parse(got), url::Url::parse(want)),
            (Ok(a), Ok(b)) if a == b
        )
}

/// `imported/` beside an access log.
fn imported_dir(access_log: &Path) -> PathBuf {
    match access_log.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.join("imported"),
        _ => PathBuf::from("imported"),
    }
}

/// Where each domain's imported logs go.
struct LogDirs {
    default: PathBuf,
    others: Vec<(crate::values::host::Host, PathBuf)>,
}

impl LogDirs {
    fn of(&self, target: &Target) -> Option<&Path> {
        match target {
            Target::Default => Some(&self.default),
            Target::Other(h) => self
                .others
                .iter()
                .find(|(o, _)| o == h)
                .map(|(_, d)| d.as_path()),
        }
    }
}

/// One domain's log of imported visits, written under a temporary name
/// until the links are written.
struct VisitLog {
    path: PathBuf,
    file: AtomicFile,
    buf: Vec<u8>,
    /// The IDs imported before, with which the new ones are kept.
    imported: Option<Imported>,
    new_ids: Vec<u64>,
}

impl VisitLog {
    fn flush(&mut self) -> std::io::Result<()> {
        (&self.file.file).write_all(&self.buf)?;
        self.buf.clear();
        Ok(())
    }

    /// The log renamed into place, then the IDs it holds kept: a failure
    /// between the two renames at worst writes these visits again.
    fn commit(mut self) -> anyhow::Result<(PathBuf, usize)> {
        let shown = format!("writing {}", self.path.display());
        self.flush().context(shown.clone())?;
        let n = self.new_ids.len();
        self.file.commit().context(shown.clone())?;
        if let Some(imported) = self.imported {
            imported.write_with(self.new_ids).context(shown)?;
        }
        Ok((self.path, n))
    }
}

/// Counts the spooled visits for the report (new, imported before, of links
/// that do not come over) and, for a real run, writes the new ones in time
/// order into each domain's imported log, not yet renamed into place.
#[allow(clippy::too_many_arguments)]
fn visit_logs(
    spool: Spool,
    targets: &Targets,
    locations: &HashMap<String, String>,
    logs: &LogDirs,
    family: &str,
    now: DateTime<Utc>,
    dry_run: bool,
    report: &mut Report,
) -> anyhow::Result<Vec<VisitLog>> {
    let mut outs: BTreeMap<PathBuf, VisitLog> = BTreeMap::new();
    let mut seen: HashMap<PathBuf, Imported> = HashMap::new();
    let counts = &mut report.visits;
    spool
        .sorted(|v| {
            let Ok(target) = targets.target(v.domain.as_deref()) else {
                counts.orphaned += 1;
                return Ok(());
            };
            let shown = shown_key(&target, &v.code);
            let (Some(location), Some(dir)) = (locations.get(&shown), logs.of(&target)) else {
                counts.orphaned += 1;
                return Ok(());
            };
            let id = visit_id(family, &v);
            let imported = match seen.entry(dir.to_owned()) {
                Entry::Occupied(e) => e.into_mut(),
                Entry::Vacant(e) => e.insert(Imported::read(dir, family)?),
            };
            if imported.contains(id) {
                counts.already += 1;
                return Ok(());
            }
            counts.new += 1;
            if dry_run {
                return Ok(());
            }
            if !outs.contains_key(dir) {
                std::fs::create_dir_all(dir)?;
                let path = visits::log_path(dir, family, now);
                let out = VisitLog {
                    file: AtomicFile::create(&path)?,
                    path,
                    buf: Vec::with_capacity(1 << 16),
                    imported: None,
                    new_ids: Vec::new(),
                };
                outs.insert(dir.to_owned(), out);
            }
            let Some(out) = outs.get_mut(dir) else {
                return Ok(());
            };
            // The key is the code, kept exactly.
            visits::log_line(&v, &v.code, location, &mut out.buf);
            out.new_ids.push(id);
            if out.buf.len() >= 1 << 16 {
                out.flush()?;
            }
            Ok(())
        })
        .context("writing the imported visits")?;
    Ok(outs
        .into_iter()
        .map(|(dir, mut out)| {
            out.imported = seen.remove(&dir);
            out
        })
        .collect())
}

fn write_report(path: &Path, text: &str) -> anyhow::Result<()> {
    let shown = || format!("writing the report to {}", path.display());
    let mut f = AtomicFile::create(path).with_context(shown)?;
    f.file.write_all(text.as_bytes()).with_context(shown)?;
    f.commit().with_context(shown)
}
