#!/usr/bin/env bash
# The README's two commands on a fresh machine, timed.
#
# Clones the committed state of this repository into a temporary folder (with ../shared beside
# it when this checkout has one), creates an empty virtual environment, and runs the two
# commands of README.rst's "Quick start" exactly as written, one after the other, in the clone.
# Prints the wall time of each and where the logs are; exits non-zero if either fails.
#
# Usage:  bash benchmarks/fresh_install.sh [WORKDIR]
set -euo pipefail

repo="$(cd "$(dirname "$0")/.." && pwd)"
work="${1:-$(mktemp -d /tmp/lvgp_fresh.XXXXXX)}"
mkdir -p "$work"
git clone --quiet "$repo" "$work/sklearn_lvgp"
if [ -d "$repo/../shared" ]; then
    ln -sfn "$(cd "$repo/../shared" && pwd)" "$work/shared"
fi
python3 -m venv "$work/venv"
# shellcheck disable=SC1091
source "$work/venv/bin/activate"
export NUMBA_CACHE_DIR="$work/numba_cache"   # an empty numba cache, as on a new machine

mapfile -t commands < <(grep -E '^ {7}pip install ' "$work/sklearn_lvgp/README.rst" | sed 's/^ *//')
if [ "${#commands[@]}" -ne 2 ]; then
    echo "expected two commands in README.rst, found ${#commands[@]}" >&2
    exit 2
fi

cd "$work/sklearn_lvgp"
status=0
for i in 0 1; do
    log="$work/command$((i + 1)).log"
    echo "command $((i + 1)): ${commands[$i]}"
    start=$(date +%s)
    if bash -c "${commands[$i]}" >"$log" 2>&1; then rc=0; else rc=$?; status=1; fi
    end=$(date +%s)
    echo "  exit $rc, $((end - start)) s, log $log"
    tail -n 12 "$log" | sed 's/^/  | /'
done
exit $status
