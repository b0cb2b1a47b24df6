#!/usr/bin/env bash
# Start a real single-node SLURM cluster on localhost (Debian 12, run as root, no systemd needed):
# munged, MariaDB (own data directory), slurmdbd, slurmctld and slurmd. Every daemon's PID is written to
# $SLURM_DIR/<daemon>.pid so that stop_cluster.sh stops exactly these processes and nothing else.
#
#   SLURM_DIR   state, logs and PID files (default /tmp/forestbench-slurm); wiped on every start
#   WITH_DBD    1 (default): start MariaDB + slurmdbd so that `sacct` works; 0: accounting off (squeue only)
#   SKIP_APT    1: do not run apt-get (packages must already be installed)
#   DB_PORT     TCP port of the private MariaDB (default 3307, loopback only)
#
# Exit codes: 0 cluster up and a test job ran; 77 cannot run here (not root / no apt-get / port taken by a
# daemon this script did not start), with the reason on stderr; anything else: failure (logs are printed).
# Idempotent: daemons left by an earlier start with the same SLURM_DIR are stopped first (by PID).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
SLURM_DIR=${SLURM_DIR:-/tmp/forestbench-slurm}
WITH_DBD=${WITH_DBD:-1}
SKIP_APT=${SKIP_APT:-0}
DB_PORT=${DB_PORT:-3307}
export DEBIAN_FRONTEND=noninteractive
t0=$(date +%s)
log() { echo "[start_cluster] $*" >&2; }
cannot() { log "cannot run: $*"; exit 77; }

[ "$(id -u)" = 0 ] || cannot "not root (apt-get install and the SLURM daemons need root)"
if [ "$SKIP_APT" != 1 ]; then
  command -v apt-get >/dev/null || cannot "no apt-get on this machine (needs Debian's slurmctld, slurmd, munge, slurmdbd, mariadb-server)"
fi

# an earlier cluster from this directory: stop it first (only the PIDs we recorded)
if compgen -G "$SLURM_DIR/*.pid" >/dev/null; then
  log "stopping daemons left from an earlier start in $SLURM_DIR"
  SLURM_DIR=$SLURM_DIR bash "$HERE/stop_cluster.sh"
fi

port_busy() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
for p in 6817 6818 6819 "$DB_PORT"; do
  port_busy "$p" && cannot "TCP port $p on 127.0.0.1 is already in use by a process this script did not start"
done

if [ "$SKIP_APT" != 1 ]; then
  pkgs="munge slurmctld slurmd slurm-client"
  [ "$WITH_DBD" = 1 ] && pkgs="$pkgs slurmdbd mariadb-server"
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends $pkgs >/dev/null
  log "apt-get done after $(( $(date +%s) - t0 ))s"
fi
for b in /usr/sbin/munged /usr/sbin/slurmctld /usr/sbin/slurmd sinfo sbatch; do
  command -v "$b" >/dev/null || { log "missing $b after install"; exit 1; }
done

H=$(hostname -s)
rm -rf "$SLURM_DIR"
mkdir -p "$SLURM_DIR/state" "$SLURM_DIR/spool"
chmod 755 "$SLURM_DIR"

