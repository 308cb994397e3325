// ferrite/combining/pwf_heap.h — PWFheap: a detectably recoverable, wait-free
// bounded min-heap on PWFcomb (structure "pwf-heap").
//
// Paper: PBcomb/PWFcomb (PPoPP'22) §5 "PBHeap" (a sequential array heap in
// the StateRec, one combining instance) and §8, which leaves the PWFcomb
// version as future work ("a relatively easy task"): this is it. The whole
// heap is the PWFcomb state: [size, capacity, key[0..capacity)], so the
// protocol's invariants and persistence (pwfcomb.h) cover it with no extra
// persistence step. Capacity is chosen at creation (1..kPWFHeapMaxCapacity;
// the paper measures 64..1024). Only the used prefix (2 + size words) is
// copied, written and written back per round (persistence principle 1).
//
// Thread safety: insert/delete_min/get_min/recover_* are safe from distinct
// thread ids: the operations take ids in [0, threads) of the attach,
// recover_* any id below the thread capacity n the heap was created for
// (attach asks for any 1..n threads; PWFcomb's "Thread capacity").
// Invariants: key[0..size) is a binary min-heap; size <= capacity.
// Recovery: the state is self-contained; the pool's recovery (at open,
// pmem::Pool::recover) keeps the StateRecs through PWFHeapRoot's registered
// hook (recover_root); attach() only re-attaches (it frees nothing);
// recover_*: Alg. 3 l.4–7.
#pragma once

#include <bit>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "ferrite/combining/common.h"
#include "ferrite/combining/pwfcomb.h"
#include "ferrite/combining/validate.h"
#include "ferrite/pmem/pool.h"
#include "ferrite/sync/thread_registry.h"
#include "ferrite/pmem/root_registry.h"

namespace ferrite::combining {

inline constexpr std::size_t kPWFHeapMaxCapacity = 1024;

struct PWFHeapObject {
  static constexpr std::size_t kStateWords = 2 + kPWFHeapMaxCapacity;
  static constexpr std::size_t kFixedWords = 2;  // size, capacity
  static constexpr bool kSeqTags = false;

  // Torn input (an optimistic copy) is clamped; VL rejects it afterwards.
  std::size_t used_state_words(const std::uint64_t* st) const {
    const std::uint64_t cap = st[1] < kPWFHeapMaxCapacity ? st[1] : kPWFHeapMaxCapacity;
    return 2 + static_cast<std::size_t>(st[0] < cap ? st[0] : cap);
  }

  bool combine(int, std::uint64_t* st, std::span<PWFEntry> batch, const PWFValidator&) {
    auto* key = reinterpret_cast<std::int64_t*>(st + 2);
    std::uint64_t size = st[0];
    const std::uint64_t cap = st[1];
    for (auto& e : batch) {
      switch (static_cast<OpCode>(e.kind)) {
        case OpCode::kInsert: {
          if (size >= cap) {
            e.ret = kFullWord;
            break;
          }
          std::uint64_t i = size++;
          while (i > 0 && key[(i - 1) / 2] > e.arg) {
            key[i] = key[(i - 1) / 2];
            i = (i - 1) / 2;
          }
          key[i] = e.arg;
          e.ret = kAckWord;
          break;
        }
        case OpCode::kDeleteMin: {
          if (size == 0) {
            e.ret = kEmptyWord;
            break;
          }
          e.ret = value_word(key[0]);
          const std::int64_t x = key[--size];
          std::uint64_t i = 0;
          for (;;) {
            std::uint64_t c = 2 * i + 1;
            if (c >= size) break;
            if (c + 1 < size && key[c + 1] < key[c]) ++c;
            if (key[c] >= x) break;
            key[i] = key[c];
            i = c;
          }
          if (size > 0) key[i] = x;
          break;
        }
        case OpCode::kGetMin:
          e.ret = size == 0 ? kEmptyWord : value_word(key[0]);
          break;
        default:
          e.ret = kEmptyWord;
          break;
      }
    }
    st[0] = size;
    return true;
  }
  void persist_side(int) {}
  void on_commit(int) {}
  void on_abort(int) {}
};

struct PWFHeapRoot {
  static constexpr std::uint32_t kTypeTag = 0x50574648;  // "PWFH"
  static constexpr std::uint32_t kTypeVersion = 2;  // v2: PWFCombLayout holds StateRec pointers
  static constexpr const char* kTypeName = "combining::PWFHeap";
  PWFCombLayout comb;
  explicit PWFHeapRoot(const PWFCombLayout& l) : comb(l) {}
};

template <unsigned kFaults = pwf_fault::kNone>
class PWFHeap {
 public:
  using Comb = PWFComb<PWFHeapObject, kFaults>;

