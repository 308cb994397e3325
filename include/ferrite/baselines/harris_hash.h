// ferrite/baselines/harris_hash.h — Harris's lock-free linked list and a
// hash table of such lists (a set and a map), written once and templated on
// a persistence policy (durable_policy.h). Three policies make three
// competitors of each (the list alone — one bucket — is the bench's
// harris-list / izraelevitz-list / nvtraverse-list):
//
//   harris::Transient      DRAM, no persistence: the original algorithm
//                          (bench technique harris-hashmap, origin transient);
//   harris::Izraelevitz    the Izraelevitz–Mendes–Scott transform: a write-back
//                          and a persist fence after every shared load and
//                          every store/CAS (izraelevitz-hashmap);
//   harris::NVTraverse     the NVTraverse transform: the traversal issues no
//                          write-back; at its end the nodes and links it
//                          returns are written back (ensureReachable,
//                          makePersistent), then the critical phase writes
//                          back every shared read and every CAS
//                          (nvtraverse-hashmap). The traversal's end is
//                          HarrisHashTable::traversal_done.
//
// Sources.
//   * T. L. Harris, "A Pragmatic Implementation of Non-Blocking
//     Linked-Lists", DISC 2001: search (find left and right, check
//     adjacency, unlink the marked nodes between them), insert, delete
//     (logical deletion by marking the low bit of next, then physical
//     deletion by a CAS on the predecessor), find.
//   * J. Izraelevitz, H. Mendes, M. L. Scott, "Linearizability of Persistent
//     Memory Objects Under a Full-System-Crash Failure Model", DISC 2016, §5
//     (the transform; as in baselines/izraelevitz.h for the MS queue and
//     Treiber's stack).
//   * M. Friedman, N. Ben-David, Y. Wei, G. E. Blelloch, E. Petrank,
//     "NVTraverse: In NVRAM Data Structures, the Destination is More
//     Important than the Journey", PLDI 2020: its transformation of
//     traversal data structures — a traversal phase, then ensureReachable +
//     makePersistent of the nodes the traversal returns, then a critical
//     phase in which every read is followed by a flush and every CAS by a
//     flush, with a fence before each CAS and before returning. Harris's
//     list is one of its examples.
//
// The map. Harris's list is a set; the map extends it as mirror/harris_list.h
// does (the same operations and answers as mirror-hashmap): a node carries
// a value word updated in place by a CAS (put on a present key); erase first
// CASes the value to kTombstone (its linearization point), then marks the
// node and unlinks it as Harris's delete does. A node whose value is
// kTombstone is absent; put/erase that meet one finish its deletion (mark it)
// and search again. kTombstone (INT64_MIN) is a reserved value. Values are 8
// bytes (the bench's --value-size is ignored, as for libcds-michael and
// mirror-hashmap).
//
// The hash table: a fixed array of buckets, each the head link of one list
// (Harris's head sentinel replaced by the link; its tail sentinel by
// nullptr). Keys are spread by splitmix64's finalizer (as mirror-hashmap).
//
// Thread safety: every operation is lock-free and safe concurrently for
// distinct tids in [0, threads). Use one table either as a set or as a map.
//
// Invariants (Harris): each list is sorted by key, strictly increasing over
// its unmarked nodes; a marked next pointer never changes again; a node is
// unlinked only after it is marked. Map: a kTombstone value never changes
// again. Reclamation: the thread whose CAS unlinks nodes retires them to
// EBR (sync/ebr.h) while pinned; every operation runs pinned.
//
// Persistence invariants (both durable policies).
//   * A node (key, value, next) is written back before the CAS that links
//     it (P::publish; the transform's rule for a fresh node's
//     initializing stores, and NVTraverse's "flush after write" before the
//     CAS's fence).
//   * Every successful CAS of a completed operation is durable before the
//     operation returns (Izraelevitz: pwb + psync after the CAS;
//     NVTraverse: pwb after the CAS, the next fence before the next CAS or
//     the return).
//   * Everything an operation's answer depends on is durable before it
//     returns: Izraelevitz flushes every location it loads; NVTraverse
//     flushes the link into `left`'s node (ensureReachable), `left`, the
//     marked nodes between left and right and `right` (makePersistent), and
//     each location the critical phase reads. The keys are immutable and
//     durable before their node is linked, so loading a key needs no
//     write-back (the transform's flush of an already durable, immutable
//     location is a no-op).
//   * A removed node is retired only after the unlinking CAS's write-back,
//     and freed by EBR only after the unlinking operation unpinned, which it
//     does after its last psync: no durable link ever reaches a reused block.
// The fence is psync (a persist fence), as in baselines/izraelevitz.h: a
// value that thread A wrote and thread B read must be durable before B's
// effects can be; on x86 pfence and psync are the same sfence.
//
// Recovery. The durable state is a set of Harris lists whose every link was
// made by a CAS that the operation made durable: some nodes may be marked
// (removed, not yet unlinked) or tombstoned (erased, not yet marked), which
// the algorithm handles at run time as it does any concurrent removal; an
// unlinked node is never reachable. Nothing is repaired. The pool's recover
// hook (pmem/root_registry.h, registered below) marks the bucket array and
// every node reachable from a bucket, following next pointers with the mark
// bit cleared; it writes nothing and reads only the pool, so it is
// idempotent and needs no DRAM state of the crashed run. attach() finds the
// root and frees nothing. A crash during create() leaves the bucket array
// unreached (no root names it): the pool frees it. Both durable policies
// share this durable format and root type.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string_view>
#include <utility>
#include <vector>

