use super::*;
use crate::stats::read::for_each_line;
use proptest::prelude::*;

type Seen = Vec<Result<Vec<u8>, LineError>>;

/// What `qrtag stats` sees in `data` read as one file.
fn stats_lines(data: &[u8]) -> Seen {
    let mut seen = Vec::new();
    let mut r = io::BufReader::new(data);
    for_each_line(&mut r, |_, l| seen.push(l.map(<[u8]>::to_vec))).expect("read");
    seen
}

/// What the follower sees in `data` read in pieces cut at `cuts`.
fn follower_lines(data: &[u8], cuts: &[usize]) -> (Seen, Lines) {
    let mut seen = Vec::new();
    let mut lines = Lines::default();
    let mut start = 0;
    for &cut in cuts.iter().chain(std::iter::once(&data.len())) {
        lines.feed(&data[start..cut], |l| seen.push(l.map(<[u8]>::to_vec)));
        start = cut;
    }
    lines.finish(|l| seen.push(l.map(<[u8]>::to_vec)));
    (seen, lines)
}

fn any_data() -> impl Strategy<Value = Vec<u8>> {
    // Short pieces, a few of them over the line cap.
    let piece = prop_oneof![
        8 => prop::collection::vec(prop_oneof![Just(b'a'), Just(b'\n')], 0..20),
        1 => (MAX_LINE - 2..MAX_LINE + 2).prop_map(|n| vec![b'x'; n]),
    ];
    prop::collection::vec(piece, 0..6).prop_map(|p| p.concat())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// However reads cut the stream, the lines (and the too-long and
    /// unfinished verdicts) are the ones `qrtag stats` reads.
    #[test]
    fn lines_split_like_stats_reads_them(
        data in any_data(),
        cuts in prop::collection::vec(any::<prop::sample::Index>(), 0..5),
    ) {
        let mut cuts: Vec<usize> = cuts.iter().map(|c| c.index(data.len() + 1)).collect();
        cuts.sort_unstable();
        let (seen, lines) = follower_lines(&data, &cuts);
        prop_assert_eq!(seen, stats_lines(&data));
        prop_assert_eq!(lines.offset, data.len() as u64);
    }
}

#[test]
fn an_unfinished_line_waits_and_is_not_counted() {
    let mut lines = Lines::default();
    let mut seen = Vec::new();
    lines.feed(b"one\ntw", |l| seen.push(l.map(<[u8]>::to_vec)));
    assert_eq!(seen, [Ok(b"one\n".to_vec())]);
    assert_eq!((lines.offset, lines.position()), (4, 6));
    lines.feed(b"o\n", |l| seen.push(l.map(<[u8]>::to_vec)));
    assert_eq!(seen[1], Ok(b"two\n".to_vec()));
    assert_eq!((lines.offset, lines.position()), (8, 8));
}

/// The names `rotated_files` lists for `access.log` in a directory of `names`.
fn listed(names: &[&str]) -> Vec<String> {
    let dir = tempfile::tempdir().expect("dir");
    for name in names {
        std::fs::write(dir.path().join(name), b"").expect("write");
    }
    rotated_files(&dir.path().join("access.log"))
        .expect("list")
        .iter()
        .filter_map(|p| Some(p.file_name()?.to_str()?.to_owned()))
        .collect()
}

#[test]
fn rotated_files_are_listed_oldest_first() {
    let names = listed(&[
        "access.log",
        "access.log.1",
        "access.log.2.gz",
        "access.log.2",
        "access.log.10.gz",
        "access.log.scan-index",
        "access.log.x",
        "other.log.3",
    ]);
    assert_eq!(
        names,
        [
            "access.log.10.gz",
            "access.log.2",
            "access.log.2.gz",
            "access.log.1"
        ]
    );
}

#[test]
fn date_named_rotations_are_listed_oldest_first() {
    let names = listed(&[
        "access.log",
        "access.log-20261124",
        "access.log-20261123.gz",
        "access.log-20261122.gz",
        "access.log-20261124.gz",
        "access.log-2026112",
        "access.log-x20261121",
        "access.log.scan-index",
    ]);
    assert_eq!(
        names,
        [
            "access.log-20261122.gz",
            "access.log-20261123.gz",
            "access.log-20261124",
            "access.log-20261124.gz",
        ]
    );
}

#[test]
fn rotation_names_as_logrotate_writes_them() {
    use std::cmp::Reverse;
    let dated = |s: &str| Some((Rotation::Dated(s.into()), false));
    assert_eq!(
        rotation_of("a.log", "a.log.1"),
        Some((Rotation::Numbered(Reverse(1)), false))
    );
    assert_eq!(
        rotation_of("a.log", "a.log.12.gz"),
        Some((Rotation::Numbered(Reverse(12)), true))
    );
    assert_eq!(rotation_of("a.log", "a.log-20261124"), dated("20261124"));
    assert_eq!(
        rotation_of("a.log", "a.log-2026112413"),
        dated("2026112413")
    );
    assert_eq!(
        rotation_of("a.log", "a.log-2026-11-24"),
        dated("2026-11-24")
    );
    assert_eq!(
        rotation_of("a.log", "a.log.2026-11-24"),
        dated("2026-11-24")
    );
    assert_eq!(
        rotation_of("a.log", "a.log-2026_11_24_1330"),
        dated("2026_11_24_1330")
    );
    for not_one in [
        "a.log",
        "a.log.",
        "a.log.gz",
        "a.log-1",
        "a.log-",
        "a.log.scan-index",
        "a.log.1.tmp",
        "a.log.x",
        "b.log.1",
        "a.log..1",
        "a.log-2026-11-2x",
    ] {
        assert_eq!(rotation_of("a.log", not_one), None, "{not_one}");
    }
    assert!(Rotation::Dated("20261124".into()) < Rotation::Numbered(Reverse(3)));
    assert!(Rotation::Numbered(Reverse(3)) < Rotation::Numbered(Reverse(1)));
}

#[test]
fn a_gzip_file_is_known_by_its_content_s_first_line() {
    use flate2::{Compression, write::GzEncoder};
    use std::io::Write;
    let dir = tempfile::tempdir().expect("dir");
    let (plain, gz) = (dir.path().join("a"), dir.path().join("a.gz"));
    std::fs::write(&plain, b"first\nsecond\n").expect("write");
    let mut enc = GzEncoder::new(Vec::new(), Compression::fast());
    enc.write_all(b"first\nsecond\n").expect("gzip");
    std::fs::write(&gz, enc.finish().expect("gzip")).expect("write");
    let counter = AtomicU64::new(0);
    let head = |p: &Path| probe_head(&File::open(p).expect("open"), &counter).expect("probe");
    assert!(head(&plain).is_some());
    assert_eq!(head(&plain), head(&gz));
    std::fs::write(&plain, b"unfinished").expect("write");
    assert_eq!(head(&plain), None);
}
