#!/usr/bin/env bash
# host_view: what programs that read sysfs and /dev themselves (UCX, rdma-core's tests,
# libfabric) find for an emulated host's device under `rdmaemu run` (docs/real-stacks.md):
# - the host's interface host<i> in the set's network namespace, holding its address first (as
#   `ip -j addr` shows it), with the MAC its node GUID is made from, up;
# - /sys/class/infiniband/emu0 with device/net/host<i> (the interface's own sysfs directory),
#   ports/1/gids/0 = the GID, gid_attrs/types/0 "RoCE v2", gid_attrs/ndevs/0 host<i>, node_guid,
#   state, link_layer in the kernel's formats; /sys/class/infiniband_verbs/uverbs0/ibdev;
# - /dev/infiniband/uverbs0: a character device the user may read and write;
# - programs keep their uid; hosts of the set reach each other over TCP on their addresses;
# - `rdmaemu run --no-namespaces` and a set without its namespace holder run as before (the
#   latter says so once on stderr); a nested `rdmaemu run` (mpirun on a host) gets its own host's
#   view; the machine's own /sys/class and /dev are untouched;
# - as root, the same for an unprivileged user's own set (a user namespace of theirs).
# usage: host_view.sh RDMAEMU
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
emu_setup "$1"

emu_up 2
grep -qE '^netdevs: host1\.\.host2 in the set' "$EMU_WORK/up.out" ||
    fail "rdmaemu up did not start the set's network namespace: $(cat "$EMU_WORK/up.out")"

