//! `qrtag stats --export FILE.parquet|FILE.csv`: one row per logged request
//! with the derived columns, so a columnar engine (DuckDB, ClickHouse,
//! Spark, pandas) takes over when one machine's logs are not enough.
//!
//! Rows are the lines that pass `--key`/`--since`/`--until`, in reading
//! order. The file is written beside its name and renamed into place when
//! complete, so a failed run leaves no half file under that name.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use parquet::basic::Compression;
use parquet::data_type::{BoolType, ByteArray, ByteArrayType, Int32Type, Int64Type};
use parquet::file::properties::WriterProperties;
use parquet::file::writer::SerializedFileWriter;
use parquet::schema::parser::parse_message_type;

use super::aggregate::Counted;
use super::dimensions::{Deriver, Dimension};
use super::output::{csv_field, rfc3339};
use crate::access_log::format::LogLine;

/// The file's format, from its extension.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExportKind {
    Parquet,
    Csv,
}

impl ExportKind {
    pub fn from_path(path: &Path) -> Result<ExportKind, String> {
        match path
            .extension()
            .and_then(|e| e.to_str())
            .map(str::to_ascii_lowercase)
            .as_deref()
        {
            Some("parquet") => Ok(ExportKind::Parquet),
            Some("csv") => Ok(ExportKind::Csv),
            _ => Err(format!(
                "export file {} must end in .parquet or .csv",
                path.display()
            )),
        }
    }
}

/// Rows kept before they are written as one Parquet row group.
const ROW_GROUP: usize = 64 * 1024;

/// The columns, in order; the place columns only with a GeoIP database.
fn columns(places: bool) -> Vec<&'static str> {
    let mut c = vec![
        "time", "key", "status", "method", "scan", "bot", "scanner", "device", "os", "browser",
    ];
    if places {
        c.extend(["country", "region", "city"]);
    }
    c.push("referrer");
    c
}

/// A Parquet type per column name.
fn parquet_column(name: &str) -> &'static str {
    match name {
        "time" => "REQUIRED INT64 time (TIMESTAMP(MILLIS,true));",
        "status" => "REQUIRED INT32 status;",
        "scan" => "REQUIRED BOOLEAN scan;",
        "bot" => "REQUIRED BOOLEAN bot;",
        "scanner" => "OPTIONAL BYTE_ARRAY scanner (UTF8);",
        "key" => "REQUIRED BYTE_ARRAY key (UTF8);",
        "method" => "REQUIRED BYTE_ARRAY method (UTF8);",
        "device" => "REQUIRED BYTE_ARRAY device (UTF8);",
        "os" => "REQUIRED BYTE_ARRAY os (UTF8);",
        "browser" => "REQUIRED BYTE_ARRAY browser (UTF8);",
        "country" => "REQUIRED BYTE_ARRAY country (UTF8);",
        "region" => "REQUIRED BYTE_ARRAY region (UTF8);",
        "city" => "REQUIRED BYTE_ARRAY city (UTF8);",
        _ => "REQUIRED BYTE_ARRAY referrer (UTF8);",
    }
}

