#!/bin/sh
# Every deep-learning policy of docs/policies.md on the whole ITP cluster04 trace (15,802 jobs,
# the 88 nodes of 8 GPUs --cluster-from-trace picks), each job with a deadline drawn as the
# ElasticFlow artifact draws them. Writes OUT/paper.html: one page with a row per policy and
# the JCT CDFs (OUT/paper.md: the table in Markdown; OUT/compare.html: every metric).
#
#   sh examples/policies/compare-cluster04.sh                 # about 7.5 minutes on 2 cores
#   TRACE=../shared/traces/itp/cluster04.csv OUT=out/c04 sh examples/policies/compare-cluster04.sh
#
# TRACE defaults to the catalog's itp-cluster04 (downloaded into berth's cache on first use);
# extra arguments go to berth compare (--jobs N, --seeds N, --until 7d, ...).
set -e
cd "$(dirname "$0")/../.."
exec "${BERTH:-berth}" compare --trace "${TRACE:-itp-cluster04}" --cluster-from-trace \
  --deadlines 0.5:1.5 --seed 0 \
  --config default \
  --config examples/policies/tiresias.yaml \
  --config examples/policies/sjf.yaml \
  --config examples/policies/srtf.yaml \
  --config examples/policies/edf.yaml \
  --config examples/policies/elasticflow.yaml \
  --config examples/policies/themis.yaml \
  --config examples/policies/gandiva.yaml \
  --config docs/experiments/itp-queues/gang-drf.yaml \
  --out "${OUT:-out/compare-cluster04}" "$@"
