#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Run the sandboxd image (make image) with the least privilege that works on this host:
#
#   deploy/podman-run.sh --port P [--image IMAGE] [--name NAME] [--detach]
#                        [--podman-arg ARG]... [-- SERVE-OPTIONS]
#
# publishes sandboxd on 127.0.0.1:P only. SERVE-OPTIONS go to `sandboxd serve` after the
# image's own (--host 0.0.0.0 --port 8080 --state-dir /var/lib/sandboxd/state); --podman-arg
# passes one more option to `podman run` (a volume, an --env, ...). SANDBOXD_API_TOKEN, when
# set, is handed to the container: sandboxd listens on 0.0.0.0 inside it, which needs a token
# (or --tenants, or an explicit `-- --insecure-no-auth`). In the foreground unless --detach;
# podman stops the container on SIGTERM. --dry-run prints the podman command, runs nothing.
#
# Why each option (docs/DEPLOY.md has the long form):
#   --user 10001, --cap-drop ALL, no-new-privileges, --read-only, tmpfs /tmp: sandboxd needs
#       no privilege of its own; it confines code with user namespaces, which need none.
#   seccomp=unconfined: podman's default profile refuses the calls that build a sandbox
#       without CAP_SYS_ADMIN (sethostname, mount in a new namespace); sandboxd applies its
#       own, stricter filter to the code it runs.
#   unmask of /proc: the kernel lets a new /proc be mounted (each sandbox has one) only where
#       the container's /proc is not partly hidden by masks and read-only overmounts.
#   apparmor=unconfined: only where AppArmor is enabled: its container profile forbids mount.
#   --runtime runc: only on hosts whose cgroups are not unified (v1 or hybrid), where crun
#       refuses to start ("cgroups in hybrid mode not supported").
#   --ulimit nofile, nproc: podman asks for higher hard limits than a caller without
#       CAP_SYS_RESOURCE (a VM, a CI runner) may grant; ask for what sandboxd needs, within
#       the caller's own.
set -euo pipefail

usage() { sed -n '3,14p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }

PORT="" IMAGE=localhost/sandboxd:latest NAME="" DETACH=0 DRY=0
EXTRA=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --port) PORT=${2:-}; shift 2 ;;
    --image) IMAGE=${2:?}; shift 2 ;;
    --name) NAME=${2:?}; shift 2 ;;
    --detach) DETACH=1; shift ;;
    --dry-run) DRY=1; shift ;;
    --podman-arg) EXTRA+=("${2:?}"); shift 2 ;;
    --) shift; break ;;
    -h|--help) usage ;;
    *) echo "podman-run: unknown argument '$1'" >&2; usage ;;
  esac
done
[[ $PORT =~ ^[0-9]+$ && $PORT -ge 1 && $PORT -le 65535 ]] || { echo "podman-run: --port: 1 to 65535" >&2; exit 2; }
command -v podman >/dev/null || { echo "podman-run: podman is not installed (make deps)" >&2; exit 1; }

# Limits: what sandboxd needs (connections, pool cells, sandboxes' processes), at most the
# caller's hard limits and the kernel's maximum.
cap() { local v=$1; shift; for m in "$@"; do [[ $m =~ ^[0-9]+$ && $m -lt $v ]] && v=$m; done; echo "$v"; }
nofile=$(cap 65536 "$(ulimit -Hn)" "$(cat /proc/sys/fs/nr_open 2>/dev/null || echo 65536)")
nproc=$(cap 8192 "$(ulimit -Hu)" "$(cat /proc/sys/kernel/pid_max 2>/dev/null || echo 8192)")

ARGS=(run --rm --init=false
  --publish "127.0.0.1:$PORT:8080"
  --user 10001:10001 --cap-drop ALL --security-opt no-new-privileges
  --read-only --tmpfs /tmp:rw,nosuid,nodev,size=64m
  --tmpfs /var/lib/sandboxd:rw,nosuid,nodev,size=256m,mode=0700,U
  --security-opt seccomp=unconfined
  --security-opt unmask=/proc/*
  --ulimit "nofile=$nofile:$nofile" --ulimit "nproc=$nproc:$nproc")
if [[ $(cat /sys/module/apparmor/parameters/enabled 2>/dev/null) == Y ]]; then
  ARGS+=(--security-opt apparmor=unconfined)
fi
if [[ $(stat -fc %T /sys/fs/cgroup 2>/dev/null) != cgroup2fs ]] && command -v runc >/dev/null; then
  ARGS+=(--runtime runc)
fi
[[ -n $NAME ]] && ARGS+=(--name "$NAME")
[[ $DETACH -eq 1 ]] && ARGS+=(--detach)
[[ -n ${SANDBOXD_API_TOKEN:-} ]] && ARGS+=(--env SANDBOXD_API_TOKEN)
ARGS+=("${EXTRA[@]}" "$IMAGE" serve --host 0.0.0.0 --port 8080 --state-dir /var/lib/sandboxd/state "$@")
if [[ $DRY -eq 1 ]]; then
  printf '%q ' podman "${ARGS[@]}"
  echo
  exit 0
fi
exec podman "${ARGS[@]}"
