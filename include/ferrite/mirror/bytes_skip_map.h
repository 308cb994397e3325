// ferrite/mirror/bytes_skip_map.h — mirror::BytesSkipMap: Mirror's durable
// lock-free skip list (mirror/skip_list.h; PLDI 2021 §6) as an ordered map
// of byte-string keys and values of any size (0 bytes to
// pmem::kMaxPayloadBytes, no reserved value: the empty string is a key and
// a value like any other), with range scans in key order. It implements
// ferrite::OrderedMap (ferrite/map.h).
//
// What it is. The same algorithm as the int64 skip list — Herlihy and
// Shavit's LockFreeSkipList ("The Art of Multiprocessor Programming",
// §14.4, Figs. 14.10–14.16) with Mirror's patomic/pconst fields and the
// value-CAS map extension — instantiated with a key/value policy
// (BytesSkipKeys below) instead of IntSkipKeys, so the algorithm exists
// once (as HarrisList's BytesKeys, mirror/bytes_map.h). Keys and values live
// OUT OF LINE in payload blocks of the pool heap (pmem/payload.h),
// immutable (P2), persistent only (a payload never changes, so Mirror's two
// copies would buy nothing; every read goes to the pool). A node is a
// Mirror object of 48 + 16 (top + 1) bytes:
//
//   prefix  pconst<u64>     the key's first 8 bytes, big-endian, zero-padded
//   key     pconst<u64>     the key payload's pool offset (0 in the head)
//   klen    pconst<u32>     the key's length
//   top     pconst<i32>     top level: next[0 .. top]
//   owners  atomic<i32>     reclamation (skip_list.h), DRAM meaning only
//   value   patomic<i64>    the value payload's offset; 0 = erased (a
//                           payload offset is never 0: no user value is
//                           reserved — the int64 map's kTombstone)
//   next[]  patomic<uptr>   the book's AtomicMarkableReference (bit 0)
//
// Order: level 0 is sorted by std::string_view comparison of the key
// bytes. A comparison first compares the prefixes (big-endian, zero
// padding: unequal prefixes order two keys exactly as their bytes do); on
// equal prefixes, keys of at most 8 bytes are ordered by length (the
// shorter one is a prefix of the other, its padding equal to the other's
// bytes); only longer keys with equal prefixes read the key payload, under
// the operation's EBR pin. Measured (docs/mirror.md, "The ordered byte
// map"): keys of 16 bytes with a common prefix read the payload at every
// step, distinct prefixes almost never.
//
// Thread safety: every operation is lock-free (the pool heap's allocator
// aside), get/contains/scan never write; all are safe concurrently for
// distinct thread ids in [0, threads).
//
// Invariants (the skip list's, skip_list.h, plus):
//   S1 A payload named by a node's key or value on rep_p was durable before
//      the CAS that made rep_p name it (Persistence below).
//   S2 A payload is freed only after the CAS that unnamed it (a value CAS
//      of put/erase; for a key, the last snip that made its node
//      unreachable at every level — the node's retire) and after every
//      thread pinned at that time has unpinned (EBR) — so no get or scan
//      reads a reused block. A node never published (a lost insert race) is
//      freed with its key payload at once: nobody saw it.
//   S3 A node's value is 0 before its level-0 next is marked (erase CASes
//      the value first, and a put that meets 0 finishes that removal; the
//      map never uses the set's remove): an unlinked node names no value,
//      only its key.
//   S4 Every next names a node with a larger key (marked nodes' frozen
//      nexts included), so any walk of level 0 sees keys strictly
//      ascending.
//
// Persistence. write_payload writes a payload and issues its pwbs with no
// fence (payload.h P1). A payload's offset is published by one of two CASes:
//   * a new node (add): Heap::make_sized writes the node's rep_p copy back
//     and psyncs (Heap::publishable); that psync also completes the key's
//     (BytesSkipKeys::make) and the value's (BytesSkipMap::put) payload
//     write-backs, issued earlier by this thread, before the level-0 CAS
//     that links the node can exist;
//   * a value CAS on an existing node (replace): before_value_cas psyncs
//     first. psync, not pfence: Fig. 4's rep_p DWCAS (l.40) may reach the
//     media without this thread's l.41 pwb — by eviction, or by another
//     thread's helping pwb (l.20) — which our pfence does not order.
// Erase publishes 0 (no payload). Frees write nothing persistent.
//
// Recovery. Two levels, both reading only the pool:
//   1. Pool recovery (Pool::open) calls BytesSkipRoot's hook: it marks the
//      region and traces the skip list FROM THE PERSISTENT REPLICA (rep_v −
//      delta, delta from the root's placement), following every level of
//      every node (a node snipped at level 0 may still be linked above),
//      marking the key payload of EVERY reachable node but the head and its
//      value payload when not 0, validating as it goes: a pointer outside
//      the pool or not at a 64-byte unit, a level outside [0, 20), a node
//      overrunning the pool, and a damaged payload (mark_payload) throw
//      PoolError(kCorrupt) naming the pool offset; a node is visited once
//      (a set of the units seen), so a cycle ends. Marked nodes
//      are traced too: a later find snips them and, if they were retired,
//      their key payloads would be freed — left unmarked, pool recovery
//      would free them first. Every payload not named (a replaced or
//      erased value whose EBR free was lost, an unreachable node's key, the
//      payloads of a put whose CAS did not persist) is freed by pool
//      recovery: a crash leaks nothing.
//   2. attach runs Mirror's recovery (§4.3.3, SkipList::attach's):
//      rep_v := rep_p for every traced node, the free lists rebuilt,
//      owners := 1 in every traced node; then the size counters are
//      recounted. It writes nothing to rep_p: idempotent.
// The root has its own type tag (kTypeTag below): neither the int64 skip
// list's mirror::Root nor the hash map's BytesRoot attaches as it.
//
// Scans. scan(t, lo, hi, fn) walks level 0 from the first key >= lo (the
// book's wait-free contains, then the level-0 links) and calls fn(key,
// value) for each node whose value is not 0 and whose level-0 next was
// unmarked after that value was read, until a key >= hi or fn returns
// false. It is not linearizable as a whole. It guarantees: every visited
// pair (k, v) was in the map at some instant during the scan (at its value
// read: the node unmarked, the value not erased); keys strictly ascending
// (S4), so no key twice; every key present in [lo, hi) for the whole scan
// is visited. A key inserted or removed during the scan may or may not be
// visited. The scan holds one EBR pin throughout: a long scan delays
// reclamation (memory, not correctness).
//
// For users. put(t, key, value) -> true if inserted, false if it replaced;
// every operation is durable when it returns (durable linearizability).
// MapOptions::threads sizes DRAM only (attach takes any count);
// MapOptions::buckets does not apply. replica_bytes (create's last argument,
// default 8 MiB) is the Mirror region for nodes: 64 to 384 B per key (on
// average 1.6 units of 64 B); payloads take pool heap blocks (16 B header +
// the bytes, rounded to the heap's size class). A key or value over
// kMaxPayloadBytes throws PoolError(kInvalidArgument) naming the size and
// the limit, before anything changes; a full pool throws PoolError(kFull),
// a full region Heap's kFull message — in both cases nothing stored is
// lost and the put had no effect.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_set>
#include <utility>
#include <vector>