/// Columns of the rows not yet written.
#[derive(Default)]
struct Batch {
    time: Vec<i64>,
    status: Vec<i32>,
    scan: Vec<bool>,
    bot: Vec<bool>,
    /// Present scanners, and a definition level per row (1 present, 0 not).
    scanner: Vec<ByteArray>,
    scanner_defined: Vec<i16>,
    /// The text columns but the scanner, by name.
    text: Vec<(&'static str, Vec<ByteArray>)>,
    /// Every column's name, in the schema's order.
    names: Vec<&'static str>,
}

enum Sink {
    Csv(BufWriter<File>),
    Parquet(Box<SerializedFileWriter<File>>, Batch),
}

/// Writes rows as lines are counted; errors are kept and said at
/// [`Exporter::finish`], since counting a line cannot fail.
pub struct Exporter {
    deriver: Deriver,
    places: bool,
    sink: Option<Sink>,
    error: Option<anyhow::Error>,
    rows: u64,
    temp: PathBuf,
    path: PathBuf,
    value: String,
}

impl Exporter {
    /// Creates the file (under a temporary name beside `path`); `places`:
    /// whether `deriver` has a GeoIP database for the place columns.
    pub fn create(path: &Path, deriver: Deriver, places: bool) -> anyhow::Result<Exporter> {
        let kind = ExportKind::from_path(path).map_err(anyhow::Error::msg)?;
        let name = path
            .file_name()
            .map_or_else(|| "export".into(), |n| n.to_string_lossy().into_owned());
        let temp = path.with_file_name(format!(".{name}.{}.tmp", std::process::id()));
        let file = File::create(&temp)
            .map_err(|e| anyhow::anyhow!("cannot write export file {}: {e}", path.display()))?;
        let sink = match kind {
            ExportKind::Csv => {
                let mut w = BufWriter::new(file);
                writeln!(w, "{}", columns(places).join(","))?;
                Sink::Csv(w)
            }
            ExportKind::Parquet => {
                let message: String = columns(places).into_iter().map(parquet_column).collect();
                let schema = Arc::new(parse_message_type(&format!(
                    "message scan {{ {message} }}"
                ))?);
                let props = Arc::new(
                    WriterProperties::builder()
                        .set_compression(Compression::SNAPPY)
                        .set_created_by(format!("qrtag {}", env!("CARGO_PKG_VERSION")))
                        .build(),
                );
                let writer = SerializedFileWriter::new(file, schema, props)?;
                let text = columns(places)
                    .into_iter()
                    .filter(|c| parquet_column(c).contains("BYTE_ARRAY") && *c != "scanner")
                    .map(|c| (c, Vec::new()))
                    .collect();
                Sink::Parquet(
                    Box::new(writer),
                    Batch {
                        text,
                        names: columns(places),
                        ..Batch::default()
                    },
                )
            }
        };
        Ok(Exporter {
            deriver,
            places,
            sink: Some(sink),
            error: None,
            rows: 0,
            temp,
            path: path.to_owned(),
            value: String::new(),
        })
    }

    /// Adds the row of `line`, counted under `key` as `c`.
    pub fn row(&mut self, line: &LogLine<'_>, key: &str, c: &Counted) {
        if self.error.is_some() {
            return;
        }
        if let Err(e) = self.try_row(line, key, c) {
            self.error = Some(e);
        }
    }

    /// The value of a text column.
    fn text(&mut self, column: &str, line: &LogLine<'_>, key: &str, bot: bool) -> String {
        let dim = match column {
            "key" => return key.to_owned(),
            "method" => return line.method.to_owned(),
            "device" => Dimension::Device,
            "os" => Dimension::Os,
            "browser" => Dimension::Browser,
            "country" => Dimension::Country,
            "region" => Dimension::Region,
            "city" => Dimension::City,
            _ => Dimension::Referrer,
        };
        self.deriver.value(dim, line, bot, &mut self.value);
        self.value.clone()
    }

