#!/usr/bin/env bash
# Stop exactly the daemons start_cluster.sh started, by the PIDs it recorded in $SLURM_DIR, newest first.
# A PID is only signalled while it still runs the expected program (guards against PID reuse).
SLURM_DIR=${SLURM_DIR:-/tmp/forestbench-slurm}
for d in slurmd slurmctld slurmdbd mariadbd munged; do
  f="$SLURM_DIR/$d.pid"
  [ -s "$f" ] || continue
  pid=$(tr -dc 0-9 < "$f")
  rm -f "$f"
  [ -n "$pid" ] || continue
  comm=$(cat "/proc/$pid/comm" 2>/dev/null || true)
  if [ "$comm" != "$d" ]; then
    [ -n "$comm" ] && echo "[stop_cluster] PID $pid is '$comm', not $d: left alone" >&2
    continue
  fi
  kill -TERM "$pid" 2>/dev/null || continue
  for i in $(seq 150); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  if kill -0 "$pid" 2>/dev/null; then kill -KILL "$pid"; fi
  echo "[stop_cluster] stopped $d ($pid)" >&2
done
exit 0
