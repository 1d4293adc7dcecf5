#!/bin/bash
# P1 and P2 beside Pinocchio in one job, interleaved so that the shared machine's load falls on all alike:
# per N, three rounds of [cadmotion (default options), cadmotion with CM_OPTIONS_B, Pinocchio], each the
# median of PEERS_REPEAT runs (p2.py's wall seconds per simulated second); then P1 at 1e-11 the same way.
#
#   bash benchmarks/interleaved.sh            (NS="10 20 50 100 200", CM_OPTIONS_B='{"planar": false}')
#
# Needs the peers' venv (../shared/peers/README.md; PEERS_VENV, default /tmp/peers-venv) and cadmotion importable.
cd "$(dirname "$0")/.." || exit 1
PEERS="$(cd ../shared/peers && pwd)"
PY="${PEERS_VENV:-/tmp/peers-venv}/bin/python"
B="${CM_OPTIONS_B:-{\"planar\": false\}}"
export OPENBLAS_NUM_THREADS=1 PEERS_REPEAT="${PEERS_REPEAT:-3}"
for N in ${NS:-10 20 50 100 200}; do
  for round in 1 2 3; do
    for o in '{}' "$B"; do
      CM_OPTIONS="$o" PEERS_P2_N=$N python benchmarks/p2.py 2>/dev/null | python -c "
import json, sys; x = json.load(sys.stdin)['results'][0]
print('P2 N=$N round $round cadmotion $o', round(x['wall_per_sim_s'], 5), x['n_rhs_evals'],
      'gap %.1e drift %.1e' % (x['constraint_violation_end'], x['energy_drift_rel']), 'y(1 s)', round(x['probe_xy'][1], 7))"
    done
    (cd "$PEERS/pinocchio" && PEERS_P2_N=$N "$PY" p2.py 2>/dev/null | python -c "
import json, sys; x = json.load(sys.stdin)['results'][0]
print('P2 N=$N round $round pinocchio', round(x['wall_per_sim_s'], 5), x.get('n_rhs_evals'),
      'gap %.1e drift %.1e' % (x['constraint_violation_end'], x['energy_drift_rel']), 'y(1 s)', round(x['probe_xy'][1], 7))")
  done
done
for round in 1 2 3; do
  for o in '{}' "$B"; do
    CM_OPTIONS="$o" CM_TOL=1e-11 PEERS_REPEAT=5 python benchmarks/p1.py 2>/dev/null | python -c "
import json, sys; r = json.load(sys.stdin); print('P1 round $round cadmotion $o', round(r['wall_time_s'], 5), r['n_rhs_evals'], r['crank_angle'][-1])"
  done
  (cd "$PEERS/pinocchio" && PEERS_REPEAT=5 "$PY" p1.py 2>/dev/null | python -c "
import json, sys; r = json.load(sys.stdin); print('P1 round $round pinocchio', round(r['wall_time_s'], 5), r.get('n_rhs_evals'), r['crank_angle'][-1])")
done