#include "ferrite/baselines/durable_policy.h"
#include "ferrite/baselines/persistent_common.h"
#include "ferrite/persist/persist.h"
#include "ferrite/pmem/pool.h"
#include "ferrite/pmem/root_registry.h"
#include "ferrite/sync/ebr.h"

namespace ferrite::baselines {

namespace harris {

// A map value that means "erased": an erase's linearization point writes it.
inline constexpr std::int64_t kTombstone = INT64_MIN;

// A list node. In a durable table it lives in the pool heap: 24 bytes in a
// 32-byte block aligned to 32, so one cache line holds the whole node and
// pwb(node) writes back all three fields.
struct Node {
  std::int64_t key;                 // immutable once linked
  std::atomic<std::int64_t> value;  // map value (set: 0), or kTombstone
  std::atomic<Node*> next;          // low bit set: the node is marked (removed)
};
static_assert(sizeof(Node) == 24);
static_assert(offsetof(Node, key) == 0);
static_assert(offsetof(Node, value) == 8);
static_assert(offsetof(Node, next) == 16);
static_assert(std::atomic<Node*>::is_always_lock_free);
using Link = std::atomic<Node*>;

inline bool marked(Node* p) { return (reinterpret_cast<std::uintptr_t>(p) & 1u) != 0; }
inline Node* mark(Node* p) { return reinterpret_cast<Node*>(reinterpret_cast<std::uintptr_t>(p) | 1u); }
inline Node* unmark(Node* p) { return reinterpret_cast<Node*>(reinterpret_cast<std::uintptr_t>(p) & ~std::uintptr_t{1}); }

// The persistence policies (durable_policy.h): one per competitor.
using Transient = durable::Transient;
template <unsigned Faults = kNoFaults>
using Izraelevitz = durable::Izraelevitz<Faults>;
template <unsigned Faults = kNoFaults>
using NVTraverse = durable::NVTraverse<Faults>;
using internal::kNoMakePersistent;

// ------------------------------------------------------------ the root
// The durable root of a table (both durable policies): the bucket array (in
// the pool heap) and its length. Written once by create(), never changed.
struct HashRoot {
  // 0x42A5'0014: it was 0x42A5'0010, the tag of Friedman's durable queue
  // (friedman.h), so one of the two registrations was refused and a pool
  // holding the other was recovered by the wrong hook (caught when a root
  // whose recovery failed started being left closed; the registry's
  // conflicts are now tested: RootRegistry.EveryStructureRegistersADistinctRootType).
  static constexpr std::uint32_t kTypeTag = 0x42A5'0014;
  static constexpr std::uint32_t kTypeVersion = 1;
  static constexpr const char* kTypeName = "baselines::HarrisHashTable";
  Link* buckets = nullptr;
  std::uint64_t n_buckets = 0;
  HashRoot(Link* b, std::uint64_t n) : buckets(b), n_buckets(n) {}
};
static_assert(sizeof(HashRoot) == 16);
static_assert(offsetof(HashRoot, buckets) == 0);
static_assert(offsetof(HashRoot, n_buckets) == 8);

}  // namespace harris

template <class P>
class HarrisHashTable {
  using Node = harris::Node;
  using Link = harris::Link;

