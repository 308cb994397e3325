// The restarted machine: a farm worker recovers and checks crash images
// (farm.h). It was forked from the zygote before the crashed run created its
// pool, so recovery here sees nothing of that run's DRAM: a pointer from the
// pool into the crashed run's heap, or a volatile index recovery forgets to
// rebuild, is caught rather than silently read.
//
// Per job (one crash point, some of its images):
//   1. scratch := the media image (a private memfd of the worker; only the
//      pages that differ from the previous job's are copied, MediaMap);
//   2. per image: its lines are written into scratch; the pool is opened from
//      scratch (header validation and pool-level recovery; the simulator in
//      child mode maps it MAP_PRIVATE, so recovery's writes never reach
//      scratch); a fresh Subject recovers, is observed, completes the pending
//      operations (detectable), is observed again, and runs
//      CampaignConfig::post_ops more operations whose responses and final
//      state are checked against the sequential specification; the lines are
//      put back;
//   3. the outcome is checked (durable linearizability, detectability or
//      buffered durable linearizability); equal outcomes share a check.
// Crashes during recovery (CampaignConfig::recovery_crash_depth > 0): a
// child of the worker opens the image under the live simulator and runs the
// same recovery until its j-th persistence verb, where it captures the crash
// state and its images; each such image is recovered again (and, at depth 2,
// crashed again), and every final outcome is checked against the same
// history. Recovery that is not idempotent fails here.
// A second crash after recovery (CampaignConfig::post_crash_every > 0): a
// child opens the image under the live simulator, recovers, completes the
// pending ops and runs the same post-recovery ops as the plain restart
// (syncs included), capturing crash states at verbs spread over them and
// after the last; each such image is recovered again, and its state must be
// the first recovered state with a prefix of the post ops applied
// (check_second), from which more post ops are checked. What recovery
// writes for the recovered run's sake (nbMontage's resets) is tested here.
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

#include "farm.h"
#include "pages.h"
#include "ferrite/crash/checker.h"
#include "ferrite/crash/model.h"
#include "ferrite/crash/sim.h"
#include "ferrite/crash/sites.h"
#include "ferrite/pmem/pool.h"
#include "wire.h"

namespace ferrite::crash::internal {

namespace {

constexpr std::size_t kL = persist::kCacheLine;

// A memfd the worker owns, mapped shared at an address of the kernel's
// choosing (never the pool base).
struct Scratch {
  int fd = -1;
  std::uint8_t* map = nullptr;
  std::size_t size = 0;
  Scratch() = default;
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  ~Scratch() { reset(); }
  void reset() {
    if (map != nullptr) ::munmap(map, size);
    if (fd >= 0) ::close(fd);
    map = nullptr;
    fd = -1;
    size = 0;
  }
  void resize(std::size_t n) {
    if (n == size && fd >= 0) return;
    reset();
    fd = ::memfd_create("ferrite-crash-image", MFD_CLOEXEC);
    if (fd < 0 || ::ftruncate(fd, static_cast<off_t>(n)) != 0) throw std::runtime_error("memfd for a crash image failed");
    void* p = ::mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) throw std::runtime_error("mmap of a crash image failed");
    map = static_cast<std::uint8_t*>(p);
    size = n;
  }
  // Loads `n` bytes of file `src` (one system call per chunk, copied in the
  // kernel's page cache).
  void load(int src, std::size_t n) {
    resize(n);
    std::size_t done = 0;
    while (done < n) {
      const ssize_t r = ::pread(src, map + done, n - done, static_cast<off_t>(done));
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) throw std::runtime_error("reading the media image failed");
      done += static_cast<std::size_t>(r);
    }
  }
  void load(const std::uint8_t* src, std::size_t n) {
    resize(n);
    std::memcpy(map, src, n);
  }
  // Makes the contents equal to `src` (n bytes), copying only the pages that
  // differ: consecutive jobs of one run differ in a few lines.
  void sync_from(const std::uint8_t* src, std::size_t n) {
    if (n != size || fd < 0) {
      load(src, n);
      return;
    }
    copy_changed_pages(map, src, n);
  }
  std::string path() const { return "/proc/self/fd/" + std::to_string(fd); }
};

// Where a child that crashes recovery writes its report: one shared
// anonymous mapping per worker, reused by every probe. A pipe read into the
// worker's heap cost a copy-on-write fault per page (fork write-protects the
// worker's private pages, and the reports are large); shared pages are never
// write-protected by fork, and the child writes its records in place.
// Layout: the committed length (u64) in the first line, records after it.
class ReportArea : public wire::Encoder<ReportArea> {
 public:
  static constexpr std::size_t kCap = std::size_t{1} << 30;  // reserved, not committed
  ReportArea() {
    void* p = ::mmap(nullptr, kCap, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) throw std::runtime_error("mmap of the probe report area failed");
    base_ = static_cast<std::uint8_t*>(p);
  }
  ~ReportArea() { ::munmap(base_, kCap); }
  ReportArea(const ReportArea&) = delete;
  ReportArea& operator=(const ReportArea&) = delete;

  // Parent, before the fork: no report yet.
  void clear() { committed(0); }
  // Parent, after the child ended: the records it committed.
  std::string_view report() const {
    std::uint64_t n = 0;
    std::memcpy(&n, base_, 8);
    return {reinterpret_cast<const char*>(base_) + kHead, std::min<std::uint64_t>(n, kCap - kHead)};
  }

