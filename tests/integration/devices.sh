#!/usr/bin/env bash
# devices: the unmodified ibv_devices and ibv_devinfo -v see each host's own emu0: port ACTIVE,
# link layer Ethernet, and the host's own RoCE v2 GID (::ffff:<host address>); through
# LD_LIBRARY_PATH on hosts 1 and 2 and once through LD_PRELOAD over the system library. With no
# host up, ibv_devices lists no device and says why on stderr (mentions `rdmaemu up`). Last,
# `rdmaemu status` exits 0 with every host up and 3 once host 2's daemon is killed. The port's
# active MTU is 4096 on hosts on loopback, as `rdmaemu up` says and why, and what --mtu asks for.
#
# usage: devices.sh RDMAEMU LIBDIR
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
LIBDIR=$2
emu_setup "$1"

# Lines of `ibv_devices` that name a device: "    <name>\t<16 hex digits>".
device_lines() { grep -E '^[[:space:]]+[^[:space:]]+[[:space:]]+[0-9a-f]{16}[[:space:]]*$' "$1" || true; }

# ---- no host up --------------------------------------------------------------------------
step "no host up: ibv_devices with our library lists nothing and says why"
for host_env in unset 1; do
    rc=0
    if [[ $host_env == unset ]]; then
        env -u RDMAEMU_HOST LD_LIBRARY_PATH="$LIBDIR" ${RDMAEMU_SANITIZER_RUNTIME:+LD_PRELOAD="$RDMAEMU_SANITIZER_RUNTIME"} ibv_devices \
            >"$EMU_WORK/nohost.out" 2>"$EMU_WORK/nohost.err" || rc=$?
    else
        env RDMAEMU_HOST=1 LD_LIBRARY_PATH="$LIBDIR" ${RDMAEMU_SANITIZER_RUNTIME:+LD_PRELOAD="$RDMAEMU_SANITIZER_RUNTIME"} ibv_devices \
            >"$EMU_WORK/nohost.out" 2>"$EMU_WORK/nohost.err" || rc=$?
    fi
    echo "# RDMAEMU_HOST=$host_env: exit $rc; stdout:"
    cat "$EMU_WORK/nohost.out"
    echo "# stderr:"
    cat "$EMU_WORK/nohost.err"
    ((rc < 128)) || fail "ibv_devices with no host up (RDMAEMU_HOST=$host_env) died with exit $rc"
    [[ -z $(device_lines "$EMU_WORK/nohost.out") ]] ||
        fail "ibv_devices with no host up (RDMAEMU_HOST=$host_env) listed a device: $(device_lines "$EMU_WORK/nohost.out")"
    grep -q 'rdmaemu up' "$EMU_WORK/nohost.err" ||
        fail "ibv_devices with no host up (RDMAEMU_HOST=$host_env): stderr does not mention 'rdmaemu up' (expected an explanation why no device is listed); stderr was: $(cat "$EMU_WORK/nohost.err")"
    ok "no host up (RDMAEMU_HOST=$host_env): no device listed, stderr mentions 'rdmaemu up'"
done

# ---- two hosts ---------------------------------------------------------------------------
step "rdmaemu up --hosts 2"
emu_up 2
grep -qF "mtu:     4096 (the largest that fits lo's MTU of 65536" "$EMU_WORK/up.out" ||
    fail "rdmaemu up does not say its hosts on loopback get path MTU 4096, and why"

