#!/usr/bin/env bash
# Issue 30's print bomb, measured against a real server.
# Usage: benches/print_bomb.sh SERVER_BINARY DB_MAKER_BINARY KEYLEN N QUERY
# e.g.   benches/print_bomb.sh target/release/qrtag old/qrtag 1039 1000 'poster=A4&ec=H'
# Uses ports 18080-18082 on loopback; needs curl, python3 and bc.
# Starts SERVER_BINARY serve (embedded store, console + REST API + DIDComm
# on, loopback), sends one POST /api/v1/print.pdf of N copies of a KEYLEN-
# character key with QUERY, and prints the server's CPU seconds for it
# (utime+stime from /proc/PID/stat before and after), the status, the
# wall time and the body size. The database is made by DB_MAKER_BINARY
# (main's, which still takes a 1,039-character key).
set -euo pipefail
BIN=$1; MAKER=$2; KEYLEN=$3; N=$4; QUERY=$5
D=$(mktemp -d)
export QRTAG_CONFIG=/dev/null
DB=$D/links.db
URL=http://127.0.0.1:18080
$MAKER --db $DB --public-url $URL --allow-local-url init >/dev/null
KEY=$(python3 -c "import sys; n=int(sys.argv[1]); s='/'.join(['k'*64]*20); print(s[:n].rstrip('/'))" $KEYLEN)
$MAKER --db $DB --public-url $URL --allow-local-url new https://example.com/ --key "$KEY" >/dev/null
APIKEY=$($MAKER --db $DB api-key create --name bomb --scope read)
$BIN --db $DB --public-url $URL --allow-local-url serve --listen 127.0.0.1:18080 \
  --admin-listen 127.0.0.1:18081 --api-listen 127.0.0.1:18082 --console \
  --didcomm-key-file $D/didcomm.json --access-log $D/access.log >$D/serve.log 2>&1 &
PID=$!
trap 'kill $PID 2>/dev/null; wait $PID 2>/dev/null; rm -rf $D' EXIT
for i in $(seq 100); do curl -sf http://127.0.0.1:18081/readyz >/dev/null && break; sleep 0.1; done
python3 -c "import json,sys; print(json.dumps({'keys':[sys.argv[1]]*int(sys.argv[2])}))" "$KEY" $N >$D/body.json
cpu() { awk '{print $14+$15}' /proc/$PID/stat; }
before=$(cpu)
out=$(curl -s -o $D/out -w '%{http_code} %{time_total} %{size_download}' \
  -H "Authorization: Bearer $APIKEY" -H 'Content-Type: application/json' \
  --data-binary @$D/body.json "http://127.0.0.1:18082/api/v1/print.pdf?$QUERY")
after=$(cpu)
echo "key=$KEYLEN n=$N query=$QUERY status/wall/bytes=$out cpu_s=$(echo "($after-$before)/$(getconf CLK_TCK)" | bc -l | cut -c1-6)"
[ "${out%% *}" = 200 ] || head -c 300 $D/out; echo
