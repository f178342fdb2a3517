/*
 * gen_vectors.c - produce golden wire vectors for the pmix-tools codec.
 *
 * Packs representative values of every data type the codec models with the
 * libpmix public API (PMIx_Data_pack with a NULL target, i.e. the bfrops
 * component the library assigns to itself) and writes, per case,
 * <dir>/<case>.hex (hex of the packed bytes) and <dir>/<case>.txt (what was
 * packed).
 *
 * Two targets, chosen by the library it is built against:
 *   v41  Debian's OpenPMIx 4.2.2 (its native component is v41);
 *   v61  OpenPMIx master (7.0.0a1); scripts/gen-golden.sh selects its v61
 *        component with PMIX_MCA_bfrops=v61 (master also carries v51). The
 *        PMIX_ALLOC_INHERIT (type 75) cases exist only there.
 *
 * Usage: gen_vectors <outdir> <expected-target>; the program refuses to run
 * when the library does not match the target named on its command line.
 *
 * Build and run through scripts/gen-golden.sh.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <limits.h>
#include <hwloc.h>
#include <pmix.h>
#include <pmix_tool.h>

static const char *outdir = ".";
static int failures = 0;

/* Pack `n` items of `type` from `data` into a fresh buffer and write it out. */
static void emit(const char *name, const char *desc, void *data, int32_t n, pmix_data_type_t type)
{
    pmix_data_buffer_t buf;
    pmix_byte_object_t bo;
    pmix_status_t rc;
    char path[4096];
    FILE *fp;
    size_t i;

    PMIX_DATA_BUFFER_CONSTRUCT(&buf);
    rc = PMIx_Data_pack(NULL, &buf, data, n, type);
    if (PMIX_SUCCESS != rc) {
        fprintf(stderr, "%s: pack failed: %s\n", name, PMIx_Error_string(rc));
        failures++;
        return;
    }
    PMIX_BYTE_OBJECT_CONSTRUCT(&bo);
    rc = PMIx_Data_unload(&buf, &bo);
    if (PMIX_SUCCESS != rc) {
        fprintf(stderr, "%s: unload failed: %s\n", name, PMIx_Error_string(rc));
        failures++;
        return;
    }
    snprintf(path, sizeof(path), "%s/%s.hex", outdir, name);
    fp = fopen(path, "w");
    if (NULL == fp) {
        perror(path);
        exit(1);
    }
    for (i = 0; i < bo.size; i++) {
        fprintf(fp, "%02x", (unsigned char) bo.bytes[i]);
    }
    fprintf(fp, "\n");
    fclose(fp);
    snprintf(path, sizeof(path), "%s/%s.txt", outdir, name);
    fp = fopen(path, "w");
    if (NULL == fp) {
        perror(path);
        exit(1);
    }
    fprintf(fp, "%s\ntype=%s count=%d bytes=%zu\n", desc, PMIx_Data_type_string(type), (int) n,
            bo.size);
    fclose(fp);
    PMIX_BYTE_OBJECT_DESTRUCT(&bo);
    PMIX_DATA_BUFFER_DESTRUCT(&buf);
}

static void emit_value(const char *name, const char *desc, const void *data, pmix_data_type_t t)
{
    pmix_value_t val;
    PMIX_VALUE_CONSTRUCT(&val);
    if (PMIX_SUCCESS != PMIx_Value_load(&val, data, t)) {
        fprintf(stderr, "%s: value load failed\n", name);
        failures++;
        return;
    }
    emit(name, desc, &val, 1, PMIX_VALUE);
    PMIX_VALUE_DESTRUCT(&val);
}

/* Registered types our codec reads past without modelling them: each as a
 * pmix_value_t, as they arrive inside infos. */