  // Child: appends (wire::Encoder's u64/i64/str over raw); commit()
  // publishes what was appended (a record is either wholly committed or
  // absent when the child dies in between).
  void raw(const void* p, std::size_t n) {
    if (n > kCap - kHead - pos_) ::_exit(7);  // cannot happen below 1 GiB of report
    if (n > 0) std::memcpy(base_ + kHead + pos_, p, n);
    pos_ += n;
  }
  // A u64 written later (a count known only after its items): reserve()
  // appends a placeholder and returns its place, patch() fills it.
  std::size_t reserve() {
    const std::size_t at = pos_;
    u64(0);
    return at;
  }
  void patch(std::size_t at, std::uint64_t v) { std::memcpy(base_ + kHead + at, &v, 8); }
  void commit() { committed(pos_); }
  void start() { pos_ = 0; }

 private:
  static constexpr std::size_t kHead = 64;
  void committed(std::uint64_t n) { std::memcpy(base_, &n, 8); }
  std::uint8_t* base_ = nullptr;
  std::size_t pos_ = 0;
};

// The runner's media image, mapped read-only and kept while jobs keep
// naming the same file (one crashed run's jobs do; the runner waits for
// each job's verdicts, so the file does not change during a job). Reading
// it into the scratch with pread cost a page-cache lookup and a copy per
// page per job (a third of a 4 MiB pool's campaign); the mapping's pages
// stay mapped from job to job.
class MediaMap {
 public:
  ~MediaMap() { reset(); }
  // The file's first n bytes, or nullptr (then read it instead).
  const std::uint8_t* map(int fd, std::size_t n) {
    struct stat st {};
    if (::fstat(fd, &st) != 0 || static_cast<std::uint64_t>(st.st_size) < n || n == 0) return nullptr;
    if (p_ != nullptr && st.st_dev == dev_ && st.st_ino == ino_ && n == size_) return p_;
    reset();
    void* m = ::mmap(nullptr, n, PROT_READ, MAP_SHARED, fd, 0);
    if (m == MAP_FAILED) return nullptr;
    p_ = static_cast<const std::uint8_t*>(m);
    dev_ = st.st_dev;
    ino_ = st.st_ino;
    size_ = n;
    return p_;
  }

 private:
  void reset() {
    if (p_ != nullptr) ::munmap(const_cast<std::uint8_t*>(p_), size_);
    p_ = nullptr;
  }
  const std::uint8_t* p_ = nullptr;
  dev_t dev_ = 0;
  ino_t ino_ = 0;
  std::size_t size_ = 0;
};

struct Outcome {
  bool recovered = false;  // recovery (and the post-recovery ops) ran to the end
  bool no_pool = false;    // pool-create phase: the image does not open as a pool
  bool recreated = false;  // structure-create phase: the root was missing and was created afresh
  std::string error;       // why recovery failed (a violation)
  State s0, s1;
  std::vector<Response> answers;
  std::string post_error;  // post-recovery ops disagreed with the specification
  std::string path;        // nested crashes: where recovery was crashed
  std::uint64_t verbs = 0; // recovery's persistence verbs (it opened a pool)
  // The post-recovery ops as run (syncs included when they are applied),
  // by thread, from state post_from; their persistence verbs.
  std::vector<Op> post;
  std::vector<int> post_tids;
  State post_from;
  std::uint64_t post_verbs = 0;
};

// Where the post-recovery ops are (read by the crash hook of a second
// crash): ops [0, done) completed, op `done` in progress (when < n), and
// every op before `synced` completed before a completed sync.
struct PostTrack {
  std::size_t done = 0;
  std::size_t synced = 0;
};

// How a restart runs its post-recovery ops: the workload's rng and each
// thread's next sequence number.
struct PostPlan {
  std::uint64_t rng = 0;
  std::vector<std::uint64_t> seq;
};

struct JobCtx {
  std::uint64_t k = 0;
  Phase phase = Phase::kRun;
  int nested_depth = 0;
  bool post_crash = false;  // crash the post-recovery ops of these images too
  std::vector<HistoryOp> ops;
  State initial;
  std::vector<std::size_t> pending;   // indices of pending ops
  std::vector<std::uint64_t> next_seq;  // per thread, for post-recovery ops
};

class Machine {
 public:
  Machine(const SubjectInfo& info, const CampaignConfig& cfg) : info_(info), cfg_(cfg) {
    auto probe = info.make();
    probe->set_data_sizes(cfg.sizes);
    spec_ = probe->spec();
    detectable_ = probe->detectable();
    buffered_ = probe->buffered();
    if (const RegionSpec* r = probe->regions()) regions_ = *r;
  }

