/* SPDX-License-Identifier: ISC */
/*
 * addr.c - "HOST:PORT" strings: parsing, resolving and formatting.
 *
 * The syntax is the one of URLs (RFC 3986 section 3.2.2) without a scheme:
 * an IPv6 literal must be in brackets, because its colons would otherwise
 * be confused with the port separator.  Ports are numeric, so resolving
 * never consults /etc/services.
 */
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "internal.h"
#include "mbsc/conn.h"
#include "sock/sock.h"

/* Longest host part accepted: a DNS name is at most 253 characters. */
#define HOST_MAX 255u
/* "65535" and its NUL. */
#define PORT_MAX_DIGITS 5u

/*
 * Characters allowed in a host: anything printable except brackets (they
 * only delimit IPv6 literals).  Spaces and control characters are refused
 * here because they can only be typing or quoting mistakes.
 */
static int host_char_ok(unsigned char ch)
{
    return ch > 0x20 && ch != 0x7f && ch != '[' && ch != ']';
}

static int host_ok(const char *h, size_t n)
{
    size_t i;

    if (n == 0 || n > HOST_MAX)
        return 0;
    for (i = 0; i < n; i++) {
        if (!host_char_ok((unsigned char)h[i]))
            return 0;
    }
    return 1;
}

/* 1 to 5 decimal digits and no more than 65535: no sign, no spaces. */
static int port_ok(const char *p)
{
    size_t i;
    unsigned long v = 0;

    for (i = 0; p[i] != '\0'; i++) {
        if (i == PORT_MAX_DIGITS || p[i] < '0' || p[i] > '9')
            return 0;
        v = v * 10u + (unsigned long)(p[i] - '0');
    }
    return i > 0 && v <= 65535u;
}

/*
 * Find the host (h, *hn) and the port (returned) in hostport, or return
 * NULL.  The bracketed form must hold an IPv6 literal (a colon inside);
 * the bare form must not hold any colon but the separator.
 */
static const char *split_hostport(const char *hostport, const char **h, size_t *hn)
{
    const char *sep;

    if (hostport[0] == '[') {
        const char *close = strchr(hostport, ']');

        if (close == NULL || close[1] != ':')
            return NULL;
        *h = hostport + 1;
        *hn = (size_t)(close - *h);
        if (memchr(*h, ':', *hn) == NULL)
            return NULL;
        return close + 2;
    }
    sep = strrchr(hostport, ':');
    if (sep == NULL)
        return NULL;
    *h = hostport;
    *hn = (size_t)(sep - hostport);
    if (memchr(*h, ':', *hn) != NULL)
        return NULL; /* "::1:502": an IPv6 literal needs brackets */
    return sep + 1;
}

MBSC_API int mbsc_parse_hostport(const char *hostport, char *host, size_t host_len, char *port,
                                 size_t port_len)
{
    const char *h = NULL, *p;
    size_t hn = 0;

    if (host == NULL || port == NULL || host_len == 0 || port_len == 0)
        return MBSC_ERR_INVALID_ARG;
    host[0] = '\0';
    port[0] = '\0';
    if (hostport == NULL)
        return MBSC_ERR_INVALID_ARG;
    p = split_hostport(hostport, &h, &hn);
    if (p == NULL || !host_ok(h, hn) || !port_ok(p))
        return MBSC_ERR_ADDRESS;
    if (hn >= host_len || strlen(p) >= port_len)
        return MBSC_ERR_ADDRESS; /* "too long" for the caller's buffers */
    memcpy(host, h, hn);
    host[hn] = '\0';
    memcpy(port, p, strlen(p) + 1);
    return MBSC_OK;
}

