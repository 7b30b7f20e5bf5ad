#!/usr/bin/env bash
# owner_only: a set of hosts' files and sockets reach only their owner, and so do its NICs.
# - Under umask 000, `rdmaemu up --hosts 2 --pcap DIR --pcap-limit 200000` makes the runtime and
#   host directories 0700, sockets, logs, pid files and the record 0600, DIR (and its new
#   parents) 0700 and the captures 0600. After an ib_write_bw each capture stopped before 200000
#   bytes at a whole record and its daemon said so once.
# - With the sockets' path opened to everyone by hand (dirs 0711, socket 0666), another uid's
#   connection is still closed by the daemon and logged with that uid and pid.
# - `rdmaemu up` refuses, naming the path and why: a runtime dir, host dir or --pcap dir that is
#   a symlink, another user's, or group/other-writable; a symlink planted as a host's log or
#   capture (its target is not touched). nicsimd itself refuses a log dir that is a symlink, a
#   socket dir of another user's and a writable capture dir.
# - A set run by uid 65534 with --allow-uid 4242: dirs 0711, socket 0666, record 0644; status
#   works for 65534 (the daemon's uid), root and 4242; uid 65533 is refused and logged.
#
# usage: owner_only.sh RDMAEMU
set -euo pipefail
if (($(id -u) != 0)); then
    echo "SKIP: needs root (gives directories to another uid, runs programs as others)"
    exit 77
fi
command -v setpriv >/dev/null || { echo "SKIP: setpriv (util-linux) not installed"; exit 77; }
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
emu_setup "$1"
NICSIMD=$(dirname "$RDMAEMU")/nicsimd
NOBODY=65534
# The system's python: one under root's home (pyenv) is out of other users' reach.
PYTHON_FOR_ALL=/usr/bin/python3
[[ -x $PYTHON_FOR_ALL ]] || fail "$PYTHON_FOR_ALL not found"

# The set another uid runs (section 4) is stopped and removed however the test ends; then lib.sh's
# cleanup runs with the test's exit status.
SHARED_TOP=""
cleanup_all() {
    local rc=$?
    set +e
    if [[ -n $SHARED_TOP && -d $SHARED_TOP ]]; then
        as_uid "$NOBODY" env RDMAEMU_RUNTIME_DIR="$SHARED_TOP/rt" timeout 20 \
            "$SHARED_TOP/bin/rdmaemu" down >/dev/null 2>&1
        rm -rf "$SHARED_TOP"
    fi
    (exit "$rc")
    emu_cleanup
}
trap cleanup_all EXIT

as_uid() {
    local uid=$1
    shift
    setpriv --reuid="$uid" --regid="$uid" --clear-groups "$@"
}

expect_mode() {
    local want=$1 path=$2 got
    got=$(stat -c %a "$path") || fail "cannot stat $path"
    [[ $got == "$want" ]] || fail "$path has mode $got, expected $want"
    ok "$(stat -c %A "$path") $path"
}

# Waits up to 3 s for a line containing the fixed string $2 in file $1.
wait_for_line() {
    local i
    for i in $(seq 30); do
        grep -qF -- "$2" "$1" 2>/dev/null && return 0
        sleep 0.1
    done
    return 1
}

# As uid $1, connects to the control socket $2 and expects the daemon to close it without a
# word; prints the client's pid. Fails otherwise.
expect_closed_by_daemon() {
    local uid=$1 sock=$2 out rc=0
    out=$(as_uid "$uid" "$PYTHON_FOR_ALL" - "$sock" <<'EOF'
import os, socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
s.connect(sys.argv[1])
s.settimeout(5)
print(os.getpid(), flush=True)
try:
    data = s.recv(4096)
except ConnectionResetError:
    data = b""
sys.exit(0 if data == b"" else 1)
EOF
    ) || rc=$?
    ((rc == 0)) || fail "uid $uid on $sock: the connection was not closed by the daemon (exit $rc; 1: it answered, other: connect failed or timed out): $out"
    echo "$out"
}

# ---- 1: modes under umask 000, capture limit ---------------------------------------------
step "umask 000: rdmaemu up --hosts 2 --pcap DIR --pcap-limit 200000"
PCAP_DIR=$EMU_WORK/captures/nested
umask 000
emu_up 2 --pcap "$PCAP_DIR" --pcap-limit 200000
umask 022
R=$RDMAEMU_RUNTIME_DIR
expect_mode 700 "$R"
expect_mode 600 "$R/hosts"
for h in 1 2; do
    expect_mode 700 "$R/host$h"
    expect_mode 600 "$R/host$h/nicsimd.sock"
    expect_mode 600 "$R/host$h/nicsimd.log"
    expect_mode 600 "$R/host$h/nicsimd.pid"
    expect_mode 600 "$PCAP_DIR/host$h.pcap"
