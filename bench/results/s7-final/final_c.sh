#!/bin/bash
cd /work/main
unset PYTHONDONTWRITEBYTECODE
PY=/work/main/.venv/bin/python
date; uptime
$PY bench/results/first-call/cold_first.py --graph-dir /tmp/b/main --tree-dirs before=/tmp/b/peers --repeat 9 --trees "hgm=/work/main,before=/tmp/base" --out bench/results/first-call/first-call-quiet-s7-r9.json > /tmp/b/out/cold9.txt 2>&1
date; uptime
mkdir -p /tmp/b/cm /tmp/b/cb
for r in 1 2; do
  $PY bench/commit_vs_sqlite.py --nodes 100000 --commits 150 --graph-dir /tmp/b/cm --out /tmp/b/out/commit-main-$r.json > /dev/null 2>&1
  PYTHONPATH=/tmp/base $PY /tmp/base/bench/commit_vs_sqlite.py --nodes 100000 --commits 150 --graph-dir /tmp/b/cb --out /tmp/b/out/commit-base-$r.json > /dev/null 2>&1
done
date; uptime
$PY bench/peer_bench.py --nodes 100000 --cold-repeat 3 --repeat 5 --graph-dir /tmp/b/main --out bench/results/peers.json --markdown bench/results/peers.md > /tmp/b/out/peers.txt 2>&1
date; uptime
