// SPDX-License-Identifier: MIT
/*
 * steps — see steps.h. Raw syscalls only: this code runs in a child cloned
 * from a multi-threaded parent, where another thread may have held the
 * malloc or stdio lock at the moment of the clone.
 */
#include "jail/steps.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <linux/securebits.h>
#include <linux/seccomp.h>
#include <net/if.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

int steps_remap_fds(const struct steps_fdmap *map, size_t n, int first_free)
{
    /* Lift every source above every possible target first, so that placing
     * one fd never clobbers a source that is still waiting to be placed. */
    int lifted[16];
    if (n > 16)
        return -E2BIG;
    for (size_t i = 0; i < n; i++) {
        lifted[i] = fcntl(map[i].src, F_DUPFD_CLOEXEC, first_free + 64);
        if (lifted[i] < 0)
            return -errno;
    }
    for (size_t i = 0; i < n; i++)
        if (dup2(lifted[i], map[i].dst) < 0) /* dup2 clears FD_CLOEXEC on dst */
            return -errno;
    if (syscall(SYS_close_range, (unsigned)first_free, ~0U, 0) < 0)
        return -errno;
    return 0;
}

int steps_set_rlimits(const struct steps_rlimit *rl, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        struct rlimit r = {.rlim_cur = rl[i].value, .rlim_max = rl[i].value};
        if (setrlimit(rl[i].resource, &r) < 0)
            return -errno;
    }
    return 0;
}

int steps_drop_caps(void)
{
    if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL)
        return -errno;
    /* The bounding set: drop until the kernel says the capability does not exist. */
    for (int cap = 0; cap < 64; cap++)
        if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0) {
            if (errno == EINVAL)
                break;
            return -errno;
        }
    /* NOROOT: uid 0 inside the namespace gets no capabilities back on execve;
     * everything locked so the sandboxed code cannot undo it. */
    unsigned long bits = SECBIT_NOROOT | SECBIT_NOROOT_LOCKED | SECBIT_NO_SETUID_FIXUP |
                         SECBIT_NO_SETUID_FIXUP_LOCKED | SECBIT_KEEP_CAPS_LOCKED |
                         SECBIT_NO_CAP_AMBIENT_RAISE | SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED;
    if (prctl(PR_SET_SECUREBITS, bits, 0, 0, 0) < 0)
        return -errno;
    struct __user_cap_header_struct hdr = {.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0};
    struct __user_cap_data_struct data[2] = {{0, 0, 0}, {0, 0, 0}};
    if (syscall(SYS_capset, &hdr, data) < 0)
        return -errno;
    return 0;
}

int steps_no_new_privs(void)
{
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
        return -errno;
    return 0;
}

int steps_reset_signals(void)
{
    struct sigaction dfl = {.sa_handler = SIG_DFL};
    for (int sig = 1; sig < NSIG; sig++) {
        if (sig == SIGKILL || sig == SIGSTOP)
            continue;
        /* Signals glibc reserves for itself (32, 33) refuse with EINVAL: nothing to reset. */
        if (sigaction(sig, &dfl, NULL) < 0 && errno != EINVAL)
            return -errno;
    }
    uint64_t none = 0;
    if (syscall(SYS_rt_sigprocmask, SIG_SETMASK, &none, NULL, sizeof(none)) < 0)
        return -errno;
    return 0;
}

int steps_load_seccomp(const struct sock_fprog *prog)
{
    if (!prog || prog->len == 0)
        return 0;
    if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, prog) < 0)
        return -errno;
    return 0;
}

int steps_write_file(const char *path, const char *data, size_t len)
{
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    ssize_t w;
    do
        w = write(fd, data, len);
    while (w < 0 && errno == EINTR);
    int r = w < 0 ? -errno : ((size_t)w == len ? 0 : -EIO);
    close(fd);
    return r;
}

int steps_mount(const char *src, const char *dst, const char *type, unsigned long flags,
                const char *data)
{
    if (mount(src, dst, type, flags, data) < 0)
        return -errno;
    return 0;
}

int steps_bind_remount(const char *path, unsigned long flags)
{
    int r = steps_mount(path, path, NULL, MS_BIND | MS_REC, NULL);
    if (r < 0)
        return r;
    return steps_mount(NULL, path, NULL, MS_REMOUNT | MS_BIND | flags, NULL);
}

int steps_egress_listen(uint16_t port)
{
    int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (s < 0)
        return -errno;
    struct ifreq ifr = {0};
    ifr.ifr_name[0] = 'l';
    ifr.ifr_name[1] = 'o';
    struct sockaddr_in a = {
        .sin_family = AF_INET,
        .sin_port = htons(port),
        .sin_addr.s_addr = htonl(INADDR_LOOPBACK),
    };
    int r = 0;
    if (ioctl(s, SIOCGIFFLAGS, &ifr) < 0)
        r = -errno;
    ifr.ifr_flags |= IFF_UP;
    if (r == 0 && ioctl(s, SIOCSIFFLAGS, &ifr) < 0)
        r = -errno;
    if (r == 0 && (bind(s, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(s, 64) < 0))
        r = -errno;
    if (r < 0) {
        close(s);
        return r;
    }
    return s;
}

int steps_egress_listener(uint16_t port, int send_fd)
{
    int s = steps_egress_listen(port);
    if (s < 0)
        return s;
    union {
        char buf[CMSG_SPACE(sizeof(int))];
        struct cmsghdr align;
    } u = {0};
    char byte = 'L';
    struct iovec iov = {.iov_base = &byte, .iov_len = 1};
    struct msghdr mh = {
        .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = sizeof(u.buf)};
    struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
    cm->cmsg_level = SOL_SOCKET;
    cm->cmsg_type = SCM_RIGHTS;
    cm->cmsg_len = CMSG_LEN(sizeof(int));
    for (size_t i = 0; i < sizeof(int); i++)
        CMSG_DATA(cm)[i] = ((const unsigned char *)&s)[i];
    int r = sendmsg(send_fd, &mh, MSG_NOSIGNAL) != 1 ? -errno : 0;
    close(s);
    return r;
}
