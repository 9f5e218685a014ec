/*
 * stubserver: a token-streaming server with known emission times, for benchmarking load generators.
 *
 * Speaks HTTP/1.1 keep-alive with chunked server-sent events in vLLM's /v1/completions format, and in its
 * /v1/chat/completions format on that route: a first event carrying only {"role":"assistant","content":""}
 * (written with the first token, as vLLM sends it when the first output arrives), then one
 * {"delta":{"content":...}} event per token (vllm/entrypoints/openai/chat_completion/serving.py at v0.32.0).
 * One global tick every --interval-us microseconds (timerfd, CLOCK_MONOTONIC, absolute schedule); on each
 * tick every active stream gets exactly one token chunk, like one batched decode step.  A request's first
 * token goes out on the first tick after the request arrived.  The last token's write also carries the
 * final usage chunk, "data: [DONE]" and the terminating zero-size chunk.
 *
 * Log (--log FILE), written as requests finish and flushed at exit (SIGTERM/SIGINT):
 *   R <request-id> <arrival_ns> <arrival_read_ns> <prompt_tokens> <max_tokens> <n_sent> <status> <t1_ns> ...
 *   T <scheduled_ns> <start_ns> <end_ns> <tokens_written>        (one line per tick that had work)
 * All times are CLOCK_MONOTONIC nanoseconds (the clock behind Python's time.perf_counter on Linux).
 * Each token time is taken immediately before the write() that carries it.  <arrival_ns> is the kernel
 * receive timestamp (SO_TIMESTAMPNS, mapped from CLOCK_REALTIME) of the read that completed the request,
 * so it does not depend on how soon this process got to the socket; <arrival_read_ns> is when it was read.  The request id comes from
 * the X-Request-Id header (else "anon-<n>").
 *
 * Other endpoints: GET /health (200), GET /v1/models.  Single-threaded, epoll, TCP_NODELAY.
 *
 * Build: cc -O2 -o stubserver stubserver.c
 * Run:   stubserver --port 0 --interval-us 10000 --log run.log    (prints "PORT <n>" on stdout)
 *
 * TLS (https): cc -O2 -DSTUB_TLS -o stubserver-tls stubserver.c -lssl -lcrypto, then --cert CERT.pem --key
 * KEY.pem.  The socket stays a plain socket read with recvmsg (arrival stamps kept); OpenSSL runs on a pair of
 * memory BIOs, so every write is ciphertext of whole events.  A token's time is taken before SSL_write, so it
 * includes the encryption of its record (OpenSSL's "BIO_s_mem", https://docs.openssl.org/3.0/man3/BIO_s_mem/).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>
#ifdef STUB_TLS
#include <openssl/err.h>
#include <openssl/ssl.h>
static SSL_CTX *tls_ctx = NULL;
#endif

#define MAXEV 1024

typedef struct Conn {
    int fd;
    char *in;
    size_t in_len, in_cap;
    char *out;              /* bytes the kernel did not take yet */
    size_t out_len, out_cap;
    int streaming;          /* 1 while a completion stream is active on this connection */
    int chat;               /* the stream is a /v1/chat/completions one */
    int closing;
    /* current stream */
    char rid[128];
    int64_t arrival_ns;
    int64_t arrival_read_ns;
    int64_t last_rx_ns;     /* kernel receive stamp of the latest read (CLOCK_MONOTONIC) */
    int prompt_tokens;
    int max_tokens;
    int sent;
    int64_t *times;
    struct Conn *next_active, *prev_active;
#ifdef STUB_TLS
    SSL *ssl;
    BIO *rbio, *wbio;       /* ciphertext in (from the socket) / out (to the socket) */
#endif
} Conn;

static Conn *active_head = NULL;
static int n_active = 0;
static FILE *logf = NULL;
static volatile sig_atomic_t stop_flag = 0;
static long anon_counter = 0;
static long backlog_writes = 0;
static long total_tokens = 0;
static long total_requests = 0;
static int epfd;

static int64_t rt_offset_ns = 0; /* CLOCK_REALTIME - CLOCK_MONOTONIC */

static int64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void on_signal(int sig) { (void)sig; stop_flag = 1; }

static void set_nonblock(int fd) { fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK); }

static void conn_close(Conn *c);

