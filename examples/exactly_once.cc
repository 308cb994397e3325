// examples/exactly_once.cc — every job done exactly once, however often the
// worker process is killed.
//
// A pool file holds three things (all found again by name after a restart):
//   "jobs"    a detectable PBqueue (ferrite/combining/pb_queue.h) of job ids;
//   "oplog"   an OpLog (ferrite/combining/detectable.h): per thread, the
//             operation it began last, persisted *before* it starts;
//   "ledger"  one slot per job: the job's result and the tag of the dequeue
//             that delivered it.
// The worker's threads loop: log.begin(dequeue) → q->dequeue(tid, seq) →
// do the job → claim its ledger slot. Kill the process anywhere (SIGKILL) and
// run it again: for each thread, the operation pending at the kill is in the
// OpLog, and q->recover(tid, seq, ...) completes it if it had not taken effect
// and returns its answer either way (the PBcomb paper's detectable recovery,
// Alg. 7) — so a job dequeued just before the kill is neither lost nor done
// twice. `verify` proves it from the pool alone.
//
//   exactly-once init   POOL [--jobs N] [--threads T]
//   exactly-once run    POOL [--job-us US] [--skip-recovery] [--ready-fd FD]
//   exactly-once verify POOL [--json]
//
// `ferrite demo` (step 1) drives this program: init, then many runs killed at
// random moments, a last run to the end, verify. Try it by hand:
//
//   exactly-once init /dev/shm/jobs.pool --jobs 4000
//   exactly-once run /dev/shm/jobs.pool & sleep 0.05; kill -9 $!
//   exactly-once run /dev/shm/jobs.pool      # recovers, then finishes
//   exactly-once verify /dev/shm/jobs.pool   # exit 0: each job exactly once
//
// With --skip-recovery the worker ignores the pending operations: the job a
// killed thread had dequeued is lost, and verify says so (exit 1).
//
// Exit codes: 0 success, 1 verify found a violation or an error occurred,
// 2 usage error.
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <functional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "ferrite/combining/detectable.h"
#include "ferrite/combining/pb_queue.h"
#include "ferrite/persist/persist.h"
#include "ferrite/pmem/pool.h"
#include "ferrite/pmem/root_registry.h"

namespace {

namespace fc = ferrite::combining;
namespace persist = ferrite::persist;
namespace pmem = ferrite::pmem;

using Queue = fc::PBQueue<>;

// ------------------------------------------------------------ the ledger

// One slot per job. A slot is claimed by writing the job's result, then
// (ordered by a pfence) the tag of the dequeue that delivered the job:
// (tid + 1) << 48 | seq. The tag is one 8-byte word, so a crash leaves a slot
// either unclaimed or claimed with a durable result. Claiming is idempotent
// for the same tag: after a restart, recovery may hand a thread a job it had
// already recorded, and the thread finds its own tag. A slot reached by a
// *different* tag means the queue delivered the job twice.
struct Ledger {
  static constexpr std::uint32_t kTypeTag = 0x444d4c47;  // "DMLG"
  static constexpr std::uint32_t kTypeVersion = 1;
  static constexpr const char* kTypeName = "demo::Ledger";
  static constexpr std::uint64_t kMaxJobs = 8192;

  struct Slot {
    std::uint64_t tag;
    std::int64_t result;
  };
  std::uint64_t jobs;
  std::uint64_t threads;
  alignas(64) std::uint64_t runs = 0;        // worker runs that opened the pool
  std::uint64_t rescued = 0;                 // pending dequeues completed by recovery
  std::uint64_t answered_again = 0;          // pending dequeues whose job was already recorded
  alignas(64) std::uint64_t duplicates = 0;  // deliveries of an already-claimed job (must stay 0)
  alignas(64) Slot slots[kMaxJobs];

  Ledger(std::uint64_t n, std::uint64_t t) : jobs(n), threads(t) {
    for (auto& s : slots) s = {0, 0};
  }
};

// Pool::open recovers the pool's heap from the recover hooks of its roots'
// types; a root of a type without a hook keeps every block allocated (a
// leak, never a loss). The ledger holds no heap block: its hook marks none.
[[maybe_unused]] const bool kLedgerRegistered =
    pmem::register_root_type<Ledger>([](pmem::Pool&, Ledger*, const std::function<void(void*)>&) {});

// The "answer" of job j (splitmix64), so verify can check every result.
std::int64_t job_result(std::uint64_t j) {
  std::uint64_t z = j + 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return static_cast<std::int64_t>((z ^ (z >> 31)) >> 1);
}

void persist_counter_add(std::uint64_t* c) {
  std::atomic_ref<std::uint64_t>(*c).fetch_add(1);
  persist::pwb(c);
  persist::psync();
}

// Records job `job` delivered by the dequeue (tid, seq). Returns true if this
// call wrote the slot (false: it was already ours, or a duplicate delivery).
bool claim(Ledger* L, int tid, std::uint64_t seq, std::int64_t job) {
  if (job < 0 || static_cast<std::uint64_t>(job) >= L->jobs) {
    persist_counter_add(&L->duplicates);  // garbage delivered
    return false;
  }
  const std::uint64_t tag = (static_cast<std::uint64_t>(tid) + 1) << 48 | seq;
  Ledger::Slot& s = L->slots[job];
  std::atomic_ref<std::uint64_t> stag(s.tag);
  const std::uint64_t cur = stag.load(std::memory_order_acquire);
  if (cur == tag) return false;  // recorded before the crash: nothing to redo
  if (cur != 0) {
    persist_counter_add(&L->duplicates);
    return false;
  }
  s.result = job_result(static_cast<std::uint64_t>(job));
  persist::pwb(&s.result);
  // PERSIST: the result is durable-ordered before the tag that claims it.
  persist::pfence();
  stag.store(tag, std::memory_order_release);
  persist::pwb(&s.tag);
  // PERSIST: the claim is durable before the thread begins its next
  // operation (the next OpLog::begin would hide this one from recovery).
  persist::psync();
  return true;
}

void busy_work_us(int us) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(us);
  while (std::chrono::steady_clock::now() < until) asm volatile("");
}

