#define _GNU_SOURCE
#include "CNodeIO.h"
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <poll.h>
#include <pthread.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static socklen_t to_sockaddr(const sfu_address *a, struct sockaddr_storage *s) {
    memset(s, 0, sizeof *s);
    if (a->family == 6) {
        struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)s;
        v6->sin6_family = AF_INET6;
        v6->sin6_port = htons(a->port);
        memcpy(&v6->sin6_addr, a->address, 16);
        return sizeof *v6;
    }
    struct sockaddr_in *v4 = (struct sockaddr_in *)s;
    v4->sin_family = AF_INET;
    v4->sin_port = htons(a->port);
    memcpy(&v4->sin_addr, a->address, 4);
    return sizeof *v4;
}

static void from_sockaddr(const struct sockaddr_storage *s, sfu_address *a) {
    memset(a, 0, sizeof *a);
    if (s->ss_family == AF_INET6) {
        const struct sockaddr_in6 *v6 = (const struct sockaddr_in6 *)s;
        a->family = 6;
        a->port = ntohs(v6->sin6_port);
        memcpy(a->address, &v6->sin6_addr, 16);
    } else {
        const struct sockaddr_in *v4 = (const struct sockaddr_in *)s;
        a->family = 4;
        a->port = ntohs(v4->sin_port);
        memcpy(a->address, &v4->sin_addr, 4);
    }
}

int sfu_udp_open(const sfu_address *local, sfu_address *bound, int buffer_bytes) {
    int fd = socket(local->family == 6 ? AF_INET6 : AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) return -errno;
    // An IPv6 socket takes IPv6 alone: a dual-stack node binds an IPv4 socket on the same port beside it, and
    // IPv4 clients must not arrive as ::ffff:a.b.c.d on the IPv6 one.
    if (local->family == 6) { int one = 1; setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one); }
    if (buffer_bytes > 0) {
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &buffer_bytes, sizeof buffer_bytes);
        setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &buffer_bytes, sizeof buffer_bytes);
    }
    struct sockaddr_storage s;
    socklen_t n = to_sockaddr(local, &s);
    if (bind(fd, (struct sockaddr *)&s, n) < 0) { int e = errno; close(fd); return -e; }
    socklen_t len = sizeof s;
    if (getsockname(fd, (struct sockaddr *)&s, &len) == 0 && bound) from_sockaddr(&s, bound);
    return fd;
}

void sfu_udp_close(int fd) { if (fd >= 0) close(fd); }

#define SFU_MAX_BATCH 256

int sfu_udp_enable_timestamps(int fd) {
    int on = 1;
    return setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPNS, &on, sizeof on) == 0 ? 0 : -errno;
}

int sfu_udp_recv_batch_timestamped(int fd, uint8_t *const *buffers, int buffer_size, int *lengths, sfu_address *sources,
                                   int64_t *timestamps, int count) {
    if (count > SFU_MAX_BATCH) count = SFU_MAX_BATCH;
    struct mmsghdr msgs[SFU_MAX_BATCH];
    struct iovec iov[SFU_MAX_BATCH];
    struct sockaddr_storage addrs[SFU_MAX_BATCH];
    union { char buf[CMSG_SPACE(sizeof(struct timespec))]; struct cmsghdr align; } control[SFU_MAX_BATCH];
    memset(msgs, 0, sizeof(struct mmsghdr) * (size_t)count);
    for (int i = 0; i < count; i++) {
        iov[i].iov_base = buffers[i];
        iov[i].iov_len = (size_t)buffer_size;
        msgs[i].msg_hdr.msg_iov = &iov[i];
        msgs[i].msg_hdr.msg_iovlen = 1;
        msgs[i].msg_hdr.msg_name = &addrs[i];
        msgs[i].msg_hdr.msg_namelen = sizeof addrs[i];
        if (timestamps) {
            msgs[i].msg_hdr.msg_control = control[i].buf;
            msgs[i].msg_hdr.msg_controllen = sizeof control[i].buf;
        }
    }
    int n = recvmmsg(fd, msgs, (unsigned)count, MSG_DONTWAIT, NULL);
    if (n < 0) return (errno == EAGAIN || errno == EWOULDBLOCK) ? 0 : -errno;
    for (int i = 0; i < n; i++) {
        // A datagram larger than the buffer is truncated: report it as too long so the caller drops it.
        lengths[i] = (msgs[i].msg_hdr.msg_flags & MSG_TRUNC) ? buffer_size + 1 : (int)msgs[i].msg_len;
        from_sockaddr(&addrs[i], &sources[i]);
        if (!timestamps) continue;
        timestamps[i] = 0;
        for (struct cmsghdr *c = CMSG_FIRSTHDR(&msgs[i].msg_hdr); c != NULL; c = CMSG_NXTHDR(&msgs[i].msg_hdr, c)) {
            if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_TIMESTAMPNS) {
                struct timespec ts;
                memcpy(&ts, CMSG_DATA(c), sizeof ts);
                timestamps[i] = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
            }
        }
    }
    return n;
}