on_error() {
  log "FAILED; logs follow"
  for f in "$SLURM_DIR"/*.log; do [ -f "$f" ] && { echo "== $f"; tail -n 30 "$f"; }; done >&2
  SLURM_DIR=$SLURM_DIR bash "$HERE/stop_cluster.sh" || true
}
trap on_error ERR

if [ "$WITH_DBD" = 1 ]; then
  ACCT="AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=localhost
AccountingStoragePort=6819
JobAcctGatherType=jobacct_gather/linux
JobAcctGatherFrequency=30"
else
  ACCT="AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none"
fi
MEM_MB=$(( $(free -m | awk '/^Mem:/{print $2}') * 85 / 100 ))

mkdir -p /etc/slurm
cat > /etc/slurm/slurm.conf <<CONF
# written by forestbench tests/slurm/start_cluster.sh
ClusterName=forestbench
SlurmctldHost=${H}(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
MpiDefault=none
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
ReturnToService=2
SlurmctldPidFile=${SLURM_DIR}/slurmctld.pid
SlurmdPidFile=${SLURM_DIR}/slurmd.pid
SlurmctldPort=6817
SlurmdPort=6818
StateSaveLocation=${SLURM_DIR}/state
SlurmdSpoolDir=${SLURM_DIR}/spool
SlurmctldLogFile=${SLURM_DIR}/slurmctld.log
SlurmdLogFile=${SLURM_DIR}/slurmd.log
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
JobCompType=jobcomp/none
${ACCT}
# finished jobs stay visible to squeue for 5 min (the plugin's squeue mode needs >= 3 x init seconds)
MinJobAge=300
InactiveLimit=0
KillWait=10
Waittime=0
NodeName=${H} NodeAddr=127.0.0.1 CPUs=$(nproc) RealMemory=${MEM_MB} State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
CONF

# munge: the Debian postinst created /etc/munge/munge.key
mkdir -p /run/munge && chown munge:munge /run/munge && chmod 755 /run/munge
rm -f /run/munge/munged.pid
runuser -u munge -- /usr/sbin/munged --pid-file=/run/munge/munged.pid
for i in $(seq 50); do [ -s /run/munge/munged.pid ] && munge -n >/dev/null 2>&1 && break; sleep 0.2; done
cp /run/munge/munged.pid "$SLURM_DIR/munged.pid"
munge -n | unmunge >/dev/null

if [ "$WITH_DBD" = 1 ]; then
  # a private MariaDB instance: own data directory and socket, TCP on loopback only
  DB=$SLURM_DIR/mysql
  mkdir -p "$DB/data" && chown -R mysql:mysql "$DB"
  mariadb-install-db --user=mysql --datadir="$DB/data" --auth-root-authentication-method=socket \
      --skip-test-db >"$SLURM_DIR/mariadb-install.log" 2>&1
  nohup /usr/sbin/mariadbd --no-defaults --user=mysql --datadir="$DB/data" --socket="$DB/mysqld.sock" \
      --pid-file="$DB/mysqld.pid" --bind-address=127.0.0.1 --port="$DB_PORT" \
      --log-error="$SLURM_DIR/mariadb.log" >/dev/null 2>&1 &
  echo $! > "$SLURM_DIR/mariadbd.pid"
  for i in $(seq 120); do mariadb-admin --socket="$DB/mysqld.sock" ping >/dev/null 2>&1 && break; sleep 0.5; done
  mariadb --socket="$DB/mysqld.sock" -e "
    CREATE USER IF NOT EXISTS 'slurm'@'127.0.0.1' IDENTIFIED BY 'slurmdbpass';
    CREATE USER IF NOT EXISTS 'slurm'@'localhost' IDENTIFIED BY 'slurmdbpass';
    CREATE DATABASE IF NOT EXISTS slurm_acct_db;
    GRANT ALL ON slurm_acct_db.* TO 'slurm'@'127.0.0.1';
    GRANT ALL ON slurm_acct_db.* TO 'slurm'@'localhost';
    FLUSH PRIVILEGES;"
  cat > /etc/slurm/slurmdbd.conf <<CONF
# written by forestbench tests/slurm/start_cluster.sh
AuthType=auth/munge
DbdHost=localhost
DbdAddr=127.0.0.1
DbdPort=6819
SlurmUser=root
LogFile=${SLURM_DIR}/slurmdbd.log
PidFile=${SLURM_DIR}/slurmdbd.pid
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort=${DB_PORT}
StorageUser=slurm
StoragePass=slurmdbpass
StorageLoc=slurm_acct_db
CONF
  chmod 600 /etc/slurm/slurmdbd.conf
  /usr/sbin/slurmdbd
  for i in $(seq 120); do sacctmgr -n show cluster >/dev/null 2>&1 && break; sleep 0.5; done
  sacctmgr -n show cluster format=cluster | grep -qw forestbench || sacctmgr -i add cluster forestbench >/dev/null
fi

/usr/sbin/slurmctld
/usr/sbin/slurmd
for i in $(seq 120); do sinfo -h -o %T 2>/dev/null | grep -qx idle && break; sleep 0.5; done
sinfo >&2
timeout 60 srun -t 1 hostname >/dev/null
if [ "$WITH_DBD" = 1 ]; then
  for i in $(seq 40); do sacct -n -X -o JobID 2>/dev/null | grep -q . && break; sleep 0.5; done
  sacct -n -X -o JobID >/dev/null
fi
trap - ERR
log "cluster ready after $(( $(date +%s) - t0 ))s; PIDs in $SLURM_DIR/*.pid"