static void out_append(Conn *c, const char *p, size_t n) {
    if (c->out_len + n > c->out_cap) {
        size_t cap = c->out_cap ? c->out_cap : 4096;
        while (cap < c->out_len + n) cap *= 2;
        c->out = realloc(c->out, cap);
        c->out_cap = cap;
    }
    memcpy(c->out + c->out_len, p, n);
    c->out_len += n;
}

static int raw_write(Conn *c, const char *p, size_t n);

#ifdef STUB_TLS
/* move what OpenSSL wrote into wbio onto the socket */
static int tls_flush(Conn *c) {
    char buf[65536];
    int k;
    while ((k = BIO_read(c->wbio, buf, sizeof buf)) > 0)
        if (raw_write(c, buf, (size_t)k) < 0) return -1;
    return 0;
}
#endif

/* plaintext out: through TLS when it is on */
static int conn_write(Conn *c, const char *p, size_t n) {
#ifdef STUB_TLS
    if (c->ssl) {
        if (SSL_write(c->ssl, p, (int)n) <= 0) return -1;
        return tls_flush(c);
    }
#endif
    return raw_write(c, p, n);
}

/* write as much as possible; queue the rest and ask for EPOLLOUT */
static int raw_write(Conn *c, const char *p, size_t n) {
    if (c->out_len) {
        backlog_writes++;
        out_append(c, p, n);
        return 0;
    }
    ssize_t w = write(c->fd, p, n);
    if (w < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK) w = 0;
        else return -1;
    }
    if ((size_t)w < n) {
        backlog_writes++;
        out_append(c, p + w, n - w);
        struct epoll_event ev = {.events = EPOLLIN | EPOLLOUT, .data.ptr = c};
        epoll_ctl(epfd, EPOLL_CTL_MOD, c->fd, &ev);
    }
    return 0;
}

/* returns -1 when the connection was closed */
static int flush_out(Conn *c) {
    while (c->out_len) {
        ssize_t w = write(c->fd, c->out, c->out_len);
        if (w < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK) return 0;
            conn_close(c);
            return -1;
        }
        memmove(c->out, c->out + w, c->out_len - w);
        c->out_len -= w;
    }
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = c};
    epoll_ctl(epfd, EPOLL_CTL_MOD, c->fd, &ev);
    return 0;
}

static void log_request(Conn *c, const char *status) {
    if (!logf) return;
    fprintf(logf, "R %s %lld %lld %d %d %d %s", c->rid, (long long)c->arrival_ns, (long long)c->arrival_read_ns,
            c->prompt_tokens, c->max_tokens, c->sent, status);
    for (int i = 0; i < c->sent; i++) fprintf(logf, " %lld", (long long)c->times[i]);
    fputc('\n', logf);
}

static Conn *active_tail = NULL;

static void active_remove(Conn *c) {
    if (c->prev_active) c->prev_active->next_active = c->next_active;
    else active_head = c->next_active;
    if (c->next_active) c->next_active->prev_active = c->prev_active;
    else active_tail = c->prev_active;
    c->next_active = c->prev_active = NULL;
    n_active--;
}

static void active_append(Conn *c) {
    /* append at the tail so the per-tick send order is arrival order */
    c->next_active = NULL;
    c->prev_active = active_tail;
    if (active_tail) active_tail->next_active = c;
    else active_head = c;
    active_tail = c;
    n_active++;
}

static void conn_close(Conn *c) {
    if (c->streaming) {
        log_request(c, "aborted");
        active_remove(c);
        c->streaming = 0;
    }
    epoll_ctl(epfd, EPOLL_CTL_DEL, c->fd, NULL);
    close(c->fd);
    free(c->in);
    free(c->out);
    free(c->times);
#ifdef STUB_TLS
    if (c->ssl) SSL_free(c->ssl); /* frees both BIOs */
#endif
    free(c);
}

static const char *find_header(const char *head, size_t head_len, const char *name, size_t *vlen) {
    size_t nl = strlen(name);
    const char *p = head;
    const char *end = head + head_len;
    while (p < end) {
        const char *eol = memmem(p, end - p, "\r\n", 2);
        if (!eol) eol = end;
        if ((size_t)(eol - p) > nl + 1 && strncasecmp(p, name, nl) == 0 && p[nl] == ':') {
            const char *v = p + nl + 1;
            while (v < eol && (*v == ' ' || *v == '\t')) v++;
            *vlen = eol - v;
            return v;
        }
        p = eol + 2;
    }
    return NULL;
}

