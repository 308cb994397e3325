// The write-back models (crash/model.h, docs/crash.md §1): "abstract" (the
// PBcomb paper's pwb/pfence/psync) and "x86" (Px86: clwb + sfence). Both
// keep the same state per pool — pending write-backs per thread with fence
// epochs, per-line coherence, the words of declared multi-word stores — and
// differ in what a fence does and in the images they allow.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <map>
#include <set>
#include <unordered_map>

#include "ferrite/crash/model.h"
#include "wire.h"

namespace ferrite::crash {

namespace {

constexpr std::size_t kL = persist::kCacheLine;
constexpr int kWords = static_cast<int>(kL / 8);

using wire::splitmix;

std::string hex(std::uint64_t v) {
  static const char* d = "0123456789abcdef";
  std::string s;
  do {
    s.insert(s.begin(), d[v & 15]);
    v >>= 4;
  } while (v != 0);
  return "0x" + s;
}

// Words (bit w) in which two lines differ.
std::uint8_t differing_words(const Line& a, const Line& b) {
  std::uint8_t m = 0;
  for (int w = 0; w < kWords; ++w)
    if (std::memcmp(a.data() + 8 * w, b.data() + 8 * w, 8) != 0) m = static_cast<std::uint8_t>(m | (1u << w));
  return m;
}

// `to` with the words in `mask` taken from `from`.
Line mix(const Line& to, const Line& from, std::uint8_t mask) {
  Line r = to;
  for (int w = 0; w < kWords; ++w)
    if (mask & (1u << w)) std::memcpy(r.data() + 8 * w, from.data() + 8 * w, 8);
  return r;
}

std::size_t line_index(const CrashState& cs, std::uint64_t offset) {
  return static_cast<std::size_t>(std::lower_bound(cs.lines.begin(), cs.lines.end(), offset) - cs.lines.begin());
}

std::uint8_t declared_of(const CrashState& cs, std::size_t i) { return i < cs.declared.size() ? cs.declared[i] : 0; }

// Pending write-back indices, ascending k (captured states already are).
std::vector<std::size_t> by_k(const CrashState& cs) {
  std::vector<std::size_t> v(cs.pending.size());
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = i;
  std::stable_sort(v.begin(), v.end(), [&](std::size_t a, std::size_t b) { return cs.pending[a].k < cs.pending[b].k; });
  return v;
}

// ------------------------------------------------------------ the state machine

// What a verb (other than pwb) does to the issuing thread's write-backs.
enum class Act { kNothing, kOrder, kDurable };

class WriteBackRun final : public ModelRun {
 public:
  WriteBackRun(Machine& m, Act (*act)(persist::Verb)) : m_(m), act_(act) {}

  void on_verb(const VerbEvent& e) override {
    Thread& t = thread(e.thread);
    if (e.verb == persist::Verb::kPwb) {
      PendingWriteBack w;
      w.offset = e.offset;
      w.k = e.k;
      w.thread = e.thread;
      w.epoch = t.epoch;
      if (auto it = declared_.find(e.offset); it != declared_.end()) {
        w.declared = it->second;
        declared_.erase(it);
      }
      std::memcpy(w.data.data(), e.line, kL);
      t.pending.push_back(w);
      return;
    }
    switch (act_(e.verb)) {
      case Act::kNothing:
        return;
      case Act::kOrder:
        ++t.epoch;
        return;
      case Act::kDurable:
        apply(t);
        ++t.epoch;
        return;
    }
  }

  void on_store(const StoreEvent& e) override {
    // An annotated store is a plain store here (its pwb makes it durable);
    // one wider than a word is not failure-atomic: declared, so it may tear.
    if (e.kind == StoreEvent::Kind::kStored && e.size <= 8) return;
    const std::uint64_t end = e.offset + e.size;
    for (std::uint64_t a = e.offset & ~std::uint64_t{kL - 1}; a < end; a += kL) {
      const std::uint64_t lo = std::max(a, e.offset) - a, hi = std::min(a + kL, end) - a;
      std::uint8_t bits = 0;
      for (std::uint64_t w = lo / 8; w <= (hi - 1) / 8; ++w) bits = static_cast<std::uint8_t>(bits | (1u << w));
      declared_[a] |= bits;
    }
  }

