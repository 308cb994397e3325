// ferrite/baselines/soft_hash.h — SOFT (Sets with an Optimal Flushing
// Technique): a lock-free durable hash set whose volatile index lives in
// DRAM and whose only persistent data is one PNode per key, written back
// once per insert and once per remove; lookups never write back.
//
// Source. Y. Zuriel, M. Friedman, G. Sheffi, N. Cohen, E. Petrank,
// "Efficient Lock-Free Durable Sets", OOPSLA 2019 (PACMPL 3, article 128):
// SOFT, its list (the PNode class, insert / remove / contains, recovery)
// and its hash table of such lists, one per bucket. Names as in the paper:
// PNode, validStart, validEnd, deleted, pValidity, the states
// INTEND_TO_INSERT / INSERTED / INTEND_TO_DELETE / DELETED, create /
// destroy, trim, find. (Section, figure and line numbers are not cited:
// this was written from the paper's description without its page layout
// at hand; the names are searchable instead.)
//
// What it is. Every key has a volatile node (VNode: key, value, a pointer
// to its PNode, the PNode's pValidity, and `next`, whose two low bits hold
// the node's own state) in a Harris-style sorted list per bucket, and a
// persistent node (PNode: key, value, and three validity bits) in the pool.
//   insert: link a VNode in state INTEND_TO_INSERT; create() its PNode
//           (validStart, key, value, validEnd; one write-back and one
//           fence); CAS the state to INSERTED (the linearization point).
//           A thread that finds the key INTEND_TO_INSERT helps: create(),
//           then INSERTED, then answers false.
//   remove: CAS the state INSERTED -> INTEND_TO_DELETE (the winner is the
//           remove that answers true); destroy() the PNode (deleted bit;
//           one write-back and one fence); CAS -> DELETED (the
//           linearization point); trim (unlink). Helpers that saw
//           INTEND_TO_DELETE destroy and move to DELETED too.
//   contains: traverse; true iff the node is INSERTED or INTEND_TO_DELETE.
//           No write-back, no CAS: a state other threads can see is durable
//           (INSERTED only after the create's fence; DELETED only after the
//           destroy's), and INTEND_TO_INSERT / INTEND_TO_DELETE answer as
//           the state before the pending operation.
// A PNode is in the set iff validStart == validEnd != deleted. A PNode is
// reused with pValidity = !validEnd, so its previous incarnation (deleted:
// validStart == validEnd == deleted) reads as not-valid until the new
// validEnd is written, and as deleted again once the new deleted is.
// (Deviation: the paper's alloc() takes !validStart, and its recovery sets
// validStart = validEnd on every PNode it frees; !validEnd is the same
// value wherever validStart == validEnd, needs no write in recovery, and
// stays right for a body-first PNode whose link CAS failed after its
// validStart was written.)
//
// Two create() orders (template parameter Order).
//   * Order::kOneFlush — the paper's: validStart, key, value, validEnd are
//     stored in that order into the PNode's one cache line, then one pwb and
//     one fence. It is correct only if stores to one line persist in
//     program order (the property N. Cohen et al.'s in-cache-line logging
//     also rests on): a line holding the new validEnd holds the new key and
//     value.
//     Ferrite's x86 model keeps that (a line is one of the copies the
//     simulator knows, never a mix); the abstract model tears a line at any
//     8-byte word of a pending write-back, so there a torn image can hold
//     the new validity bits over the old key. Claimed: x86 only (the
//     crash test shows the abstract model catching it).
//   * Order::kBodyFirst — Ferrite's variant for every write-back model:
//     the owner writes validStart, key and value (and resets the update
//     word) and makes them durable (pwb, psync) BEFORE it links the VNode,
//     so no other thread can have written the line yet; create() (owner or
//     helper) is then validEnd alone: one store, one pwb, one fence. An
//     8-byte word never tears, and every other word of the line is durable
//     before any copy holding the new validEnd exists. Cost: one more pwb
//     and fence per insert.
//
// Maps (an extension: the paper's set has no update). The PNode carries
// two value words: value0, written by create (the inserted value; create's
// helpers may rewrite it late, always with the same value), and value1, the
// last update (kNoUpdate = INT64_MIN: none; the reserved value, as in the
// Harris map). put on a present key takes the VNode's update lock, checks
// the node is still INSERTED, stores value1, pwb, psync, and only then
// publishes the new value in the VNode (its linearization point), so a get
// never returns a value that is not durable. erase takes the same lock to
// move INSERTED -> INTEND_TO_DELETE and read the value it returns. The lock
// is per node and held for one pwb + psync: map updates and erases of the
// same key are blocking (a deviation), everything else is lock-free. A
// table is used either as a set or as a map, never both (a set remove does
// not take the lock).
//
// Not built from the paper: its Link-Free algorithm (the paper's other
// design), the SOFT skip list of the authors' artifact, a resizable table,
// and a parallel recovery (attach scans the slabs on one thread).
//
// Thread safety: every operation is safe concurrently for distinct tids in
// [0, threads); set operations are lock-free, map put/erase of one present
// key serialize on that key's lock.
//
// Invariants.
//   I1 (Harris) each bucket list is sorted by key over its non-DELETED
//      nodes; a DELETED node's next never changes again (every CAS on a
//      next word expects a non-DELETED state); a node is unlinked (trim)
//      only once DELETED, by exactly one successful CAS, whose thread
//      retires it to EBR.
//   I2 A node's state only moves INTEND_TO_INSERT -> INSERTED ->
//      INTEND_TO_DELETE -> DELETED.
//   I3 At most one non-DELETED node per key is linked.
//   I4 A PNode on a free list has validEnd == deleted (never valid), and no
//      thread will write to it again (EBR: it is freed only after every
//      thread that could still create/destroy it unpinned).
//
// Persistence invariants.
//   P1 A VNode is INSERTED only after its PNode is valid and durable
//      (create's pwb + psync precede the state CAS).
//   P2 A VNode is DELETED only after its PNode's deleted bit is durable.
//   P3 A map value is visible in the VNode only after it is durable in the
//      PNode (value1's pwb + psync precede the VNode store).
//   P4 At most one durable valid PNode per key (from I3, P1, P2: a new
//      node for a key is linked only after the old one is DELETED).
//   P5 PNodes live in slabs (heap blocks, 64 KiB by default) that are
//      zeroed, written back and psynced before they are linked into the
//      root's slab list,
//      and linked (pwb + psync of the root's head) before any of their
//      PNodes is used: recovery finds every PNode that was ever used and
//      never mistakes stale heap contents for one.
//
// Recovery (the paper's: scan the persistent nodes, rebuild the volatile
// table). The pool's recover hook (registered below) walks the root's slab
// list and marks each slab live; it writes nothing. attach() scans every
// PNode of every slab: a valid PNode becomes an INSERTED VNode (pValidity =
// its validEnd; value = value1 if set, else value0); every other PNode goes
// to a free list. It reads only the pool and writes nothing to it, so it is
// idempotent and needs no DRAM state of the crashed run. A crash during
// create() leaves the root unnamed (the pool frees the blocks) or the slab
// list empty; a crash while a slab is being added leaves the slab
// unreachable from the root (the pool frees it).
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <new>
#include <optional>
#include <stdexcept>
#include <string_view>
#include <utility>
#include <vector>

