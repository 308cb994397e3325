// The store models (crash/model.h, docs/crash.md §1): "hops", "hops+" and
// "strand". In them annotated stores (persist::store, store_bytes) are what
// persists, each in an order the model's rules fix; a crash may leave any
// set of the not yet durable stores that is closed under that order.
//
//   hops    HOPS (Nalli et al., "An Analysis of Persistent Memory Use with
//           WHISPER", ASPLOS 2017; Haria, Mahapatra, Hill, Swift, "Efficient
//           Durability for Lock-based Code" §2): per-thread persist buffers
//           with epoch timestamps. Rules:
//             epochs        a store persists after every store of its thread
//                           before the thread's last ofence;
//             dfence        dfence makes the thread's earlier stores durable
//                           (and what they are ordered after);
//             cross-thread  a store persists after every other thread's
//                           earlier store to the same cache line (coherence
//                           passes the timestamp with the permission, §2).
//           A thread's own stores to one word need no rule: a later one is
//           in the same or a later epoch and its cross-thread predecessors
//           chain to the earlier one's, and images apply stores in program
//           order, so an image never shows the older value over the newer.
//   hops+   HOPS+ (same paper, §3): HOPS, and the hardware history that
//           replaces ATLAS's software synchronization history. Rule:
//             load-history  a load of a line whose earlier store by another
//                           thread is not durable orders every later store
//                           of the loading thread after that store (and what
//                           it is ordered after): the lock handoff a load
//                           observes orders the next critical section after
//                           the previous one, so critical sections persist
//                           in lock commit order.
//             lock-history  a lock hand-off is such a load (the lock
//                           word the last holder released): the acquirer's
//                           later stores persist after every store the
//                           releasing thread made before the release (and
//                           what they are ordered after) — "updates from
//                           CSes on different threads are made durable in
//                           commit order" (§3), with no software
//                           synchronization history. The simulator sees no
//                           loads but sees the hand-offs that
//                           persist::note_acquired / note_releasing announce
//                           (logging::Lock; a litmus test's acquire /
//                           release): on_lock.
//           Closed nesting (§3: "private caches retain exclusive
//           permissions for modified cachelines until the outermost CS
//           releases its lock", so a nested critical section's updates —
//           the lock word of an early release among them — stay invisible
//           until the outermost one releases) restricts which interleavings
//           run, not which states persist: the program provides it (the
//           logging library's HOPS+ instrumentation keeps a lock released
//           inside an outermost section locked until that section ends,
//           logging/undo_log.h; a litmus test by its program), the model
//           orders the hand-offs that happen.
//   strand  StrandWeaver's strand persistency (Gogte et al., "Relaxed
//           Persist Ordering Using Strand Persistency", ISCA 2020, §III-A):
//             barrier       Eq. 1: a persist barrier orders the stores of the
//                           strand before it before those after it;
//             new-strand    NewStrand starts a strand with no order to the
//                           stores before it (removing the rule: one strand);
//             join          Eq. 2: JoinStrand orders every earlier store of
//                           the thread before every later one; it completes
//                           when they are durable (§IV-C), so it also makes
//                           them durable;
//             spa           Eq. 3: strong persist atomicity — a store
//                           persists after every earlier store to the same
//                           8-byte word, of any strand or thread;
//             transitivity  Eq. 4: order composes through a store that a
//                           later one overwrites (removing the rule: the
//                           order of an overwritten store is not enforced).
//           (Transitivity holds in the hops models too; only strand names it
//           as a rule, after the paper.)
//
// Other verbs map onto a model's own: under hops pfence/persist_barrier
// order as ofence and psync/join_strand make durable as dfence; under strand
// pfence/ofence act as a persist barrier and psync/dfence as JoinStrand;
// new_strand is nothing under hops. pwb does nothing: a structure that
// persists with pwbs gets no guarantee here (it is checked under the
// write-back models, crash::writeback_model_names()).
//
// Unannotated stores: a line's bytes that differ from what the annotated
// stores put there (an unannotated store) may be evicted to media at any
// time, at the line's working contents, independently per line — as in the
// write-back models. Nothing else makes them durable but sim::settle.
//
// A stored range is split at 8-byte words: each word-piece persists
// atomically and unordered with its siblings (a store wider than a word is
// not failure-atomic). Order is per piece.
//
// Thread safety: as crash/model.h (a run is called under the simulator lock).
#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <map>
#include <stdexcept>
#include <unordered_map>