  void settle() override {
    for (auto& t : threads_) {
      t.pending.clear();
      t.epoch = 0;
    }
    declared_.clear();
  }

  std::vector<PendingWriteBack> pending() const override {
    std::vector<PendingWriteBack> all;
    for (const auto& t : threads_) all.insert(all.end(), t.pending.begin(), t.pending.end());
    std::sort(all.begin(), all.end(), [](const auto& a, const auto& b) { return a.k < b.k; });
    return all;
  }

  void capture(CrashState& cs) const override {
    cs.pending = pending();
    cs.epochs.clear();
    for (const auto& t : threads_) cs.epochs.push_back(t.epoch);
    for (const auto& p : cs.pending) cs.lines.push_back(p.offset);
  }

  void capture_lines(CrashState& cs) const override {
    cs.declared.assign(cs.lines.size(), 0);
    if (declared_.empty()) return;
    for (std::size_t i = 0; i < cs.lines.size(); ++i)
      if (auto it = declared_.find(cs.lines[i]); it != declared_.end()) cs.declared[i] = it->second;
  }

 private:
  struct Thread {
    std::uint32_t epoch = 0;
    std::vector<PendingWriteBack> pending;
  };

  Thread& thread(std::uint32_t i) {
    if (i >= threads_.size()) threads_.resize(i + 1);
    return threads_[i];
  }

  // The thread's pending write-backs reach the media image, in k order (per
  // line the newest copy lands last).
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
  void apply(Thread& t) {
    if (t.pending.empty()) return;
    std::map<std::uint64_t, std::uint64_t> newest;  // line offset -> k of the copy applied
    for (const auto& p : t.pending) {
      m_.write_media(p.offset, p.data);
      auto [it, fresh] = newest.emplace(p.offset, p.k);
      if (!fresh && p.k > it->second) it->second = p.k;
    }
    t.pending.clear();
    for (auto& other : threads_) {
      if (&other == &t || other.pending.empty()) continue;
      std::erase_if(other.pending, [&](const PendingWriteBack& w) {
        auto it = newest.find(w.offset);
        return it != newest.end() && w.k < it->second;
      });
    }
  }

