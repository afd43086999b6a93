#!/usr/bin/env bash
# Installs exactly the Debian 12 packages hearth's build and tests need.
# Idempotent: packages already present are left alone; apt-get update runs once,
# only when something is missing. Uses sudo only when not root.
set -euo pipefail

PACKAGES=(
  build-essential cmake pkg-config git   # toolchain
  clang libclang-rt-14-dev               # libFuzzer target (clang -fsanitize=fuzzer)
  libssl-dev                             # SHA-256 (libcrypto EVP)
  nlohmann-json3-dev                     # JSON: CLI --json, HTTP API, reference files
  libcli11-dev                           # command-line parsing
  libcpp-httplib-dev                     # HTTP server
  zlib1g-dev libbrotli-dev               # tests only: gzip / deflate / br request-body bombs
  libtomlplusplus-dev                    # TOML configuration
  libhiredis-dev                         # the remote (Redis) cache tier's client
  redis-server                           # tests only: the remote tier's tests start their own
  libgtest-dev libgmock-dev              # unit tests
  librapidcheck-dev                      # property tests
  libsentencepiece-dev                   # tokenizer cross-check in tests only
  libbenchmark-dev                       # micro-benchmarks
  clang-format                           # make format
  curl                                   # server integration tests
  python3                                # scripts/attack-test.sh driver (standard library only)
  python3-jinja2                         # tests only: Jinja2 is the oracle of hearth's Jinja engine
  chromium                               # tests only: the web UI's browser test (puppeteer-core drives it)
  prometheus                             # tests only: /usr/bin/promtool lints GET /metrics
  haproxy                                # tests only: the scale-out balancer (deploy/haproxy.cfg)
)
# Server tests drive hearth with the official openai / @anthropic-ai/sdk clients:
# Node.js with npm. Machines that already ship a Node (e.g. a nodesource build that
# bundles npm) keep it; otherwise Debian's nodejs + npm are installed.
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  PACKAGES+=(nodejs npm)
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#PACKAGES[@]} packages already installed"
  exit 0
fi

echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
echo "install-deps: installed ${#missing[@]} package(s)"