#include "ferrite/map.h"
#include "ferrite/mirror/skip_list.h"
#include "ferrite/persist/persist.h"
#include "ferrite/pmem/payload.h"
#include "ferrite/sync/cache_padded.h"

namespace ferrite::mirror {

template <class C = Default>
struct alignas(16) BytesSkipNode {
  using Edge = patomic<std::uintptr_t, C>;
  pconst<std::uint64_t, C> prefix;
  pconst<std::uint64_t, C> key;  // payload offset; 0 in the head
  pconst<std::uint32_t, C> klen;
  pconst<std::int32_t, C> top;
  std::atomic<std::int32_t> owners{2};  // reclamation (skip_list.h): DRAM meaning only
  patomic<std::int64_t, C> value;       // payload offset, 0 = erased
  BytesSkipNode(std::uint64_t p, std::uint64_t k, std::uint32_t n, std::int32_t t, std::int64_t v)
      : prefix(p), key(k), klen(n), top(t), value(v) {}
  Edge& next(int l) { return reinterpret_cast<Edge*>(this + 1)[l]; }
  const Edge& next(int l) const { return reinterpret_cast<const Edge*>(this + 1)[l]; }
  static std::size_t bytes(int top) {
    return sizeof(BytesSkipNode) + static_cast<std::size_t>(top + 1) * sizeof(Edge);
  }
};
static_assert(sizeof(BytesSkipNode<>) == 48 && alignof(BytesSkipNode<>) == 16);

// The search argument: the key's bytes and their 8-byte prefix.
struct BytesSkipKey {
  std::uint64_t prefix;
  std::string_view bytes;
};
// The first 8 bytes, big-endian, zero-padded: unequal prefixes compare as
// the byte strings do (essay, Order).
inline std::uint64_t key_prefix(std::string_view b) {
  std::uint64_t p = 0;
  for (std::size_t i = 0; i < 8; ++i)
    p = (p << 8) | (i < b.size() ? static_cast<std::uint64_t>(static_cast<unsigned char>(b[i])) : 0);
  return p;
}
inline BytesSkipKey skip_key(std::string_view b) { return {key_prefix(b), b}; }

// The key/value policy of HsSkipList for payload offsets (skip_list.h,
// IntSkipKeys, lists what a policy provides).
template <class C = Default>
class BytesSkipKeys {
 public:
  using Node = BytesSkipNode<C>;
  using Edge = typename Node::Edge;
  using Key = BytesSkipKey;
  static constexpr std::int64_t kErased = 0;

