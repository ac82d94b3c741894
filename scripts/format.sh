#!/usr/bin/env bash
# Formats the project's own C++ with .clang-format (clang-format 14, what the tree was formatted with), or with
# --check says which files are not formatted (exit 1). Not samples/ (their line numbers are named in expect.txt and
# in recordings), corpus/ (others' code), tests/fixtures, or the .def tables.
# usage: scripts/format.sh [--check]
set -u
cd "$(dirname "$0")/.."
if ! command -v clang-format >/dev/null 2>&1; then
  echo "SKIPPED: clang-format is not installed (apt-get install clang-format)"
  exit 77
fi
major=$(clang-format --version | sed -n 's/.*version \([0-9]*\).*/\1/p')
if [ "$major" != 14 ]; then
  echo "SKIPPED: clang-format $major here; the tree is formatted with clang-format 14, whose output other versions do not match"
  exit 77
fi
if ! git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  echo "SKIPPED: not a git checkout (the files to format are the ones git tracks)"
  exit 77
fi
files=$(git ls-files --cached --others --exclude-standard 'analysis/*.cpp' 'analysis/*.h' 'cli/*.cpp' 'cli/*.h' 'cupti/*.cpp' 'cupti/*.h' 'interpose/*.cpp' \
  'interpose/*.h' 'options/*.cpp' 'options/*.h' 'report/*.cpp' 'report/*.h' 'rules/*.cpp' 'rules/*.h' 'bench/*.cpp' \
  'tests/*.cpp' 'tests/*.h' | grep -v '^tests/fixtures/')
if [ "${1:-}" = --check ]; then
  bad=0
  for f in $files; do
    if ! clang-format --dry-run --Werror "$f" >/dev/null 2>&1; then
      echo "not formatted: $f (scripts/format.sh formats it)"
      bad=1
    fi
  done
  exit $bad
fi
clang-format -i $files
