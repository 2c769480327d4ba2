#!/bin/sh
# Runs an aarch64 Linux binary on this (x86-64) machine under qemu-user: the cross build's
# CMAKE_CROSSCOMPILING_EMULATOR (ctest, test discovery) and the command that integration tests
# put in front of the binaries they start. No binfmt registration is needed.
#   FOLIO_QEMU_CPU   the CPU model to emulate (default: max = ARMv8.x with LSE, CRC32, SVE;
#                    cortex-a53 = ARMv8.0 without LSE atomics or SVE)
# The dynamic loader and every library come from Debian multiarch (libc6:arm64 and the -dev:arm64
# packages' libraries in /lib/aarch64-linux-gnu), one consistent set: QEMU_LD_PREFIX is "/".
# Not /usr/aarch64-linux-gnu: that cross-compiler loader (libc6-arm64-cross 2.36-8cross1) then
# loads the multiarch libc.so.6 (2.36-9+deb12u14), and a mismatched pair hangs every fork child.
# GoogleTest's "threadsafe" death tests (src/base/death_test_util.h) re-exec the test binary,
# which fails without binfmt (the child is an aarch64 binary that the x86-64 kernel cannot run:
# "Exec format error"); the "fast" style forks without exec.
# The model tests run a tenth of their default operations (src/base/test_model_ops.h; each suite
# keeps the floor that still makes its run hard enough): qemu-user translates every aarch64
# instruction, and CI runs every test under two CPUs (docs/cpu-dispatch.md lists what each suite
# ran). FOLIO_MODEL_OPS_DIVISOR=1 runs them in full.
export QEMU_LD_PREFIX=/
export GTEST_DEATH_TEST_STYLE=fast
export FOLIO_MODEL_OPS_DIVISOR="${FOLIO_MODEL_OPS_DIVISOR:-10}"
exec qemu-aarch64 -cpu "${FOLIO_QEMU_CPU:-max}" "$@"