static int json_int(const char *body, size_t len, const char *key, int dflt) {
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\"", key);
    const char *p = memmem(body, len, pat, strlen(pat));
    if (!p) return dflt;
    p += strlen(pat);
    while (p < body + len && (*p == ' ' || *p == ':')) p++;
    return atoi(p);
}

/* a chat request: the words of the (first) message's content, as a stand-in for its tokens */
static int count_content_words(const char *body, size_t len) {
    const char *p = memmem(body, len, "\"content\":\"", 11);
    if (!p) return 0;
    int n = 0, inword = 0;
    for (p += 11; p < body + len && *p != '"'; p++) {
        if (*p == ' ') inword = 0;
        else if (!inword) { inword = 1; n++; }
    }
    return n;
}

static int count_prompt_tokens(const char *body, size_t len) {
    const char *p = memmem(body, len, "\"prompt\"", 8);
    if (!p) return 0;
    p += 8;
    const char *end = body + len;
    while (p < end && (*p == ' ' || *p == ':')) p++;
    if (p < end && *p == '[') {
        int n = 0, any = 0;
        for (p++; p < end && *p != ']'; p++) {
            if (*p == ',') n++;
            else if (*p >= '0' && *p <= '9') any = 1;
        }
        return any ? n + 1 : 0;
    }
    /* a text prompt: count whitespace-separated words as a stand-in */
    int n = 0, inword = 0;
    if (p < end && *p == '"') p++;
    for (; p < end && *p != '"'; p++) {
        if (*p == ' ') inword = 0;
        else if (!inword) { inword = 1; n++; }
    }
    return n;
}

static void respond_simple(Conn *c, int code, const char *ctype, const char *body) {
    char buf[1024];
    int n = snprintf(buf, sizeof buf,
                     "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n\r\n%s", code,
                     code == 200 ? "OK" : "Not Found", ctype, strlen(body), body);
    conn_write(c, buf, n);
}

/* parse complete requests out of c->in; returns -1 if the connection must close */
static int handle_input(Conn *c) {
    for (;;) {
        if (c->streaming) return 0; /* no pipelining: wait for the stream to finish */
        char *hend = memmem(c->in, c->in_len, "\r\n\r\n", 4);
        if (!hend) return 0;
        size_t head_len = hend - c->in + 2;
        size_t vlen = 0;
        const char *cl = find_header(c->in, head_len, "content-length", &vlen);
        size_t body_len = cl ? (size_t)strtoul(cl, NULL, 10) : 0;
        size_t total = (hend - c->in) + 4 + body_len;
        if (c->in_len < total) return 0;
        int64_t t_arrival = now_ns();
        const char *body = hend + 4;
        if (strncmp(c->in, "POST ", 5) == 0 && (memmem(c->in, 64, "/completions", 12))) {
            const char *rid = find_header(c->in, head_len, "x-request-id", &vlen);
            if (rid && vlen < sizeof c->rid) {
                memcpy(c->rid, rid, vlen);
                c->rid[vlen] = 0;
                for (size_t i = 0; i < vlen; i++)
                    if (c->rid[i] == ' ') c->rid[i] = '_';
            } else {
                snprintf(c->rid, sizeof c->rid, "anon-%ld", anon_counter++);
            }
            c->arrival_read_ns = t_arrival;
            c->arrival_ns = (c->last_rx_ns && c->last_rx_ns <= t_arrival) ? c->last_rx_ns : t_arrival;
            c->chat = memmem(c->in, 64, "/chat/completions", 17) != NULL;
            c->max_tokens = c->chat ? json_int(body, body_len, "max_completion_tokens",
                                               json_int(body, body_len, "max_tokens", 16))
                                    : json_int(body, body_len, "max_tokens", 16);
            if (c->max_tokens < 1) c->max_tokens = 1;
            c->prompt_tokens = c->chat ? count_content_words(body, body_len) : count_prompt_tokens(body, body_len);
            c->sent = 0;
            c->times = realloc(c->times, sizeof(int64_t) * c->max_tokens);
            c->streaming = 1;
            static const char hdr[] =
                "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream; charset=utf-8\r\n"
                "transfer-encoding: chunked\r\n\r\n";
            if (conn_write(c, hdr, sizeof hdr - 1) < 0) return -1;
            active_append(c);
            total_requests++;
        } else if (strncmp(c->in, "GET /health", 11) == 0) {
            respond_simple(c, 200, "application/json", "{}");
        } else if (strncmp(c->in, "GET /v1/models", 14) == 0) {
            respond_simple(c, 200, "application/json",
                           "{\"object\":\"list\",\"data\":[{\"id\":\"stub\",\"object\":\"model\"}]}");
        } else {
            respond_simple(c, 404, "application/json", "{\"error\":\"not found\"}");
        }
        memmove(c->in, c->in + total, c->in_len - total);
        c->in_len -= total;
    }
}

