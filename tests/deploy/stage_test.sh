#!/usr/bin/env bash
# The image's contents without Docker: deploy/docker/stage.sh gathers the binaries, the default
# model and the loadgen input into a prefix as the Dockerfile's build stage does, lists the
# runtime packages, and the staged server then serves the shipped model: health SERVING through
# the staged client, a real translation, SIGTERM -> exit 0.
# Usage: stage_test.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build="$1"
src="$2"
# shellcheck source=../testing/server_log.sh
. "$src/tests/testing/server_log.sh"
begin_server_test stage
prefix="$work/opt/transerve"
# The CUDA plugin's cuBLAS comes from the CUDA runtime image, as in the Dockerfile.
(cd "$src" && RUNTIME_PACKAGES_PROVIDED=/usr/local/cuda deploy/docker/stage.sh "$build" "$prefix") \
  || fail "stage.sh"
for f in bin/transerve-server bin/transerve-client bin/transerve-loadgen \
  models/en-de-small/config.json models/en-de-small/model.safetensors share/sentences.en; do
  [ -s "$prefix/$f" ] || fail "$f missing from the staged image"
done
for p in libc6 libgrpc++1.51 libprotobuf32 libopenblas0-pthread libprometheus-cpp-pull1.0; do
  grep -qx "$p" "$prefix/runtime-packages.txt" || fail "runtime package $p not listed"
done

"$prefix/bin/transerve-server" --model_dir="$prefix/models/en-de-small" --host=127.0.0.1 \
  --port=0 --metrics_port=-1 --http_port=-1 --num_threads=1 >"$work/server.log" 2>&1 &
server_pid=$!
wait_serving "$work/server.log" "$server_pid"
port="$SERVING_PORT"
[ "$("$prefix/bin/transerve-client" --target="127.0.0.1:$port" --health)" = SERVING ] \
  || fail "--health (the image's HEALTHCHECK)"
out="$("$prefix/bin/transerve-client" --target="127.0.0.1:$port" "The house is small.")" \
  || fail "translate"
[ -n "$out" ] || fail "empty translation"
echo "stage: the staged default model translates 'The house is small.' -> '$out'"
stop_server "$server_pid" "the server"
server_pid=""
echo "stage: OK"
