#!/usr/bin/env bash
# Installs asynccheck as a user would, into a scratch directory, and runs the installed command from there:
#   prefix: `cmake --install BUILD_DIR --prefix SCRATCH`;
#   deb:    the package `cpack -G DEB` makes, unpacked with `dpkg-deb -x` (what dpkg installs, without root).
# Checks the installed layout (command, library, docs, man page), that the installed library's own libraries all
# resolve, and that the installed command prints its version, finds the installed library and analyzes a committed
# recording.
# usage: tests/install/check.sh prefix|deb BUILD_DIR [CMAKE] [CPACK]
set -euo pipefail
mode=$1
build=$(cd "$2" && pwd)
cmake=${3:-cmake}
cpack=${4:-cpack}
src=$(cd "$(dirname "$0")/../.." && pwd)
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
fail() {
  echo "FAIL: $*"
  exit 1
}

case $mode in
  prefix)
    "$cmake" --install "$build" --prefix "$scratch/prefix" >"$scratch/install.log" || {
      cat "$scratch/install.log"
      fail "cmake --install"
    }
    root=$scratch/prefix
    ;;
  deb)
    if ! command -v dpkg-deb >/dev/null 2>&1; then
      echo "SKIPPED: dpkg-deb is not installed (not a Debian or Ubuntu machine)"
      exit 77
    fi
    # -B: the package and CPack's staging tree go to the scratch directory, not into the build tree.
    "$cpack" -G DEB -B "$scratch/pkg" --config "$build/CPackConfig.cmake" >"$scratch/cpack.log" || {
      cat "$scratch/cpack.log"
      fail "cpack -G DEB"
    }
    deb=$(ls "$scratch"/pkg/*.deb)
    echo "package: $(basename "$deb")"
    dpkg-deb --field "$deb" Package Version Architecture Depends
    dpkg-deb -x "$deb" "$scratch/root"
    root=$scratch/root/usr
    ;;
  *) fail "usage: tests/install/check.sh prefix|deb BUILD_DIR [CMAKE] [CPACK]" ;;
esac

cmd=$root/bin/asynccheck
[ -x "$cmd" ] || fail "no bin/asynccheck under $root"
lib=$(find "$root" -name libasynccheck.so -type f)
[ -n "$lib" ] || fail "no libasynccheck.so under $root"
[ -f "$root/share/man/man1/asynccheck.1" ] || fail "no share/man/man1/asynccheck.1 under $root"
grep -q '^\.TH ASYNCCHECK 1 ' "$root/share/man/man1/asynccheck.1" || fail "asynccheck.1 is not a section 1 man page"
grep -qF -- 'error\-exitcode' "$root/share/man/man1/asynccheck.1" || fail "asynccheck.1 lacks the options (from --help)"
[ -f "$root/share/doc/asynccheck/README.md" ] || fail "no share/doc/asynccheck/README.md under $root"
[ -f "$root/share/doc/asynccheck/docs/rules.md" ] || fail "no share/doc/asynccheck/docs/rules.md under $root"
echo "installed: ${cmd#"$scratch"/}, ${lib#"$scratch"/}, man page, docs"

# The library is loaded into the program under test: every library it needs (CUPTI, libunwind) must resolve.
if ldd "$lib" | grep 'not found'; then
  fail "the installed library's dependencies do not all resolve"
fi

version=$(sed -n 's/^CMAKE_PROJECT_VERSION:STATIC=//p' "$build/CMakeCache.txt")
out=$("$cmd" --version) || fail "asynccheck --version exited $?"
[ "$out" = "asynccheck $version" ] || fail "asynccheck --version printed '$out', not 'asynccheck $version'"
echo "ran: asynccheck --version ($out)"
"$cmd" --help >"$scratch/help.txt" || fail "asynccheck --help exited $?"
grep -q '^usage: asynccheck' "$scratch/help.txt" || fail "asynccheck --help printed no usage"
echo "ran: asynccheck --help"

# The installed command attaches the installed library (found from its own path) to the program. Without a GPU the
# program runs unmonitored, but a missing library stops the command before the program starts, with exit code 2.
out=$("$cmd" -- /bin/sh -c 'exit 7' 2>&1) && rc=0 || rc=$?
[ "$rc" = 7 ] || fail "asynccheck -- sh -c 'exit 7' exited $rc, not the program's 7: $out"
case $out in *"not found"*) fail "the installed command did not find its library: $out" ;; esac
echo "ran: asynccheck -- sh -c 'exit 7' (exit 7, library found)"

rec=$src/tests/fixtures/recordings/seed000_answer.pageable.rec
(cd "$scratch" && "$cmd" analyze "$rec" >"$scratch/analyze.txt" 2>&1) || {
  cat "$scratch/analyze.txt"
  fail "asynccheck analyze exited $?"
}
for rule in copy-async-pageable-h2d copy-async-pageable-d2h; do
  grep -q "\[$rule\]" "$scratch/analyze.txt" || {
    cat "$scratch/analyze.txt"
    fail "asynccheck analyze did not report $rule"
  }
done
echo "ran: asynccheck analyze $(basename "$rec") (copy-async-pageable-h2d, copy-async-pageable-d2h)"

# The Python package, installed where the prefix's python3 looks (python/CMakeLists.txt), finds the installed
# library and command from its own place, with nothing in the environment pointing at them.
pkg=$(find "$root" -path '*-packages/asynccheck/__init__.py' | head -n1)
[ -n "$pkg" ] || fail "no Python package asynccheck under $root (lib/python*/*-packages)"
site=$(dirname "$(dirname "$pkg")")
found=$(cd "$scratch" && env -u ASYNCCHECK_LIBRARY -u ASYNCCHECK_COMMAND PATH=/usr/bin:/bin PYTHONPATH="$site" python3 -c \
  'import asynccheck; print(asynccheck.find_library()); print(asynccheck.find_command())') ||
  fail "the installed Python package did not find the installed library and command: $found"
[ "$found" = "$lib
$cmd" ] || fail "the installed Python package found '$found', not $lib and $cmd"
echo "installed: ${site#"$scratch"/}/asynccheck (finds the installed library and command)"
echo "PASS: $mode"
