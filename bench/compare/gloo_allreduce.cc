// gloo_allreduce.cc - the Gloo side of `make compare`: N forked processes
// join through a FileStore in a temporary directory, connect a full mesh
// over one of Gloo's transports (-T tcp: TCP on 127.0.0.1, the default;
// -T ibverbs: its verbs transport on device -D, port -P, GID index -G,
// which the Soft-RoCE guest of test/rdma-vm runs as rxe0, 1, 1), and run
// one of Gloo's allreduce algorithms (ring, ring_chunked,
// halving_doubling) over the same sweep as weft-bench: sizes -b..-e times
// -f, -w warm-up, -r timed iterations, float32 sum, a checked run first.  Gloo's algorithms work in place on
// the buffer they were built with, so the algorithm object is built once
// per size, outside the timing (the way its own benchmark does).
//
// Output (rank 0): "size count time_us algbw busbw wrong" per size, after
// a "#" line; busbw = algbw * 2(n-1)/n, time = the slowest rank's average.

#include <gloo/allreduce_halving_doubling.h>
#include <gloo/allreduce_ring.h>
#include <gloo/allreduce_ring_chunked.h>
#include <gloo/barrier_all_to_all.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/config.h>
#include <gloo/transport/tcp/device.h>
#if GLOO_HAVE_TRANSPORT_IBVERBS
#include <gloo/transport/ibverbs/device.h>
#endif

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

namespace {

struct Opts {
    int nranks = 2;
    std::string algo = "ring";
    double min = 8, max = 64 << 20, factor = 2;
    int warmup = 5, iters = 20;
    std::string transport = "tcp";
    std::string ibDev = "rxe0";
    int ibPort = 1, ibGidIndex = 1;
};

double parseSize(const char *s)
{
    char *end;
    double v = std::strtod(s, &end);
    switch (*end) {
    case 'k': case 'K': return v * 1024;
    case 'm': case 'M': return v * 1048576;
    case 'g': case 'G': return v * 1073741824.0;
    default: return v;
    }
}

bool parse(int argc, char **argv, Opts *o)
{
    for (int i = 1; i + 1 < argc; i += 2) {
        std::string f = argv[i];
        const char *v = argv[i + 1];
        if (f == "-n") o->nranks = std::atoi(v);
        else if (f == "-A") o->algo = v;
        else if (f == "-b") o->min = parseSize(v);
        else if (f == "-e") o->max = parseSize(v);
        else if (f == "-f") o->factor = std::atof(v);
        else if (f == "-w") o->warmup = std::atoi(v);
        else if (f == "-r") o->iters = std::atoi(v);
        else if (f == "-T") o->transport = v;
        else if (f == "-D") o->ibDev = v;
        else if (f == "-P") o->ibPort = std::atoi(v);
        else if (f == "-G") o->ibGidIndex = std::atoi(v);
        else return false;
    }
    return o->nranks >= 1 && o->factor > 1 && o->iters > 0 &&
           o->min <= o->max &&
           (o->transport == "tcp" || o->transport == "ibverbs") &&
           (o->algo == "ring" || o->algo == "ring_chunked" ||
            o->algo == "halving_doubling");
}

using Ctx = std::shared_ptr<gloo::rendezvous::Context>;

std::unique_ptr<gloo::Algorithm> makeAlgo(const Opts &o, const Ctx &ctx,
                                          float *buf, int count)
{
    std::vector<float *> ptrs{buf};
    if (o.algo == "ring_chunked")
        return std::unique_ptr<gloo::Algorithm>(
            new gloo::AllreduceRingChunked<float>(ctx, ptrs, count));
    if (o.algo == "halving_doubling")
        return std::unique_ptr<gloo::Algorithm>(
            new gloo::AllreduceHalvingDoubling<float>(ctx, ptrs, count));
    return std::unique_ptr<gloo::Algorithm>(
        new gloo::AllreduceRing<float>(ctx, ptrs, count));
}

// v reduced over ranks with fn (a ring allreduce, untimed).
double overRanks(const Ctx &ctx, double v,
                 const gloo::ReductionFunction<double> *fn)
{
    std::vector<double *> ptrs{&v};
    gloo::AllreduceRing<double> op(ctx, ptrs, 1, fn);
    op.run();
    return v;
}

// Small integers, so the sum is exact whatever the reduction order.
long checkedRun(const Opts &o, gloo::Algorithm *algo, float *buf,
                size_t count, int rank)
{
    for (size_t i = 0; i < count; i++)
        buf[i] = static_cast<float>((i + rank) % 4);
    algo->run();
    long wrong = 0;
    for (size_t i = 0; i < count; i++) {
        double expect = 0;
        for (int r = 0; r < o.nranks; r++)
            expect += static_cast<double>((i + r) % 4);
        wrong += buf[i] != static_cast<float>(expect);
    }
    return wrong;
}

void oneSize(const Opts &o, const Ctx &ctx, float *buf, size_t count)
{
    auto algo = makeAlgo(o, ctx, buf, static_cast<int>(count));
    long wrong = checkedRun(o, algo.get(), buf, count, ctx->rank);
    for (int i = 0; i < o.warmup; i++)
        algo->run();
    gloo::BarrierAllToAll(ctx).run();
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < o.iters; i++)
        algo->run();
    std::chrono::duration<double, std::micro> dt =
        std::chrono::steady_clock::now() - t0;
    double t = overRanks(ctx, dt.count() / o.iters,
                         gloo::ReductionFunction<double>::max);
    double totalWrong = overRanks(ctx, static_cast<double>(wrong),
                                  gloo::ReductionFunction<double>::sum);
    if (ctx->rank != 0)
        return;
    double bytes = static_cast<double>(count * sizeof(float));
    double algbw = t > 0 ? bytes / t / 1e3 : 0;
    std::printf("%zu %zu %.3f %.6f %.6f %ld\n", count * sizeof(float), count,
                t, algbw, algbw * 2.0 * (o.nranks - 1) / o.nranks,
                static_cast<long>(totalWrong));
    std::fflush(stdout);
}

