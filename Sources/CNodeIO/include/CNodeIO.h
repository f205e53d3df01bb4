// Batched UDP for the node's workers: recvmmsg/sendmmsg and UDP GSO (Glibc's Swift module does not expose
// mmsghdr, and cmsg handling is macro-based). Addresses cross as IPv4/IPv6 bytes + port, never sockaddr.
#ifndef SFU_CNODEIO_H
#define SFU_CNODEIO_H
#include <stdint.h>

typedef struct {
    uint8_t family;      // 4 or 6
    uint8_t address[16]; // IPv4 in the first 4 bytes
    uint16_t port;
} sfu_address;

/// A non-blocking UDP socket bound to `local` (port 0 picks one); returns the fd or -errno. `bound` gets the
/// address actually bound. `buffer_bytes` sets SO_RCVBUF/SO_SNDBUF when > 0.
int sfu_udp_open(const sfu_address *local, sfu_address *bound, int buffer_bytes);
void sfu_udp_close(int fd);

/// recvmmsg without waiting: up to `count` datagrams into buffers[i] (capacity `buffer_size`), lengths and
/// sources filled in. Returns how many, 0 when none is waiting, or -errno.
int sfu_udp_recv_batch(int fd, uint8_t *const *buffers, int buffer_size, int *lengths, sfu_address *sources, int count);

/// The same, also reading each datagram's kernel receive time (CLOCK_REALTIME, ns; 0 when absent) into
/// `timestamps` (NULL: none, as sfu_udp_recv_batch): needs sfu_udp_enable_timestamps on the socket.
int sfu_udp_recv_batch_timestamped(int fd, uint8_t *const *buffers, int buffer_size, int *lengths, sfu_address *sources,
                                   int64_t *timestamps, int count);

/// Asks the kernel to stamp each received datagram (SO_TIMESTAMPNS). Returns 0 or -errno.
int sfu_udp_enable_timestamps(int fd);

/// sendmmsg of `count` datagrams; returns how many the kernel took, or -errno.
int sfu_udp_send_batch(int fd, const uint8_t *const *buffers, const int *lengths, const sfu_address *destinations, int count);

/// One sendmsg with UDP_SEGMENT: `length` bytes split by the kernel into datagrams of `segment_size` (the last
/// may be shorter), all to `destination`. Returns bytes sent or -errno.
int sfu_udp_send_gso(int fd, const uint8_t *buffer, int length, int segment_size, const sfu_address *destination);

/// Waits until the socket is readable or `timeout_ms` passes; 1 readable, 0 timeout, -errno.
int sfu_udp_wait(int fd, int timeout_ms);
#endif

#ifndef SFU_CNODEIO_WAKE
#define SFU_CNODEIO_WAKE
/// An eventfd another thread writes to wake a worker out of its wait; returns the fd or -errno.
int sfu_wake_open(void);
void sfu_wake_signal(int wake_fd);
void sfu_wake_drain(int wake_fd);
/// Waits until the socket is readable, the wake fd is signalled, or `timeout_ms` passes.
/// Returns a bit set: 1 socket readable, 2 woken; 0 on timeout.
int sfu_udp_wait_or_wake(int fd, int wake_fd, int timeout_ms);
#endif

#ifndef SFU_CNODEIO_THREAD_NAME
#define SFU_CNODEIO_THREAD_NAME
/// Names the calling thread for the OS (at most 15 characters are kept): pthread_setname_np, which Swift's
/// Glibc module does not export. Returns 0 or an errno.
int sfu_name_this_thread(const char *name);
#endif

#ifndef SFU_CNODEIO_TCP
#define SFU_CNODEIO_TCP
/// A non-blocking TCP listening socket bound to `local` (port 0 picks one), SO_REUSEADDR; returns the fd or
/// -errno. `bound` gets the address actually bound.
int sfu_tcp_listen(const sfu_address *local, sfu_address *bound, int backlog);
/// Accepts one waiting connection, non-blocking with TCP_NODELAY (media must not wait for Nagle); returns the
/// fd or -errno (-EAGAIN: none waiting). `peer` gets the client's address.
int sfu_tcp_accept(int listen_fd, sfu_address *peer, int send_buffer_bytes);
/// Reads what the connection has, up to `capacity`: bytes read, 0 at end of stream, -errno (-EAGAIN: nothing now).
int sfu_tcp_read(int fd, uint8_t *buffer, int capacity);
/// Writes up to `length` bytes without blocking (MSG_NOSIGNAL): bytes taken, or -errno.
int sfu_tcp_write(int fd, const uint8_t *buffer, int length);
/// Closes a connection at once: SO_LINGER 0 when `reset` (a hostile or stalled peer gets RST, no TIME_WAIT).
void sfu_tcp_close(int fd, int reset);

/// An epoll instance and its interest list, by token (the caller's 64-bit key for the descriptor).
int sfu_epoll_open(void);
/// Adds (op 1), changes (op 2) or removes (op 3) `fd`: `out` also asks for writability. Returns 0 or -errno.
int sfu_epoll_control(int epoll_fd, int op, int fd, int out, uint64_t token);
/// Up to `count` ready descriptors without waiting beyond `timeout_ms`: tokens and bits (1 readable or hung
/// up or in error, 2 writable). Returns how many, or -errno.
int sfu_epoll_ready(int epoll_fd, uint64_t *tokens, uint8_t *bits, int count, int timeout_ms);
#endif

#ifndef SFU_CNODEIO_TCP_CLIENT
#define SFU_CNODEIO_TCP_CLIENT
/// Connects to `remote` (blocking, for clients and tests), then makes the socket non-blocking with
/// TCP_NODELAY; returns the fd or -errno. `from`, when not NULL, is the local address to connect from (with
/// SO_REUSEADDR: a client reconnecting from the port of a connection it reset); `local` gets the address bound.
int sfu_tcp_connect(const sfu_address *remote, const sfu_address *from, sfu_address *local);
#endif

#ifndef SFU_CNODEIO_LIMITS
#define SFU_CNODEIO_LIMITS
/// Raises the soft limit on open descriptors to the hard limit (ICE-TCP connections are descriptors); returns
/// the soft limit in force after, or -errno.
long sfu_raise_descriptor_limit(void);
#endif

#ifndef SFU_CNODEIO_SPAWN
#define SFU_CNODEIO_SPAWN
/// Starts the program at `path` with `argv` and `envp` (each NULL-terminated) as a child of its own: standard
/// input, output and error on `fd0`, `fd1`, `fd2` (-1: /dev/null), every other descriptor closed, an empty
/// signal mask and every signal at its default action (the calling thread's mask and the node's ignored
/// signals are not inherited), in a process group of its own. Returns the pid, or -errno.
int sfu_spawn(const char *path, char *const argv[], char *const envp[], int fd0, int fd1, int fd2);
/// Blocks until child `pid` has exited, without reaping it (its pid stays taken until `sfu_child_reap`).
/// Returns 0 or -errno.
int sfu_child_wait(int pid);
/// Reaps child `pid`, which has exited: `*signaled` is 1 when a signal ended it (`*code` the signal), else 0
/// (`*code` its exit status). Returns 0, or -errno.
int sfu_child_reap(int pid, int *signaled, int *code);
#endif
