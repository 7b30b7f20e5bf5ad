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
# The VM's tooling (qemu, debootstrap, a kernel) is installed here, for the VM tests only, not by
# every `make test` (tools/install-deps.sh vm; a machine without network says so below).
"$here/../../tools/install-deps.sh" vm || echo "run_checks.sh: could not install the VM tooling (tools/install-deps.sh vm)"
# Below vm_run's ctest TIMEOUT (1500 s), so that rxe-vm says why when the VM hangs.
export RDMAEMU_VM_TIMEOUT=${RDMAEMU_VM_TIMEOUT:-1200}
rm -rf "$outdir"
mkdir -p "$outdir"
echo "run_checks.sh: VM checks of $build (results in $outdir/out)"
# interop_tshark runs here, after the VM (below); the rest in the guest.
guest_checks=()
for c in "$@"; do [ "$c" = interop_tshark ] || guest_checks+=("$c"); done
"$rxe_vm" run --share "$build=$build" --share "$here=/rdmaemu-tests" \
    --share "$here/../integration=/rdmaemu-it" --out "$outdir" \
    "$here/checks.sh" "$build" ${guest_checks[@]+"${guest_checks[@]}"}
rc=$?
if [ ! -s "$outdir/out/results.txt" ]; then
    echo "run_checks.sh: FAILED: the VM did not run the checks (rxe-vm exit $rc; see above)."
    echo "  The VM tests need qemu-system-x86, debootstrap, linux-image-amd64 and e2fsprogs"
    echo "  (tools/install-deps.sh vm), root for the first image build, and network for debootstrap."
    exit 1
fi
# interop_tshark, on the host (the guest has no tshark): every capture of the exchanges with rxe1,
# ours (interop.pcap, interop6.pcap) and the veth's (veth.pcap, veth-lossy.pcap), decodes as RoCE
# from both sides with no malformed packet. Heuristic dissectors that claim short payloads
# (RPC-over-RDMA, CRTP for a 2-byte RDMA WRITE) are off, as docs/interop.md says.
if grep -q '^VMCHECK interop_counters ' "$outdir/out/results.txt"; then
    if ! command -v tshark >/dev/null; then
        echo "VMCHECK interop_tshark FAIL tshark is not installed on the host" >>"$outdir/out/results.txt"
    else
        off=(--disable-protocol rpcordma --disable-protocol crtp)
        verdict=PASS summary=""
        : >"$outdir/out/interop_tshark.log"
        # file, its address field, the two sides' addresses; the IPv4 exchange must be there,
        # the others when their check ran.
        for spec in "interop.pcap ip.src 10.214.0.1 10.214.0.2 required" \
            "interop6.pcap ipv6.src fd14::1 fd14::2 optional" \
            "veth.pcap ip.src 10.214.0.1 10.214.0.2 optional" \
            "veth-lossy.pcap ip.src 10.214.0.1 10.214.0.2 optional"; do
            read -r file field a b need <<<"$spec"
            pcap=$outdir/out/$file
            if [ ! -s "$pcap" ]; then
                [ "$need" = required ] && { verdict=FAIL; summary+="$file missing; "; }
                continue
            fi
            sources=$(tshark -r "$pcap" "${off[@]}" -Y infiniband -T fields -e "$field" 2>/dev/null | sort | uniq -c | tr -s ' ' | tr '\n' ';')
            bad=$(tshark -r "$pcap" "${off[@]}" -Y '_ws.malformed || _ws.expert.severity == error' 2>/dev/null | wc -l)
            echo "\$ tshark -r $pcap ${off[*]}: RoCE packets per source: $sources malformed: $bad" >>"$outdir/out/interop_tshark.log"
            summary+="$file: $sources malformed $bad; "
            { ((bad == 0)) && grep -q " $a\$\| $a;" <<<"$sources" && grep -q " $b\$\| $b;" <<<"$sources"; } || verdict=FAIL
        done
        if [ "$verdict" = PASS ]; then
            echo "VMCHECK interop_tshark PASS tshark decodes every packet of both sides, none malformed: $summary" >>"$outdir/out/results.txt"
        else
            echo "VMCHECK interop_tshark FAIL malformed packets, or a side or capture missing: $summary" >>"$outdir/out/results.txt"
        fi
    fi
fi
echo "run_checks.sh: payload exit $rc; $(grep -c ' PASS ' "$outdir/out/results.txt") passed, $(grep -c ' FAIL ' "$outdir/out/results.txt") failed"
exit 0