static int resolve_error(int gai, const char *hostport, char *why, size_t why_len)
{
    if (gai == EAI_MEMORY) {
        mbsc_why(why, why_len, "resolve %s: out of memory", hostport);
        return MBSC_ERR_NOMEM;
    }
    if (gai == EAI_SYSTEM)
        mbsc_why(why, why_len, "resolve %s: %s", hostport, mbsc_os_error(errno));
    else
        mbsc_why(why, why_len, "resolve %s: %s", hostport, gai_strerror(gai));
    return MBSC_ERR_RESOLVE;
}

int mbsc_addr_resolve(const char *hostport, int passive, struct addrinfo **res, char *why,
                      size_t why_len)
{
    char host[HOST_MAX + 1], port[PORT_MAX_DIGITS + 1];
    struct addrinfo hints;
    int r;

    *res = NULL;
    r = mbsc_parse_hostport(hostport, host, sizeof host, port, sizeof port);
    if (r != MBSC_OK) {
        mbsc_why(why, why_len, "bad address \"%s\": expected HOST:PORT or [V6ADDR]:PORT",
                 hostport != NULL ? hostport : "(null)");
        return r;
    }
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_protocol = IPPROTO_TCP;
    /*
     * No AI_ADDRCONFIG: it hides ::1 on hosts whose only IPv6 address is
     * the loopback one, and a failed address costs us one connect() only.
     */
    hints.ai_flags = AI_NUMERICSERV | (passive ? AI_PASSIVE : 0);
    r = getaddrinfo(host, port, &hints, res);
    if (r != 0) {
        *res = NULL;
        return resolve_error(r, hostport, why, why_len);
    }
    return MBSC_OK;
}

/*
 * A client reaching a dual-stack "[::]" listener over IPv4 appears as
 * ::ffff:a.b.c.d; people expect to read a.b.c.d.
 */
static socklen_t unmap_v4(const struct sockaddr *sa, socklen_t sa_len, struct sockaddr_in *v4)
{
    const struct sockaddr_in6 *v6;

    if (sa->sa_family != AF_INET6 || sa_len < (socklen_t)sizeof *v6)
        return 0;
    v6 = (const struct sockaddr_in6 *)(const void *)sa;
    if (!IN6_IS_ADDR_V4MAPPED(&v6->sin6_addr))
        return 0;
    memset(v4, 0, sizeof *v4);
    v4->sin_family = AF_INET;
    v4->sin_port = v6->sin6_port;
    memcpy(&v4->sin_addr, &v6->sin6_addr.s6_addr[12], 4);
    return (socklen_t)sizeof *v4;
}

int mbsc_addr_format(const struct sockaddr *sa, socklen_t sa_len, char *buf, size_t len)
{
    char host[MBSC_ADDRSTRLEN], serv[PORT_MAX_DIGITS + 1];
    struct sockaddr_in v4;
    socklen_t v4_len = unmap_v4(sa, sa_len, &v4);
    int n;

    if (v4_len != 0) {
        sa = (const struct sockaddr *)(const void *)&v4;
        sa_len = v4_len;
    }
    if (getnameinfo(sa, sa_len, host, sizeof host, serv, sizeof serv,
                    NI_NUMERICHOST | NI_NUMERICSERV) != 0) {
        (void)snprintf(buf, len, "?");
        return MBSC_ERR_IO;
    }
    n = snprintf(buf, len, sa->sa_family == AF_INET6 ? "[%s]:%s" : "%s:%s", host, serv);
    if (n < 0 || (size_t)n >= len) {
        (void)snprintf(buf, len, "?");
        return MBSC_ERR_BUFFER_TOO_SMALL;
    }
    return MBSC_OK;
}

int mbsc_addr_local(int fd, char *buf, size_t len)
{
    struct sockaddr_storage ss;
    socklen_t ss_len = sizeof ss;

    if (getsockname(fd, (struct sockaddr *)(void *)&ss, &ss_len) != 0) {
        (void)snprintf(buf, len, "?");
        return MBSC_ERR_IO;
    }
    return mbsc_addr_format((const struct sockaddr *)(const void *)&ss, ss_len, buf, len);
}