 public:
  // ----------------------------------------------------------- lifetime
  // Transient: a table in DRAM.
  HarrisHashTable(int threads, std::uint64_t buckets)
    requires(!P::kDurable)
      : threads_(threads), ebr_(threads), n_(buckets == 0 ? 1 : buckets),
        owned_(new Link[n_]), buckets_(owned_.get()) {
    for (std::uint64_t i = 0; i < n_; ++i) buckets_[i].store(nullptr, std::memory_order_relaxed);
  }
  // Durable: a new table under root `name` of `pool` (single-threaded).
  static std::unique_ptr<HarrisHashTable> create(pmem::Pool& pool, std::string_view name, int threads,
                                                 std::uint64_t buckets)
    requires(P::kDurable)
  {
    if (buckets == 0) buckets = 1;
    void* mem = pool.heap().alloc(buckets * sizeof(Link), 0);
    auto* b = static_cast<Link*>(mem);
    for (std::uint64_t i = 0; i < buckets; ++i) new (&b[i]) Link(nullptr);
    // PERSIST: the empty buckets are durable before the root names them.
    // CRASH: before publish, no root reaches the array: the pool frees it.
    persist::pwb(b, buckets * sizeof(Link));
    persist::psync();
    auto* root = pool.create_root<harris::HashRoot>(name, b, buckets);  // persists root, then names it
    return std::unique_ptr<HarrisHashTable>(new HarrisHashTable(pool, root, threads));
  }
  // Durable: the table under root `name` (the pool recovered its heap when
  // it opened; nothing to repair, nothing freed).
  static std::unique_ptr<HarrisHashTable> attach(pmem::Pool& pool, std::string_view name, int threads)
    requires(P::kDurable)
  {
    return std::unique_ptr<HarrisHashTable>(new HarrisHashTable(pool, pool.root<harris::HashRoot>(name), threads));
  }
  // EBR frees the retired nodes; a transient table also deletes its live
  // ones (a durable table's live nodes stay in the pool).
  ~HarrisHashTable() {
    if constexpr (!P::kDurable) {
      for (std::uint64_t i = 0; i < n_; ++i)
        for (Node* n = harris::unmark(buckets_[i].load(std::memory_order_relaxed)); n != nullptr;) {
          // Relaxed: no operation runs concurrently with the destructor.
          Node* nx = harris::unmark(n->next.load(std::memory_order_relaxed));
          ::operator delete(n);  // marked but still linked nodes were never retired
          n = nx;
        }
    }
  }
  HarrisHashTable(const HarrisHashTable&) = delete;
  HarrisHashTable& operator=(const HarrisHashTable&) = delete;

