#!/usr/bin/env bash
# README's first command: installs what is missing, builds Release, then runs transerve-server in
# the foreground on models/en-de-small, the shipped default model (gRPC on 50051, HTTP - the web
# page, LibreTranslate's API, the JSON API - on 5000, metrics on 9464).
# Extra arguments go to transerve-server, e.g. ./scripts/serve.sh --batching=static
# PORT, HTTP_PORT and METRICS_PORT override the ports.
set -euo pipefail
cd "$(dirname "$0")/.."

./scripts/setup.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release
cmake --build build -j"$(nproc)" --target transerve-server transerve-client

port="${PORT:-50051}"
metrics_port="${METRICS_PORT:-9464}"
http_port="${HTTP_PORT:-5000}"
model="models/en-de-small"
if [ ! -f "$model/config.json" ]; then
  echo "serve: $model is missing: this checkout is incomplete (the model is in the repository)" >&2
  exit 1
fi
name="$(basename "$model")"

cat <<MSG
serve: starting transerve-server: gRPC on port $port, metrics on http://localhost:$metrics_port/metrics
serve: open the translation page: http://localhost:$http_port/
serve: call it from another shell:
  build/bin/transerve-client --target=localhost:$port "Hello world." "How are you?"
  echo "Good morning." | build/bin/transerve-client --target=localhost:$port --stream --show_scores
  build/bin/transerve-client --target=localhost:$port --model=$name --beam_size=4 "Thank you."
  build/bin/transerve-client --target=localhost:$port --list_models
  curl -s localhost:$http_port/translate -H 'Content-Type: application/json' \\
    -d '{"q": "Hello world.", "source": "en", "target": "de"}'
  curl -sN localhost:$http_port/v1/translate/stream -d '{"texts": ["Hello. How are you?"]}'
  curl -s localhost:$metrics_port/metrics | grep ^transerve_
serve: Ctrl-C (SIGINT) or SIGTERM drains and stops it.
MSG
exec build/bin/transerve-server --model_dir="$model" --port="$port" \
  --metrics_port="$metrics_port" --http_port="$http_port" "$@"
