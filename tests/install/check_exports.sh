#!/usr/bin/env bash
# libmemwall.so exports exactly the functions include/memwall.h declares with MW_API: every one
# (an app links against each), and nothing else (no C++ symbols: the ABI is the C API).
#   check_exports.sh LIBMEMWALL_SO MEMWALL_H
set -euo pipefail
lib="$1"
header="$2"
declared="$(grep -v '^#' "$header" | tr '\n' ' ' | grep -o 'MW_API [^;{]*(' | sed 's/($//; s/.*[ *]//' |
  sort -u)"
exported="$(nm -D --defined-only "$lib" | awk '{print $NF}' | sort -u)"
[ -n "$declared" ] || { echo "no MW_API declarations found in $header" >&2; exit 1; }
missing="$(comm -23 <(echo "$declared") <(echo "$exported"))"
extra="$(comm -13 <(echo "$declared") <(echo "$exported"))"
status=0
if [ -n "$missing" ]; then
  echo "declared in $header but not exported by $lib:" >&2
  echo "$missing" | sed 's/^/  /' >&2
  status=1
fi
if [ -n "$extra" ]; then
  echo "exported by $lib but not part of the C API:" >&2
  echo "$extra" | head -n 40 | sed 's/^/  /' >&2
  status=1
fi
# mw_*_default_params are inline in memwall.h since API 8 (they set struct_size to the app's
# sizeof); an exported one would return a struct of the library's size into the app's.
if echo "$exported" | grep -q '_default_params$'; then
  echo "$lib exports by-value *_default_params functions:" >&2
  echo "$exported" | grep '_default_params$' | sed 's/^/  /' >&2
  status=1
fi
soname="$(objdump -p "$lib" | awk '$1 == "SONAME" {print $2}')"
case "$soname" in
  libmemwall.so.[0-9]*) ;;
  *) echo "$lib: soname '$soname' is not versioned (libmemwall.so.N)" >&2; status=1 ;;
esac
[ "$status" = 0 ] && echo "$lib ($soname): exports the $(echo "$declared" | wc -l) functions of memwall.h and nothing else"
exit "$status"