  [[noreturn]] void serve(int sock) {
    sock_ = sock;
    for (;;) {
      std::string msg;
      int media = -1;
      if (!wire::recv_msg(sock, msg, &media)) ::_exit(0);  // the runner closed us: done
      wire::Reader r(msg);
      JobCtx j;
      j.k = r.u64();
      j.phase = static_cast<Phase>(r.u64());
      j.nested_depth = static_cast<int>(r.u64());
      j.post_crash = r.u64() != 0;
      const auto media_size = r.u64();
      j.ops = wire::get_history(r);
      j.initial = r.vec();
      const auto nlines = r.u64();
      std::vector<std::uint64_t> offsets(r.ok() && nlines < (1u << 26) ? nlines : 0);
      if (const char* p = r.raw(offsets.size() * 8); p != nullptr && !offsets.empty())
        std::memcpy(offsets.data(), p, offsets.size() * 8);
      const auto nimages = r.u64();
      if (!r.ok() || media < 0) ::_exit(5);
      prepare(j);
      if (const std::uint8_t* m = media_map_.map(media, media_size))
        scratch_.sync_from(m, media_size);
      else
        scratch_.load(media, media_size);
      ::close(media);
      cache_.clear();
      std::vector<Line> saved(offsets.size());
      for (std::uint64_t i = 0; i < nimages; ++i) {
        const int index = static_cast<int>(r.i64());
        const char* lines = r.raw(offsets.size() * kL);
        if (!r.ok()) ::_exit(5);
        for (std::size_t l = 0; l < offsets.size(); ++l) {
          std::memcpy(saved[l].data(), scratch_.map + offsets[l], kL);
          std::memcpy(scratch_.map + offsets[l], lines + l * kL, kL);
        }
        std::uint64_t nested = 0, second = 0;
        // CRASH: the alarm covers the whole image — recovery, observation,
        // post-recovery ops, the check and the answer — so a recovery that
        // corrupted this process (a heap left looping) still ends it.
        wire::arm_alarm(cfg_.recovery_timeout_s, cfg_.recovery_cpu_s);
        const CheckResult res = image(j, scratch_, index, &nested, &second);
        for (std::size_t l = 0; l < offsets.size(); ++l) std::memcpy(scratch_.map + offsets[l], saved[l].data(), kL);
        wire::Writer w;
        w.u64(1);
        w.i64(index);
        wire::put(w, res);
        w.u64(nested);
        w.u64(second);
        if (!wire::send_msg(sock, w.data())) ::_exit(0);
        wire::arm_alarm(0);
      }
      wire::Writer w;
      w.u64(2);
      if (!wire::send_msg(sock, w.data())) ::_exit(0);
    }
  }

 private:
  void prepare(JobCtx& j) const {
    j.next_seq.assign(static_cast<std::size_t>(cfg_.threads), 1);
    for (std::size_t i = 0; i < j.ops.size(); ++i) {
      const auto& h = j.ops[i];
      if (!h.completed()) j.pending.push_back(i);
      auto& n = j.next_seq[static_cast<std::size_t>(h.tid)];
      n = std::max(n, h.seq + 1);
    }
  }

  pmem::PoolOptions options() const {
    pmem::PoolOptions o;
    o.backend.kind = persist::BackendConfig::Kind::kSim;
    o.arenas = std::max(cfg_.instance_size(), 1) + 1;
    o.recover = cfg_.recover_pool;
    return o;
  }

  // Recovery proper, on the pool file at `path`: returns false when the
  // image legitimately holds no pool (pool-create phase).
  bool recover(const JobCtx& j, const std::string& path, Outcome& o, std::unique_ptr<pmem::Pool>& pool,
               std::unique_ptr<Subject>& subject) const {
    sites::set_phase(sites::Phase::kRecover);
    try {
      pool = pmem::Pool::open(path, options());
    } catch (const pmem::PoolError& e) {
      if (j.phase == Phase::kCreatePool) return false;
      throw std::runtime_error(std::string("the image does not open as a pool: ") + e.what());
    }
    subject = info_.make();
    subject->set_data_sizes(cfg_.sizes);
    if (j.phase != Phase::kRun && !subject->has_structure(*pool)) {
      subject->create(*pool, cfg_.instance_size());
      o.recreated = true;
    } else {
      subject->recover(*pool, cfg_.instance_size());
    }
    o.s0 = subject->observe();
    if (detectable_ && !buffered_) {
      for (auto i : j.pending) o.answers.push_back(subject->recover_op(j.ops[i].tid, j.ops[i].seq, j.ops[i].op));
      o.s1 = subject->observe();
    }
    return true;
  }

  // The plan of the post-recovery ops after the first recovery of image
  // `index` (after a second crash: second_plan).
  PostPlan first_plan(const JobCtx& j, int index) const {
    return {wire::mix(cfg_.seed ^ wire::mix(j.k + 0x5bd1e995) ^ (static_cast<std::uint64_t>(index) << 40)), j.next_seq};
  }

  // Syncs are applied after recovery only when a second crash may follow
  // (they make post ops durable; otherwise they would only cost verbs).
  bool post_syncs() const { return cfg_.post_crash_every > 0; }