  Machine& m_;
  Act (*act_)(persist::Verb);
  std::vector<Thread> threads_;
  std::unordered_map<std::uint64_t, std::uint8_t> declared_;  // line -> words declared since its last pwb
};

// -------------------------------------------------------------- abstract

Act abstract_act(persist::Verb v) {
  using V = persist::Verb;
  switch (v) {
    case V::kPfence:
    case V::kOfence:
    case V::kPersistBarrier:
      return Act::kOrder;
    case V::kPsync:
    case V::kDfence:
    case V::kJoinStrand:
      return Act::kDurable;
    default:
      return Act::kNothing;
  }
}

// Images: per thread an epoch E (write-backs of epochs < E applied, any
// subset of epoch E), per line the newest applied copy wins, evictions of
// dirty lines only with E = current for every thread, tearing of lines
// whose value comes from an optional source (random images only).
//
// Enumeration: choices A + B.
//   A: per thread, an option E and per line of its epoch-E write-backs
//      "none or the j-th copy" (a subset's image depends only on the newest
//      copy it holds per line), no eviction;
//   B: E = current for every thread (as in A) and a non-empty set of dirty
//      lines evicted (at their working contents).
class AbstractSpace final : public ImageSpace {
 public:
  AbstractSpace(const CrashState& cs, const ImageOptions& opt) : cs_(cs), tearing_(opt.tearing), order_(by_k(cs)) {
    const std::size_t n = cs.lines.size();
    const auto& order = order_;
    pline_.resize(cs.pending.size());
    for (std::size_t j = 0; j < cs.pending.size(); ++j) pline_[j] = line_index(cs, cs.pending[j].offset);
    std::map<std::uint32_t, std::vector<std::size_t>> per_thread;  // ascending k
    for (auto j : order) per_thread[cs.pending[j].thread].push_back(j);
    a_ = 1;
    double cur_product = 1;
    for (auto& [t, idx] : per_thread) {
      Thread th;
      th.thread = t;
      std::set<std::uint32_t> eps;
      std::uint32_t last = 0;
      for (auto j : idx) {
        eps.insert(cs.pending[j].epoch);
        last = std::max(last, cs.pending[j].epoch);
      }
      th.cur = t < cs.epochs.size() ? cs.epochs[t] : last;
      eps.insert(th.cur);
      for (auto e : eps) {
        Option o;
        o.epoch = e;
        std::map<std::size_t, std::vector<std::size_t>> groups;  // line -> copies, ascending k
        for (auto j : idx) {
          if (cs.pending[j].epoch < e) o.mandatory.push_back(j);
          if (cs.pending[j].epoch == e) groups[pline_[j]].push_back(j);
        }
        o.factor = 1;
        for (auto& [line, copies] : groups) {
          o.factor *= static_cast<double>(copies.size() + 1);
          o.groups.push_back(std::move(copies));
        }
        if (e == th.cur) th.cur_opt = th.opts.size();
        th.total += o.factor;
        th.opts.push_back(std::move(o));
      }
      a_ *= th.total;
      cur_product *= th.opts[th.cur_opt].factor;
      threads_.push_back(std::move(th));
    }
    for (std::size_t i = 0; i < n; ++i)
      if (i < cs.dirty.size() && cs.dirty[i]) dirty_.push_back(i);
    b_ = cur_product * (std::ldexp(1.0, static_cast<int>(std::min<std::size_t>(dirty_.size(), 4000))) - 1);
    choices = a_ + b_;

    // Per line: the contents it may take (media, pending copies, working if
    // dirty), for the optional-line count, tearability and the bound.
    std::vector<std::vector<Line>> cands(n);
    for (std::size_t i = 0; i < n; ++i) cands[i].push_back(cs.media[i]);
    for (std::size_t j = 0; j < cs.pending.size(); ++j)
      if (pline_[j] < n) cands[pline_[j]].push_back(cs.pending[j].data);
    for (auto i : dirty_) cands[i].push_back(cs.working[i]);
    bool tearable = false;
    double untorn = 1, torn = 1;
    for (auto& c : cands) {
      std::sort(c.begin(), c.end());
      c.erase(std::unique(c.begin(), c.end()), c.end());
      if (c.size() > 1) ++optional_lines;
      untorn *= static_cast<double>(c.size());
      for (int w = 0; w < kWords; ++w) {
        std::set<std::uint64_t> vals;
        for (const auto& l : c) {
          std::uint64_t v;
          std::memcpy(&v, l.data() + 8 * w, 8);
          vals.insert(v);
        }
        torn *= static_cast<double>(vals.size());
      }
      if (!tearable && c.size() > 64) tearable = true;
      for (std::size_t x = 0; !tearable && x < c.size(); ++x)
        for (std::size_t y = x + 1; !tearable && y < c.size(); ++y)
          if (std::popcount(static_cast<unsigned>(differing_words(c[x], c[y]))) >= 2) tearable = true;
    }
    complete = !(tearing_ && tearable);
    possible = complete ? std::min(choices + 1, untorn) : torn;  // + 1: image 1 may lie outside A + B
    possible_exact = false;
    // Torn images enumerated too when the untorn ones are few enough to be
    // enumerated: choice c then stands for tears(c) images, one per subset
    // of the words in which each optional-source line differs from its
    // value without that source. prefix_[c] = images before choice c.
    if (!complete && optional_lines <= opt.enumerate_lines && choices <= static_cast<double>(opt.enumerate_max)) {
      const auto nc = static_cast<std::uint64_t>(choices);
      double total = 0;
      prefix_.reserve(nc + 1);
      for (std::uint64_t c = 0; c < nc; ++c) {
        prefix_.push_back(static_cast<std::uint64_t>(total));
        const Realized r = realize(decode(c));
        int bits = 0;
        for (std::size_t i = 0; i < n; ++i)
          if (r.optional[i]) bits += std::popcount(static_cast<unsigned>(differing_words(r.val[i], r.base[i])));
        total += std::ldexp(1.0, bits);
      }
      prefix_.push_back(static_cast<std::uint64_t>(std::min(total, 0x1p62)));
      if (total <= 0x1p62) {
        choices = total;
        complete = true;
        possible = std::min(total + 1, torn);
      } else {
        prefix_.clear();
      }
    }
  }

