/* A plain PMIx client: asks the job data OpenMPI asks at init, puts a value,
 * commits, fences with data collection, reads its right neighbour's value,
 * and reads a value rank 1 commits only later (the get waits for it).
 * One line per rank: "rank R key=value ..."; a failed call shows as
 * key=ERR(status). */
#include <pmix.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static pmix_proc_t me;

static void show(const char *name, const pmix_proc_t *who, const char *key)
{
    pmix_value_t *v = NULL;
    pmix_status_t rc = PMIx_Get(who, key, NULL, 0, &v);

    if (PMIX_SUCCESS != rc) {
        printf(" %s=ERR(%d)", name, rc);
        return;
    }
    switch (v->type) {
    case PMIX_UINT32: printf(" %s=%u", name, v->data.uint32); break;
    case PMIX_UINT16: printf(" %s=%u", name, (unsigned) v->data.uint16); break;
    case PMIX_PROC_RANK: printf(" %s=%u", name, v->data.rank); break;
    case PMIX_STRING: printf(" %s=%s", name, v->data.string); break;
    default: printf(" %s=TYPE(%d)", name, v->type); break;
    }
    PMIX_VALUE_RELEASE(v);
}

static pmix_status_t put_u32(const char *key, uint32_t n)
{
    pmix_value_t v;

    PMIX_VALUE_LOAD(&v, &n, PMIX_UINT32);
    pmix_status_t rc = PMIx_Put(PMIX_GLOBAL, key, &v);
    return PMIX_SUCCESS == rc ? PMIx_Commit() : rc;
}

int main(void)
{
    pmix_proc_t job, peer;
    pmix_info_t collect;
    bool yes = true;
    uint32_t size = 0;
    pmix_value_t *v = NULL;
    pmix_status_t rc;

    if (PMIX_SUCCESS != (rc = PMIx_Init(&me, NULL, 0))) {
        printf("init ERR(%d)\n", rc);
        return 1;
    }
    PMIX_LOAD_PROCID(&job, me.nspace, PMIX_RANK_WILDCARD);
    if (PMIX_SUCCESS == PMIx_Get(&job, PMIX_JOB_SIZE, NULL, 0, &v)) {
        size = v->data.uint32;
        PMIX_VALUE_RELEASE(v);
    }
    printf("rank %u", me.rank);
    show("job_size", &job, PMIX_JOB_SIZE);
    show("univ_size", &job, PMIX_UNIV_SIZE);
    show("local_size", &job, PMIX_LOCAL_SIZE);
    show("local_peers", &job, PMIX_LOCAL_PEERS);
    show("local_rank", &me, PMIX_LOCAL_RANK);
    show("node_rank", &me, PMIX_NODE_RANK);
    show("appnum", &me, PMIX_APPNUM);
    show("hostname", &me, PMIX_HOSTNAME);
    show("nodeid", &me, PMIX_NODEID);

    rc = put_u32("test.value", 100 + me.rank);
    printf(" commit=%d", rc);
    PMIX_INFO_LOAD(&collect, PMIX_COLLECT_DATA, &yes, PMIX_BOOL);
    rc = PMIx_Fence(&job, 1, &collect, 1);
    printf(" fence=%d", rc);
    PMIX_LOAD_PROCID(&peer, me.nspace, size ? (me.rank + 1) % size : 0);
    show("peer_value", &peer, "test.value");
    if (1 == me.rank) {
        usleep(300000);
        put_u32("late.value", 7);
    }
    if (0 == me.rank && size > 1) {
        PMIX_LOAD_PROCID(&peer, me.nspace, 1);
        show("late_value", &peer, "late.value");
    }
    rc = PMIx_Fence(&job, 1, NULL, 0);
    printf(" fence2=%d", rc);
    rc = PMIx_Finalize(NULL, 0);
    printf(" finalize=%d\n", rc);
    return 0;
}