done
expect_mode 700 "$EMU_WORK/captures"
expect_mode 700 "$PCAP_DIR"

step "another uid, with the path to the socket opened by hand, is refused by the daemon itself"
chmod 0711 "$R" "$R/host1"
chmod 0666 "$R/host1/nicsimd.sock"
pid=$(expect_closed_by_daemon "$NOBODY" "$R/host1/nicsimd.sock")
want="control connection from uid $NOBODY (pid $pid) refused"
wait_for_line "$R/host1/nicsimd.log" "$want" ||
    fail "host 1's log does not say '$want': $(tail -n 5 "$R/host1/nicsimd.log")"
ok "uid $NOBODY's connection closed; host 1's log: $(grep -F -- "$want" "$R/host1/nicsimd.log")"
chmod 0700 "$R" "$R/host1"

step "ib_write_bw fills the captures past --pcap-limit 200000"
emu_perftest 1 60 ib_write_bw -n 20
timeout 30 "$RDMAEMU" down || fail "rdmaemu down exited $?"
for h in 1 2; do
    pcap=$PCAP_DIR/host$h.pcap
    size=$(stat -c %s "$pcap")
    records=$(python3 - "$pcap" <<'EOF'
import struct, sys
d = open(sys.argv[1], "rb").read()
at, n = 0, 0
assert struct.unpack("<I", d[:4])[0] == 0x0A0D0D0A  # pcapng, little-endian
while at + 12 <= len(d):
    btype, blen = struct.unpack("<II", d[at:at + 8])
    if blen < 12 or at + blen > len(d):
        break
    n += btype == 6  # Enhanced Packet Blocks
    at += blen
print(n if at == len(d) else -1)
EOF
    )
    ((size <= 200000 && size > 150000)) ||
        fail "host$h.pcap is $size bytes: expected a capture stopped just below 200000"
    ((records > 0)) || fail "host$h.pcap does not end at a whole record ($records)"
    log=$R/host$h/nicsimd.log
    n=$(grep -cF "capture limit of 200000 bytes reached" "$log" || true)
    ((n == 1)) || fail "host $h's log says 'capture limit of 200000 bytes reached' $n times, expected once"
    ok "host$h.pcap: $size bytes, $records whole records; logged once: $(grep -F "capture limit" "$log")"
done

# ---- 2: rdmaemu up refuses unsafe directories and planted links ------------------------------
# expect_up_refused LABEL TEXT RUNTIME [up options]: `rdmaemu up --hosts 1` in RUNTIME exits
# non-zero and says TEXT.
expect_up_refused() {
    local label=$1 text=$2 runtime=$3 rc=0
    shift 3
    RDMAEMU_RUNTIME_DIR=$runtime timeout 30 "$RDMAEMU" up --hosts 1 "$@" \
        >"$EMU_WORK/refused.out" 2>&1 || rc=$?
    if ((rc == 0)); then
        RDMAEMU_RUNTIME_DIR=$runtime timeout 20 "$RDMAEMU" down >/dev/null 2>&1 || true
        fail "$label: rdmaemu up started the hosts; expected a refusal saying '$text'"
    fi
    grep -qF -- "$text" "$EMU_WORK/refused.out" ||
        fail "$label: rdmaemu up exited $rc without saying '$text': $(cat "$EMU_WORK/refused.out")"
    ok "$label: exit $rc: $(grep -F -- "$text" "$EMU_WORK/refused.out" | head -n 1)"
}

# A new runtime dir of ours for one case.
fresh() {
    mkdir -m 0700 "$EMU_WORK/$1"
    echo "$EMU_WORK/$1"
}

step "runtime directories"
real=$(fresh rt-real)
ln -s "$real" "$EMU_WORK/rt-link"
expect_up_refused "runtime dir is a symlink" \
    "$EMU_WORK/rt-link is a symbolic link (to $real)" "$EMU_WORK/rt-link"
d=$(fresh rt-foreign)
chown "$NOBODY:$NOBODY" "$d"
expect_up_refused "runtime dir of another user" "$d belongs to uid $NOBODY, not to uid 0" "$d"
d=$(fresh rt-open)
chmod 0777 "$d"
expect_up_refused "runtime dir writable by others" \
    "$d is writable by group or others (mode 0777)" "$d"