  std::vector<Line> enumerated(std::uint64_t c, std::string* how) const override {
    std::uint64_t tear = 0;
    if (!prefix_.empty()) {  // torn images enumerated: c = (untorn choice, tear pattern)
      const auto it = std::upper_bound(prefix_.begin(), prefix_.end(), c);
      const auto u = static_cast<std::uint64_t>(it - prefix_.begin()) - 1;
      tear = c - prefix_[u];
      c = u;
    }
    const Pick pick = decode(c);
    Realized r = realize(pick);
    std::size_t torn = 0;
    if (!prefix_.empty()) {
      for (std::size_t i = 0; i < r.val.size(); ++i) {
        if (!r.optional[i]) continue;
        const std::uint8_t dm = differing_words(r.val[i], r.base[i]);
        std::uint8_t mask = 0;
        for (int w = 0; w < kWords; ++w) {
          if (!(dm & (1u << w))) continue;
          if (tear & 1) mask = static_cast<std::uint8_t>(mask | (1u << w));
          tear >>= 1;
        }
        if (mask != 0) {
          r.val[i] = mix(r.val[i], r.base[i], mask);
          ++torn;
        }
      }
    }
    if (how != nullptr) {
      std::string es;
      for (std::size_t t = 0; t < threads_.size(); ++t)
        es += (es.empty() ? "" : ",") + std::to_string(pick.chosen[t]) + "/" + std::to_string(threads_[t].cur);
      *how = "E=[" + es + "] " + std::to_string(pick.napplied) + "/" + std::to_string(cs_.pending.size()) +
             " pending applied, " + std::to_string(pick.evicted.size()) + "/" + std::to_string(dirty_.size()) +
             " dirty evicted, " + std::to_string(torn) + " torn";
    }
    return std::move(r.val);
  }

  // The random images of the original simulator, unchanged (replays of
  // abstract campaigns keep their meaning).
  std::vector<Line> sampled(int index, std::uint64_t seed, std::string* how) const override {
    const CrashState& cs = cs_;
    const std::size_t n = cs.lines.size();
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
      const std::size_t i = line_index(cs, p.offset);
      if (i >= n) continue;
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
    if (tearing_) {
      for (std::size_t i = 0; i < n; ++i) {
        if (!optional_src[i] || splitmix(rng) % 4 != 0) continue;
        const std::uint64_t mask = splitmix(rng);
        for (std::size_t w = 0; w < kL / 8; ++w)
          if (mask & (1ull << w)) std::memcpy(val[i].data() + 8 * w, base_val[i].data() + 8 * w, 8);
        ++torn;
      }
    }
    if (how != nullptr)
      *how = "random: E=[" + es + "] " + std::to_string(applied) + "/" + std::to_string(cs.pending.size()) +
             " pending applied, " + std::to_string(evicted) + "/" + std::to_string(cs.dirty_count()) +
             " dirty evicted, " + std::to_string(torn) + " torn";
    return val;
  }