  BytesSkipKeys(pmem::Pool& pool, Heap<C>& heap) : pool_(pool), heap_(heap) {}

  pmem::Pool& pool() const { return pool_; }
  // The key's bytes, validated (a damaged payload throws kCorrupt naming
  // the offset). The caller is pinned (S2).
  std::string_view key_bytes(const Node* n) const { return pmem::read_payload(pool_, n->key.get()); }

  bool less(const Node* n, const Key& k) const {
    const std::uint64_t p = n->prefix.get();
    if (p != k.prefix) return p < k.prefix;
    const std::uint32_t len = n->klen.get();
    if (len <= 8 && k.bytes.size() <= 8) return len < k.bytes.size();
    return key_bytes(n) < k.bytes;
  }
  bool equal(const Node* n, const Key& k) const {
    if (n->prefix.get() != k.prefix || n->klen.get() != k.bytes.size()) return false;
    return k.bytes.size() <= 8 || key_bytes(n) == k.bytes;
  }
  Key key_of(const Node* n) const { return {n->prefix.get(), key_bytes(n)}; }

  // A new node naming a new key payload and the value payload `v` (written
  // by the caller).
  template <class Edges>
  Node* make(Heap<C>& heap, int tid, const Key& k, int top, std::int64_t v, Edges&& edges) {
    const std::uint64_t key_off = pmem::write_payload(pool_, tid, k.bytes);
    try {
      // PERSIST: S1 for a new node: make_sized's psync (Heap::publishable)
      // comes after write_payload's pwbs of the key here and of the value
      // in BytesSkipMap::put, so both payloads are durable before the node
      // is, and the node before the level-0 CAS that links it (the book's
      // Fig. 14.13 add, its linearization point).
      return heap.template make_sized<Node>(tid, Node::bytes(top), [&](void* p) {
        Node* n = new (p) Node(k.prefix, key_off, static_cast<std::uint32_t>(k.bytes.size()), top, v);
        edges(n);
        return n;
      });
    } catch (...) {
      pmem::free_payload(pool_, tid, key_off);  // never named
      throw;
    }
  }
  template <class Edges>
  Node* make_head(Heap<C>& heap, int tid, int top, Edges&& edges) {
    return heap.template make_sized<Node>(tid, Node::bytes(top), [&](void* p) {
      Node* n = new (p) Node(0, 0, 0, top, 0);
      edges(n);
      return n;
    });
  }
  // Never published (a lost insert race): no reader saw it (S2).
  void discard(Heap<C>& heap, int tid, Node* n) {
    pmem::free_payload(pool_, tid, n->key.get());
    heap.free(n, Node::bytes(n->top.get()), tid);
  }
  // Unreachable at every level (its last owner): node and key payload go
  // after the readers.
  void retire(Heap<C>&, sync::Ebr& ebr, int tid, Node* n) { ebr.retire(tid, n, &free_node, this); }
  // A value CAS (put's replace, erase) unnamed `old`.
  void replaced(sync::Ebr& ebr, int tid, std::int64_t old) {
    if (old == kErased) return;
    if constexpr (C::has(internal::kPayloadFreeNow)) {
      pmem::free_payload(pool_, tid, static_cast<std::uint64_t>(old));  // broken: readers may hold it
    } else {
      ebr.retire(tid, pool_.at<void>(static_cast<std::uint64_t>(old)), &free_value, this);
    }
  }
  void before_value_cas(int) {
    // PERSIST: S1 for a replace: the new value's payload (write_payload's
    // pwbs, no fence: P1) is durable before the value CAS can publish its
    // offset. psync, not pfence: the CAS's rep_p word may reach the media
    // by eviction or by another thread's helping pwb (Fig. 4 l.20), which a
    // pfence of ours does not order. Once per CAS attempt; a retry's psync
    // has nothing left to wait for.
    if constexpr (!C::has(internal::kPayloadNoFence)) persist::psync();
  }
  static bool same_replicas(const Node* n) {
    return n->prefix.get() == n->prefix.persistent()->get() && n->key.get() == n->key.persistent()->get() &&
           n->klen.get() == n->klen.persistent()->get() && n->top.get() == n->top.persistent()->get();
  }