  // After recovery: more operations, checked one by one against the
  // specification from the recovered state (corruption that only shows
  // later — a free list, a tail pointer — fails here). `track` (a child
  // that crashes them) follows the ops as they complete.
  void post_ops(const PostPlan& plan, Subject& subject, Outcome& o, PostTrack* track = nullptr) const {
    if (cfg_.post_ops == 0) return;
    sites::set_phase(sites::Phase::kPost);
    State st = detectable_ && !buffered_ ? o.s1 : o.s0;
    o.post_from = st;
    std::vector<std::uint64_t> seq = plan.seq;
    std::uint64_t rng = plan.rng;
    for (std::size_t i = 0; i < cfg_.post_ops; ++i) {
      const int tid = static_cast<int>(i % static_cast<std::size_t>(cfg_.threads));
      const Op op = subject.next_op(tid, rng);
      if (op.kind == kSync && !post_syncs()) continue;
      o.post.push_back(op);
      o.post_tids.push_back(tid);
      if (track != nullptr) track->done = o.post.size() - 1;
      const State before = st;
      const Response want = regions_ ? regions_->apply(st, op) : spec_apply(spec_, st, op);
      const Response got = subject.apply(tid, seq[static_cast<std::size_t>(tid)]++, op);
      if (track != nullptr && op.kind == kSync) track->synced = o.post.size();
      if (!(got == want)) {
        o.post_error = "post-recovery op " + std::to_string(i + 1) + " of " + std::to_string(cfg_.post_ops) + ", " +
                       format_op(op) + " by thread " + std::to_string(tid) + ", answered " + format_response(got) +
                       "; the specification says " + format_response(want) + " (state before: " +
                       format_state(before) + ")";
        return;
      }
    }
    if (track != nullptr) track->done = o.post.size();
    const State fin = subject.observe();
    if (fin != st)
      o.post_error = "after " + std::to_string(cfg_.post_ops) + " post-recovery ops the state is " + format_state(fin) +
                     ", the specification says " + format_state(st);
  }

  // Every image maps the pool (and Mirror's replica) afresh and unmaps it
  // after recovery. When the last mapping of a 1 GiB range goes, the kernel
  // frees its page-table pages, and the next image allocates and zeroes them
  // again: a fifth of a campaign's CPU time. An inaccessible page at the top
  // of the pool's 1 GiB range (and of its replica's) keeps those tables for
  // the worker's lifetime. It touches no address a pool of this size uses,
  // and a process forked for a nested crash inherits it harmlessly.
  static void keep_page_tables(const pmem::Pool& pool) {
#if defined(__SANITIZE_THREAD__)
    (void)pool;  // TSan's application ranges are narrower (and campaigns do not run under it)
#else
    constexpr std::uintptr_t kGiB = std::uintptr_t{1} << 30, kPage = 4096;
    static std::uintptr_t anchored = 0;  // the base anchored last (one pool at a time)
    const auto base = reinterpret_cast<std::uintptr_t>(pool.base());
    if (base == anchored || pool.size() + kPage > kGiB || base % kGiB != 0) return;
    anchored = base;
    for (const std::uintptr_t at : {base + kGiB - kPage, base + pmem::kReplicaOffset + kGiB - kPage})
      (void)::mmap(reinterpret_cast<void*>(at), kPage, PROT_NONE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE, -1, 0);  // best effort
#endif
  }

  // One restarted machine on the image in `img` (in this process).
  Outcome restart(const JobCtx& j, const Scratch& img, int index) const { return restart(j, img, first_plan(j, index)); }
  Outcome restart(const JobCtx& j, const Scratch& img, const PostPlan& plan) const {
    Outcome o;
    sim::set_child_backing_fd(img.fd);
    sim::sync_child_view(img.map, img.size);
    try {
      std::unique_ptr<pmem::Pool> pool;
      std::unique_ptr<Subject> subject;
      if (!recover(j, img.path(), o, pool, subject)) {
        o.no_pool = true;
      } else {
        o.verbs = sim::child_verbs();
        post_ops(plan, *subject, o);
        o.post_verbs = sim::child_verbs() - o.verbs;
        keep_page_tables(*pool);
        subject.reset();
        pool.reset();
      }
      o.recovered = true;
    } catch (const std::exception& e) {
      o.error = std::string("recovery threw: ") + e.what();
    } catch (...) {
      o.error = "recovery threw a non-standard exception";
    }
    return o;
  }

  CheckResult judge(const JobCtx& j, const Outcome& o) {
    CheckResult res;
    if (!o.recovered) {
      res.verdict = CheckResult::Verdict::kViolation;
      res.property = "recovery";
      res.engine = "-";
      res.reason = o.error;
      return res;
    }
    if (o.no_pool) {
      res.engine = "no-pool";  // creation never completed: nothing to recover
      return res;
    }
    std::uint64_t key = wire::mix(o.s0.size());
    for (auto v : o.s0) key = wire::mix(key ^ static_cast<std::uint64_t>(v));
    for (auto& a : o.answers) key = wire::mix(key ^ (a.has_value ? 0x55 : 0xaa) ^ static_cast<std::uint64_t>(a.value) * 3);
    key = wire::mix(key ^ o.s1.size());
    for (auto v : o.s1) key = wire::mix(key ^ static_cast<std::uint64_t>(v));
    if (auto it = cache_.find(key); it != cache_.end()) {
      res = it->second;
    } else {
      CheckInput in;
      in.spec = spec_;
      in.initial = j.initial;
      in.ops = j.ops;
      in.observed = o.s0;
      try {
        if (regions_) {
          res = check_failure_atomicity(in, *regions_, cfg_.check);
        } else if (buffered_) {
          res = check_buffered_durable_linearizability(in, cfg_.check);
        } else {
          res = check_durable_linearizability(in, cfg_.check);
          if (res.ok() && detectable_) {
            for (std::size_t i = 0; i < j.pending.size() && i < o.answers.size(); ++i)
              in.recovered.push_back({j.pending[i], o.answers[i]});
            in.observed_after = o.s1;
            res = check_detectability(in, cfg_.check);
          }
        }
      } catch (const std::exception& e) {
        res.verdict = CheckResult::Verdict::kViolation;
        res.property = "checker";
        res.engine = "-";
        res.reason = std::string("bad history or state: ") + e.what();
      }
      cache_.emplace(key, res);
    }
    if (res.ok() && !o.post_error.empty()) {
      res.verdict = CheckResult::Verdict::kViolation;
      res.property = "post-recovery";
      res.engine = "spec";
      res.reason = o.post_error;
    }
    return res;
  }