#include "ferrite/crash/model.h"
#include "wire.h"

namespace ferrite::crash {

namespace {

constexpr std::size_t kL = persist::kCacheLine;
constexpr std::uint64_t kEncoding = 1;  // model_data version

using wire::splitmix;

enum class Family { kHops, kStrand };

// The rules of a store model; a mutated model drops one.
struct Rules {
  Family family = Family::kHops;
  bool epochs = true, dfence = true, cross_thread = true, load_history = false, lock_history = false;
  bool barrier = true, new_strand = true, join = true, spa = true, transitivity = true;
};

// What a verb does under a model.
enum class Act { kNothing, kOrder, kNewStrand, kDurable };

Act act_of(const Rules& r, persist::Verb v) {
  using V = persist::Verb;
  switch (v) {
    case V::kPfence:
    case V::kOfence:
    case V::kPersistBarrier:
      if (r.family == Family::kHops) return r.epochs ? Act::kOrder : Act::kNothing;
      return r.barrier ? Act::kOrder : Act::kNothing;
    case V::kPsync:
    case V::kDfence:
    case V::kJoinStrand:
      if (r.family == Family::kHops) return r.dfence ? Act::kDurable : Act::kNothing;
      return r.join ? Act::kDurable : Act::kNothing;
    case V::kNewStrand:
      return r.family == Family::kStrand && r.new_strand ? Act::kNewStrand : Act::kNothing;
    default:
      return Act::kNothing;  // pwb: see the header
  }
}

// One persist: an annotated store's piece within one aligned word.
struct Persist {
  std::uint64_t offset = 0, k = 0, value = 0;  // value: `size` bytes, little end first
  std::uint32_t thread = 0;
  std::uint8_t size = 0;
  bool durable = false;
  std::vector<std::uint64_t> preds;  // ids of persists it is ordered after (direct)
};

void put_bytes(std::uint8_t* line_base, const Persist& p) {
  std::memcpy(line_base + (p.offset % kL), &p.value, p.size);
}

class StoreRun final : public ModelRun {
 public:
  StoreRun(Machine& m, const Rules& r) : m_(m), r_(r) {}

  void on_verb(const VerbEvent& e) override {
    Thread& t = thread(e.thread);
    switch (act_of(r_, e.verb)) {
      case Act::kNothing:
        return;
      case Act::kOrder:
        // PERSIST: HOPS ofence / Eq. 1 — the stores so far (of the strand)
        // are ordered before every later store (of the strand).
        if (!t.cur.empty()) {
          t.before = std::move(t.cur);
          t.cur.clear();
        }
        ++t.epoch;
        return;
      case Act::kNewStrand:
        // PERSIST: NewStrand — later stores have no order to earlier ones
        // (but for SPA, Eq. 3).
        t.before.clear();
        t.cur.clear();
        ++t.epoch;
        return;
      case Act::kDurable: {
        // PERSIST: dfence / JoinStrand (§IV-C: it completes when earlier
        // persists are durable) — every store of the thread so far, and
        // what it is ordered after.
        std::vector<std::uint64_t> roots;
        for (std::uint64_t id = first_; id < all_.size(); ++id)
          if (!all_[id].durable && all_[id].thread == e.thread) roots.push_back(id);
        make_durable(roots);
        t.before.clear();
        t.cur.clear();
        t.after.clear();
        ++t.epoch;
        return;
      }
    }
  }

