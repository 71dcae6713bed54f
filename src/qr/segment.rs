//! Optimal segmentation of a text into QR data segments and the choice of
//! the smallest symbol version that holds them.
//!
//! This is a pure function of the text and the error-correction level so it
//! can be tested exhaustively without building any symbol.
//!
//! The cost model is the one of ISO/IEC 18004 Annex J: every segment pays a
//! 4-bit mode indicator plus a character-count indicator whose width depends
//! on the mode and on the version class (1–9, 10–26, 27–40); numeric data
//! costs 10 bits per 3 digits (4 or 7 for a trailing 1 or 2), alphanumeric 11
//! bits per pair (6 for a trailing single), byte 8 bits per byte. Kanji and
//! ECI are never useful for a URL and are left out.
//!
//! Instead of the usual greedy rules (which `qrcode` uses and which come out
//! one version too big for a few percent of short URLs), the segmentation is a
//! shortest path over a small automaton whose states remember how many
//! characters of an unfinished numeric triple or alphanumeric pair are still
//! owed. Every transition cost is an integer number of bits, so the result is
//! exact, not an approximation with fractional per-character costs.

use std::ops::Range;

use qrcode::Version;
use qrcode::bits::Bits;

use super::{EcLevel, QrError};

/// An encoding mode of a data segment.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Mode {
    Numeric,
    Alphanumeric,
    Byte,
}

impl Mode {
    /// Order matters only for tie-breaking, which keeps the output
    /// deterministic.
    pub const ALL: [Mode; 3] = [Mode::Numeric, Mode::Alphanumeric, Mode::Byte];

    /// Whether `byte` belongs to the character set of this mode (ISO/IEC
    /// 18004 Table 5 for alphanumeric). Bytes of a multi-byte UTF-8 sequence
    /// only fit byte mode.
    pub fn accepts(self, byte: u8) -> bool {
        match self {
            Mode::Numeric => byte.is_ascii_digit(),
            Mode::Alphanumeric => {
                byte.is_ascii_digit()
                    || byte.is_ascii_uppercase()
                    || matches!(
                        byte,
                        b' ' | b'$' | b'%' | b'*' | b'+' | b'-' | b'.' | b'/' | b':'
                    )
            }
            Mode::Byte => true,
        }
    }

    /// Width of the character-count indicator, ISO/IEC 18004 Table 3. This is
    /// why the segmentation has to be redone per version class.
    pub fn count_bits(self, version: u8) -> usize {
        let class = version_class(version);
        match self {
            Mode::Numeric => [10, 12, 14][class],
            Mode::Alphanumeric => [9, 11, 13][class],
            Mode::Byte => [8, 16, 16][class],
        }
    }

    /// Characters per data group and the bits of a full group.
    fn group(self) -> (usize, usize) {
        match self {
            Mode::Numeric => (3, 10),
            Mode::Alphanumeric => (2, 11),
            Mode::Byte => (1, 8),
        }
    }

    /// Bits of an unfinished trailing group of `pending` characters.
    fn partial_bits(self, pending: usize) -> usize {
        match (self, pending) {
            (Mode::Numeric, 1) => 4,
            (Mode::Numeric, 2) => 7,
            (Mode::Alphanumeric, 1) => 6,
            _ => 0,
        }
    }

    /// Total bits of one segment of `len` characters in `version`'s class.
    pub fn segment_bits(self, len: usize, version: u8) -> usize {
        let (group, full) = self.group();
        4 + self.count_bits(version) + len / group * full + self.partial_bits(len % group)
    }
}

/// A run of the text encoded in one mode; `range` indexes the text's bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Segment {
    pub mode: Mode,
    pub range: Range<usize>,
}

/// The outcome of planning: which version to build and what goes into it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Plan {
    /// Smallest normal (non-micro) QR version, 1–40.
    pub version: u8,
    pub segments: Vec<Segment>,
    /// Bits of all segments, before terminator and padding.
    pub data_bits: usize,
}

/// No text longer than this can fit: even all-numeric data costs more than
/// 10/3 bits per character and version 40-L holds 23 648 data bits. Checking
/// it first keeps a hostile input from costing more than a length test.
pub const MAX_TEXT_LEN: usize = 7089;

/// Index of the version class (1–9, 10–26, 27–40) that fixes the count
/// indicator widths.
fn version_class(version: u8) -> usize {
    match version {
        0..=9 => 0,
        10..=26 => 1,
        _ => 2,
    }
}

const VERSION_CLASSES: [std::ops::RangeInclusive<u8>; 3] = [1..=9, 10..=26, 27..=40];