  CheckResult image(const JobCtx& j, const Scratch& img, int index, std::uint64_t* nested, std::uint64_t* second) {
    const Outcome o = restart(j, img, index);
    if (j.ops.size() > 1000) alive();  // long histories take the checker a while
    CheckResult res = judge(j, o);
    if (!res.ok()) return res;
    if (j.post_crash && o.recovered && !o.no_pool) {
      CheckResult r = crash_post_ops(j, img, index, o, second);
      if (!r.ok()) return r;
    }
    if (j.nested_depth == 0) return res;
    std::vector<Outcome> deeper;
    crash_recovery(j, img, index, j.nested_depth, "", o.verbs, deeper);
    for (const auto& d : deeper) {
      ++*nested;
      CheckResult r = judge(j, d);
      if (r.ok()) continue;
      r.property = "recovery-idempotence/" + r.property;
      r.reason = "after " + d.path + ": " + r.reason;
      return r;
    }
    return res;
  }

  // ------------------------------------------------ crashes during recovery

  // One crash during recovery, captured by a probe: the crash state's lines
  // and its images, and the lines where the media then differed from the
  // image recovery started from.
  struct Capture {
    std::uint64_t at = 0;                 // the recovery verb crashed before
    std::vector<std::uint64_t> offsets;   // the crash state's lines
    std::vector<std::pair<int, std::vector<Line>>> images;
    std::vector<std::uint64_t> written;   // lines recovery had made durable
    std::vector<Line> media;              // their contents
    // A second crash during post-recovery ops (PostTrack at the crash):
    std::uint64_t done = 0, synced = 0;
  };

  struct Probe {
    bool ok = false;          // the child reported
    std::uint64_t verbs = 0;  // recovery ran to its end: its verb count
    std::string error;
    std::vector<Capture> captures;  // in verb order
  };

  struct HookCtx {
    const std::vector<std::uint64_t>* at;  // increasing
    std::size_t next;
    ReportArea* out;
    const std::uint8_t* image;  // the image recovery started from
    const CampaignConfig* cfg;
    std::uint64_t seed;
    // A second crash: points count from verb `base` (the first verb of the
    // post-recovery ops), and each record carries the ops' progress.
    std::uint64_t base = 0;
    const PostTrack* track = nullptr;
  };

  static void probe_hook(void* p, std::uint64_t k_abs, persist::Verb) {
    auto* c = static_cast<HookCtx*>(p);
    if (k_abs < c->base) return;
    const std::uint64_t k = k_abs - c->base;
    while (c->next < c->at->size() && (*c->at)[c->next] < k) ++c->next;
    if (c->next >= c->at->size() || (*c->at)[c->next] != k) return;
    // CRASH: a second crash, before recovery verb k. The simulator's lock is
    // held; capturing reads its state and changes nothing, so recovery goes
    // on exactly as if this point had not been captured, to the next one.
    // CRASH (second crash): the same, before verb k of the post-recovery
    // ops; op track->done is in progress (or, at the end, none).
    const CrashState cs = sim::capture_locked(k_abs);
    ImageOptions iopt;
    iopt.tearing = c->cfg->tearing;
    iopt.enumerate_max = 4;
    const int random = c->track != nullptr ? c->cfg->post_crash_images : c->cfg->recovery_crash_images;
    const ImageSet set = images_for(cs, random, c->seed ^ k, iopt);
    ReportArea& w = *c->out;
    w.u64(1);
    w.u64(k);
    if (c->track != nullptr) {
      w.u64(c->track->done);
      w.u64(c->track->synced);
    }
    w.u64(cs.lines.size());
    w.raw(cs.lines.data(), cs.lines.size() * 8);
    w.u64(set.images.size());
    for (const auto& img : set.images) {
      w.i64(img.index);
      for (const auto& l : img.lines) w.raw(l.data(), kL);
    }
    // The media as a difference from the image: recovery made few lines
    // durable, and a whole copy per point would cost a pool's worth of
    // fresh pages in this short-lived process.
    // One pass: the count's place is reserved and patched after the lines.
    const std::uint8_t* media = sim::media_data();
    const std::size_t n = sim::size();
    const std::size_t count_at = w.reserve();
    std::uint64_t diff = 0;
    for (std::size_t pg = 0; pg < n; pg += kCopyPage) {
      const std::size_t len = std::min(kCopyPage, n - pg);
      if (std::memcmp(media + pg, c->image + pg, len) == 0) continue;
      for (std::size_t off = pg; off < pg + len; off += kL)
        if (std::memcmp(media + off, c->image + off, kL) != 0) {
          w.u64(off);
          w.raw(media + off, kL);
          ++diff;
        }
    }
    w.patch(count_at, diff);
    w.commit();
    if (++c->next == c->at->size()) ::_exit(0);  // no later point: the rest of recovery is not needed
  }

