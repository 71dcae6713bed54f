use serde_json::json;

use super::*;
use crate::link::{Author, stamp_changed, stamp_created};

fn doc(v: Value) -> Document {
    v.as_object().cloned().unwrap_or_default()
}

fn t(s: &str) -> chrono::DateTime<chrono::Utc> {
    crate::link::parse_expires(s).expect("time")
}

fn ann() -> Author {
    Author::new(Via::Console, Actor::Console { user: "ann".into() })
}

#[test]
fn a_create_lists_every_field_it_sets_and_names_its_author() {
    let mut d = doc(json!({"url": "/a", "inactive": false, "title": "Menu", "tag": 1}));
    stamp_created(&mut d, t("2026-01-01T10:00:00Z"), &ann());
    let e = entry(1, None, &d, Some("1"), "now").expect("an entry");
    assert_eq!(e.kind, Kind::Create);
    assert_eq!(e.actor, Actor::Console { user: "ann".into() });
    assert_eq!(e.via, Some(Via::Console));
    assert_eq!(e.at, "2026-01-01T10:00:00Z");
    assert_eq!(e.rev.as_deref(), Some("1"));
    let fields: Vec<Field> = e.changes.iter().map(|c| c.field).collect();
    assert_eq!(fields, [Field::Url, Field::Inactive, Field::Title]);
    assert!(e.changes.iter().all(|c| c.before.is_none()));
    assert_eq!(
        e.change(Field::Url).and_then(|c| c.after.clone()),
        Some(json!("/a"))
    );
}

#[test]
fn each_field_is_compared_and_null_is_absent() {
    let before = doc(json!({"url": "/a", "inactive": false}));
    let cases = [
        (Field::Url, "url", json!("/b")),
        (Field::Rules, "rules", json!([{"url": "/r", "os": ["ios"]}])),
        (Field::Inactive, "inactive", json!(true)),
        (Field::Expires, "expires", json!("2027-01-01T00:00:00Z")),
        (Field::Title, "title", json!("T")),
        (Field::Notes, "notes", json!("n")),
        (
            Field::FallbackUrl,
            "fallback_url",
            json!("https://x.example/"),
        ),
        (Field::Deleted, "deleted_at", json!("2026-01-02T00:00:00Z")),
    ];
    for (field, name, value) in cases {
        let mut after = before.clone();
        after.insert(name.into(), value.clone());
        let changes = diff(Some(&before), &after);
        assert_eq!(changes.len(), 1, "{name}");
        assert_eq!(changes[0].field, field);
        assert_eq!(changes[0].after.as_ref(), Some(&value));
        assert_eq!(field.doc_name(), name);
    }
    let mut nulled = before.clone();
    nulled.insert("title".into(), Value::Null);
    assert!(diff(Some(&before), &nulled).is_empty(), "null is absent");
    let mut other = before.clone();
    other.insert("goal_code".into(), json!("x"));
    assert!(
        diff(Some(&before), &other).is_empty(),
        "not a followed field"
    );
}

#[test]
fn a_write_that_changes_no_field_leaves_no_entry_but_a_delete_does() {
    let mut before = doc(json!({"url": "/a", "inactive": false}));
    stamp_created(&mut before, t("2026-01-01T10:00:00Z"), &ann());
    let mut same = before.clone();
    stamp_changed(&mut same, t("2026-01-02T10:00:00Z"), &ann());
    assert_eq!(entry(2, Some(&before), &same, Some("2"), "now"), None);
    let mut gone = before.clone();
    crate::link::set_deleted(&mut gone, t("2026-01-03T10:00:00Z"));
    stamp_changed(&mut gone, t("2026-01-03T10:00:00Z"), &ann());
    let e = entry(2, Some(&before), &gone, Some("2"), "now").expect("entry");
    assert_eq!(e.kind, Kind::Delete);
    let fields: Vec<Field> = e.changes.iter().map(|c| c.field).collect();
    assert_eq!(fields, [Field::Inactive, Field::Deleted]);
}

