# The Ratchet image: `ratchet worker` by default; docker-compose.yml also runs
# `ratchet codec-server` from it. Build: docker build -t ratchet .
#
# No image-wide HEALTHCHECK: the same image runs a worker (healthy when it polls its
# task queue), a codec server (healthy when its port answers) and one-shot
# commands, so each service declares its own check (see docker-compose.yml).

FROM python:3.11.13-slim-bookworm AS build
WORKDIR /src
COPY pyproject.toml README.md ./
COPY ratchet ./ratchet
# A wheel, not an editable install, and no extras: the runtime image gets no sources.
RUN pip wheel --no-cache-dir --no-deps --wheel-dir /wheels .

FROM python:3.11.13-slim-bookworm
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1
RUN groupadd --system --gid 10001 ratchet \
    && useradd --system --uid 10001 --gid ratchet --create-home --home-dir /home/ratchet ratchet
COPY --from=build /wheels /wheels
RUN pip install --no-cache-dir /wheels/*.whl && rm -rf /wheels
USER ratchet
WORKDIR /home/ratchet
# Connection settings come from TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE, TEMPORAL_API_KEY,
# TEMPORAL_TLS_* or a TEMPORAL_PROFILE in TEMPORAL_CONFIG_FILE (temporalio.envconfig).
CMD ["ratchet", "worker"]