  // ---------------------------------------------------------------- set
  // Harris's insert (value 0).
  bool insert(std::int64_t key, int tid) {
    check_tid(tid, threads_, "HarrisHashTable");
    Link& head = bucket(key);
    auto g = ebr_.pin(tid);
    Node* node = nullptr;
    bool ok = false;
    for (;;) {
      Link* left;
      Node* right = search(head, key, &left, tid);
      if (right != nullptr && right->key == key) {
        if (node != nullptr) free_now(node, tid);  // never published
        break;
      }
      if (node == nullptr) node = make(tid, key, 0, right);
      else node->next.store(right, std::memory_order_relaxed);  // relaxed: private until the CAS (release)
      P::publish(node, sizeof(Node));
      Node* e = right;
      // CRASH: once this CAS is durable (its pwb + the next fence) the key is present.
      if (P::cas(*left, e, node)) {
        ok = true;
        break;
      }
    }
    P::end_op();
    return ok;
  }

  // Harris's delete.
  bool remove(std::int64_t key, int tid) {
    check_tid(tid, threads_, "HarrisHashTable");
    Link& head = bucket(key);
    auto g = ebr_.pin(tid);
    Link* left;
    Node* right;
    Node* right_next;
    for (;;) {
      right = search(head, key, &left, tid);
      if (right == nullptr || right->key != key) {
        P::end_op();
        return false;
      }
      right_next = P::read(right->next);
      if (!harris::marked(right_next)) {
        Node* e = right_next;
        // CRASH: once this mark is durable the key is absent (logical deletion).
        if (P::cas(right->next, e, harris::mark(right_next))) break;
      }
    }
    Node* e = right;
    if (P::cas(*left, e, right_next)) retire(right, tid);  // physical deletion by us
    else search(head, key, &left, tid);                   // someone's search unlinks it
    P::end_op();
    return true;
  }

  // Harris's find.
  bool contains(std::int64_t key, int tid) {
    check_tid(tid, threads_, "HarrisHashTable");
    Link& head = bucket(key);
    auto g = ebr_.pin(tid);
    Link* left;
    Node* right = search(head, key, &left, tid);
    const bool found = right != nullptr && right->key == key;
    P::end_op();
    return found;
  }

  // ---------------------------------------------------------------- map
  // The old value, or nullopt if the key was absent (then inserted).
  std::optional<std::int64_t> put(std::int64_t key, std::int64_t value, int tid) {
    check_tid(tid, threads_, "HarrisHashTable");
    if (value == harris::kTombstone) throw std::invalid_argument("HarrisHashTable: INT64_MIN is reserved");
    Link& head = bucket(key);
    auto g = ebr_.pin(tid);
    Node* node = nullptr;
    std::optional<std::int64_t> old;
    for (;;) {
      Link* left;
      Node* right = search(head, key, &left, tid);
      if (right != nullptr && right->key == key) {
        std::int64_t cur = P::read(right->value);
        if (cur == harris::kTombstone) {
          finish_erase(right);
          continue;
        }
        // CRASH: once this CAS is durable the key maps to value.
        if (P::cas(right->value, cur, value)) {
          if (node != nullptr) free_now(node, tid);  // never published
          old = cur;
          break;
        }
        continue;
      }
      if (node == nullptr) node = make(tid, key, value, right);
      else node->next.store(right, std::memory_order_relaxed);  // relaxed: private until the CAS (release)
      P::publish(node, sizeof(Node));
      Node* e = right;
      if (P::cas(*left, e, node)) break;
    }
    P::end_op();
    return old;
  }

  std::optional<std::int64_t> get(std::int64_t key, int tid) {
    check_tid(tid, threads_, "HarrisHashTable");
    Link& head = bucket(key);
    auto g = ebr_.pin(tid);
    Link* left;
    std::optional<std::int64_t> r;
    Node* right = search(head, key, &left, tid);
    if (right != nullptr && right->key == key) {
      const std::int64_t v = P::read(right->value);
      if (v != harris::kTombstone) r = v;
    }
    P::end_op();
    return r;
  }

