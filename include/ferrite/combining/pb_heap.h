// ferrite/combining/pb_heap.h — PBheap: a detectably recoverable bounded
// min-heap on PBcomb ("Recoverable software combining", PPoPP'22, §5
// "PBHeap"; Algorithms 1–2 for the protocol).
//
// What it is. A sequential binary min-heap whose whole array and size live
// in the PBcomb StateRec: state = { u64 size; i64 keys[capacity] }, with
// capacity fixed at creation (64..1024 keys, stored in the root). Operations:
// insert(k) (answers kFullWord when full), delete_min(), get_min().
//
// Thread safety: insert/delete_min/get_min/recover are safe from distinct
// thread ids concurrently (one operation per id at a time): the operations
// take ids in [0, threads) of the attach, recover any id below the thread
// capacity n the heap was created for (attach asks for any 1..n threads;
// PBcomb's "Thread capacity"; the key capacity is another number).
//
// Invariants: keys[0..size) is a min-heap; keys beyond size are garbage and
// never read.
//
// Persistence. The StateRec puts ReturnVal[n] and the tags before the state,
// so a round's whole change is the prefix [ReturnVal .. keys[size)) and
// PBcomb copies and persists only that used prefix (used_bytes = 8 + 8 *
// size), not the whole array: the keys beyond size are not part of the
// abstract state, so their durable contents are irrelevant, and a small heap
// in a large-capacity record costs as many lines as its size needs. Of
// that prefix, the stamped round writes only the lines the sifts stored to
// (this round's and the previous one's): simulate reports each store
// (PBcomb's StateWrites), ~9 lines per operation at 1,024 keys instead of
// the prefix's 65 (layout v5). The
// state is self-contained (no pointers), so nothing outside the StateRec is
// written back. Recovery: the pool's (pmem::Pool::recover, at open) keeps
// the two StateRecs (PBHeapRoot's registered hook, recover_root); then
// attach (frees nothing), plus recover(tid, seq, op, k) for a pending
// operation, Alg. 1 l.3–6.
#pragma once

#include <bit>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string_view>
#include <vector>

#include "ferrite/combining/pbcomb.h"
#include "ferrite/combining/validate.h"
#include "ferrite/pmem/pool.h"
#include "ferrite/sync/thread_registry.h"
#include "ferrite/pmem/root_registry.h"

namespace ferrite::combining {

inline constexpr int kPBHeapMinCapacity = 64;
inline constexpr int kPBHeapMaxCapacity = 1024;

struct PBHeapRoot {
  static constexpr std::uint32_t kTypeTag = 0x50424850;  // "PBHP"
  static constexpr std::uint32_t kTypeVersion = 5;  // v5: the state checksummed as a sum of per-word terms (a round rewrites only the sifts' lines); v4: eight-chain record checksum; v3: (ReturnVal, tag) pairs after the state; v2: round stamps
  static constexpr const char* kTypeName = "combining::PBHeap";
  PBCombRoot comb;
  std::uint64_t capacity;
  PBHeapRoot(const PBCombRoot& c, std::uint64_t cap)
      : comb(c.rec[0], c.rec[1], c.rec_bytes, c.threads, c.state_bytes,
             static_cast<TagKind>(c.tag_kind), c.design),
        capacity(cap) {}
};

// The sequential bounded min-heap as a PBcomb policy.
class PBHeapObject {
 public:
  static constexpr TagKind kTag = TagKind::kBit;
  explicit PBHeapObject(int capacity) : cap_(static_cast<std::size_t>(capacity)) {}

  std::size_t capacity() const { return cap_; }
  std::size_t state_bytes() const { return 8 + 8 * cap_; }
  std::size_t used_bytes(const void* st) const { return 8 + 8 * size_of(st); }
  void init_state(void* st) const { *static_cast<std::uint64_t*>(st) = 0; }

  static std::size_t size_of(const void* st) { return *static_cast<const std::uint64_t*>(st); }
  static const std::int64_t* keys_of(const void* st) {
    return reinterpret_cast<const std::int64_t*>(static_cast<const char*>(st) + 8);
  }

  // PBcomb's ReportsStateWrites: every store to the state is reported
  // (the size word and each key written), so a round writes back only the
  // lines of the sift paths.
  void simulate(void* st, const Active* a, std::size_t k, std::uint64_t* resp, int, StateWrites& w) {
    run(st, a, k, resp, [&](std::size_t off) { w.wrote(off, 8); });
  }
  void simulate(void* st, const Active* a, std::size_t k, std::uint64_t* resp, int) {
    run(st, a, k, resp, [](std::size_t) {});
  }
  // Applies a[0..k); wrote(offset) after each store to the state's word at
  // that offset (the size word 0, keys[j] at 8 + 8 j).
  template <class Wrote>
  void run(void* st, const Active* a, std::size_t k, std::uint64_t* resp, const Wrote& wrote) const {
    auto* size = static_cast<std::uint64_t*>(st);
    auto* keys = reinterpret_cast<std::int64_t*>(static_cast<char*>(st) + 8);
    for (std::size_t i = 0; i < k; ++i) {
      const std::uint64_t before = *size;
      resp[i] = apply_one(keys, *size, a[i].op, a[i].arg, [&](std::size_t j) { wrote(8 + 8 * j); });
      if (*size != before) wrote(0);
    }
  }
  bool before_persist(void*, int) { return false; }
  void after_durable(void*, int) {}