#include "ferrite/baselines/internal/soft_faults.h"
#include "ferrite/baselines/persistent_common.h"
#include "ferrite/persist/persist.h"
#include "ferrite/pmem/pool.h"
#include "ferrite/pmem/root_registry.h"
#include "ferrite/sync/backoff.h"
#include "ferrite/sync/cache_padded.h"
#include "ferrite/sync/ebr.h"

namespace ferrite::baselines {

namespace soft {

enum class Order { kOneFlush, kBodyFirst };

// "No update": value1 of a PNode whose value is its value0. Reserved.
inline constexpr std::int64_t kNoUpdate = INT64_MIN;

// The persistent node: one cache line (so a pwb of it writes back every
// field, and no other PNode's writer ever copies this line).
struct alignas(64) PNode {
  std::atomic<std::uint8_t> valid_start;  // the paper's validStart
  std::atomic<std::uint8_t> valid_end;    // validEnd
  std::atomic<std::uint8_t> deleted;      // deleted
  std::uint8_t pad0[5];
  std::atomic<std::int64_t> key;
  std::atomic<std::int64_t> value0;       // the inserted value (create)
  std::atomic<std::int64_t> value1;       // the last map update, or kNoUpdate
  std::uint8_t pad1[32];

  bool is_valid() const {
    const auto s = valid_start.load(std::memory_order_acquire);
    const auto e = valid_end.load(std::memory_order_acquire);
    return s == e && e != deleted.load(std::memory_order_acquire);
  }
  std::int64_t value() const {
    const auto v1 = value1.load(std::memory_order_acquire);
    return v1 != kNoUpdate ? v1 : value0.load(std::memory_order_acquire);
  }
};
static_assert(sizeof(PNode) == 64);
static_assert(offsetof(PNode, valid_start) == 0);
static_assert(offsetof(PNode, valid_end) == 1);
static_assert(offsetof(PNode, deleted) == 2);
static_assert(offsetof(PNode, key) == 8);
static_assert(offsetof(PNode, value0) == 16);
static_assert(offsetof(PNode, value1) == 24);

// A slab: a heap block of the root's slab_bytes (64 KiB by default), a
// header line, then PNodes. Linked into the root's list once, never
// unlinked or freed (as the paper's designated persistent areas; the PNodes
// inside are recycled).
inline constexpr std::size_t kDefaultSlabBytes = std::size_t{64} << 10;
inline constexpr std::size_t kMinSlabBytes = 2 * 64;
inline constexpr std::uint64_t kSlabMagic = 0x534F'4654'534C'4142ull;  // "SOFTSLAB"
struct alignas(64) Slab {
  Slab* next;            // the next slab of the root's list (immutable once linked)
  std::uint64_t magic;   // kSlabMagic
  std::uint8_t pad[48];
  PNode* nodes() { return reinterpret_cast<PNode*>(this + 1); }  // slab_bytes / 64 - 1 of them
};
static_assert(sizeof(Slab) == 64);

// The durable root: the slab list, the bucket count the table was created
// with (so attach rebuilds the same table shape) and the slab size.
struct SoftRoot {
  static constexpr std::uint32_t kTypeTag = 0x42A5'0024;
  static constexpr std::uint32_t kTypeVersion = 1;
  static constexpr const char* kTypeName = "baselines::SoftHashTable";
  std::atomic<Slab*> slabs{nullptr};
  std::uint64_t n_buckets = 0;
  std::uint64_t slab_bytes = 0;  // a multiple of 64, >= kMinSlabBytes
  SoftRoot(std::uint64_t n, std::uint64_t sb) : n_buckets(n), slab_bytes(sb) {}
  std::size_t slab_nodes() const { return static_cast<std::size_t>(slab_bytes / sizeof(PNode) - 1); }
};
static_assert(sizeof(SoftRoot) == 24);
static_assert(offsetof(SoftRoot, slabs) == 0);
static_assert(offsetof(SoftRoot, n_buckets) == 8);
static_assert(offsetof(SoftRoot, slab_bytes) == 16);

// The node states, in the low two bits of a VNode's own next word.
enum State : std::uintptr_t { kInserted = 0, kIntendToDelete = 1, kIntendToInsert = 2, kDeleted = 3 };

}  // namespace soft

template <soft::Order O = soft::Order::kOneFlush, unsigned Faults = soft::internal::kNoFaults>
class SoftHashTable {
  using PNode = soft::PNode;
  using Slab = soft::Slab;
  using State = soft::State;

