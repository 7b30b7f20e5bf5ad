#!/usr/bin/env bash
# run_checks.sh: boots the rdmaemu VM once (tools/vm/rxe-vm) and runs checks.sh in it against a
# build tree; the ctest test vm_run. The build tree is shared at its own path (read-only), this
# directory at /rdmaemu-tests. Results: OUTDIR/out/results.txt (one "VMCHECK name PASS|FAIL ..."
# line per check) and OUTDIR/out/<check>.log, read by check_result.sh (the vm_<check> tests).
#
# usage: run_checks.sh BUILD_DIR OUTDIR [CHECK...]
# Exits 0 when the VM ran the checks (whatever their verdicts: each vm_<check> test reports its
# own), non-zero with the reason when it could not (no qemu, no image, no boot, timeout).
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
rxe_vm=$here/../../tools/vm/rxe-vm
build=$(realpath "${1:?usage: run_checks.sh BUILD_DIR OUTDIR [CHECK...]}")
outdir=${2:?usage: run_checks.sh BUILD_DIR OUTDIR [CHECK...]}
shift 2
for f in lib/libibverbs.so.1 bin/rdmaemu bin/nicsimd; do
    [ -e "$build/$f" ] || { echo "run_checks.sh: $build/$f missing: build the project first"; exit 1; }
done
# Below vm_run's ctest TIMEOUT (1500 s), so that rxe-vm says why when the VM hangs.
export RDMAEMU_VM_TIMEOUT=${RDMAEMU_VM_TIMEOUT:-1200}
rm -rf "$outdir"
mkdir -p "$outdir"
echo "run_checks.sh: VM checks of $build (results in $outdir/out)"
"$rxe_vm" run --share "$build=$build" --share "$here=/rdmaemu-tests" \
    --share "$here/../integration=/rdmaemu-it" --out "$outdir" \
    "$here/checks.sh" "$build" "$@"
rc=$?
if [ ! -s "$outdir/out/results.txt" ]; then
    echo "run_checks.sh: FAILED: the VM did not run the checks (rxe-vm exit $rc; see above)."
    echo "  The VM tests need qemu-system-x86, debootstrap, linux-image-amd64 and e2fsprogs"
    echo "  (tools/install-deps.sh), root for the first image build, and network for debootstrap."
    exit 1
fi
echo "run_checks.sh: payload exit $rc; $(grep -c ' PASS ' "$outdir/out/results.txt") passed, $(grep -c ' FAIL ' "$outdir/out/results.txt") failed"
exit 0
