/* A command's watchdog, compiled: the same program as activities/sandbox/watchdog.py, which
 * says what it does and why. This form exists for its cost: a Python interpreter started per
 * command cost ~20 ms of every shell command; this binary starts in well under one.
 *
 *   watchdog FD QUIET RECORD LIMIT COMMAND...
 *
 * It runs COMMAND with pipes of its own and passes its output on (non-blocking, at most
 * BUFFERED bytes held per stream for a worker that does not read), and reads pipe FD, which
 * the worker's pulse thread writes a byte to every quarter second while its event loop runs:
 * end of file (the worker died) or QUIET seconds of silence (stopped, stuck, frozen) and the
 * command is killed and the watchdog exits with LOST_EXIT. A command that ended by itself has
 * its status and the head of its output (LIMIT bytes of each stream, base64) written durably
 * to RECORD (unless "-") before the watchdog exits with the command's own status.
 *
 * Built by activities/sandbox/native.py with the system's C compiler; the Python form is used
 * where there is none. tests/unit/test_watchdogs.py runs both through the same cases.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define LOST_EXIT 199
#define TICK_MS 250
#define BUFFERED (1024 * 1024)
#define CHUNK 65536
#define DRAIN_SECONDS 0.5
/* When the worker dies, a command already ending is given this long to end by itself and have
 * its end recorded (watchdog.py: DYING_GRACE). */
#define DYING_GRACE 0.5

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif

typedef struct {
    int source; /* -1 once at end of file */
    int target;
    size_t limit;
    unsigned char *head;
    size_t head_len;
    unsigned long long dropped;
    unsigned char *pending; /* bytes read, not yet passed on: [start, len) */
    size_t start, len, cap;
} Stream;

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void *need(void *p) {
    if (p == NULL) {
        static const char msg[] = "xsky: the command's watchdog is out of memory\n";
        (void)!write(2, msg, sizeof msg - 1);
        _exit(LOST_EXIT);
    }
    return p;
}

static void stream_init(Stream *s, int source, int target, size_t limit) {
    s->source = source;
    s->target = target;
    s->limit = limit;
    s->head = need(malloc(limit ? limit : 1));
    s->head_len = 0;
    s->dropped = 0;
    s->cap = BUFFERED + CHUNK;
    s->pending = need(malloc(s->cap));
    s->start = s->len = 0;
}

static size_t pending(const Stream *s) { return s->len - s->start; }

static int readable(const Stream *s) { return s->source >= 0 && pending(s) < BUFFERED; }

/* Read what is there (at most CHUNK bytes); the source is closed at end of file. */
static void stream_read(Stream *s) {
    if (s->start > 0) { /* room at the front: move what is pending there */
        memmove(s->pending, s->pending + s->start, pending(s));
        s->len -= s->start;
        s->start = 0;
    }
    if (s->cap - s->len < CHUNK) { /* only while draining, past BUFFERED */
        s->cap *= 2;
        s->pending = need(realloc(s->pending, s->cap));
    }
    ssize_t n = read(s->source, s->pending + s->len, CHUNK);
    if (n < 0 && (errno == EAGAIN || errno == EINTR))
        return;
    if (n <= 0) {
        close(s->source);
        s->source = -1;
        return;
    }
    size_t room = s->limit > s->head_len ? s->limit - s->head_len : 0;
    size_t kept = (size_t)n < room ? (size_t)n : room;
    memcpy(s->head + s->head_len, s->pending + s->len, kept);
    s->head_len += kept;
    s->dropped += (size_t)n - kept;
    s->len += (size_t)n;
}

/* Pass on what the worker can take now; the rest waits (a gone worker: dropped). */
static void stream_flush(Stream *s) {
    while (pending(s) > 0) {
        ssize_t n = write(s->target, s->pending + s->start, pending(s));
        if (n < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EPIPE || errno == EBADF)
                s->start = s->len = 0;
            return;
        }
        s->start += (size_t)n;
    }
    s->start = s->len = 0;
}

static void set_blocking(int fd, int blocking) {
    int flags = fcntl(fd, F_GETFL);
    if (flags >= 0)
        fcntl(fd, F_SETFL, blocking ? (flags & ~O_NONBLOCK) : (flags | O_NONBLOCK));
}

/* -- the record ---------------------------------------------------------------------------- */

typedef struct {
    char *data;
    size_t len, cap;
} Text;

static void put(Text *t, const char *s, size_t n) {
    if (t->len + n + 1 > t->cap) {
        while (t->len + n + 1 > t->cap)
            t->cap = t->cap ? t->cap * 2 : 4096;
        t->data = need(realloc(t->data, t->cap));
    }
    memcpy(t->data + t->len, s, n);
    t->len += n;
    t->data[t->len] = '\0';
}