  // The volatile node (DRAM). next = successor | this node's state.
  struct alignas(8) VNode {
    std::int64_t key = 0;
    std::int64_t value0 = 0;            // the inserted value (what create writes)
    std::atomic<std::int64_t> value{0};  // the current map value (durable before it is stored here)
    PNode* pptr = nullptr;
    std::uint8_t pvalidity = 0;          // the paper's pValidity
    std::atomic<bool> locked{false};     // map put / erase of this key
    std::atomic<std::uintptr_t> next{0};
  };
  static VNode* ref(std::uintptr_t w) { return reinterpret_cast<VNode*>(w & ~std::uintptr_t{3}); }
  static State state_of(std::uintptr_t w) { return static_cast<State>(w & 3u); }
  static std::uintptr_t tag(VNode* p, State s) { return reinterpret_cast<std::uintptr_t>(p) | s; }

 public:
  static constexpr bool kDurable = true;

  // A new table under root `name` of `pool` (single-threaded). slab_bytes:
  // the size of the pool blocks PNodes are carved from (crash campaigns use
  // small ones: zeroing a slab writes back each of its lines).
  static std::unique_ptr<SoftHashTable> create(pmem::Pool& pool, std::string_view name, int threads,
                                               std::uint64_t buckets,
                                               std::size_t slab_bytes = soft::kDefaultSlabBytes) {
    if (buckets == 0) buckets = 1;
    if (slab_bytes < soft::kMinSlabBytes || slab_bytes % 64 != 0 || slab_bytes > pool.heap().max_block())
      throw std::invalid_argument("SoftHashTable: slab_bytes must be a multiple of 64 in [128, 64 KiB]");
    auto* root = pool.create_root<soft::SoftRoot>(name, buckets, slab_bytes);  // persists root, then names it
    return std::unique_ptr<SoftHashTable>(new SoftHashTable(pool, root, threads));
  }
  // The table under root `name`: the paper's recovery (scan, rebuild).
  static std::unique_ptr<SoftHashTable> attach(pmem::Pool& pool, std::string_view name, int threads) {
    auto t = std::unique_ptr<SoftHashTable>(new SoftHashTable(pool, pool.root<soft::SoftRoot>(name), threads));
    t->rebuild();
    return t;
  }
  ~SoftHashTable() {
    // No operation runs concurrently: relaxed loads. Linked nodes (DELETED
    // ones too) were never retired; unlinked ones are EBR's.
    for (auto& h : heads_)
      for (VNode* n = ref(h.next.load(std::memory_order_relaxed)); n != nullptr;) {
        VNode* nx = ref(n->next.load(std::memory_order_relaxed));
        delete n;
        n = nx;
      }
  }
  SoftHashTable(const SoftHashTable&) = delete;
  SoftHashTable& operator=(const SoftHashTable&) = delete;

