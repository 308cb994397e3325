// The crash simulator (crash/sim.h): the machine (working memory, media
// image, verb numbering, crash hook, write tracking). What the verbs mean
// and which images a crash may leave is the model's (crash/model.h,
// model*.cc).
#include "ferrite/crash/sim.h"
#include "ferrite/crash/sites.h"

#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <system_error>
#include <vector>

#include "ferrite/crash/model.h"
#include "pages.h"

namespace ferrite::crash {

namespace {

constexpr std::size_t kL = persist::kCacheLine;
constexpr std::size_t kPage = 4096;

// ------------------------------------------------------------ write tracking
//
// Invariant: a page whose flag is 0 is write-protected and its working
// memory equals its media image. So the dirty lines (working != media) all
// lie in flagged pages, and a capture compares only those.
//   - A store to a protected page faults; the handler makes the page
//     writable and THEN sets its flag. (The other order would let a shrink
//     that runs between the two clear the flag and re-protect, after which
//     the handler unprotects a page whose flag is 0.)
//   - A write to the media image (a write-back landing) sets the flag.
//   - A shrink (capture outside a crashed child) takes a flagged page that
//     compared clean at enough captures (kProtectAfter), clears its flag,
//     write-protects it, and compares it again: a store that raced in
//     before the protection is seen by the second comparison (mprotect's
//     TLB shootdown drains the other CPUs' store buffers), one after it
//     faults and sets the flag.
// A flag > 0 also counts the captures that found its page clean (+ 1).
// The tracker is global (the handler cannot take the simulator lock); flag
// arrays are never freed, so a late handler never touches freed memory.
struct Tracker {
  std::atomic<std::uintptr_t> lo{0}, hi{0};  // tracked range; empty when lo == hi
  std::atomic<std::atomic<std::uint8_t>*> flags{nullptr};
  struct sigaction prev {};                   // the handler we chain to
  bool installed = false;
};
Tracker g_track;

void chain(int sig, siginfo_t* si, void* uc) {
  const struct sigaction& p = g_track.prev;
  if ((p.sa_flags & SA_SIGINFO) != 0 && p.sa_sigaction != nullptr) {
    p.sa_sigaction(sig, si, uc);
    return;
  }
  if (p.sa_handler != SIG_DFL && p.sa_handler != SIG_IGN && p.sa_handler != nullptr) {
    p.sa_handler(sig);
    return;
  }
  // Default action: a fault re-executes and kills the process as it would
  // have without us; a sent signal is raised again (it is blocked until we
  // return).
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  ::sigemptyset(&dfl.sa_mask);
  ::sigaction(sig, &dfl, nullptr);
  if (si == nullptr || si->si_code <= 0) ::raise(sig);
}

void segv_handler(int sig, siginfo_t* si, void* uc) {
  const int saved_errno = errno;
  const auto a = reinterpret_cast<std::uintptr_t>(si != nullptr ? si->si_addr : nullptr);
  const std::uintptr_t lo = g_track.lo.load(std::memory_order_acquire);
  const std::uintptr_t hi = g_track.hi.load(std::memory_order_acquire);
  if (si != nullptr && si->si_code == SEGV_ACCERR && a >= lo && a < hi) {
    std::atomic<std::uint8_t>* flags = g_track.flags.load(std::memory_order_acquire);
    const std::size_t pg = (a - lo) / kPage;
    if (::mprotect(reinterpret_cast<void*>(lo + pg * kPage), kPage, PROT_READ | PROT_WRITE) == 0) {
      flags[pg].store(1, std::memory_order_seq_cst);
      errno = saved_errno;
      return;
    }
    // mprotect may fail (ENOMEM: alternating protections exceed the map
    // count): unprotect the whole pool, every page flagged (a full scan).
    if (::mprotect(reinterpret_cast<void*>(lo), hi - lo, PROT_READ | PROT_WRITE) == 0) {
      for (std::size_t i = 0; i < (hi - lo) / kPage; ++i) flags[i].store(1, std::memory_order_seq_cst);
      errno = saved_errno;
      return;
    }
  }
  errno = saved_errno;
  chain(sig, si, uc);
}

// Installs the handler (once; again if someone replaced it). False if the
// handler cannot be installed (then the pool is scanned).
bool install_handler() {
  struct sigaction cur {};
  if (g_track.installed && ::sigaction(SIGSEGV, nullptr, &cur) == 0 && (cur.sa_flags & SA_SIGINFO) != 0 &&
      cur.sa_sigaction == &segv_handler)
    return true;
  struct sigaction sa {};
  sa.sa_sigaction = &segv_handler;
  sa.sa_flags = SA_SIGINFO | SA_RESTART | SA_ONSTACK;
  ::sigemptyset(&sa.sa_mask);
  struct sigaction prev {};
  if (::sigaction(SIGSEGV, &sa, &prev) != 0) return false;
  if (!((prev.sa_flags & SA_SIGINFO) != 0 && prev.sa_sigaction == &segv_handler)) g_track.prev = prev;
  // A sanitizer may keep SIGSEGV to itself: check that we are in force.
  if (::sigaction(SIGSEGV, nullptr, &cur) != 0 || (cur.sa_flags & SA_SIGINFO) == 0 ||
      cur.sa_sigaction != &segv_handler)
    return false;
  g_track.installed = true;
  return true;
}

bool tracking_default() {
  const char* e = std::getenv("FERRITE_SIM_TRACKING");
  return e == nullptr || std::strcmp(e, "0") != 0;
}

// ------------------------------------------------------------------ the sim

struct Sim;

class SimMachine final : public Machine {
 public:
  explicit SimMachine(Sim& s) : s_(s) {}
  std::size_t size() const override;
  const std::uint8_t* working() const override;
  const std::uint8_t* media() const override;
  void write_media(std::uint64_t offset, const Line& data) override;

