#ifndef RD_WRITE_SIGNALS_H
#define RD_WRITE_SIGNALS_H

/// Holds SIGINT and SIGTERM while a write to Apple is in flight. A plain sigaction handler
/// (every thread of the process takes it, unlike a signalfd) notes the first signal; a watcher
/// thread then says on standard error that the answer is awaited, and exits the process with
/// 128 + the signal if `limit_seconds` pass before `rd_release_write_signals`. Returns 0, or -1
/// when the handlers or the thread could not be set up (then nothing is held).
int rd_hold_write_signals(int limit_seconds, const char *waiting_message, const char *timeout_message);

/// Stops holding: the default actions again. Returns the signal that arrived meanwhile, or 0.
int rd_release_write_signals(void);

#endif
