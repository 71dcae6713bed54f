//! `qrtag print`: tags as a print-ready PDF on label stock or as posters,
//! through [`crate::print::render`], the one PDF writer.

use std::io::{BufRead, IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::Args;

use super::Cli;
use super::qr_output::TagArgs;
use crate::links;
use crate::print::request::{self, CaptionKind, PrintOptions, Spelling};
use crate::print::{self, Job, Length, Options, Paper, Tag, Target, Template};
use crate::qr::brand::Colour;
use crate::store;
use crate::values::link_key::LinkKey;
use crate::values::usage::UsageError;

#[derive(Debug, Clone, Args)]
pub struct PrintArgs {
    /// Keys of existing links (inactive is fine); `-` reads keys from
    /// standard input, one a line.
    pub keys: Vec<String>,
    /// Label stock: a built-in name (see --list-templates) or
    /// custom:paper=A4,label=40x40mm,cols=4,rows=6[,left=,top=,hpitch=,vpitch=,radius=,safe=].
    #[arg(long, value_name = "NAME")]
    pub template: Option<Template>,
    /// One code a page: A0 to A6, Letter, Legal, Tabloid, or WxH (500x700mm).
    #[arg(long, value_name = "SIZE")]
    pub poster: Option<Paper>,
    /// Show the built-in templates and exit.
    #[arg(long)]
    pub list_templates: bool,
    /// The PDF to write [default: standard output, when not a terminal].
    #[arg(short, long, value_name = "FILE.pdf")]
    pub output: Option<PathBuf>,
    /// Labels already used on the first sheet, counted row by row.
    #[arg(long, value_name = "N", default_value_t = 0, value_parser = request::skip)]
    pub skip: usize,
    /// What is printed under each code.
    #[arg(long, value_enum, default_value_t = CaptionKind::Url)]
    pub caption: CaptionKind,
    /// The caption's size in points [default: 8 on labels, a twelfth of
    /// the code on posters]; shrunk to fit the label's width.
    #[arg(long, value_name = "PT", value_parser = request::font_size)]
    pub font_size: Option<f64>,
    /// The code's side without its quiet zone (25mm, 1in) [default: the
    /// largest that fits].
    #[arg(long, value_name = "LENGTH")]
    pub code_size: Option<Length>,
    /// Draw every label's border: print on plain paper and hold it
    /// against a sheet to check the alignment.
    #[arg(long)]
    pub outline: bool,
    /// Bleed around a poster (3mm).
    #[arg(long, value_name = "LENGTH", value_parser = Length::parse_or_zero)]
    pub bleed: Option<Length>,
    /// Crop marks outside a poster's bleed.
    #[arg(long)]
    pub crop_marks: bool,
    #[command(flatten)]
    pub tag: TagArgs,
    #[command(flatten)]
    pub brand: PrintBrandArgs,
}

/// Colours and a logo, as `qrtag qr` takes them.
#[derive(Debug, Clone, Args)]
pub struct PrintBrandArgs {
    /// Colour of the dark modules, CSS hex (#rgb or #rrggbb) [default: #000].
    #[arg(long, value_name = "COLOR", value_parser = parse_colour)]
    pub dark: Option<Colour>,
    /// Colour of the light modules and the quiet zone [default: #fff].
    #[arg(long, value_name = "COLOR", value_parser = parse_colour)]
    pub light: Option<Colour>,
    /// Accept a --dark colour lighter than the light one.
    #[arg(long, requires = "dark")]
    pub allow_inverted: bool,
    /// A PNG logo in the centre of every code; error correction is raised
    /// to what it covers, and each code is decoded with it before printing.
    #[arg(long, value_name = "FILE.png")]
    pub logo: Option<PathBuf>,
    /// The logo's square, as a percentage of the code's side.
    #[arg(
        long,
        value_name = "PCT",
        requires = "logo",
        default_value_t = crate::print::request::DEFAULT_LOGO_SIZE,
        value_parser = clap::value_parser!(u32).range(crate::print::request::logo_sizes_for_clap())
    )]
    pub logo_size: u32,
}

fn parse_colour(s: &str) -> Result<Colour, String> {
    s.parse()
        .map_err(|e: crate::qr::brand::BrandError| e.to_string())
}