static void put_str(Text *t, const char *s) { put(t, s, strlen(s)); }

static void put_base64(Text *t, const unsigned char *b, size_t n) {
    static const char abc[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    char four[4];
    for (size_t i = 0; i < n; i += 3) {
        unsigned v = (unsigned)b[i] << 16;
        if (i + 1 < n)
            v |= (unsigned)b[i + 1] << 8;
        if (i + 2 < n)
            v |= b[i + 2];
        four[0] = abc[(v >> 18) & 63];
        four[1] = abc[(v >> 12) & 63];
        four[2] = i + 1 < n ? abc[(v >> 6) & 63] : '=';
        four[3] = i + 2 < n ? abc[v & 63] : '=';
        put(t, four, 4);
    }
}

/* The command's end, durably: a temporary file synced, then renamed (a reader sees the whole
 * record or none), then its folder synced. Whether it was written: a full or read-only disk
 * leaves no record there (the caller then tries the spare place). */
static int write_record(const char *path, int status, Stream *out, Stream *err, double seconds) {
    Text t = {0};
    char number[64];
    snprintf(number, sizeof number, "{\"status\": %d, \"stdoutB64\": \"", status);
    put_str(&t, number);
    put_base64(&t, out->head, out->head_len);
    snprintf(number, sizeof number, "\", \"stdoutDropped\": %llu, \"stderrB64\": \"", out->dropped);
    put_str(&t, number);
    put_base64(&t, err->head, err->head_len);
    snprintf(number, sizeof number, "\", \"stderrDropped\": %llu, \"seconds\": %.3f}",
             err->dropped, seconds);
    put_str(&t, number);

    size_t plen = strlen(path);
    char *tmp = need(malloc(plen + 32));
    snprintf(tmp, plen + 32, "%s.%d.tmp", path, (int)getpid());
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    int ok = fd >= 0;
    for (size_t done = 0; ok && done < t.len;) {
        ssize_t n = write(fd, t.data + done, t.len - done);
        if (n < 0 && errno == EINTR)
            continue;
        ok = n > 0;
        done += ok ? (size_t)n : 0;
    }
    ok = ok && fsync(fd) == 0;
    if (fd >= 0)
        close(fd);
    ok = ok && rename(tmp, path) == 0;
    if (!ok) {
        unlink(tmp);
    } else {
        char *folder = need(strdup(path));
        char *slash = strrchr(folder, '/');
        if (slash == folder)
            slash[1] = '\0';
        else if (slash != NULL)
            *slash = '\0';
        int dir = open(slash ? folder : ".", O_RDONLY | O_CLOEXEC);
        if (dir >= 0) {
            fsync(dir);
            close(dir);
        }
        free(folder);
    }
    free(tmp);
    free(t.data);
    return ok;
}

/* -- the command --------------------------------------------------------------------------- */

static pid_t start(char **argv, int pulse, int *out_r, int *err_r) {
    int out[2], err[2];
    if (pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0) {
        perror("xsky: the command's watchdog cannot make a pipe");
        _exit(127);
    }
    pid_t child = fork();
    if (child < 0) {
        perror("xsky: the command's watchdog cannot fork");
        _exit(127);
    }
    if (child == 0) {
        close(pulse);
        dup2(out[1], 1); /* dup2 clears close-on-exec on the copies */
        dup2(err[1], 2);
        signal(SIGPIPE, SIG_DFL); /* the watchdog ignores it; the command gets the default */
        execvp(argv[0], argv);
        dprintf(2, "xsky: cannot run %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    close(out[1]);
    close(err[1]);
    *out_r = out[0];
    *err_r = err[0];
    return child;
}

int main(int argc, char **argv) {
    if (argc < 6) {
        fprintf(stderr, "usage: %s FD QUIET RECORD LIMIT COMMAND...\n", argv[0]);
        return 2;
    }
    int pulse = atoi(argv[1]);
    double quiet = strtod(argv[2], NULL);
    const char *record = argv[3];
    size_t limit = (size_t)strtoull(argv[4], NULL, 10);
    /* Where the record goes when RECORD cannot take it (the store's disk full or read-only):
     * the worker's own disk. Not the command's business: taken out of its environment. */
    const char *given = getenv("XSKY_RECORD_SPARE");
    char *spare = given != NULL && given[0] != '\0' ? need(strdup(given)) : NULL;
    unsetenv("XSKY_RECORD_SPARE");
    signal(SIGPIPE, SIG_IGN); /* a gone worker is seen as EPIPE, not as this process's death */

    double began = now();
    int out_r, err_r;
    pid_t child = start(argv + 5, pulse, &out_r, &err_r);
    int pidfd = (int)syscall(SYS_pidfd_open, child, 0);
    Stream out, err;
    stream_init(&out, out_r, 1, limit);
    stream_init(&err, err_r, 2, limit);
    Stream *streams[2] = {&out, &err};
    set_blocking(out_r, 0);
    set_blocking(err_r, 0);
    set_blocking(1, 0);
    set_blocking(2, 0);

    double last = now();
    const char *lost = NULL;
    char lost_text[128];
    int status = 0;
    for (;;) {
        struct pollfd fds[6];
        int n = 0, at_pulse = n, at_src[2] = {-1, -1}, at_dst[2] = {-1, -1};
        fds[n++] = (struct pollfd){.fd = pulse, .events = POLLIN};
        if (pidfd >= 0)
            fds[n++] = (struct pollfd){.fd = pidfd, .events = POLLIN};
        for (int i = 0; i < 2; i++) {
            if (readable(streams[i])) {
                at_src[i] = n;
                fds[n++] = (struct pollfd){.fd = streams[i]->source, .events = POLLIN};
            }
            if (pending(streams[i]) > 0) {
                at_dst[i] = n;
                fds[n++] = (struct pollfd){.fd = streams[i]->target, .events = POLLOUT};
            }
        }
        if (poll(fds, (nfds_t)n, TICK_MS) < 0 && errno != EINTR) {
            lost = "the command's watchdog cannot wait";
            break;
        }
        for (int i = 0; i < 2; i++) {
            if (at_src[i] >= 0 && fds[at_src[i]].revents)
                stream_read(streams[i]);
            if (at_dst[i] >= 0 && fds[at_dst[i]].revents)
                stream_flush(streams[i]);
        }
        if (waitpid(child, &status, WNOHANG) == child)
            break; /* ended by itself: this wins over a pulse that ended at the same moment */
        if (fds[at_pulse].revents) {
            char buf[4096];
            ssize_t got = read(pulse, buf, sizeof buf);
            if (got == 0 || (got < 0 && errno != EAGAIN && errno != EINTR)) {
                lost = "the worker died";
                break;
            }
            last = now();
        }
        if (now() - last > quiet) {
            snprintf(lost_text, sizeof lost_text, "the worker stopped answering for %gs", quiet);
            lost = lost_text;
            break;
        }
    }
    if (lost != NULL && strcmp(lost, "the worker died") == 0) {
        double until = now() + DYING_GRACE;
        for (;;) {
            if (waitpid(child, &status, WNOHANG) == child) {
                lost = NULL;
                break;
            }
            double left = until - now();
            if (left <= 0)
                break;
            if (pidfd >= 0) {
                struct pollfd one = {.fd = pidfd, .events = POLLIN};
                poll(&one, 1, (int)(left * 1000) + 1);
            } else {
                struct timespec nap = {0, 10 * 1000 * 1000};
                nanosleep(&nap, NULL);
            }
        }
    }
    if (lost != NULL) {
        kill(child, SIGKILL);
        waitpid(child, NULL, 0);
        stream_flush(&out);
        stream_flush(&err);
        dprintf(2, "xsky: %s: the command was killed\n", lost);
        _exit(LOST_EXIT);
    }
    /* Its last output: what is in the pipes now, and what its namespace's last processes write
     * while they go (a sandbox's processes die with its init; a stray one is not waited for). */
    double deadline = now() + DRAIN_SECONDS;
    while ((out.source >= 0 || err.source >= 0) && now() < deadline) {
        struct pollfd fds[2];
        Stream *which[2];
        int n = 0;
        for (int i = 0; i < 2; i++) {
            if (streams[i]->source >= 0) {
                which[n] = streams[i];
                fds[n++] = (struct pollfd){.fd = streams[i]->source, .events = POLLIN};
            }
        }
        if (poll(fds, (nfds_t)n, 50) < 0 && errno != EINTR)
            break;
        for (int i = 0; i < n; i++)
            if (fds[i].revents)
                stream_read(which[i]);
    }
    int code = WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status);
    if (strcmp(record, "-") != 0 && !write_record(record, code, &out, &err, now() - began) &&
        spare != NULL)
        write_record(spare, code, &out, &err, now() - began);
    for (int i = 0; i < 2; i++) {
        set_blocking(streams[i]->target, 1);
        stream_flush(streams[i]);
    }
    if (WIFSIGNALED(status)) {
        signal(WTERMSIG(status), SIG_DFL);
        kill(getpid(), WTERMSIG(status));
        _exit(128 + WTERMSIG(status));
    }
    _exit(code);
}