  // Runs recovery on `img` under the live simulator in a child and captures
  // a crash just before each recovery verb in `at` (increasing; empty: none,
  // and recovery's verb count is reported). One process serves every point:
  // capturing does not disturb the run.
  // With `post` (a second crash): the child also completes the pending ops
  // and runs the post-recovery ops the plain restart ran (post->post, from
  // plan `plan`), and the points count from the first post-op verb; a point
  // equal to post->post_verbs is the end of the post ops.
  Probe probe(const JobCtx& j, const Scratch& img, const std::vector<std::uint64_t>& at, std::uint64_t seed,
              const Outcome* post = nullptr, const PostPlan* plan = nullptr) const {
    Probe pr;
    report_.clear();
    const pid_t worker = ::getpid();
    const pid_t pid = ::fork();
    if (pid < 0) {
      pr.error = "fork failed";
      return pr;
    }
    if (pid == 0) {
      // CRASH: the probe dies with its worker. It holds a copy of the
      // worker's socket to the runner (inherited), so a probe that outlived
      // a killed worker (until its own alarm) kept the runner from seeing
      // the worker's end of stream: the runner waited out its watchdog.
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (::getppid() != worker) ::_exit(0);  // the worker died before the prctl
      wire::arm_alarm(cfg_.recovery_timeout_s, cfg_.recovery_cpu_s);
      sim::leave_child();
      sim::set_child_backing_fd(-1);
      report_.start();
      PostTrack track;
      HookCtx ctx{&at, 0, &report_, img.map, &cfg_, seed};
      if (post == nullptr && !at.empty()) sim::set_crash_hook(&Machine::probe_hook, &ctx);
      ReportArea& w = report_;
      // CRASH: never close this pool, not even when recovery throws: the
      // simulator would write its working memory back into the image file
      // (the worker's scratch).
      std::unique_ptr<pmem::Pool> pool;
      std::unique_ptr<Subject> subject;
      struct Leak {
        std::unique_ptr<pmem::Pool>& p;
        std::unique_ptr<Subject>& s;
        ~Leak() {
          (void)p.release();
          (void)s.release();
        }
      } leak{pool, subject};
      try {
        Outcome o;
        const bool opened = recover(j, img.path(), o, pool, subject);
        if (opened && post != nullptr) {
          // The post-recovery ops, crashed. ORDER: the hook is installed
          // after recovery, so recovery's verbs are never crash points here.
          ctx.base = sim::verbs();
          ctx.track = &track;
          sim::set_crash_hook(&Machine::probe_hook, &ctx);
          post_ops(*plan, *subject, o, &track);
          if (!at.empty() && at.back() == post->post_verbs && sim::verbs() == ctx.base + post->post_verbs)
            sim::crash_now();  // the end of the post ops (exits when it was the last point)
          sim::set_crash_hook(nullptr, nullptr);
        }
        if (opened && post != nullptr && (o.post != post->post || o.post_tids != post->post_tids)) {
          w.u64(2);
          w.str("the post-recovery ops under the live simulator differ from the plain restart's (next_op is not "
                "deterministic)");
        } else if (opened) {
          w.u64(0);
          w.u64(sim::verbs());
        } else {
          w.u64(2);
          w.str("the image does not open as a pool");
        }
      } catch (const std::exception& e) {
        w.u64(2);
        w.str(std::string("recovery threw: ") + e.what());
      }
      w.commit();
      ::_exit(0);
    }
    const int status = wire::wait_child(pid);
    wire::Reader r(report_.report());
    bool ended = false;  // a final record (0 or 2) arrived
    while (r.ok() && !ended) {
      const auto tag = r.u64();
      if (!r.ok()) break;
      if (tag == 1) {
        Capture c;
        c.at = r.u64();
        if (post != nullptr) {
          c.done = r.u64();
          c.synced = r.u64();
        }
        c.offsets.resize(r.u64());
        if (const char* p = r.raw(c.offsets.size() * 8); p != nullptr && !c.offsets.empty())
          std::memcpy(c.offsets.data(), p, c.offsets.size() * 8);
        const auto n = r.u64();
        for (std::uint64_t i = 0; i < n && r.ok(); ++i) {
          const int index = static_cast<int>(r.i64());
          std::vector<Line> lines(c.offsets.size());
          if (const char* p = r.raw(lines.size() * kL))
            for (std::size_t l = 0; l < lines.size(); ++l) std::memcpy(lines[l].data(), p + l * kL, kL);
          c.images.emplace_back(index, std::move(lines));
        }
        const auto d = r.u64();
        for (std::uint64_t i = 0; i < d && r.ok(); ++i) {
          c.written.push_back(r.u64());
          Line l{};
          if (const char* p = r.raw(kL)) std::memcpy(l.data(), p, kL);
          c.media.push_back(l);
        }
        bool sane = r.ok();
        for (const auto off : c.offsets) sane = sane && off % kL == 0 && off + kL <= img.size;
        for (const auto off : c.written) sane = sane && off % kL == 0 && off + kL <= img.size;
        if (!sane) break;
        pr.captures.push_back(std::move(c));
        if (pr.captures.size() == at.size()) {  // the child left after its last point
          pr.ok = true;
          ended = true;
        }
      } else if (tag == 0) {
        pr.ok = true;
        pr.verbs = r.u64();
        ended = true;
      } else if (tag == 2) {
        pr.error = r.str();
        ended = true;
      } else {
        break;
      }
    }
    if (!ended || !r.ok()) {
      pr.ok = false;
      if (pr.error.empty())
        pr.error = WIFEXITED(status) && WEXITSTATUS(status) == 0
                       ? "garbled report from the recovery process"
                       : "the recovery process " + wire::describe_status(status, cfg_.recovery_timeout_s, cfg_.recovery_cpu_s);
    }
    return pr;
  }