    fn try_row(&mut self, line: &LogLine<'_>, key: &str, c: &Counted) -> anyhow::Result<()> {
        self.rows += 1;
        let names = columns(self.places);
        let mut texts = Vec::with_capacity(names.len());
        for name in &names {
            texts.push(match *name {
                "time" | "status" | "scan" | "bot" | "scanner" => String::new(),
                other => self.text(other, line, key, c.bot),
            });
        }
        let scanner = line.tracking.as_ref().map(|t| t.as_str().to_owned());
        match self.sink.as_mut() {
            Some(Sink::Csv(w)) => {
                let mut fields = Vec::with_capacity(names.len());
                for (name, text) in names.iter().zip(texts) {
                    fields.push(match *name {
                        "time" => rfc3339(line.time),
                        "status" => line.status.to_string(),
                        "scan" => c.scan.to_string(),
                        "bot" => c.bot.to_string(),
                        "scanner" => scanner.clone().unwrap_or_default(),
                        _ => csv_field(&text),
                    });
                }
                writeln!(w, "{}", fields.join(","))?;
            }
            Some(Sink::Parquet(writer, batch)) => {
                batch.time.push(line.time.to_datetime().timestamp_millis());
                batch.status.push(i32::from(line.status));
                batch.scan.push(c.scan);
                batch.bot.push(c.bot);
                match scanner {
                    Some(s) => {
                        batch.scanner.push(ByteArray::from(s.as_str()));
                        batch.scanner_defined.push(1);
                    }
                    None => batch.scanner_defined.push(0),
                }
                for (name, text) in names.iter().zip(texts) {
                    if let Some((_, column)) = batch.text.iter_mut().find(|(n, _)| n == name) {
                        column.push(ByteArray::from(text.as_str()));
                    }
                }
                if batch.time.len() >= ROW_GROUP {
                    write_group(writer, batch)?;
                }
            }
            None => {}
        }
        Ok(())
    }

    /// Ends the file and moves it into place: the number of rows written.
    pub fn finish(mut self) -> anyhow::Result<u64> {
        let result = match (self.error.take(), self.sink.take()) {
            (Some(e), _) => Err(e),
            (None, Some(Sink::Csv(mut w))) => w.flush().map_err(Into::into),
            (None, Some(Sink::Parquet(mut writer, mut batch))) => {
                write_group(&mut writer, &mut batch).and_then(|()| {
                    writer.close()?;
                    Ok(())
                })
            }
            (None, None) => Ok(()),
        };
        let result = result.and_then(|()| Ok(std::fs::rename(&self.temp, &self.path)?));
        if let Err(e) = result {
            let _ = std::fs::remove_file(&self.temp);
            return Err(e.context(format!("writing export file {}", self.path.display())));
        }
        Ok(self.rows)
    }
}

impl Drop for Exporter {
    /// A run that stopped before [`Exporter::finish`] leaves no file.
    fn drop(&mut self) {
        if self.sink.is_some() {
            let _ = std::fs::remove_file(&self.temp);
        }
    }
}

/// Writes the batched rows as one row group, in the schema's column order.
fn write_group(writer: &mut SerializedFileWriter<File>, batch: &mut Batch) -> anyhow::Result<()> {
    if batch.time.is_empty() {
        return Ok(());
    }
    let mut group = writer.next_row_group()?;
    let mut texts = batch.text.iter();
    let mut names = batch.names.iter();
    while let Some(mut column) = group.next_column()? {
        match names.next().copied().unwrap_or_default() {
            "time" => {
                column
                    .typed::<Int64Type>()
                    .write_batch(&batch.time, None, None)?;
            }
            "status" => {
                column
                    .typed::<Int32Type>()
                    .write_batch(&batch.status, None, None)?;
            }
            "scan" => {
                column
                    .typed::<BoolType>()
                    .write_batch(&batch.scan, None, None)?;
            }
            "bot" => {
                column
                    .typed::<BoolType>()
                    .write_batch(&batch.bot, None, None)?;
            }
            "scanner" => {
                column.typed::<ByteArrayType>().write_batch(
                    &batch.scanner,
                    Some(&batch.scanner_defined),
                    None,
                )?;
            }
            _ => {
                let values = texts.next().map_or(&[][..], |(_, v)| v.as_slice());
                column
                    .typed::<ByteArrayType>()
                    .write_batch(values, None, None)?;
            }
        }
        column.close()?;
    }
    group.close()?;
    batch.time.clear();
    batch.status.clear();
    batch.scan.clear();
    batch.bot.clear();
    batch.scanner.clear();
    batch.scanner_defined.clear();
    for (_, v) in &mut batch.text {
        v.clear();
    }
    Ok(())
}
