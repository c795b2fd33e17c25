#!/usr/bin/env bash
# Prefill (pp) and decode (tg) speed of quantized files, memwall against llama.cpp, and optionally
# a second memwall binary (A/B of a kernel change), on the same files, 2 threads, alternating
# memwall, [memwall B,] llama.cpp, each round starting with the next of them. Prints per file the
# medians and the per-round ratios (median, min..max): ratios are what to read on a shared
# machine. On an oversubscribed machine llama.cpp's threads lose most (they wait on each other
# at every operation): THREADS=1 compares the kernels more fairly.
# Usage: bench/types-vs-llamacpp.sh FILE.gguf...
#   MEMWALL (default build/release/bin/memwall), MEMWALL_B (an older binary; unset: no A/B),
#   LLAMA_BIN (default /work/llama.cpp/build/bin), ROUNDS (3), PP (128), TG (16), THREADS (2),
#   REPS (3, repetitions inside each run). MEMWALL_ISA caps memwall's kernel set as usual.
# Making the files (a 1B dense and a MoE shape; llama-quantize names the types):
#   memwall synth --preset llama-3.2-1b --type F16 -o l1b-F16.gguf
#   llama-quantize l1b-F16.gguf l1b-IQ4_XS.gguf IQ4_XS    (IQ4_NL, Q4_K_M likewise)
#   memwall synth --preset moe-750m --type F16 -o moe-F16.gguf
#   llama-quantize moe-F16.gguf moe-MXFP4_MOE.gguf MXFP4_MOE
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=bench/speed-lib.sh
. bench/speed-lib.sh
memwall=${MEMWALL:-build/release/bin/memwall}
memwall_b=${MEMWALL_B:-}
llama=${LLAMA_BIN:-/work/llama.cpp/build/bin}
rounds=${ROUNDS:-3} pp=${PP:-128} tg=${TG:-16} threads=${THREADS:-2} reps=${REPS:-3}
[ $# -gt 0 ] || { sed -n '2,18p' "$0" >&2; exit 2; }
echo "pp $pp, tg $tg, $threads threads, $rounds rounds x $reps reps, ISA ${MEMWALL_ISA:-best}"
for f in "$@"; do
    mpp="" mtg="" bpp="" btg="" lpp="" ltg=""
    runs=(m l)
    [ -n "$memwall_b" ] && runs=(m b l)
    for ((r = 0; r < rounds; ++r)); do
        # Each round starts with the next program: none always runs first or after the same one.
        for ((k = 0; k < ${#runs[@]}; ++k)); do
            case ${runs[(r + k) % ${#runs[@]}]} in
                m) read -r a b < <(memwall_speed "$memwall" "$f" "$threads" "$pp" "$tg" "$reps")
                   mpp+=" $a" mtg+=" $b" ;;
                b) read -r a b < <(memwall_speed "$memwall_b" "$f" "$threads" "$pp" "$tg" "$reps")
                   bpp+=" $a" btg+=" $b" ;;
                l) read -r a b < <(llama_speed "$llama" "$f" "$threads" "$pp" "$tg" "$reps")
                   lpp+=" $a" ltg+=" $b" ;;
            esac
        done
    done
    echo "== $(basename "$f")"
    # shellcheck disable=SC2086
    printf '  tok/s medians: pp memwall %s llama %s%s; tg memwall %s llama %s%s\n' \
        "$(median $mpp)" "$(median $lpp)" "${memwall_b:+ B $(median $bpp)}" \
        "$(median $mtg)" "$(median $ltg)" "${memwall_b:+ B $(median $btg)}"
    printf '  memwall/llama.cpp: pp %s  tg %s  (median min max)\n' \
        "$(ratio_stats "$mpp" "$lpp")" "$(ratio_stats "$mtg" "$ltg")"
    if [ -n "$memwall_b" ]; then
        printf '  B/llama.cpp:       pp %s  tg %s\n' "$(ratio_stats "$bpp" "$lpp")" \
            "$(ratio_stats "$btg" "$ltg")"
        printf '  memwall/B:         pp %s  tg %s\n' "$(ratio_stats "$mpp" "$bpp")" \
            "$(ratio_stats "$mtg" "$btg")"
    fi
done
