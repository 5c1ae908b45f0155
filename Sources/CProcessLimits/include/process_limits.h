#ifndef RD_PROCESS_LIMITS_H
#define RD_PROCESS_LIMITS_H

/// Turns core dumps off for this process: RLIMIT_CORE 0 (soft and hard) and, on Linux, not
/// dumpable (a core_pattern pipe is not invoked either). Returns 0, or -1 when either failed.
int rd_disable_core_dumps(void);

#endif