  void on_store(const StoreEvent& e) override {
    if (e.kind != StoreEvent::Kind::kStored) return;  // declared words: nothing to persist
    Thread& t = thread(e.thread);
    const std::uint64_t end = e.offset + e.size;
    for (std::uint64_t w = e.offset & ~std::uint64_t{7}; w < end; w += 8) {
      Persist p;
      p.offset = std::max(w, e.offset);
      p.size = static_cast<std::uint8_t>(std::min(w + 8, end) - p.offset);
      std::memcpy(&p.value, m_.working() + p.offset, p.size);
      p.k = e.k;
      p.thread = e.thread;
      std::vector<std::uint64_t> preds = t.before;
      preds.insert(preds.end(), t.after.begin(), t.after.end());
      const std::uint64_t line = w & ~std::uint64_t{kL - 1};
      auto& on_line = line_last_[line];
      if (r_.family == Family::kHops && r_.cross_thread)
        for (const auto& [th, id] : on_line)
          if (th != e.thread) preds.push_back(id);  // PERSIST: HOPS cross-thread dependency
      if (auto it = word_last_.find(w); it != word_last_.end()) {
        // PERSIST: Eq. 3 (SPA): after the word's earlier store, of any
        // strand or thread.
        if (r_.family == Family::kStrand && r_.spa) preds.push_back(it->second);
      }
      std::erase_if(preds, [&](std::uint64_t id) { return id < first_ || all_[id].durable; });
      std::sort(preds.begin(), preds.end());
      preds.erase(std::unique(preds.begin(), preds.end()), preds.end());
      p.preds = std::move(preds);
      const std::uint64_t id = all_.size();
      all_.push_back(std::move(p));
      t.cur.push_back(id);
      word_last_[w] = id;
      on_line[e.thread] = id;
    }
  }

  void on_load(const LoadEvent& e) override {
    if (!(r_.family == Family::kHops && r_.load_history)) return;
    Thread& t = thread(e.thread);
    const std::uint64_t end = e.offset + e.size;
    for (std::uint64_t a = e.offset & ~std::uint64_t{kL - 1}; a < end; a += kL) {
      auto it = line_last_.find(a);
      if (it == line_last_.end()) continue;
      for (const auto& [th, id] : it->second)
        // PERSIST: HOPS+ hardware history — the loader's later stores
        // persist after the observed store.
        if (th != e.thread && id >= first_ && !all_[id].durable) t.after.push_back(id);
    }
  }

  void on_lock(const LockEvent& e) override {
    if (!(r_.family == Family::kHops && r_.lock_history)) return;
    Thread& t = thread(e.thread);
    if (!e.acquired) {
      // The release: what a later acquirer of this lock observes — every
      // store of the releasing thread so far (its epochs chain the older
      // ones: `before`, `cur`) and what it observed itself (`after`).
      Release& rel = released_[e.lock];
      rel.thread = e.thread;
      rel.ids = t.before;
      rel.ids.insert(rel.ids.end(), t.cur.begin(), t.cur.end());
      rel.ids.insert(rel.ids.end(), t.after.begin(), t.after.end());
      std::erase_if(rel.ids, [&](std::uint64_t id) { return id < first_ || all_[id].durable; });
      return;
    }
    auto it = released_.find(e.lock);
    if (it == released_.end() || it->second.thread == e.thread) return;
    // PERSIST: HOPS+ hardware history (§3): the critical section that
    // acquired the lock persists after the one that released it (lock
    // commit order).
    for (auto id : it->second.ids)
      if (id >= first_ && !all_[id].durable) t.after.push_back(id);
  }

  void settle() override {
    released_.clear();
    all_.clear();
    first_ = 0;
    threads_.clear();
    word_last_.clear();
    line_last_.clear();
  }

  std::vector<PendingWriteBack> pending() const override { return {}; }

