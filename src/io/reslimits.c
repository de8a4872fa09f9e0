/* reslimits.c — the memory a run may use (attncheck/fileio.h): the least of
 * the kernel's MemAvailable, the room left under the memory cgroup's limit
 * (v2 memory.max, v1 memory.limit_in_bytes, on the process's cgroup and its
 * ancestors) and under the address-space limit (ulimit -v). */
#include <config.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "attncheck/fileio.h"

/* The first number of the file (a "max" or an unreadable file: -1). */
static double read_number(const char *path)
{
    FILE *f = fopen(path, "r");
    unsigned long long v;
    double r = -1;
    if (!f)
        return -1;
    if (fscanf(f, "%llu", &v) == 1)
        r = (double)v;
    fclose(f);
    return r;
}

/* Room under the limit LIMIT_FILE minus USAGE_FILE of the cgroup directory
 * BASE/PATH and of each of its ancestors: the least, or -1 if none has a
 * limit (limits of 2^60 bytes and more are "none"). */
static double cgroup_room(const char *base, const char *path, const char *limit_file,
                          const char *usage_file)
{
    char dir[1024], p[1200];
    double best = -1;
    if ((size_t)snprintf(dir, sizeof dir, "%s%s", base, path) >= sizeof dir)
        return -1;
    for (;;) {
        snprintf(p, sizeof p, "%s/%s", dir, limit_file);
        double lim = read_number(p);
        if (lim > 0 && lim < 1152921504606846976.0) {
            snprintf(p, sizeof p, "%s/%s", dir, usage_file);
            double use = read_number(p);
            double room = lim - (use > 0 ? use : 0);
            if (room < 0)
                room = 0;
            if (best < 0 || room < best)
                best = room;
        }
        char *slash = strrchr(dir, '/');
        if (!slash || (size_t)(slash - dir) < strlen(base))
            break;
        *slash = '\0';
    }
    return best;
}

static double min_known(double a, double b)
{
    if (a < 0)
        return b;
    if (b < 0)
        return a;
    return a < b ? a : b;
}

/* The memory cgroups of /proc/self/cgroup (v2 "0::/PATH", v1
 * "N:...memory...:/PATH"). */
static double cgroups_room(void)
{
    FILE *f = fopen("/proc/self/cgroup", "r");
    char line[1200];
    double best = -1;
    if (!f)
        return -1;
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = '\0';
        char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
        if (!c2)
            continue;
        *c2 = '\0';
        const char *ctrl = c1 + 1, *path = c2 + 1;
        if (!strcmp(line, "0") && !*ctrl) {
            best = min_known(best, cgroup_room("/sys/fs/cgroup", path, "memory.max",
                                               "memory.current"));
            best = min_known(best, cgroup_room("/sys/fs/cgroup", "", "memory.max",
                                               "memory.current"));
        } else if (strstr(ctrl, "memory")) {
            best = min_known(best, cgroup_room("/sys/fs/cgroup/memory", path,
                                               "memory.limit_in_bytes", "memory.usage_in_bytes"));
            best = min_known(best, cgroup_room("/sys/fs/cgroup/memory", "",
                                               "memory.limit_in_bytes", "memory.usage_in_bytes"));
        }
    }
    fclose(f);
    return best;
}

/* Room under RLIMIT_AS: the limit minus the current size of the address
 * space (-1: no limit). */
static double rlimit_room(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_AS, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY)
        return -1;
    double used = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    unsigned long long pages;
    if (f) {
        if (fscanf(f, "%llu", &pages) == 1)
            used = (double)pages * (double)sysconf(_SC_PAGESIZE);
        fclose(f);
    }
    double room = (double)rl.rlim_cur - used;
    return room > 0 ? room : 0;
}

static double mem_available(void)
{
    FILE *f = fopen("/proc/meminfo", "r");
    if (f) {
        char line[256];
        unsigned long long kb;
        while (fgets(line, sizeof line, f))
            if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1) {
                fclose(f);
                return (double)kb * 1024.0;
            }
        fclose(f);
    }
#if defined(_SC_AVPHYS_PAGES) && defined(_SC_PAGESIZE)
    long p = sysconf(_SC_AVPHYS_PAGES), s = sysconf(_SC_PAGESIZE);
    if (p > 0 && s > 0)
        return (double)p * (double)s;
#endif
    return -1;
}

double ac_memory_available(const char **source)
{
    double best = -1, v;
    const char *src = "no limit known";
    if ((v = mem_available()) >= 0)
        best = v, src = "MemAvailable";
    if ((v = cgroups_room()) >= 0 && (best < 0 || v < best))
        best = v, src = "the memory cgroup's limit";
    if ((v = rlimit_room()) >= 0 && (best < 0 || v < best))
        best = v, src = "the address-space limit (ulimit -v)";
    if (source)
        *source = src;
    return best > 0 ? best : 0;
}