  // Crashes recovery of `img` at points spread over its `n` verbs (the count
  // of the plain restart that already judged this image), recovers each
  // crash image again and, below depth 1, crashes that recovery too.
  void crash_recovery(const JobCtx& j, const Scratch& img, int index, int depth, const std::string& path,
                      std::uint64_t n, std::vector<Outcome>& out) const {
    if (n == 0) return;  // no pool, or a recovery with nothing to crash
    const std::uint64_t salt = wire::mix(cfg_.seed ^ wire::mix(j.k) ^ wire::mix(static_cast<std::uint64_t>(index) + 77) ^
                                         std::hash<std::string>{}(path));
    // Recovery crash points: spread over recovery's verbs, jittered by the seed.
    std::vector<std::uint64_t> points;
    const std::uint64_t want = cfg_.recovery_crash_points == 0 ? n : std::min<std::uint64_t>(n, cfg_.recovery_crash_points);
    for (std::uint64_t i = 0; i < want; ++i) {
      const std::uint64_t lo = i * n / want, hi = (i + 1) * n / want;
      points.push_back(lo + (hi > lo ? wire::mix(salt + i) % (hi - lo) : 0));
    }
    auto where = [&](std::uint64_t at) {
      return (path.empty() ? "" : path + ", then ") + "a crash during recovery at its verb " + std::to_string(at) +
             " of " + std::to_string(n);
    };
    alive();
    const Probe c = probe(j, img, points, salt);
    if (!c.ok) {
      // Recovery failed before the first point it did not reach (points past
      // a shorter run are simply not crashed).
      Outcome o;
      o.error = c.error;
      o.path = where(c.captures.size() < points.size() ? points[c.captures.size()] : n);
      out.push_back(std::move(o));
    }
    Scratch next;  // one per level: reloaded per image
    for (const auto& cap : c.captures) {
      for (const auto& [idx, lines] : cap.images) {
        alive();
        next.load(img.map, img.size);
        for (std::size_t l = 0; l < cap.written.size(); ++l) std::memcpy(next.map + cap.written[l], cap.media[l].data(), kL);
        for (std::size_t l = 0; l < cap.offsets.size(); ++l) std::memcpy(next.map + cap.offsets[l], lines[l].data(), kL);
        Outcome o = restart(j, next, index);
        o.path = where(cap.at) + " (image " + std::to_string(idx) + ")";
        const std::string here = o.path;
        const std::uint64_t verbs = o.recovered && !o.no_pool ? o.verbs : 0;
        out.push_back(std::move(o));
        if (depth > 1) crash_recovery(j, next, index, depth - 1, here, verbs, out);
      }
    }
  }

  // ------------------------------------- a second crash, after recovery

