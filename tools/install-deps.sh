#!/usr/bin/env bash
# Installs the Debian packages rdmaemu builds and tests with, when any is missing.
set -euo pipefail
packages=(
  cmake g++ make pkg-config
  libboost-dev libspdlog-dev catch2 libibverbs-dev librdmacm-dev libisal-dev
  ibverbs-utils ibverbs-providers perftest rdmacm-utils qperf python3-pyverbs sockperf iperf3
  tshark iproute2 procps strace
  # the larger stacks of real_stacks (docs/real-stacks.md): UCX, Open MPI over UCX, libfabric
  ucx-utils libucx0 openmpi-bin libopenmpi-dev netpipe-openmpi libfabric-bin
  python3-matplotlib linux-perf # bench/: its plots, and syscall counts that do not slow the app
  # the fuzz targets (make fuzz): clang with libFuzzer and the sanitizer runtimes; the format check
  clang-14 libclang-rt-14-dev clang-format-14
  # the Soft-RoCE VM of the vm tests (tools/vm/rxe-vm): qemu, its root filesystem, a kernel to boot
  qemu-system-x86 debootstrap linux-image-amd64 e2fsprogs
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
((${#missing[@]})) || exit 0
echo "rdmaemu: installing ${missing[*]}"
sudo=""
[ "$(id -u)" -eq 0 ] || sudo=sudo
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
