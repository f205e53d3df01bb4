#define _GNU_SOURCE
#include "CNodeIO.h"
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

// posix_spawn (glibc: clone(CLONE_VM | CLONE_VFORK) and exec) with the attributes Foundation's Process does
// not set: without POSIX_SPAWN_SETSIGMASK the child starts with the mask of the thread that spawned it (a
// libdispatch or Swift concurrency thread blocks nearly every signal, SIGTERM included), and without
// POSIX_SPAWN_SETSIGDEF a signal the node ignores (ServiceLifecycle sets SIGTERM and SIGINT to SIG_IGN) stays
// ignored across exec (POSIX, execve(2)).
int sfu_spawn(const char *path, char *const argv[], char *const envp[], int fd0, int fd1, int fd2) {
    posix_spawn_file_actions_t actions;
    posix_spawnattr_t attributes;
    int err = posix_spawn_file_actions_init(&actions);
    if (err != 0) return -err;
    err = posix_spawnattr_init(&attributes);
    if (err != 0) {
        posix_spawn_file_actions_destroy(&actions);
        return -err;
    }
    const int fds[3] = {fd0, fd1, fd2};
    for (int i = 0; i < 3 && err == 0; i++) {
        err = fds[i] >= 0 ? posix_spawn_file_actions_adddup2(&actions, fds[i], i)
                          : posix_spawn_file_actions_addopen(&actions, i, "/dev/null", i == 0 ? O_RDONLY : O_WRONLY, 0);
    }
    // Every other descriptor of the node closed in the child, close-on-exec or not (glibc 2.34).
    if (err == 0) err = posix_spawn_file_actions_addclosefrom_np(&actions, 3);
    sigset_t all, none;
    sigfillset(&all);
    sigemptyset(&none);
    if (err == 0) err = posix_spawnattr_setsigdefault(&attributes, &all);
    if (err == 0) err = posix_spawnattr_setsigmask(&attributes, &none);
    if (err == 0) err = posix_spawnattr_setpgroup(&attributes, 0);
    if (err == 0) err = posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETPGROUP);
    pid_t pid = 0;
    if (err == 0) err = posix_spawn(&pid, path, &actions, &attributes, argv, envp);
    posix_spawnattr_destroy(&attributes);
    posix_spawn_file_actions_destroy(&actions);
    return err == 0 ? (int)pid : -err;
}

int sfu_child_wait(int pid) {
    siginfo_t info;
    while (waitid(P_PID, (id_t)pid, &info, WEXITED | WNOWAIT) < 0) {
        if (errno != EINTR) return -errno;
    }
    return 0;
}

int sfu_child_reap(int pid, int *signaled, int *code) {
    int status = 0;
    while (waitpid(pid, &status, 0) < 0) {
        if (errno != EINTR) return -errno;
    }
    *signaled = WIFSIGNALED(status) ? 1 : 0;
    *code = WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status);
    return 0;
}
