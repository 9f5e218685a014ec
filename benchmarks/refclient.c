/*
 * refclient: a minimal C epoll streaming client, the measurement floor of loadgen_bench.py.
 *
 * Closed loop: N keep-alive connections, each sending its next request as soon as the previous response
 * ended.  Every read is stamped with CLOCK_MONOTONIC right after read() returned; token chunks are
 * counted by the '"choices":[{' pattern (the stub server's compact JSON); a response ends with the
 * zero-size chunk.  Only meant for stubserver.c.
 *
 * Build: cc -O2 -o refclient refclient.c
 * Run:   refclient PORT CONCURRENCY INPUT_LEN OUTPUT_LEN DURATION_S OUT.json
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

typedef struct {
    long id;
    double sent;
    double *chunks;
    int n, cap;
    int ok;
} Rec;

typedef struct {
    int fd;
    Rec *cur;
    char tail[8]; /* last bytes seen, to find patterns split across reads */
    int tail_len;
} Conn;

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static Rec **recs; /* pointers: connections hold Rec* across reallocations of this array */
static long nrecs, caprecs;
static long next_id;
static int port, conc, in_len, out_len;
static double t_end;
static char body[65536];
static int body_len;

static int count_pat(const char *buf, int len, const char *pat) {
    int n = 0, pl = strlen(pat);
    const char *p = buf, *e = buf + len;
    while ((p = memmem(p, e - p, pat, pl))) { n++; p += pl; }
    return n;
}

static void send_next(Conn *c) {
    if (now_s() >= t_end) { c->cur = NULL; return; }
    if (nrecs == caprecs) {
        caprecs = caprecs ? caprecs * 2 : 4096;
        recs = realloc(recs, caprecs * sizeof(Rec *));
    }
    Rec *r = calloc(1, sizeof(Rec));
    recs[nrecs++] = r;
    r->id = next_id++;
    r->cap = out_len + 4;
    r->chunks = malloc(sizeof(double) * r->cap);
    char head[512];
    int hl = snprintf(head, sizeof head,
                      "POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                      "X-Request-Id: ref-%ld\r\nContent-Length: %d\r\n\r\n", r->id, body_len);
    char *msg = malloc(hl + body_len);
    memcpy(msg, head, hl);
    memcpy(msg + hl, body, body_len);
    c->cur = r;
    c->tail_len = 0;
    r->sent = now_s();
    size_t off = 0, total = hl + body_len;
    while (off < total) {
        ssize_t w = write(c->fd, msg + off, total - off);
        if (w > 0) { off += w; continue; }
        if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) { usleep(20); continue; }
        perror("write");
        exit(1);
    }
    free(msg);
}

int main(int argc, char **argv) {
    if (argc != 7) { fprintf(stderr, "usage: refclient PORT CONC IN OUT DURATION OUT.json\n"); return 2; }
    port = atoi(argv[1]); conc = atoi(argv[2]); in_len = atoi(argv[3]); out_len = atoi(argv[4]);
    double duration = atof(argv[5]);
    const char *outpath = argv[6];
    int p = snprintf(body, sizeof body, "{\"model\":\"stub\",\"prompt\":[");
    for (int i = 0; i < in_len; i++) p += snprintf(body + p, sizeof body - p, "%s%d", i ? "," : "", 10 + i);
    p += snprintf(body + p, sizeof body - p, "],\"max_tokens\":%d,\"ignore_eos\":true,\"stream\":true,"
                  "\"stream_options\":{\"include_usage\":true}}", out_len);
    body_len = p;

    int ep = epoll_create1(0);
    Conn *conns = calloc(conc, sizeof(Conn));
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons(port)};
    inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr);
    for (int i = 0; i < conc; i++) {
        int fd = socket(AF_INET, SOCK_STREAM, 0);
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        if (connect(fd, (struct sockaddr *)&addr, sizeof addr) < 0) { perror("connect"); return 1; }
        fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
        conns[i].fd = fd;
        struct epoll_event ev = {.events = EPOLLIN, .data.ptr = &conns[i]};
        epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
    }
    t_end = now_s() + duration;
    for (int i = 0; i < conc; i++) send_next(&conns[i]);
    int active = conc;
    struct epoll_event evs[1024];
    static char buf[1 << 16];
    while (active > 0) {
        int n = epoll_wait(ep, evs, 1024, 1000);
        for (int i = 0; i < n; i++) {
            Conn *c = evs[i].data.ptr;
            for (;;) {
                /* keep the previous tail in front so patterns split across reads are found */
                memcpy(buf, c->tail, c->tail_len);
                ssize_t r = read(c->fd, buf + c->tail_len, sizeof buf - c->tail_len);
                if (r <= 0) break;
                double t = now_s();
                int len = c->tail_len + r;
                Rec *rec = c->cur;
                if (rec) {
                    int k = count_pat(buf, len, "\"choices\":[{") - count_pat(buf, c->tail_len, "\"choices\":[{");
                    for (int j = 0; j < k && rec->n < rec->cap; j++) rec->chunks[rec->n++] = t;
                }
                int keep = len < 7 ? len : 7;
                memcpy(c->tail, buf + len - keep, keep);
                c->tail_len = keep;
                if (rec && len >= 5 && memcmp(buf + len - 5, "0\r\n\r\n", 5) == 0) {
                    rec->ok = 1;
                    send_next(c);
                    if (!c->cur) active--;
                }
            }
        }
    }
    FILE *f = fopen(outpath, "w");
    fprintf(f, "{\"requests\":[");
    for (long i = 0; i < nrecs; i++) {
        Rec *r = recs[i];
        fprintf(f, "%s{\"rid\":\"ref-%ld\",\"sent\":%.9f,\"ok\":%s,\"chunks\":[", i ? "," : "", r->id, r->sent,
                r->ok ? "true" : "false");
        for (int j = 0; j < r->n; j++) fprintf(f, "%s%.9f", j ? "," : "", r->chunks[j]);
        fprintf(f, "]}");
    }
    fprintf(f, "]}\n");
    fclose(f);
    return 0;
}