static void emit_unmodelled(void)
{
    uint32_t xyz[3] = {1, 300, 0xFFFFFFFFu};
    pmix_coord_t c;
    memset(&c, 0, sizeof(c));
    c.view = PMIX_COORD_LOGICAL_VIEW;
    c.coord = xyz;
    c.dims = 3;
    emit_value("unmodelled_coord", "value coord {logical view, [1,300,0xFFFFFFFF]}", &c, PMIX_COORD);

    pmix_geometry_t g;
    memset(&g, 0, sizeof(g));
    g.fabric = 7;
    g.uuid = "fab-uuid";
    g.osname = "ib0";
    g.coordinates = &c;
    g.ncoords = 1;
    emit_value("unmodelled_geometry", "value geometry {fabric 7, fab-uuid, ib0, [coord as above]}",
               &g, PMIX_GEOMETRY);

    pmix_device_distance_t d;
    memset(&d, 0, sizeof(d));
    d.uuid = "dev-uuid";
    d.osname = "mlx5_0";
    d.type = PMIX_DEVTYPE_NETWORK;
    d.mindist = 10;
    d.maxdist = 300;
    emit_value("unmodelled_devdist", "value device distance {dev-uuid, mlx5_0, NETWORK, 10, 300}",
               &d, PMIX_DEVICE_DIST);

    pmix_endpoint_t e;
    char ebytes[4] = {0, 1, 2, (char) 0xff};
    memset(&e, 0, sizeof(e));
    e.uuid = "ep-uuid";
    e.osname = "eth0";
    e.endpt.bytes = ebytes;
    e.endpt.size = 4;
    emit_value("unmodelled_endpoint", "value endpoint {ep-uuid, eth0, [00 01 02 ff]}", &e,
               PMIX_ENDPOINT);

#if PMIX_VERSION_MAJOR >= 5
    /* OpenPMIx 4.2.2 (Debian) refuses to pack a cpuset */
    pmix_cpuset_t cs;
    memset(&cs, 0, sizeof(cs));
    cs.source = "hwloc";
    cs.bitmap = hwloc_bitmap_alloc();
    hwloc_bitmap_set_range(cs.bitmap, 0, 3);
    hwloc_bitmap_set(cs.bitmap, 8);
    emit_value("unmodelled_cpuset", "value cpuset {hwloc, 0-3,8}", &cs, PMIX_PROC_CPUSET);
    hwloc_bitmap_free(cs.bitmap);
#endif
}

#ifdef PMIX_ALLOC_INHERIT
/* The type-75 cases: each inheritance value bare, as a pmix_value_t, as the
 * value of a PMIX_ALLOC_INHERITANCE info and inside a data array of infos. */
