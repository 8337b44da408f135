#!/bin/sh
# cg_all.sh OUT: instructions of total (first memory.query) and hot (301st) for the 12 queries, base and new
cd /work/s7-hA
for q in card project_pending hub_facts entity_facts fact_count failed_urgent grandchildren derived_chain lineage ancestors following five_steps; do
  t=$(.venv/bin/python -c "import sys; sys.path.insert(0,'.'); from bench.baselines import QUERIES; print(QUERIES['$q'][0].replace('{{','{{{{').replace('}}','}}}}') if False else QUERIES['$q'][0])")
  for mode in total hot; do
    b=$(/tmp/s7hA/cg.sh /tmp/base $mode "$t"); n=$(/tmp/s7hA/cg.sh /work/s7-hA $mode "$t")
    echo "$q $mode $b $n"
  done
done
