#!/usr/bin/env bash
# GPU end-to-end test of a multi-process job (docs/mpi.md), without mpirun: 4 processes of a sample run at once,
# each under `asynccheck --output=DIR/r.%r.json --format=json` with the variables Open MPI's mpirun sets
# (OMPI_COMM_WORLD_RANK=0..3, OMPI_COMM_WORLD_SIZE=4). Checks: one report per rank, named by the rank and saying it;
# one shared file name is refused up front; `asynccheck merge` of the 4 reports sums every site's counts, times and
# bytes exactly, keeps every site, and writes SARIF that passes the schema.
# Skipped (exit 77) on a machine without a usable GPU, saying why.
# usage: scripts/gpu-mpi-test.sh BUILD_DIR
set -u
build=$(cd "${1:?build dir}" && pwd)
src=$(cd "$(dirname "$0")/.." && pwd)
if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L >/dev/null 2>&1; then
  echo "SKIPPED: no NVIDIA GPU on this machine (nvidia-smi missing or found no device); run this test on the GPU machine (docs/gpu-testing.md)"
  exit 77
fi
app=$build/samples/seed000_answer
if [ ! -x "$app" ]; then
  echo "FAIL: $app is missing (build with -DASYNCCHECK_BUILD_SAMPLES=ON)"
  exit 1
fi
dir=${ASYNCCHECK_KEEP_REPORTS:-$(mktemp -d)}
mkdir -p "$dir"
fail() { echo "FAIL: $*"; exit 1; }

# One file for all 4 ranks: refused before the program runs.
OMPI_COMM_WORLD_RANK=0 OMPI_COMM_WORLD_SIZE=4 "$build/bin/asynccheck" --json="$dir/shared.json" -- "$app" pageable 1048576 \
  >"$dir/shared.out" 2>"$dir/shared.err"
[ $? -eq 2 ] || fail "--json=shared.json in a 4-process job should exit 2: $(cat "$dir/shared.err")"
grep -q "would be written by each of the 4 processes of this job (OMPI_COMM_WORLD_SIZE=4)" "$dir/shared.err" ||
  fail "no shared-file error: $(cat "$dir/shared.err")"

# The 4 ranks, at once, on one GPU (256 MiB pageable copies each).
pids=()
for rank in 0 1 2 3; do
  OMPI_COMM_WORLD_RANK=$rank OMPI_COMM_WORLD_SIZE=4 "$build/bin/asynccheck" --output="$dir/r.%r.json" --format=json \
    --log-file="$dir/summary.%r.txt" -- "$app" pageable 268435456 >"$dir/out.$rank" 2>"$dir/err.$rank" &
  pids+=($!)
done
for rank in 0 1 2 3; do
  wait "${pids[$rank]}" || fail "rank $rank exited with $?: $(cat "$dir/err.$rank")"
done
for rank in 0 1 2 3; do
  [ -f "$dir/r.$rank.json" ] || fail "no report r.$rank.json in $dir: $(ls "$dir")"
  grep -q "\[rank $rank\] " "$dir/summary.$rank.txt" || fail "summary.$rank.txt does not say rank $rank"
done

"$build/bin/asynccheck" merge "$dir"/r.[0-3].json --json="$dir/merged.json" --sarif="$dir/merged.sarif" \
  --log-file="$dir/merged.txt" || fail "merge exited with $?"
if python3 -c 'import jsonschema' 2>/dev/null; then
  python3 "$src/tests/report/validate_sarif.py" "$dir/merged.sarif" || fail "the merged SARIF is not valid SARIF 2.1.0"
else
  echo "NOTE: no python3 jsonschema here: the merged SARIF's schema check is left to CI (cli.merge_sarif_schema)"
fi

python3 - "$dir" <<'EOF' || exit 1
import json, sys
d = sys.argv[1]
ranks = [json.load(open(f"{d}/r.{r}.json")) for r in range(4)]
merged = json.load(open(f"{d}/merged.json"))
def key(s):  # docs/mpi.md: rule, API, function, file base name and line
    l = s["location"]
    return (s["rule"], s["api"], l["function"], l["file"].rsplit("/", 1)[-1], l["line"])
errors = []
for r, rep in enumerate(ranks):
    if rep["run"]["rank"] != r or rep["run"]["rank_variable"] != "OMPI_COMM_WORLD_RANK":
        errors.append(f"r.{r}.json says rank {rep['run']['rank']} from {rep['run']['rank_variable']!r}")
if len({rep["run"]["pid"] for rep in ranks}) != 4:
    errors.append("the 4 reports do not come from 4 processes")
want = {}
for rep in ranks:
    for s in rep["sites"]:
        w = want.setdefault(key(s), {"count": 0, "total_ns": 0, "bytes": 0, "max_ns": 0})
        for f in ("count", "total_ns", "bytes"):
            w[f] += s[f]
        w["max_ns"] = max(w["max_ns"], s["max_ns"])
got = {key(s): s for s in merged["sites"]}
if set(got) != set(want):
    errors.append(f"merged sites {sorted(got)} differ from the ranks' {sorted(want)}")
for k, w in want.items():
    s = got.get(k)
    if s is None:
        continue
    for f in w:
        if s[f] != w[f]:
            errors.append(f"{k[0]} at line {k[4]}: merged {f} {s[f]}, the ranks sum to {w[f]}")
for total in ("calls_watched", "gpu_operations"):
    if merged["run"][total] != sum(rep["run"][total] for rep in ranks):
        errors.append(f"merged {total} {merged['run'][total]} is not the sum")
if [p["rank"] for p in merged["processes"]] != [0, 1, 2, 3]:
    errors.append(f"merged processes have ranks {[p['rank'] for p in merged['processes']]}")
h2d = [s for s in merged["sites"] if s["rule"] == "copy-async-pageable-h2d"]
if len(h2d) != 1 or h2d[0]["count"] != 4 or sorted(p["rank"] for p in h2d[0]["processes"]) != [0, 1, 2, 3]:
    errors.append(f"expected one copy-async-pageable-h2d site with 4 calls from ranks 0-3, got {h2d}")
for e in errors:
    print("FAIL:", e)
if errors:
    sys.exit(1)
n = sum(s["count"] for s in merged["sites"])
print(f"PASS: 4 ranks, 4 reports named r.0-3.json, merged {len(merged['sites'])} sites, {n} calls = the ranks' sum")
EOF
