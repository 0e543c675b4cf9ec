// SPDX-License-Identifier: MIT
/* Unit tests: the parts of http/ that do not need libmicrohttpd running: a stream's writer side
 * (bounded buffer, a reader that stops reading or leaves), the reply budget (total, per-owner
 * shares, small replies) and the guard that cuts slow heads on real loopback TCP connections.
 * Its worker pool is util/workpool.c (test_workpool.c). */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "http/budget.h"
#include "http/guard.h"
#include "http/server.h"
#include "http/stream.h"
#include "util/clock.h"

/* ---- streams (writer side) ---------------------------------------------------------------- */

static void stream_bounds_what_a_slow_reader_may_pin(void **state)
{
    struct http_stream *s = http_stream_new(16, 20000, NULL, NULL); /* 16 bytes, 20 ms */
    assert_non_null(s);
    assert_int_equal(http_stream_write(s, "0123456789", 10), 0);
    /* Does not fit and nobody reads: waits 20 ms, then the client is treated as gone. */
    assert_int_equal(http_stream_write(s, "0123456789", 10), -EPIPE);
    assert_int_equal(http_stream_write(s, "x", 1), -EPIPE); /* even what would fit */
    http_stream_finish(s);
    http_stream_abandon(s);
}

static void stream_takes_one_large_event_when_empty(void **state)
{
    struct http_stream *s = http_stream_new(16, 20000, NULL, NULL);
    char big[100];
    memset(big, 'e', sizeof(big));
    assert_int_equal(http_stream_write(s, big, sizeof(big)), 0);
    assert_int_equal(http_stream_write(s, "y", 1), -EPIPE); /* full: nobody reads */
    http_stream_abandon(s);
    http_stream_finish(s);
}

static void stream_writes_fail_once_the_reader_left(void **state)
{
    /* An hour's write timeout: a write that waited for room would hang the test. */
    struct http_stream *s = http_stream_new(4, 3600LL * 1000000, NULL, NULL);
    assert_int_equal(http_stream_write(s, "data", 4), 0);
    http_stream_abandon(s); /* the client went away (or the response was never made) */
    assert_int_equal(http_stream_write(s, "more", 4), -EPIPE);
    http_stream_finish(s);
}

/* ---- reply budget -------------------------------------------------------------------------- */

static void budget_bounds_the_total_and_each_owner(void **state)
{
    struct http_budget *b;
    const size_t mb = 1u << 20;
    int a, c; /* two owners: only their addresses matter */
    assert_int_equal(http_budget_new(10 * mb, 4 * mb, &b), 0);
    assert_int_equal(http_budget_take(b, &a, 3 * mb), 0);
    assert_int_equal(http_budget_take(b, &a, 2 * mb), -ENOBUFS); /* a's share: 5 > 4 */
    assert_false(http_budget_spent(b, &a));                      /* 1 MiB of it is left */
    assert_int_equal(http_budget_take(b, &a, 1 * mb - HTTP_BUDGET_SMALL), 0);
    assert_true(http_budget_spent(b, &a));
    assert_false(http_budget_spent(b, &c)); /* another owner is not held by a's share */
    assert_int_equal(http_budget_take(b, &c, 4 * mb), 0);
    assert_int_equal(http_budget_take(b, NULL, 2 * mb), 0); /* the operator: the total only */
    assert_int_equal(http_budget_take(b, NULL, 2 * mb), -ENOBUFS); /* 12 > 10 */
    assert_true(http_budget_spent(b, NULL));
    /* Small replies are counted but never refused: an error must always be sendable. */
    assert_int_equal(http_budget_take(b, &a, HTTP_BUDGET_SMALL), 0);
    assert_int_equal(http_budget_held(b, &a), 4 * mb);
    http_budget_give(b, &a, 4 * mb);
    assert_int_equal(http_budget_held(b, &a), 0);
    assert_false(http_budget_spent(b, &a));
    assert_int_equal(http_budget_take(b, NULL, 3 * mb), 0); /* 9 of 10 MiB */
    /* a's share has room, the total not */
    assert_int_equal(http_budget_take(b, &a, 2 * mb), -ENOBUFS);
    http_budget_give(b, &c, 4 * mb);
    http_budget_give(b, NULL, 5 * mb);
    assert_int_equal(http_budget_take(b, &a, 4 * mb), 0);
    json_t *st = http_budget_stats(b);
    assert_int_equal(json_integer_value(json_object_get(st, "replyBytes")), 4 * mb);
    assert_int_equal(json_integer_value(json_object_get(st, "replyRefused")), 3);
    json_decref(st);
    struct http_charge ch = {.budget = b, .owner = &a, .bytes = 4 * mb};
    http_charge_drop(&ch, mb);
    assert_int_equal(http_budget_held(b, &a), 3 * mb);
    http_charge_drop(&ch, 10 * mb); /* never more than it holds */
    assert_int_equal(http_budget_held(b, &a), 0);
    http_charge_release(&ch);
    http_charge_release(NULL);
    http_budget_free(b);
}