static void emit_alloc_inherit(void)
{
    static const struct {
        const char *suffix;
        const char *word;
        pmix_alloc_inheritance_t v;
    } cases[4] = {
        {"none", "NONE(1)", PMIX_ALLOC_INHERIT_NONE},
        {"child", "CHILD(2)", PMIX_ALLOC_INHERIT_CHILD},
        {"default", "DEFAULT(3)", PMIX_ALLOC_INHERIT_DEFAULT},
        {"child_default", "CHILD_DEFAULT(4)", PMIX_ALLOC_INHERIT_CHILD_DEFAULT},
    };
    char name[128], desc[256];
    int i;

    for (i = 0; i < 4; i++) {
        pmix_alloc_inheritance_t v = cases[i].v;
        pmix_info_t info;
        pmix_data_array_t *da;
        pmix_info_t *ia;
        uint32_t nn = 2;

        snprintf(name, sizeof(name), "inherit_%s", cases[i].suffix);
        snprintf(desc, sizeof(desc), "alloc inheritance %s", cases[i].word);
        emit(name, desc, &v, 1, PMIX_ALLOC_INHERIT);

        snprintf(name, sizeof(name), "value_inherit_%s", cases[i].suffix);
        snprintf(desc, sizeof(desc), "value alloc inheritance %s", cases[i].word);
        emit_value(name, desc, &v, PMIX_ALLOC_INHERIT);

        snprintf(name, sizeof(name), "info_inherit_%s", cases[i].suffix);
        snprintf(desc, sizeof(desc), "info {PMIX_ALLOC_INHERITANCE,REQD,alloc inheritance %s}",
                 cases[i].word);
        PMIX_INFO_LOAD(&info, PMIX_ALLOC_INHERITANCE, &v, PMIX_ALLOC_INHERIT);
        PMIX_INFO_REQUIRED(&info);
        emit(name, desc, &info, 1, PMIX_INFO);
        PMIX_INFO_DESTRUCT(&info);

        snprintf(name, sizeof(name), "darray_infos_inherit_%s", cases[i].suffix);
        snprintf(desc, sizeof(desc),
                 "data array of infos [{pmix.alloc.nnodes,uint32 2},"
                 "{PMIX_ALLOC_INHERITANCE,alloc inheritance %s}]",
                 cases[i].word);
        PMIX_DATA_ARRAY_CREATE(da, 2, PMIX_INFO);
        ia = (pmix_info_t *) da->array;
        PMIX_INFO_LOAD(&ia[0], "pmix.alloc.nnodes", &nn, PMIX_UINT32);
        PMIX_INFO_LOAD(&ia[1], PMIX_ALLOC_INHERITANCE, &v, PMIX_ALLOC_INHERIT);
        emit(name, desc, da, 1, PMIX_DATA_ARRAY);
        PMIX_DATA_ARRAY_FREE(da);
    }
    {
        /* all four plus a value outside the defined range: packed as is */
        pmix_alloc_inheritance_t set[5] = {PMIX_ALLOC_INHERIT_NONE, PMIX_ALLOC_INHERIT_CHILD,
                                           PMIX_ALLOC_INHERIT_DEFAULT,
                                           PMIX_ALLOC_INHERIT_CHILD_DEFAULT, 9};
        emit("inherit_set", "alloc inheritances [NONE,CHILD,DEFAULT,CHILD_DEFAULT,9]", set, 5,
             PMIX_ALLOC_INHERIT);
    }
    {
        pmix_data_array_t *da;
        pmix_alloc_inheritance_t *va;
        PMIX_DATA_ARRAY_CREATE(da, 2, PMIX_ALLOC_INHERIT);
        va = (pmix_alloc_inheritance_t *) da->array;
        va[0] = PMIX_ALLOC_INHERIT_NONE;
        va[1] = PMIX_ALLOC_INHERIT_DEFAULT;
        emit("darray_inherit", "data array of alloc inheritance [NONE,DEFAULT]", da, 1,
             PMIX_DATA_ARRAY);
        PMIX_DATA_ARRAY_FREE(da);
    }
}
#endif

