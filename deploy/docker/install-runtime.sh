#!/usr/bin/env bash
# The runtime stages' one RUN step: installs the packages stage.sh listed (and nothing they
# merely recommend), then adds the unprivileged user the server runs as (uid/gid 10001, no
# home, no shell) and the folder it keeps its data in (--data_dir: glossaries), which a volume
# mounted there inherits. Usage: install-runtime.sh PREFIX
set -euo pipefail
prefix="$1"
export DEBIAN_FRONTEND=noninteractive
apt-get update
# shellcheck disable=SC2046  # one package per line
apt-get install -y --no-install-recommends $(cat "$prefix/runtime-packages.txt")
rm -rf /var/lib/apt/lists/*
groupadd --system --gid 10001 transerve
useradd --system --uid 10001 --gid transerve --home-dir /nonexistent --no-create-home \
  --shell /usr/sbin/nologin transerve
install -d -o 10001 -g 10001 -m 0750 /var/lib/transerve
