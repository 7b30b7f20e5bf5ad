#!/usr/bin/env bash
# clang-tidy (.clang-tidy's checks, warnings as errors) on the C++ files changed between BASE and
# HEAD that BUILD compiles (its compile_commands.json). Fails with the warnings.
#
# usage: tools/check-tidy.sh BUILD [BASE]     (BASE: a commit; default HEAD~1)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:?usage: check-tidy.sh BUILD [BASE]}
base=${2:-HEAD~1}
db=$build/compile_commands.json
[[ -f $db ]] || { echo "check-tidy: no $db (configure $build first)" >&2; exit 2; }
if ! git rev-parse -q --verify "$base^{commit}" >/dev/null; then
  # A shallow clone knows no older commit to compare with; checking every file instead would
  # take most of an hour.
  echo "check-tidy: $base is not in this clone (shallow?): no changed files to check; give a BASE it has"
  exit 0
fi
mapfile -t changed < <(git diff --name-only --diff-filter=d "$base" HEAD -- '*.cpp' '*.c')
mapfile -t compiled < <(python3 -c 'import json,sys,os
for e in json.load(open(sys.argv[1])): print(os.path.relpath(e["file"], os.getcwd()))' "$db" | sort -u)
files=()
for f in "${changed[@]}"; do
  printf '%s\n' "${compiled[@]}" | grep -qxF "$f" && files+=("$f")
done
if ((${#files[@]} == 0)); then
  echo "check-tidy: no compiled C/C++ file changed since $base"
  exit 0
fi
# One clang-tidy per file, as many at a time as there are CPUs (one file takes 10-40 s); each
# file's findings go to its own log under $build/tidy/.
rm -rf "$build/tidy"; mkdir -p "$build/tidy"
# The compile commands without GCC's precompiled header (the test executables'), which clang
# cannot read; each file includes what it needs itself.
python3 -c 'import json,re,sys
db=json.load(open(sys.argv[1]))
for e in db: e["command"]=re.sub(r" -Winvalid-pch| -include \S*cmake_pch\.hxx", "", e["command"])
json.dump(db, open(sys.argv[2], "w"))' "$db" "$build/tidy/compile_commands.json"
printf '%s\n' "${files[@]}" | xargs -P "$(nproc)" -I{} sh -c \
    'out="$2/tidy/$(echo "$1" | tr / _).log"; clang-tidy-14 -p "$2/tidy" --quiet "$1" >"$out" 2>&1 || echo "$1" >"$out.failed"' \
    sh {} "$build"
failed=()
for f in "${files[@]}"; do
  log="$build/tidy/$(echo "$f" | tr / _).log"
  [[ -e $log.failed ]] || continue
  failed+=("$f")
  grep -E "warning:|error:" -A3 "$log" >&2 || cat "$log" >&2
done
if ((${#failed[@]})); then
  echo "check-tidy: clang-tidy found problems in ${#failed[@]} of ${#files[@]} files changed since $base:" >&2
  printf '  %s\n' "${failed[@]}" >&2
  exit 1
fi
echo "check-tidy: ${#files[@]} files changed since $base pass clang-tidy"