int sfu_udp_recv_batch(int fd, uint8_t *const *buffers, int buffer_size, int *lengths, sfu_address *sources, int count) {
    return sfu_udp_recv_batch_timestamped(fd, buffers, buffer_size, lengths, sources, NULL, count);
}

int sfu_udp_send_batch(int fd, const uint8_t *const *buffers, const int *lengths, const sfu_address *destinations, int count) {
    int sent = 0;
    while (sent < count) {
        int n = count - sent > SFU_MAX_BATCH ? SFU_MAX_BATCH : count - sent;
        struct mmsghdr msgs[SFU_MAX_BATCH];
        struct iovec iov[SFU_MAX_BATCH];
        struct sockaddr_storage addrs[SFU_MAX_BATCH];
        memset(msgs, 0, sizeof(struct mmsghdr) * (size_t)n);
        for (int i = 0; i < n; i++) {
            iov[i].iov_base = (void *)buffers[sent + i];
            iov[i].iov_len = (size_t)lengths[sent + i];
            msgs[i].msg_hdr.msg_iov = &iov[i];
            msgs[i].msg_hdr.msg_iovlen = 1;
            msgs[i].msg_hdr.msg_name = &addrs[i];
            msgs[i].msg_hdr.msg_namelen = to_sockaddr(&destinations[sent + i], &addrs[i]);
        }
        int r = sendmmsg(fd, msgs, (unsigned)n, MSG_DONTWAIT);
        if (r < 0) return sent > 0 ? sent : -errno;
        sent += r;
        if (r < n) break;  // the socket buffer is full: the caller counts the rest as dropped
    }
    return sent;
}

int sfu_udp_send_gso(int fd, const uint8_t *buffer, int length, int segment_size, const sfu_address *destination) {
    struct sockaddr_storage addr;
    struct iovec iov = { .iov_base = (void *)buffer, .iov_len = (size_t)length };
    char control[CMSG_SPACE(sizeof(uint16_t))];
    struct msghdr msg;
    memset(&msg, 0, sizeof msg);
    memset(control, 0, sizeof control);
    msg.msg_name = &addr;
    msg.msg_namelen = to_sockaddr(destination, &addr);
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
    struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_UDP;
    c->cmsg_type = UDP_SEGMENT;
    c->cmsg_len = CMSG_LEN(sizeof(uint16_t));
    uint16_t seg = (uint16_t)segment_size;
    memcpy(CMSG_DATA(c), &seg, sizeof seg);
    ssize_t n = sendmsg(fd, &msg, MSG_DONTWAIT);
    return n < 0 ? -errno : (int)n;
}

int sfu_udp_wait(int fd, int timeout_ms) {
    struct pollfd p = { .fd = fd, .events = POLLIN };
    int r = poll(&p, 1, timeout_ms);
    if (r < 0) return errno == EINTR ? 0 : -errno;
    return r > 0 ? 1 : 0;
}

#include <sys/eventfd.h>

int sfu_wake_open(void) {
    int fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    return fd < 0 ? -errno : fd;
}

void sfu_wake_signal(int wake_fd) {
    uint64_t one = 1;
    ssize_t r = write(wake_fd, &one, sizeof one);
    (void)r;
}

void sfu_wake_drain(int wake_fd) {
    uint64_t v;
    ssize_t r = read(wake_fd, &v, sizeof v);
    (void)r;
}

int sfu_udp_wait_or_wake(int fd, int wake_fd, int timeout_ms) {
    struct pollfd p[2] = { { .fd = fd, .events = POLLIN }, { .fd = wake_fd, .events = POLLIN } };
    int r = poll(p, 2, timeout_ms);
    if (r <= 0) return 0;
    return ((p[0].revents & POLLIN) ? 1 : 0) | ((p[1].revents & POLLIN) ? 2 : 0);
}

int sfu_name_this_thread(const char *name) {
    return pthread_setname_np(pthread_self(), name);
}