  static std::unique_ptr<PWFHeap> create(pmem::Pool& pool, std::string_view name, int threads,
                                         std::size_t capacity, PWFOptions opts = {}) {
    if (capacity == 0 || capacity > kPWFHeapMaxCapacity)
      throw std::invalid_argument("PWFHeap: capacity must be in [1, " + std::to_string(kPWFHeapMaxCapacity) +
                                  "], got " + std::to_string(capacity));
    std::vector<std::uint64_t> init(PWFHeapObject::kStateWords, 0);
    init[1] = capacity;
    PWFCombLayout l;
    Comb::create_layout(pool, threads, &l, init.data());
    auto* root = pool.create_root<PWFHeapRoot>(name, l);
    return std::unique_ptr<PWFHeap>(new PWFHeap(pool, root, threads, opts));
  }
  // Re-attaches after a restart. Frees nothing: the pool recovered the heap
  // when it opened.
  static std::unique_ptr<PWFHeap> attach(pmem::Pool& pool, std::string_view name, int threads = kAsCreated,
                                         PWFOptions opts = {}) {
    auto* root = pool.root<PWFHeapRoot>(name);
    std::unique_ptr<PWFHeap> h(new PWFHeap(pool, root, threads, opts));  // validates the layout
    h->validate(pool);  // O(1): also when no hook ran (a pool opened without recovery)
    return h;
  }
  // Same, checking the capacity it was created with (so that
  // Pool::open_or_create<PWFHeap<>>(name, threads, capacity) works).
  static std::unique_ptr<PWFHeap> attach(pmem::Pool& pool, std::string_view name, int threads,
                                         std::size_t capacity, PWFOptions opts = {}) {
    auto h = attach(pool, name, threads, opts);
    if (h->capacity() != capacity)
      throw std::invalid_argument("PWFHeap '" + std::string(name) + "': created with capacity " +
                                  std::to_string(h->capacity()) + ", attach asked for " + std::to_string(capacity));
    return h;
  }
  // PWFHeapRoot's recover hook (pmem/root_registry.h): marks the StateRecs,
  // from the root alone. Nothing to repair.
  static void recover_root(pmem::Pool& pool, PWFHeapRoot* root, const std::function<void(void*)>& mark) {
    PWFHeap h(pool, root, pwf_capacity(root->comb, 1), PWFOptions{});  // validates the layout
    h.validate(pool);
    h.trace(mark);
  }
  // Validating (combining/validate.h): the current state's capacity word
  // in [1, 1024] and its size word at most the capacity (a combiner indexes
  // keys[size - 1]); damage throws PoolError(kCorrupt) naming the offset.
  void validate(const pmem::Pool& pool) const {
    const Damage d{pool, "PWFHeap"};
    const std::uint64_t* st = comb_.current_state();
    if (st[1] == 0 || st[1] > kPWFHeapMaxCapacity) d.fail("the capacity is not in [1, 1024]", &st[1], st[1]);
    if (st[0] > st[1]) d.fail("the size exceeds the capacity", &st[0], st[0]);
  }