int main(int argc, char **argv)
{
    pmix_proc_t me;
    pmix_info_t tinfo[2];
    bool yes = true;
    pmix_status_t rc;
#ifdef PMIX_ALLOC_INHERIT
    const char *target = "v61";
#else
    const char *target = "v41";
#endif

    if (argc != 3) {
        fprintf(stderr, "usage: %s <outdir> v41|v61\n", argv[0]);
        return 2;
    }
    outdir = argv[1];
    if (0 != strcmp(argv[2], target)) {
        fprintf(stderr, "%s: built against %s, which produces %s vectors, not %s\n", argv[0],
                PMIx_Get_version(), target, argv[2]);
        return 2;
    }
    PMIX_INFO_LOAD(&tinfo[0], PMIX_TOOL_DO_NOT_CONNECT, &yes, PMIX_BOOL);
    PMIX_INFO_LOAD(&tinfo[1], PMIX_TOOL_NSPACE, "golden", PMIX_STRING);
    rc = PMIx_tool_init(&me, tinfo, 1);
    if (PMIX_SUCCESS != rc) {
        fprintf(stderr, "PMIx_tool_init failed: %s\n", PMIx_Error_string(rc));
        return 1;
    }

    /* ---- scalars ---- */
    {
        bool b[3] = {true, false, true};
        emit("bool_true", "bool true", &b[0], 1, PMIX_BOOL);
        emit("bool_false", "bool false", &b[1], 1, PMIX_BOOL);
        emit("bool_three", "bools [true,false,true]", b, 3, PMIX_BOOL);
    }
    {
        uint8_t by[2] = {0, 255};
        emit("byte_pair", "bytes [0,255]", by, 2, PMIX_BYTE);
        int8_t i8[2] = {-128, 127};
        emit("int8_pair", "int8 [-128,127]", i8, 2, PMIX_INT8);
        uint8_t u8 = 255;
        emit("uint8_max", "uint8 255", &u8, 1, PMIX_UINT8);
    }
    {
        int16_t v[4] = {0, -1, 32767, -32768};
        emit("int16_set", "int16 [0,-1,32767,-32768]", v, 4, PMIX_INT16);
        uint16_t u[3] = {0, 300, 65535};
        emit("uint16_set", "uint16 [0,300,65535]", u, 3, PMIX_UINT16);
    }
    {
        int32_t v[8] = {0, 1, -1, 63, 64, -65, INT32_MAX, INT32_MIN};
        emit("int32_set", "int32 [0,1,-1,63,64,-65,INT32_MAX,INT32_MIN]", v, 8, PMIX_INT32);
        uint32_t u[5] = {0, 127, 128, 0xFFFFFFFEu, 0xFFFFFFFFu};
        emit("uint32_set", "uint32 [0,127,128,0xFFFFFFFE,0xFFFFFFFF]", u, 5, PMIX_UINT32);
    }
    {
        int64_t v[4] = {0, -1, INT64_MAX, INT64_MIN};
        emit("int64_set", "int64 [0,-1,INT64_MAX,INT64_MIN]", v, 4, PMIX_INT64);
        uint64_t u[5] = {0, 1, (1ULL << 56) - 1, 1ULL << 56, UINT64_MAX};
        emit("uint64_set", "uint64 [0,1,2^56-1,2^56,UINT64_MAX]", u, 5, PMIX_UINT64);
    }
    {
        int iv[3] = {-5, INT_MAX, INT_MIN};
        emit("int_set", "int [-5,INT_MAX,INT_MIN]", iv, 3, PMIX_INT);
        unsigned int uv[2] = {7, UINT_MAX};
        emit("uint_set", "uint [7,UINT_MAX]", uv, 2, PMIX_UINT);
        size_t sv[3] = {0, 1000, SIZE_MAX};
        emit("size_set", "size [0,1000,SIZE_MAX]", sv, 3, PMIX_SIZE);
        pid_t pv[3] = {0, 12345, 2147483647};
        emit("pid_set", "pid [0,12345,2147483647]", pv, 3, PMIX_PID);
    }
    {
        float f[3] = {1.5f, -0.25f, 0.0f};
        emit("float_set", "float [1.5,-0.25,0]", f, 3, PMIX_FLOAT);
        double d[3] = {3.25, -10000000000.0, 0.125};
        emit("double_set", "double [3.25,-1e10,0.125]", d, 3, PMIX_DOUBLE);
    }
    {
        struct timeval tv[2] = {{1700000000, 123456}, {0, 0}};
        emit("timeval_pair", "timeval [{1700000000,123456},{0,0}]", tv, 2, PMIX_TIMEVAL);
        time_t t = 1700000000;
        emit("time_one", "time 1700000000", &t, 1, PMIX_TIME);
        pmix_status_t st[4] = {PMIX_SUCCESS, PMIX_ERR_NOT_SUPPORTED, PMIX_EVENT_JOB_END, -194};
        emit("status_set", "status [0,-47,-145,-194]", st, 4, PMIX_STATUS);
    }
    {
        char *s[4] = {"hello", "", NULL, "pmix.alloc.id"};
        emit("string_hello", "string \"hello\"", &s[0], 1, PMIX_STRING);
        emit("string_empty", "string \"\"", &s[1], 1, PMIX_STRING);
        emit("string_null", "string NULL", &s[2], 1, PMIX_STRING);
        emit("string_four", "strings [\"hello\",\"\",NULL,\"pmix.alloc.id\"]", s, 4, PMIX_STRING);
    }
    {
        pmix_byte_object_t bo[2];
        bo[0].bytes = NULL;
        bo[0].size = 0;
        bo[1].bytes = (char *) "\x00\x01\x02\xff";
        bo[1].size = 4;
        emit("bo_pair", "byte objects [[], [00 01 02 ff]]", bo, 2, PMIX_BYTE_OBJECT);
    }
    {
        pmix_proc_t p[3];
        PMIX_PROC_LOAD(&p[0], "prterun-host-1234@1", 0);
        PMIX_PROC_LOAD(&p[1], "prterun-host-1234@1", PMIX_RANK_WILDCARD);
        PMIX_PROC_LOAD(&p[2], "", PMIX_RANK_UNDEF);
        emit("proc_three", "procs [{prterun-host-1234@1,0},{..,WILDCARD},{\"\",UNDEF}]", p, 3,
             PMIX_PROC);
        pmix_rank_t r[3] = {0, 4096, PMIX_RANK_WILDCARD};
        emit("rank_set", "ranks [0,4096,WILDCARD]", r, 3, PMIX_PROC_RANK);
    }
    {
        pmix_proc_state_t ps = PMIX_PROC_STATE_RUNNING;
        emit("pstate_running", "proc state PMIX_PROC_STATE_RUNNING (5)", &ps, 1, PMIX_PROC_STATE);
        pmix_job_state_t js = PMIX_JOB_STATE_RUNNING;
        emit("jstate_running", "job state RUNNING(3)", &js, 1, PMIX_JOB_STATE);
        pmix_persistence_t pe = PMIX_PERSIST_SESSION;
        emit("persist_session", "persist PMIX_PERSIST_SESSION (4)", &pe, 1, PMIX_PERSIST);
        pmix_scope_t sc = PMIX_GLOBAL;
        emit("scope_global", "scope GLOBAL(3)", &sc, 1, PMIX_SCOPE);
        pmix_data_range_t dr = PMIX_RANGE_NAMESPACE;
        emit("range_namespace", "range PMIX_RANGE_NAMESPACE (3)", &dr, 1, PMIX_DATA_RANGE);
        uint8_t cmd = 7;
        emit("command_seven", "command 7", &cmd, 1, PMIX_COMMAND);
        pmix_data_type_t dts[2] = {PMIX_STRING, 500};
        emit("datatype_pair", "data types [STRING(3),500]", dts, 2, PMIX_DATA_TYPE);
        pmix_info_directives_t idr[2] = {PMIX_INFO_REQD, 0xffff0000u};
        emit("infodir_pair", "info directives [REQD,0xffff0000]", idr, 2, PMIX_INFO_DIRECTIVES);
        pmix_alloc_directive_t ad = PMIX_ALLOC_EXTEND;
        emit("allocdir_extend", "alloc directive EXTEND(2)", &ad, 1, PMIX_ALLOC_DIRECTIVE);
        pmix_iof_channel_t ch = PMIX_FWD_STDOUT_CHANNEL | PMIX_FWD_STDERR_CHANNEL;
        emit("iof_outerr", "iof channel STDOUT|STDERR(6)", &ch, 1, PMIX_IOF_CHANNEL);
    }
    {
        pmix_envar_t e;
        PMIX_ENVAR_LOAD(&e, "PATH", "/usr/bin", ':');
        emit("envar_path", "envar PATH=/usr/bin sep ':'", &e, 1, PMIX_ENVAR);
        char *ns = "nspace-x";
        pmix_nspace_t nsp;
        PMIX_LOAD_NSPACE(nsp, ns);
        emit("nspace_x", "proc nspace \"nspace-x\"", &nsp, 1, PMIX_PROC_NSPACE);
    }
    {
        pmix_proc_info_t pi;
        PMIX_PROC_INFO_CONSTRUCT(&pi);
        PMIX_PROC_LOAD(&pi.proc, "job-7", 3);
        pi.hostname = strdup("node01");
        pi.executable_name = strdup("/bin/sleep");
        pi.pid = 4242;
        pi.exit_code = 0;
        pi.state = PMIX_PROC_STATE_RUNNING;
        emit("pinfo_one", "proc info {job-7:3, node01, /bin/sleep, pid 4242, RUNNING}", &pi, 1,
             PMIX_PROC_INFO);
    }
    /* ---- info ---- */
    {
        pmix_info_t info[4];
        uint64_t nn = 4;
        PMIX_INFO_LOAD(&info[0], "pmix.alloc.nnodes", &nn, PMIX_UINT64);
        PMIX_INFO_REQUIRED(&info[0]);
        PMIX_INFO_LOAD(&info[1], "pmix.alloc.id", "alloc-1", PMIX_STRING);
        PMIX_INFO_LOAD(&info[2], "pmix.nullstr", NULL, PMIX_STRING);
        PMIX_INFO_LOAD(&info[3], "pmix.undef", NULL, PMIX_UNDEF);
        emit("info_four",
             "infos [{pmix.alloc.nnodes,REQD,uint64 4},{pmix.alloc.id,string alloc-1},"
             "{pmix.nullstr,string NULL},{pmix.undef,UNDEF}]",
             info, 4, PMIX_INFO);
    }
    {
        pmix_pdata_t pd;
        pmix_proc_t p;
        int32_t v = -9;
        PMIX_PROC_LOAD(&p, "pub-ns", 2);
        PMIX_PDATA_CONSTRUCT(&pd);
        PMIX_PDATA_LOAD(&pd, &p, "pub.key", &v, PMIX_INT32);
        emit("pdata_one", "pdata {pub-ns:2, pub.key, int32 -9}", &pd, 1, PMIX_PDATA);
    }
    /* ---- app ---- */
    {
        pmix_app_t app;
        PMIX_APP_CONSTRUCT(&app);
        app.cmd = strdup("/bin/hostname");
        app.argv = (char **) calloc(3, sizeof(char *));
        app.argv[0] = strdup("hostname");
        app.argv[1] = strdup("-s");
        app.env = (char **) calloc(2, sizeof(char *));
        app.env[0] = strdup("FOO=bar");
        app.cwd = strdup("/tmp");
        app.maxprocs = 4;
        PMIX_INFO_CREATE(app.info, 1);
        app.ninfo = 1;
        PMIX_INFO_LOAD(&app.info[0], "pmix.ppr", "1:node", PMIX_STRING);
        emit("app_full",
             "app {cmd /bin/hostname, argv [hostname,-s], env [FOO=bar], cwd /tmp, maxprocs 4, "
             "info [{pmix.ppr,string 1:node}]}",
             &app, 1, PMIX_APP);
        pmix_app_t app2;
        PMIX_APP_CONSTRUCT(&app2);
        app2.cmd = strdup("a.out");
        app2.maxprocs = 1;
        emit("app_min", "app {cmd a.out, no argv, no env, cwd NULL, maxprocs 1, no info}", &app2,
             1, PMIX_APP);
    }
    /* ---- query ---- */
    {
        pmix_query_t q;
        PMIX_QUERY_CONSTRUCT(&q);
        q.keys = (char **) calloc(3, sizeof(char *));
        q.keys[0] = strdup("pmix.qry.ns");
        q.keys[1] = strdup("pmix.qry.jst");
        PMIX_INFO_CREATE(q.qualifiers, 1);
        q.nqual = 1;
        PMIX_INFO_LOAD(&q.qualifiers[0], "pmix.nspace", "job-7", PMIX_STRING);
        emit("query_one", "query {keys [pmix.qry.ns,pmix.qry.jst], quals [{pmix.nspace,job-7}]}",
             &q, 1, PMIX_QUERY);
    }
    /* ---- values ---- */
    {
        bool b = true;
        emit_value("value_bool", "value bool true", &b, PMIX_BOOL);
        int iv = -3;
        emit_value("value_int", "value int -3", &iv, PMIX_INT);
        uint32_t u32 = 70000;
        emit_value("value_uint32", "value uint32 70000", &u32, PMIX_UINT32);
        size_t sz = 12;
        emit_value("value_size", "value size 12", &sz, PMIX_SIZE);
        emit_value("value_string", "value string \"abc\"", "abc", PMIX_STRING);
        pmix_proc_t p;
        PMIX_PROC_LOAD(&p, "ns-v", 5);
        emit_value("value_proc", "value proc ns-v:5", &p, PMIX_PROC);
        pmix_rank_t r = PMIX_RANK_WILDCARD;
        emit_value("value_rank", "value rank WILDCARD", &r, PMIX_PROC_RANK);
        pmix_status_t st = PMIX_ERR_TIMEOUT;
        emit_value("value_status", "value status -24", &st, PMIX_STATUS);
        double d = 2.5;
        emit_value("value_double", "value double 2.5", &d, PMIX_DOUBLE);
        struct timeval tv = {5, 6};
        emit_value("value_timeval", "value timeval {5,6}", &tv, PMIX_TIMEVAL);
        pmix_byte_object_t bo = {.bytes = (char *) "xyz", .size = 3};
        emit_value("value_bo", "value byte object \"xyz\"", &bo, PMIX_BYTE_OBJECT);
        pmix_byte_object_t cbo = {.bytes = (char *) "\x78\x9c\x01", .size = 3};
        emit_value("value_cstring", "value compressed string bytes 78 9c 01", &cbo,
                   PMIX_COMPRESSED_STRING);
        emit_value("value_cbo", "value compressed byte object bytes 78 9c 01", &cbo,
                   PMIX_COMPRESSED_BYTE_OBJECT);
        pmix_envar_t e;
        PMIX_ENVAR_LOAD(&e, "LD_LIBRARY_PATH", "/opt/lib", ':');
        emit_value("value_envar", "value envar LD_LIBRARY_PATH=/opt/lib sep ':'", &e, PMIX_ENVAR);
        pmix_job_state_t js = PMIX_JOB_STATE_TERMINATED;
        emit_value("value_jstate", "value job state TERMINATED", &js, PMIX_JOB_STATE);
        /* PMIx_Value_load does not handle PMIX_DATA_TYPE in 4.2.2: load by hand (both targets) */
        pmix_value_t dtv;
        PMIX_VALUE_CONSTRUCT(&dtv);
        dtv.type = PMIX_DATA_TYPE;
        dtv.data.uint16 = PMIX_INFO; /* the union has no pmix_data_type_t member */
        emit("value_dtype", "value data type PMIX_INFO (24)", &dtv, 1, PMIX_VALUE);
        emit_value("value_nspace", "value proc nspace \"ns-n\"", "ns-n", PMIX_PROC_NSPACE);
        pmix_value_t undef;
        PMIX_VALUE_CONSTRUCT(&undef);
        emit("value_undef", "value UNDEF", &undef, 1, PMIX_VALUE);
    }
    /* ---- data arrays ---- */
    {
        pmix_data_array_t *da;
        char **sa;
        PMIX_DATA_ARRAY_CREATE(da, 3, PMIX_STRING);
        sa = (char **) da->array;
        sa[0] = strdup("n1");
        sa[1] = strdup("n2");
        sa[2] = strdup("");
        emit("darray_strings", "data array of strings [n1,n2,\"\"]", da, 1, PMIX_DATA_ARRAY);
        emit_value("value_darray_strings", "value data array of strings [n1,n2,\"\"]", da,
                   PMIX_DATA_ARRAY);

        pmix_data_array_t *dp;
        pmix_proc_t *pa;
        PMIX_DATA_ARRAY_CREATE(dp, 2, PMIX_PROC);
        pa = (pmix_proc_t *) dp->array;
        PMIX_PROC_LOAD(&pa[0], "job-a", 0);
        PMIX_PROC_LOAD(&pa[1], "job-a", 1);
        emit("darray_procs", "data array of procs [job-a:0, job-a:1]", dp, 1, PMIX_DATA_ARRAY);

        pmix_data_array_t *du;
        uint32_t *ua;
        PMIX_DATA_ARRAY_CREATE(du, 3, PMIX_UINT32);
        ua = (uint32_t *) du->array;
        ua[0] = 1;
        ua[1] = 200;
        ua[2] = 0xFFFFFFFFu;
        emit("darray_uint32", "data array of uint32 [1,200,0xFFFFFFFF]", du, 1, PMIX_DATA_ARRAY);

        /* by hand: master's PMIx_Data_array_create answers NULL for zero elements */
        pmix_data_array_t de;
        memset(&de, 0, sizeof(de));
        de.type = PMIX_INFO;
        de.size = 0;
        de.array = NULL;
        emit("darray_empty_infos", "data array of info, zero elements", &de, 1, PMIX_DATA_ARRAY);

        pmix_data_array_t *dv;
        pmix_value_t *va;
        int16_t i16 = -7;
        PMIX_DATA_ARRAY_CREATE(dv, 2, PMIX_VALUE);
        va = (pmix_value_t *) dv->array;
        PMIx_Value_load(&va[0], "str", PMIX_STRING);
        PMIx_Value_load(&va[1], &i16, PMIX_INT16);
        emit("darray_values", "data array of values [string str, int16 -7]", dv, 1,
             PMIX_DATA_ARRAY);

        /* infos, one of which nests a data array of infos which nests strings */
        pmix_data_array_t *inner, *outer, *strs;
        pmix_info_t *ia, *oa;
        bool t = true;
        PMIX_DATA_ARRAY_CREATE(strs, 2, PMIX_STRING);
        sa = (char **) strs->array;
        sa[0] = strdup("x");
        sa[1] = strdup("y");
        PMIX_DATA_ARRAY_CREATE(inner, 2, PMIX_INFO);
        ia = (pmix_info_t *) inner->array;
        PMIX_INFO_LOAD(&ia[0], "inner.flag", &t, PMIX_BOOL);
        PMIX_INFO_LOAD(&ia[1], "inner.list", strs, PMIX_DATA_ARRAY);
        PMIX_DATA_ARRAY_CREATE(outer, 2, PMIX_INFO);
        oa = (pmix_info_t *) outer->array;
        PMIX_INFO_LOAD(&oa[0], "outer.name", "top", PMIX_STRING);
        PMIX_INFO_LOAD(&oa[1], "outer.nested", inner, PMIX_DATA_ARRAY);
        emit("darray_nested_infos",
             "data array of infos [{outer.name,string top},{outer.nested,darray infos "
             "[{inner.flag,bool true},{inner.list,darray strings [x,y]}]}]",
             outer, 1, PMIX_DATA_ARRAY);
        pmix_info_t wrap;
        PMIX_INFO_LOAD(&wrap, "pmix.alloc.req", outer, PMIX_DATA_ARRAY);
        emit("info_with_darray", "info {pmix.alloc.req, darray of infos (as darray_nested_infos)}",
             &wrap, 1, PMIX_INFO);
    }

#ifdef PMIX_ALLOC_INHERIT
    emit_alloc_inherit();
#endif
    emit_unmodelled();

    PMIx_tool_finalize();
    if (failures) {
        fprintf(stderr, "%d case(s) failed\n", failures);
        return 1;
    }
    return 0;
}
