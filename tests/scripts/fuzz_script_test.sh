#!/usr/bin/env bash
# scripts/fuzz against a stand-in for a libFuzzer binary (no sanitizer build needed):
#  1. a timeout whose input runs in time alone is starvation: the run goes on for the time left,
#     and the executions and seconds of both parts are counted;
#  2. a timeout whose input also fails alone is a finding: exit 1.
# usage: fuzz_script_test.sh PROJECT_SOURCE_DIR
set -euo pipefail
src="$1"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/build/fuzz"
echo fuzz_standin >"$work/build/fuzz/targets.txt"
printf '#!/usr/bin/env bash\nmkdir -p "$1/fuzz_standin"\n' >"$work/build/fuzz/fuzz_make_seeds"
# The stand-in: the first run stops at a timeout after 1000 executions, the next runs 500 in
# time; an input run alone (no -max_total_time) ends with $RERUN_STATUS.
cat >"$work/build/fuzz/fuzz_standin" <<'STANDIN'
#!/usr/bin/env bash
total="" prefix=""
for a in "$@"; do
  case "$a" in -max_total_time=*) total="${a#*=}" ;; -artifact_prefix=*) prefix="${a#*=}" ;; esac
done
[ -n "$total" ] || exit "$RERUN_STATUS"
count="$(cat "$STATE" 2>/dev/null || echo 0)"
echo $((count + 1)) >"$STATE"
echo "max_total_time $total"
if [ "$count" = 0 ]; then
  touch "${prefix}timeout-0123abcd"
  echo "==1== ERROR: libFuzzer: timeout after 10 seconds"
  echo "Test unit written to ${prefix}timeout-0123abcd"
  echo "stat::number_of_executed_units: 1000"
  exit 70
fi
echo "stat::number_of_executed_units: 500"
exit 0
STANDIN
chmod +x "$work/build/fuzz/fuzz_make_seeds" "$work/build/fuzz/fuzz_standin"
export STATE="$work/state" MEMWALL_SHARED_DIR="$work/no-shared"

fail() { echo "FAIL: $*" >&2; exit 1; }

# 1. Starvation: resumed.
RERUN_STATUS=0 "$src/scripts/fuzz" --no-build --build-dir "$work/build" --time 90 >"$work/out1" 2>&1 ||
  { cat "$work/out1" >&2; fail "a starved timeout failed the run"; }
logs="$work/build/logs"
[ "$(cat "$logs/fuzz_standin.runs")" = 1500 ] || fail "executions of both parts: $(cat "$logs/fuzz_standin.runs"), expected 1500"
grep -q 'max_total_time 90' "$logs/fuzz_standin.log" || fail "the first part did not get the whole time"
grep -qE 'max_total_time (8[0-9]|90)$' "$logs/fuzz_standin.log.2" || fail "the second part did not get the time left"
grep -q '1 run(s) resumed' "$logs/fuzz_standin.result" || fail "the result does not say the run was resumed"
seconds="$(cat "$logs/fuzz_standin.seconds")"
[ "$seconds" -lt 60 ] || fail "recorded $seconds s for a run that took a few"

# 2. A real timeout: a finding.
rm -f "$STATE"
if RERUN_STATUS=70 "$src/scripts/fuzz" --no-build --build-dir "$work/build" --time 90 >"$work/out2" 2>&1; then
  fail "a timeout that happens again alone passed"
fi
grep -q 'fuzz_standin: FAILED after 1000 executions (exit 70)' "$work/out2" || { cat "$work/out2" >&2; fail "no FAILED line"; }
[ "$(cat "$STATE")" = 1 ] || fail "the run went on after a finding"
echo "ok: a starved timeout resumes the run, a real one is a finding"
