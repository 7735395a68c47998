#!/usr/bin/env bash
# A single-node Slurm on localhost for the tests, from Debian's packages.
#   cluster.sh start DIR   install (when missing, as root), configure in DIR, start; prints SLURM_CONF
#   cluster.sh stop DIR    stop the daemons started from DIR
# Facts this follows (Debian 12, Slurm 22.05): cgroup plugins do not work in a
# sandbox (linuxproc, task/none); no accounting; cred_expire=10 shortens the
# wait of a requeued job to 11 s; config_overrides lets the node advertise CPUs.
set -euo pipefail
cmd="$1"
dir="$(mkdir -p "$2" && cd "$2" && pwd)"

if [ "$cmd" = stop ]; then
  for d in slurmctld slurmd; do
    [ -f "$dir/$d.pid" ] && kill "$(cat "$dir/$d.pid")" 2>/dev/null || true
  done
  sleep 1
  exit 0
fi

if ! command -v slurmctld >/dev/null || ! command -v slurmd >/dev/null; then
  [ "$(id -u)" -eq 0 ] || { echo "cannot install Slurm: not root"; exit 77; }
  # Keep the packages from starting their own services during the install.
  printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d && chmod +x /usr/sbin/policy-rc.d
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends slurm-wlm >/dev/null 2>&1 || {
    apt-get update -qq >/dev/null 2>&1 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends slurm-wlm >/dev/null 2>&1; } || {
    rm -f /usr/sbin/policy-rc.d; echo "cannot install slurm-wlm"; exit 77; }
  rm -f /usr/sbin/policy-rc.d
fi
[ "$(id -u)" -eq 0 ] || { echo "a test cluster needs root (SlurmUser=root)"; exit 77; }

host="$(hostname -s)"
cpus=8 # advertised (config_overrides): enough for the tests' rank counts on any machine
mkdir -p "$dir/state" "$dir/spool" "$dir/log"
cat > "$dir/slurm.conf" <<CONF
ClusterName=mfttest
SlurmctldHost=$host(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/none
CredType=cred/none
AuthInfo=cred_expire=10
SlurmctldPort=16817
SlurmdPort=16818
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SlurmdParameters=config_overrides
ReturnToService=2
MinJobAge=600
JobRequeue=1
DependencyParameters=kill_invalid_depend
NodeName=$host NodeAddr=127.0.0.1 CPUs=$cpus State=UNKNOWN
PartitionName=test Nodes=$host Default=YES MaxTime=INFINITE State=UP
CONF
export SLURM_CONF="$dir/slurm.conf"
slurmctld -f "$SLURM_CONF" || { echo "slurmctld did not start"; exit 77; }
slurmd -f "$SLURM_CONF" || { echo "slurmd did not start"; exit 77; }
for i in $(seq 1 60); do
  state=$(sinfo -h -o '%t' 2>/dev/null | head -n1)
  [ "$state" = idle ] && { echo "$SLURM_CONF"; exit 0; }
  sleep 0.5
done
echo "the node did not become idle (state '$state'); see $dir/log"
exit 77
