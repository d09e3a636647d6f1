# An image of `rollgym serve-env` for one env family (or all of them).
#
#   docker build -t rollgym-env:tools --build-arg FAMILY=tools .
#   docker build -t rollgym-env:web   --build-arg FAMILY=web .      # with Chromium for the web envs
#   docker run --rm -p 8000:8000 -e ROLLGYM_SERVE_TOKEN=secret rollgym-env:tools ToolWorld-v0
#
# or let rollgym start it: `rollgym serve-env ToolWorld-v0 --docker-image rollgym-env:tools`.
# FAMILY picks the pip extras and the Debian packages the family needs:
#   puzzles, tools, conversation: none beyond the server   search: bm25s   games: Stockfish, python-chess
#   math: the sandbox (bubblewrap) and math-verify   web: Chromium and Playwright
#   all: everything that installs on a CPU machine
# The MATH envs read their data from ROLLGYM_DATA_DIR: mount it (-v /data:/data -e ROLLGYM_DATA_DIR=/data).
FROM python:3.11-slim

ARG FAMILY=all
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1

RUN set -eux; \
    case "$FAMILY" in \
      web)   packages="chromium fonts-dejavu-core" ;; \
      games) packages="stockfish" ;; \
      math)  packages="bubblewrap" ;; \
      all)   packages="chromium fonts-dejavu-core stockfish bubblewrap" ;; \
      puzzles|tools|conversation|search) packages="" ;; \
      *) echo "Unknown FAMILY=$FAMILY; use puzzles, tools, conversation, search, games, math, web or all." >&2; exit 2 ;; \
    esac; \
    apt-get update; \
    apt-get install -y --no-install-recommends curl $packages; \
    rm -rf /var/lib/apt/lists/*

WORKDIR /opt/rollgym
COPY pyproject.toml README.md ./
COPY rollgym ./rollgym
COPY rollgym_verifiers ./rollgym_verifiers

RUN set -eux; \
    case "$FAMILY" in \
      puzzles|tools|conversation) extras="serve,mcp" ;; \
      search) extras="serve,mcp,search" ;; \
      games)  extras="serve,games" ;; \
      math)   extras="serve,mcp,math" ;; \
      web)    extras="serve,web" ;; \
      all)    extras="all" ;; \
    esac; \
    pip install ".[$extras]"

# rollgym's web envs launch the system Chromium (executable_path /usr/bin/chromium), so Playwright
# needs no browser download of its own.
RUN useradd --create-home --uid 1000 rollgym
USER rollgym

EXPOSE 8000
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s CMD curl -fsS http://127.0.0.1:8000/health || exit 1
ENTRYPOINT ["rollgym", "serve-env", "--host", "0.0.0.0", "--port", "8000"]
# The env ids to serve; none serves every registered id.
CMD []
