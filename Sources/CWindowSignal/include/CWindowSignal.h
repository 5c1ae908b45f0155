#ifndef RECEIPTDASH_CWINDOWSIGNAL_H
#define RECEIPTDASH_CWINDOWSIGNAL_H

/// Makes window-size signals (SIGWINCH) wake the calling thread, the one that waits for keys.
/// Call after the screen library has installed its own SIGWINCH handler; that handler still
/// runs, on this thread.
void rd_forward_window_signal_to_this_thread(void);

#endif
