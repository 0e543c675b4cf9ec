#!/bin/bash
# SPDX-License-Identifier: MIT
# PID 1 of the cgroup v2 VM (tests/cgroup2/run.sh): set the machine up the way a systemd
# host is (the unified hierarchy alone, every controller enabled at the root), put
# ourselves in a "login session" cgroup shared with another process, prepare a delegated
# subtree, run the tests, leave the results in /out and power off.
export PATH=/usr/sbin:/usr/bin:/sbin:/bin
export PYTHONDONTWRITEBYTECODE=1 HOME=/root LANG=C.UTF-8
mountpoint -q /sys/fs/cgroup || mount -t cgroup2 -o nsdelegate,memory_recursiveprot cgroup2 /sys/fs/cgroup
mount -t tmpfs -o mode=1777 tmpfs /tmp
mount -t tmpfs tmpfs /run
mkdir -p /dev/pts /dev/shm
mount -t devpts devpts /dev/pts
mount -t tmpfs tmpfs /dev/shm
ip link set lo up

{
  uname -r
  grep -w cgroup /proc/mounts | sed 's/^/mounts: /'
  echo "root cgroup.controllers: $(cat /sys/fs/cgroup/cgroup.controllers)"
} >/out/kernel.txt

echo "+cpu +memory +pids" >/sys/fs/cgroup/cgroup.subtree_control
mkdir /sys/fs/cgroup/session /sys/fs/cgroup/delegated
echo $$ >/sys/fs/cgroup/session/cgroup.procs
sleep infinity &
export SANDBOXD_SIBLING_PID=$!
export SANDBOXD_DELEGATED=/sys/fs/cgroup/delegated
export SANDBOXD_BIN=/src/build/sandboxd SANDBOXD_CG2_OUT=/out
mkdir -p /tmp/nosuid && export SANDBOXD_SUID_DIR=/tmp/nosuid

cd /src
rc=0
python3 -m pytest -q -p no:cacheprovider -o junit_suite_name=cgroup2 tests/cgroup2 \
  --junitxml=/out/cgroup2.xml >/out/cgroup2-pytest.txt 2>&1 || rc=1
python3 -m pytest -q -p no:cacheprovider -o junit_suite_name=cgroup2-attacks tests/attacks \
  -k "fork_bomb or thread_bomb or memory_bomb or memory_spread or background_process" \
  --junitxml=/out/cgroup2-attacks.xml >/out/cgroup2-attacks-pytest.txt 2>&1 || rc=1
echo "$rc" >/out/rc
sync
echo o >/proc/sysrq-trigger
sleep 10