 private:
  Sim& s_;
};

struct Sim {
  std::mutex mu;
  std::uint8_t* base = nullptr;
  std::size_t size = 0;
  // The pool range for the lock-free test of declare_store.
  std::atomic<std::uintptr_t> lo{0}, hi{0};
  void* shadow = nullptr;  // the pool file's shared mapping, moved aside
  // The media image: a shared mapping of a memfd, so that a crashed child
  // can hand a crash image to Pool::open as a file (/proc/self/fd/N).
  struct Media {
    std::uint8_t* p = nullptr;
    std::size_t size = 0;
    int fd = -1;
    std::uint8_t* get() const { return p; }
    void reset() {
      if (p != nullptr) ::munmap(p, size);
      if (fd >= 0) ::close(fd);
      p = nullptr;
      fd = -1;
      size = 0;
    }
  } media;
  SimMachine machine{*this};
  const Model* selected = nullptr;  // for pools attached from now on
  const Model* model = nullptr;     // of the attached pool
  std::unique_ptr<ModelRun> run;
  std::uint32_t nthreads = 0;
  std::uint64_t generation = 0;
  std::uint64_t k = 0;
  sim::CrashHook hook = nullptr;
  void* hook_ctx = nullptr;
  sim::Turnstile turnstile = nullptr;  // controlled scheduling (campaign)
  void* turnstile_ctx = nullptr;
  bool child = false;  // in a crashed child: verbs do nothing but count
  std::atomic<std::uint64_t> child_k{0};  // crashed child: verbs since the last attach
  int child_backing_fd = -1;  // crashed child: pools attach as views of this file
  // Crashed child (a farm worker): the reusable image view, a private
  // anonymous mapping left at the pool's base between restarts (see
  // "Reusable image views" below). nullptr when there is none.
  std::uint8_t* view = nullptr;
  std::size_t view_size = 0;
  // Crashed child: Mirror's volatile replica a closed pool left here
  // (keep_replica), handed zero-filled to the next pool at the same place.
  std::uint8_t* replica = nullptr;
  std::size_t replica_size = 0;
  // Write tracking of the attached pool.
  bool want_tracking = tracking_default();
  bool tracking = false;
  // One byte per page, mapped (not from the heap, so tracking does not move
  // the program's heap allocations). Never unmapped: a handler running late
  // may still read an old array (a few bytes per page, once per larger pool).
  std::atomic<std::uint8_t>* flags = nullptr;
  std::size_t flags_capacity = 0;  // pages
};

Sim& g() {
  static Sim* s = new Sim;  // never destroyed: verbs may run during exit
  return *s;
}

std::size_t SimMachine::size() const { return s_.size; }
const std::uint8_t* SimMachine::working() const { return s_.base; }
const std::uint8_t* SimMachine::media() const { return s_.media.get(); }
void SimMachine::write_media(std::uint64_t offset, const Line& data) {
  std::memcpy(s_.media.get() + offset, data.data(), kL);
  if (s_.tracking) s_.flags[offset / kPage].store(1, std::memory_order_seq_cst);
}

struct ThreadSlot {
  std::uint64_t generation = ~std::uint64_t{0};
  std::uint32_t index = 0;
};
thread_local ThreadSlot t_slot;

// Caller holds the lock.
std::uint32_t this_thread(Sim& s) {
  if (t_slot.generation != s.generation) {
    t_slot.generation = s.generation;
    t_slot.index = s.nthreads++;
  }
  return t_slot.index;
}

// Takes the lock, counts the verb, runs the crash hook; returns the lock.
std::unique_lock<std::mutex> enter(Sim& s, persist::Verb v) {
  // ORDER: the turnstile (set only while no verb runs) lets one thread at a
  // time through to the lock, in the order the campaign's scheduler chooses.
  if (s.turnstile != nullptr) s.turnstile(s.turnstile_ctx);
  std::unique_lock<std::mutex> lk(s.mu);
  const std::uint64_t k = s.k++;
  if (s.hook != nullptr) s.hook(s.hook_ctx, k, v);
  return lk;
}

void sim_pwb(const void* line) {
  Sim& s = g();
  if (s.child) {
    s.child_k.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  auto lk = enter(s, persist::Verb::kPwb);
  if (s.base == nullptr) return;
  const auto* p = static_cast<const std::uint8_t*>(line);
  if (p < s.base || p >= s.base + s.size) return;  // not pool memory: nothing to model
  VerbEvent e;
  e.verb = persist::Verb::kPwb;
  e.thread = this_thread(s);
  e.k = s.k - 1;
  e.offset = static_cast<std::uint64_t>(p - s.base);
  e.line = p;
  s.run->on_verb(e);
}

void sim_verb(persist::Verb v) {
  Sim& s = g();
  if (s.child) {
    s.child_k.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  auto lk = enter(s, v);
  if (s.base == nullptr) return;
  VerbEvent e;
  e.verb = v;
  e.thread = this_thread(s);
  e.k = s.k - 1;
  s.run->on_verb(e);
}

// A declared (persist::declare_store) or annotated (persist::store,
// store_bytes) store, clipped to the pool, to the model.
void forward_store(const void* p, std::size_t n, StoreEvent::Kind kind) {
  Sim& s = g();
  if (s.child || n == 0) return;
  const auto a = reinterpret_cast<std::uintptr_t>(p);
  // Lock-free: most declared stores of a program may be to volatile memory.
  const std::uintptr_t lo = s.lo.load(std::memory_order_acquire), hi = s.hi.load(std::memory_order_acquire);
  if (a >= hi || a + n <= lo) return;
  std::lock_guard<std::mutex> lk(s.mu);
  if (s.base == nullptr) return;
  const auto b = reinterpret_cast<std::uintptr_t>(s.base);
  const std::uintptr_t from = std::max(a, b), to = std::min(a + n, b + s.size);
  if (from >= to) return;
  StoreEvent e;
  e.kind = kind;
  e.thread = this_thread(s);
  e.k = s.k;
  e.offset = from - b;
  e.size = to - from;
  s.run->on_store(e);
}

void sim_declare_store(const void* p, std::size_t n) { forward_store(p, n, StoreEvent::Kind::kDeclared); }
// The store models persist it; the write-back models see a plain store.
void sim_stored(const void* p, std::size_t n) { forward_store(p, n, StoreEvent::Kind::kStored); }

// A lock hand-off (persist::note_acquired / note_releasing) to the model:
// not a verb, so no crash point (the hops+ model's hardware history orders
// the acquirer's later stores after the releaser's, crash/model.h).
void sim_lock_event(const void* lock, bool acquired) {
  Sim& s = g();
  if (s.child) return;
  std::lock_guard<std::mutex> lk(s.mu);
  if (s.base == nullptr) return;
  LockEvent e;
  e.thread = this_thread(s);
  e.k = s.k;
  e.lock = reinterpret_cast<std::uintptr_t>(lock);
  e.acquired = acquired;
  s.run->on_lock(e);
}

void v_pfence() { sim_verb(persist::Verb::kPfence); }
void v_ofence() { sim_verb(persist::Verb::kOfence); }
void v_barrier() { sim_verb(persist::Verb::kPersistBarrier); }
void v_psync() { sim_verb(persist::Verb::kPsync); }
void v_dfence() { sim_verb(persist::Verb::kDfence); }
void v_join() { sim_verb(persist::Verb::kJoinStrand); }
void v_new_strand() { sim_verb(persist::Verb::kNewStrand); }

// persist::pfence_is_durable: true under the models whose pfence makes the
// thread's write-backs durable (Model::pfence_durable: x86, where an sfence
// waits for its clwbs); false under the others (abstract: a pfence only
// orders; the store models: pwbs do nothing) and with no pool attached.
bool sim_pfence_durable() {
  Sim& s = g();
  std::lock_guard<std::mutex> lk(s.mu);
  return s.model != nullptr && s.model->pfence_durable();
}

const persist::Backend kTable{"sim",    &sim_pwb,      &v_pfence, &v_psync, &v_ofence, &v_dfence,
                              &v_barrier, &v_new_strand, &v_join,   &sim_declare_store,
                              &sites::on_site, &sim_stored, &sim_pfence_durable, &sim_lock_event};

[[noreturn]] void sys_fail(const char* what) {
  throw std::system_error(errno, std::generic_category(), std::string("crash simulator: ") + what);
}

// Caller holds the lock. Stops tracking the attached range (with
// `restore_access`, its pages become writable again).
void untrack(Sim& s, bool restore_access) {
  if (!s.tracking) return;
  g_track.lo.store(0, std::memory_order_release);
  g_track.hi.store(0, std::memory_order_release);
  if (restore_access && s.base != nullptr) ::mprotect(s.base, s.size, PROT_READ | PROT_WRITE);
  s.tracking = false;
}

// Caller holds the lock; working == media on the whole pool. Every page
// clean and write-protected.
void track_all_clean(Sim& s) {
  if (!s.tracking) return;
  const std::size_t pages = s.size / kPage;
  for (std::size_t i = 0; i < pages; ++i) s.flags[i].store(0, std::memory_order_seq_cst);
  if (::mprotect(s.base, s.size, PROT_READ) != 0) {
    untrack(s, true);  // cannot protect: scan instead
  }
}

// Caller holds the lock, the pool is attached and unprotected.
void start_tracking(Sim& s) {
  s.tracking = false;
  if (!s.want_tracking || ::sysconf(_SC_PAGESIZE) != static_cast<long>(kPage) || !install_handler()) return;
  const std::size_t pages = s.size / kPage;
  if (pages > s.flags_capacity) {
    void* m = ::mmap(nullptr, pages, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) return;  // scan instead
    static_assert(sizeof(std::atomic<std::uint8_t>) == 1 && std::atomic<std::uint8_t>::is_always_lock_free);
    s.flags = static_cast<std::atomic<std::uint8_t>*>(m);
    s.flags_capacity = pages;
  }
  for (std::size_t i = 0; i < pages; ++i) s.flags[i].store(1, std::memory_order_relaxed);
  g_track.flags.store(s.flags, std::memory_order_release);
  g_track.hi.store(reinterpret_cast<std::uintptr_t>(s.base) + s.size, std::memory_order_release);
  g_track.lo.store(reinterpret_cast<std::uintptr_t>(s.base), std::memory_order_release);
  s.tracking = true;
  track_all_clean(s);
}

// A flagged page found clean at this many consecutive captures is
// write-protected again. Protecting costs an mprotect now and a fault (a
// signal and an mprotect, ~7 us here) at the next store, comparing a clean
// page ~0.2 us: pages stored to between most captures (a combiner's record,
// a log's tail) stay writable and are compared, pages left alone for a
// while (a node written once) are protected.
constexpr std::uint8_t kProtectAfter = 32;

// Dirty lines (working != media) of the attached pool, ascending. With
// `shrink`, pages found clean often enough are write-protected again (see
// Tracker; a flag > 0 counts the captures that found its page clean, + 1).
std::vector<std::uint64_t> dirty_lines(Sim& s, bool shrink) {
  std::vector<std::uint64_t> out;
  auto page_lines = [&](std::size_t pg) {
    const std::size_t from = pg * kPage, to = std::min(from + kPage, s.size);
    for (std::size_t off = from; off < to; off += kL)
      if (std::memcmp(s.base + off, s.media.get() + off, kL) != 0) out.push_back(off);
  };
  auto page_differs = [&](std::size_t pg) {
    const std::size_t from = pg * kPage, len = std::min(kPage, s.size - from);
    return std::memcmp(s.base + from, s.media.get() + from, len) != 0;
  };
  const std::size_t pages = (s.size + kPage - 1) / kPage;
  if (!s.tracking) {
    for (std::size_t pg = 0; pg < pages; ++pg)
      if (page_differs(pg)) page_lines(pg);
    return out;
  }
  std::vector<std::size_t> cleaned;
  for (std::size_t pg = 0; pg < pages; ++pg) {
    const std::uint8_t f = s.flags[pg].load(std::memory_order_seq_cst);
    if (f == 0) continue;
    if (page_differs(pg)) {
      page_lines(pg);
      if (shrink && f != 1) s.flags[pg].store(1, std::memory_order_seq_cst);
    } else if (shrink && f < kProtectAfter) {
      s.flags[pg].store(static_cast<std::uint8_t>(f + 1), std::memory_order_seq_cst);
    } else if (shrink) {
      s.flags[pg].store(0, std::memory_order_seq_cst);
      cleaned.push_back(pg);
    }
  }
  if (cleaned.empty()) return out;
  // Protect runs of consecutive pages with one call each, then compare again.
  std::size_t i = 0;
  bool added = false;
  while (i < cleaned.size()) {
    std::size_t j = i + 1;
    while (j < cleaned.size() && cleaned[j] == cleaned[j - 1] + 1) ++j;
    const bool ok = ::mprotect(s.base + cleaned[i] * kPage, (j - i) * kPage, PROT_READ) == 0;
    for (std::size_t t = i; t < j; ++t) {
      const std::size_t pg = cleaned[t];
      if (!ok) {
        s.flags[pg].store(1, std::memory_order_seq_cst);  // still writable: keep it flagged
      } else if (page_differs(pg)) {
        s.flags[pg].store(1, std::memory_order_seq_cst);
        page_lines(pg);
        added = true;
      }
    }
    i = j;
  }
  if (added) std::sort(out.begin(), out.end());
  return out;
}

const Model* default_model() {
  const Model* m = find_model("abstract");
  if (m == nullptr) throw std::logic_error("crash simulator: the abstract model is not registered");
  return m;
}

// Reusable image views. A farm worker restarts image after image of one
// pool. Mapping each image afresh (a private view of the image file,
// unmapped after recovery) costs page faults, a copy-on-write fault with a
// TLB flush for every page recovery writes, and the range's page tables at
// every unmap: under a hypervisor, most of a campaign's CPU time
// (docs/crash.md §5). For pools up to kViewMax the worker instead keeps one
// private anonymous mapping at the pool's base for its lifetime: before each
// restart sim::sync_child_view() makes it equal to the image byte for byte
// (a compare per page, and a copy of the pages that differ: the ones the
// last recovery wrote and the ones the new image changed), Pool::open adopts
// it (persist::sim_maps) instead of mapping the file, and the pool's close
// leaves it. Recovery still sees exactly the image and nothing of the
// crashed run, and its writes never reach the image file.
// Tried and measured slower (stop 35): a private *file* mapping of the image
// as the view, whose pages recovery wrote (found in /proc/self/pagemap) are
// dropped with MADV_DONTNEED before the next restart, so no page is
// compared. Each madvise is a TLB shootdown (~30 us here) and each page
// recovery writes a copy-on-write fault: Mutate.EveryCombiningSiteOfPWF-
// StackIsCaught 20 -> 44 s, an nbMontage campaign (recovery writes most of
// its pages) 9 -> 148 s. The compare costs 10-30% of a campaign's CPU.
constexpr std::size_t kViewMax = std::size_t{4} << 20;  // at 8 MiB the page compare costs as much as the faults

void drop_view(Sim& s) {
  if (s.view != nullptr) ::munmap(s.view, s.view_size);
  s.view = nullptr;
  s.view_size = 0;
}

// Reusable volatile replicas. Mirror's pools map a zeroed replica at
// base + kReplicaOffset, and recovery fills it. Unmapping it at every pool
// close and mapping it afresh at the next restart cost a page fault per
// page recovery touches and the unmap's TLB shootdown: perf on a Mirror
// campaign (MirrorCorrect.SeveralThreadsSampledImages/mirror_hashset_correct)
// put 17% of its CPU in that munmap. A crashed child keeps the replica a
// closing pool offers (one at a time) and hands it back to the next pool
// at the same place and size, its non-zero pages cleared (a compare per
// page, as the views'): the pool sees the zero-filled mapping it asks for.
// MADV_DONTFORK: a child forked to crash recovery maps its own (and the
// worker's pages stay writable, no copy-on-write after the fork).
void forget_replica(Sim& s, bool unmap) {
  if (unmap && s.replica != nullptr) ::munmap(s.replica, s.replica_size);
  s.replica = nullptr;
  s.replica_size = 0;
}
bool keep_replica(void* at, std::size_t size) {
  Sim& s = g();
  // Up to kViewMax, as the views: a larger one's page compare would cost
  // more than the faults it saves.
  if (!s.child || s.child_backing_fd < 0 || size > kViewMax) return false;
  if (s.replica != nullptr && s.replica != at) forget_replica(s, /*unmap=*/true);
  (void)::madvise(at, size, MADV_DONTFORK);
  s.replica = static_cast<std::uint8_t*>(at);
  s.replica_size = size;
  return true;
}
void* replica(void* at, std::size_t size) {
  Sim& s = g();
  if (!s.child || s.replica == nullptr) return nullptr;
  if (s.replica != at || s.replica_size != size) {
    forget_replica(s, /*unmap=*/true);  // another pool's: give the range back
    return nullptr;
  }
  void* p = s.replica;
  zero_nonzero_pages(s.replica, size);
  forget_replica(s, /*unmap=*/false);  // the pool owns it until it closes
  return p;
}

bool maps(void* base, std::size_t size) {
  Sim& s = g();
  if (!s.child || s.child_backing_fd < 0 || s.view == nullptr) return false;
  if (s.view == base && s.view_size == size) return true;
  // A pool elsewhere (or of another size) over the view's range: give the
  // range back so that the pool can map it.
  const auto b = reinterpret_cast<std::uintptr_t>(base), v = reinterpret_cast<std::uintptr_t>(s.view);
  if (b < v + s.view_size && v < b + size) drop_view(s);
  return false;
}

// A private copy of the crash image at [base, base+size), kept as the view.
void make_view(Sim& s, void* base, std::size_t size) {
  drop_view(s);
  void* p = ::mmap(base, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
  if (p == MAP_FAILED) sys_fail("mmap (reusable view of the crash image)");
  // A child forked to crash recovery (restart.cc) opens the image afresh:
  // it need not inherit the view, and the worker's pages then stay writable
  // (no copy-on-write fault at the next sync).
  (void)::madvise(p, size, MADV_DONTFORK);
  std::size_t done = 0;
  while (done < size) {
    const ssize_t r =
        ::pread(s.child_backing_fd, static_cast<std::uint8_t*>(base) + done, size - done, static_cast<off_t>(done));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) sys_fail("pread (the crash image into its view)");
    done += static_cast<std::size_t>(r);
  }
  s.view = static_cast<std::uint8_t*>(base);
  s.view_size = size;
}

const persist::Backend* attach(void* base, std::size_t size) {
  Sim& s = g();
  // CRASH: a crashed child re-opens the pool on a crash image; nothing is
  // simulated there (and the lock may be held by the thread that forked).
  if (s.child) {
    if (s.child_backing_fd >= 0 && !(s.view == base && s.view_size == size)) {
      // CRASH: recovery must not write the image file (the next image reuses
      // it): replace the pool's fresh shared mapping by a private copy (a
      // small pool's is kept as the reusable view) or a private view.
      if (size <= kViewMax) {
        make_view(s, base, size);
      } else {
        void* p = ::mmap(base, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_FIXED, s.child_backing_fd, 0);
        if (p == MAP_FAILED) sys_fail("mmap (private view of the crash image)");
      }
    }
    s.child_k.store(0, std::memory_order_relaxed);  // as a live attach restarts k
    // Whatever the parent tracked is not this mapping.
    const auto b = reinterpret_cast<std::uintptr_t>(base);
    if (g_track.lo.load() < b + size && b < g_track.hi.load()) {
      g_track.lo.store(0);
      g_track.hi.store(0);
    }
    return &kTable;
  }
  std::lock_guard<std::mutex> lk(s.mu);
  if (s.base != nullptr)
    throw std::logic_error("the crash simulator models one pool at a time; another sim pool is open");
  if (reinterpret_cast<std::uintptr_t>(base) % kPage != 0 || size % kPage != 0 || size == 0)
    throw std::invalid_argument("crash simulator: pool range must be page aligned");
  if (s.selected == nullptr) s.selected = default_model();
  // Move the file's shared mapping aside and put private memory at the base,
  // so fork() snapshots the working memory atomically and crashed children
  // cannot write the file. The shared mapping receives the final contents
  // on detach.
  void* aside = ::mmap(nullptr, size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (aside == MAP_FAILED) sys_fail("mmap (reserve)");
  void* moved = ::mremap(base, size, size, MREMAP_MAYMOVE | MREMAP_FIXED, aside);
  if (moved == MAP_FAILED) {
    ::munmap(aside, size);
    sys_fail("mremap");
  }
  void* priv = ::mmap(base, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
  if (priv != base) {
    // Put the file mapping back where it was.
    if (priv != MAP_FAILED) ::munmap(priv, size);
    (void)::mremap(moved, size, size, MREMAP_MAYMOVE | MREMAP_FIXED, base);
    sys_fail("mmap (private working memory)");
  }
  s.media.fd = ::memfd_create("ferrite-sim-media", MFD_CLOEXEC);
  if (s.media.fd < 0 || ::ftruncate(s.media.fd, static_cast<off_t>(size)) != 0) {
    s.media.reset();
    sys_fail("memfd for the media image");
  }
  void* m = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, s.media.fd, 0);
  if (m == MAP_FAILED) {
    s.media.reset();
    sys_fail("mmap (media image)");
  }
  s.media.p = static_cast<std::uint8_t*>(m);
  s.media.size = size;
  // The working memory and the media start as the file's bytes. Both are
  // fresh (zero) memory: the file's zero pages are skipped (a probe that
  // opens a crash image under the live simulator, restart.cc, attaches a
  // mostly empty 1 MiB pool hundreds of times per campaign; the two full
  // copies were a third of such a campaign's CPU time).
  copy_nonzero_pages(static_cast<std::uint8_t*>(base), s.media.get(), static_cast<const std::uint8_t*>(moved), size);
  s.base = static_cast<std::uint8_t*>(base);
  s.size = size;
  s.shadow = moved;
  s.nthreads = 0;
  ++s.generation;
  s.k = 0;
  s.model = s.selected;
  s.run = s.model->start(s.machine);
  start_tracking(s);
  s.hi.store(reinterpret_cast<std::uintptr_t>(base) + size, std::memory_order_release);
  s.lo.store(reinterpret_cast<std::uintptr_t>(base), std::memory_order_release);
  return &kTable;
}

void detach(void* base) {
  Sim& s = g();
  if (s.child) return;
  std::lock_guard<std::mutex> lk(s.mu);
  if (s.base == nullptr || s.base != base) return;
  s.lo.store(0, std::memory_order_release);
  s.hi.store(0, std::memory_order_release);
  untrack(s, true);
  // A clean close: the file receives the working memory (if still mapped).
  if (s.shadow != nullptr) {
    if (::msync(s.base, s.size, MS_ASYNC) == 0) std::memcpy(s.shadow, s.base, s.size);
    ::munmap(s.shadow, s.size);
  }
  s.shadow = nullptr;
  s.base = nullptr;
  s.size = 0;
  s.media.reset();
  s.run.reset();
  s.model = nullptr;
  s.nthreads = 0;
  ++s.generation;
  s.k = 0;
}

}  // namespace

void enable_sim() { persist::set_sim_hooks({&attach, &detach, &maps, &keep_replica, &replica}); }

std::size_t CrashState::dirty_count() const {
  return static_cast<std::size_t>(std::count(dirty.begin(), dirty.end(), true));
}

void install_image(const CrashState& cs, const Image& img, void* base) {
  auto* b = static_cast<std::uint8_t*>(base);
  for (std::size_t i = 0; i < cs.lines.size(); ++i) std::memcpy(b + cs.lines[i], img.lines[i].data(), kL);
}

// --------------------------------------------------------------- sim API

namespace sim {

void set_model(std::string_view name) {
  const Model* m = find_model(name);
  if (m == nullptr) {
    std::string known;
    for (const auto& n : model_names()) known += (known.empty() ? "" : ", ") + n;
    throw std::invalid_argument("unknown persistency model '" + std::string(name) + "' (known: " + known + ")");
  }
  Sim& s = g();
  std::lock_guard<std::mutex> lk(s.mu);
  s.selected = m;
}

std::string_view model() {
  Sim& s = g();
  std::lock_guard<std::mutex> lk(s.mu);
  if (s.selected == nullptr) s.selected = default_model();
  return s.selected->name();
}

void set_write_tracking(bool on) {
  Sim& s = g();
  std::lock_guard<std::mutex> lk(s.mu);
  s.want_tracking = on;
}

bool write_tracking() {
  Sim& s = g();
  std::lock_guard<std::mutex> lk(s.mu);
  return s.tracking;
}

bool attached() { return g().base != nullptr; }
void* base() { return g().base; }
std::size_t size() { return g().size; }
std::uint64_t verbs() {
  std::lock_guard<std::mutex> lk(g().mu);
  return g().k;
}

void settle(bool keep_count) {
  Sim& s = g();
  std::lock_guard<std::mutex> lk(s.mu);
  if (s.base == nullptr) return;
  // Protect first, then copy: a store racing with settle faults and is
  // tracked (settle should be called when quiescent anyway).
  track_all_clean(s);
  std::memcpy(s.media.get(), s.base, s.size);
  s.run->settle();
  if (!keep_count) s.k = 0;
}

Line media_line(const void* p) {
  Sim& s = g();
  std::lock_guard<std::mutex> lk(s.mu);
  const auto* q = static_cast<const std::uint8_t*>(p);
  if (s.base == nullptr || q < s.base || q >= s.base + s.size)
    throw std::out_of_range("media_line: address outside the simulated pool");
  Line l;
  std::memcpy(l.data(), s.media.get() + ((q - s.base) & ~(kL - 1)), kL);
  return l;
}

std::vector<PendingWriteBack> pending() {
  Sim& s = g();
  std::lock_guard<std::mutex> lk(s.mu);
  if (s.run == nullptr) return {};
  return s.run->pending();
}

void set_turnstile(Turnstile t, void* ctx) {
  Sim& s = g();
  std::lock_guard<std::mutex> lk(s.mu);
  s.turnstile = t;
  s.turnstile_ctx = ctx;
}

void set_crash_hook(CrashHook hook, void* ctx) {
  Sim& s = g();
  std::lock_guard<std::mutex> lk(s.mu);
  s.hook = hook;
  s.hook_ctx = ctx;
}

void crash_now() {
  Sim& s = g();
  std::lock_guard<std::mutex> lk(s.mu);
  if (s.hook != nullptr) s.hook(s.hook_ctx, s.k, persist::Verb::kCount);
}


CrashState capture_locked(std::uint64_t k) {
  Sim& s = g();
  CrashState cs;
  cs.k = k;
  cs.size = s.size;
  if (s.base == nullptr) {
    cs.model = std::string(s.selected != nullptr ? s.selected->name() : "abstract");
    return cs;
  }
  cs.model = std::string(s.model->name());
  cs.lines = dirty_lines(s, /*shrink=*/!s.child);
  s.run->capture(cs);
  std::sort(cs.lines.begin(), cs.lines.end());
  cs.lines.erase(std::unique(cs.lines.begin(), cs.lines.end()), cs.lines.end());
  const std::size_t n = cs.lines.size();
  cs.media.resize(n);
  cs.working.resize(n);
  cs.dirty.resize(n);
  cs.declared.assign(n, 0);
  for (std::size_t i = 0; i < n; ++i) {
    std::memcpy(cs.media[i].data(), s.media.get() + cs.lines[i], kL);
    std::memcpy(cs.working[i].data(), s.base + cs.lines[i], kL);
    cs.dirty[i] = cs.media[i] != cs.working[i];
  }
  s.run->capture_lines(cs);
  return cs;
}

CrashState capture() {
  std::lock_guard<std::mutex> lk(g().mu);
  return capture_locked(g().k);
}

void enter_child() { g().child = true; }
std::uint64_t child_verbs() { return g().child_k.load(std::memory_order_relaxed); }
void leave_child() {
  Sim& s = g();
  drop_view(s);  // pools attached from now on are live and map their file
  // A forked child does not have the replica (MADV_DONTFORK): only forget it.
  forget_replica(s, /*unmap=*/false);
  s.child = false;
}
int media_fd() { return g().media.fd; }
std::uint8_t* media_data() { return g().media.get(); }
void set_child_backing_fd(int fd) {
  Sim& s = g();
  if (fd < 0) drop_view(s);
  s.child_backing_fd = fd;
}
void sync_child_view(const std::uint8_t* image, std::size_t size) {
  Sim& s = g();
  if (s.view == nullptr) return;
  if (size != s.view_size) {
    drop_view(s);
    return;
  }
  copy_changed_pages(s.view, image, size);
}

}  // namespace sim
}  // namespace ferrite::crash