static void on_readable(Conn *c) {
    for (;;) {
        if (c->in_cap - c->in_len < 65536) {
            c->in_cap = c->in_cap ? c->in_cap * 2 : 131072;
            c->in = realloc(c->in, c->in_cap);
        }
        char cbuf[CMSG_SPACE(sizeof(struct timespec))];
        struct iovec iov = {.iov_base = c->in + c->in_len, .iov_len = c->in_cap - c->in_len};
        struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
                             .msg_controllen = sizeof cbuf};
        ssize_t r = recvmsg(c->fd, &msg, 0);
        if (r > 0) {
#ifdef STUB_TLS
            if (c->ssl) { /* ciphertext: through the BIO, plaintext back into c->in */
                BIO_write(c->rbio, c->in + c->in_len, (int)r);
                if (!SSL_is_init_finished(c->ssl)) {
                    int hr = SSL_do_handshake(c->ssl);
                    if (tls_flush(c) < 0 || (hr <= 0 && SSL_get_error(c->ssl, hr) != SSL_ERROR_WANT_READ)) {
                        conn_close(c);
                        return;
                    }
                }
                int k;
                while (SSL_is_init_finished(c->ssl) &&
                       (k = SSL_read(c->ssl, c->in + c->in_len, (int)(c->in_cap - c->in_len))) > 0) {
                    c->in_len += k;
                    if (c->in_cap - c->in_len < 16384) {
                        c->in_cap *= 2;
                        c->in = realloc(c->in, c->in_cap);
                    }
                }
                r = 0; /* counted above */
            }
#endif
            c->in_len += r;
            for (struct cmsghdr *cm = CMSG_FIRSTHDR(&msg); cm; cm = CMSG_NXTHDR(&msg, cm)) {
                if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_TIMESTAMPNS) {
                    struct timespec ts;
                    memcpy(&ts, CMSG_DATA(cm), sizeof ts);
                    c->last_rx_ns = (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec - rt_offset_ns;
                }
            }
            continue;
        }
        if (r == 0) { conn_close(c); return; }
        if (errno == EAGAIN || errno == EWOULDBLOCK) break;
        conn_close(c);
        return;
    }
    if (handle_input(c) < 0) conn_close(c);
}

static long created_ts;