 private:
  struct Option {
    std::uint32_t epoch = 0;
    std::vector<std::size_t> mandatory;           // pending indices of epochs < epoch
    std::vector<std::vector<std::size_t>> groups;  // epoch-`epoch` copies per line, ascending k
    double factor = 1;                             // prod (copies + 1)
  };
  struct Thread {
    std::uint32_t thread = 0, cur = 0;
    std::vector<Option> opts;  // ascending epoch
    std::size_t cur_opt = 0;
    double total = 0;          // sum of factors
  };
  // Choice c decoded: which write-backs are applied (and which of them
  // mandatory), which dirty lines evicted.
  struct Pick {
    std::vector<char> applied, mandatory;  // per pending write-back
    std::vector<std::size_t> evicted;      // line indices
    std::vector<std::uint32_t> chosen;     // per thread: E
    std::size_t napplied = 0;
  };
  // Its line values: val (the image), base (without the optional sources),
  // optional (the value comes from an optional source: may tear).
  struct Realized {
    std::vector<Line> val, base;
    std::vector<char> optional;
  };

  Pick decode(std::uint64_t c) const {
    Pick p;
    p.applied.assign(cs_.pending.size(), 0);
    p.mandatory.assign(cs_.pending.size(), 0);
    p.chosen.resize(threads_.size());
    auto take = [&](const Option& o, std::uint64_t d) {
      for (auto j : o.mandatory) p.applied[j] = p.mandatory[j] = 1;
      for (const auto& g : o.groups) {
        const std::uint64_t m = g.size() + 1, sel = d % m;
        d /= m;
        if (sel > 0) p.applied[g[sel - 1]] = 1;
      }
    };
    const auto a = static_cast<std::uint64_t>(a_);
    if (c < a) {
      for (std::size_t t = 0; t < threads_.size(); ++t) {
        const auto total = static_cast<std::uint64_t>(threads_[t].total);
        std::uint64_t d = c % total;
        c /= total;
        std::size_t o = 0;
        while (d >= static_cast<std::uint64_t>(threads_[t].opts[o].factor))
          d -= static_cast<std::uint64_t>(threads_[t].opts[o++].factor);
        p.chosen[t] = threads_[t].opts[o].epoch;
        take(threads_[t].opts[o], d);
      }
    } else {
      c -= a;
      for (std::size_t t = 0; t < threads_.size(); ++t) {
        const Option& o = threads_[t].opts[threads_[t].cur_opt];
        const auto f = static_cast<std::uint64_t>(o.factor);
        p.chosen[t] = o.epoch;
        take(o, c % f);
        c /= f;
      }
      const std::uint64_t mask = c + 1;
      for (std::size_t j = 0; j < dirty_.size() && j < 64; ++j)
        if (mask & (std::uint64_t{1} << j)) p.evicted.push_back(dirty_[j]);
    }
    for (auto x : p.applied) p.napplied += x != 0;
    return p;
  }

  // As the random images do: per line the newest applied copy (by k) wins;
  // the line is an optional source unless that copy is mandatory; an
  // evicted line takes its working contents over whatever it had.
  Realized realize(const Pick& p) const {
    Realized r;
    r.val = cs_.media;
    r.base = cs_.media;
    r.optional.assign(cs_.lines.size(), 0);
    for (auto j : order_) {
      if (!p.applied[j] || pline_[j] >= r.val.size()) continue;
      const std::size_t i = pline_[j];
      r.val[i] = cs_.pending[j].data;
      r.optional[i] = p.mandatory[j] ? 0 : 1;
      if (p.mandatory[j]) r.base[i] = cs_.pending[j].data;
    }
    for (auto i : p.evicted) {
      r.base[i] = r.val[i];
      r.val[i] = cs_.working[i];
      r.optional[i] = 1;
    }
    return r;
  }