step "host directories"
d=$(fresh host-link)
mkdir -m 0700 "$d/elsewhere"
ln -s "$d/elsewhere" "$d/host1"
expect_up_refused "host dir is a symlink" "$d/host1 is a symbolic link (to $d/elsewhere)" "$d"
d=$(fresh host-foreign)
mkdir -m 0700 "$d/host1"
chown "$NOBODY:$NOBODY" "$d/host1"
expect_up_refused "host dir of another user" "$d/host1 belongs to uid $NOBODY" "$d"
d=$(fresh host-open)
mkdir -m 0700 "$d/host1"
chmod 0770 "$d/host1"
expect_up_refused "host dir writable by its group" \
    "$d/host1 is writable by group or others (mode 0770)" "$d"

step "--pcap directories"
mkdir -m 0700 "$EMU_WORK/pcap-real"
ln -s "$EMU_WORK/pcap-real" "$EMU_WORK/pcap-link"
expect_up_refused "--pcap dir is a symlink" \
    "refusing the --pcap directory: $EMU_WORK/pcap-link is a symbolic link" \
    "$(fresh pcap-case1)" --pcap "$EMU_WORK/pcap-link"
mkdir -m 0700 "$EMU_WORK/pcap-foreign"
chown "$NOBODY:$NOBODY" "$EMU_WORK/pcap-foreign"
expect_up_refused "--pcap dir of another user" \
    "$EMU_WORK/pcap-foreign belongs to uid $NOBODY" "$(fresh pcap-case2)" \
    --pcap "$EMU_WORK/pcap-foreign"
mkdir -m 0777 "$EMU_WORK/pcap-open"
chmod 0777 "$EMU_WORK/pcap-open"
expect_up_refused "--pcap dir writable by others" \
    "$EMU_WORK/pcap-open is writable by group or others (mode 0777)" "$(fresh pcap-case3)" \
    --pcap "$EMU_WORK/pcap-open"

step "links planted as a host's log or capture: refused, their targets untouched"
echo "precious" >"$EMU_WORK/victim"
chmod 0600 "$EMU_WORK/victim"
d=$(fresh planted-log)
mkdir -m 0700 "$d/host1"
ln -s "$EMU_WORK/victim" "$d/host1/nicsimd.log"
expect_up_refused "host 1's log is a symlink" \
    "$d/host1/nicsimd.log is a symbolic link (to $EMU_WORK/victim)" "$d"
mkdir -m 0700 "$EMU_WORK/pcap-planted"
ln -s "$EMU_WORK/victim" "$EMU_WORK/pcap-planted/host1.pcap"
expect_up_refused "host1.pcap is a symlink (nicsimd refuses it)" \
    "$EMU_WORK/pcap-planted/host1.pcap is a symbolic link (to $EMU_WORK/victim)" \
    "$(fresh planted-pcap)" --pcap "$EMU_WORK/pcap-planted"
[[ $(cat "$EMU_WORK/victim") == precious && $(stat -c %a "$EMU_WORK/victim") == 600 ]] ||
    fail "the link's target was written or changed: $(stat -c %a "$EMU_WORK/victim") $(cat "$EMU_WORK/victim")"
ok "the target still holds 'precious', mode 600"