std::shared_ptr<gloo::transport::Device> makeDevice(const Opts &o)
{
    if (o.transport == "ibverbs") {
#if GLOO_HAVE_TRANSPORT_IBVERBS
        gloo::transport::ibverbs::attr attr;
        attr.name = o.ibDev;
        attr.port = o.ibPort;
        attr.index = o.ibGidIndex;
        return gloo::transport::ibverbs::CreateDevice(attr);
#else
        throw std::runtime_error("this Gloo was built without ibverbs");
#endif
    }
    gloo::transport::tcp::attr attr;
    attr.hostname = "127.0.0.1";
    return gloo::transport::tcp::CreateDevice(attr);
}

int runRank(const Opts &o, int rank, const std::string &dir)
try {
    auto dev = makeDevice(o);
    gloo::rendezvous::FileStore store(dir);
    auto ctx = std::make_shared<gloo::rendezvous::Context>(rank, o.nranks);
    ctx->setTimeout(std::chrono::seconds(120));
    ctx->connectFullMesh(store, dev);
    std::vector<float> buf(static_cast<size_t>(o.max) / sizeof(float) + 1);
    for (double b = o.min; b <= o.max; b *= o.factor)
        if (static_cast<size_t>(b) / sizeof(float) > 0)
            oneSize(o, ctx, buf.data(),
                    static_cast<size_t>(b) / sizeof(float));
    return 0;
} catch (const std::exception &e) {
    std::fprintf(stderr, "gloo_allreduce: rank %d: %s\n", rank, e.what());
    return 1;
}

}  // namespace

int main(int argc, char **argv)
{
    Opts o;
    if (!parse(argc, argv, &o)) {
        std::fprintf(stderr, "usage: gloo_allreduce [-n N] [-A ring|"
                     "ring_chunked|halving_doubling] [-b MIN] [-e MAX] "
                     "[-f FACTOR] [-w WARMUP] [-r ITERS] [-T tcp|ibverbs] "
                     "[-D IBDEV] [-P PORT] [-G GID_INDEX]\n");
        return 2;
    }
    char dir[] = "/tmp/gloo-compare-XXXXXX";
    if (!mkdtemp(dir)) {
        std::perror("mkdtemp");
        return 1;
    }
    std::printf("# size count time_us algbw busbw wrong (gloo %s over %s, "
                "%d ranks)\n",
                o.algo.c_str(), o.transport.c_str(), o.nranks);
    std::fflush(stdout);
    std::vector<pid_t> pids;
    for (int r = 0; r < o.nranks; r++) {
        pid_t pid = fork();
        if (pid == 0)
            _exit(runRank(o, r, dir));
        pids.push_back(pid);
    }
    int rc = 0;
    for (pid_t pid : pids) {
        int st = 0;
        waitpid(pid, &st, 0);
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
            rc = 1;
    }
    std::string rm = std::string("rm -rf ") + dir;
    if (std::system(rm.c_str()) != 0)
        rc = rc ? rc : 1;
    return rc;
}
