/* SPDX-License-Identifier: ISC */
/*
 * outage.c - when to say that an upstream cannot be reached (outage.h).
 */
#include <stdio.h>

#include "outage.h"

#define NS_PER_MS  ((int64_t)1000000)
#define NS_PER_S   ((int64_t)1000000000)
#define NS_PER_MIN (60 * NS_PER_S)
#define NS_PER_H   (60 * NS_PER_MIN)
#define NS_PER_DAY (24 * NS_PER_H)

enum gw_outage_say gw_outage_failed(struct gw_outage *o, int64_t now_ns, int changed)
{
    o->total++;
    if (!o->active) {
        o->active = 1;
        o->since_ns = now_ns;
        o->attempts = 1;
        o->next_ns = now_ns + GW_OUTAGE_FIRST_REPEAT_NS;
        o->interval_ns = 2 * GW_OUTAGE_FIRST_REPEAT_NS;
        o->logged_ns = now_ns;
        return GW_OUTAGE_FIRST;
    }
    o->attempts++;
    if (now_ns < o->next_ns && !(changed && now_ns - o->logged_ns >= GW_OUTAGE_NEWS_GAP_NS))
        return GW_OUTAGE_QUIET;
    o->logged_ns = now_ns;
    o->next_ns = now_ns + o->interval_ns;
    o->interval_ns = o->interval_ns >= GW_OUTAGE_MAX_REPEAT_NS / 2 ? GW_OUTAGE_MAX_REPEAT_NS
                                                                   : 2 * o->interval_ns;
    return GW_OUTAGE_STILL;
}

int gw_outage_ended(struct gw_outage *o, int64_t now_ns, uint64_t *attempts, int64_t *lasted_ns)
{
    if (!o->active)
        return 0;
    *attempts = o->attempts;
    *lasted_ns = now_ns - o->since_ns;
    o->active = 0;
    o->attempts = 0;
    return 1;
}

void gw_duration_text(int64_t ns, char *buf, size_t len)
{
    long long v;

    if (ns < 0)
        ns = 0;
    v = (long long)ns;
    if (ns < NS_PER_S)
        snprintf(buf, len, "%lld ms", v / NS_PER_MS);
    else if (ns < NS_PER_MIN)
        snprintf(buf, len, "%lld s", v / NS_PER_S);
    else if (ns < NS_PER_H)
        snprintf(buf, len, "%lld min", v / NS_PER_MIN);
    else if (ns < NS_PER_DAY)
        snprintf(buf, len, "%lld h %lld min", v / NS_PER_H, v % NS_PER_H / NS_PER_MIN);
    else
        snprintf(buf, len, "%lld day%s %lld h", v / NS_PER_DAY, v / NS_PER_DAY == 1 ? "" : "s",
                 v % NS_PER_DAY / NS_PER_H);
}
