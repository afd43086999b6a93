#!/usr/bin/env bash
# Attack measure of `hearth serve` for issue #19 (manual; not part of `make test`):
# a 16-stream streaming chat load on stories260K with a /health prober, run alone,
# then while 120 slowloris and 200 idle connections are held open (each reopened as
# soon as the server cuts it), then alone again. Prints one JSON line per run:
# completion throughput, load errors, /health p50/p99/max (the attacker's own line
# has its /health prober and how often the server cut its connections). Results go
# into docs/reliability.md.
#
# Usage: scripts/attack-test.sh [seconds=30] [streams=16] [slowloris=120] [idle=200]
# Env:   HEARTH_ATTACK_MODEL  GGUF to serve (default $HEARTH_SHARED_DIR/models/stories260K.gguf,
#                             HEARTH_SHARED_DIR defaulting to ../shared)
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=${1:-30}
streams=${2:-16}
slowloris=${3:-120}
idle=${4:-200}
model=${HEARTH_ATTACK_MODEL:-${HEARTH_SHARED_DIR:-../shared}/models/stories260K.gguf}
HEARTH=./build/hearth
[[ -x $HEARTH ]] || { echo "attack-test: $HEARTH is missing; run 'make build' first" >&2; exit 2; }
[[ -s $model ]] || { echo "attack-test: $model is missing" >&2; exit 2; }

source scripts/serve-lib.sh
serve_scratch attack

cat >"$work/attack.toml" <<TOML
[[models]]
id = "stories"
path = "$model"
n_seq_max = 8
TOML

serve_start "$work/attack.toml"
hostport=${url#http://}
host=${hostport%:*}
port=${hostport##*:}

echo "attack-test: $(date -u +%FT%TZ), $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "attack-test: $model at $url; $streams streams for ${seconds}s per run"
echo -n "baseline: "
python3 scripts/attack_driver.py "$host" "$port" stories "$seconds" "$streams" 0 0
# The attacker runs in its own process (no GIL shared with the load clients), starts
# 3 s early so its connections are all open, and ends 2 s after the load.
python3 scripts/attack_driver.py "$host" "$port" stories "$((seconds + 5))" 0 "$slowloris" "$idle" \
  >"$work/attacker.json" &
attacker_pid=$!
sleep 3
echo -n "attack:   "
python3 scripts/attack_driver.py "$host" "$port" stories "$seconds" "$streams" 0 0
wait "$attacker_pid"
echo -n "attacker: "
cat "$work/attacker.json"
# Once more without the attack: the spread between the two baselines is the noise
# (shared machine, the cache warming up) to read the difference against.
echo -n "baseline: "
python3 scripts/attack_driver.py "$host" "$port" stories "$seconds" "$streams" 0 0

kill -TERM "$server_pid"
wait "$server_pid" || true
server_pid=""