#include <netinet/tcp.h>
#include <sys/epoll.h>

int sfu_tcp_listen(const sfu_address *local, sfu_address *bound, int backlog) {
    int fd = socket(local->family == 6 ? AF_INET6 : AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) return -errno;
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (local->family == 6) setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
    struct sockaddr_storage s;
    socklen_t n = to_sockaddr(local, &s);
    if (bind(fd, (struct sockaddr *)&s, n) < 0 || listen(fd, backlog) < 0) { int e = errno; close(fd); return -e; }
    socklen_t len = sizeof s;
    if (getsockname(fd, (struct sockaddr *)&s, &len) == 0 && bound) from_sockaddr(&s, bound);
    return fd;
}

int sfu_tcp_accept(int listen_fd, sfu_address *peer, int send_buffer_bytes) {
    struct sockaddr_storage s;
    socklen_t len = sizeof s;
    int fd = accept4(listen_fd, (struct sockaddr *)&s, &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) return -errno;
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (send_buffer_bytes > 0) setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &send_buffer_bytes, sizeof send_buffer_bytes);
    if (peer) from_sockaddr(&s, peer);
    return fd;
}

int sfu_tcp_read(int fd, uint8_t *buffer, int capacity) {
    ssize_t r = recv(fd, buffer, (size_t)capacity, MSG_DONTWAIT);
    return r < 0 ? -errno : (int)r;
}

int sfu_tcp_write(int fd, const uint8_t *buffer, int length) {
    ssize_t r = send(fd, buffer, (size_t)length, MSG_DONTWAIT | MSG_NOSIGNAL);
    return r < 0 ? -errno : (int)r;
}

void sfu_tcp_close(int fd, int reset) {
    if (fd < 0) return;
    if (reset) {
        struct linger l = {1, 0};
        setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof l);
    }
    close(fd);
}

int sfu_epoll_open(void) {
    int fd = epoll_create1(EPOLL_CLOEXEC);
    return fd < 0 ? -errno : fd;
}

int sfu_epoll_control(int epoll_fd, int op, int fd, int out, uint64_t token) {
    struct epoll_event e;
    memset(&e, 0, sizeof e);
    e.events = EPOLLIN | EPOLLRDHUP | (out ? EPOLLOUT : 0);
    e.data.u64 = token;
    int o = op == 1 ? EPOLL_CTL_ADD : op == 2 ? EPOLL_CTL_MOD : EPOLL_CTL_DEL;
    return epoll_ctl(epoll_fd, o, fd, &e) < 0 ? -errno : 0;
}

int sfu_epoll_ready(int epoll_fd, uint64_t *tokens, uint8_t *bits, int count, int timeout_ms) {
    struct epoll_event events[64];
    if (count > 64) count = 64;
    int n = epoll_wait(epoll_fd, events, count, timeout_ms);
    if (n < 0) return errno == EINTR ? 0 : -errno;
    for (int i = 0; i < n; i++) {
        tokens[i] = events[i].data.u64;
        uint32_t ev = events[i].events;
        bits[i] = (uint8_t)(((ev & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) ? 1 : 0) | ((ev & EPOLLOUT) ? 2 : 0));
    }
    return n;
}

int sfu_tcp_connect(const sfu_address *remote, const sfu_address *from, sfu_address *local) {
    int fd = socket(remote->family == 6 ? AF_INET6 : AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -errno;
    struct sockaddr_storage s;
    socklen_t n;
    if (from) {
        int one = 1;
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        n = to_sockaddr(from, &s);
        if (bind(fd, (struct sockaddr *)&s, n) < 0) { int e = errno; close(fd); return -e; }
    }
    n = to_sockaddr(remote, &s);
    if (connect(fd, (struct sockaddr *)&s, n) < 0) { int e = errno; close(fd); return -e; }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    socklen_t len = sizeof s;
    if (getsockname(fd, (struct sockaddr *)&s, &len) == 0 && local) from_sockaddr(&s, local);
    return fd;
}

#include <sys/resource.h>

long sfu_raise_descriptor_limit(void) {
    struct rlimit r;
    if (getrlimit(RLIMIT_NOFILE, &r) < 0) return -errno;
    if (r.rlim_cur < r.rlim_max) {
        r.rlim_cur = r.rlim_max;
        if (setrlimit(RLIMIT_NOFILE, &r) < 0) return -errno;
    }
    return (long)r.rlim_cur;
}