/* one tick: one token for every active stream */
static void tick(int64_t scheduled) {
    if (!active_head) return;
    int64_t t_start = now_ns();
    long written = 0;
    char buf[2048];
    Conn *c = active_head;
    while (c) {
        Conn *next = c->next_active;
        int last = (c->sent + 1 == c->max_tokens);
        char ev[1024];
        int en, n = 0;
        if (c->chat && c->sent == 0) {
            en = snprintf(ev, sizeof ev,
                          "data: {\"id\":\"chatcmpl-%s\",\"object\":\"chat.completion.chunk\",\"created\":%ld,"
                          "\"model\":\"stub\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\","
                          "\"content\":\"\"},\"logprobs\":null,\"finish_reason\":null}]}\n\n", c->rid, created_ts);
            n = snprintf(buf, sizeof buf, "%x\r\n%.*s\r\n", en, en, ev);
        }
        if (c->chat)
            en = snprintf(ev, sizeof ev,
                          "data: {\"id\":\"chatcmpl-%s\",\"object\":\"chat.completion.chunk\",\"created\":%ld,"
                          "\"model\":\"stub\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\" tok%d\"},"
                          "\"logprobs\":null,\"finish_reason\":%s}]}\n\n",
                          c->rid, created_ts, c->sent, last ? "\"length\"" : "null");
        else
            en = snprintf(ev, sizeof ev,
                          "data: {\"id\":\"cmpl-%s\",\"object\":\"text_completion\",\"created\":%ld,"
                          "\"model\":\"stub\",\"choices\":[{\"index\":0,\"text\":\" tok%d\",\"logprobs\":null,"
                          "\"finish_reason\":%s,\"stop_reason\":null}],\"usage\":null}\n\n",
                          c->rid, created_ts, c->sent, last ? "\"length\"" : "null");
        n += snprintf(buf + n, sizeof buf - n, "%x\r\n%.*s\r\n", en, en, ev);
        if (last) {
            en = snprintf(ev, sizeof ev,
                          "data: {\"id\":\"cmpl-%s\",\"object\":\"%s\",\"created\":%ld,"
                          "\"model\":\"stub\",\"choices\":[],\"usage\":{\"prompt_tokens\":%d,"
                          "\"total_tokens\":%d,\"completion_tokens\":%d}}\n\n",
                          c->rid, c->chat ? "chat.completion.chunk" : "text_completion", created_ts,
                          c->prompt_tokens, c->prompt_tokens + c->max_tokens, c->max_tokens);
            n += snprintf(buf + n, sizeof buf - n, "%x\r\n%.*s\r\n", en, en, ev);
            n += snprintf(buf + n, sizeof buf - n, "e\r\ndata: [DONE]\n\n\r\n0\r\n\r\n");
        }
        c->times[c->sent] = now_ns();
        c->sent++;
        written++;
        if (conn_write(c, buf, n) < 0) {
            conn_close(c);
            c = next;
            continue;
        }
        if (last) {
            log_request(c, "ok");
            active_remove(c);
            c->streaming = 0;
            if (c->in_len && handle_input(c) < 0) conn_close(c);
        }
        c = next;
    }
    total_tokens += written;
    int64_t t_end = now_ns();
    if (logf)
        fprintf(logf, "T %lld %lld %lld %ld\n", (long long)scheduled, (long long)t_start, (long long)t_end,
                written);
}

int main(int argc, char **argv) {
    int port = 0;
    long interval_us = 10000;
    const char *logpath = NULL;
#ifdef STUB_TLS
    const char *certpath = NULL, *keypath = NULL;
#endif
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--port") && i + 1 < argc) port = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--interval-us") && i + 1 < argc) interval_us = atol(argv[++i]);
        else if (!strcmp(argv[i], "--log") && i + 1 < argc) logpath = argv[++i];
#ifdef STUB_TLS
        else if (!strcmp(argv[i], "--cert") && i + 1 < argc) certpath = argv[++i];
        else if (!strcmp(argv[i], "--key") && i + 1 < argc) keypath = argv[++i];
#endif
        else {
            fprintf(stderr, "usage: %s [--port N] [--interval-us N] [--log FILE]\n", argv[0]);
            return 2;
        }
    }
#ifdef STUB_TLS
    if (!certpath || !keypath) { fprintf(stderr, "stubserver-tls needs --cert and --key\n"); return 2; }
    tls_ctx = SSL_CTX_new(TLS_server_method());
    if (!tls_ctx || SSL_CTX_use_certificate_chain_file(tls_ctx, certpath) != 1 ||
        SSL_CTX_use_PrivateKey_file(tls_ctx, keypath, SSL_FILETYPE_PEM) != 1) {
        ERR_print_errors_fp(stderr);
        return 1;
    }
    SSL_CTX_set_num_tickets(tls_ctx, 0);
