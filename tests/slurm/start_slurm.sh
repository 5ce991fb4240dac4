#!/usr/bin/env bash
# Bring up a one-node SLURM cluster on localhost for the isqaflow tests.
#
# Run as root on Debian 12 (bookworm). Safe to run again: packages are only
# installed when missing, daemons only started when not running, and a node
# left drained/down by an earlier session is resumed.
#
# What runs (all on 127.0.0.1, no systemd needed):
#   munged                      authentication (the system one is reused if it works)
#   mariadbd  (port 3307)       accounting database, private datadir under $BASE
#   slurmdbd  (port 6819)       accounting daemon -> `sacct` works
#   slurmctld (port 6817)       controller, partition $PARTITION
#   slurmd    (port 6818)       the single node, with four fake GPUs (gpu:fake:4)
#
# Environment (all optional):
#   ISQAFLOW_SLURM_BASE       configs, state, logs   (default ${TMPDIR:-/tmp}/isqaflow-slurm)
#   ISQAFLOW_SLURM_ACCOUNT    account for the users  (default isqaflow)
#   ISQAFLOW_SLURM_PARTITION  partition name         (default debug)
#   ISQAFLOW_SLURM_USERS      users given the account (default: root and $SUDO_USER)
#   ISQAFLOW_SLURM_MEM_MB     node RealMemory        (default 80% of MemTotal)
#   ISQAFLOW_SLURM_DB_PORT    MariaDB TCP port       (default 3307)
#
# Why /etc/slurm: the snakemake jobstep plugin removes every SLURM_* variable
# (SLURM_CONF too) before the srun it runs inside a job, so the client tools
# must find the config at the compiled-in path. The real files live in
# $BASE/etc and /etc/slurm only holds symlinks to them.
#
# Every line of output starts with the seconds elapsed since the script began.
set -Eeuo pipefail

BASE=${ISQAFLOW_SLURM_BASE:-${TMPDIR:-/tmp}/isqaflow-slurm}
ACCOUNT=${ISQAFLOW_SLURM_ACCOUNT:-isqaflow}
PARTITION=${ISQAFLOW_SLURM_PARTITION:-debug}
USERS=${ISQAFLOW_SLURM_USERS:-root ${SUDO_USER:-}}
DB_PORT=${ISQAFLOW_SLURM_DB_PORT:-3307}
CLUSTER=isqaflow
NODE=$(hostname -s)
PACKAGES=(munge slurm-client slurmctld slurmd slurmdbd mariadb-server)

START_NS=$(date +%s%N)
PHASE_NS=$START_NS
TIMINGS=()

