#!/usr/bin/env bash
# Stop the cluster started by tests/slurm/start_slurm.sh.
#
#   stop_slurm.sh            cancel queued/running jobs, stop the daemons (by PID file only)
#   stop_slurm.sh --purge    also delete $BASE (job database, spool, logs, configs)
#                            and the /etc/slurm symlinks, so the next start is from scratch
#
# Only processes whose PID files this harness owns are signalled; a munged that
# was already running before start_slurm.sh (the system one) is left alone.
# Installed packages are never removed.
set -uo pipefail

BASE=${ISQAFLOW_SLURM_BASE:-${TMPDIR:-/tmp}/isqaflow-slurm}
PURGE=0
case "${1:-}" in
  "") ;;
  --purge) PURGE=1 ;;
  *) echo "usage: $0 [--purge]" >&2; exit 2 ;;
esac

[ "$(id -u)" = 0 ] || { echo "stop_slurm.sh: must run as root" >&2; exit 1; }

# A process counts as gone once it is a zombie: where PID 1 is not a real init
# (containers, firecracker VMs) exited daemons are reaped only after a delay.
pid_alive() {
  local st
  st=$(ps -o stat= -p "$1" 2>/dev/null) || return 1
  [[ $st != Z* ]]
}
alive() { [ -s "$1" ] && pid_alive "$(cat "$1")"; }

stop() { # stop <name> <pidfile>
  local name=$1 pidfile=$2 pid
  if ! alive "$pidfile"; then
    echo "$name: not running"
    rm -f "$pidfile"
    return 0
  fi
  pid=$(cat "$pidfile")
  kill "$pid" 2>/dev/null
  for _ in $(seq 1 120); do   # up to 30 s for a clean shutdown
    pid_alive "$pid" || break
    sleep 0.25
  done
  if pid_alive "$pid"; then
    kill -9 "$pid" 2>/dev/null
    echo "$name: pid $pid ignored SIGTERM, killed"
  else
    echo "$name: pid $pid stopped"
  fi
  rm -f "$pidfile"
}

# Jobs left behind would keep slurmstepd processes around after slurmd stops.
if alive "$BASE/run/slurmctld.pid"; then
  jobs=$(timeout -s KILL 10 squeue -h -o %i 2>/dev/null | tr '\n' ' ')
  if [ -n "${jobs// /}" ]; then
    echo "cancelling jobs: $jobs"
    # shellcheck disable=SC2086
    timeout -s KILL 10 scancel $jobs || true
    sleep 1
  fi
fi

stop slurmd    "$BASE/run/slurmd.pid"
stop slurmctld "$BASE/run/slurmctld.pid"
stop slurmdbd  "$BASE/run/slurmdbd.pid"
stop mariadbd  "$BASE/run/mysqld/mysqld.pid"
stop munged    "$BASE/run/munged.pid"

if [ "$PURGE" = 1 ]; then
  for f in slurm.conf gres.conf slurmdbd.conf; do
    if [ -L "/etc/slurm/$f" ] && [[ "$(readlink "/etc/slurm/$f")" == "$BASE"/* ]]; then
      rm -f "/etc/slurm/$f"
    fi
  done
  if [ -e "$BASE/.isqaflow-slurm" ]; then
    rm -rf -- "$BASE"
    echo "purged $BASE and the /etc/slurm symlinks"
  elif [ -e "$BASE" ]; then
    echo "not purging $BASE: it has no .isqaflow-slurm marker" >&2
    exit 1
  fi
fi
