# The schedstream image: the `schedstream` command (worker, db upgrade, replay, produce).
#   docker build -t schedstream .   then e.g.   docker run --rm schedstream --help
# docker-compose.yml builds it for its `migrate` and `worker` services.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

# Runs unprivileged; its home is the working directory, which holds the worker's local state
# (SCHEDSTREAM_DATA_DIR, default .schedstream) and so must be writable by it.
RUN useradd --system --uid 10001 --create-home --home-dir /var/lib/schedstream schedstream

# Only what the package is built from (pyproject.toml's packages: domain, services, migrations);
# every dependency ships manylinux wheels, so no compiler is needed.
COPY pyproject.toml README.md /src/
COPY domain /src/domain
COPY services /src/services
COPY migrations /src/migrations
RUN pip install /src && rm -rf /src

USER schedstream
WORKDIR /var/lib/schedstream
# The worker's /metrics, /healthz, /readyz and status page, with SCHEDSTREAM_METRICS_ADDR=0.0.0.0:9090.
EXPOSE 9090
ENTRYPOINT ["schedstream"]
CMD ["--help"]
