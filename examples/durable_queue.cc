// examples/durable_queue.cc — the user's guide example (docs/guide.md): a
// durable, detectable job queue that survives being killed.
//
//   durable-queue POOL produce N        enqueue jobs 1..N (creates the pool if needed)
//   durable-queue POOL consume [--crash-at K] [--no-recover]
//                                       dequeue until empty, printing "job V";
//                                       --crash-at K: SIGKILL itself when its K-th
//                                       dequeue has taken effect but before the job
//                                       is printed (the response dies with the
//                                       process, like at a power failure);
//                                       --no-recover: skip step 4 (to see jobs lost)
//
// On every start, before anything else, `consume` asks the detectable API
// what the previous incarnation was doing when it died: a dequeue that had
// begun is completed (if it had not taken effect) and its job is printed
// then ("job V (recovered)"), so across kills every job is consumed exactly
// once. The test suite builds this program and checks exactly that
// (tests/examples/guide_example_process_test.cc).
//
// What it uses: a pool file (ferrite/pmem/pool.h; recovery is the pool's and
// runs when it opens), a PBqueue (ferrite/combining/pb_queue.h), thread
// handles (ferrite/sync/thread_registry.h), and exactly-once operations
// (ferrite/detectable.h: an OpLog plus Detectable<S>: begin / complete /
// recover).
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <exception>
#include <string>

#include "ferrite/combining/pb_queue.h"
#include "ferrite/detectable.h"
#include "ferrite/pmem/pool.h"
#include "ferrite/sync/thread_registry.h"

namespace {

constexpr int kThreads = 1;                          // this program's worker threads
constexpr std::size_t kPoolBytes = std::size_t{64} << 20;

using Queue = ferrite::combining::PBQueue<>;

int usage(const char* argv0) {
  std::fprintf(stderr,
               "usage: %s POOL produce N\n"
               "       %s POOL consume [--crash-at K] [--no-recover]\n"
               "A durable job queue in the pool file POOL (created if missing) that survives kills.\n",
               argv0, argv0);
  return 2;
}

bool parse_count(const char* s, long* out) {
  char* end = nullptr;
  const long v = std::strtol(s, &end, 10);
  if (end == s || *end != '\0' || v < 1) return false;
  *out = v;
  return true;
}

int run(int argc, char** argv) {
  if (argc >= 2 && (std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0)) {
    usage(argv[0]);
    return 0;
  }
  if (argc < 3) return usage(argv[0]);
  const std::string path = argv[1];
  const std::string mode = argv[2];
  long n = 0, crash_at = 0;
  bool recover = true;
  if (mode == "produce") {
    if (argc != 4 || !parse_count(argv[3], &n)) return usage(argv[0]);
  } else if (mode == "consume") {
    for (int i = 3; i < argc; ++i) {
      if (std::strcmp(argv[i], "--crash-at") == 0 && i + 1 < argc && parse_count(argv[i + 1], &crash_at)) ++i;
      else if (std::strcmp(argv[i], "--no-recover") == 0) recover = false;
      else return usage(argv[0]);
    }
  } else {
    return usage(argv[0]);
  }

  // 1. The pool: created, or opened and recovered (every structure in it).
  auto pool = ferrite::pmem::Pool::open_or_create(path, kPoolBytes);
  // 2. The structures, by name: created the first time, attached afterwards.
  auto queue = pool->open_or_create<Queue>("jobs", kThreads);
  // 3. Exactly-once operations on the queue for this program's threads.
  auto log = ferrite::OpLog::open_or_create(*pool, "jobs.oplog", kThreads);
  ferrite::Detectable<Queue> jobs(*queue, log);
  ferrite::sync::ThreadRegistry threads(kThreads);
  ferrite::Thread me = threads.acquire();

  // 4. What was this thread doing when the previous run died?
  if (auto r = recover ? jobs.recover(me) : std::nullopt) {
    if (r->op.kind == ferrite::op::kDequeue && r->response.has_value)
      std::printf("job %lld (recovered)\n", static_cast<long long>(r->response.value));
  }
  std::fflush(stdout);

  if (mode == "produce") {
    for (long v = 1; v <= n; ++v) jobs.run(me, {ferrite::op::kEnqueue, v});
    std::printf("produced %ld jobs\n", n);
    return 0;
  }
  for (long k = 1;; ++k) {
    jobs.begin(me, {ferrite::op::kDequeue});
    const ferrite::op::Response job = jobs.complete(me);
    if (k == crash_at) std::raise(SIGKILL);  // the job is taken; its response dies with us
    if (!job.has_value) break;               // empty
    std::printf("job %lld\n", static_cast<long long>(job.value));
    std::fflush(stdout);
  }
  std::printf("queue empty\n");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    // A corrupt, truncated or foreign pool file ends here with its reason.
    std::fprintf(stderr, "durable-queue: %s\n", e.what());
    return 1;
  }
}
