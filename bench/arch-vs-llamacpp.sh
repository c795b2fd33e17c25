#!/usr/bin/env bash
# memwall against llama.cpp on the synth presets of the architectures of issue 13 (gemma3,
# phi3, deepseek2, command-r, granite), same files, 2 threads:
#   1. prefill (pp) and decode (tg) speed, memwall bench and llama-bench alternating A/B/A/B
#      (ratios are what to read; the absolute numbers need a quiet machine);
#   2. KV cache bytes at 8192 tokens: memwall run --verbose against llama.cpp's load log
#      (llama-cli prints "llama_kv_cache: size = ..." for each cache it makes).
# Usage: bench/arch-vs-llamacpp.sh [DIR] [PRESET...]
#   DIR (default /tmp/memwall-arch) receives the synth files (~22 GB for all five, Q4_K_M).
#   LLAMA_BIN (default /work/peers/llama.cpp/build-native/bin), MEMWALL (default
#   build/release/bin/memwall), ROUNDS (default 2), PP (64), TG (16) override the settings.
set -euo pipefail
dir=${1:-/tmp/memwall-arch}
shift || true
presets=("$@")
[ ${#presets[@]} -eq 0 ] && presets=(gemma-3-4b phi-4-mini deepseek-v2-lite command-r-7b granite-3-2b)
llama=${LLAMA_BIN:-/work/peers/llama.cpp/build-native/bin}
memwall=${MEMWALL:-build/release/bin/memwall}
rounds=${ROUNDS:-2}
pp=${PP:-64}
tg=${TG:-16}
mkdir -p "$dir"

# shellcheck source=bench/speed-lib.sh
. "$(dirname "$0")/speed-lib.sh"
llama_speed1() { llama_speed "$llama" "$1" 2 "$pp" "$tg" 1; }
memwall_speed1() { memwall_speed "$memwall" "$1" 2 "$pp" "$tg" 1; }

printf '%-18s %10s %10s %8s %10s %10s %8s %12s %12s\n' preset "pp memwall" "pp llama" ratio \
    "tg memwall" "tg llama" ratio "KV@8192 mw" "KV@8192 llama"
for p in "${presets[@]}"; do
    f="$dir/$p.Q4_K_M.gguf"
    [ -f "$f" ] || "$memwall" synth --preset "$p" --type Q4_K_M -o "$f" >/dev/null
    mpp=() lpp=() mtg=() ltg=()
    for ((r = 0; r < rounds; ++r)); do  # alternate: memwall, llama.cpp, memwall, ...
        read -r a b < <(memwall_speed1 "$f")
        mpp+=("$a") mtg+=("$b")
        read -r a b < <(llama_speed1 "$f")
        lpp+=("$a") ltg+=("$b")
    done
    mean() { printf '%s\n' "$@" | awk '{ s += $1; n++ } END { printf "%.2f", n ? s / n : 0 }'; }
    m_pp=$(mean "${mpp[@]}"); l_pp=$(mean "${lpp[@]}")
    m_tg=$(mean "${mtg[@]}"); l_tg=$(mean "${ltg[@]}")
    kv_mw=$( ("$memwall" run -m "$f" -p "Hello" -n 1 -t 2 -c 8192 --verbose 2>&1 || true) |
        sed -n 's/.*KV cache \([0-9.]*\) MiB.*/\1 MiB/p' | head -1)
    # Each cache llama.cpp allocates logs its buffer, then "size = X MiB"; a first pass that
    # only measures logs buffers of 0.00 MiB, which are skipped. (-v: these are info lines.)
    kv_ll=$( (timeout 600 "$llama/llama-cli" -m "$f" -p "Hello" -n 1 -t 2 -c 8192 -st --simple-io \
        -v </dev/null 2>&1 || true) | awk '
        /llama_kv_cache: +CPU KV buffer size/ { armed = ($(NF - 1) + 0 > 0) }
        /llama_kv_cache: size = / && armed { for (i = 1; i <= NF; ++i) if ($i == "=") { s += $(i + 1); break } armed = 0 }
        END { printf "%.1f MiB", s }')
    printf '%-18s %10s %10s %8s %10s %10s %8s %12s %12s\n' "$p" "$m_pp" "$l_pp" \
        "$(awk -v a="$m_pp" -v b="$l_pp" 'BEGIN { printf "%.2f", b ? a / b : 0 }')" "$m_tg" "$l_tg" \
        "$(awk -v a="$m_tg" -v b="$l_tg" 'BEGIN { printf "%.2f", b ? a / b : 0 }')" "$kv_mw" "$kv_ll"
done