  // false when the heap is full (nothing inserted).
  bool insert(int tid, std::uint64_t seq, std::int64_t v) {
    check_value(v, "PWFHeap::insert");
    return comb_.apply(tid, seq, static_cast<std::int32_t>(OpCode::kInsert), v) == kAckWord;
  }
  std::optional<std::int64_t> delete_min(int tid, std::uint64_t seq) {
    return decode(comb_.apply(tid, seq, static_cast<std::int32_t>(OpCode::kDeleteMin), 0));
  }
  std::optional<std::int64_t> get_min(int tid, std::uint64_t seq) {
    return decode(comb_.apply(tid, seq, static_cast<std::int32_t>(OpCode::kGetMin), 0));
  }
  bool recover_insert(int tid, std::uint64_t seq, std::int64_t v) {
    return comb_.recover(tid, seq, static_cast<std::int32_t>(OpCode::kInsert), v) == kAckWord;
  }
  std::optional<std::int64_t> recover_delete_min(int tid, std::uint64_t seq) {
    return decode(comb_.recover(tid, seq, static_cast<std::int32_t>(OpCode::kDeleteMin), 0));
  }
  std::optional<std::int64_t> recover_get_min(int tid, std::uint64_t seq) {
    return decode(comb_.recover(tid, seq, static_cast<std::int32_t>(OpCode::kGetMin), 0));
  }

  std::size_t capacity() const { return static_cast<std::size_t>(comb_.current_state()[1]); }
  // Sorted keys (quiescent use only).
  std::vector<std::int64_t> contents() const {
    const std::uint64_t* st = comb_.current_state();
    const auto* key = reinterpret_cast<const std::int64_t*>(st + 2);
    std::vector<std::int64_t> out(key, key + st[0]);
    std::sort(out.begin(), out.end());
    return out;
  }
  // Checks the heap property of the current state (quiescent use only).
  bool well_formed() const {
    const std::uint64_t* st = comb_.current_state();
    const auto* key = reinterpret_cast<const std::int64_t*>(st + 2);
    if (st[0] > st[1]) return false;
    for (std::uint64_t i = 1; i < st[0]; ++i)
      if (key[(i - 1) / 2] > key[i]) return false;
    return true;
  }
  void trace(const std::function<void(void*)>& mark) const { comb_.for_each_record(mark); }
  double combining_degree() const { return comb_.combining_degree(); }
  Comb& comb() { return comb_; }

  // ---- with a thread handle (sync::ThreadRegistry; no seq kept by the
  // caller: durably linearizable, not detectable — see ferrite/detectable.h)
  bool insert(const Thread& t, std::int64_t v) { return insert(t.id(), comb_.fresh_seq(t.id()), v); }
  std::optional<std::int64_t> delete_min(const Thread& t) { return delete_min(t.id(), comb_.fresh_seq(t.id())); }
  std::optional<std::int64_t> get_min(const Thread& t) { return get_min(t.id(), comb_.fresh_seq(t.id())); }

  // ---- the vocabulary of ferrite/op.h (Detectable<S>, adapters) ----
  // One convention for every PB and PWF structure: apply runs an op::Op with
  // the caller's seq; recover answers the same response for an operation
  // pending at a crash, completing it if it had not taken effect.
  op::Response apply(int tid, std::uint64_t seq, const op::Op& o) {
    switch (o.kind) {
      case op::kInsert: return insert(tid, seq, o.arg) ? op::Response::ack() : op::Response::none();
      case op::kDeleteMin: return op::Response::from(delete_min(tid, seq));
      case op::kGetMin: return op::Response::from(get_min(tid, seq));
      default: unsupported_op("PWFHeap", o);
    }
  }
  op::Response recover(int tid, std::uint64_t seq, const op::Op& o) {
    switch (o.kind) {
      case op::kInsert: return recover_insert(tid, seq, o.arg) ? op::Response::ack() : op::Response::none();
      case op::kDeleteMin: return op::Response::from(recover_delete_min(tid, seq));
      case op::kGetMin: return op::Response::from(recover_get_min(tid, seq));
      default: unsupported_op("PWFHeap", o);
    }
  }

 private:
  PWFHeap(pmem::Pool& pool, PWFHeapRoot* root, int n, PWFOptions opts) : comb_(pool, &root->comb, n, obj_, opts) {}
  static std::optional<std::int64_t> decode(std::uint64_t w) {
    if (w == kEmptyWord) return std::nullopt;
    return word_value(w);
  }
  PWFHeapObject obj_;
  Comb comb_;
};

// The pool's recover hook for PWFHeapRoot (fault-independent trace).
inline const bool kPWFHeapRootRegistered = pmem::register_root_type<PWFHeapRoot>(&PWFHeap<>::recover_root);

}  // namespace ferrite::combining