  // Crashes the post-recovery ops of image `index` (whose plain restart `o`
  // passed): a probe child recovers the image under the live simulator,
  // completes the pending ops and runs the same post ops (`o.post`), and is
  // crashed at cfg_.post_crash_points verbs spread over them and after the
  // last one; each crash image is recovered again (a fresh restart) and
  // checked (check_second). The first violation is returned.
  CheckResult crash_post_ops(const JobCtx& j, const Scratch& img, int index, const Outcome& o,
                             std::uint64_t* second) const {
    CheckResult ok;
    ok.engine = "second-crash";
    if (o.post.empty()) return ok;  // nothing ran after recovery
    const std::uint64_t n = o.post_verbs;
    const std::uint64_t salt = wire::mix(cfg_.seed ^ wire::mix(j.k + 0x2c7a) ^ wire::mix(static_cast<std::uint64_t>(index) + 191));
    // Points: spread over the post ops' n verbs (jittered by the seed), and
    // n itself, the crash after the last op.
    std::vector<std::uint64_t> points;
    const std::uint64_t want = std::min<std::uint64_t>(n, cfg_.post_crash_points);
    for (std::uint64_t i = 0; i < want; ++i) {
      const std::uint64_t lo = i * n / want, hi = (i + 1) * n / want;
      points.push_back(lo + (hi > lo ? wire::mix(salt + i) % (hi - lo) : 0));
    }
    points.push_back(n);
    points.erase(std::unique(points.begin(), points.end()), points.end());
    alive();
    const PostPlan plan = first_plan(j, index);
    const Probe pr = probe(j, img, points, salt, &o, &plan);
    auto fail = [&](const std::string& property, const std::string& reason) {
      CheckResult r;
      r.verdict = CheckResult::Verdict::kViolation;
      r.property = "second-crash/" + property;
      r.engine = "second-crash";
      r.reason = reason;
      return r;
    };
    if (!pr.ok)
      return fail("recovery", "recovery and post-recovery ops under the live simulator failed: " + pr.error);
    // The second recovery: the first crash's pending ops were completed by
    // the first recovery (none are pending now); its post ops continue with
    // fresh ops and the next sequence numbers.
    JobCtx j2 = j;
    j2.pending.clear();
    PostPlan again{wire::mix(plan.rng ^ 0x7f4a7c159e3779b9ull), plan.seq};
    for (const int t : o.post_tids) ++again.seq[static_cast<std::size_t>(t)];
    Scratch next;
    for (const auto& cap : pr.captures) {
      for (const auto& [idx, lines] : cap.images) {
        alive();
        next.load(img.map, img.size);
        for (std::size_t l = 0; l < cap.written.size(); ++l) std::memcpy(next.map + cap.written[l], cap.media[l].data(), kL);
        for (std::size_t l = 0; l < cap.offsets.size(); ++l) std::memcpy(next.map + cap.offsets[l], lines[l].data(), kL);
        const Outcome o2 = restart(j2, next, again);
        ++*second;
        std::string where = "a second crash at verb " + std::to_string(cap.at) + " of the " + std::to_string(n) +
                            " of the " + std::to_string(o.post.size()) + " post-recovery ops (";
        where += cap.done < o.post.size() ? "during op " + std::to_string(cap.done + 1) + ", " + format_op(o.post[cap.done])
                                          : std::string("after the last op");
        where += "; image " + std::to_string(idx) + ")";
        if (!o2.recovered) return fail("recovery", "after " + where + ": " + o2.error);
        std::string why = check_second(o, cap, o2);
        if (!why.empty()) return fail(buffered_ ? "buffered-durable-linearizability" : "durable-linearizability",
                                      "after " + where + ": " + why);
        if (!o2.post_error.empty()) return fail("post-recovery", "after " + where + ": " + o2.post_error);
      }
    }
    return ok;
  }

  // The check after a second recovery. The first recovered (and completed)
  // state S1 = o.post_from and the post ops are sequential (one thread at a
  // time, round robin), so the possible outcomes are S1 with a prefix of
  // the post ops applied (P_0 = S1, P_i = P_(i-1) after op i): the prefix
  // holds every op completed before the crash (strictly durable), or every
  // op completed before the last completed sync (buffered), and at most the
  // op in progress besides. An empty string when the recovered state is one
  // of them; never inconclusive.
  std::string check_second(const Outcome& o, const Capture& cap, const Outcome& o2) const {
    const std::size_t n = o.post.size();
    const std::size_t done = std::min<std::size_t>(cap.done, n);
    const std::size_t hi = std::min(n, done + 1);
    const std::size_t lo = buffered_ ? std::min<std::size_t>(cap.synced, done) : done;
    const State& got = detectable_ && !buffered_ ? o2.s1 : o2.s0;
    State st = o.post_from;
    for (std::size_t i = 0; i <= hi; ++i) {
      if (i >= lo && st == got) return {};
      if (i < n) {
        if (regions_)
          (void)regions_->apply(st, o.post[i]);
        else
          (void)spec_apply(spec_, st, o.post[i]);
      }
    }
    std::string s = "the state recovered is " + format_state(got) + "; the first recovery's state " +
                    format_state(o.post_from) + " with the first " +
                    (lo == hi ? std::to_string(lo) : std::to_string(lo) + " to " + std::to_string(hi)) + " of the " +
                    std::to_string(n) + " post-recovery ops applied was required (" + std::to_string(done) +
                    " completed before the crash";
    if (buffered_) s += ", " + std::to_string(cap.synced) + " before the last completed sync";
    return s + ")";
  }

  // Tells the runner this worker is alive (between the many recoveries of
  // one image that crashes during recovery take).
  void alive() const {
    wire::arm_alarm(cfg_.recovery_timeout_s, cfg_.recovery_cpu_s);  // a new step: a new allowance
    wire::Writer w;
    w.u64(3);
    if (!wire::send_msg(sock_, w.data())) ::_exit(0);
  }

  const SubjectInfo& info_;
  const CampaignConfig& cfg_;
  int sock_ = -1;
  Spec spec_ = Spec::kQueue;
  std::optional<RegionSpec> regions_;  // failure atomicity of multi-store regions
  bool detectable_ = false, buffered_ = false;
  Scratch scratch_;
  MediaMap media_map_;
  mutable ReportArea report_;  // crashes during recovery: the probes' reports
  std::unordered_map<std::uint64_t, CheckResult> cache_;
};

}  // namespace

void worker_main(const SubjectInfo& info, const CampaignConfig& cfg, int sock) {
  ::signal(SIGPIPE, SIG_IGN);
  sim::enter_child();
  try {
    Machine m(info, cfg);
    m.serve(sock);
  } catch (...) {
    ::_exit(6);
  }
}

}  // namespace ferrite::crash::internal