static void stream_claims_what_it_buffers(void **state)
{
    struct http_budget *b;
    int owner;
    assert_int_equal(http_budget_new(1u << 20, 64u << 10, &b), 0);
    struct http_stream *s = http_stream_new(1u << 20, 20000, b, &owner);
    char chunk[16u << 10];
    memset(chunk, 'c', sizeof(chunk));
    for (int i = 0; i < 4; i++) /* 64 KiB: the owner's share, all in small writes */
        assert_int_equal(http_stream_write(s, chunk, sizeof(chunk)), 0);
    assert_int_equal(http_budget_held(b, &owner), 64u << 10);
    char big[HTTP_BUDGET_SMALL + 1];
    memset(big, 'b', sizeof(big));
    /* Past the share: the client is treated as gone at once, not after the write timeout. */
    assert_int_equal(http_stream_write(s, big, sizeof(big)), -EPIPE);
    http_stream_finish(s);
    http_stream_abandon(s); /* the last reference gives every buffered byte back */
    assert_int_equal(http_budget_held(b, &owner), 0);
    http_budget_free(b);
}

/* ---- guard --------------------------------------------------------------------------------- */

/* A connected loopback pair: *client and *server (the accepted end). */
static void tcp_pair(int *client, int *server)
{
    int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof(a);
    assert_int_equal(bind(l, (struct sockaddr *)&a, sizeof(a)), 0);
    assert_int_equal(listen(l, 4), 0);
    assert_int_equal(getsockname(l, (struct sockaddr *)&a, &len), 0);
    *client = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    assert_int_equal(connect(*client, (struct sockaddr *)&a, sizeof(a)), 0);
    *server = accept4(l, NULL, NULL, SOCK_CLOEXEC);
    assert_true(*server >= 0);
    close(l);
}

/* What the peer sends until it closes, or until the hang guard (30 s). */
static size_t read_all(int fd, char *buf, size_t max)
{
    size_t n = 0;
    while (n < max - 1) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (poll(&p, 1, 30000) != 1)
            break;
        ssize_t r = read(fd, buf + n, max - 1 - n);
        if (r <= 0)
            break;
        n += (size_t)r;
    }
    buf[n] = '\0';
    return n;
}

