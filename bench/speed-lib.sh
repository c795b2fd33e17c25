# shellcheck shell=bash
# Shared by the bench scripts that put memwall beside llama.cpp: one measurement of each, and the
# statistics of the rounds (median, spread) and of the per-round ratios. Source it; needs awk and
# python3.

# "pp tg" tokens/s of one llama-bench run: llama_speed BIN_DIR MODEL THREADS PP TG REPS
llama_speed() {
    "$1/llama-bench" -m "$2" -t "$3" -p "$4" -n "$5" -r "$6" -o csv 2>/dev/null |
        awk -F, 'NR == 1 { for (i = 1; i <= NF; ++i) { gsub(/"/, "", $i); c[$i] = i } next }
            { gsub(/"/, ""); if ($c["n_prompt"] > 0) p = $c["avg_ts"]; else g = $c["avg_ts"] }
            END { print p, g }'
}

# "pp tg" tokens/s of one memwall bench run: memwall_speed MEMWALL MODEL THREADS PP TG REPS
memwall_speed() {
    "$1" bench -m "$2" -t "$3" -p "$4" -n "$5" -r "$6" --no-bandwidth --json 2>/dev/null |
        python3 -c 'import json,sys; r=json.load(sys.stdin)[0]; print(r["pp_tok_s"], r["tg_tok_s"])'
}

# "median min max" of the ratios a_i / b_i of two equally long lists of numbers (round i of A
# against round i of B, measured back to back): ratio_stats "a1 a2 ..." "b1 b2 ..."
ratio_stats() {
    python3 - "$1" "$2" <<'PY'
import statistics, sys
a = [float(v) for v in sys.argv[1].split()]
b = [float(v) for v in sys.argv[2].split()]
r = [x / y for x, y in zip(a, b) if y > 0]
print("%.2f %.2f %.2f" % (statistics.median(r), min(r), max(r)) if r else "- - -")
PY
}

# The median of a list of numbers.
median() {
    printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) printf "%.2f", v[(NR + 1) / 2];
        else printf "%.2f", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

# "median spread" (spread: max - min) of a list of numbers.
stats() {
    printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END {
        m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2; printf "%.2f %.2f\n", m, v[NR] - v[1] }'
}
