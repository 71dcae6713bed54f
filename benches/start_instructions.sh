#!/bin/bash
# Instructions a qrtag server spends from its start to its first 302 at N
# links, counted by callgrind (steady on a shared machine, where CPU seconds
# swing): a full load from SQLite (no snapshot file; the count also holds the
# snapshot file's first save) and a restart from that file, for this build
# and for a baseline build, with the ratios.
#
#   benches/start_instructions.sh BASELINE_QRTAG [THIS_QRTAG] [N]
#
# THIS_QRTAG defaults to target/release/qrtag, N to 1000000;
# MODES="restart" counts only the restarts (the full loads that write their
# snapshot files then run without callgrind). Needs valgrind and curl; takes
# about ten minutes at 1M (callgrind runs ~50x slower).
set -euo pipefail
BASE=$1
NEW=${2:-target/release/qrtag}
N=${3:-1000000}
MODES=${MODES:-full restart}
DIR=$(mktemp -d /tmp/qrtag-start-instructions.XXXXXX)
trap 'rm -rf "$DIR"' EXIT
python3 - "$DIR/links.csv" "$N" <<'PY'
import sys
A = 'abcdefghijkmnopqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789'
with open(sys.argv[1], 'w') as f:
    f.write('key,url\n')
    for i in range(int(sys.argv[2])):
        n, k = i * 7919 + 12345, ''
        for _ in range(5):
            k += A[n % len(A)]
            n //= len(A)
        f.write(f"{k}{i:x},https://www.example.com/campaigns/spring/poster-{i:07}?src=qr\n")
PY
PROBE=$(sed -n "$((N / 2 + 2))p" "$DIR/links.csv" | cut -d, -f1)
"$BASE" --db "$DIR/seed.db" init >/dev/null 2>&1
"$BASE" --db "$DIR/seed.db" import "$DIR/links.csv" >/dev/null 2>&1

# count BIN TAG MODE [plain]: prints the instruction total of one start
# (with `plain`, starts without callgrind and prints nothing).
count() {
    local bin=$1 d=$DIR/$2 mode=$3 port pid
    local -a tool=(valgrind --tool=callgrind --callgrind-out-file="$d/cg.$mode")
    [ "${4:-}" = plain ] && tool=()
    if [ "$mode" = full ]; then mkdir -p "$d"; cp "$DIR/seed.db" "$d/q.db"; fi
    while :; do
        port=$((40000 + RANDOM % 10000))
        "${tool[@]}" "$bin" --db "$d/q.db" serve --listen 127.0.0.1:$port \
            --admin-listen 127.0.0.1:$((port + 10000)) --workers 1 2>"$d/stderr.$mode" &
        pid=$!
        local t0=$SECONDS
        until [ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/$PROBE")" = 302 ]; do
            kill -0 "$pid" 2>/dev/null || break
            [ $((SECONDS - t0)) -lt 1800 ] || { echo "no 302 from $bin" >&2; kill "$pid"; exit 1; }
            sleep 0.2
        done
        # A port taken by another process: try another.
        kill -0 "$pid" 2>/dev/null && break
        grep -q "Address already in use" "$d/stderr.$mode" || { cat "$d/stderr.$mode" >&2; exit 1; }
    done
    if [ "$mode" = full ]; then
        until [ -e "$d/q.db.snapshot" ]; do sleep 0.5; done
        sleep 2
    fi
    kill -TERM "$pid"
    wait "$pid" || true
    [ "${4:-}" = plain ] || grep -E '^(summary|totals):' "$d/cg.$mode" | head -1 | awk '{print $2}'
}

if [ "$MODES" = restart ]; then
    count "$BASE" base full plain
    count "$NEW" this full plain
fi
for mode in $MODES; do
    b=$(count "$BASE" base $mode)
    t=$(count "$NEW" this $mode)
    awk -v m=$mode -v b="$b" -v t="$t" -v n="$N" 'BEGIN {
        printf "%s: this build %.0f instructions a link, baseline %.0f; this / baseline %.2f\n", m, t / n, b / n, t / b }'
done
