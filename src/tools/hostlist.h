/*
 * hostlist.h - the hosts of a weftrun job and where its ranks go: -H
 * host:slots,... (Horovod's and Open MPI's form) or --hostfile FILE
 * ("host slots=N" as Open MPI writes it, "host:N" as Horovod does).
 */
#ifndef WEFT_HOSTLIST_H
#define WEFT_HOSTLIST_H

#include <stdbool.h>
#include <stddef.h>

typedef struct {
    char name[256];
    int slots;
    bool local;       /* this machine: its ranks are started without ssh */
    int first, count; /* the ranks placed here (count 0: none) */
} wr_host_t;

typedef struct {
    wr_host_t *hosts;
    int n;
} wr_hosts_t;

/* Appends the hosts of "a:4,b:2,c" (a host without ":N" has 1 slot).
 * False with the reason in err on a malformed entry. */
bool hosts_parse_list(wr_hosts_t *h, const char *spec, char *err,
                      size_t len);

/* Appends the hosts of a host file: one per line, "host", "host slots=N"
 * or "host:N"; "#" starts a comment, other key=value words are ignored
 * (Open MPI's max_slots=). */
bool hosts_parse_file(wr_hosts_t *h, const char *path, char *err,
                      size_t len);

/* Places ranks 0..nranks-1 on the hosts in order, each filled up to its
 * slots (nranks <= 0: one per slot; the count goes to *nranks).  False
 * when there are more ranks than slots. */
bool hosts_place(wr_hosts_t *h, int *nranks, char *err, size_t len);

/* Whether any placed rank is on another machine. */
bool hosts_any_remote(const wr_hosts_t *h);

void hosts_free(wr_hosts_t *h);

#endif /* WEFT_HOSTLIST_H */
