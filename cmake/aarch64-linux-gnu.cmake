# CMake toolchain file: cross-compile Folio for aarch64 Linux with Debian 12's
# g++-aarch64-linux-gnu against the arm64 multiarch -dev packages (/usr/lib/aarch64-linux-gnu)
# and the ISA-L sysroot that `scripts/install-deps.sh --arm64` unpacks (build/arm64-sysroot).
# Test binaries run through cmake/qemu-aarch64.sh (qemu-user, no binfmt needed): ctest and
# gtest_discover_tests use it as the cross-compiling emulator.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)

set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)

set(FOLIO_ARM64_SYSROOT "${CMAKE_CURRENT_LIST_DIR}/../build/arm64-sysroot")
get_filename_component(FOLIO_ARM64_SYSROOT "${FOLIO_ARM64_SYSROOT}" ABSOLUTE)

# Libraries and packages of the target only; programs (pkg-config, qemu) of the host.
# /usr holds the multiarch arm64 libraries beside the host's, and /usr/share the
# architecture-independent CMake packages (nlohmann_json, CLI11).
set(CMAKE_FIND_ROOT_PATH /usr/aarch64-linux-gnu ${FOLIO_ARM64_SYSROOT})
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE BOTH)

# pkg-config: only the arm64 .pc files (never the host's x86-64 ones).
set(ENV{PKG_CONFIG_LIBDIR}
    "${FOLIO_ARM64_SYSROOT}/usr/lib/aarch64-linux-gnu/pkgconfig:/usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig")
set(ENV{PKG_CONFIG_PATH} "")

set(CMAKE_CROSSCOMPILING_EMULATOR "${CMAKE_CURRENT_LIST_DIR}/qemu-aarch64.sh")
