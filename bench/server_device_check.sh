#!/usr/bin/env bash
# The server under load on one device, for bench/device-check.sh: transerve-server on MODEL
# with --device=DEVICE (and its default dtype: float16 on a GPU), then transerve-loadgen closed
# loop at 64 and 256 calls in flight, greedy, outputs capped at 128 tokens. Reports go to OUT as
# JSON and the loadgen's table to stdout.
# Usage: bench/server_device_check.sh MODEL DEVICE OUT
#   DURATION=S per run (default 15); BIN: the binaries (default build/bin); PY: a python3 with
#   numpy and torch (default /usr/bin/python3).
set -euo pipefail
cd "$(dirname "$0")/.."
MODEL=$1
DEVICE=$2
OUT=$3
DURATION=${DURATION:-15}
BIN=${BIN:-build/bin}
PY=${PY:-/usr/bin/python3}
mkdir -p "$OUT"
SENTENCES=$OUT/sentences.txt
[ -f "$SENTENCES" ] || $PY bench/make_sentences.py --out "$SENTENCES"
PORT=$($PY -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')

"$BIN"/transerve-server --model_dir="$MODEL" --device="$DEVICE" --host=127.0.0.1 \
  --port="$PORT" --metrics_port=-1 --http_port=-1 --log_level=info > "$OUT/server_$DEVICE.log" 2>&1 &
server=$!
trap 'kill -TERM "$server" 2>/dev/null; wait "$server" 2>/dev/null || true' EXIT
up=""
for _ in $(seq 1 120); do
  if "$BIN"/transerve-client --target="127.0.0.1:$PORT" --health >/dev/null 2>&1; then
    up=yes
    break
  fi
  kill -0 "$server" 2>/dev/null || break
  sleep 0.5
done
if [ -z "$up" ]; then
  echo "server_device_check: the server did not come up (see $OUT/server_$DEVICE.log)" >&2
  exit 1
fi
grep -m1 -E "device (auto|cuda|cpu)" "$OUT/server_$DEVICE.log" || true
"$BIN"/transerve-loadgen --target="127.0.0.1:$PORT" --input="$SENTENCES" --order=random \
  --beam_size=1 --max_length=128 --deadline=120 --warmup=3 --duration="$DURATION" \
  --concurrency=64,256 --json="$OUT/server_$DEVICE.json"