 private:
  static void free_node(void* ctx, void* p, int tid) {
    auto* self = static_cast<BytesSkipKeys*>(ctx);
    auto* n = static_cast<Node*>(p);
    // S3: an unlinked node names no value (erase zeroed it before marking).
    pmem::free_payload(self->pool_, tid, n->key.get());
    self->heap_.free(n, Node::bytes(n->top.get()), tid);
  }
  static void free_value(void* ctx, void* p, int tid) {
    auto* self = static_cast<BytesSkipKeys*>(ctx);
    pmem::free_payload(self->pool_, tid, self->pool_.offset_of(p));
  }

  pmem::Pool& pool_;
  Heap<C>& heap_;
};

// The pool root of the ordered byte map: mirror::Root's fields, its own type
// tag, and a hook that also marks the payloads (essay, Recovery 1). The
// broken variants recover-no-mark-values / recover-no-mark-keys leave one
// kind unmarked (other tags: a correct map never attaches to them).
template <bool kMarkValues = true, bool kMarkKeys = true>
struct BasicBytesSkipRoot : Root {
  static constexpr std::uint32_t kTypeTag = !kMarkValues ? 0x4D19'0F03 : !kMarkKeys ? 0x4D19'0E03 : 0x4D19'0003;
  static constexpr std::uint32_t kTypeVersion = 1;
  static constexpr const char* kTypeName = !kMarkValues ? "mirror::BytesSkipRoot (broken: value payloads unmarked)"
                                           : !kMarkKeys ? "mirror::BytesSkipRoot (broken: key payloads unmarked)"
                                                        : "mirror::BytesSkipRoot";
  static constexpr int kLevels = HsSkipList<Default, BytesSkipKeys<Default>>::kLevels;