# check_host I OUT_DEVICES OUT_DEVINFO LABEL
check_host() {
    local h=$1 devs=$2 info=$3 label=$4
    local addr gid other other_addr
    addr=$(emu_host "$h" address)
    gid="::ffff:$addr"
    [[ $addr =~ ^127\.0\.[0-9]+\.$h$ ]] ||
        fail "status --json: host $h address is '$addr', expected 127.0.S.$h"
    [[ $(emu_host "$h" gid) == "$gid" ]] ||
        fail "status --json: host $h gid is '$(emu_host "$h" gid)', expected '$gid'"
    [[ $(emu_host "$h" device) == emu0 ]] ||
        fail "status --json: host $h device is '$(emu_host "$h" device)', expected emu0"

    local lines
    lines=$(device_lines "$devs")
    [[ $(echo "$lines" | grep -cE '^[[:space:]]+emu0[[:space:]]') == 1 && $(echo "$lines" | wc -l) == 1 ]] ||
        fail "$label host $h: ibv_devices should list exactly one device, emu0, with a 16-hex-digit GUID; got: $(cat "$devs")"
    ok "$label host $h: ibv_devices lists emu0"

    local want
    for want in '^hca_id:[[:space:]]+emu0$' \
        '^[[:space:]]+transport:[[:space:]]+InfiniBand \(0\)$' \
        '^[[:space:]]+state:[[:space:]]+PORT_ACTIVE \(4\)$' \
        '^[[:space:]]+phys_state:[[:space:]]+LINK_UP \(5\)$' \
        '^[[:space:]]+link_layer:[[:space:]]+Ethernet$' \
        "^[[:space:]]+active_mtu:[[:space:]]+$ACTIVE_MTU\$" \
        "^[[:space:]]+GID\\[ *0\\]:[[:space:]]+$(re_escape "$gid"), RoCE v2\$"; do
        grep -qE "$want" "$info" || fail "$label host $h: ibv_devinfo -v has no line matching /$want/"
        ok "$label host $h: ibv_devinfo -v matches /$want/"
    done
    # The other host's GID must not show up here.
    other=$((3 - h))
    other_addr=$(emu_host "$other" address)
    if grep -qF "::ffff:$other_addr," "$info"; then
        fail "$label host $h: ibv_devinfo -v shows host $other's GID ::ffff:$other_addr"
    fi
    ok "$label host $h: only its own GID"
}

run_tools() {
    local h=$1 label=$2
    shift 2
    local rc=0
    emu_run "$h" "$@" -- ibv_devices >"$EMU_WORK/devices.$h.$label" 2>&1 || rc=$?
    echo "# $label host $h: ibv_devices (exit $rc)"
    cat "$EMU_WORK/devices.$h.$label"
    ((rc == 0)) || fail "$label host $h: rdmaemu run --host $h $* -- ibv_devices exited $rc"
    rc=0
    emu_run "$h" "$@" -- ibv_devinfo -v >"$EMU_WORK/devinfo.$h.$label" 2>&1 || rc=$?
    echo "# $label host $h: ibv_devinfo -v (exit $rc)"
    cat "$EMU_WORK/devinfo.$h.$label"
    ((rc == 0)) || fail "$label host $h: rdmaemu run --host $h $* -- ibv_devinfo -v exited $rc"
    check_host "$h" "$EMU_WORK/devices.$h.$label" "$EMU_WORK/devinfo.$h.$label" "$label"
}

ACTIVE_MTU='4096 \(5\)' # on loopback, lo's MTU of 65536 fits the largest
for h in 1 2; do
    step "host $h through LD_LIBRARY_PATH"
    run_tools "$h" libpath
done

step "host 1 through LD_PRELOAD over the system libibverbs"
run_tools 1 preload --preload

step "rdmaemu status: exit 0 with every host up, 3 once one is down"
"$RDMAEMU" status >"$EMU_WORK/status.up" || fail "rdmaemu status exited $? with both hosts up"
ok "status exits 0 with both hosts up"
D2=$(emu_host 2 daemon_pid)
kill -KILL "$D2"
for i in $(seq 50); do # until the kill has landed
    rc=0
    "$RDMAEMU" status >"$EMU_WORK/status.down" || rc=$?
    ((rc == 0)) || break
    sleep 0.1
done
cat "$EMU_WORK/status.down"
((rc == 3)) || fail "rdmaemu status exited $rc with host 2 killed, expected 3"
grep -qE '^host 2 .* down' "$EMU_WORK/status.down" || fail "rdmaemu status does not say host 2 is down"
rc=0
"$RDMAEMU" status --json >/dev/null || rc=$?
((rc == 3)) || fail "rdmaemu status --json exited $rc with host 2 killed, expected 3"
ok "status (and --json) exit 3 and name host 2 down"

step "rdmaemu up --mtu 1024: the port's active MTU is what was asked"
"$RDMAEMU" down >/dev/null 2>&1 || true
emu_up 2 --mtu 1024
grep -qF "mtu:     1024 (--mtu)" "$EMU_WORK/up.out" || fail "rdmaemu up --mtu 1024 does not say it"
ACTIVE_MTU='1024 \(3\)'
run_tools 1 mtu1024