impl PrintArgs {
    /// The options as every surface takes them.
    fn options(&self) -> PrintOptions {
        PrintOptions {
            template: self.template.clone(),
            poster: self.poster,
            skip: self.skip,
            caption: self.caption,
            font_size: self.font_size,
            code_size: self.code_size,
            outline: self.outline,
            bleed: self.bleed,
            crop_marks: self.crop_marks,
            ec: self.tag.ec,
            dark: self.brand.dark,
            light: self.brand.light,
            allow_inverted: self.brand.allow_inverted,
            logo: self.brand.logo.is_some(),
            logo_size: self.brand.logo.as_ref().map(|_| self.brand.logo_size),
        }
    }
}

pub async fn run(cli: &Cli, args: &PrintArgs) -> anyhow::Result<ExitCode> {
    if args.list_templates {
        print!("{}", print::list_templates());
        return Ok(ExitCode::SUCCESS);
    }
    let options = args.options();
    let target = options
        .target(Spelling::Flag)
        .map_err(|e| usage(&e.message))?;
    // The logo read and the colours checked before the store is opened.
    let logo = match &args.brand.logo {
        Some(path) => Some(std::sync::Arc::new(super::qr_output::read_logo_image(
            path,
        )?)),
        None => None,
    };
    options
        .brand(logo.as_ref(), Spelling::Flag)
        .map_err(|e| usage(&e.message))?;
    let keys = read_keys(&args.keys)?;
    if keys.is_empty() && !(args.outline && matches!(target, Target::Sheet(_))) {
        return Err(usage(
            "name the links to print (keys, or - to read them from standard input), or --outline for an alignment page",
        ));
    }
    if args.output.is_none() && std::io::stdout().is_terminal() {
        return Err(usage(
            "not writing a PDF to a terminal: give -o FILE.pdf or redirect standard output",
        ));
    }
    let tags = if keys.is_empty() {
        Vec::new()
    } else {
        tags(cli, args, &options, &keys).await?
    };
    let job = options
        .job(tags, Spelling::Flag, logo.as_ref())
        .map_err(|e| usage(&e.message))?;
    let pdf = render(&job)?;
    match &args.output {
        Some(path) => {
            std::fs::write(path, &pdf).with_context(|| format!("writing {}", path.display()))?
        }
        None => {
            let mut out = std::io::stdout().lock();
            out.write_all(&pdf)?;
            out.flush()?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// [`print::render`], a job the layout refuses said as a usage error.
pub fn render(job: &Job) -> anyhow::Result<Vec<u8>> {
    print::render(job).map_err(|e| {
        if e.is_usage() {
            UsageError(e.to_string()).into()
        } else {
            e.into()
        }
    })
}

/// `qrtag batch --template`'s job: the new tags with `print`'s defaults.
pub fn batch_job(template: &Template, tags: Vec<Tag>, ec: crate::qr::EcLevel) -> Job {
    Job {
        target: Target::Sheet(template.clone()),
        tags,
        options: Options {
            ec,
            ..Options::default()
        },
    }
}

fn usage(msg: &str) -> anyhow::Error {
    UsageError(msg.to_owned()).into()
}

/// The keys named, `-` replaced by the lines of standard input (blank
/// lines skipped), each checked as a key before the store is opened.
fn read_keys(args: &[String]) -> anyhow::Result<Vec<LinkKey>> {
    let mut keys = Vec::new();
    for arg in args {
        if arg == "-" {
            for line in std::io::stdin().lock().lines() {
                let line = line.context("reading keys from standard input")?;
                let line = line.trim();
                if !line.is_empty() {
                    keys.push(parse_key(line)?);
                }
            }
        } else {
            keys.push(parse_key(arg)?);
        }
    }
    Ok(keys)
}

fn parse_key(s: &str) -> anyhow::Result<LinkKey> {
    s.parse::<LinkKey>()
        .map_err(|e| usage(&format!("{s:?} is not a key: {e}")))
}

/// Each key's tag: the text its code encodes, as `qrtag qr` encodes it, and
/// its caption. Every link must exist and not be deleted.
async fn tags(
    cli: &Cli,
    args: &PrintArgs,
    options: &PrintOptions,
    keys: &[LinkKey],
) -> anyhow::Result<Vec<Tag>> {
    let store = cli.open_store(store::Access::Read)?;
    let public_url = super::public_url::for_tags(cli, store.as_ref(), false).await?;
    let mut tags = Vec::with_capacity(keys.len());
    for key in keys {
        let doc = links::get(store.as_ref(), key).await?;
        if let Some(deleted) = links::deleted(key, &doc) {
            return Err(deleted.into());
        }
        tags.push(options.tag(
            &public_url,
            key,
            args.tag.uppercase_prefix,
            options.caption_text(&doc).as_deref(),
        ));
    }
    Ok(tags)
}
