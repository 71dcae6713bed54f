//! `qrtag qr` and `qrtag batch`: tag images from the command line.
//!
//! Images go through [`tag_image::render`], the function the admin listener
//! uses, so a file written here and `GET /qr/{key}.png` are the same bytes.
//! Unlike the server, `qrtag qr` makes a PNG of any size the options allow
//! ([`SizeLimit::Unbounded`]): it runs one render, for the person asking.

use std::fs::File;
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use clap::Args;

use super::Cli;
use super::qr_output::{BrandArgs, Job, LabelArgs, QrFormat, TagArgs};
use crate::link::Via;
use crate::links;
use crate::print::tag_image;
use crate::qr::{RenderOptions, SHEET_FULL_SIZE_CAPACITY};
use crate::store;
use crate::values::destination::Destination;
use crate::values::link_key::LinkKey;
use crate::values::public_url::PublicUrl;

/// Most links one `batch` creates: 42 full pages, already more than a poster
/// run, and a typo of an extra zero is caught rather than filling the store.
pub const MAX_BATCH: u16 = 1000;

#[derive(Debug, Clone, Args)]
pub struct QrArgs {
    /// The link's key; it must exist (inactive is fine).
    pub key: LinkKey,
    /// Write here instead of standard output.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Format [default: from the -o extension, else png]; zpl with --printer.
    #[arg(long, value_name = "png|svg|zpl")]
    pub format: Option<QrFormat>,
    /// Pixels per module.
    #[arg(
        long,
        value_name = "N",
        default_value_t = RenderOptions::DEFAULT_SCALE,
        value_parser = clap::value_parser!(u32)
            .range(i64::from(RenderOptions::MIN_SCALE)..=i64::from(RenderOptions::MAX_SCALE))
    )]
    pub scale: u32,
    /// Quiet zone around the code, in modules.
    #[arg(
        long,
        value_name = "N",
        default_value_t = RenderOptions::DEFAULT_MARGIN,
        value_parser = clap::value_parser!(u32).range(0..=i64::from(RenderOptions::MAX_MARGIN))
    )]
    pub margin: u32,
    #[command(flatten)]
    pub tag: TagArgs,
    #[command(flatten)]
    pub label: LabelArgs,
    #[command(flatten)]
    pub brand: BrandArgs,
}

#[derive(Debug, Clone, Args)]
pub struct BatchArgs {
    /// How many links to create (1 to 1000).
    #[arg(value_parser = clap::value_parser!(u16).range(1..=i64::from(MAX_BATCH)))]
    pub count: u16,
    /// The A4 sheet to write. More than 24 codes go on several sheets,
    /// FILE-1.svg, FILE-2.svg, ..., so every tag is printed full size.
    #[arg(long, value_name = "FILE.svg", required_unless_present = "template")]
    pub sheet: Option<PathBuf>,
    /// A print-ready PDF of the new tags on this label stock, as `qrtag
    /// print --template` lays it out (instead of or with --sheet).
    #[arg(long, value_name = "NAME", requires = "output")]
    pub template: Option<crate::print::Template>,
    /// The PDF --template writes.
    #[arg(short, long, value_name = "FILE.pdf", requires = "template")]
    pub output: Option<PathBuf>,
    /// Where the new links point until `qrtag set` [default: PUBLIC_URL/,
    /// which answers 404, so a tag enabled too early leads nowhere].
    #[arg(long)]
    pub url: Option<Destination>,
    #[command(flatten)]
    pub tag: TagArgs,
}