# ---- 3: nicsimd refuses on its own -------------------------------------------------------------
step "nicsimd started by hand: its log, socket and capture directories"
# expect_nicsimd_refused LABEL TEXT [nicsimd options]: exits non-zero (not by the timeout) and
# says TEXT on stderr.
UDP_PORT=$(python3 -c 'import socket; s = socket.socket(type=socket.SOCK_DGRAM); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
expect_nicsimd_refused() {
    local label=$1 text=$2 rc=0
    shift 2
    timeout 10 "$NICSIMD" --address 127.0.0.1 --udp-port "$UDP_PORT" "$@" \
        >"$EMU_WORK/nicsimd.out" 2>&1 || rc=$?
    ((rc != 0 && rc != 124)) || fail "$label: nicsimd exited $rc; expected a refusal saying '$text'"
    grep -qF -- "$text" "$EMU_WORK/nicsimd.out" ||
        fail "$label: nicsimd exited $rc without saying '$text': $(cat "$EMU_WORK/nicsimd.out")"
    ok "$label: exit $rc: $(grep -F -- "$text" "$EMU_WORK/nicsimd.out" | head -n 1)"
}
good=$(fresh nicsimd-good)
ln -s "$good" "$EMU_WORK/nicsimd-link"
expect_nicsimd_refused "log dir is a symlink" \
    "$EMU_WORK/nicsimd-link is a symbolic link (to $good)" \
    --socket "$good/s.sock" --log-file "$EMU_WORK/nicsimd-link/n.log"
d=$(fresh nicsimd-foreign)
chown "$NOBODY:$NOBODY" "$d"
expect_nicsimd_refused "socket dir of another user" \
    "refusing the control socket's directory: $d belongs to uid $NOBODY" \
    --socket "$d/s.sock" --log-file "$good/n.log"
d=$(fresh nicsimd-open)
chmod 0777 "$d"
expect_nicsimd_refused "capture dir writable by others" \
    "cannot capture: $d is writable by group or others (mode 0777)" \
    --socket "$good/s.sock" --log-file "$good/n.log" --pcap "$d/h.pcap"

# ---- 4: a set another uid runs, shared with one more uid ----------------------------------------
step "uid $NOBODY runs a set with --allow-uid 4242"
SHARED_TOP=$(mktemp -d "${TMPDIR:-/tmp}/rdmaemu-it-shared.XXXXXX")
chmod 0755 "$SHARED_TOP"
mkdir -m 0755 "$SHARED_TOP/bin"
cp "$RDMAEMU" "$NICSIMD" "$SHARED_TOP/bin/" # the build tree need not be readable by others
mkdir -m 0700 "$SHARED_TOP/rt"
chown "$NOBODY:$NOBODY" "$SHARED_TOP/rt"
S=$SHARED_TOP/rt
shared_rdmaemu() {
    local uid=$1
    shift
    as_uid "$uid" env RDMAEMU_RUNTIME_DIR="$S" timeout 30 "$SHARED_TOP/bin/rdmaemu" "$@"
}
rc=0
shared_rdmaemu "$NOBODY" up --hosts 1 --allow-uid 4242 >"$EMU_WORK/shared-up.out" 2>&1 || rc=$?
((rc == 0)) || fail "uid $NOBODY: rdmaemu up --hosts 1 --allow-uid 4242 exited $rc: $(cat "$EMU_WORK/shared-up.out")"
EMU_DAEMON_PIDS+=("$(cat "$S/host1/nicsimd.pid")")
expect_mode 711 "$S"
expect_mode 711 "$S/host1"
expect_mode 666 "$S/host1/nicsimd.sock"
expect_mode 644 "$S/hosts"
expect_mode 600 "$S/host1/nicsimd.log"
expect_mode 600 "$S/host1/nicsimd.pid"
for uid in "$NOBODY" 0 4242; do
    rc=0
    shared_rdmaemu "$uid" status >"$EMU_WORK/shared-status.out" 2>&1 || rc=$?
    ((rc == 0)) || fail "uid $uid: rdmaemu status of uid $NOBODY's set exited $rc: $(cat "$EMU_WORK/shared-status.out")"
    ok "uid $uid: status exits 0 (the daemon's uid, root, an --allow-uid one)"
done
rc=0
shared_rdmaemu 65533 status >"$EMU_WORK/shared-status.out" 2>&1 || rc=$?
((rc == 3)) || fail "uid 65533: rdmaemu status exited $rc, expected 3 (host down to it): $(cat "$EMU_WORK/shared-status.out")"
grep -qF "yours is 65533" "$EMU_WORK/shared-status.out" ||
    fail "uid 65533: status does not point at the uid check: $(cat "$EMU_WORK/shared-status.out")"
ok "uid 65533: status exits 3: $(grep -F "yours is" "$EMU_WORK/shared-status.out")"
pid=$(expect_closed_by_daemon 65533 "$S/host1/nicsimd.sock")
want="control connection from uid 65533 (pid $pid) refused: only uid 0 (root), $NOBODY (the daemon's), 4242 may use this NIC"
wait_for_line "$S/host1/nicsimd.log" "$want" ||
    fail "the shared set's log does not say '$want': $(tail -n 5 "$S/host1/nicsimd.log")"
ok "uid 65533 refused and logged: $(grep -F -- "(pid $pid)" "$S/host1/nicsimd.log")"
rc=0
shared_rdmaemu "$NOBODY" down >"$EMU_WORK/shared-down.out" 2>&1 || rc=$?
((rc == 0)) || fail "uid $NOBODY: rdmaemu down exited $rc: $(cat "$EMU_WORK/shared-down.out")"
ok "uid $NOBODY: rdmaemu down"
