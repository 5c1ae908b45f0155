// Window-size changes (SIGWINCH) must interrupt the thread that waits for keys, so that the
// screen library returns KEY_RESIZE at once. A process signal goes to whichever thread does
// not block it; with Swift's async main on Linux that is the main thread, parked in
// dispatch_main(), not the UI thread. This forwards the signal: on any other thread the
// handler re-sends it to the UI thread (pthread_kill is async-signal-safe); on the UI thread it
// calls the screen library's own handler, and the interrupted key wait sees the resize.
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include "CWindowSignal.h"

static struct sigaction previous;
static pthread_t ui_thread;
static volatile sig_atomic_t forwarding = 0;

static void forward(int sig, siginfo_t *info, void *context) {
    if (forwarding && !pthread_equal(pthread_self(), ui_thread)) {
        pthread_kill(ui_thread, sig);
        return;
    }
    if (previous.sa_flags & SA_SIGINFO) {
        if (previous.sa_sigaction) previous.sa_sigaction(sig, info, context);
    } else if (previous.sa_handler != SIG_DFL && previous.sa_handler != SIG_IGN) {
        previous.sa_handler(sig);
    }
}

void rd_forward_window_signal_to_this_thread(void) {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGWINCH);
    pthread_sigmask(SIG_UNBLOCK, &set, 0);

    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_sigaction = forward;
    action.sa_flags = SA_SIGINFO;
    sigemptyset(&action.sa_mask);
    ui_thread = pthread_self();
    if (sigaction(SIGWINCH, &action, &previous) == 0) forwarding = 1;
}

// A read of the terminal from a background process group (`timeout 60 receiptdash`, or `&`)
// sends SIGTTIN, whose default action stops the process until it is brought to the foreground;
// but when the reading thread blocks SIGTTIN (the UI thread inherits the mask of a Dispatch
// worker, which blocks nearly every signal), the kernel fails the read with EIO instead, at
// once and every time. Unblocking it on this thread lets the job stop as job control expects.
// (SIGTTOU stays as it is: restoring the terminal from the background must not stop.)
void rd_allow_background_stop_on_this_thread(void) {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTTIN);
    pthread_sigmask(SIG_UNBLOCK, &set, 0);
}