// ------------------------------------------------------------ commands

int cmd_init(const std::string& path, long jobs, long threads) {
  if (jobs < 1 || static_cast<std::uint64_t>(jobs) > Ledger::kMaxJobs) {
    std::fprintf(stderr, "exactly-once: --jobs must be in [1, %llu]\n",
                 static_cast<unsigned long long>(Ledger::kMaxJobs));
    return 2;
  }
  if (threads < 1 || threads > fc::OpLogRoot::kMaxThreads) {
    std::fprintf(stderr, "exactly-once: --threads must be in [1, %d]\n", fc::OpLogRoot::kMaxThreads);
    return 2;
  }
  const int t = static_cast<int>(threads);
  auto pool = pmem::Pool::create(path, std::size_t{64} << 20);
  auto q = Queue::create(*pool, "jobs", t);
  fc::OpLog::create(*pool, "oplog", t);
  pool->create_root<Ledger>("ledger", static_cast<std::uint64_t>(jobs), static_cast<std::uint64_t>(t));
  for (long j = 0; j < jobs; ++j) q->enqueue(0, j);
  std::printf("%s: %ld jobs queued for %d worker threads\n", path.c_str(), jobs, t);
  return 0;
}

// The worker: re-attach, recover each thread's pending dequeue, then consume
// jobs until the queue is empty.
int cmd_run(const std::string& path, int job_us, bool skip_recovery, int ready_fd) {
  auto pool = pmem::Pool::open(path);  // validates the file and recovers the heap
  auto* L = pool->root<Ledger>("ledger");
  const int threads = static_cast<int>(L->threads);
  auto q = Queue::attach(*pool, "jobs", threads);
  auto log = fc::OpLog::attach(*pool, "oplog", threads);
  ++L->runs;
  persist::persist_range(&L->runs, sizeof L->runs);
  if (ready_fd >= 0) {  // tell whoever started us that the pool is open
    const char b = 'r';
    (void)!::write(ready_fd, &b, 1);
    ::close(ready_fd);
  }
  // CRASH: detectable recovery of the operation each thread had begun.
  for (int tid = 0; tid < threads && !skip_recovery; ++tid) {
    const auto rec = log.pending(tid);
    if (!rec || rec->op != static_cast<std::uint32_t>(fc::OpCode::kDequeue)) continue;
    const std::uint64_t w = q->recover(tid, rec->seq, fc::OpCode::kDequeue, 0);
    if (!fc::is_value_word(w)) continue;  // that dequeue found the queue empty
    if (claim(L, tid, rec->seq, fc::word_value(w)))
      persist_counter_add(&L->rescued);  // dequeued before the kill, not yet recorded
    else
      persist_counter_add(&L->answered_again);  // recorded already: answered again, not redone
  }
  std::vector<std::thread> ts;
  for (int tid = 0; tid < threads; ++tid)
    ts.emplace_back([&, tid] {
      for (;;) {
        const std::uint64_t seq = log.begin(tid, fc::OpCode::kDequeue, 0);
        const auto job = q->dequeue(tid, seq);
        if (!job) break;
        busy_work_us(job_us);
        claim(L, tid, seq, *job);
      }
    });
  for (auto& t : ts) t.join();
  return 0;
}

