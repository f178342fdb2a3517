#!/usr/bin/env bash
# Shared by the bench scripts (sourced): paired whole-process timings.
# Set `runs` before calling `pair`.

# one_run CMD...: wall nanoseconds of one bounded run on stdout; fails on error.
one_run() {
    local t0 t1
    t0=$(date +%s%N)
    timeout 60 "$@" >/dev/null 2>&1 || { echo "bench: failed or timed out: $*" >&2; return 1; }
    t1=$(date +%s%N)
    echo $((t1 - t0))
}

# pair NAME_A NAME_B ::: A... ::: B...   (`:::` separates: commands may contain `--`)
pair() {
    local name_a="$1" name_b="$2"
    shift 2
    [ "$1" = ":::" ] && shift
    local a=() b=()
    while [ "$1" != ":::" ]; do a+=("$1"); shift; done
    shift
    b=("$@")
    one_run "${a[@]}" >/dev/null
    one_run "${b[@]}" >/dev/null
    local ta=() tb=()
    for _ in $(seq "$runs"); do
        ta+=("$(one_run "${a[@]}")")
        tb+=("$(one_run "${b[@]}")")
    done
    python3 - "$name_a" "$name_b" "${ta[*]}" "${tb[*]}" <<'EOF'
import statistics, sys
na, nb, ta, tb = sys.argv[1], sys.argv[2], sys.argv[3].split(), sys.argv[4].split()
ta = [int(x) / 1e6 for x in ta]
tb = [int(x) / 1e6 for x in tb]
ma, mb = statistics.median(ta), statistics.median(tb)
pr = statistics.median(a / b for a, b in zip(ta, tb))
print(f"| {na} | {ma:.1f} ms | {nb} | {mb:.1f} ms | {ma / mb:.3f} | {pr:.3f} |")
EOF
}