  // model_data: version, flags (bit 0: transitivity), n, then per pending
  // persist: offset, k, thread | size << 32, value, npreds, preds (indices
  // into this list).
  void capture(CrashState& cs) const override {
    cs.pending.clear();
    cs.epochs.clear();
    for (const auto& t : threads_) cs.epochs.push_back(t.epoch);
    std::unordered_map<std::uint64_t, std::uint64_t> index;
    std::vector<std::uint64_t> ids;
    for (std::uint64_t id = first_; id < all_.size(); ++id)
      if (!all_[id].durable) {
        index[id] = ids.size();
        ids.push_back(id);
      }
    auto& d = cs.model_data;
    d = {kEncoding, r_.transitivity ? 1u : 0u, ids.size()};
    for (auto id : ids) {
      const Persist& p = all_[id];
      d.push_back(p.offset);
      d.push_back(p.k);
      d.push_back(p.thread | (std::uint64_t{p.size} << 32));
      d.push_back(p.value);
      std::vector<std::uint64_t> pr;
      for (auto q : p.preds)
        if (auto it = index.find(q); it != index.end()) pr.push_back(it->second);
      d.push_back(pr.size());
      d.insert(d.end(), pr.begin(), pr.end());
      cs.lines.push_back(p.offset & ~std::uint64_t{kL - 1});
    }
  }

  void capture_lines(CrashState& cs) const override { cs.declared.assign(cs.lines.size(), 0); }

 private:
  struct Thread {
    std::uint32_t epoch = 0;
    std::vector<std::uint64_t> before;  // ordered before every later store (last closed epoch / strand segment)
    std::vector<std::uint64_t> cur;     // stores since the last order point
    std::vector<std::uint64_t> after;   // hops+: observed stores of other threads
  };

  struct Release {
    std::uint32_t thread = 0;
    std::vector<std::uint64_t> ids;  // the releaser's pending stores then
  };

  Thread& thread(std::uint32_t i) {
    if (i >= threads_.size()) threads_.resize(i + 1);
    return threads_[i];
  }

  // The roots and everything they are ordered after reach the media image,
  // in k order.
  void make_durable(const std::vector<std::uint64_t>& roots) {
    std::vector<std::uint64_t> stack = roots, set;
    while (!stack.empty()) {
      const std::uint64_t id = stack.back();
      stack.pop_back();
      Persist& p = all_[id];
      if (p.durable) continue;
      p.durable = true;
      set.push_back(id);
      for (auto q : p.preds)
        if (!all_[q].durable) stack.push_back(q);
    }
    std::sort(set.begin(), set.end());
    for (auto id : set) {
      const Persist& p = all_[id];
      const std::uint64_t line = p.offset & ~std::uint64_t{kL - 1};
      Line l;
      std::memcpy(l.data(), m_.media() + line, kL);
      put_bytes(l.data(), p);
      m_.write_media(line, l);
    }
    while (first_ < all_.size() && all_[first_].durable) ++first_;
  }

