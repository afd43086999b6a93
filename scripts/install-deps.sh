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

# HEARTH_CUDA=1 (`make HEARTH_CUDA=1 ...`, docs/gpu.md): the CUDA backend needs nvcc. One
# already there (NVIDIA's /usr/local/cuda/bin/nvcc, or any on PATH) is used as it is.
# Otherwise Debian's nvidia-cuda-toolkit (11.8, in the non-free component) is installed:
# contrib and non-free are enabled for bookworm and bookworm-updates in their own sources
# file, so the default build stays free. Debian's nvcc 11.8 accepts GCC <= 11 as its host
# compiler (its /usr/lib/nvidia-cuda-toolkit/bin/g++ wrapper runs g++-11, and stops when
# only clang-14 is there), so g++-11 (bookworm main) comes with it; CMake passes it to nvcc
# as -ccbin (cmake/HearthCuda.cmake).
CUDA_SOURCES=/etc/apt/sources.list.d/hearth-cuda-nonfree.sources
enable_nonfree=0
if [ "${HEARTH_CUDA:-}" = "1" ]; then
  nvcc_path=""
  if [ -x /usr/local/cuda/bin/nvcc ]; then
    nvcc_path=/usr/local/cuda/bin/nvcc
  elif command -v nvcc >/dev/null 2>&1; then
    nvcc_path=$(command -v nvcc)
  fi
  if [ -z "$nvcc_path" ]; then
    PACKAGES+=(nvidia-cuda-toolkit g++-11)
    if ! dpkg-query -W -f='${Status}' nvidia-cuda-toolkit 2>/dev/null | grep -q "install ok installed"; then
      enable_nonfree=1
    fi
  else
    nvcc_major=$("$nvcc_path" --version | sed -n 's/.*release \([0-9]*\)\..*/\1/p')
    echo "install-deps: HEARTH_CUDA=1: using $nvcc_path (CUDA ${nvcc_major:-?})"
    # An nvcc before 12 takes GCC <= 11: Debian 12's g++ is 12, so g++-11 is its host compiler.
    if [ -n "$nvcc_major" ] && [ "$nvcc_major" -lt 12 ]; then PACKAGES+=(g++-11); fi
  fi
fi

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
if [ "$enable_nonfree" = "1" ] && [ ! -f "$CUDA_SOURCES" ]; then
  echo "install-deps: HEARTH_CUDA=1: enabling Debian's contrib and non-free components ($CUDA_SOURCES)"
  printf '%s\n' "# Added by hearth's scripts/install-deps.sh (HEARTH_CUDA=1): nvidia-cuda-toolkit" \
    "Types: deb" "URIs: http://deb.debian.org/debian" "Suites: bookworm bookworm-updates" \
    "Components: contrib non-free" "Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg" |
    $SUDO tee "$CUDA_SOURCES" >/dev/null
fi
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
echo "install-deps: installed ${#missing[@]} package(s)"