  // The sequential operation on keys[0..size); wrote(j) after each store
  // to keys[j].
  template <class Wrote>
  std::uint64_t apply_one(std::int64_t* keys, std::uint64_t& size, OpCode op, std::int64_t arg, const Wrote& wrote) const {
    switch (op) {
      case OpCode::kInsert: {
        if (size >= cap_) return kFullWord;
        std::size_t i = size++;
        while (i > 0) {
          const std::size_t parent = (i - 1) / 2;
          if (keys[parent] <= arg) break;
          keys[i] = keys[parent];
          wrote(i);
          i = parent;
        }
        keys[i] = arg;
        wrote(i);
        return kAckWord;
      }
      case OpCode::kDeleteMin: {
        if (size == 0) return kEmptyWord;
        const std::int64_t min = keys[0];
        const std::int64_t last = keys[--size];
        std::size_t i = 0;
        for (;;) {
          std::size_t c = 2 * i + 1;
          if (c >= size) break;
          if (c + 1 < size && keys[c + 1] < keys[c]) ++c;
          if (keys[c] >= last) break;
          keys[i] = keys[c];
          wrote(i);
          i = c;
        }
        if (size > 0) {
          keys[i] = last;
          wrote(i);
        }
        return value_word(min);
      }
      case OpCode::kGetMin:
        return size == 0 ? kEmptyWord : value_word(keys[0]);
      default:
        return kEmptyWord;
    }
  }

 private:
  std::size_t cap_;
};

template <unsigned Faults = kNoFaults>
class PBHeap {
 public:
  using Comb = PBComb<PBHeapObject, Faults>;

  static void check_capacity(int capacity) {
    if (capacity < kPBHeapMinCapacity || capacity > kPBHeapMaxCapacity)
      throw std::invalid_argument("PBHeap: capacity must be in [64, 1024] keys, got " +
                                  std::to_string(capacity));
  }

  static std::unique_ptr<PBHeap> create(pmem::Pool& pool, std::string_view name, int threads,
                                        int capacity, int alloc_tid = 0) {
    if (threads <= 0) throw std::invalid_argument("PBHeap: threads must be > 0");
    check_capacity(capacity);
    PBHeapObject obj(capacity);
    const RecLayout l = Comb::layout_for(obj, threads);
    void* r0 = pool.heap().alloc(record_block_bytes(l.total()), alloc_tid);
    void* r1 = pool.heap().alloc(record_block_bytes(l.total()), alloc_tid);
    Comb::format(obj, threads, r0, r1);
    auto* root = pool.create_root<PBHeapRoot>(
        name,
        PBCombRoot(r0, r1, l.total(), static_cast<std::uint32_t>(threads),
                   static_cast<std::uint32_t>(l.state_bytes), PBHeapObject::kTag, Comb::kDesign),
        static_cast<std::uint64_t>(capacity));
    return std::unique_ptr<PBHeap>(new PBHeap(root, threads));
  }

  // Re-attaches (the capacity comes from the root). Frees nothing: the pool
  // recovered the heap when it opened.
  // The root is validated first (validate_root: also when the pool was
  // opened without recovery, so no hook ran), so the combiner never reads a
  // record through a damaged pointer.
  static std::unique_ptr<PBHeap> attach(pmem::Pool& pool, std::string_view name, int threads = kAsCreated) {
    auto* root = pool.root<PBHeapRoot>(name);
    validate_root(pool, root);
    std::unique_ptr<PBHeap> h(new PBHeap(root, threads));
    if (h->size() > h->capacity())
      throw pmem::PoolError(pmem::Errc::kCorrupt, "PBHeap '" + std::string(name) + "': bad size");
    return h;
  }
  // Same, checking the stored capacity (the arguments of create, so
  // Pool::open_or_create<PBHeap<>>(name, threads, capacity) works).
  static std::unique_ptr<PBHeap> attach(pmem::Pool& pool, std::string_view name, int threads, int capacity) {
    auto h = attach(pool, name, threads);
    if (h->capacity() != static_cast<std::size_t>(capacity))
      throw std::invalid_argument("PBHeap '" + std::string(name) + "': created with capacity " +
                                  std::to_string(h->capacity()) + ", attach asked for " + std::to_string(capacity));
    return h;
  }