  Machine& m_;
  Rules r_;
  std::vector<Persist> all_;  // by id; ids below first_ are all durable
  std::uint64_t first_ = 0;
  std::vector<Thread> threads_;
  std::unordered_map<std::uint64_t, std::uint64_t> word_last_;  // word -> last persist id
  std::unordered_map<std::uint64_t, std::map<std::uint32_t, std::uint64_t>> line_last_;  // line -> thread -> last id
  std::unordered_map<std::uint64_t, Release> released_;  // hops+: lock -> its last release
};

// ------------------------------------------------------------- the images

// Images: a set D of the pending persists, closed under their order (with
// transitivity: every member's predecessors are members; without: only the
// predecessors of a member whose value the image shows), applied to media
// in k order; and any set of the lines with unannotated bytes evicted (those
// bytes take their working contents).
class StoreSpace final : public ImageSpace {
 public:
  StoreSpace(const CrashState& cs, const ImageOptions& opt) : cs_(cs) {
    const auto& d = cs.model_data;
    if (d.size() < 3 || d[0] != kEncoding) throw std::invalid_argument("store model: malformed crash state");
    transitive_ = d[1] & 1;
    const std::size_t n = d[2];
    std::size_t at = 3;
    auto next = [&]() {
      if (at >= d.size()) throw std::invalid_argument("store model: truncated crash state");
      return d[at++];
    };
    ps_.resize(n);
    for (auto& p : ps_) {
      p.offset = next();
      p.k = next();
      const std::uint64_t ts = next();
      p.thread = static_cast<std::uint32_t>(ts);
      p.size = static_cast<std::uint8_t>(ts >> 32);
      p.value = next();
      p.preds.resize(next());
      for (auto& q : p.preds) {
        q = next();
        if (q >= n) throw std::invalid_argument("store model: malformed predecessor");
      }
      p.line = index_of(p.offset & ~std::uint64_t{kL - 1});
    }
    // Shadow: media + every pending persist; bytes of working that differ
    // from it were stored unannotated.
    std::vector<Line> shadow = cs.media;
    for (const auto& p : ps_)
      if (p.line < shadow.size()) put_bytes(shadow[p.line].data(), p);
    for (std::size_t i = 0; i < cs.lines.size(); ++i)
      if (shadow[i] != cs.working[i]) {
        Evict ev;
        ev.line = i;
        for (std::size_t b = 0; b < kL; ++b) ev.mask[b] = shadow[i][b] != cs.working[i][b];
        evict_.push_back(ev);
      }
    // The closed sets, when few.
    const std::uint64_t cap = opt.enumerate_max;
    const std::size_t ev_bits = evict_.size();
    bool few = ev_bits < 63 && (std::uint64_t{1} << ev_bits) <= cap;
    if (few) {
      const std::uint64_t per = cap >> ev_bits;
      few = collect(per);
    }
    std::vector<char> lines_touched(cs.lines.size(), 0);
    for (const auto& p : ps_)
      if (p.line < lines_touched.size()) lines_touched[p.line] = 1;
    for (const auto& ev : evict_) lines_touched[ev.line] = 1;
    for (auto t : lines_touched) optional_lines += t != 0;
    if (few) {
      choices = static_cast<double>(sets_.size()) * static_cast<double>(std::uint64_t{1} << ev_bits);
      complete = true;
      possible = choices;
    } else {
      choices = std::ldexp(1.0, static_cast<int>(std::min<std::size_t>(n + ev_bits, 4000)));
      complete = false;
      possible = choices;
    }
    possible_exact = false;
  }

  std::vector<Line> enumerated(std::uint64_t c, std::string* how) const override {
    const std::uint64_t nsets = sets_.empty() ? 1 : sets_.size();
    const std::vector<char>* set = sets_.empty() ? nullptr : &sets_[c % nsets];
    const std::uint64_t evmask = c / nsets;
    std::vector<char> none(ps_.size(), 0);
    return build(set != nullptr ? *set : none, evmask, how, "");
  }

  std::vector<Line> sampled(int index, std::uint64_t seed, std::string* how) const override {
    std::uint64_t rng = seed ^ (cs_.k * 0x9e3779b97f4a7c15ull) ^ (static_cast<std::uint64_t>(index) << 32) ^ 0x73746f72;
    splitmix(rng);
    const std::uint64_t q = 1 + splitmix(rng) % 7;  // of 8
    std::vector<char> in(ps_.size(), 0);
    for (std::size_t i = 0; i < ps_.size(); ++i) in[i] = splitmix(rng) % 8 < q;
    // Close downward (predecessors have smaller indices: walk backwards).
    for (std::size_t i = ps_.size(); i-- > 0;)
      if (in[i])
        for (auto p : ps_[i].preds) in[p] = 1;
    std::uint64_t evmask = 0;
    for (std::size_t j = 0; j < evict_.size() && j < 64; ++j)
      if (splitmix(rng) % 8 < q) evmask |= std::uint64_t{1} << j;
    return build(in, evmask, how, "random: ");
  }