  static void recover_root(pmem::Pool& pool, BasicBytesSkipRoot* r, const std::function<void(void*)>& mark) {
    using Node = BytesSkipNode<Default>;  // the layout does not depend on the Config
    Root::mark_regions(pool, r, mark, false);    // the region block
    auto corrupt = [&](const std::string& what) {
      return pmem::PoolError(pmem::Errc::kCorrupt, "mirror::BytesSkipMap recovery: " + what);
    };
    // The structure tag BytesSkipMap writes (its kStructure): attach refuses
    // any other.
    if (r->structure != 5) throw corrupt("the root names structure tag " + std::to_string(r->structure) + ", not 5");
    if (r->region == 0) return;
    const std::uint64_t delta =
        r->placement == static_cast<std::uint32_t>(PlacementKind::kDram) ? pmem::kReplicaOffset : r->replica_bytes;
    if (r->anchor_bytes != Node::bytes(kLevels - 1)) throw corrupt("the root is inconsistent");
    // rep_v address (named at pool offset `from`) -> its rep_p copy, checked
    // to be a 64-byte unit of the pool with room for n bytes. Not checked
    // against the region bounds: Mirror's heap may chain regions (heap.h),
    // and inside the pool a wrong pointer cannot fault — what it names fails
    // the level check or the payload validation, and each unit is visited
    // once, so the trace ends.
    const auto base = reinterpret_cast<std::uint64_t>(pool.base());
    auto rep_p = [&](std::uint64_t v, std::size_t n, std::uint64_t from) -> std::uint64_t {
      const std::uint64_t p = v - delta;
      if (!pool.contains(reinterpret_cast<const void*>(p), n) || (p - base) % 64 != 0)
        throw corrupt("the pointer " + std::to_string(v) + " at pool offset " + std::to_string(from) +
                      " is not a node of the map");
      return p;
    };
    std::unordered_set<std::uint64_t> seen;
    // (rep_v address, the pool offset of the field that named it)
    std::vector<std::pair<std::uint64_t, std::uint64_t>> stack{{r->anchor, pool.offset_of(&r->anchor)}};
    while (!stack.empty()) {
      const auto [v, from] = stack.back();
      stack.pop_back();
      const std::uint64_t p = rep_p(v, sizeof(Node), from);
      if (!seen.insert(p).second) continue;  // linked at several levels, or a cycle
      // CRASH: the persistent replica's links are what survived; rep_v is
      // gone (DRAM) or stale (pool placement) and is never read here.
      const auto* n = reinterpret_cast<const Node*>(p);
      const int top = n->top.get();
      if (top < 0 || top >= kLevels)
        throw corrupt("the node at pool offset " + std::to_string(pool.offset_of(n)) + " has level " +
                      std::to_string(top));
      rep_p(v, Node::bytes(top), from);
      if (v != r->anchor) {  // the head names no payload
        if (kMarkKeys) pmem::mark_payload(pool, n->key.get(), mark);  // marked nodes too (essay)
        const std::int64_t val = n->value.load();
        if (kMarkValues && val != 0) pmem::mark_payload(pool, static_cast<std::uint64_t>(val), mark);
      }
      for (int l = top; l >= 0; --l) {
        const std::uint64_t s = n->next(l).load() & ~std::uint64_t{1};
        if (s != 0) stack.emplace_back(s, pool.offset_of(&n->next(l)));
      }
    }
  }
};
using BytesSkipRoot = BasicBytesSkipRoot<true, true>;
inline const bool kMirrorBytesSkipRootRegistered =
    pmem::register_root_type<BytesSkipRoot>(&BytesSkipRoot::recover_root);
inline const bool kMirrorBrokenBytesSkipRootValuesRegistered =
    pmem::register_root_type<BasicBytesSkipRoot<false, true>>(&BasicBytesSkipRoot<false, true>::recover_root);
inline const bool kMirrorBrokenBytesSkipRootKeysRegistered =
    pmem::register_root_type<BasicBytesSkipRoot<true, false>>(&BasicBytesSkipRoot<true, false>::recover_root);

template <class C = Default>
class BytesSkipMap {
 public:
  using Policy = BytesSkipKeys<C>;
  using Algo = HsSkipList<C, Policy>;
  using Node = typename Algo::Node;
  using RootType =
      BasicBytesSkipRoot<!C::has(internal::kRecoverNoMarkValues), !C::has(internal::kRecoverNoMarkKeys)>;
  static constexpr std::uint32_t kStructure = 5;  // mirror::Root::structure (4 is the int64 skip list)
  static constexpr std::size_t kDefaultReplicaBytes = std::size_t{8} << 20;

