#!/usr/bin/env bash
# The SLURM tests alone, as CI runs them (.ci/run runs them inside its single pytest, where the session fixture of
# tests/slurm/conftest.py does the same start/stop):
#   1. install Debian's munge, slurmctld, slurmd, slurm-client, slurmdbd and mariadb-server (apt-get) and start a
#      single-node cluster on localhost (start_cluster.sh; every daemon's PID goes to $SLURM_DIR/*.pid);
#   2. run the tests marked `slurm` against it, with FORESTBENCH_REQUIRE_SLURM=1 so that they cannot be skipped;
#   3. stop exactly the daemons of step 1, by PID (stop_cluster.sh), also when the tests fail or are interrupted.
# Idempotent: daemons left by an earlier run in the same SLURM_DIR are stopped first. If a SLURM cluster is already
# up on this machine (not started by this script), the tests use it and it is left running.
# Where the cluster cannot run (not root, no apt-get) the tests are skipped and the reason is printed.
#   PYTHON       interpreter with forestbench, snakemake and the SLURM plugin installed (default: python3)
#   SLURM_DIR    state/logs/PIDs of the cluster (default /tmp/forestbench-slurm-ci)
#   SLURM_TESTS_TIMEOUT  bound on the whole pytest run, seconds (default 2400)
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
PY=${PYTHON:-python3}
export SLURM_DIR=${SLURM_DIR:-/tmp/forestbench-slurm-ci}
TIMEOUT=${SLURM_TESTS_TIMEOUT:-2400}
log() { echo "[slurm ci] $*" >&2; }
cd "$REPO"

started=0
cleanup() {
  if [ "$started" = 1 ]; then
    bash "$HERE/stop_cluster.sh"
  fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

require=1
if [ ! -s "$SLURM_DIR/slurmctld.pid" ] && command -v sinfo >/dev/null && \
   sinfo -h -o %T 2>/dev/null | grep -qE '^(idle|mixed|allocated)$'; then
  log "a SLURM cluster is already up on this machine: using it (and leaving it running)"
  export FORESTBENCH_SLURM_DIR=${FORESTBENCH_SLURM_DIR:-$SLURM_DIR}
else
  started=1
  bash "$HERE/start_cluster.sh"
  rc=$?
  if [ "$rc" = 77 ]; then
    started=0
    require=0
    log "the SLURM tests will be skipped on this machine (reason above)"
  elif [ "$rc" != 0 ]; then
    log "start_cluster.sh failed (rc $rc)"
    exit "$rc"
  else
    export FORESTBENCH_SLURM_DIR=$SLURM_DIR
  fi
fi

if [ "$require" = 1 ]; then
  export FORESTBENCH_REQUIRE_SLURM=1
fi
timeout -k 60 "$TIMEOUT" "$PY" -m pytest --system -m slurm -rs -v -p no:cacheprovider tests/slurm
rc=$?
[ "$rc" = 124 ] && log "the SLURM tests exceeded ${TIMEOUT}s"
exit "$rc"