  const CrashState& cs_;
  bool tearing_;
  std::vector<std::size_t> order_;  // pending indices, ascending k
  std::vector<std::uint64_t> prefix_;  // torn enumeration: images before each untorn choice (+ total)
  std::vector<std::size_t> pline_;  // pending -> line index
  std::vector<Thread> threads_;
  std::vector<std::size_t> dirty_;  // line indices
  double a_ = 1, b_ = 0;
};

class AbstractModel final : public Model {
 public:
  std::string_view name() const override { return "abstract"; }
  std::string_view summary() const override {
    return "pwb/pfence/psync of the PBcomb paper: pfence orders a thread's write-backs, psync makes them durable; "
           "lines tear at any 8-byte word";
  }
  std::unique_ptr<ModelRun> start(Machine& m) const override { return std::make_unique<WriteBackRun>(m, &abstract_act); }
  std::unique_ptr<ImageSpace> space(const CrashState& cs, const ImageOptions& opt) const override {
    return std::make_unique<AbstractSpace>(cs, opt);
  }
};

// ------------------------------------------------------------------- x86

Act x86_act(persist::Verb v) {
  // sfence waits for earlier clwb/clflushopt: every fence makes the thread's
  // write-backs durable (ofence/persist_barrier/dfence/join_strand map to
  // sfence on x86; new_strand to nothing).
  return v == persist::Verb::kNewStrand ? Act::kNothing : Act::kDurable;
}

// Images: per line independently (no fence leaves an ordered-but-not-
// durable write-back behind, and caches evict any dirty line at any time),
// one of: media, a pending copy, the working contents — the prefixes of the
// line's store sequence the simulator knows. With tearing, a value may also
// keep the older value (the previous one in that list) in words covered by a
// store declared multi-word between the two.
class X86Space final : public ImageSpace {
 public:
  X86Space(const CrashState& cs, const ImageOptions& opt) : cs_(cs) {
    const std::size_t n = cs.lines.size();
    values_.resize(n);
    names_.resize(n);
    cands_.resize(n);
    std::vector<std::vector<std::size_t>> copies(n);
    for (auto j : by_k(cs)) {
      const std::size_t i = line_index(cs, cs.pending[j].offset);
      if (i < n) copies[i].push_back(j);
    }
    choices = 1;
    for (std::size_t i = 0; i < n; ++i) {
      std::set<Line> seen;
      auto add = [&](const Line& l, std::string name) {
        if (!seen.insert(l).second) return;
        values_[i].push_back(l);
        names_[i].push_back(std::move(name));
      };
      add(cs.media[i], "media");
      cands_[i].push_back({cs.media[i], cs.media[i], 0, "media"});
      Line prev = cs.media[i];
      auto step = [&](const Line& cur, std::uint8_t declared, const std::string& name) {
        add(cur, name);
        const std::uint8_t m = opt.tearing ? static_cast<std::uint8_t>(declared & differing_words(cur, prev)) : 0;
        // Every non-empty subset of the declared words keeps its older value.
        for (unsigned s = m; s != 0; s = (s - 1) & m) add(mix(cur, prev, static_cast<std::uint8_t>(s)), name + " torn");
        cands_[i].push_back({cur, prev, m, name});
        prev = cur;
      };
      for (auto j : copies[i]) step(cs.pending[j].data, cs.pending[j].declared, "pwb@" + std::to_string(cs.pending[j].k));
      step(cs.working[i], declared_of(cs, i), "working");
      if (values_[i].size() > 1) {
        ++optional_lines;
        optional_.push_back(i);
        choices *= static_cast<double>(values_[i].size());
      }
    }
    complete = true;
    possible = choices;
    possible_exact = true;
  }

  std::vector<Line> enumerated(std::uint64_t c, std::string* how) const override {
    std::vector<std::size_t> pick(optional_.size());
    for (std::size_t o = 0; o < optional_.size(); ++o) {
      const std::uint64_t m = values_[optional_[o]].size();
      pick[o] = static_cast<std::size_t>(c % m);
      c /= m;
    }
    return build(pick, how);
  }