  // ---------------------------------------------------------------- set
  bool insert(std::int64_t key, int tid) { return insert_node(key, 0, tid).second; }

  // The paper's remove.
  bool remove(std::int64_t key, int tid) { return remove_node<false>(key, tid).first; }

  // The paper's contains: no write-back, no CAS.
  bool contains(std::int64_t key, int tid) {
    check_tid(tid, threads_, "SoftHashTable");
    auto g = ebr_.pin(tid);
    const VNode* c = lookup(key);
    if (c == nullptr) return false;
    const State s = state_of(c->next.load(std::memory_order_acquire));
    return s == soft::kInserted || s == soft::kIntendToDelete;
  }

  // ---------------------------------------------------------------- map
  // The old value, or nullopt if the key was absent (then inserted).
  std::optional<std::int64_t> put(std::int64_t key, std::int64_t value, int tid) {
    if (value == soft::kNoUpdate) throw std::invalid_argument("SoftHashTable: INT64_MIN is reserved");
    check_tid(tid, threads_, "SoftHashTable");
    auto g = ebr_.pin(tid);  // (insert_node pins again: pins nest) keeps the node found alive
    for (;;) {
      auto [node, inserted] = insert_node(key, value, tid);
      if (inserted) return std::nullopt;
      // The key is present (INSERTED or INTEND_TO_DELETE, after helping an
      // INTEND_TO_INSERT one): update it unless a remove got there first.
      VNode* c = node;
      lock(c);
      if (state_of(c->next.load(std::memory_order_acquire)) == soft::kInserted) {
        const std::int64_t old = c->value.load(std::memory_order_relaxed);  // relaxed: written under the lock we hold
        c->pptr->value1.store(value, std::memory_order_release);
        // PERSIST: the update is durable before any thread can read it.
        // CRASH: before the psync, value1 is old or new: the put is pending.
        if constexpr ((Faults & soft::internal::kNoUpdatePwb) == 0) persist::pwb(&c->pptr->value1, sizeof(std::int64_t));
        persist::psync();
        c->value.store(value, std::memory_order_release);  // linearization point (P3)
        unlock(c);
        return old;
      }
      unlock(c);
      finish_remove(c);  // INTEND_TO_DELETE: help the remove, then insert anew
    }
  }

  std::optional<std::int64_t> get(std::int64_t key, int tid) {
    check_tid(tid, threads_, "SoftHashTable");
    auto g = ebr_.pin(tid);
    const VNode* c = lookup(key);
    if (c == nullptr) return std::nullopt;
    const State s = state_of(c->next.load(std::memory_order_acquire));
    if (s != soft::kInserted && s != soft::kIntendToDelete) return std::nullopt;
    return c->value.load(std::memory_order_acquire);
  }