  // A fresh map under root `name` (options: threads; the region:
  // `replica_bytes` per replica).
  static std::unique_ptr<BytesSkipMap> create(pmem::Pool& pool, std::string_view name, const MapOptions& o = {},
                                              std::size_t replica_bytes = kDefaultReplicaBytes) {
    return std::unique_ptr<BytesSkipMap>(new BytesSkipMap(pool, name, o, replica_bytes));
  }
  // Re-attach after Pool::open (which ran the pool-level recovery). The
  // region size is the root's; o.threads may differ from creation's (DRAM
  // only). open_or_create passes create's arguments here.
  static std::unique_ptr<BytesSkipMap> attach(pmem::Pool& pool, std::string_view name, const MapOptions& o = {},
                                              std::size_t /*replica_bytes: the root's*/ = 0) {
    return std::unique_ptr<BytesSkipMap>(new BytesSkipMap(pool, name, o));
  }
  BytesSkipMap(const BytesSkipMap&) = delete;
  BytesSkipMap& operator=(const BytesSkipMap&) = delete;

  // ------------------------------------------------------ ferrite::Map
  bool put(const Thread& t, std::string_view key, std::string_view value) { return put(t.id(), key, value); }
  std::optional<std::string> get(const Thread& t, std::string_view key) { return get(t.id(), key); }
  template <class F>
  bool get(const Thread& t, std::string_view key, F&& fn) {
    return get(t.id(), key, std::forward<F>(fn));
  }
  bool remove(const Thread& t, std::string_view key) { return remove(t.id(), key); }
  bool contains(const Thread& t, std::string_view key) { return contains(t.id(), key); }
  // Exact when no update runs concurrently.
  std::size_t size() const {
    std::int64_t s = 0;
    for (const auto& c : count_) s += c.value.load(std::memory_order_relaxed);
    return static_cast<std::size_t>(s < 0 ? 0 : s);
  }
  // ------------------------------------------------ ferrite::OrderedMap
  // fn(key, value) for every key in [lo, hi), ascending, while fn returns
  // true; the views are valid during the call. Guarantees: essay, Scans.
  template <class F>
  void scan(const Thread& t, std::string_view lo, std::string_view hi, F&& fn) {
    scan(t.id(), lo, hi, std::forward<F>(fn));
  }
  // Every key >= lo (no upper bound).
  template <class F>
  void scan_from(const Thread& t, std::string_view lo, F&& fn) {
    scan_from(t.id(), lo, std::forward<F>(fn));
  }