static void guard_cuts_a_slow_head_and_spares_idle_and_busy_connections(void **state)
{
    struct http_guard *g;
    assert_int_equal(http_guard_new(1000000, 1000000, NULL, &g), 0);
    int slow_c, slow_s, idle_c, idle_s, busy_c, busy_s;
    tcp_pair(&slow_c, &slow_s);
    tcp_pair(&idle_c, &idle_s);
    tcp_pair(&busy_c, &busy_s);
    struct http_conn *slow = http_guard_open(g, slow_s);
    struct http_conn *idle = http_guard_open(g, idle_s);
    struct http_conn *busy = http_guard_open(g, busy_s);
    http_guard_busy(g, busy);
    assert_int_equal(write(slow_c, "GET / HT", 8), 8);   /* a head that never ends */
    assert_int_equal(write(busy_c, "{\"partial", 9), 9); /* the request is being handled */
    char buf[1024];
    read_all(slow_c, buf, sizeof(buf));
    assert_non_null(strstr(buf, "HTTP/1.1 408 Request Timeout\r\n"));
    assert_non_null(strstr(buf, "\"code\":\"REQUEST_TIMEOUT\""));
    json_t *st = http_guard_stats(g);
    assert_int_equal(json_integer_value(json_object_get(st, "cutHead")), 1);
    assert_int_equal(json_integer_value(json_object_get(st, "open")), 3);
    json_decref(st);
    /* The idle one sent nothing and the busy one is not the guard's: both still open. */
    struct pollfd p[2] = {{.fd = idle_c, .events = POLLIN}, {.fd = busy_c, .events = POLLIN}};
    assert_int_equal(poll(p, 2, 0), 0);
    http_guard_close(g, slow);
    http_guard_close(g, idle);
    http_guard_close(g, busy);
    http_guard_free(g);
    int fds[] = {slow_c, slow_s, idle_c, idle_s, busy_c, busy_s};
    for (size_t i = 0; i < 6; i++)
        close(fds[i]);
}

static void guard_refuse_writes_a_complete_answer(void **state)
{
    int c, s;
    tcp_pair(&c, &s);
    http_guard_refuse(s, 413, "Content Too Large", "PAYLOAD_TOO_LARGE", "too big", "rid-1", "i1");
    char buf[1024];
    size_t n = read_all(c, buf, sizeof(buf)); /* ends: the socket was shut down */
    const char *body = strstr(buf, "\r\n\r\n");
    assert_non_null(body);
    assert_non_null(strstr(buf, "HTTP/1.1 413 Content Too Large\r\n"));
    assert_non_null(strstr(buf, "X-Request-ID: rid-1\r\n"));
    assert_non_null(strstr(buf, "X-Sandboxd-Instance: i1\r\n"));
    char want[64];
    snprintf(want, sizeof(want), "Content-Length: %zu\r\n", n - (size_t)(body + 4 - buf));
    assert_non_null(strstr(buf, want));
    json_t *j = json_loads(body + 4, 0, NULL);
    assert_string_equal(json_string_value(json_object_get(json_object_get(j, "error"), "code")),
                        "PAYLOAD_TOO_LARGE");
    json_decref(j);
    close(c);
    close(s);
}

/* An event is one "event:" line and one "data:" line of compact JSON, a newline inside a string
 * escaped, and the blank line that ends it. */
static void sse_event_is_one_data_line(void **state)
{
    (void)state;
    json_t *msg = json_pack("{s:s, s:[i,i]}", "text", "two\nlines", "n", 1, 2);
    assert_non_null(msg);
    size_t len = 0;
    char *ev = http_sse_event("message", msg, &len);
    assert_non_null(ev);
    assert_string_equal(ev, "event: message\ndata: {\"text\":\"two\\nlines\",\"n\":[1,2]}\n\n");
    assert_int_equal(len, strlen(ev));
    free(ev);
    json_decref(msg);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(stream_bounds_what_a_slow_reader_may_pin),
        cmocka_unit_test(stream_takes_one_large_event_when_empty),
        cmocka_unit_test(stream_writes_fail_once_the_reader_left),
        cmocka_unit_test(sse_event_is_one_data_line),
        cmocka_unit_test(budget_bounds_the_total_and_each_owner),
        cmocka_unit_test(stream_claims_what_it_buffers),
        cmocka_unit_test(guard_cuts_a_slow_head_and_spares_idle_and_busy_connections),
        cmocka_unit_test(guard_refuse_writes_a_complete_answer),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