  // The old value, or nullopt if the key was absent. The paper's remove,
  // with the INSERTED -> INTEND_TO_DELETE step under the node's lock.
  std::optional<std::int64_t> erase(std::int64_t key, int tid) {
    const auto [won, old] = remove_node<true>(key, tid);
    return won ? std::optional<std::int64_t>(old) : std::nullopt;
  }

  // ------------------------------------------------------------- views
  // (key, value) of the present keys, sorted. Not concurrent with updates.
  std::vector<std::pair<std::int64_t, std::int64_t>> items(bool /*map*/) const {
    std::vector<std::pair<std::int64_t, std::int64_t>> out;
    for (const auto& h : heads_)
      for (VNode* n = ref(h.next.load(std::memory_order_acquire)); n != nullptr;
           n = ref(n->next.load(std::memory_order_acquire))) {
        const State s = state_of(n->next.load(std::memory_order_acquire));
        if (s == soft::kInserted || s == soft::kIntendToDelete)
          out.emplace_back(n->key, n->value.load(std::memory_order_acquire));
      }
    std::sort(out.begin(), out.end());
    return out;
  }
  std::uint64_t buckets() const { return heads_.size(); }
  // Slabs in the root's list (tests).
  std::size_t slabs() const {
    std::size_t n = 0;
    for (Slab* s = root_->slabs.load(std::memory_order_acquire); s != nullptr; s = s->next) ++n;
    return n;
  }

  // The newest slab (tests).
  const void* first_slab() const { return root_->slabs.load(std::memory_order_acquire); }

  // The root type's recover hook (pmem/root_registry.h): marks every slab.
  // Writes nothing; the PNodes are classified by attach().
  static void recover_root(pmem::Pool&, soft::SoftRoot* r, const std::function<void(void*)>& mark_live) {
    std::size_t steps = 0;
    // Relaxed: recovery is single-threaded.
    for (Slab* s = r->slabs.load(std::memory_order_relaxed); s != nullptr; s = s->next) {
      if (++steps > kMaxListWalk || s->magic != soft::kSlabMagic)
        throw std::runtime_error("SoftHashTable: corrupt slab list");
      mark_live(s);
    }
  }

 private:
  // The paper's remove, shared by the set and the map: whether this call
  // won the INSERTED -> INTEND_TO_DELETE step, and (kMap) the value it
  // removed. The map takes the node's lock around the step so that a
  // concurrent put's update and the removed value agree; the set stays
  // lock-free.
  template <bool kMap>
  std::pair<bool, std::int64_t> remove_node(std::int64_t key, int tid) {
    check_tid(tid, threads_, "SoftHashTable");
    VNode* head = bucket(key);
    auto g = ebr_.pin(tid);
    VNode* pred;
    State cs;
    const std::uintptr_t curr = find(head, key, &pred, &cs, tid);
    VNode* c = ref(curr);
    if (c == nullptr || c->key != key || cs == soft::kIntendToInsert || cs == soft::kDeleted) return {false, 0};
    bool won = false;
    std::int64_t old = 0;
    if constexpr (kMap) lock(c);
    while (!won && state_of(c->next.load(std::memory_order_acquire)) == soft::kInserted)
      won = state_cas(c, soft::kInserted, soft::kIntendToDelete);
    if constexpr (kMap) {
      if (won) old = c->value.load(std::memory_order_relaxed);  // relaxed: updates hold the lock we hold
      unlock(c);
    }
    finish_remove(c);
    if (won) trim(pred, curr, tid);
    return {won, old};
  }

  SoftHashTable(pmem::Pool& pool, soft::SoftRoot* root, int threads)
      : threads_(threads), heap_(&pool.heap()), root_(root),
        slab_nodes_(root->slab_nodes()),
        heads_(static_cast<std::size_t>(root->n_buckets)),
        local_(static_cast<std::size_t>(threads)),
        ebr_(threads) {
    if (threads < 1) throw std::invalid_argument("SoftHashTable: threads must be >= 1");
  }

  VNode* bucket(std::int64_t key) {
    auto x = static_cast<std::uint64_t>(key);
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    x ^= x >> 31;
    return &heads_[x % heads_.size()];
  }