/// Data capacity in bits, taken from `qrcode` itself so that a plan that fits
/// here is exactly one that `QrCode::with_bits` accepts.
pub fn capacity_bits(version: u8, ec: EcLevel) -> usize {
    // Only versions 1–40 are valid; anything else holds nothing.
    if !(1..=40).contains(&version) {
        return 0;
    }
    Bits::new(Version::Normal(i16::from(version)))
        .max_len(ec.into())
        .unwrap_or(0)
}

/// Finds the smallest version that holds `text` at level `ec` and an optimal
/// segmentation for it.
///
/// The character-count limits of a segment (e.g. 255 bytes in versions 1–9)
/// are not modelled: a segment that long costs more bits than the largest
/// version of its class holds, so it can never be part of a plan that fits.
pub fn plan(text: &[u8], ec: EcLevel) -> Result<Plan, QrError> {
    if text.len() > MAX_TEXT_LEN {
        return Err(QrError::DataTooLong { len: text.len() });
    }
    for class in VERSION_CLASSES {
        let (segments, data_bits) = optimal_segments(text, *class.start());
        if let Some(version) = class.clone().find(|&v| data_bits <= capacity_bits(v, ec)) {
            return Ok(Plan {
                version,
                segments,
                data_bits,
            });
        }
    }
    Err(QrError::DataTooLong { len: text.len() })
}

/// Automaton state: the mode of the open segment and how many characters of
/// its current group are pending (always 0 for byte mode).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct State {
    mode: Mode,
    pending: usize,
}

impl State {
    const fn new(mode: Mode, pending: usize) -> Self {
        Self { mode, pending }
    }
}

const STATES: [State; 6] = [
    State::new(Mode::Numeric, 0),
    State::new(Mode::Numeric, 1),
    State::new(Mode::Numeric, 2),
    State::new(Mode::Alphanumeric, 0),
    State::new(Mode::Alphanumeric, 1),
    State::new(Mode::Byte, 0),
];

fn state_index(state: State) -> usize {
    match state.mode {
        Mode::Numeric => state.pending,
        Mode::Alphanumeric => 3 + state.pending,
        Mode::Byte => 5,
    }
}

/// How a state after character `i` was reached from position `i`.
#[derive(Clone, Copy, Debug)]
enum Step {
    /// The character extended the segment that was open in this state.
    Continue(usize),
    /// The character opened a new segment after closing the one in this
    /// state (`None` at the start of the text).
    Open(Option<usize>),
}

/// Minimum-bit segmentation of `text` for the version class of `version`.
/// Returns the segments (in text order) and their total bits.
pub fn optimal_segments(text: &[u8], version: u8) -> (Vec<Segment>, usize) {
    let n = text.len();
    // cost[i][s]: fewest bits for text[..i] ending in state s, not counting
    // the partial group still owed by s.
    let mut cost = vec![[None::<usize>; 6]; n + 1];
    let mut step = vec![[Step::Open(None); 6]; n + 1];

    for (i, &byte) in text.iter().enumerate() {
        // Cheapest way to have everything before i closed off.
        let closed = if i == 0 {
            Some((0, None))
        } else {
            closed_at(&cost[i]).map(|(bits, s)| (bits, Some(s)))
        };
        let here = cost[i];
        for mode in Mode::ALL {
            if !mode.accepts(byte) {
                continue;
            }
            let (group, full) = mode.group();
            let mut relax = |target: State, bits: usize, how: Step| {
                let t = state_index(target);
                if cost[i + 1][t].is_none_or(|old| bits < old) {
                    cost[i + 1][t] = Some(bits);
                    step[i + 1][t] = how;
                }
            };
            // Extend the open segment of this mode.
            for from in STATES.iter().filter(|s| s.mode == mode) {
                if let Some(bits) = here[state_index(*from)] {
                    let pending = (from.pending + 1) % group;
                    let add = if pending == 0 { full } else { 0 };
                    relax(
                        State::new(mode, pending),
                        bits + add,
                        Step::Continue(state_index(*from)),
                    );
                }
            }
            // Close whatever was open and start a new segment here.
            if let Some((bits, from)) = closed {
                let pending = 1 % group;
                let add = 4 + mode.count_bits(version) + if pending == 0 { full } else { 0 };
                relax(State::new(mode, pending), bits + add, Step::Open(from));
            }
        }
    }

    let Some((total, last)) = closed_at(&cost[n]) else {
        // Only the empty text ends without any state.
        return (Vec::new(), 0);
    };

    let mut segments = Vec::new();
    let mut state = last;
    let mut end = n;
    let mut i = n;
    while i > 0 {
        match step[i][state] {
            Step::Continue(prev) => state = prev,
            Step::Open(prev) => {
                segments.push(Segment {
                    mode: STATES[state].mode,
                    range: i - 1..end,
                });
                end = i - 1;
                match prev {
                    Some(prev) => state = prev,
                    None => break,
                }
            }
        }
        i -= 1;
    }
    segments.reverse();
    (segments, total)
}