  // The old value, or nullopt if the key was absent.
  std::optional<std::int64_t> erase(std::int64_t key, int tid) {
    check_tid(tid, threads_, "HarrisHashTable");
    Link& head = bucket(key);
    auto g = ebr_.pin(tid);
    std::optional<std::int64_t> old;
    for (;;) {
      Link* left;
      Node* right = search(head, key, &left, tid);
      if (right == nullptr || right->key != key) break;
      std::int64_t cur = P::read(right->value);
      if (cur == harris::kTombstone) {  // erased by someone else, not yet marked
        finish_erase(right);
        continue;
      }
      // CRASH: once this CAS is durable the key is absent (the erase's
      // linearization point); marking and unlinking follow.
      if (P::cas(right->value, cur, harris::kTombstone)) {
        finish_erase(right);
        search(head, key, &left, tid);  // unlinks (and retires) it, as Harris's delete
        old = cur;
        break;
      }
    }
    P::end_op();
    return old;
  }

  // ------------------------------------------------------------- views
  // (key, value) of the present keys, sorted. Not concurrent with updates.
  std::vector<std::pair<std::int64_t, std::int64_t>> items(bool map) const {
    std::vector<std::pair<std::int64_t, std::int64_t>> out;
    std::size_t steps = 0;
    for (std::uint64_t i = 0; i < n_; ++i)
      for (Node* n = harris::unmark(buckets_[i].load(std::memory_order_acquire)); n != nullptr;) {
        if (++steps > kMaxListWalk) throw std::runtime_error("HarrisHashTable: cycle in a corrupt image");
        Node* nx = n->next.load(std::memory_order_acquire);
        const std::int64_t v = n->value.load(std::memory_order_acquire);
        if (!harris::marked(nx) && !(map && v == harris::kTombstone)) out.emplace_back(n->key, v);
        n = harris::unmark(nx);
      }
    std::sort(out.begin(), out.end());
    return out;
  }
  std::uint64_t buckets() const { return n_; }

  // The root type's recover hook (pmem/root_registry.h): marks the bucket
  // array and every node reachable from a bucket. Writes nothing.
  static void recover_root(pmem::Pool&, harris::HashRoot* r, const std::function<void(void*)>& mark_live) {
    mark_live(r->buckets);
    std::size_t steps = 0;
    for (std::uint64_t i = 0; i < r->n_buckets; ++i)
      for (Node* n = harris::unmark(r->buckets[i].load(std::memory_order_relaxed)); n != nullptr;
           n = harris::unmark(n->next.load(std::memory_order_relaxed))) {
        // Relaxed: recovery is single-threaded.
        if (++steps > kMaxListWalk) throw std::runtime_error("HarrisHashTable: cycle in a corrupt image");
        mark_live(n);
      }
  }

 private:
  HarrisHashTable(pmem::Pool& pool, harris::HashRoot* root, int threads)
    requires(P::kDurable)
      : threads_(threads), ebr_(threads), mem_(&pool.heap()), n_(root->n_buckets), buckets_(root->buckets) {}

  Link& bucket(std::int64_t key) {
    auto x = static_cast<std::uint64_t>(key);
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    x ^= x >> 31;
    return buckets_[x % n_];
  }

  Node* make(int tid, std::int64_t key, std::int64_t value, Node* next) {
    void* mem = mem_.alloc(sizeof(Node), tid);
    auto* n = static_cast<Node*>(mem);
    n->key = key;
    new (&n->value) std::atomic<std::int64_t>(value);
    new (&n->next) std::atomic<Node*>(next);
    return n;
  }
  void free_now(Node* n, int tid) {
    mem_.free_now(n, tid);
  }
  void retire(Node* n, int tid) {
    // ORDER: called after the unlinking CAS (and its write-back); EBR frees
    // n only after this operation unpins, i.e. after its end_op psync.
    mem_.retire(ebr_, n, tid);
  }