  // ------------------------------------------------------------- the list
  // The paper's find: returns curr = pred->next as read (curr's address |
  // pred's state), *pred_out = the last non-DELETED node with key < key
  // (or the bucket's head), *cstate = curr's state; trims the DELETED nodes
  // it passes. curr is the first non-DELETED node with key >= key, or null.
  std::uintptr_t find(VNode* head, std::int64_t key, VNode** pred_out, State* cstate, int tid) {
  again:
    VNode* prev = head;
    std::uintptr_t curr = prev->next.load(std::memory_order_acquire);
    for (;;) {
      VNode* c = ref(curr);
      if (c == nullptr) {
        *pred_out = prev;
        *cstate = soft::kInserted;
        return curr;
      }
      const std::uintptr_t succ = c->next.load(std::memory_order_acquire);
      if (state_of(succ) == soft::kDeleted) {
        if (!trim(prev, curr, tid)) goto again;
        curr = tag(ref(succ), state_of(curr));
        continue;
      }
      if (c->key >= key) {
        *pred_out = prev;
        *cstate = state_of(succ);
        return curr;
      }
      prev = c;
      curr = succ;
    }
  }

  // The paper's trim: unlinks curr's node (DELETED) from prev, keeping
  // prev's state; the winner retires it.
  bool trim(VNode* prev, std::uintptr_t curr, int tid) {
    VNode* c = ref(curr);
    // ORDER: acquire: c is DELETED, its next is immutable (I1).
    const std::uintptr_t succ = tag(ref(c->next.load(std::memory_order_acquire)), state_of(curr));
    std::uintptr_t e = curr;
    if (!prev->next.compare_exchange_strong(e, succ, std::memory_order_acq_rel, std::memory_order_acquire)) return false;
    ebr_.retire(tid, c, &free_vnode, this);
    return true;
  }

  // The paper's contains traversal (no CAS): the first node with key >=
  // key, if its key is key.
  const VNode* lookup(std::int64_t key) {
    const VNode* c = ref(bucket(key)->next.load(std::memory_order_acquire));
    while (c != nullptr && c->key < key) c = ref(c->next.load(std::memory_order_acquire));
    return c != nullptr && c->key == key ? c : nullptr;
  }

  // The paper's stateCAS: moves n's state from `from` to `to`, keeping next.
  static bool state_cas(VNode* n, State from, State to) {
    const std::uintptr_t p = n->next.load(std::memory_order_acquire);
    std::uintptr_t e = tag(ref(p), from);
    return n->next.compare_exchange_strong(e, tag(ref(p), to), std::memory_order_acq_rel, std::memory_order_acquire);
  }

  // The paper's insert. Returns the node that holds the key and whether
  // this call inserted it (false: present, or another insert's node that
  // we helped to INSERTED).
  std::pair<VNode*, bool> insert_node(std::int64_t key, std::int64_t value, int tid) {
    check_tid(tid, threads_, "SoftHashTable");
    VNode* head = bucket(key);
    auto g = ebr_.pin(tid);
    for (;;) {
      VNode* pred;
      State cs;
      const std::uintptr_t curr = find(head, key, &pred, &cs, tid);
      VNode* c = ref(curr);
      VNode* node;
      bool result = false;
      if (c != nullptr && c->key == key) {
        if (cs != soft::kIntendToInsert) return {c, false};
        node = c;  // help the pending insert, then answer false
      } else {
        node = make_node(key, value, ref(curr), tid);
        std::uintptr_t e = curr;
        // ORDER: release: the VNode's fields (and, for kBodyFirst, the
        // PNode body's durability) precede its publication.
        if (!pred->next.compare_exchange_strong(e, tag(node, state_of(curr)), std::memory_order_acq_rel,
                                                std::memory_order_acquire)) {
          free_pnode(node->pptr, tid);  // never published
          delete node;
          continue;
        }
        result = true;
      }
      if (result || (Faults & soft::internal::kNoHelpCreate) == 0) create(node);
      // P1: the PNode is valid and durable; now the insert takes effect.
      while (state_of(node->next.load(std::memory_order_acquire)) == soft::kIntendToInsert)
        state_cas(node, soft::kIntendToInsert, soft::kInserted);
      return {node, result};
    }
  }

  // A remove's second half (the winner's and its helpers'): destroy the
  // PNode, then DELETED.
  void finish_remove(VNode* c) {
    destroy(c);
    // P2: the deleted bit is durable; now the remove takes effect.
    while (state_of(c->next.load(std::memory_order_acquire)) == soft::kIntendToDelete)
      state_cas(c, soft::kIntendToDelete, soft::kDeleted);
  }

