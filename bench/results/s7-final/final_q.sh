#!/bin/bash
# query-side benches: main (/work/main, store /tmp/b/main, format 4) vs before (/tmp/base, store /tmp/b/peers, format 3)
cd /work/main
unset PYTHONDONTWRITEBYTECODE
PY=/work/main/.venv/bin/python
M=/tmp/b/peers/memory-v1-n100000-s0.meta.json
date; uptime
$PY bench/results/first-call/cold_first.py --graph-dir /tmp/b/main --tree-dirs before=/tmp/b/peers --repeat 5 --trees "hgm=/work/main,before=/tmp/base" --out bench/results/first-call/first-call-quiet-s7.json > /tmp/b/out/cold.txt 2>&1
date; uptime
for r in 1 2; do
  $PY bench/reopen_bench.py --db /tmp/b/main/peer-hgm-n100000-s0.db --meta $M --modes image --repeat 3 --out /tmp/b/out/ro-main-$r.json > /tmp/b/out/ro-main-$r.txt 2>&1
  PYTHONPATH=/tmp/base $PY /tmp/base/bench/reopen_bench.py --db /tmp/b/peers/peer-hgm-n100000-s0.db --meta $M --modes image --repeat 3 --out /tmp/b/out/ro-base-$r.json > /tmp/b/out/ro-base-$r.txt 2>&1
done
date; uptime
$PY bench/reopen_bench.py --db /tmp/s7hB/new-1m.db --meta /tmp/s7hB/memory-v1-n1000000-s0.meta.json --modes image --repeat 3 --out bench/results/reopen-1m-quiet-s7.json > /tmp/b/out/ro1m.txt 2>&1
$PY bench/footprint.py --db /tmp/b/main/peer-hgm-n100000-s0.db --meta $M --out bench/results/footprint-quiet-s7.json > /tmp/b/out/fp.txt 2>&1
date; uptime
$PY bench/query_bench.py --sizes 100000 --repeat 9 --load-repeat 0 --graph-dir /tmp/b/main --out bench/results/query-fair-floor-100k-quiet-s7.json > /tmp/b/out/qb.txt 2>&1
date; uptime