pub async fn qr(cli: &Cli, args: &QrArgs) -> anyhow::Result<ExitCode> {
    let stdout_is_terminal = std::io::stdout().is_terminal();
    let (format, target) =
        match plan_output(args.format, args.output.as_deref(), stdout_is_terminal) {
            Ok(plan) => plan,
            Err(msg) => return Ok(usage(&msg)),
        };
    let job = Job::plan(format, &args.label, &args.brand)?;
    let options = RenderOptions::new(args.scale, args.margin)?;
    let store = cli.open_store(store::Access::Read)?;
    let doc = links::get(store.as_ref(), &args.key).await?;
    // A deleted key's tag is never printed again: it could only lead to a 404.
    if let Some(deleted) = links::deleted(&args.key, &doc) {
        return Err(deleted.into());
    }
    let public_url = super::public_url::for_tags(cli, store.as_ref(), false).await?;
    let image = job.render(&public_url, &args.key, &args.tag, options)?;
    match target {
        Target::File(path) => {
            std::fs::write(path, &image).with_context(|| format!("writing {}", path.display()))?
        }
        Target::Stdout => {
            let mut out = std::io::stdout().lock();
            out.write_all(&image)?;
            out.flush()?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

pub async fn batch(cli: &Cli, args: &BatchArgs) -> anyhow::Result<ExitCode> {
    if let Some(sheet) = args.sheet.as_ref().filter(|s| !has_extension(s, "svg")) {
        return Ok(usage(&format!(
            "--sheet {}: sheets are SVG, name the file .svg",
            sheet.display()
        )));
    }
    // The store and the public URL first: a refusal writes nothing.
    let store = cli.open_store(store::Access::Write)?;
    let public_url = super::public_url::for_tags(cli, store.as_ref(), true).await?;
    let placeholder = match &args.url {
        Some(url) => url.clone(),
        None => default_placeholder(&public_url)?,
    };
    let count = usize::from(args.count);
    // A layout the stock cannot take is refused before any link exists.
    if let Some(template) = &args.template {
        let trial =
            super::print::batch_job(template, vec![placeholder_tag(&public_url)], args.tag.ec);
        super::print::render(&trial)?;
    }

    // Opened before any link exists, so a bad path costs nothing.
    let paths = args
        .sheet
        .as_ref()
        .map_or_else(Vec::new, |sheet| sheet_paths(sheet, count));
    let mut sheets = Sheets::create(&paths)?;
    // The PDF under a guard of its own: the sheets are paired with chunks.
    let mut pdf = Sheets::create(args.output.as_slice())?;

    let mut out = std::io::stdout().lock();
    let mut items = Vec::with_capacity(count);
    let mut tags = Vec::with_capacity(count);
    for _ in 0..count {
        let key = links::create(
            store.as_ref(),
            &crate::cli::author::author(Via::Cli),
            &placeholder,
            None,
            true,
        )
        .await?;
        // Printed as soon as it exists, so a failure part-way still tells
        // which inactive links were made.
        writeln!(out, "{}", public_url.short_url(key.as_str()))?;
        let text = tag_image::tag_text(&public_url, &key, args.tag.uppercase_prefix);
        items.push((key.to_string(), crate::qr::encode(&text, args.tag.ec)?));
        tags.push(crate::print::Tag {
            text,
            caption: public_url.short_url(key.as_str()),
        });
    }
    for ((path, file), chunk) in sheets
        .open
        .iter_mut()
        .zip(items.chunks(SHEET_FULL_SIZE_CAPACITY))
    {
        file.write_all(crate::qr::render_sheet_svg(chunk).as_bytes())
            .and_then(|()| file.sync_all())
            .with_context(|| format!("writing {}", path.display()))?;
    }
    // Standard output is the list of short URLs, for scripts; the sheets
    // written are said on standard error.
    for ((path, _), chunk) in sheets
        .open
        .iter()
        .zip(items.chunks(SHEET_FULL_SIZE_CAPACITY))
    {
        eprintln!("qrtag: wrote {} ({} tags)", path.display(), chunk.len());
    }
    if let (Some(template), Some((path, file))) = (&args.template, pdf.open.first_mut()) {
        let job = super::print::batch_job(template, tags, args.tag.ec);
        let bytes = super::print::render(&job)?;
        file.write_all(&bytes)
            .and_then(|()| file.sync_all())
            .with_context(|| format!("writing {}", path.display()))?;
        eprintln!(
            "qrtag: wrote {} ({count} tags on {template})",
            path.display()
        );
    }
    sheets.open.clear();
    pdf.open.clear();
    Ok(ExitCode::SUCCESS)
}

/// Sheets created up front; the ones still here when dropped are removed,
/// so a failed batch leaves no empty or half-written sheet behind.
#[derive(Default)]
struct Sheets {
    open: Vec<(PathBuf, File)>,
}

impl Sheets {
    fn create(paths: &[PathBuf]) -> anyhow::Result<Self> {
        let mut sheets = Sheets::default();
        for path in paths {
            let file =
                File::create(path).with_context(|| format!("creating {}", path.display()))?;
            sheets.open.push((path.clone(), file));
        }
        Ok(sheets)
    }
}

impl Drop for Sheets {
    fn drop(&mut self) {
        for (path, _) in self.open.drain(..) {
            let _ = std::fs::remove_file(path);
        }
    }
}

#[derive(Debug, PartialEq, Eq)]
enum Target<'a> {
    File(&'a Path),
    Stdout,
}

/// Decides the format and where the image goes, before the store is touched:
/// these are usage errors.
fn plan_output(
    format: Option<QrFormat>,
    output: Option<&Path>,
    stdout_is_terminal: bool,
) -> Result<(QrFormat, Target<'_>), String> {
    match output {
        Some(path) => match format.or_else(|| QrFormat::from_path(path)) {
            Some(format) => Ok((format, Target::File(path))),
            None => Err(format!(
                "cannot tell the image format from {}: name it .png, .svg or .zpl, or give --format",
                path.display()
            )),
        },
        None => {
            let format = format.unwrap_or_default();
            if format == QrFormat::Png && stdout_is_terminal {
                Err(
                    "not writing a PNG to a terminal: give -o FILE or redirect standard output"
                        .into(),
                )
            } else {
                Ok((format, Target::Stdout))
            }
        }
    }
}

/// `FILE.svg` for one page; `FILE-1.svg` … `FILE-n.svg`, numbered to sort,
/// when the codes need several.
fn sheet_paths(sheet: &Path, count: usize) -> Vec<PathBuf> {
    let pages = count.div_ceil(SHEET_FULL_SIZE_CAPACITY);
    if pages <= 1 {
        return vec![sheet.to_owned()];
    }
    let stem = sheet.file_stem().unwrap_or_default().to_string_lossy();
    let ext = sheet.extension().unwrap_or_default().to_string_lossy();
    let width = pages.to_string().len();
    (1..=pages)
        .map(|page| sheet.with_file_name(format!("{stem}-{page:0width$}.{ext}")))
        .collect()
}

fn has_extension(path: &Path, ext: &str) -> bool {
    path.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| e.eq_ignore_ascii_case(ext))
}

/// A stand-in tag as long as a new random key's, to try a layout on.
fn placeholder_tag(public_url: &PublicUrl) -> crate::print::Tag {
    let url = public_url.short_url("xxxxx");
    crate::print::Tag {
        text: url.clone(),
        caption: url,
    }
}

/// The service's own root: never a stranger's site, and it answers 404.
fn default_placeholder(public_url: &PublicUrl) -> anyhow::Result<Destination> {
    Destination::parse(&format!("{public_url}/")).context("the public URL as a placeholder")
}

/// A usage error found after parsing, reported like clap's: one line, exit 2.
fn usage(msg: &str) -> ExitCode {
    eprintln!("qrtag: {msg}");
    ExitCode::from(2)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_format_comes_from_the_flag_then_the_file_name() {
        let png = Path::new("tag.png");
        let txt = Path::new("tag.txt");
        assert_eq!(
            plan_output(None, Some(png), true),
            Ok((QrFormat::Png, Target::File(png)))
        );
        assert_eq!(
            plan_output(Some(QrFormat::Svg), Some(png), false),
            Ok((QrFormat::Svg, Target::File(png)))
        );
        assert_eq!(
            plan_output(Some(QrFormat::Svg), Some(txt), false),
            Ok((QrFormat::Svg, Target::File(txt)))
        );
        assert!(
            plan_output(None, Some(txt), false).is_err_and(|e| e.contains("--format")),
            "no guessing from an unknown extension"
        );
    }

    #[test]
    fn png_goes_to_standard_output_only_when_it_is_not_a_terminal() {
        assert_eq!(
            plan_output(None, None, false),
            Ok((QrFormat::Png, Target::Stdout))
        );
        assert!(plan_output(None, None, true).is_err());
        assert!(plan_output(Some(QrFormat::Png), None, true).is_err());
        assert_eq!(
            plan_output(Some(QrFormat::Svg), None, true),
            Ok((QrFormat::Svg, Target::Stdout)),
            "SVG is text"
        );
    }

    #[test]
    fn one_sheet_up_to_a_page_then_numbered_sheets() {
        let sheet = Path::new("out/tags.svg");
        assert_eq!(sheet_paths(sheet, 1), vec![PathBuf::from("out/tags.svg")]);
        assert_eq!(sheet_paths(sheet, 24), vec![PathBuf::from("out/tags.svg")]);
        assert_eq!(
            sheet_paths(sheet, 25),
            vec![
                PathBuf::from("out/tags-1.svg"),
                PathBuf::from("out/tags-2.svg")
            ]
        );
        let many = sheet_paths(Path::new("t.SVG"), usize::from(MAX_BATCH));
        assert_eq!(many.len(), 42);
        assert_eq!(many[0], PathBuf::from("t-01.SVG"));
        assert_eq!(many[41], PathBuf::from("t-42.SVG"));
    }

    #[test]
    fn the_default_placeholder_is_the_service_root() {
        let url = PublicUrl::parse("https://0x1f.ie").expect("valid");
        let dest = default_placeholder(&url).expect("valid destination");
        assert_eq!(dest.as_str(), "https://0x1f.ie/");
        assert!(!dest.is_internal());
    }
}
