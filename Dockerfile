# An xsky worker image: the project, its Python dependencies and Debian's Chromium.
FROM python:3.11-slim-bookworm

RUN apt-get update \
 && apt-get install -y --no-install-recommends chromium git \
 && rm -rf /var/lib/apt/lists/*

WORKDIR /app
COPY pyproject.toml README.md ./
COPY xsky ./xsky
COPY workflows ./workflows
COPY activities ./activities
COPY client ./client
COPY cli ./cli
COPY worker.py starter.py ./
RUN pip install --no-cache-dir .
# The compiled command watchdog (activities/sandbox/native.py), built here so the slim image
# needs no compiler at run time; without it every command would start a Python watchdog.
ENV XSKY_CACHE_DIR=/opt/xsky-cache
RUN apt-get update \
 && apt-get install -y --no-install-recommends gcc libc6-dev \
 && python -c "from activities.sandbox import native; assert native.compiled_watchdog()" \
 && apt-get purge -y --auto-remove gcc libc6-dev \
 && rm -rf /var/lib/apt/lists/*

ENV XSKY_CHROMIUM=/usr/bin/chromium \
    XSKY_HOME=/data \
    PYTHONUNBUFFERED=1
VOLUME ["/data"]
CMD ["python", "worker.py"]