 private:
  struct P : Persist {
    std::size_t line = 0;  // index into cs.lines
  };
  struct Evict {
    std::size_t line = 0;
    std::array<bool, kL> mask{};
  };

  std::size_t index_of(std::uint64_t line) const {
    return static_cast<std::size_t>(std::lower_bound(cs_.lines.begin(), cs_.lines.end(), line) - cs_.lines.begin());
  }

  // Does D respect the order? With transitivity every member's
  // predecessors are members (D is closed); without, only those of members
  // whose value survives (no later member writes the same word).
  bool respects(const std::vector<char>& in) const {
    for (std::size_t i = 0; i < ps_.size(); ++i) {
      if (!in[i]) continue;
      if (!transitive_) {
        bool shown = true;
        for (std::size_t j = i + 1; j < ps_.size() && shown; ++j)
          if (in[j] && ps_[j].offset / 8 == ps_[i].offset / 8) shown = false;
        if (!shown) continue;
      }
      for (auto p : ps_[i].preds)
        if (!in[p]) return false;
    }
    return true;
  }

  // Every respecting D, if at most `cap` (depth-first over persists in
  // index order; a closed set decides each persist after its predecessors).
  bool collect(std::uint64_t cap) {
    const std::size_t n = ps_.size();
    // n persists have at least n + 1 closed sets (a chain has exactly that):
    // too many before looking (and the recursion stays shallow).
    if (n + 1 > cap) return false;
    if (!transitive_) {
      if (n > 20) return false;
      for (std::uint64_t m = 0; m < (std::uint64_t{1} << n); ++m) {
        std::vector<char> in(n);
        for (std::size_t i = 0; i < n; ++i) in[i] = (m >> i) & 1;
        if (!respects(in)) continue;
        if (sets_.size() >= cap) return false;
        sets_.push_back(std::move(in));
      }
      return true;
    }
    std::vector<char> in(n, 0);
    bool ok = true;
    auto rec = [&](auto&& self, std::size_t i) -> void {
      if (!ok) return;
      if (i == n) {
        if (sets_.size() >= cap) {
          ok = false;
          return;
        }
        sets_.push_back(in);
        return;
      }
      in[i] = 0;
      self(self, i + 1);
      bool can = true;
      for (auto p : ps_[i].preds) can = can && in[p];
      if (can) {
        in[i] = 1;
        self(self, i + 1);
        in[i] = 0;
      }
    };
    rec(rec, 0);
    if (!ok) sets_.clear();
    return ok;
  }

  std::vector<Line> build(const std::vector<char>& in, std::uint64_t evmask, std::string* how,
                          const char* prefix) const {
    std::vector<Line> val = cs_.media;
    std::size_t applied = 0, evicted = 0;
    for (std::size_t i = 0; i < ps_.size(); ++i)  // k order: persists were recorded in it
      if (in[i] && ps_[i].line < val.size()) {
        put_bytes(val[ps_[i].line].data(), ps_[i]);
        ++applied;
      }
    for (std::size_t j = 0; j < evict_.size() && j < 64; ++j) {
      if (!(evmask & (std::uint64_t{1} << j))) continue;
      const Evict& ev = evict_[j];
      for (std::size_t b = 0; b < kL; ++b)
        if (ev.mask[b]) val[ev.line][b] = cs_.working[ev.line][b];
      ++evicted;
    }
    if (how != nullptr)
      *how = std::string(prefix) + cs_.model + ": " + std::to_string(applied) + "/" + std::to_string(ps_.size()) +
             " stores persisted, " + std::to_string(evicted) + "/" + std::to_string(evict_.size()) +
             " unannotated lines evicted";
    return val;
  }

