#ifndef KEEPSAKE_CPOSIX_SHIM_H
#define KEEPSAKE_CPOSIX_SHIM_H

// Linux calls and constants that Swift's Glibc module does not expose. No _GNU_SOURCE
// here: it would change system types and clash with the other C modules.
#include <sys/types.h>
#include <sys/xattr.h>
#include <sys/stat.h>
#include <fcntl.h>
#include <malloc.h>

// Values from the Linux UAPI headers (the same on x86_64 and aarch64).
static const int KS_O_NOATIME = 01000000;
static const int KS_SEEK_DATA = 3;
static const int KS_SEEK_HOLE = 4;
static const long KS_UTIME_NOW = ((1l << 30) - 1l);
/// open(2): a descriptor that only names a file (no read or write), to act on it by descriptor.
static const int KS_O_PATH = 010000000;
/// *at(2) calls: act on the descriptor itself when the name is empty.
static const int KS_AT_EMPTY_PATH = 0x1000;
/// open(2): an unnamed file in the folder given, to be named with linkat(2) once complete
/// (__O_TMPFILE is the same on both; O_DIRECTORY is not, so it comes from <fcntl.h>).
static const int KS_O_TMPFILE = 020000000 | O_DIRECTORY;

extern int syncfs(int fd);
extern int sync_file_range(int fd, long long offset, long long nbytes, unsigned int flags);
static const unsigned int KS_SYNC_FILE_RANGE_WRITE = 2;

static inline int ks_syncfs(int fd) { return syncfs(fd); }
/// Makes malloc map blocks of `threshold` bytes and more on their own, given back when freed
/// (glibc otherwise raises the threshold as such blocks are freed, and keeps them in the heap).
static inline int ks_map_large_blocks(size_t threshold) { return mallopt(M_MMAP_THRESHOLD, (int)threshold); }
/// Starts writing back a range of a file without waiting for it.
static inline int ks_start_writeback(int fd, long long offset, long long length) {
    return sync_file_range(fd, offset, length, KS_SYNC_FILE_RANGE_WRITE);
}
static inline ssize_t ks_flistxattr(int fd, char *list, size_t size) { return flistxattr(fd, list, size); }
static inline ssize_t ks_llistxattr(const char *path, char *list, size_t size) { return llistxattr(path, list, size); }
static inline ssize_t ks_fgetxattr(int fd, const char *name, void *value, size_t size) { return fgetxattr(fd, name, value, size); }
static inline ssize_t ks_lgetxattr(const char *path, const char *name, void *value, size_t size) { return lgetxattr(path, name, value, size); }
static inline int ks_fsetxattr(int fd, const char *name, const void *value, size_t size, int flags) { return fsetxattr(fd, name, value, size, flags); }

// Child processes (the rclone backend). Declared here because Glibc's Swift module leaves out
// the GNU extensions.
#include <spawn.h>
extern int pipe2(int fds[2], int flags);
extern int posix_spawn_file_actions_addclosefrom_np(posix_spawn_file_actions_t *actions, int from);
static const int KS_O_CLOEXEC = 02000000;
/// A pipe whose two ends are closed on exec, made in one step (no window for another thread's
/// spawn to inherit them).
static inline int ks_pipe_cloexec(int fds[2]) { return pipe2(fds, KS_O_CLOEXEC); }
/// Makes a spawned child close every descriptor from `from` up before it runs the program.
static inline int ks_spawn_close_from(posix_spawn_file_actions_t *actions, int from) {
    return posix_spawn_file_actions_addclosefrom_np(actions, from);
}

// Whether the process may be dumped (core files) or attached to by others of its user.
#include <sys/prctl.h>
static inline int ks_set_dumpable(int value) { return prctl(PR_SET_DUMPABLE, value, 0, 0, 0); }
static inline int ks_get_dumpable(void) { return prctl(PR_GET_DUMPABLE, 0, 0, 0, 0); }

#endif