#[test]
fn a_write_without_qrtags_stamp_is_from_outside() {
    let before = doc(json!({"url": "/a"}));
    let after = doc(json!({"url": "/b"}));
    let e = entry(
        4,
        Some(&before),
        &after,
        Some("4-abc"),
        "2026-05-05T00:00:00Z",
    )
    .expect("e");
    assert_eq!(
        e.actor,
        Actor::Outside {
            rev: Some("4-abc".into())
        }
    );
    assert_eq!((e.via, e.at.as_str()), (None, "2026-05-05T00:00:00Z"));
    assert_eq!(e.kind, Kind::Edit);
}

#[test]
fn entries_round_trip_as_json() {
    let mut d = doc(json!({"url": "/a"}));
    stamp_created(
        &mut d,
        t("2026-01-01T10:00:00Z"),
        &Author::cli(Via::Cli, "root", "box"),
    );
    let e = entry(1, None, &d, None, "now").expect("entry");
    let text = serde_json::to_string(&e).expect("json");
    assert_eq!(
        text,
        r#"{"n":1,"at":"2026-01-01T10:00:00Z","actor":{"kind":"cli","os_user":"root","host":"box"},"via":"cli","kind":"create","changes":[{"field":"url","before":null,"after":"/a"}]}"#
    );
    let back: Entry = serde_json::from_str(&text).expect("parse");
    assert_eq!(back, e);
}

#[test]
fn the_bound_keeps_the_last_entries_and_says_how_many_went() {
    assert_eq!(first_kept(1), 1);
    assert_eq!(first_kept(KEEP), 1);
    assert_eq!(first_kept(KEEP + 1), 2);
    assert_eq!(first_kept(1000), 1000 - KEEP + 1);
    let e = |n| Entry {
        n,
        at: "x".into(),
        actor: Actor::Outside { rev: None },
        via: None,
        rev: None,
        kind: Kind::Edit,
        changes: vec![],
        reverted_to: None,
    };
    let h = History {
        entries: (801..=1000).map(e).collect(),
    };
    assert_eq!(h.dropped(), 800);
    assert_eq!(h.get(801).map(|e| e.n), Some(801));
    assert_eq!(h.get(1000).map(|e| e.n), Some(1000));
    assert_eq!(h.get(800), None);
    assert_eq!(h.get(1001), None);
    assert_eq!(History::default().dropped(), 0);
}

/// A small deterministic generator: the same edits on every run.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self, below: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 33) % below
    }
}

/// One random edit of a followed field (never a delete).
fn random_edit(rng: &mut Lcg, d: &mut Document) {
    let value = rng.next(4);
    let field = Field::ALL[usize::try_from(rng.next(7)).unwrap_or(0)];
    let name = field.doc_name();
    if value == 0 && field != Field::Url {
        d.shift_remove(name);
        return;
    }
    let v = match field {
        Field::Inactive => json!(value.is_multiple_of(2)),
        Field::Rules => json!([{"url": format!("/r{value}"), "os": ["ios"]}]),
        _ => json!(format!("/{name}{value}")),
    };
    d.insert(name.into(), v);
}

/// Writes as a store would: an entry when one is due, the oldest dropped
/// past the bound. Returns each kept entry's document after it.
fn simulate(seed: u64, writes: u64) -> (History, Vec<(u64, Document)>, Document) {
    let mut rng = Lcg(seed);
    let mut d = doc(json!({"url": "/start", "inactive": false}));
    stamp_created(&mut d, t("2026-01-01T00:00:00Z"), &ann());
    let mut history = History::default();
    let mut states = vec![];
    let mut n = 1;
    history
        .entries
        .push(entry(n, None, &d, None, "now").expect("create"));
    states.push((n, d.clone()));
    for _ in 0..writes {
        let before = d.clone();
        random_edit(&mut rng, &mut d);
        stamp_changed(&mut d, t("2026-01-02T00:00:00Z"), &ann());
        if let Some(e) = entry(n + 1, Some(&before), &d, None, "now") {
            n += 1;
            history.entries.push(e);
            states.push((n, d.clone()));
        }
        let first = first_kept(n);
        history.entries.retain(|e| e.n >= first);
    }
    (history, states, d)
}

