#ifndef RECEIPTDASH_CWINDOWSIGNAL_H
#define RECEIPTDASH_CWINDOWSIGNAL_H

/// Makes window-size signals (SIGWINCH) wake the calling thread, the one that waits for keys.
/// Call after the screen library has installed its own SIGWINCH handler; that handler still
/// runs, on this thread.
void rd_forward_window_signal_to_this_thread(void);

/// Unblocks SIGTTIN on the calling thread, the one that reads keys: a read from a background
/// process group then stops the process (job control) instead of failing with EIO at once.
void rd_allow_background_stop_on_this_thread(void);

/// Saves the terminal modes of `tty_fd` and the current SIGINT/SIGTERM/SIGHUP dispositions.
/// Call before the screen library changes either (before initscr/newterm).
void rd_interrupt_prepare(int tty_fd);

/// Handles SIGINT, SIGTERM and SIGHUP (unless they were ignored when the process started):
/// the handler records the signal and makes the returned file descriptor readable, so the
/// thread waiting for keys can wake and restore the terminal. A second signal before that
/// writes `restore_sequence` to `output_fd`, restores the saved terminal modes and exits with
/// 128 + the signal number. Returns the descriptor to poll, or -1.
int rd_interrupt_install(int output_fd, const char *restore_sequence);

/// Puts back the dispositions saved by rd_interrupt_prepare.
void rd_interrupt_uninstall(void);

/// The signal received since rd_interrupt_install, or 0.
int rd_interrupt_signal(void);

/// Empties the wake-up descriptor.
void rd_interrupt_drain(void);

#endif
