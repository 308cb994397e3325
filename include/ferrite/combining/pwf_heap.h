// ferrite/combining/pwf_heap.h — PWFheap: a detectably recoverable, wait-free
// bounded min-heap on PWFcomb (structure "pwf-heap").
//
// Paper: PBcomb/PWFcomb (PPoPP'22) §5 "PBHeap" (a sequential array heap in
// the StateRec, one combining instance) and §8, which leaves the PWFcomb
// version as future work ("a relatively easy task"): this is it. The whole
// heap is the PWFcomb state: [size, capacity, key[0..capacity)], so the
// protocol's invariants and persistence (pwfcomb.h) cover it with no extra
// persistence step. Capacity is chosen at creation (1..kPwfHeapMaxCapacity;
// the paper measures 64..1024). Only the used prefix (2 + size words) is
// copied, written and written back per round (persistence principle 1).
//
// Thread safety: insert/delete_min/get_min/recover_* are safe from distinct
// thread ids in [0, n).
// Invariants: key[0..size) is a binary min-heap; size <= capacity.
// Recovery: attach() (the state is self-contained; heap recovery marks only
// the StateRecs); recover_*: Alg. 3 l.4–7.
#pragma once

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
#include "ferrite/pmem/pool.h"

namespace ferrite::combining {

inline constexpr std::size_t kPwfHeapMaxCapacity = 1024;

struct PwfHeapObject {
  static constexpr std::size_t kStateWords = 2 + kPwfHeapMaxCapacity;
  static constexpr std::size_t kFixedWords = 2;  // size, capacity
  static constexpr bool kSeqTags = false;

  // Torn input (an optimistic copy) is clamped; VL rejects it afterwards.
  std::size_t used_state_words(const std::uint64_t* st) const {
    const std::uint64_t cap = st[1] < kPwfHeapMaxCapacity ? st[1] : kPwfHeapMaxCapacity;
    return 2 + static_cast<std::size_t>(st[0] < cap ? st[0] : cap);
  }

  bool combine(int, std::uint64_t* st, std::span<PwfEntry> batch, const PwfValidator&) {
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

struct PwfHeapRoot {
  static constexpr std::uint32_t kTypeTag = 0x50574648;  // "PWFH"
  static constexpr std::uint32_t kTypeVersion = 1;
  static constexpr const char* kTypeName = "combining::PwfHeap";
  PwfCombLayout comb;
  explicit PwfHeapRoot(const PwfCombLayout& l) : comb(l) {}
};

template <unsigned kFaults = pwf_fault::kNone>
class PwfHeap {
 public:
  using Comb = PwfComb<PwfHeapObject, kFaults>;

  static std::unique_ptr<PwfHeap> create(pmem::Pool& pool, std::string_view name, int threads,
                                         std::size_t capacity, PwfOptions opts = {}) {
    if (capacity == 0 || capacity > kPwfHeapMaxCapacity)
      throw std::invalid_argument("PwfHeap: capacity must be in [1, " + std::to_string(kPwfHeapMaxCapacity) +
                                  "], got " + std::to_string(capacity));
    std::vector<std::uint64_t> init(PwfHeapObject::kStateWords, 0);
    init[1] = capacity;
    PwfCombLayout l;
    Comb::create_layout(pool, threads, &l, init.data());
    auto* root = pool.create_root<PwfHeapRoot>(name, l);
    return std::unique_ptr<PwfHeap>(new PwfHeap(pool, root, threads, opts));
  }
  static std::unique_ptr<PwfHeap> attach(pmem::Pool& pool, std::string_view name, int threads,
                                         bool recover_heap = false, PwfOptions opts = {}) {
    auto* root = pool.root<PwfHeapRoot>(name);
    std::unique_ptr<PwfHeap> h(new PwfHeap(pool, root, threads, opts));
    if (recover_heap)
      pool.heap().recover_by_trace([&](const std::function<void(void*)>& mark) { h->trace(mark); });
    return h;
  }

  // false when the heap is full (nothing inserted).
  bool insert(int tid, std::uint64_t seq, std::int64_t v) {
    check_value(v, "PwfHeap::insert");
    return comb_.perform(tid, seq, static_cast<std::int32_t>(OpCode::kInsert), v) == kAckWord;
  }
  std::optional<std::int64_t> delete_min(int tid, std::uint64_t seq) {
    return decode(comb_.perform(tid, seq, static_cast<std::int32_t>(OpCode::kDeleteMin), 0));
  }
  std::optional<std::int64_t> get_min(int tid, std::uint64_t seq) {
    return decode(comb_.perform(tid, seq, static_cast<std::int32_t>(OpCode::kGetMin), 0));
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

 private:
  PwfHeap(pmem::Pool& pool, PwfHeapRoot* root, int n, PwfOptions opts) : comb_(pool, &root->comb, n, obj_, opts) {}
  static std::optional<std::int64_t> decode(std::uint64_t w) {
    if (w == kEmptyWord) return std::nullopt;
    return word_value(w);
  }
  PwfHeapObject obj_;
  Comb comb_;
};

}  // namespace ferrite::combining
