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

ENV XSKY_CHROMIUM=/usr/bin/chromium \
    XSKY_HOME=/data \
    PYTHONUNBUFFERED=1
VOLUME ["/data"]
CMD ["python", "worker.py"]