  // ------------------------------------------------ by thread id (adapters)
  bool put(int tid, std::string_view key, std::string_view value) {
    auto g = ebr_.pin(tid);
    return !put_offset(tid, key, value).has_value();
  }
  // As put; a replaced value's bytes are passed to on_old(std::string_view)
  // first (in place, valid during the call: this thread is still pinned).
  template <class F>
  bool put(int tid, std::string_view key, std::string_view value, F&& on_old) {
    auto g = ebr_.pin(tid);
    const auto old = put_offset(tid, key, value);
    if (!old.has_value()) return true;
    on_old(pmem::read_payload(pool_, static_cast<std::uint64_t>(*old)));
    return false;
  }
  template <class F>
  bool get(int tid, std::string_view key, F&& fn) {
    auto g = ebr_.pin(tid);  // S2: the value read below stays allocated until we unpin
    const auto v = algo_->get(skip_key(key), tid);
    if (!v.has_value()) return false;
    fn(pmem::read_payload(pool_, static_cast<std::uint64_t>(*v)));
    return true;
  }
  std::optional<std::string> get(int tid, std::string_view key) {
    std::optional<std::string> out;
    get(tid, key, [&](std::string_view b) { out.emplace(b); });
    return out;
  }
  bool remove(int tid, std::string_view key) {
    auto g = ebr_.pin(tid);
    return erase_offset(tid, key).has_value();
  }
  // As remove; the removed value's bytes go to on_old first (as put's).
  template <class F>
  bool remove(int tid, std::string_view key, F&& on_old) {
    auto g = ebr_.pin(tid);
    const auto old = erase_offset(tid, key);
    if (!old.has_value()) return false;
    on_old(pmem::read_payload(pool_, static_cast<std::uint64_t>(*old)));
    return true;
  }
  bool contains(int tid, std::string_view key) { return algo_->get(skip_key(key), tid).has_value(); }
  template <class F>
  void scan(int tid, std::string_view lo, std::string_view hi, F&& fn) {
    if (!(lo < hi)) return;
    scan_from(tid, lo, [&](std::string_view k, std::string_view v) { return k < hi && fn(k, v); });
  }
  template <class F>
  void scan_from(int tid, std::string_view lo, F&& fn) {
    auto g = ebr_.pin(tid);  // S2: every key and value read stays allocated until we unpin
    algo_->scan_from(skip_key(lo), [&](const Node* n, std::int64_t v) -> bool {
      return fn(pol_->key_bytes(n), pmem::read_payload(pool_, static_cast<std::uint64_t>(v)));
    });
  }

  // ------------------------------------------------------------ views
  // fn(key offset, value offset) for every present key, ascending, from
  // rep_v (not concurrent with updates). Read the bytes with read_payload.
  template <class F>
  void for_each_entry(F&& fn) const {
    algo_->for_each(true, [&](const Node* n, std::int64_t v) { fn(n->key.get(), static_cast<std::uint64_t>(v)); });
  }
  // (key, value) of every present key, ascending (not concurrent).
  std::vector<std::pair<std::string, std::string>> items() const {
    std::vector<std::pair<std::string, std::string>> out;
    for_each_entry([&](std::uint64_t k, std::uint64_t v) {
      out.emplace_back(std::string(pmem::read_payload(pool_, k)), std::string(pmem::read_payload(pool_, v)));
    });
    return out;
  }
  bool replicas_equal() const { return algo_->replicas_equal(); }
  Heap<C>& heap() { return *heap_; }
  pmem::Pool& pool() const { return pool_; }
  int threads() const { return heap_->threads(); }
  // Frees what `tid` retired once no thread is pinned (tests, shutdown);
  // false if another thread stays pinned.
  bool reclaim(int tid) { return ebr_.drain(tid); }