fn followed(d: &Document) -> Vec<(Field, Option<Value>)> {
    Field::ALL
        .into_iter()
        .map(|f| (f, f.value(d).cloned()))
        .collect()
}

#[test]
fn the_state_after_every_kept_entry_is_rebuilt_exactly() {
    for seed in 0..40 {
        let writes = if seed % 4 == 0 { 600 } else { 60 };
        let (history, states, now) = simulate(seed, writes);
        assert!(history.entries.len() as u64 <= KEEP);
        for (n, state) in &states {
            match history.get(*n) {
                Some(_) => {
                    let got = state_after(&history, *n, &now).expect("kept");
                    assert_eq!(got, followed(state), "seed {seed} entry {n}");
                    // And reverting there gives exactly that state.
                    let edit = revert_edit(&history, *n, &now).expect("revert");
                    let mut back = now.clone();
                    apply(&mut back, &edit);
                    assert_eq!(followed(&back), followed(state), "seed {seed} entry {n}");
                }
                None => assert!(matches!(
                    state_after(&history, *n, &now),
                    Err(RevertError::Dropped { .. })
                )),
            }
        }
    }
}

#[test]
fn a_revert_to_the_latest_entry_changes_nothing() {
    let (history, _, now) = simulate(7, 30);
    let last = history.entries.last().map(|e| e.n).expect("entries");
    assert_eq!(revert_edit(&history, last, &now), Ok(vec![]));
}

#[test]
fn bad_reverts_are_clear_errors() {
    let (history, _, now) = simulate(3, 400);
    let first = history.entries[0].n;
    let last = history.entries.last().map(|e| e.n).expect("entries");
    let err = revert_edit(&history, last + 1, &now).expect_err("beyond");
    assert_eq!(
        err,
        RevertError::NoEntry {
            n: last + 1,
            first,
            last
        }
    );
    assert_eq!(
        err.to_string(),
        format!(
            "entry {} does not exist; the link's history has entries {first} to {last}",
            last + 1
        )
    );
    assert_eq!(
        revert_edit(&history, 0, &now),
        Err(RevertError::Dropped { n: 0, first })
    );
    assert!(
        revert_edit(&history, 1, &now)
            .expect_err("dropped")
            .to_string()
            .starts_with("entry 1 was dropped: a link keeps its last 200 entries")
    );
    assert_eq!(
        revert_edit(&History::default(), 1, &now),
        Err(RevertError::NoHistory { n: 1 })
    );
}

#[test]
fn a_deleted_link_and_a_delete_entry_are_refused() {
    let mut d = doc(json!({"url": "/a", "inactive": false}));
    stamp_created(&mut d, t("2026-01-01T00:00:00Z"), &ann());
    let created = entry(1, None, &d, None, "now").expect("create");
    let mut gone = d.clone();
    crate::link::set_deleted(&mut gone, t("2026-01-02T00:00:00Z"));
    let deleted = entry(2, Some(&d), &gone, None, "now").expect("delete");
    let history = History {
        entries: vec![created, deleted],
    };
    assert_eq!(
        revert_edit(&history, 1, &gone),
        Err(RevertError::LinkDeleted)
    );
    // A tombstone made some other way, then undone by hand: entry 2 still
    // names a delete.
    let mut revived = gone.clone();
    revived.shift_remove("deleted_at");
    assert_eq!(
        revert_edit(&history, 2, &revived),
        Err(RevertError::TargetDeleted { n: 2 })
    );
}