  // Each optional line advances with probability q (per image) to one of its
  // other known contents, torn (if it may be) with probability 1/4 — so
  // torn values do not crowd out the untorn ones.
  std::vector<Line> sampled(int index, std::uint64_t seed, std::string* how) const override {
    std::uint64_t rng = seed ^ (cs_.k * 0x9e3779b97f4a7c15ull) ^ (static_cast<std::uint64_t>(index) << 32) ^ 0x7838365f;
    splitmix(rng);
    const std::uint64_t q = 1 + splitmix(rng) % 7;  // of 8
    std::vector<Line> val = cs_.media;
    std::size_t advanced = 0, torn = 0;
    std::string which;
    for (auto i : optional_) {
      const auto& c = cands_[i];
      if (c.size() < 2 || splitmix(rng) % 8 >= q) continue;
      const Cand& pick = c[1 + static_cast<std::size_t>(splitmix(rng) % (c.size() - 1))];
      val[i] = pick.value;
      ++advanced;
      std::string name = pick.name;
      if (pick.tear != 0 && splitmix(rng) % 4 == 0) {
        std::uint8_t mask = 0;
        while (mask == 0) mask = static_cast<std::uint8_t>(splitmix(rng) & pick.tear);
        val[i] = mix(pick.value, pick.prev, mask);
        name += " torn";
        ++torn;
      }
      if (advanced <= 4) which += " " + hex(cs_.lines[i]) + "=" + name;
    }
    if (how != nullptr)
      *how = "random: x86: " + std::to_string(advanced) + "/" + std::to_string(optional_.size()) +
             " lines advanced, " + std::to_string(torn) + " torn" + (which.empty() ? "" : ":" + which) +
             (advanced > 4 ? " ..." : "");
    return val;
  }

 private:
  std::vector<Line> build(const std::vector<std::size_t>& pick, std::string* how) const {
    std::vector<Line> val = cs_.media;
    std::size_t advanced = 0, torn = 0;
    std::string which;
    for (std::size_t o = 0; o < optional_.size(); ++o) {
      const std::size_t i = optional_[o];
      val[i] = values_[i][pick[o]];
      if (pick[o] == 0) continue;
      ++advanced;
      const std::string& name = names_[i][pick[o]];
      if (name.size() > 5 && name.compare(name.size() - 5, 5, " torn") == 0) ++torn;
      if (advanced <= 4) which += " " + hex(cs_.lines[i]) + "=" + name;
    }
    if (how != nullptr)
      *how = "x86: " + std::to_string(advanced) + "/" + std::to_string(optional_.size()) + " lines advanced, " +
             std::to_string(torn) + " torn" + (which.empty() ? "" : ":" + which) + (advanced > 4 ? " ..." : "");
    return val;
  }

  struct Cand {
    Line value, prev;  // a known content and the one before it
    std::uint8_t tear = 0;  // declared words in which they differ (with tearing)
    std::string name;
  };
  const CrashState& cs_;
  std::vector<std::vector<Cand>> cands_;         // per line: media, copies, working (in order; may repeat)
  std::vector<std::vector<Line>> values_;        // per line: distinct possible contents, media first
  std::vector<std::vector<std::string>> names_;  // where each comes from
  std::vector<std::size_t> optional_;            // lines with more than one
};

class X86Model final : public Model {
 public:
  std::string_view name() const override { return "x86"; }
  std::string_view summary() const override {
    return "Px86 (clwb + sfence): every fence makes the thread's write-backs durable; a line persists its stores in "
           "order (tears only at declared multi-word stores); dirty lines evict any time";
  }
  std::unique_ptr<ModelRun> start(Machine& m) const override { return std::make_unique<WriteBackRun>(m, &x86_act); }
  bool pfence_durable() const override { return true; }
  std::unique_ptr<ImageSpace> space(const CrashState& cs, const ImageOptions& opt) const override {
    return std::make_unique<X86Space>(cs, opt);
  }
};

}  // namespace

namespace models {
const Model& abstract() {
  static const AbstractModel m;
  return m;
}
const Model& x86() {
  static const X86Model m;
  return m;
}
}  // namespace models

}  // namespace ferrite::crash
