#!/bin/sh
# cg.sh TREE MODE TEXT -> Collected
PYTHONHASHSEED=0 valgrind --tool=callgrind --collect-atstart=no --toggle-collect=functools_reduce --callgrind-out-file=/tmp/s7hA/cg.last.$$ /work/s7-hA/.venv/bin/python /tmp/s7hA/cg_text.py "$@" 2>&1 | grep Collected | awk '{print $4}'