  // A new VNode in state INTEND_TO_INSERT before `succ`, with a PNode.
  VNode* make_node(std::int64_t key, std::int64_t value, VNode* succ, int tid) {
    PNode* p = alloc_pnode(tid);
    auto* n = new VNode;
    n->key = key;
    n->value0 = value;
    n->value.store(value, std::memory_order_relaxed);  // relaxed: private until the linking CAS (release)
    n->pptr = p;
    // The paper's alloc(): the new incarnation's validity is the opposite of
    // the old one's validEnd (I4: validEnd == deleted on a free PNode).
    n->pvalidity = static_cast<std::uint8_t>(p->valid_end.load(std::memory_order_relaxed) ^ 1u);
    n->next.store(tag(succ, soft::kIntendToInsert), std::memory_order_relaxed);
    // The PNode is private until the link: no other thread writes its line.
    p->value1.store(soft::kNoUpdate, std::memory_order_relaxed);
    if constexpr (O == soft::Order::kBodyFirst) {
      p->valid_start.store(n->pvalidity, std::memory_order_relaxed);
      p->key.store(key, std::memory_order_relaxed);
      p->value0.store(value, std::memory_order_relaxed);
      // PERSIST (kBodyFirst): validStart, key, value0, value1 are durable
      // before the VNode is linked, i.e. before any thread can store this
      // PNode's validEnd: every copy of the line that holds the new validEnd
      // lands over a durable body (a torn image mixes only the validEnd word).
      // CRASH: validStart new, validEnd old: not valid (validStart != validEnd).
      if constexpr ((Faults & soft::internal::kNoCreatePwb) == 0) persist::pwb(p, sizeof(PNode));
      persist::psync();
    }
    return n;
  }

  // The paper's PNode::create. kOneFlush: validStart, key, value, validEnd
  // in program order, one pwb, one fence. kBodyFirst: validEnd only (the
  // body is durable since make_node). Owners and helpers write the same values.
  void create(VNode* n) {
    PNode* p = n->pptr;
    const std::uint8_t v = n->pvalidity;
    if constexpr (O == soft::Order::kOneFlush) {
      p->valid_start.store(v, std::memory_order_relaxed);
      // ORDER: release stores keep the program order validStart, key, value0,
      // validEnd in the line (what the one write-back relies on; x86 TSO).
      p->key.store(n->key, std::memory_order_release);
      p->value0.store(n->value0, std::memory_order_release);
    }
    p->valid_end.store(v, std::memory_order_release);
    // PERSIST: the PNode is durable before the state can become INSERTED (P1).
    // CRASH: before the pwb lands, validEnd is the old one: the PNode is not
    // valid (kOneFlush: under per-line store order, a line with the new
    // validEnd has the new key and value).
    if constexpr ((Faults & soft::internal::kNoCreatePwb) == 0) persist::pwb(p, sizeof(PNode));
    persist::psync();
  }

  // The paper's PNode::destroy: the deleted bit, one pwb, one fence.
  static void destroy(VNode* n) {
    PNode* p = n->pptr;
    p->deleted.store(n->pvalidity, std::memory_order_release);
    // PERSIST: the deletion is durable before the state can become DELETED (P2).
    // CRASH: before it lands the PNode is valid: the remove is pending.
    persist::pwb(&p->deleted, 1);
    persist::psync();
  }

  void lock(VNode* n) {
    sync::spin_until([&] {
      bool e = false;
      return !n->locked.load(std::memory_order_relaxed) &&
             n->locked.compare_exchange_weak(e, true, std::memory_order_acquire, std::memory_order_relaxed);
    });
  }
  static void unlock(VNode* n) { n->locked.store(false, std::memory_order_release); }

  // ------------------------------------------------------------- PNodes
  struct Local {
    Slab* slab = nullptr;       // the slab this thread carves from
    std::size_t used = SIZE_MAX;  // none left: the first allocation takes a slab
    std::vector<PNode*> free;   // recycled PNodes (DRAM; rebuilt by recovery)
  };

  PNode* alloc_pnode(int tid) {
    Local& l = local_[static_cast<std::size_t>(tid)].value;
    if (!l.free.empty()) {
      PNode* p = l.free.back();
      l.free.pop_back();
      return p;
    }
    if (l.used >= slab_nodes_) {
      l.slab = new_slab(tid);
      l.used = 0;
    }
    return &l.slab->nodes()[l.used++];
  }
  void free_pnode(PNode* p, int tid) { local_[static_cast<std::size_t>(tid)].value.free.push_back(p); }

