/* sx_fixtime.c - an LD_PRELOAD shim for tests: time(2) and gettimeofday(2) say one fixed
 * second (SX_FIXTIME, default 1700000000), so that two runs writing an HDF5 file record
 * the same objects' modification times and their files can be compared byte for byte */
#include <stdlib.h>
#include <sys/time.h>
#include <time.h>

static time_t fixed(void) {
    const char *s = getenv("SX_FIXTIME");
    return s != NULL ? (time_t)strtoll(s, NULL, 10) : (time_t)1700000000;
}

time_t time(time_t *t) {
    time_t v = fixed();
    if (t != NULL)
        *t = v;
    return v;
}

int gettimeofday(struct timeval *restrict tv, void *restrict tz) {
    (void)tz;
    if (tv != NULL) {
        tv->tv_sec = fixed();
        tv->tv_usec = 0;
    }
    return 0;
}
