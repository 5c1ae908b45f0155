// Ctrl-C (SIGINT), SIGTERM and SIGHUP while the dashboard owns the terminal. The handler only
// records the signal and writes a byte to a pipe; the UI thread waits on that pipe beside the
// terminal (poll), wakes, leaves its loop and restores the terminal itself (endwin on the
// thread that owns ncurses), and the process exits with 128 + the signal number.
//
// If the same kind of signal comes again before the UI thread got round to it (a loop stuck
// in a long computation), the handler restores the terminal as far as async-signal-safe calls
// allow (the saved terminal modes, and escape sequences prepared in advance) and _exits.
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>
#include "CWindowSignal.h"

static const int handled[] = {SIGINT, SIGTERM, SIGHUP};
#define HANDLED_COUNT (sizeof handled / sizeof handled[0])

// The dispositions found before the screen library installed its own handlers.
static struct sigaction original[HANDLED_COUNT];
static int have_original = 0;
static int installed[HANDLED_COUNT];
// Written by the handler on any thread, read by the UI thread: a lock-free atomic, which is
// both async-signal-safe and visible across threads.
static atomic_int pending = 0;
static int wake[2] = {-1, -1};

static struct termios saved_modes;
static volatile sig_atomic_t have_saved_modes = 0;
static int tty_fd = -1;
static int output_fd = -1;
static char restore[512];
static size_t restore_length = 0;

static void last_resort(int sig) {
    if (output_fd >= 0 && restore_length > 0) {
        size_t done = 0;
        while (done < restore_length) {
            ssize_t n = write(output_fd, restore + done, restore_length - done);
            if (n <= 0) break;
            done += (size_t)n;
        }
    }
    if (have_saved_modes && tty_fd >= 0) tcsetattr(tty_fd, TCSADRAIN, &saved_modes);
    _exit(128 + sig);
}

static void on_signal(int sig) {
    int saved_errno = errno;
    if (atomic_exchange(&pending, sig) != 0) last_resort(sig);
    if (wake[1] >= 0) {
        char byte = 1;
        (void)!write(wake[1], &byte, 1);
    }
    errno = saved_errno;
}

static void save_dispositions(void) {
    for (size_t i = 0; i < HANDLED_COUNT; i++) {
        if (sigaction(handled[i], NULL, &original[i]) != 0) {
            memset(&original[i], 0, sizeof original[i]);
            original[i].sa_handler = SIG_DFL;
        }
    }
    have_original = 1;
}

void rd_interrupt_prepare(int fd) {
    if (tcgetattr(fd, &saved_modes) == 0) {
        tty_fd = fd;
        have_saved_modes = 1;
    }
    save_dispositions();
}

int rd_interrupt_install(int out_fd, const char *restore_sequence) {
    if (wake[0] < 0) {
        if (pipe(wake) != 0) {
            wake[0] = wake[1] = -1;
            return -1;
        }
        for (int i = 0; i < 2; i++) {
            fcntl(wake[i], F_SETFL, fcntl(wake[i], F_GETFL) | O_NONBLOCK);
            fcntl(wake[i], F_SETFD, FD_CLOEXEC);
        }
    }
    output_fd = out_fd;
    restore_length = 0;
    if (restore_sequence) {
        size_t length = strlen(restore_sequence);
        if (length > sizeof restore) length = sizeof restore;
        memcpy(restore, restore_sequence, length);
        restore_length = length;
    }
    atomic_store(&pending, 0);

    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_handler = on_signal;
    action.sa_flags = 0;  // no SA_RESTART: a blocked read or poll returns EINTR
    sigemptyset(&action.sa_mask);
    for (size_t i = 0; i < HANDLED_COUNT; i++) sigaddset(&action.sa_mask, handled[i]);
    if (!have_original) save_dispositions();
    for (size_t i = 0; i < HANDLED_COUNT; i++) {
        installed[i] = 0;
        // A signal the parent set to be ignored (nohup, a background job) stays ignored.
        if (!(original[i].sa_flags & SA_SIGINFO) && original[i].sa_handler == SIG_IGN) continue;
        if (sigaction(handled[i], &action, NULL) == 0) installed[i] = 1;
    }
    return wake[0];
}

void rd_interrupt_uninstall(void) {
    for (size_t i = 0; i < HANDLED_COUNT; i++) {
        // Back to what the process had before the screen library (not to its handlers, which
        // would call endwin again and exit with status 1).
        if (installed[i]) sigaction(handled[i], &original[i], NULL);
        installed[i] = 0;
    }
}

int rd_interrupt_signal(void) { return atomic_load(&pending); }

void rd_interrupt_drain(void) {
    char buffer[64];
    if (wake[0] < 0) return;
    while (read(wake[0], buffer, sizeof buffer) > 0) {
    }
}
