// The crash simulator (crash/sim.h).
#include "ferrite/crash/sim.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <system_error>

namespace ferrite::crash {

namespace {

constexpr std::size_t kL = persist::kCacheLine;

struct ThreadState {
  std::uint32_t epoch = 0;
  std::vector<PendingWriteBack> pending;
};

struct Sim {
  std::mutex mu;
  std::uint8_t* base = nullptr;
  std::size_t size = 0;
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
  std::vector<std::unique_ptr<ThreadState>> threads;
  std::uint64_t generation = 0;
  std::uint64_t k = 0;
  sim::CrashHook hook = nullptr;
  void* hook_ctx = nullptr;
  bool child = false;  // in a crashed child: verbs do nothing
  int child_backing_fd = -1;  // crashed child: pools attach as MAP_PRIVATE views of this file
  std::atomic<int> waiting{0};
};

Sim& g() {
  static Sim* s = new Sim;  // never destroyed: verbs may run during exit
  return *s;
}

struct ThreadSlot {
  std::uint64_t generation = ~std::uint64_t{0};
  std::uint32_t index = 0;
};
thread_local ThreadSlot t_slot;

// Caller holds the lock.
ThreadState& this_thread(Sim& s) {
  if (t_slot.generation != s.generation) {
    t_slot.generation = s.generation;
    t_slot.index = static_cast<std::uint32_t>(s.threads.size());
    s.threads.push_back(std::make_unique<ThreadState>());
  }
  return *s.threads[t_slot.index];
}

// Takes the lock, counts the verb, runs the crash hook; returns the lock.
std::unique_lock<std::mutex> enter(Sim& s, persist::Verb v) {
  s.waiting.fetch_add(1, std::memory_order_relaxed);  // a hint for the campaign only
  std::unique_lock<std::mutex> lk(s.mu);
  s.waiting.fetch_sub(1, std::memory_order_relaxed);
  const std::uint64_t k = s.k++;
  if (s.hook != nullptr) s.hook(s.hook_ctx, k, v);
  return lk;
}

// psync: the thread's pending write-backs reach the media image, in k order
// (per line the newest copy lands last).
//
// Per-line coherence: write-backs of one line reach the persistence domain
// in the line's coherence order, so once a copy taken at verb k is durable,
// no copy of that line taken *before* k — another thread's pwb still
// pending, say of a shared word it loaded and wrote back (the Izraelevitz
// transform, helping in FHMP or PWFcomb's l.44–46) — may land over it later.
// Such older copies are dropped here; they can no longer contribute to any
// image. (Copies taken after k carry every store k's copy carries, so they
// stay pending.) Without this, a psync of a stale copy "un-persists" a
// completed operation — a state no hardware produces.
void apply_pending(Sim& s, ThreadState& t) {
  if (t.pending.empty()) return;
  if (s.threads.size() == 1) {  // no other thread's copies to drop
    for (const auto& p : t.pending) std::memcpy(s.media.get() + p.offset, p.data.data(), kL);
    t.pending.clear();
    return;
  }
  std::map<std::uint64_t, std::uint64_t> newest;  // line offset -> k of the copy applied
  for (const auto& p : t.pending) {
    std::memcpy(s.media.get() + p.offset, p.data.data(), kL);
    auto [it, fresh] = newest.emplace(p.offset, p.k);
    if (!fresh && p.k > it->second) it->second = p.k;
  }
  t.pending.clear();
  for (auto& other : s.threads) {
    if (other.get() == &t) continue;
    std::erase_if(other->pending, [&](const PendingWriteBack& w) {
      auto it = newest.find(w.offset);
      return it != newest.end() && w.k < it->second;
    });
  }
}

void sim_pwb(const void* line) {
  Sim& s = g();
  if (s.child) return;
  auto lk = enter(s, persist::Verb::kPwb);
  if (s.base == nullptr) return;
  const auto* p = static_cast<const std::uint8_t*>(line);
  if (p < s.base || p >= s.base + s.size) return;  // not pool memory: nothing to model
  ThreadState& t = this_thread(s);
  PendingWriteBack w;
  w.offset = static_cast<std::uint64_t>(p - s.base);
  w.k = s.k - 1;
  w.thread = t_slot.index;
  w.epoch = t.epoch;
  std::memcpy(w.data.data(), p, kL);
  t.pending.push_back(w);
}

void sim_fence(persist::Verb v) {
  Sim& s = g();
  if (s.child) return;
  auto lk = enter(s, v);
  if (s.base == nullptr) return;
  ++this_thread(s).epoch;
}

void sim_sync(persist::Verb v) {
  Sim& s = g();
  if (s.child) return;
  auto lk = enter(s, v);
  if (s.base == nullptr) return;
  ThreadState& t = this_thread(s);
  apply_pending(s, t);
  ++t.epoch;
}

void sim_nothing(persist::Verb v) {
  Sim& s = g();
  if (s.child) return;
  auto lk = enter(s, v);
}

void v_pfence() { sim_fence(persist::Verb::kPfence); }
void v_ofence() { sim_fence(persist::Verb::kOfence); }
void v_barrier() { sim_fence(persist::Verb::kPersistBarrier); }
void v_psync() { sim_sync(persist::Verb::kPsync); }
void v_dfence() { sim_sync(persist::Verb::kDfence); }
void v_join() { sim_sync(persist::Verb::kJoinStrand); }
void v_new_strand() { sim_nothing(persist::Verb::kNewStrand); }

const persist::Backend kTable{"sim", &sim_pwb, &v_pfence, &v_psync, &v_ofence, &v_dfence,
                              &v_barrier, &v_new_strand, &v_join};

[[noreturn]] void sys_fail(const char* what) {
  throw std::system_error(errno, std::generic_category(), std::string("crash simulator: ") + what);
}

const persist::Backend* attach(void* base, std::size_t size) {
  Sim& s = g();
  // CRASH: a crashed child re-opens the pool on a crash image; nothing is
  // simulated there (and the lock may be held by the thread that forked).
  if (s.child) {
    if (s.child_backing_fd >= 0) {
      // CRASH: recovery must not write the image file (the next image reuses
      // it): replace the pool's fresh shared mapping by a private view.
      void* p = ::mmap(base, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_FIXED, s.child_backing_fd, 0);
      if (p == MAP_FAILED) sys_fail("mmap (private view of the crash image)");
    }
    return &kTable;
  }
  std::lock_guard<std::mutex> lk(s.mu);
  if (s.base != nullptr)
    throw std::logic_error("the crash simulator models one pool at a time; another sim pool is open");
  if (reinterpret_cast<std::uintptr_t>(base) % 4096 != 0 || size % 4096 != 0 || size == 0)
    throw std::invalid_argument("crash simulator: pool range must be page aligned");
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
  std::memcpy(base, moved, size);
  s.base = static_cast<std::uint8_t*>(base);
  s.size = size;
  s.shadow = moved;
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
  std::memcpy(s.media.get(), base, size);
  s.threads.clear();
  ++s.generation;
  s.k = 0;
  return &kTable;
}

void detach(void* base) {
  Sim& s = g();
  if (s.child) return;
  std::lock_guard<std::mutex> lk(s.mu);
  if (s.base == nullptr || s.base != base) return;
  // A clean close: the file receives the working memory (if still mapped).
  if (s.shadow != nullptr) {
    if (::msync(s.base, s.size, MS_ASYNC) == 0) std::memcpy(s.shadow, s.base, s.size);
    ::munmap(s.shadow, s.size);
  }
  s.shadow = nullptr;
  s.base = nullptr;
  s.size = 0;
  s.media.reset();
  s.threads.clear();
  ++s.generation;
  s.k = 0;
}

std::uint64_t splitmix(std::uint64_t& x) {
  std::uint64_t z = (x += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

}  // namespace

void enable_sim() { persist::set_sim_hooks({&attach, &detach}); }

std::size_t CrashState::dirty_count() const {
  return static_cast<std::size_t>(std::count(dirty.begin(), dirty.end(), true));
}

// ------------------------------------------------------------------ images

Image build_image(const CrashState& cs, int index, std::uint64_t seed, const ImageOptions& opt) {
  Image img;
  img.index = index;
  const std::size_t n = cs.lines.size();
  auto line_of = [&](std::uint64_t off) {
    return static_cast<std::size_t>(std::lower_bound(cs.lines.begin(), cs.lines.end(), off) - cs.lines.begin());
  };
  if (index == kImageAllLost) {
    img.lines = cs.media;
    img.how = "all pending write-backs and dirty lines lost (media only)";
  } else if (index == kImageAllPersisted) {
    img.lines = cs.working;
    img.how = "everything persisted (working memory)";
  } else {
    std::uint64_t rng = seed ^ (cs.k * 0x9e3779b97f4a7c15ull) ^ (static_cast<std::uint64_t>(index) << 32);
    splitmix(rng);
    const bool evict_mode = cs.dirty_count() > 0 && (splitmix(rng) & 1);
    // Per thread: E (epochs < E all applied, a subset of epoch E).
    std::map<std::uint32_t, std::vector<std::uint32_t>> epochs_of;  // thread -> distinct pending epochs
    for (const auto& p : cs.pending) {
      auto& v = epochs_of[p.thread];
      if (v.empty() || v.back() != p.epoch) v.push_back(p.epoch);
    }
    std::map<std::uint32_t, std::uint32_t> E;
    std::map<std::uint32_t, std::uint64_t> p_keep;  // probability (of 4) to keep an epoch-E entry
    std::string es;
    for (auto& [t, eps] : epochs_of) {
      const std::uint32_t cur = t < cs.epochs.size() ? cs.epochs[t] : eps.back();
      std::uint32_t e = cur;
      if (!evict_mode) {
        const std::uint64_t c = splitmix(rng) % (eps.size() + 1);
        e = c < eps.size() ? eps[c] : cur;
      }
      E[t] = e;
      p_keep[t] = 1 + splitmix(rng) % 3;
      es += (es.empty() ? "" : ",") + std::to_string(e) + "/" + std::to_string(cur);
    }
    std::vector<Line> base_val = cs.media;  // media + mandatory write-backs
    std::vector<Line> val = cs.media;       // + chosen optional ones
    std::vector<std::uint64_t> last_k(n, 0), last_mand_k(n, 0);
    std::vector<bool> has(n, false), has_mand(n, false), optional_src(n, false);
    std::size_t applied = 0;
    for (const auto& p : cs.pending) {
      const std::size_t i = line_of(p.offset);
      const std::uint32_t e = E[p.thread];
      bool take = false, mandatory = false;
      if (p.epoch < e) {
        take = mandatory = true;
      } else if (p.epoch == e) {
        take = (splitmix(rng) % 4) < p_keep[p.thread];
      }
      if (!take) continue;
      ++applied;
      // Per line, the latest write-back (by k) wins: its copy contains every
      // store an earlier copy of that line contains.
      if (mandatory && (!has_mand[i] || p.k > last_mand_k[i])) {
        base_val[i] = p.data;
        last_mand_k[i] = p.k;
        has_mand[i] = true;
      }
      if (!has[i] || p.k > last_k[i]) {
        val[i] = p.data;
        last_k[i] = p.k;
        has[i] = true;
        optional_src[i] = !mandatory;
      }
    }
    // Lines whose mandatory write-back is newer than the optional one.
    for (std::size_t i = 0; i < n; ++i)
      if (has_mand[i] && last_mand_k[i] >= last_k[i]) optional_src[i] = false;
    std::size_t evicted = 0, torn = 0;
    if (evict_mode) {
      const std::uint64_t q = 1 + splitmix(rng) % 7;  // of 8
      for (std::size_t i = 0; i < n; ++i) {
        if (!cs.dirty[i] || (splitmix(rng) % 8) >= q) continue;
        base_val[i] = val[i];
        val[i] = cs.working[i];
        optional_src[i] = true;
        ++evicted;
      }
    }
    if (opt.tearing) {
      for (std::size_t i = 0; i < n; ++i) {
        if (!optional_src[i] || splitmix(rng) % 4 != 0) continue;
        const std::uint64_t mask = splitmix(rng);
        for (std::size_t w = 0; w < kL / 8; ++w)
          if (mask & (1ull << w)) std::memcpy(val[i].data() + 8 * w, base_val[i].data() + 8 * w, 8);
        ++torn;
      }
    }
    img.lines = std::move(val);
    img.how = "random: E=[" + es + "] " + std::to_string(applied) + "/" + std::to_string(cs.pending.size()) +
              " pending applied, " + std::to_string(evicted) + "/" + std::to_string(cs.dirty_count()) +
              " dirty evicted, " + std::to_string(torn) + " torn";
  }
  std::uint64_t h = 0x51ed2701;
  for (std::size_t i = 0; i < n; ++i) {
    std::uint64_t words[kL / 8];
    std::memcpy(words, img.lines[i].data(), kL);
    for (auto w : words) {
      h ^= w + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
      splitmix(h);
    }
  }
  img.hash = h;
  return img;
}

void install_image(const CrashState& cs, const Image& img, void* base) {
  auto* b = static_cast<std::uint8_t*>(base);
  for (std::size_t i = 0; i < cs.lines.size(); ++i) std::memcpy(b + cs.lines[i], img.lines[i].data(), kL);
}

// --------------------------------------------------------------- sim API

namespace sim {

bool attached() { return g().base != nullptr; }
void* base() { return g().base; }
std::size_t size() { return g().size; }
std::uint64_t verbs() {
  std::lock_guard<std::mutex> lk(g().mu);
  return g().k;
}

void settle() {
  Sim& s = g();
  std::lock_guard<std::mutex> lk(s.mu);
  if (s.base == nullptr) return;
  std::memcpy(s.media.get(), s.base, s.size);
  for (auto& t : s.threads) {
    t->pending.clear();
    t->epoch = 0;
  }
  s.k = 0;
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
  std::vector<PendingWriteBack> all;
  for (auto& t : s.threads) all.insert(all.end(), t->pending.begin(), t->pending.end());
  std::sort(all.begin(), all.end(), [](auto& a, auto& b) { return a.k < b.k; });
  return all;
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

int threads_waiting() { return g().waiting.load(std::memory_order_relaxed); }

CrashState capture_locked(std::uint64_t k) {
  Sim& s = g();
  CrashState cs;
  cs.k = k;
  cs.size = s.size;
  if (s.base == nullptr) return cs;
  for (auto& t : s.threads) {
    cs.epochs.push_back(t->epoch);
    cs.pending.insert(cs.pending.end(), t->pending.begin(), t->pending.end());
  }
  std::sort(cs.pending.begin(), cs.pending.end(), [](auto& a, auto& b) { return a.k < b.k; });
  std::vector<std::uint64_t> lines;
  // Dirty lines: compare a page at a time, then its lines.
  constexpr std::size_t kPage = 4096;
  for (std::size_t pg = 0; pg < s.size; pg += kPage) {
    const std::size_t len = std::min(kPage, s.size - pg);
    if (std::memcmp(s.base + pg, s.media.get() + pg, len) == 0) continue;
    for (std::size_t off = pg; off < pg + len; off += kL)
      if (std::memcmp(s.base + off, s.media.get() + off, kL) != 0) lines.push_back(off);
  }
  const std::size_t ndirty = lines.size();
  for (const auto& p : cs.pending) lines.push_back(p.offset);
  std::sort(lines.begin(), lines.end());
  lines.erase(std::unique(lines.begin(), lines.end()), lines.end());
  cs.lines = std::move(lines);
  cs.media.resize(cs.lines.size());
  cs.working.resize(cs.lines.size());
  cs.dirty.resize(cs.lines.size());
  for (std::size_t i = 0; i < cs.lines.size(); ++i) {
    std::memcpy(cs.media[i].data(), s.media.get() + cs.lines[i], kL);
    std::memcpy(cs.working[i].data(), s.base + cs.lines[i], kL);
    cs.dirty[i] = cs.media[i] != cs.working[i];
  }
  (void)ndirty;
  return cs;
}

CrashState capture() {
  std::lock_guard<std::mutex> lk(g().mu);
  return capture_locked(g().k);
}

void enter_child() { g().child = true; }
int media_fd() { return g().media.fd; }
std::uint8_t* media_data() { return g().media.get(); }
void set_child_backing_fd(int fd) { g().child_backing_fd = fd; }

}  // namespace sim
}  // namespace ferrite::crash
