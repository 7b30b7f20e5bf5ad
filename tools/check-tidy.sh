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
failed=()
for f in "${files[@]}"; do
  clang-tidy-14 -p "$build" --quiet "$f" >"$build/tidy.out" 2>&1 || { failed+=("$f"); grep -E "warning:|error:" -A3 "$build/tidy.out" >&2 || cat "$build/tidy.out" >&2; }
done
if ((${#failed[@]})); then
  echo "check-tidy: clang-tidy found problems in ${#failed[@]} of ${#files[@]} files changed since $base:" >&2
  printf '  %s\n' "${failed[@]}" >&2
  exit 1
fi
echo "check-tidy: ${#files[@]} files changed since $base pass clang-tidy"
