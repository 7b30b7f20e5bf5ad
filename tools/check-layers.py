#!/usr/bin/env python3
"""Checks that a source tree's folders depend one way, as its CMakeLists declares.

usage: check-layers.py ROOT RULES STAMP

RULES has one line per folder of ROOT, lowest first: `folder: below1 below2 ...`, naming the
folders it may include from (their own rules are followed, so the list needs only the folders
directly below). Every `#include "x"` in ROOT/folder/* that names a file of ROOT must be in the
folder itself or in one below it; a file outside every folder is refused too. On success STAMP is
written (the build's proof that the check ran); on failure each offending line is printed and the
exit status is 1, which stops the build.
"""
import pathlib
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
SOURCES = ("*.h", "*.cpp")


def read_rules(path):
    below = {}
    for number, line in enumerate(path.read_text().splitlines(), 1):
        line = line.strip()
        if not line:
            continue
        folder, _, deps = line.partition(":")
        folder = folder.strip()
        for dep in deps.split():
            if dep not in below:
                sys.exit(f"{path}:{number}: {folder} is declared over {dep}, which is not below it")
        below[folder] = set(deps.split())
    return below


def reachable(below):
    closure = {}
    for folder in below:  # in declaration order: each folder's deps are already closed
        seen = set()
        for dep in below[folder]:
            seen |= {dep} | closure[dep]
        closure[folder] = seen
    return closure


def owner(root, target):
    """The folder of ROOT that holds `target`, or None when it lies at ROOT's top."""
    parts = target.relative_to(root).parts
    return parts[0] if len(parts) > 1 else None


def main():
    root, rules_path, stamp = pathlib.Path(sys.argv[1]).resolve(), pathlib.Path(sys.argv[2]), sys.argv[3]
    closure = reachable(read_rules(rules_path))
    problems = []
    for pattern in SOURCES:
        for source in sorted(root.rglob(pattern)):
            folder = owner(root, source)
            if folder not in closure:
                problems.append(f"{source}: in no folder of {rules_path.name}; move it into one")
                continue
            for number, line in enumerate(source.read_text().splitlines(), 1):
                match = INCLUDE.match(line)
                if not match:
                    continue
                name = match.group(1)
                beside, from_root = (source.parent / name).resolve(), (root / name).resolve()
                target = beside if beside.is_file() else from_root if from_root.is_file() else None
                if target is None or root not in target.parents:
                    continue  # emu/, system and library headers
                to = owner(root, target)
                if to != folder and to not in closure[folder]:
                    where = f"{to}/" if to else "the top of nicsim/"
                    problems.append(
                        f"{source}:{number}: {folder}/ includes {name} from {where}, which is not "
                        f"below {folder}/ (allowed: {', '.join(sorted(closure[folder])) or 'none'})")
    if problems:
        print("\n".join(problems))
        print(f"{len(problems)} include(s) against the folder rule (docs/architecture.md)")
        return 1
    pathlib.Path(stamp).write_text("ok\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
