# kafkalite broker image.
#   docker build -t kafkalite .
#   docker run -p 9092:9092 -v kafkalite-data:/data kafkalite
# Inside the container the broker listens on 0.0.0.0:9092 and advertises localhost:9092; set
# KAFKALITE_ADVERTISED_LISTENERS (e.g. PLAINTEXT://myhost:9092) when clients reach it by another name.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    KAFKALITE_LISTENERS=PLAINTEXT://0.0.0.0:9092 \
    KAFKALITE_ADVERTISED_LISTENERS=PLAINTEXT://localhost:9092 \
    KAFKALITE_LOG_DIRS=/data

WORKDIR /app
COPY pyproject.toml setup.py README.md ./
COPY wire ./wire
COPY storage ./storage
COPY kafkalite ./kafkalite
# gcc only to build the produce validator's record walk (kafkalite/validation/_walk.c), then removed
RUN apt-get update && apt-get install -y --no-install-recommends gcc libc6-dev \
    && pip install ".[codecs]" \
    && apt-get purge -y gcc libc6-dev && apt-get autoremove -y && rm -rf /var/lib/apt/lists/* \
    && useradd --system --uid 1000 --home-dir /data kafkalite \
    && mkdir -p /data && chown kafkalite /data

USER kafkalite
VOLUME ["/data"]
EXPOSE 9092
STOPSIGNAL SIGTERM
HEALTHCHECK --interval=10s --timeout=3s --start-period=10s --retries=3 \
    CMD python -c "import socket; socket.create_connection(('127.0.0.1', 9092), 2).close()"
ENTRYPOINT ["kafkalite", "serve"]
