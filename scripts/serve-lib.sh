# Sourced by the manual server scripts (load-test.sh, soak.sh through it, attack-test.sh):
# a scratch directory removed at exit, and `hearth serve` started on a free loopback port.
#   serve_scratch NAME       sets $work (mktemp -d) and the EXIT trap
#   serve_start CONFIG ARGS  starts build/hearth serve --config CONFIG --port 0 ARGS...;
#                            sets $server_pid and $url, or prints the log and exits 2
HEARTH=${HEARTH:-./build/hearth}
work=""
server_pid=""

serve_cleanup() {
  if [[ -n $server_pid ]] && kill -0 "$server_pid" 2>/dev/null; then kill -KILL "$server_pid"; fi
  [[ -n $work ]] && rm -rf "$work"
}

serve_scratch() {
  work=$(mktemp -d "${TMPDIR:-/tmp}/hearth-$1.XXXXXX")
  trap serve_cleanup EXIT
}

serve_start() {
  local config=$1
  shift
  "$HEARTH" serve --config "$config" --port 0 "$@" >"$work/stdout" 2>"$work/server.log" &
  server_pid=$!
  url=""
  for _ in $(seq 1 300); do
    url=$(sed -n 's/.*listening on \(http:[^ ]*\).*/\1/p' "$work/stdout")
    [[ -n $url ]] && break
    kill -0 "$server_pid" 2>/dev/null || break
    sleep 0.1
  done
  if [[ -z $url ]]; then
    echo "$(basename "$0"): the server did not start:" >&2
    cat "$work/server.log" >&2
    exit 2
  fi
}
