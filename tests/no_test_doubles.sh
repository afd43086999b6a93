#!/bin/sh
# Usage: no_test_doubles.sh TESTING_LIB ARTEFACT...
# Fails when a production library or binary (ARTEFACT) defines a symbol of a test double
# or test hook: those live in tests/testing/ (hearth_testing), linked by tests only.
# TESTING_LIB must match the same pattern, so a renamed double cannot make the check
# pass by matching nothing.
set -u
pattern='StubBackend|StubControl|stub_factory|FakeService|CacheTestPeer'
[ "$#" -ge 2 ] || { echo "usage: $0 TESTING_LIB ARTEFACT..." >&2; exit 2; }
defined() { nm -C --defined-only "$1" 2>/dev/null | grep -E "$pattern"; }

testing_lib=$1
shift
if [ -z "$(defined "$testing_lib")" ]; then
  echo "the pattern finds nothing in $testing_lib: update $0 to the doubles' names" >&2
  exit 1
fi
status=0
for f in "$@"; do
  if [ ! -f "$f" ]; then
    echo "missing artefact: $f" >&2
    status=1
    continue
  fi
  hits=$(defined "$f")
  if [ -n "$hits" ]; then
    echo "$f defines test-double symbols:" >&2
    echo "$hits" | head -20 >&2
    status=1
  fi
done
[ "$status" -eq 0 ] && echo "no test doubles in: $*"
exit "$status"