 private:
  // Creation order (a crash at any verb leaves no root — the map does not
  // exist and is created afresh — or a complete one): the region (a pool
  // heap block), the head (durable, make_sized), the root (create_root:
  // persisted before the header names it).
  BytesSkipMap(pmem::Pool& pool, std::string_view name, const MapOptions& o, std::size_t bytes)
      : pool_(pool), ebr_(o.threads), count_(static_cast<std::size_t>(o.threads)) {
    heap_ = std::make_unique<Heap<C>>(pool, bytes, o.threads);
    pol_ = std::make_unique<Policy>(pool, *heap_);
    Node* const head = Algo::make_head(*heap_, 0, *pol_);
    RootType root;
    root.region = heap_->region();
    root.replica_bytes = heap_->replica_bytes();
    root.placement = static_cast<std::uint32_t>(C::placement::kKind);
    root.structure = kStructure;
    root.anchor = reinterpret_cast<std::uint64_t>(head);
    root.anchor_bytes = Node::bytes(Algo::kLevels - 1);
    root_ = pool.create_root<RootType>(name, root);
    algo_ = std::make_unique<Algo>(*heap_, ebr_, head, o.threads, *pol_);
  }
  BytesSkipMap(pmem::Pool& pool, std::string_view name, const MapOptions& o)
      : pool_(pool), ebr_(o.threads), count_(static_cast<std::size_t>(o.threads)) {
    root_ = pool.root<RootType>(name);  // kRootType for another type; kCorrupt if its hook failed
    if (root_->structure != kStructure)
      throw pmem::PoolError(pmem::Errc::kRootType, "mirror: root '" + std::string(name) + "' holds another structure");
    if (root_->placement != static_cast<std::uint32_t>(C::placement::kKind))
      throw pmem::PoolError(pmem::Errc::kRootType, "mirror: root '" + std::string(name) +
                                                       "' was created with the other replica placement");
    if (root_->anchor_bytes != Node::bytes(Algo::kLevels - 1))
      throw pmem::PoolError(pmem::Errc::kCorrupt, "mirror: root '" + std::string(name) + "' is inconsistent");
    heap_ = std::make_unique<Heap<C>>(pool, root_->region, root_->replica_bytes, o.threads);
    pol_ = std::make_unique<Policy>(pool, *heap_);
    Node* const head = reinterpret_cast<Node*>(root_->anchor);
    std::vector<Node*> seen;
    // §4.3.3: trace from the persistent head, copy to rep_v, rebuild (the
    // pool hook validated every pointer and level it follows).
    heap_->recover([head, &seen](auto& visit) { Algo::trace(head, visit, &seen); });
    // ORDER: relaxed: single-threaded recovery, before the map is shared.
    for (Node* n : seen) n->owners.store(1, std::memory_order_relaxed);
    algo_ = std::make_unique<Algo>(*heap_, ebr_, head, o.threads, *pol_);
    std::int64_t n = 0;
    for_each_entry([&](std::uint64_t, std::uint64_t) { ++n; });
    count_[0].value.store(n, std::memory_order_relaxed);
  }

  // Under the caller's pin: the old value's offset if one was replaced.
  std::optional<std::int64_t> put_offset(int tid, std::string_view key, std::string_view value) {
    check_size(key, "key");
    check_size(value, "value");
    // PERSIST: P1: the value's pwbs are issued here; its fence is
    // make_sized's psync (a new node) or before_value_cas's (a replace).
    const std::uint64_t v = pmem::write_payload(pool_, tid, value);
    std::optional<std::int64_t> old;
    try {
      old = algo_->put(skip_key(key), static_cast<std::int64_t>(v), tid);
    } catch (...) {
      pmem::free_payload(pool_, tid, v);  // the put threw before any CAS named it
      throw;
    }
    if (!old.has_value()) bump(tid, 1);
    return old;
  }
  std::optional<std::int64_t> erase_offset(int tid, std::string_view key) {
    const auto old = algo_->erase(skip_key(key), tid);
    if (old.has_value()) bump(tid, -1);
    return old;
  }
  static void check_size(std::string_view b, const char* what) {
    if (b.size() > pmem::kMaxPayloadBytes)
      throw pmem::PoolError(pmem::Errc::kInvalidArgument,
                            std::string("mirror::BytesSkipMap::put: a ") + what + " of " + std::to_string(b.size()) +
                                " bytes exceeds the limit of " + std::to_string(pmem::kMaxPayloadBytes) +
                                " bytes (pmem::kMaxPayloadBytes)");
  }
  void bump(int tid, std::int64_t d) {
    // ORDER: relaxed: a statistic, exact only when quiescent (size()).
    count_[static_cast<std::size_t>(tid)].value.fetch_add(d, std::memory_order_relaxed);
  }

  pmem::Pool& pool_;
  RootType* root_ = nullptr;
  std::unique_ptr<Heap<C>> heap_;  // declared before ebr_: EBR's last frees go to a live heap
  std::unique_ptr<Policy> pol_;    // likewise: EBR's callbacks (payload frees) use it
  sync::Ebr ebr_;
  std::unique_ptr<Algo> algo_;
  std::vector<sync::CachePadded<std::atomic<std::int64_t>>> count_;
};

static_assert(ferrite::OrderedMap<BytesSkipMap<>>);

}  // namespace ferrite::mirror
