#include "process_limits.h"

#include <sys/resource.h>
#if defined(__linux__)
#include <sys/prctl.h>
#endif

int rd_disable_core_dumps(void) {
    int result = 0;
    struct rlimit none = {0, 0};
    if (setrlimit(RLIMIT_CORE, &none) != 0) result = -1;
#if defined(__linux__)
    if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0) result = -1;
#endif
    return result;
}