#endif
    if (logpath) {
        logf = fopen(logpath, "w");
        if (!logf) { perror("log"); return 1; }
        setvbuf(logf, NULL, _IOFBF, 1 << 22);
    }
    signal(SIGPIPE, SIG_IGN);
    struct sigaction sa = {0};
    sa.sa_handler = on_signal;
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    created_ts = (long)time(NULL);
    {
        int64_t best = INT64_MAX;
        for (int i = 0; i < 64; i++) {
            struct timespec a, r, b;
            clock_gettime(CLOCK_MONOTONIC, &a);
            clock_gettime(CLOCK_REALTIME, &r);
            clock_gettime(CLOCK_MONOTONIC, &b);
            int64_t an = (int64_t)a.tv_sec * 1000000000LL + a.tv_nsec;
            int64_t bn = (int64_t)b.tv_sec * 1000000000LL + b.tv_nsec;
            int64_t rn = (int64_t)r.tv_sec * 1000000000LL + r.tv_nsec;
            if (bn - an < best) {
                best = bn - an;
                rt_offset_ns = rn - (an + bn) / 2;
            }
        }
    }

    int lfd = socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons(port),
                               .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    if (bind(lfd, (struct sockaddr *)&addr, sizeof addr) < 0) { perror("bind"); return 1; }
    if (listen(lfd, 4096) < 0) { perror("listen"); return 1; }
    socklen_t alen = sizeof addr;
    getsockname(lfd, (struct sockaddr *)&addr, &alen);
    set_nonblock(lfd);
    printf("PORT %d\n", ntohs(addr.sin_port));
    fflush(stdout);

    epfd = epoll_create1(0);
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = NULL};
    epoll_ctl(epfd, EPOLL_CTL_ADD, lfd, &ev);
    int tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK);
    struct itimerspec its;
    int64_t t0 = now_ns() + interval_us * 1000LL;
    its.it_value.tv_sec = t0 / 1000000000LL;
    its.it_value.tv_nsec = t0 % 1000000000LL;
    its.it_interval.tv_sec = interval_us / 1000000L;
    its.it_interval.tv_nsec = (interval_us % 1000000L) * 1000L;
    timerfd_settime(tfd, TFD_TIMER_ABSTIME, &its, NULL);
    static int tfd_marker;
    struct epoll_event tev = {.events = EPOLLIN, .data.ptr = &tfd_marker};
    epoll_ctl(epfd, EPOLL_CTL_ADD, tfd, &tev);
    int64_t next_sched = t0;

    struct epoll_event events[MAXEV];
    while (!stop_flag) {
        int n = epoll_wait(epfd, events, MAXEV, 200);
        if (n < 0) {
            if (errno == EINTR) continue;
            perror("epoll_wait");
            break;
        }
        int do_tick = 0;
        for (int i = 0; i < n; i++) {
            void *p = events[i].data.ptr;
            if (p == NULL) {
                for (;;) {
                    int cfd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK);
                    if (cfd < 0) break;
                    setsockopt(cfd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
                    setsockopt(cfd, SOL_SOCKET, SO_TIMESTAMPNS, &one, sizeof one);
                    Conn *c = calloc(1, sizeof(Conn));
                    c->fd = cfd;
#ifdef STUB_TLS
                    c->ssl = SSL_new(tls_ctx);
                    c->rbio = BIO_new(BIO_s_mem());
                    c->wbio = BIO_new(BIO_s_mem());
                    SSL_set_bio(c->ssl, c->rbio, c->wbio);
                    SSL_set_accept_state(c->ssl);
#endif
                    struct epoll_event cev = {.events = EPOLLIN, .data.ptr = c};
                    epoll_ctl(epfd, EPOLL_CTL_ADD, cfd, &cev);
                }
            } else if (p == &tfd_marker) {
                uint64_t expirations = 0;
                if (read(tfd, &expirations, sizeof expirations) > 0) do_tick = (int)expirations;
            }
        }
        /* connection events before the tick, so requests that arrived get their first token now */
        for (int i = 0; i < n; i++) {
            void *p = events[i].data.ptr;
            if (p == NULL || p == &tfd_marker) continue;
            Conn *c = p;
            if ((events[i].events & EPOLLOUT) && flush_out(c) < 0) continue;
            if (events[i].events & (EPOLLIN | EPOLLERR | EPOLLHUP)) on_readable(c);
        }
        if (do_tick) {
            /* missed expirations are not made up: one token per stream per tick that ran */
            int64_t sched = next_sched + (int64_t)(do_tick - 1) * interval_us * 1000LL;
            next_sched = sched + interval_us * 1000LL;
            tick(sched);
        }
    }
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    fprintf(stderr, "stubserver: requests=%ld tokens=%ld backlogged_writes=%ld cpu_user=%.3fs cpu_sys=%.3fs\n",
            total_requests, total_tokens, backlog_writes, ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6,
            ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6);
    if (logf) fclose(logf);
    return 0;
}