# The view of host $1, as a program there sees it: key=value lines.
probe() {
    "$RDMAEMU" run --host "$1" -- sh -c '
        ib=/sys/class/infiniband/emu0
        echo "uid=$(id -u)"
        echo "net=$(ls $ib/device/net | tr "\n" " ")"
        echo "net_address=$(cat $ib/device/net/*/address)"
        echo "first_ip=$(ip -j addr show "$(ls $ib/device/net | head -1)" | python3 -c "import json,sys; print(json.load(sys.stdin)[0][\"addr_info\"][0][\"local\"])")"
        echo "operstate=$(cat /sys/class/net/host'"$1"'/operstate)"
        echo "gid0=$(cat $ib/ports/1/gids/0)"
        echo "type0=$(cat $ib/ports/1/gid_attrs/types/0)"
        echo "ndev0=$(cat $ib/ports/1/gid_attrs/ndevs/0)"
        echo "node_guid=$(cat $ib/node_guid)"
        echo "state=$(cat $ib/ports/1/state)"
        echo "link_layer=$(cat $ib/ports/1/link_layer)"
        echo "node_type=$(cat $ib/node_type)"
        echo "ibdev=$(cat /sys/class/infiniband_verbs/uverbs0/ibdev)"
        n=/dev/infiniband/uverbs0
        [ -c $n ] && [ -r $n ] && [ -w $n ] && echo "uverbs0=chr-rw"
        echo "classes=$(ls /sys/class | wc -l)"
    ' 2>"$EMU_WORK/probe$1.err"
}

field() { sed -n "s/^$2=//p" "$1"; }

step "each host's view"
for h in 1 2; do
    probe "$h" >"$EMU_WORK/view$h" || fail "rdmaemu run --host $h failed: $(cat "$EMU_WORK/probe$h.err")"
    cat "$EMU_WORK/view$h"
    v=$EMU_WORK/view$h
    addr=$(emu_host "$h" address)
    IFS=. read -r _ _ s i <<<"$addr"
    mac=$(printf '02:52:7f:00:%02x:%02x' "$s" "$i")
    guid=$(printf '0252:7fff:fe00:%02x%02x' "$s" "$i")
    gid=$(printf '0000:0000:0000:0000:0000:ffff:7f00:%02x%02x' "$s" "$i")
    [[ -z $(cat "$EMU_WORK/probe$h.err") ]] || fail "host $h: rdmaemu run said: $(cat "$EMU_WORK/probe$h.err")"
    [[ $(field "$v" uid) == $(id -u) ]] || fail "host $h: the program's uid is $(field "$v" uid), not $(id -u)"
    [[ $(field "$v" net) == "host$h " ]] || fail "host $h: device/net lists '$(field "$v" net)', expected host$h"
    [[ $(field "$v" net_address) == "$mac" ]] || fail "host $h: host$h's MAC is $(field "$v" net_address), expected $mac"
    [[ $(field "$v" first_ip) == "$addr" ]] || fail "host $h: ip addr shows $(field "$v" first_ip) first on host$h, expected $addr"
    [[ $(field "$v" operstate) == up ]] || fail "host $h: host$h is $(field "$v" operstate), not up"
    [[ $(field "$v" gid0) == "$gid" ]] || fail "host $h: gids/0 is $(field "$v" gid0), expected $gid"
    [[ $(field "$v" type0) == "RoCE v2" ]] || fail "host $h: gid_attrs/types/0 is '$(field "$v" type0)'"
    [[ $(field "$v" ndev0) == "host$h" ]] || fail "host $h: gid_attrs/ndevs/0 is '$(field "$v" ndev0)'"
    [[ $(field "$v" node_guid) == "$guid" ]] || fail "host $h: node_guid is $(field "$v" node_guid), expected $guid"
    [[ $(field "$v" state) == "4: ACTIVE" ]] || fail "host $h: port state is '$(field "$v" state)'"
    [[ $(field "$v" link_layer) == Ethernet ]] || fail "host $h: link_layer is '$(field "$v" link_layer)'"
    [[ $(field "$v" node_type) == "1: CA" ]] || fail "host $h: node_type is '$(field "$v" node_type)'"
    [[ $(field "$v" ibdev) == emu0 ]] || fail "host $h: infiniband_verbs/uverbs0/ibdev is '$(field "$v" ibdev)'"
    [[ $(field "$v" uverbs0) == chr-rw ]] || fail "host $h: /dev/infiniband/uverbs0 is no character device the user may read and write"
    ok "host $h: host$h holds $addr (MAC $mac), emu0's net device, GID and ndev; uverbs0 readable and writable; uid $(id -u)"
done
# Every class of the machine is still there, besides infiniband and infiniband_verbs.
machine_classes=$(ls /sys/class | wc -l)
extra=0
for c in infiniband infiniband_verbs; do [[ -e /sys/class/$c ]] || extra=$((extra + 1)); done
[[ $(field "$EMU_WORK/view1" classes) == $((machine_classes + extra)) ]] ||
    fail "the view has $(field "$EMU_WORK/view1" classes) classes in /sys/class, the machine $machine_classes (+$extra)"
[[ ! -e /dev/infiniband/uverbs0 || -c /dev/infiniband/uverbs0 ]] && [[ ! -e /sys/class/infiniband/emu0 ]] ||
    fail "the view leaked into the machine's /sys or /dev"
ok "the machine's /sys/class and /dev are untouched; the view keeps every class of theirs"

step "hosts reach each other over TCP on their addresses, inside the set's namespace"
a1=$(emu_host 1 address)
port=$(free_tcp_port)
"$RDMAEMU" run --host 1 -- python3 -c '
import socket, sys
s = socket.socket(); s.bind((sys.argv[1], int(sys.argv[2]))); s.listen(1)
c, peer = s.accept(); c.sendall(b"hello from host 1 to " + peer[0].encode())' "$a1" "$port" \
    >"$EMU_WORK/tcp.server" 2>&1 &
spid=$!
emu_bg_register "$spid"
wait_tcp_listen "$port" 20 "$spid" || fail "host 1's TCP server did not listen: $(cat "$EMU_WORK/tcp.server")"
got=$("$RDMAEMU" run --host 2 -- python3 -c '
import socket, sys
s = socket.create_connection((sys.argv[1], int(sys.argv[2]))); print(s.recv(100).decode())' "$a1" "$port")
wait "$spid" || fail "host 1's TCP server failed: $(cat "$EMU_WORK/tcp.server")"
[[ $got == "hello from host 1 to 127."* ]] || fail "host 2 got '$got' from host 1"
ok "host 2 -> host 1 over TCP: '$got'"

step "a nested rdmaemu run (a launcher on host 1 starting a program on host 2)"
nested=$("$RDMAEMU" run --host 1 -- "$RDMAEMU" run --host 2 -- sh -c \
    'cat /sys/class/infiniband/emu0/ports/1/gid_attrs/ndevs/0; ls /sys/class/infiniband; ls /dev/infiniband' 2>&1)
[[ $nested == $'host2\nemu0\nuverbs0' ]] || fail "nested run on host 2 saw: $nested"
ok "the nested run sees host 2's view only"

step "--no-namespaces: the machine's namespaces, as before"
plain=$("$RDMAEMU" run --host 1 --no-namespaces -- sh -c \
    'ls /sys/class/infiniband/emu0 2>&1 >/dev/null; readlink /proc/self/ns/net' 2>&1)
[[ $plain == *"No such file or directory"*"$(readlink /proc/self/ns/net)" ]] ||
    fail "--no-namespaces: $plain"
ok "--no-namespaces: no emu0 in sysfs, the machine's network namespace"

step "a set without its namespace holder: one line on stderr, the program runs"
mv "$RDMAEMU_RUNTIME_DIR/network" "$EMU_WORK/network.saved"
out=$("$RDMAEMU" run --host 1 -- ibv_devices 2>"$EMU_WORK/fallback.err")
mv "$EMU_WORK/network.saved" "$RDMAEMU_RUNTIME_DIR/network"
cat "$EMU_WORK/fallback.err"
[[ $(wc -l <"$EMU_WORK/fallback.err") == 1 ]] &&
    grep -q "running without host 1's net device and /dev/infiniband node" "$EMU_WORK/fallback.err" ||
    fail "the fallback said: $(cat "$EMU_WORK/fallback.err")"
[[ $out == *emu0* ]] || fail "ibv_devices without the namespaces: $out"
ok "fallback: one line on stderr, ibv_devices lists emu0"

if [[ $(id -u) == 0 ]] && command -v setpriv >/dev/null; then
    step "an unprivileged user's own set (uid 65534, a user namespace of theirs)"
    user_dir=$(mktemp -d /tmp/rdmaemu-it-user.XXXXXX)
    chown 65534:65534 "$user_dir"
    as_user() {
        setpriv --reuid=65534 --regid=65534 --clear-groups \
            env RDMAEMU_RUNTIME_DIR="$user_dir/rt" HOME="$user_dir" "$@"
    }
    rc=0
    as_user "$RDMAEMU" up --hosts 2 >"$EMU_WORK/user_up.out" 2>&1 || rc=$?
    cat "$EMU_WORK/user_up.out"
    user_view=""
    if ((rc == 0)); then
        user_view=$(as_user "$RDMAEMU" run --host 2 -- sh -c \
            'id -u; cat /sys/class/infiniband/emu0/ports/1/gid_attrs/ndevs/0; [ -c /dev/infiniband/uverbs0 ] && [ -w /dev/infiniband/uverbs0 ] && echo rw; ibv_devices | grep -c emu0' 2>&1) || rc=$?
    fi
    as_user "$RDMAEMU" down >/dev/null 2>&1 || true
    rm -rf "$user_dir"
    ((rc == 0)) || fail "uid 65534's set: exit $rc: $user_view"
    grep -q '^netdevs: host1\.\.host2' "$EMU_WORK/user_up.out" ||
        fail "uid 65534's set has no network namespace: $(cat "$EMU_WORK/user_up.out")"
    [[ $user_view == $'65534\nhost2\nrw\n1' ]] || fail "uid 65534's program on host 2 saw: $user_view"
    ok "uid 65534: its programs keep uid 65534 and see host2, uverbs0 and emu0"
fi