  // EBR's deleter: the VNode's PNode goes to the freeing thread's list.
  static void free_vnode(void* ctx, void* p, int tid) {
    auto* t = static_cast<SoftHashTable*>(ctx);
    auto* n = static_cast<VNode*>(p);
    t->free_pnode(n->pptr, tid);
    delete n;
  }

  // P5: zeroed and durable, then linked into the root (durable), then used.
  Slab* new_slab(int tid) {
    const std::size_t bytes = static_cast<std::size_t>(root_->slab_bytes);
    auto* s = static_cast<Slab*>(heap_->alloc(bytes, tid));
    std::memset(static_cast<void*>(s), 0, bytes);  // every PNode (0,0,0): not valid
    s->magic = soft::kSlabMagic;
    Slab* h = root_->slabs.load(std::memory_order_acquire);
    for (;;) {
      s->next = h;
      // PERSIST: the slab (zeroed PNodes, header) is durable before the
      // root can name it. CRASH: before the CAS is durable the slab is
      // unreachable: the pool frees it; none of its PNodes was used.
      persist::pwb(s, bytes);
      persist::psync();
      if (root_->slabs.compare_exchange_strong(h, s, std::memory_order_acq_rel, std::memory_order_acquire)) break;
    }
    // PERSIST: the link is durable before any PNode of the slab is used.
    persist::pwb(&root_->slabs, sizeof(Slab*));
    persist::psync();
    return s;
  }

  // ------------------------------------------------------------ recovery
  // The paper's recovery: every valid PNode becomes an INSERTED VNode,
  // every other one is free. Reads the pool only; writes nothing to it.
  void rebuild() {
    std::size_t i = 0, steps = 0;
    for (Slab* s = root_->slabs.load(std::memory_order_acquire); s != nullptr; s = s->next) {
      if (++steps > kMaxListWalk || s->magic != soft::kSlabMagic)
        throw std::runtime_error("SoftHashTable: corrupt slab list");
      for (std::size_t j = 0; j < slab_nodes_; ++j) {
        PNode& p = s->nodes()[j];
        bool keep = p.is_valid();
        if constexpr ((Faults & soft::internal::kRecoveryIgnoresDeleted) != 0)
          keep = p.valid_start.load(std::memory_order_relaxed) == p.valid_end.load(std::memory_order_relaxed) &&
                 p.key.load(std::memory_order_relaxed) != 0;  // (zeroed slots never held a key)
        if (keep && link_recovered(&p)) continue;
        // Not valid: validEnd == deleted already (I4 holds for every PNode
        // that is not valid), so its next incarnation takes !validEnd.
        free_pnode(&p, static_cast<int>(i++ % static_cast<std::size_t>(threads_)));
      }
    }
  }
  // Inserts a recovered node INSERTED in key order (single-threaded).
  // False if its key is present already (never for a correct run: P4).
  bool link_recovered(PNode* p) {
    const std::int64_t key = p->key.load(std::memory_order_relaxed);
    VNode* prev = bucket(key);
    VNode* c = ref(prev->next.load(std::memory_order_relaxed));
    while (c != nullptr && c->key < key) {
      prev = c;
      c = ref(c->next.load(std::memory_order_relaxed));
    }
    if (c != nullptr && c->key == key) return false;
    auto* n = new VNode;
    n->key = key;
    n->value0 = p->value0.load(std::memory_order_relaxed);
    n->value.store(p->value(), std::memory_order_relaxed);
    n->pptr = p;
    n->pvalidity = p->valid_end.load(std::memory_order_relaxed);
    n->next.store(tag(c, soft::kInserted), std::memory_order_relaxed);
    prev->next.store(tag(n, soft::kInserted), std::memory_order_release);
    return true;
  }

  int threads_;
  pmem::Heap* heap_;
  soft::SoftRoot* root_;
  std::size_t slab_nodes_;                         // PNodes per slab
  std::vector<VNode> heads_;                       // sentinels, INSERTED, key unused
  std::vector<sync::CachePadded<Local>> local_;    // before ebr_: EBR's deleters push here
  sync::Ebr ebr_;
};

// The pool's recover hook (the trace depends on neither order nor faults).
inline const bool kSoftRootRegistered =
    pmem::register_root_type<soft::SoftRoot>(&SoftHashTable<>::recover_root);

}  // namespace ferrite::baselines
