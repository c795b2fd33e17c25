# Cross build for 64-bit ARM Linux (the CPUs of phones) with Debian's toolchain:
# g++-aarch64-linux-gnu, the arm64 multiarch libraries (libpcre2-dev:arm64, libgtest-dev:arm64;
# scripts/install-deps --test installs them) and qemu-user to run the results here.
#
# The aarch64 preset links executables statically (MEMWALL_STATIC), so qemu needs no arm64 loader
# or library path.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)

# Multiarch: the arm64 libraries and their CMake / pkg-config files are under
# /usr/lib/aarch64-linux-gnu; arch-independent headers (fmt, nlohmann-json) are the host's.
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)
set(ENV{PKG_CONFIG_LIBDIR} /usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig)
set(ENV{PKG_CONFIG_PATH} "")

# ctest (and gtest_discover_tests) run the test binaries under qemu-user with every feature qemu
# emulates (dotprod, i8mm, ...); scripts/test-aarch64 also runs them on a CPU model without.
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64-static;-cpu;max)
