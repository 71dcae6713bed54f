//! The access log: one line per request to the public listener.
//!
//! See [`mod@format`] for the line format.

pub mod format;

pub use format::{
    FIELD_COUNT, Field, LogLine, LogTime, ParseError, Record, parse_line, parse_line_bytes,
    write_record,
};
