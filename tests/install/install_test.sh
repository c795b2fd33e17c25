#!/usr/bin/env bash
# What an app developer does: `cmake --install` the build into a fresh prefix, then build every
# example in examples/ against the installed package alone, with pkg-config (cc, libmemwall.so)
# and with CMake (find_package(memwall): memwall::memwall and memwall::memwall_static), and run
# simple and generate on stories260K: greedy text must be llama.cpp's.
#   install_test.sh BUILD_DIR SOURCE_DIR SHARED_DIR
set -euo pipefail
build="$(cd "$1" && pwd)"
source_dir="$(cd "$2" && pwd)"
shared="$3"
model="$shared/models/stories260K.gguf"
[ -f "$model" ] || { echo "install_test: $model missing (../shared beside the project)" >&2; exit 1; }
# llama.cpp's greedy continuation (../shared/reference/cases/stories260K.once.json).
want="Once upon a time, there was a little girl named Lily."

work="$(mktemp -d "${TMPDIR:-/tmp}/memwall-install.XXXXXX")"
trap 'rm -rf "$work"' EXIT
prefix="$work/prefix"
cmake --install "$build" --prefix "$prefix" >"$work/install.log"

for f in include/memwall.h bin/memwall; do
  [ -e "$prefix/$f" ] || { echo "install_test: $f not installed" >&2; exit 1; }
done
pc="$(find "$prefix" -name memwall.pc)"
[ -n "$pc" ] || { echo "install_test: memwall.pc not installed" >&2; exit 1; }
libdir="$(dirname "$(dirname "$pc")")"
for f in libmemwall.a libmemwall.so cmake/memwall/memwall-config.cmake; do
  [ -e "$libdir/$f" ] || { echo "install_test: $libdir/$f not installed" >&2; exit 1; }
done

check_text() {  # NAME OUTPUT_FILE
  if ! grep -qF "$want" "$2"; then
    echo "install_test: $1 printed:" >&2
    cat "$2" >&2
    echo "install_test: expected it to contain: $want" >&2
    exit 1
  fi
}

# 1. pkg-config, as the README says: cc app.c $(pkg-config --cflags --libs memwall).
export PKG_CONFIG_PATH="$(dirname "$pc")"
flags="$(pkg-config --cflags --libs memwall)"
mkdir -p "$work/pc"
for src in "$source_dir"/examples/*.c; do
  name="$(basename "$src" .c)"
  # shellcheck disable=SC2086
  cc -std=c11 -Wall -Wextra -Werror "$src" $flags -o "$work/pc/$name"
done
for name in simple generate; do
  LD_LIBRARY_PATH="$libdir" "$work/pc/$name" "$model" "Once upon a time" 12 >"$work/pc/$name.out" \
    2>"$work/pc/$name.err" || { cat "$work/pc/$name.err" >&2; exit 1; }
  check_text "pkg-config $name" "$work/pc/$name.out"
  # It ran against the installed libmemwall.so.
  deps="$(LD_LIBRARY_PATH="$libdir" ldd "$work/pc/$name")"
  grep -F "$libdir/libmemwall.so" <<<"$deps" >/dev/null ||
    { echo "install_test: $name is not linked to $libdir/libmemwall.so" >&2; exit 1; }
done

# The static library by hand, as the README says.
# shellcheck disable=SC2046
cc -std=c11 "$source_dir/examples/simple.c" $(pkg-config --cflags memwall) "$libdir/libmemwall.a" \
  -lstdc++ -lm -pthread $(pkg-config --libs fmt libpcre2-8) -o "$work/pc/simple-static"
"$work/pc/simple-static" "$model" "Once upon a time" 12 >"$work/pc/simple-static.out" 2>/dev/null
check_text "static simple" "$work/pc/simple-static.out"

# 2. CMake: find_package(memwall), shared and static.
for variant in shared static; do
  opt=OFF
  [ "$variant" = static ] && opt=ON
  cmake -S "$source_dir/examples" -B "$work/cmake-$variant" -DCMAKE_PREFIX_PATH="$prefix" \
    -DCMAKE_BUILD_TYPE=Release -DMEMWALL_EXAMPLES_STATIC="$opt" >"$work/cmake-$variant.log" 2>&1 ||
    { cat "$work/cmake-$variant.log" >&2; exit 1; }
  cmake --build "$work/cmake-$variant" >>"$work/cmake-$variant.log" 2>&1 ||
    { cat "$work/cmake-$variant.log" >&2; exit 1; }
  for name in simple generate; do
    LD_LIBRARY_PATH="$libdir" "$work/cmake-$variant/$name" "$model" "Once upon a time" 12 \
      >"$work/cmake-$variant/$name.out" 2>"$work/cmake-$variant/$name.err" ||
      { cat "$work/cmake-$variant/$name.err" >&2; exit 1; }
    check_text "cmake ($variant) $name" "$work/cmake-$variant/$name.out"
  done
done
deps="$(ldd "$work/cmake-static/simple")"
if grep -F libmemwall <<<"$deps" >/dev/null; then
  echo "install_test: the static build links libmemwall.so" >&2
  exit 1
fi
echo "install_test: installed to a fresh prefix; $(ls "$source_dir"/examples/*.c | wc -l) examples built with pkg-config and CMake (shared, static); simple and generate print llama.cpp's text"