elapsed() { # seconds since START_NS (or since $1), one decimal
  local now; now=$(date +%s%N)
  awk -v d="$(( now - ${1:-$START_NS} ))" 'BEGIN { printf "%.1f", d / 1e9 }'
}
log() { printf '[%6ss] %s\n' "$(elapsed)" "$*"; }
phase_done() { # record how long the phase since the previous call took
  TIMINGS+=("$1=$(elapsed "$PHASE_NS")s")
  PHASE_NS=$(date +%s%N)
}
die() {
  log "ERROR: $*"
  exit 1
}
on_error() {
  local rc=$? line=$1 cmd=$2
  trap - ERR
  log "ERROR: start_slurm.sh failed (exit $rc) at line $line: $cmd"
  for f in "$BASE"/log/*.log "$BASE"/log/mysql/*.err "$BASE"/log/munge/*.log; do
    [ -s "$f" ] || continue
    echo "----- last lines of $f"
    tail -n 15 "$f"
  done
  exit "$rc"
}
trap 'on_error $LINENO "$BASH_COMMAND"' ERR

# tk <seconds> <cmd...>: every external call that may block gets a hard limit
tk() { local s=$1; shift; timeout -s KILL "$s" "$@"; }

# pid_alive <pid>: kill -0 is not enough here: in containers whose PID 1 is not
# a real init, an exited daemon stays a zombie (state Z) for a while.
pid_alive() {
  local st
  st=$(ps -o stat= -p "$1" 2>/dev/null) || return 1
  [[ $st != Z* ]]
}
running() { [ -s "$1" ] && pid_alive "$(cat "$1")"; }

wait_until() { # wait_until <seconds> <description> <cmd...>
  local limit=$1 what=$2; shift 2
  local deadline=$(( $(date +%s) + limit ))
  until "$@" >/dev/null 2>&1; do
    [ "$(date +%s)" -lt "$deadline" ] || die "timed out after ${limit}s waiting for $what"
    sleep 0.25
  done
}

[ "$(id -u)" = 0 ] || die "must run as root (it installs packages and starts daemons)"
command -v apt-get >/dev/null && command -v dpkg >/dev/null \
  || die "needs a Debian-like system with apt-get and dpkg"
log "base dir $BASE, node $NODE, partition $PARTITION, account $ACCOUNT"

# --------------------------------------------------------------------------- packages
POLICY_MARK="temporary, from isqaflow tests/slurm/start_slurm.sh"
drop_policy() {
  if grep -qF "$POLICY_MARK" /usr/sbin/policy-rc.d 2>/dev/null; then
    rm -f /usr/sbin/policy-rc.d
  fi
  return 0
}
drop_policy   # one left behind by an earlier, killed run
missing=()
for p in "${PACKAGES[@]}"; do
  [ "$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null)" = "install ok installed" ] || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  log "installing ${missing[*]} (apt-get)"
  export DEBIAN_FRONTEND=noninteractive
  # Keep the packages' maintainer scripts from starting system services (they
  # would start without our config, or a second mariadb/munged): a policy-rc.d
  # that says "no" while we install, unless the host already has one. It carries
  # a marker so that one left behind by a killed run is removed by the next.
  if [ ! -e /usr/sbin/policy-rc.d ]; then
    printf '#!/bin/sh\n# %s\nexit 101\n' "$POLICY_MARK" >/usr/sbin/policy-rc.d
    chmod 755 /usr/sbin/policy-rc.d
    trap drop_policy EXIT
  fi
  apt_log=$(mktemp)
  if ! { tk 300 apt-get update -qq && tk 900 apt-get install -y -qq --no-install-recommends \
      -o Dpkg::Options::=--force-confold "${missing[@]}"; } >"$apt_log" 2>&1; then
    tail -n 30 "$apt_log"
    die "apt-get could not install: ${missing[*]}"
  fi
  drop_policy
  rm -f "$apt_log"
fi
log "packages: $(dpkg-query -W -f='${Package}=${Version} ' "${PACKAGES[@]}")"
phase_done packages

# --------------------------------------------------------------------------- config
mkdir -p "$BASE"/{etc,run,log/munge,log/mysql,spool/slurmctld,spool/slurmd,munge}
touch "$BASE/.isqaflow-slurm"   # marks the dir as ours; stop_slurm.sh --purge checks it
chown munge:munge "$BASE/log/munge" "$BASE/munge"
chmod 700 "$BASE/log/munge" "$BASE/munge"

# The node's CPU layout exactly as slurmd sees it, or slurmd complains and may
# drain the node; memory is set lower than the total to leave room for the host.
hw=$(tk 30 slurmd -C | head -n 1)
cpus=$(grep -o 'CPUs=[0-9]*' <<<"$hw" | cut -d= -f2)
layout=$(grep -o 'Boards=[0-9]* SocketsPerBoard=[0-9]* CoresPerSocket=[0-9]* ThreadsPerCore=[0-9]*' <<<"$hw")
[ -n "$cpus" ] && [ -n "$layout" ] || die "cannot parse 'slurmd -C': $hw"
mem=${ISQAFLOW_SLURM_MEM_MB:-$(awk '/^MemTotal:/ { printf "%d", $2 / 1024 * 0.8 }' /proc/meminfo)}

write_if_changed() { # write_if_changed <file>  (content on stdin); returns 0 if it changed
  local new; new=$(mktemp)
  cat >"$new"
  if [ -f "$1" ] && cmp -s "$new" "$1"; then rm -f "$new"; return 1; fi
  mv "$new" "$1"
  return 0
}

conf_changed=0
write_if_changed "$BASE/etc/slurm.conf" <<EOF && conf_changed=1 || true
# written by tests/slurm/start_slurm.sh
ClusterName=$CLUSTER
SlurmctldHost=$NODE(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
SlurmctldPort=6817
SlurmdPort=6818
StateSaveLocation=$BASE/spool/slurmctld
SlurmdSpoolDir=$BASE/spool/slurmd
SlurmctldPidFile=$BASE/run/slurmctld.pid
SlurmdPidFile=$BASE/run/slurmd.pid
SlurmctldLogFile=$BASE/log/slurmctld.log
SlurmdLogFile=$BASE/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
MailProg=/bin/true
# no cgroup or systemd support needed in a container
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
SchedulerType=sched/backfill
DefMemPerCPU=500
MpiDefault=none
# a node that registers again after a restart goes back into service
ReturnToService=2
# accounting through slurmdbd, so sacct works (the slurm executor plugin polls it);
# the job comment is where the plugin writes the rule name, so store it;
# account GPU requests as their own TRES so sacct shows gres/gpu
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=127.0.0.1
AccountingStoragePort=6819
AccountingStorageEnforce=associations
AccountingStorageTRES=gres/gpu,gres/gpu:fake
AccountingStoreFlags=job_comment
JobCompType=jobcomp/none
# finished jobs stay visible to squeue/scontrol for an hour
MinJobAge=3600
# four fake GPUs (four model jobs at a time): gres.conf backs them with character devices
GresTypes=gpu
NodeName=$NODE NodeAddr=127.0.0.1 CPUs=$cpus $layout RealMemory=$mem Gres=gpu:fake:4 State=UNKNOWN
# each core shared by up to three jobs: most of the test's jobs resume from call caches and
# wait on the scheduler and their start-up, so more of them than CPUs run at once
PartitionName=$PARTITION Nodes=$NODE Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:3
EOF

# slurmd drops a GPU without a device file ("Removing file-less GPU") and the
# node then fails its GRES check, so each fake GPU points at a character device.
write_if_changed "$BASE/etc/gres.conf" <<EOF && conf_changed=1 || true
NodeName=$NODE Name=gpu Type=fake File=/dev/null
NodeName=$NODE Name=gpu Type=fake File=/dev/zero
NodeName=$NODE Name=gpu Type=fake File=/dev/full
NodeName=$NODE Name=gpu Type=fake File=/dev/urandom
EOF

write_if_changed "$BASE/etc/slurmdbd.conf" <<EOF || true
AuthType=auth/munge
DbdAddr=127.0.0.1
DbdHost=localhost
DbdPort=6819
SlurmUser=root
LogFile=$BASE/log/slurmdbd.log
PidFile=$BASE/run/slurmdbd.pid
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort=$DB_PORT
StorageUser=slurm
StoragePass=isqaflow-slurm
StorageLoc=slurm_acct_db
EOF
chmod 600 "$BASE/etc/slurmdbd.conf"   # slurmdbd refuses to read a world-readable file

mkdir -p /etc/slurm
for f in slurm.conf gres.conf slurmdbd.conf; do
  if [ -e "/etc/slurm/$f" ] && [ ! -L "/etc/slurm/$f" ]; then
    mv "/etc/slurm/$f" "/etc/slurm/$f.isqaflow-backup"
    log "moved the existing /etc/slurm/$f to /etc/slurm/$f.isqaflow-backup"
  fi
  ln -sfn "$BASE/etc/$f" "/etc/slurm/$f"
done
log "config written: $NODE CPUs=$cpus $layout RealMemory=$mem Gres=gpu:fake:4"
phase_done config

# --------------------------------------------------------------------------- munge
if [ ! -s /etc/munge/munge.key ]; then
  mkdir -p /etc/munge
  tk 30 mungekey --create --keyfile=/etc/munge/munge.key
  chown munge:munge /etc/munge/munge.key
  chmod 400 /etc/munge/munge.key
fi
munge_ok() { tk 5 munge -n | tk 5 unmunge; }
if munge_ok >/dev/null 2>&1; then
  log "munged already answers"
else
  mkdir -p /run/munge
  chown munge:munge /run/munge
  chmod 755 /run/munge
  tk 30 runuser -u munge -- /usr/sbin/munged --num-threads=4 \
    --log-file="$BASE/log/munge/munged.log" --seed-file="$BASE/munge/munged.seed" \
    </dev/null >>"$BASE/log/munge-start.log" 2>&1
  wait_until 15 "munged" munge_ok
  # remember that this munged is ours, so stop_slurm.sh may stop it
  cp /run/munge/munged.pid "$BASE/run/munged.pid"
  log "munged started (pid $(cat "$BASE/run/munged.pid"))"
fi
phase_done munge

# --------------------------------------------------------------------------- mariadb
SOCK=$BASE/run/mysqld/mysqld.sock
mkdir -p "$BASE/run/mysqld"
chown mysql:mysql "$BASE/run/mysqld" "$BASE/log/mysql"
db_ok() { tk 10 mariadb-admin --socket="$SOCK" ping; }
if db_ok >/dev/null 2>&1; then
  log "mariadb already up"
else
  if [ ! -d "$BASE/mysql/mysql" ]; then
    mkdir -p "$BASE/mysql"
    chown mysql:mysql "$BASE/mysql"
    tk 120 mariadb-install-db --user=mysql --datadir="$BASE/mysql" \
      --auth-root-authentication-method=socket --skip-test-db \
      >"$BASE/log/mysql/install.log" 2>&1 \
      || { tail -n 20 "$BASE/log/mysql/install.log"; die "mariadb-install-db failed"; }
  fi
  # setsid + /dev/null stdio: the server must not hold the caller's pipes open
  setsid mariadbd --user=mysql --datadir="$BASE/mysql" --socket="$SOCK" \
    --port="$DB_PORT" --bind-address=127.0.0.1 --pid-file="$BASE/run/mysqld/mysqld.pid" \
    --log-error="$BASE/log/mysql/mariadb.err" --skip-log-bin \
    --innodb-buffer-pool-size=128M --innodb-lock-wait-timeout=900 \
    </dev/null >/dev/null 2>&1 &
  wait_until 60 "mariadb on $SOCK" db_ok
  log "mariadb started (pid $(cat "$BASE/run/mysqld/mysqld.pid"), port $DB_PORT)"
fi
tk 30 mariadb --socket="$SOCK" -e "
  CREATE USER IF NOT EXISTS 'slurm'@'127.0.0.1' IDENTIFIED BY 'isqaflow-slurm';
  CREATE USER IF NOT EXISTS 'slurm'@'localhost' IDENTIFIED BY 'isqaflow-slurm';
  GRANT ALL ON slurm_acct_db.* TO 'slurm'@'127.0.0.1';
  GRANT ALL ON slurm_acct_db.* TO 'slurm'@'localhost';
  FLUSH PRIVILEGES;"
phase_done mariadb

# --------------------------------------------------------------------------- slurmdbd
if running "$BASE/run/slurmdbd.pid"; then
  log "slurmdbd already running"
else
  tk 30 slurmdbd </dev/null >>"$BASE/log/slurmdbd-start.log" 2>&1
  log "slurmdbd started"
fi
wait_until 90 "slurmdbd to answer sacctmgr" tk 10 sacctmgr -n list cluster
q() { tk 20 sacctmgr -n -P "$@"; }
[ -n "$(q list cluster "$CLUSTER" format=cluster)" ] \
  || tk 30 sacctmgr -i add cluster "$CLUSTER" >/dev/null
[ -n "$(q list account "$ACCOUNT" format=account)" ] \
  || tk 30 sacctmgr -i add account "$ACCOUNT" Cluster="$CLUSTER" \
      Description=isqaflow-tests Organization=isqaflow >/dev/null
for u in $USERS; do
  id "$u" >/dev/null 2>&1 || die "user '$u' (ISQAFLOW_SLURM_USERS) does not exist"
  [ -n "$(q list assoc user="$u" account="$ACCOUNT" cluster="$CLUSTER" format=user)" ] \
    || tk 30 sacctmgr -i add user "$u" Account="$ACCOUNT" DefaultAccount="$ACCOUNT" \
        Cluster="$CLUSTER" >/dev/null
done
log "accounting: cluster $CLUSTER, account $ACCOUNT, users: $USERS"
phase_done slurmdbd

# --------------------------------------------------------------------------- slurmctld
stop_daemon() { # stop_daemon <name>: SIGTERM via its PID file, wait, SIGKILL if needed
  local pidfile=$BASE/run/$1.pid pid
  running "$pidfile" || return 0
  pid=$(cat "$pidfile")
  kill "$pid" 2>/dev/null || true
  local deadline=$(( $(date +%s) + 30 ))
  while pid_alive "$pid" && [ "$(date +%s)" -lt "$deadline" ]; do sleep 0.25; done
  pid_alive "$pid" && kill -9 "$pid" 2>/dev/null || true
  rm -f "$pidfile"
  log "$1 (pid $pid) stopped"
}
# A changed slurm.conf/gres.conf (node layout, memory, GRES) is applied by
# restarting both daemons: `scontrol reconfigure` makes this slurmd re-exec
# itself, which races with the PID-file checks below.
if [ "$conf_changed" = 1 ] && running "$BASE/run/slurmctld.pid"; then
  log "config changed: restarting slurmd and slurmctld"
  stop_daemon slurmd
  stop_daemon slurmctld
fi
if running "$BASE/run/slurmctld.pid"; then
  log "slurmctld already running"
else
  tk 30 slurmctld </dev/null >>"$BASE/log/slurmctld-start.log" 2>&1
  log "slurmctld started"
fi
wait_until 60 "slurmctld to answer 'scontrol ping'" \
  sh -c 'timeout -s KILL 10 scontrol ping | grep -q "is UP"'
phase_done slurmctld

# --------------------------------------------------------------------------- slurmd
if running "$BASE/run/slurmd.pid"; then
  log "slurmd already running"
else
  tk 30 slurmd </dev/null >>"$BASE/log/slurmd-start.log" 2>&1
  wait_until 30 "slurmd to write its PID file" running "$BASE/run/slurmd.pid"
  log "slurmd started (pid $(cat "$BASE/run/slurmd.pid"))"
fi
node_state() { tk 10 sinfo -h -n "$NODE" -o %T; }
wait_until 60 "node $NODE to register" sh -c \
  "timeout -s KILL 10 sinfo -h -n $NODE -o %T | grep -Eq '^(idle|mixed|allocated|completing|drained|draining|down|inval)'"
state=$(node_state)
# State is saved across restarts: a node drained or downed in an earlier run
# (e.g. a killed job, a GRES mismatch) stays so until resumed.
if grep -Eq 'drain|down|inval|fail' <<<"$state"; then
  reason=$(tk 10 sinfo -h -n "$NODE" -o %E)
  log "node $NODE is $state (reason: $reason); resuming"
  tk 10 scontrol update NodeName="$NODE" State=RESUME || true
fi
wait_until 60 "node $NODE to become idle (sinfo: $(node_state 2>&1 || true))" sh -c \
  "timeout -s KILL 10 sinfo -h -n $NODE -o %T | grep -Eq '^(idle|mixed|allocated|completing)$'"
log "node $NODE is $(node_state)"
phase_done slurmd

tk 10 sinfo -o '%P %a %D %T %N %G' | sed 's/^/    /'
TIMINGS+=("total=$(elapsed)s")
log "timings: ${TIMINGS[*]}"
log "cluster ready: partition=$PARTITION account=$ACCOUNT node=$NODE base=$BASE"
