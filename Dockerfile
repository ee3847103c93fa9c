# kafkalite broker image, with the web console, Prometheus metrics and the Schema Registry on.
#   docker build -t kafkalite .
#   docker run -p 9092:9092 -p 127.0.0.1:8080:8080 -p 127.0.0.1:9404:9404 -p 127.0.0.1:8081:8081 \
#     -v kafkalite-data:/data kafkalite
# The log (docker logs) says where everything is:
#   kafkalite ready on 0.0.0.0:9092
#   ... console at http://localhost:8080/
#   ... metrics at http://localhost:9404/metrics (health: /health)
#   ... schema registry at http://localhost:8081/ (Confluent's REST API; schemas kept in the _schemas topic)
# Inside the container the broker listens on 0.0.0.0:9092 and advertises localhost:9092; set
# KAFKALITE_ADVERTISED_LISTENERS (e.g. PLAINTEXT://myhost:9092) when clients reach it by another name.
# KAFKALITE_CONSOLE_LISTEN / KAFKALITE_METRICS_LISTEN / KAFKALITE_SCHEMA_REGISTRY_LISTEN move the console,
# metrics and schema registry (set one empty to turn it off); the console can create/delete topics and reset
# offsets, the registry register and delete schemas: publish their ports on loopback only (as above), or set
# KAFKALITE_SCHEMA_REGISTRY_AUTHENTICATION_METHOD=BASIC to check HTTP Basic credentials against the broker's
# SASL users.
# Extra `kafkalite serve` options go after the image name (docker run ... kafkalite --log-level DEBUG).

# build stage: the wheel (gcc builds the produce validator's record walk, kafkalite/validation/_walk.c, and
# storage's streaming snappy decoder, storage/_snappy.c).
# The whole context is copied so the symlinks kafkalite_wire -> wire and kafkalite_storage -> storage,
# which give the folders their installed names, come along (see tools/rename_packages.py).
FROM python:3.11-slim AS build
RUN apt-get update && apt-get install -y --no-install-recommends gcc libc6-dev && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
RUN pip wheel --no-cache-dir --no-deps -w /wheels .

FROM python:3.11-slim
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    KAFKALITE_LISTENERS=PLAINTEXT://0.0.0.0:9092 \
    KAFKALITE_ADVERTISED_LISTENERS=PLAINTEXT://localhost:9092 \
    KAFKALITE_LOG_DIRS=/data \
    KAFKALITE_CONSOLE_LISTEN=0.0.0.0:8080 \
    KAFKALITE_METRICS_LISTEN=0.0.0.0:9404 \
    KAFKALITE_SCHEMA_REGISTRY_LISTEN=0.0.0.0:8081
COPY --from=build /wheels /wheels
# The import at the end fills the cache of attrs' generated methods (kafkalite/runtime/codecache.py) once, at
# build time, as root (site-packages is read-only for the broker's user): PYTHONDONTWRITEBYTECODE stops the
# broker from writing it, and without it every start compiles those methods again (~15 % of a start's work).
RUN pip install "$(echo /wheels/kafkalite-*.whl)[tools]" && rm -rf /wheels \
    && PYTHONDONTWRITEBYTECODE= python -c "from kafkalite.runtime.trio_import import import_trio; import_trio()" \
    && useradd --system --uid 1000 --home-dir /data kafkalite \
    && mkdir -p /data && chown kafkalite /data
USER kafkalite
WORKDIR /data
VOLUME ["/data"]
EXPOSE 9092 8080 9404 8081
STOPSIGNAL SIGTERM
# GET /health on the metrics port (503 while draining for shutdown); the broker's listener when metrics are off
HEALTHCHECK --interval=10s --timeout=5s --start-period=10s --retries=3 CMD ["kafkalite", "health", "--timeout", "3"]
ENTRYPOINT ["kafkalite", "serve"]
