#!/usr/bin/env bash
# The thread curves of bench_scaling.py on a many-core machine, every part in one run.
#
# For a machine that is only lent for minutes (16 cores): each part runs under its own time
# limit, so one slow part cannot use up the others' time, and writes
# scaling_<part>_<LABEL>.json into OUT. The numba cache starts empty there, so each part's
# first (warm-up) round also compiles.
#
# It writes eleven JSON files, and the lent machine returns at most eight, so pack them there.
#
# Usage:  OUT=/some/folder bash benchmarks/device_scaling.sh
#         OUT=/tmp/s bash benchmarks/device_scaling.sh; tar -czf "$OUT/scaling.tgz" -C /tmp/s .
#         THREADS=1,2 LABEL=try bash benchmarks/device_scaling.sh   (a local dry run)
set -u
here="$(cd "$(dirname "$0")" && pwd)"
out="${OUT:-$here/results}"
threads="${THREADS:-1,2,4,8,16}"
label="${LABEL:-device16}"
cd "$here/.."
python -c "import os, numba, numpy; print('cpus', os.cpu_count(), 'numba', numba.__version__, \
'threading layer', numba.config.THREADING_LAYER, 'numpy', numpy.__version__)"

part() {  # part LIMIT_SECONDS ARGS...
    local limit=$1
    shift
    timeout "$limit" python benchmarks/bench_scaling.py --threads "$threads" --out "$out" \
        --label "$label" "$@" || echo "stopped: $* (exit $?)"
}

part 170 --part threads --n-rows 50000 --repeats 3
part 100 --part deepgp --deepgp-batches 10000 --repeats 5
part 100 --part dvmgp --n-rows 50000 --repeats 5
part 100 --part ldgd --n-rows 20000 --ldgd-batches 10000 --repeats 3
part 70 --part gpcde --repeats 5
part 60 --part chunks --n-rows 50000
# the baselines, in the same run: global steps that open numba parallel regions beside the
# passes, and unscented chunks through the point-set path (the code before either change)
part 110 --part threads --n-rows 50000 --repeats 3 --threads 1,16 --parallel-global-steps \
    --pointset-chunks --label "${label}_baseline"
part 60 --part chunks --n-rows 50000 --parallel-global-steps --pointset-chunks \
    --label "${label}_baseline"
part 60 --part deepgp --deepgp-batches 10000 --repeats 5 --parallel-global-steps \
    --label "${label}_baseline"
part 40 --part ceiling
