#!/usr/bin/env bash
# The HTML report in a real browser (ctest: html.browser): headless Chromium (Debian's `chromium`, installed by
# scripts/install-deps.sh) loads the page made from a committed recording and dumps its DOM after the page's script
# ran. Checks: no console message and no refused load (the page's script never logs; its policy forbids every
# external resource), the script's ready mark and row count, the SVG rects of the waited and own parts, and that a
# filter in the URL's fragment (#level=error) and a sort (#sort=total&dir=asc) change what the dumped DOM shows.
# Without Chromium it prints "SKIPPED: ..." and exits 77 (ctest's SKIP_RETURN_CODE).
# usage: tests/report/html_browser.sh ASYNCCHECK RECORDING SITES ERRORS
#   SITES, ERRORS: how many sites, and how many at level error, the recording's report has.
set -euo pipefail
asynccheck=$1
recording=$2
sites=$3
errors=$4

browser=""
for b in chromium chromium-browser google-chrome; do
  if command -v "$b" >/dev/null 2>&1; then
    browser=$(command -v "$b")
    break
  fi
done
if [ -z "$browser" ]; then
  echo "SKIPPED: no Chromium to check the HTML report in (apt-get install chromium; scripts/install-deps.sh does)"
  exit 77
fi

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
fail() {
  echo "FAIL: $*"
  exit 1
}

"$asynccheck" analyze "$recording" --html="$scratch/report.html" --summary=0 || fail "asynccheck analyze --html"

# Loads file://PAGE#FRAGMENT and writes the DOM after the scripts ran to $scratch/dom, Chromium's log to $scratch/log.
# --no-sandbox: CI runs as root, where Chromium's sandbox will not start; the page is our own file.
load() {
  "$browser" --headless --no-sandbox --disable-gpu --no-first-run --disable-dev-shm-usage \
    --user-data-dir="$scratch/profile" --enable-logging=stderr --v=0 --dump-dom "file://$scratch/report.html$1" \
    >"$scratch/dom" 2>"$scratch/log" || {
    cat "$scratch/log"
    fail "$browser could not load the page ($1)"
  }
  # A console message (an exception is one) or a load the page's policy refused.
  if grep -E "CONSOLE|Uncaught|Refused to|Content Security Policy" "$scratch/log"; then
    fail "the browser reported the lines above for the page ($1)"
  fi
  grep -q 'data-ready="1"' "$scratch/dom" || fail "the page's script did not run to its end ($1): no data-ready=\"1\""
}

count() { grep -o "$1" "$scratch/dom" | wc -l; }

load ""
[ "$(count '<tbody class="site"')" -eq "$sites" ] || fail "expected $sites site rows, found $(count '<tbody class="site"')"
grep -q "data-visible-rows=\"$sites\"" "$scratch/dom" || fail "the script did not count $sites visible rows"
[ "$(count '<svg class="timeline"')" -eq "$sites" ] || fail "expected one timeline per site, found $(count '<svg class="timeline"')"
waited=$(count '<rect class="waited"')
own=$(count '<rect class="own"')
[ "$waited" -ge 1 ] && [ "$own" -ge 1 ] || fail "expected SVG rects for the waited and own parts, found $waited and $own"
[ "$(count '<tbody class="site"[^>]*hidden')" -eq 0 ] || fail "a row is hidden without a filter"

load "#level=error"
grep -q "data-visible-rows=\"$errors\"" "$scratch/dom" || fail "#level=error: expected $errors visible rows"
visible=$(grep -o '<tbody class="site"[^>]*>' "$scratch/dom" | grep -v 'hidden' || true)
[ "$(printf '%s\n' "$visible" | grep -c 'data-level="error"')" -eq "$errors" ] ||
  fail "#level=error: the visible rows are not the $errors errors"
if printf '%s\n' "$visible" | grep -v 'data-level="error"' | grep -q .; then
  fail "#level=error: a row of another level is visible"
fi
grep -q 'data-filter="level=error;rule="' "$scratch/dom" || fail "#level=error: the level menu does not show the filter"

# Worst first is the writer's order; ascending by total, the last row comes first.
load "#sort=total&dir=asc"
first=$(grep -o '<tbody class="site"[^>]*data-index="[0-9]*"' "$scratch/dom" | head -n1 | sed 's/.*data-index="\([0-9]*\)"/\1/')
[ "$first" = "$sites" ] || fail "#sort=total&dir=asc: the first row is site $first, not $sites (the least total)"

echo "html.browser: $(basename "$recording"): $sites rows, $waited waited and $own own rects, #level=error shows $errors, sorting works ($browser)"