/// Cheapest state at one position once its owed partial group is paid.
fn closed_at(costs: &[Option<usize>; 6]) -> Option<(usize, usize)> {
    let mut best: Option<(usize, usize)> = None;
    for (s, state) in STATES.iter().enumerate() {
        if let Some(bits) = costs[s] {
            let bits = bits + state.mode.partial_bits(state.pending);
            if best.is_none_or(|(b, _)| bits < b) {
                best = Some((bits, s));
            }
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    fn modes(text: &str, version: u8) -> Vec<(Mode, &str)> {
        optimal_segments(text.as_bytes(), version)
            .0
            .into_iter()
            .map(|s| (s.mode, &text[s.range]))
            .collect()
    }

    #[test]
    fn standard_examples_cost_what_the_standard_says() {
        // ISO/IEC 18004 worked examples: "01234567" is 41 bits in version 1,
        // "AC-42" is 41 bits.
        assert_eq!(optimal_segments(b"01234567", 1).1, 41);
        assert_eq!(optimal_segments(b"AC-42", 1).1, 4 + 9 + 11 + 11 + 6);
        assert_eq!(modes("AC-42", 1), vec![(Mode::Alphanumeric, "AC-42")]);
    }

    #[test]
    fn empty_text_needs_no_segment() {
        assert_eq!(optimal_segments(b"", 1), (Vec::new(), 0));
        let plan = plan(b"", EcLevel::H).expect("empty text fits");
        assert_eq!(plan.version, 1);
    }

    #[test]
    fn mixed_text_splits_where_it_pays() {
        assert_eq!(
            modes("HTTP://0X1F.IE/H83if", 1),
            vec![
                (Mode::Alphanumeric, "HTTP://0X1F.IE/H83"),
                (Mode::Byte, "if")
            ]
        );
        // A long digit run inside lowercase text earns its own segment.
        assert_eq!(
            modes("ab0123456789cd", 1),
            vec![
                (Mode::Byte, "ab"),
                (Mode::Numeric, "0123456789"),
                (Mode::Byte, "cd")
            ]
        );
        // A short one does not.
        assert_eq!(modes("ab12cd", 1), vec![(Mode::Byte, "ab12cd")]);
    }

    #[test]
    fn segments_cover_the_text_and_add_up() {
        let text = "http://localhost:8080/c1091";
        for version in [1, 10, 27] {
            let (segments, bits) = optimal_segments(text.as_bytes(), version);
            let mut at = 0;
            let mut sum = 0;
            for s in &segments {
                assert_eq!(s.range.start, at);
                assert!(
                    text.as_bytes()[s.range.clone()]
                        .iter()
                        .all(|&b| s.mode.accepts(b))
                );
                sum += s.mode.segment_bits(s.range.len(), version);
                at = s.range.end;
            }
            assert_eq!(at, text.len());
            assert_eq!(sum, bits);
        }
    }

    #[test]
    fn non_ascii_goes_to_byte_mode() {
        let text = "HTTPS://XN--BCHER-KVA.EXAMPLE/ä";
        let (segments, _) = optimal_segments(text.as_bytes(), 1);
        let last = segments.last().expect("non-empty text has segments");
        assert_eq!(last.mode, Mode::Byte);
        assert_eq!(&text[last.range.clone()], "ä");
    }

    #[test]
    fn overlong_text_is_rejected_up_front() {
        let text = vec![b'1'; MAX_TEXT_LEN + 1];
        assert_eq!(
            plan(&text, EcLevel::L),
            Err(QrError::DataTooLong {
                len: MAX_TEXT_LEN + 1
            })
        );
        let text = vec![b'1'; MAX_TEXT_LEN];
        assert_eq!(plan(&text, EcLevel::L).map(|p| p.version), Ok(40));
        assert!(plan(&text, EcLevel::M).is_err());
    }

    #[test]
    fn capacity_matches_the_standard_corners() {
        assert_eq!(capacity_bits(1, EcLevel::L), 152);
        assert_eq!(capacity_bits(1, EcLevel::H), 72);
        assert_eq!(capacity_bits(40, EcLevel::L), 23648);
        assert_eq!(capacity_bits(0, EcLevel::L), 0);
        assert_eq!(capacity_bits(41, EcLevel::L), 0);
    }
}
