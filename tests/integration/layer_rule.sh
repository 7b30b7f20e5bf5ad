#!/usr/bin/env bash
# layer_rule: tools/check-layers.py, which the build runs over nicsim/, passes a tree whose
# folders include only those below them and refuses, with the offending line, an include that
# points up, one that points sideways, a file outside every folder and a rule over a folder not
# yet declared.
#
# usage: layer_rule.sh SOURCE_DIR
set -euo pipefail
CHECK=$1/tools/check-layers.py
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
WORK=$(mktemp -d "${TMPDIR:-/tmp}/rdmaemu-layers.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
T=$WORK/tree
mkdir -p "$T/base" "$T/left" "$T/right" "$T/top"
printf 'base:\nleft: base\nright: base\ntop: left right\n' >"$WORK/rules"
echo '#pragma once' >"$T/base/a.h"
printf '#include "base/a.h"\n#include "b.h"\n' >"$T/left/b.h"   # below, and beside itself
printf '#include "base/a.h"\n#include <vector>\n#include "emu/x.h"\n' >"$T/right/c.h"
printf '#include "left/b.h"\n#include "right/c.h"\n' >"$T/top/d.cpp" # through two folders

python3 "$CHECK" "$T" "$WORK/rules" "$WORK/ok" || fail "a tree that keeps the rule was refused"
[[ -f $WORK/ok ]] || fail "no stamp written for a tree that keeps the rule"

refused() { # refused WHAT EXPECTED-TEXT: the check must exit 1 and print the text
    local what=$1 want=$2 out
    rm -f "$WORK/ok"
    if out=$(python3 "$CHECK" "$T" "$WORK/rules" "$WORK/ok" 2>&1); then
        fail "$what was not refused"
    fi
    [[ ! -f $WORK/ok ]] || fail "$what: stamp written though refused"
    [[ $out == *"$want"* ]] || fail "$what: expected '$want' in: $out"
}

printf '#pragma once\n#include "top/d.cpp"\n' >"$T/base/up.h"
refused "an include that points up" "base/up.h:2: base/ includes top/d.cpp from top/, which is not below base/"
rm "$T/base/up.h"

echo '#include "right/c.h"' >"$T/left/e.cpp"
refused "an include that points sideways" "left/e.cpp:1: left/ includes right/c.h from right/"
rm "$T/left/e.cpp"

echo 'int main() {}' >"$T/loose.cpp"
refused "a file outside every folder" "loose.cpp: in no folder"
rm "$T/loose.cpp"

printf 'base:\nleft: base top\ntop: left\n' >"$WORK/rules"
refused "a rule over a folder not yet declared" "left is declared over top, which is not below it"
echo "layer_rule: ok"
