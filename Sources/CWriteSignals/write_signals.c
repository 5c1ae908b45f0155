#define _GNU_SOURCE
#include "write_signals.h"

#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t received = 0;
static volatile sig_atomic_t released = 0;
static sem_t wake;
static pthread_t watcher;
static int held = 0;
static int limit = 25;
static char waiting[512];
static char timeout[512];

static void note(int number) {
    if (received == 0) {
        received = number;
        sem_post(&wake);  // async-signal-safe
    }
}

static void say(const char *text) {
    size_t left = strlen(text);
    while (left > 0) {
        ssize_t n = write(STDERR_FILENO, text, left);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return;
        text += n;
        left -= (size_t)n;
    }
}

static void *watch(void *unused) {
    (void)unused;
    // A process started from a thread that blocks SIGINT and SIGTERM (a dispatch worker, a
    // test runner) inherits that mask in every thread, and a blocked signal stays pending: this
    // thread takes them, so the handler runs whatever the other threads block.
    sigset_t ours;
    sigemptyset(&ours);
    sigaddset(&ours, SIGINT);
    sigaddset(&ours, SIGTERM);
    pthread_sigmask(SIG_UNBLOCK, &ours, NULL);
    while (sem_wait(&wake) != 0 && errno == EINTR) {}
    if (released) return NULL;
    say(waiting);
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += limit;
    for (;;) {
        if (sem_timedwait(&wake, &until) == 0) return NULL;  // released
        if (errno == EINTR) continue;
        break;
    }
    if (released) return NULL;
    say(timeout);
    _exit(128 + received);
}

int rd_hold_write_signals(int limit_seconds, const char *waiting_message, const char *timeout_message) {
    if (held) return 0;
    received = 0;
    released = 0;
    limit = limit_seconds;
    strncpy(waiting, waiting_message, sizeof waiting - 1);
    waiting[sizeof waiting - 1] = 0;
    strncpy(timeout, timeout_message, sizeof timeout - 1);
    timeout[sizeof timeout - 1] = 0;
    if (sem_init(&wake, 0, 0) != 0) return -1;
    if (pthread_create(&watcher, NULL, watch, NULL) != 0) {
        sem_destroy(&wake);
        return -1;
    }
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_handler = note;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_RESTART;
    sigaction(SIGINT, &action, NULL);
    sigaction(SIGTERM, &action, NULL);
    held = 1;
    return 0;
}

int rd_release_write_signals(void) {
    if (!held) return 0;
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    released = 1;
    sem_post(&wake);
    pthread_join(watcher, NULL);
    sem_destroy(&wake);
    held = 0;
    return received;
}