  const CrashState& cs_;
  bool transitive_ = true;
  std::vector<P> ps_;
  std::vector<Evict> evict_;
  std::vector<std::vector<char>> sets_;
};

class StoreModel final : public Model {
 public:
  StoreModel(std::string name, std::string summary, Rules r)
      : name_(std::move(name)), summary_(std::move(summary)), r_(r) {}
  std::string_view name() const override { return name_; }
  std::string_view summary() const override { return summary_; }
  std::unique_ptr<ModelRun> start(Machine& m) const override { return std::make_unique<StoreRun>(m, r_); }
  std::unique_ptr<ImageSpace> space(const CrashState& cs, const ImageOptions& opt) const override {
    return std::make_unique<StoreSpace>(cs, opt);
  }
  std::vector<std::string> rules() const override {
    if (r_.family == Family::kStrand) return {"barrier", "new-strand", "join", "spa", "transitivity"};
    std::vector<std::string> v{"epochs", "dfence", "cross-thread"};
    if (r_.load_history) v.push_back("load-history");
    if (r_.lock_history) v.push_back("lock-history");
    return v;
  }
  const Rules& rules_struct() const { return r_; }

 private:
  std::string name_, summary_;
  Rules r_;
};

Rules hops_rules(bool plus) {
  Rules r;
  r.family = Family::kHops;
  r.load_history = plus;
  r.lock_history = plus;
  return r;
}

Rules strand_rules() {
  Rules r;
  r.family = Family::kStrand;
  return r;
}

}  // namespace

namespace models {
const Model& hops() {
  static const StoreModel m("hops",
                            "HOPS persist buffers: annotated stores persist; ofence orders a thread's epochs, dfence "
                            "makes its stores durable, a store persists after other threads' earlier stores to its line",
                            hops_rules(false));
  return m;
}
const Model& hops_plus() {
  static const StoreModel m("hops+",
                            "HOPS+: hops and the hardware history: a load of another thread's pending store, or a lock "
                            "hand-off, orders the loader's (acquirer's) later stores after it (critical sections "
                            "persist in lock commit order)",
                            hops_rules(true));
  return m;
}
const Model& strand() {
  static const StoreModel m("strand",
                            "StrandWeaver strand persistency (Eqs. 1-4): persist barriers order a strand, NewStrand "
                            "starts an unordered one, JoinStrand orders and makes durable, SPA orders same-word stores",
                            strand_rules());
  return m;
}
}  // namespace models

std::unique_ptr<Model> make_model_without(std::string_view model, std::string_view rule) {
  const Model* m = find_model(model);
  const auto* sm = dynamic_cast<const StoreModel*>(m);
  if (sm == nullptr) throw std::invalid_argument("no store model '" + std::string(model) + "' to remove a rule from");
  Rules r = sm->rules_struct();
  bool* flag = nullptr;
  const std::string_view names[] = {"epochs", "dfence", "cross-thread", "load-history", "lock-history",
                                    "barrier", "new-strand", "join", "spa", "transitivity"};
  bool* flags[] = {&r.epochs, &r.dfence, &r.cross_thread, &r.load_history, &r.lock_history,
                   &r.barrier, &r.new_strand, &r.join, &r.spa, &r.transitivity};
  const auto own = sm->rules();
  for (std::size_t i = 0; i < std::size(names); ++i)
    if (names[i] == rule && std::find(own.begin(), own.end(), std::string(rule)) != own.end()) flag = flags[i];
  if (flag == nullptr) {
    std::string known;
    for (const auto& x : own) known += (known.empty() ? "" : ", ") + x;
    throw std::invalid_argument("model '" + std::string(model) + "' has no rule '" + std::string(rule) +
                                "' (rules: " + known + ")");
  }
  *flag = false;
  return std::make_unique<StoreModel>(std::string(sm->name()),
                                      std::string(sm->summary()) + " [without " + std::string(rule) + "]", r);
}

}  // namespace ferrite::crash
