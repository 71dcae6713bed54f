//! The access log: one line per request to the public listener.
//!
//! See [`mod@format`] for the line format and [`writer`] for how lines reach
//! the disk without a request ever waiting on it.

pub mod format;
// Issue 38: lines handed on with their place in the log.
pub mod tap;
pub mod writer;

pub use format::{
    FIELD_COUNT, Field, LogLine, LogTime, ParseError, Record, parse_line, parse_line_bytes,
    write_record,
};
pub use writer::{AccessLog, AccessLogError, AccessLogStats, AccessLogTarget, WriterOptions};
