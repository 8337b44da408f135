#!/bin/bash
# End-of-session reruns (eighth session): main (/work/main, format-5 store in /tmp/b/main) against the
# tree at the session's start (/tmp/base = 43e1f1c, format-4 store in /tmp/b/peers), same runs.
cd /work/main
unset PYTHONDONTWRITEBYTECODE
PY=/work/main/.venv/bin/python
O=/tmp/b/out
M=/tmp/b/peers/memory-v1-n100000-s0.meta.json
date; uptime
$PY bench/results/first-call/cold_first.py --graph-dir /tmp/b/main --tree-dirs before=/tmp/b/peers --repeat 9 --trees "hgm=/work/main,before=/tmp/base" --out bench/results/first-call/first-call-quiet-s8-r9.json > $O/cold9.txt 2>&1
date; uptime
for r in 1 2; do
  $PY bench/reopen_bench.py --db /tmp/b/main/peer-hgm-n100000-s0.db --meta $M --modes image --repeat 3 --out $O/ro-main-$r.json > $O/ro-main-$r.txt 2>&1
  PYTHONPATH=/tmp/base $PY /tmp/base/bench/reopen_bench.py --db /tmp/b/peers/peer-hgm-n100000-s0.db --meta $M --modes image --repeat 3 --out $O/ro-base-$r.json > $O/ro-base-$r.txt 2>&1
done
$PY bench/reopen_bench.py --db /tmp/b/m1/new-1m.db --meta /tmp/b/m1/memory-v1-n1000000-s0.meta.json --modes image --repeat 3 --out bench/results/reopen-1m-quiet-s8.json > $O/ro1m.txt 2>&1
$PY bench/footprint.py --db /tmp/b/main/peer-hgm-n100000-s0.db --meta $M --out bench/results/footprint-quiet-s8.json > $O/fp.txt 2>&1
date; uptime
mkdir -p /tmp/b/cm /tmp/b/cb
for d in /tmp/b/cm /tmp/b/cb; do for f in memory-v1-n100000-s0.json memory-v1-n100000-s0.meta.json; do ln -sf /tmp/b/peers/$f $d/; done; done
for r in 1 2; do
  $PY bench/commit_vs_sqlite.py --nodes 100000 --commits 150 --graph-dir /tmp/b/cm --out $O/commit-main-$r.json > $O/commit-main-$r.txt 2>&1
  PYTHONPATH=/tmp/base $PY /tmp/base/bench/commit_vs_sqlite.py --nodes 100000 --commits 150 --graph-dir /tmp/b/cb --out $O/commit-base-$r.json > $O/commit-base-$r.txt 2>&1
done
date; uptime
$PY bench/peer_bench.py --nodes 100000 --cold-repeat 3 --repeat 5 --graph-dir /tmp/b/main --out bench/results/peers.json --markdown bench/results/peers.md > $O/peers.txt 2>&1
date; uptime
$PY bench/query_bench.py --sizes 100000 --repeat 9 --load-repeat 0 --graph-dir /tmp/b/main --out bench/results/query-fair-floor-100k-quiet-s8.json > $O/qb.txt 2>&1
date; uptime