// The proof, from the pool alone: every job recorded once with its result,
// no dequeue answering two jobs, nothing left in the queue.
int cmd_verify(const std::string& path, bool json) {
  auto pool = pmem::Pool::open(path);
  auto* L = pool->root<Ledger>("ledger");
  auto q = Queue::attach(*pool, "jobs", static_cast<int>(L->threads));
  std::uint64_t missing = 0, wrong = 0, shared_tags = 0;
  std::set<std::uint64_t> tags;
  for (std::uint64_t j = 0; j < L->jobs; ++j) {
    const auto& s = L->slots[j];
    if (s.tag == 0) {
      ++missing;
      continue;
    }
    if (s.result != job_result(j)) ++wrong;
    if (!tags.insert(s.tag).second) ++shared_tags;  // one dequeue delivered two jobs
  }
  const std::size_t left = q->values().size();
  const bool ok = missing == 0 && wrong == 0 && L->duplicates == 0 && shared_tags == 0 && left == 0;
  const auto u = [](std::uint64_t v) { return static_cast<unsigned long long>(v); };
  if (json) {
    std::printf("{\"jobs\": %llu, \"threads\": %llu, \"recorded\": %llu, \"missing\": %llu, \"wrong_result\": %llu, "
                "\"duplicates\": %llu, \"shared_tags\": %llu, \"left_in_queue\": %zu, \"runs\": %llu, "
                "\"rescued\": %llu, \"answered_again\": %llu, \"exactly_once\": %s}\n",
                u(L->jobs), u(L->threads), u(L->jobs - missing), u(missing), u(wrong), u(L->duplicates),
                u(shared_tags), left, u(L->runs), u(L->rescued), u(L->answered_again), ok ? "true" : "false");
  } else {
    std::printf("jobs recorded: %llu/%llu, missing: %llu, wrong result: %llu, delivered twice: %llu,\n"
                "one dequeue answering two jobs: %llu, left in the queue: %zu\n"
                "worker runs: %llu; pending dequeues at a kill: %llu completed by recovery, %llu answered again\n"
                "%s\n",
                u(L->jobs - missing), u(L->jobs), u(missing), u(wrong), u(L->duplicates), u(shared_tags), left,
                u(L->runs), u(L->rescued), u(L->answered_again),
                ok ? "exactly once: yes" : "exactly once: NO");
  }
  return ok ? 0 : 1;
}

// ------------------------------------------------------------ main

const char* kUsage =
    "exactly-once: every job done exactly once, however often the worker is killed\n"
    "\n"
    "usage:\n"
    "  exactly-once init   POOL [--jobs N] [--threads T]\n"
    "      create POOL: a detectable PBqueue of N jobs (default 4000, at most 8192), a\n"
    "      per-thread OpLog and a ledger, for T worker threads (default 2)\n"
    "  exactly-once run    POOL [--job-us US] [--skip-recovery] [--ready-fd FD]\n"
    "      recover the operations pending at the last kill, then do jobs until the\n"
    "      queue is empty; US: microseconds of work per job (default 100);\n"
    "      --skip-recovery: deliberately broken, ignore the pending operations;\n"
    "      --ready-fd: write one byte to FD once the pool is open\n"
    "  exactly-once verify POOL [--json]\n"
    "      exit 0 if every job was done exactly once with the right result, else 1\n"
    "\n"
    "Kill `run` at any moment (kill -9) and start it again: no job is lost or done twice.\n";

int usage_error(const std::string& msg) {
  std::fprintf(stderr, "exactly-once: %s\n(run `exactly-once --help` for usage)\n", msg.c_str());
  return 2;
}

bool parse_long(const char* s, long* out) {
  char* end = nullptr;
  errno = 0;
  const long v = std::strtol(s, &end, 10);
  if (errno != 0 || end == s || *end != '\0') return false;
  *out = v;
  return true;
}

int real_main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  for (const auto& a : args)
    if (a == "--help" || a == "-h") {
      std::fputs(kUsage, stdout);
      return 0;
    }
  if (args.size() < 2) return usage_error(args.empty() ? "missing command" : "missing POOL");
  const std::string cmd = args[0], path = args[1];
  if (cmd != "init" && cmd != "run" && cmd != "verify") return usage_error("unknown command '" + cmd + "'");
  long jobs = 4000, threads = 2, job_us = 100, ready_fd = -1;
  bool skip_recovery = false, json = false;
  for (std::size_t i = 2; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&](long* out, const char* allowed_in) {
      if (cmd != allowed_in) return usage_error(a + " is not an option of '" + cmd + "'");
      if (i + 1 >= args.size()) return usage_error(a + " needs a value");
      if (!parse_long(args[++i].c_str(), out)) return usage_error(a + ": not a number: '" + args[i] + "'");
      return 0;
    };
    int rc = 0;
    if (a == "--jobs") rc = value(&jobs, "init");
    else if (a == "--threads") rc = value(&threads, "init");
    else if (a == "--job-us") rc = value(&job_us, "run");
    else if (a == "--ready-fd") rc = value(&ready_fd, "run");
    else if (a == "--skip-recovery" && cmd == "run") skip_recovery = true;
    else if (a == "--json" && cmd == "verify") json = true;
    else rc = usage_error("unknown option '" + a + "' for '" + cmd + "'");
    if (rc != 0) return rc;
  }
  if (job_us < 0 || job_us > 1000000) return usage_error("--job-us must be in [0, 1000000]");
  if (cmd == "init") return cmd_init(path, jobs, threads);
  if (cmd == "run") return cmd_run(path, static_cast<int>(job_us), skip_recovery, static_cast<int>(ready_fd));
  return cmd_verify(path, json);
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return real_main(argc, argv);
  } catch (const std::exception& e) {  // e.g. pmem::PoolError: no such pool, not a pool, locked
    std::fprintf(stderr, "exactly-once: error: %s\n", e.what());
    return 1;
  }
}