  // PBHeapRoot's recover hook (pmem/root_registry.h): the state is
  // self-contained in the StateRecs; nothing to repair.
  // Validating (combining/validate.h): the PBcomb root and its records,
  // then the capacity (in [64, 1024], its state size 8 + 8 capacity) and
  // the current state's size word (at most the capacity); a damaged heap
  // throws PoolError(kCorrupt) naming the word's offset and value.
  static void recover_root(pmem::Pool& pool, PBHeapRoot* root, const std::function<void(void*)>& mark) {
    validate_root(pool, root);
    pbcomb_mark_records(root->comb, mark);
    mark(root);
  }
  static void validate_root(const pmem::Pool& pool, PBHeapRoot* root) {
    const Damage d{pool, "PBHeap"};
    if (root->capacity < kPBHeapMinCapacity || root->capacity > kPBHeapMaxCapacity)
      d.fail("the capacity is not in [64, 1024]", &root->capacity, root->capacity);
    if (root->comb.state_bytes != 8 + 8 * root->capacity)
      d.fail("the state size does not match the capacity", &root->comb.state_bytes, root->comb.state_bytes);
    const void* st = pbcomb_checked_state(d, root->comb);
    if (PBHeapObject::size_of(st) > root->capacity)
      d.fail("the size exceeds the capacity", st, PBHeapObject::size_of(st));
  }

  // false when the heap is full.
  bool insert(int tid, std::uint64_t seq, std::int64_t k) {
    check_value(k, "PBHeap::insert");
    return comb_.apply(tid, seq, OpCode::kInsert, k) != kFullWord;
  }
  std::optional<std::int64_t> delete_min(int tid, std::uint64_t seq) {
    return to_optional(comb_.apply(tid, seq, OpCode::kDeleteMin, 0));
  }
  std::optional<std::int64_t> get_min(int tid, std::uint64_t seq) {
    return to_optional(comb_.apply(tid, seq, OpCode::kGetMin, 0));
  }
  bool insert(int tid, std::int64_t k) {
    check_value(k, "PBHeap::insert");
    return comb_.apply(tid, OpCode::kInsert, k) != kFullWord;
  }
  std::optional<std::int64_t> delete_min(int tid) {
    return to_optional(comb_.apply(tid, OpCode::kDeleteMin, 0));
  }
  std::uint64_t recover(int tid, std::uint64_t seq, OpCode op, std::int64_t k) {
    return comb_.recover(tid, seq, op, k);
  }

  std::size_t capacity() const { return obj_.capacity(); }
  std::size_t size() const { return PBHeapObject::size_of(comb_.state()); }
  // Quiescent: the keys in ascending order.
  std::vector<std::int64_t> sorted() const {
    const auto* keys = PBHeapObject::keys_of(comb_.state());
    std::vector<std::int64_t> v(keys, keys + std::min(size(), capacity()));
    std::sort(v.begin(), v.end());
    return v;
  }
  // Quiescent: is keys[0..size) a min-heap?
  bool heap_ordered() const {
    const auto* keys = PBHeapObject::keys_of(comb_.state());
    for (std::size_t i = 1; i < size(); ++i)
      if (keys[(i - 1) / 2] > keys[i]) return false;
    return true;
  }

  void trace(const std::function<void(void*)>& mark) const {
    mark(comb_.rec(0));
    mark(comb_.rec(1));
    mark(root_);
  }
  double combining_degree() const { return comb_.combining_degree(); }
  Comb& comb() { return comb_; }

  static std::optional<std::int64_t> to_optional(std::uint64_t w) {
    if (!is_value_word(w)) return std::nullopt;
    return word_value(w);
  }

  // ---- with a thread handle (sync::ThreadRegistry; no seq kept by the
  // caller: durably linearizable, not detectable — see ferrite/detectable.h)
  bool insert(const Thread& t, std::int64_t k) { return insert(t.id(), k); }
  std::optional<std::int64_t> delete_min(const Thread& t) { return delete_min(t.id()); }
  std::optional<std::int64_t> get_min(const Thread& t) { return get_min(t.id(), comb_.next_seq(t.id())); }

  // ---- the vocabulary of ferrite/op.h (Detectable<S>, adapters) ----
  // One convention for every PB and PWF structure: apply runs an op::Op with
  // the caller's seq; recover answers the same response for an operation
  // pending at a crash, completing it if it had not taken effect.
  op::Response apply(int tid, std::uint64_t seq, const op::Op& o) {
    switch (o.kind) {
      case op::kInsert: return insert(tid, seq, o.arg) ? op::Response::ack() : op::Response::none();
      case op::kDeleteMin: return op::Response::from(delete_min(tid, seq));
      case op::kGetMin: return op::Response::from(get_min(tid, seq));
      default: unsupported_op("PBHeap", o);
    }
  }
  op::Response recover(int tid, std::uint64_t seq, const op::Op& o) {
    if (o.kind != op::kInsert && o.kind != op::kDeleteMin && o.kind != op::kGetMin) unsupported_op("PBHeap", o);
    return response_of(o.kind, recover(tid, seq, static_cast<OpCode>(o.kind), o.arg));
  }

 private:
  PBHeap(PBHeapRoot* root, int threads)
      : root_(root), obj_(static_cast<int>(root->capacity)), comb_(&root->comb, &obj_, threads) {}

  PBHeapRoot* root_;
  PBHeapObject obj_;
  Comb comb_;
};

// The pool's recover hook for PBHeapRoot (Faults-independent trace).
inline const bool kPBHeapRootRegistered = pmem::register_root_type<PBHeapRoot>(&PBHeap<>::recover_root);

}  // namespace ferrite::combining