  // Marks n's next (Harris's logical deletion) unless it is marked already.
  void finish_erase(Node* n) {
    Node* nx = P::read(n->next);
    while (!harris::marked(nx)) {
      if (P::cas(n->next, nx, harris::mark(nx))) return;
    }
  }

  // NVTraverse's end of the traversal (the other policies' make_persistent
  // is a no-op): ensureReachable(left) — the link through which the
  // traversal reached left's node (none when left is the bucket) — then
  // makePersistent(left, the marked nodes between, right), then the fence.
  // The marked nodes' next pointers are immutable, so walking them again
  // reads what the traversal read; we are pinned, so none is freed.
  static void traversal_done(const Link* into_left, const Link* left, Node* left_next, Node* right) {
    if constexpr (!P::kMakesPersistent) return;
    if (into_left != nullptr) P::make_persistent(into_left, sizeof(Link));
    P::make_persistent(left, sizeof(Link));
    for (Node* n = harris::unmark(left_next); n != nullptr && n != right;
         n = harris::unmark(n->next.load(std::memory_order_acquire)))  // ORDER: acquire: immutable (marked)
      P::make_persistent(n, sizeof(Node));
    if (right != nullptr) P::make_persistent(right, sizeof(Node));
    P::traversal_done();
  }

  // Harris's search (DISC'01): right = the first unmarked node with
  // key >= key (or nullptr), *left_out = the link whose value is right, the
  // marked nodes between them unlinked. Phase 1 is NVTraverse's traversal.
  Node* search(Link& head, std::int64_t key, Link** left_out, int tid) {
    for (;;) {  // search_again
      Link* left = &head;
      Node* left_next = nullptr;
      const Link* into_left = nullptr;  // the link into left's node (ensureReachable)
      Link* t_link = &head;
      const Link* into_t = nullptr;
      Node* t = nullptr;
      Node* t_next = P::traverse_read(head);
      // 1: find left and right (the traversal)
      do {
        if (!harris::marked(t_next)) {
          left = t_link;
          left_next = t_next;
          into_left = into_t;
        }
        t = harris::unmark(t_next);
        if (t == nullptr) break;
        into_t = t_link;
        t_link = &t->next;
        t_next = P::traverse_read(t->next);
      } while (harris::marked(t_next) || t->key < key);
      Node* right = t;
      // NVTraverse: ensureReachable(left); makePersistent(left..right).
      traversal_done(into_left, left, left_next, right);
      // 2: check nodes are adjacent
      if (left_next == right) {
        if (right != nullptr && harris::marked(P::read(right->next))) continue;
        *left_out = left;
        return right;
      }
      // 3: remove one or more marked nodes
      Node* e = left_next;
      if (P::cas(*left, e, right)) {
        for (Node* n = left_next; n != right;) {  // unlinked by us: ours to retire
          Node* nx = harris::unmark(n->next.load(std::memory_order_acquire));  // acquire: immutable (marked)
          retire(n, tid);
          n = nx;
        }
        if (right != nullptr && harris::marked(P::read(right->next))) continue;
        *left_out = left;
        return right;
      }
    }
  }

  int threads_;
  sync::Ebr ebr_;
  durable::NodeMemory<P> mem_;
  std::uint64_t n_;
  std::unique_ptr<Link[]> owned_;  // transient buckets
  Link* buckets_;
};

// The pool's recover hook (the trace depends on neither policy nor faults).
inline const bool kHarrisHashRootRegistered =
    pmem::register_root_type<harris::HashRoot>(&HarrisHashTable<harris::Izraelevitz<>>::recover_root);

template <unsigned F = kNoFaults>
using IzraelevitzHashTable = HarrisHashTable<harris::Izraelevitz<F>>;
template <unsigned F = kNoFaults>
using NVTraverseHashTable = HarrisHashTable<harris::NVTraverse<F>>;
using TransientHarrisHashTable = HarrisHashTable<harris::Transient>;

}  // namespace ferrite::baselines
