// ferrite/mirror/bytes_map.h — mirror::BytesHashMap: Mirror's durable hash
// table of Harris lists (mirror/hash_map.h; PLDI 2021 §6) with byte-string
// keys and values of any size (0 bytes to pmem::kMaxPayloadBytes, no
// reserved value: the empty string is a key and a value like any other).
// It implements ferrite::Map (ferrite/map.h).
//
// What it is. The same buckets and the same Harris list (harris_list.h:
// Harris's search/insert/delete plus the value-CAS map extension), with a
// key/value policy (BytesKeys below) in place of the int64 one, so the
// algorithm exists once. Keys and values live OUT OF LINE in payload blocks
// of the pool heap (pmem/payload.h), immutable (P2), persistent only (no
// volatile replica: a payload never changes, so Mirror's two copies would
// buy nothing; every read goes to the pool). A node is one 64-byte Mirror
// object:
//
//   hash   pconst<u64>      the key's 64-bit hash (pmem::payload_hash)
//   key    pconst<u64>      the key payload's pool offset
//   value  patomic<i64>     the value payload's pool offset; 0 = erased (a
//                           payload offset is never 0: no user value is
//                           reserved any more — the int64 map's kTombstone)
//   next   patomic<Node*>   Harris's next (low bit: logically deleted)
//
// A bucket's list is sorted by (hash, key bytes): comparisons read a key
// payload only when the hashes are equal (almost only for the key itself),
// under the operation's EBR pin. Lookups validate what they read
// (read_payload: a damaged payload throws pmem::PoolError(kCorrupt) naming
// the offset; no byte is returned unchecked).
//
// Thread safety: every operation is lock-free (the pool heap's allocator
// aside) and safe concurrently for distinct thread ids in [0, threads).
//
// Invariants.
//   B1 A payload named by a node's key or value on rep_p was durable before
//      the CAS that made rep_p name it (below: Persistence).
//   B2 A payload is freed only after the CAS that unnamed it (a value CAS
//      of put/erase; for a key, the unlink of its node) and after every
//      thread pinned at that time has unpinned (EBR, sync/ebr.h) — so a get
//      never reads a reused block. A node never published (a lost insert
//      race) is freed with its key payload at once: nobody saw it.
//   B3 A node's value is 0 before its next is marked (erase CASes the
//      value first): an unlinked node names no value, only its key.
//
// Persistence. write_payload writes a payload and issues its pwbs with no
// fence (payload.h P1). The new value's offset is published by one of two
// CASes:
//   * a new node (insert): Heap::make writes the node's rep_p copy back
//     and psyncs; that psync also completes the key's and the value's
//     payload write-backs (issued earlier by this thread), before the CAS
//     that links the node can exist;
//   * a value CAS on an existing node (replace): BytesKeys::before_value_cas
//     issues the psync, see the instruction. psync, not pfence: Fig. 4's
//     rep_p DWCAS (l.40) can reach the media without this thread's l.41 pwb
//     — by eviction, or by a helper's pwb (l.20) from another thread — and
//     neither is ordered by our pfence; only completing the payload's
//     write-backs before the DWCAS's store exists orders it under every
//     model (on x86 both are an sfence).
// Erase publishes 0 (no payload). Frees write nothing persistent.
//
// Recovery. Two levels, both reading only the pool:
//   1. Pool recovery (Pool::open) calls BytesRoot's hook: it marks every
//      region of the chain (Root's hook, validating it) and traces every
//      bucket's list FROM THE PERSISTENT REPLICA
//      (the heads and nodes at rep_v - delta, delta from the root's
//      placement), marking the key payload of EVERY reachable node and its
//      value payload when not 0, validating as it goes (mark_payload throws
//      on a damaged payload; pointers outside the regions, misaligned, or a
//      list longer than the regions' units throw kCorrupt) — a throwing hook
//      makes the pool keep every block and name the root, never a segfault.
//      Marked (logically deleted) and erased (value 0) nodes are traced
//      too: a restarted search does not read a marked node's key (Harris
//      skips marked nodes unread) but unlinks and retires it, and that
//      retire frees the key payload — left unmarked, pool recovery would
//      free it first and the retire would free it a second time (after the
//      block was reused); an erased, unmarked node's key is still compared. Every payload not named (a replaced or
//      erased value whose EBR free was lost, an unlinked node's key, the
//      payloads of a put whose CAS did not persist) is freed by pool
//      recovery: a crash leaks nothing.
//   2. attach runs Mirror's recovery (§4.3.3, internal/harris_table.h):
//      rep_v := rep_p for every reachable node, every region's free lists
//      rebuilt; then the size counters are recounted.
// The root has its own type tag (kTypeTag below): the int64 structures keep
// mirror::Root (tag 0x4D190001, version 1) and neither attaches as the other
// (Pool::root throws kRootType).
//
// For users. put(t, key, value) -> true if inserted, false if it replaced;
// every operation is durable when it returns (durable linearizability).
// MapOptions::threads sizes DRAM only; MapOptions::buckets is the fixed
// bucket count (the bucket array does not grow; the node heap does).
// replica_bytes (create's last argument, default 8 MiB) is the size of each
// Mirror region for nodes (64 B per key): when the regions are used up the
// chain grows by one (mirror/heap.h, "Growth"); payloads take pool heap
// blocks (16 B header + the bytes, rounded to the heap's size class). A key
// or value over kMaxPayloadBytes throws pmem::PoolError(kInvalidArgument)
// naming the size and the limit, before anything changes; a full pool throws
// PoolError(kFull) (for a region: naming the pool's free space) — nothing
// stored is lost and the put had no effect.
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
#include <utility>
#include <vector>

#include "ferrite/map.h"
#include "ferrite/mirror/harris_list.h"
#include "ferrite/mirror/internal/harris_table.h"
#include "ferrite/persist/persist.h"
#include "ferrite/pmem/payload.h"
#include "ferrite/sync/cache_padded.h"

namespace ferrite::mirror {

template <class C = Default>
struct BytesNode {
  pconst<std::uint64_t, C> hash;
  pconst<std::uint64_t, C> key;  // payload offset
  patomic<std::int64_t, C> value;  // payload offset, 0 = erased
  patomic<BytesNode*, C> next;
  BytesNode(std::uint64_t h, std::uint64_t k, std::int64_t v, BytesNode* n) : hash(h), key(k), value(v), next(n) {}
};
static_assert(sizeof(BytesNode<>) <= 64);

// The search argument: the key's bytes and their hash.
struct BytesKey {
  std::uint64_t hash;
  std::string_view bytes;
};
inline std::uint64_t bytes_hash(std::string_view b) { return pmem::payload_hash(0, b.data(), b.size()); }

// The key/value policy of HarrisList for payload offsets (harris_list.h,
// IntKeys, lists what a policy provides).
template <class C = Default>
class BytesKeys {
 public:
  using Node = BytesNode<C>;
  using Key = BytesKey;
  static constexpr std::int64_t kErased = 0;

  BytesKeys(pmem::Pool& pool, Heap<C>& heap) : pool_(pool), heap_(heap) {}

  pmem::Pool& pool() const { return pool_; }
  std::string_view key_of(const Node* n) const { return pmem::read_payload(pool_, n->key.get()); }

  bool less(const Node* n, const Key& k) const {
    const std::uint64_t h = n->hash.get();
    if (h != k.hash) return h < k.hash;
    return key_of(n) < k.bytes;
  }
  bool equal(const Node* n, const Key& k) const { return n->hash.get() == k.hash && key_of(n) == k.bytes; }

  // A new node naming a new key payload and the value payload `v` (written
  // by the caller).
  Node* make(Heap<C>& heap, int tid, const Key& k, std::int64_t v, Node* next) {
    const std::uint64_t key_off = pmem::write_payload(pool_, tid, k.bytes);
    try {
      // PERSIST: B1 for a new node: make's psync (Heap::publishable) comes
      // after write_payload's pwbs of the key here and of the value in
      // BytesHashMap::put, so both payloads are durable before the node is,
      // and the node before the CAS that links it.
      return heap.template make<Node>(tid, k.hash, key_off, v, next);
    } catch (...) {
      pmem::free_payload(pool_, tid, key_off);  // never named
      throw;
    }
  }
  // Never published (a lost insert race): no reader saw it (B2).
  void discard(Heap<C>& heap, int tid, Node* n) {
    pmem::free_payload(pool_, tid, n->key.get());
    heap.free(n, sizeof(Node), tid);
  }
  // Unlinked by this thread's CAS: node and key payload go after the readers.
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
    // PERSIST: B1 for a replace: the new value's payload (write_payload's
    // pwbs, no fence: P1) is durable before the value CAS can publish its
    // offset. psync, not pfence: the CAS's rep_p word may reach the media
    // by eviction or by another thread's helping pwb (Fig. 4 l.20), which a
    // pfence of ours does not order (see the essay). Issued once per CAS
    // attempt; a retry's psync has nothing left to wait for.
    if constexpr (!C::has(internal::kPayloadNoFence)) persist::psync();
  }
  static bool same_replicas(const Node* n) {
    return n->hash.get() == n->hash.persistent()->get() && n->key.get() == n->key.persistent()->get();
  }

 private:
  static void free_node(void* ctx, void* p, int tid) {
    auto* self = static_cast<BytesKeys*>(ctx);
    auto* n = static_cast<Node*>(p);
    // B3: an unlinked node names no value (erase zeroed it before marking).
    pmem::free_payload(self->pool_, tid, n->key.get());
    self->heap_.free(n, sizeof(Node), tid);
  }
  static void free_value(void* ctx, void* p, int tid) {
    auto* self = static_cast<BytesKeys*>(ctx);
    pmem::free_payload(self->pool_, tid, self->pool_.offset_of(p));
  }

  pmem::Pool& pool_;
  Heap<C>& heap_;
};

// The pool root of a byte-string Mirror map: mirror::Root's fields, its own
// type tag, and a hook that also marks the payloads (essay, Recovery 1).
// kMarkValues = false is the broken variant recover-no-mark-values only
// (another tag: a correct map never attaches to it).
template <bool kMarkValues = true>
struct BasicBytesRoot : Root {
  static constexpr std::uint32_t kTypeTag = kMarkValues ? 0x4D19'0002 : 0x4D19'0F02;
  static constexpr std::uint32_t kTypeVersion = 2;  // Root's: region 0 starts with its header
  static constexpr const char* kTypeName =
      kMarkValues ? "mirror::BytesRoot" : "mirror::BytesRoot (broken: value payloads unmarked)";

  static void recover_root(pmem::Pool& pool, BasicBytesRoot* r, const std::function<void(void*)>& mark) {
    using Node = BytesNode<Default>;  // the layout does not depend on the Config
    Root::mark_regions(pool, r, mark, false);  // every linked region
    // The structure tag BytesHashMap writes (HarrisTable<C, 3, ...>): attach
    // refuses any other.
    if (r->structure != 3)
      throw pmem::PoolError(pmem::Errc::kCorrupt, "mirror::BytesHashMap recovery: the root names structure tag " +
                                                      std::to_string(r->structure) + ", not a byte map's (3)");
    if (r->region == 0) return;
    internal::walk_persistent_buckets<Node>(pool, *r, "mirror::BytesHashMap recovery", [&](const Node* n) {
      pmem::mark_payload(pool, n->key.get(), mark);  // marked nodes too (essay, Recovery 1)
      const std::int64_t val = n->value.load();
      if (kMarkValues && val != 0) pmem::mark_payload(pool, static_cast<std::uint64_t>(val), mark);
    });
  }
};
using BytesRoot = BasicBytesRoot<true>;
inline const bool kMirrorBytesRootRegistered = pmem::register_root_type<BytesRoot>(&BytesRoot::recover_root);
inline const bool kMirrorBrokenBytesRootRegistered =
    pmem::register_root_type<BasicBytesRoot<false>>(&BasicBytesRoot<false>::recover_root);

template <class C = Default>
class BytesHashMap
    : public internal::HarrisTable<C, 3, BytesKeys<C>, BasicBytesRoot<!C::has(internal::kRecoverNoMarkValues)>> {
  using Base = internal::HarrisTable<C, 3, BytesKeys<C>, BasicBytesRoot<!C::has(internal::kRecoverNoMarkValues)>>;

 public:
  static constexpr std::size_t kDefaultReplicaBytes = std::size_t{8} << 20;

  // A fresh map under root `name` (options: threads, buckets; the region:
  // `replica_bytes` per replica, 64 B per key).
  static std::unique_ptr<BytesHashMap> create(pmem::Pool& pool, std::string_view name, const MapOptions& o = {},
                                              std::size_t replica_bytes = kDefaultReplicaBytes) {
    return std::unique_ptr<BytesHashMap>(new BytesHashMap(pool, name, o, replica_bytes));
  }
  // Re-attach after Pool::open (which ran the pool-level recovery). The
  // bucket count and region size are the root's; o.threads may differ from
  // creation's (DRAM only). open_or_create passes create's arguments here.
  static std::unique_ptr<BytesHashMap> attach(pmem::Pool& pool, std::string_view name, const MapOptions& o = {},
                                              std::size_t /*replica_bytes: the root's*/ = 0) {
    return std::unique_ptr<BytesHashMap>(new BytesHashMap(pool, name, o));
  }

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

  // ------------------------------------------------ by thread id (adapters)
  bool put(int tid, std::string_view key, std::string_view value) {
    auto g = this->ebr_.pin(tid);
    return !put_offset(tid, key, value).has_value();
  }
  // As put; a replaced value's bytes are passed to on_old(std::string_view)
  // first (in place, valid during the call: the CAS's thread is still pinned).
  template <class F>
  bool put(int tid, std::string_view key, std::string_view value, F&& on_old) {
    auto g = this->ebr_.pin(tid);
    const auto old = put_offset(tid, key, value);
    if (!old.has_value()) return true;
    on_old(pmem::read_payload(pool_, static_cast<std::uint64_t>(*old)));
    return false;
  }
  template <class F>
  bool get(int tid, std::string_view key, F&& fn) {
    const BytesKey k{bytes_hash(key), key};
    auto g = this->ebr_.pin(tid);  // B2: the value read below stays allocated until we unpin
    const auto v = this->list_->get(head(k.hash), k, tid);
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
    auto g = this->ebr_.pin(tid);
    return erase_offset(tid, key).has_value();
  }
  // As remove; the removed value's bytes go to on_old first (as put's).
  template <class F>
  bool remove(int tid, std::string_view key, F&& on_old) {
    auto g = this->ebr_.pin(tid);
    const auto old = erase_offset(tid, key);
    if (!old.has_value()) return false;
    on_old(pmem::read_payload(pool_, static_cast<std::uint64_t>(*old)));
    return true;
  }
  bool contains(int tid, std::string_view key) {
    const BytesKey k{bytes_hash(key), key};
    return this->list_->get(head(k.hash), k, tid).has_value();
  }

  // ------------------------------------------------------------ views
  // fn(key offset, value offset) for every present key, from rep_v (not
  // concurrent with updates). Read the bytes with pmem::read_payload.
  template <class F>
  void for_each_entry(F&& fn) const {
    for (std::uint64_t b = 0; b < this->n_; ++b) {
      for (auto* n = Base::unmark(this->heads_[b].load()); n != nullptr;) {
        auto* nx = n->next.load();
        const std::int64_t v = n->value.load();
        if ((reinterpret_cast<std::uintptr_t>(nx) & 1u) == 0 && v != 0)
          fn(n->key.get(), static_cast<std::uint64_t>(v));
        n = Base::unmark(nx);
      }
    }
  }
  // (key, value) of every present key, sorted by key (not concurrent).
  std::vector<std::pair<std::string, std::string>> items() const {
    std::vector<std::pair<std::string, std::string>> out;
    for_each_entry([&](std::uint64_t k, std::uint64_t v) {
      out.emplace_back(std::string(pmem::read_payload(pool_, k)), std::string(pmem::read_payload(pool_, v)));
    });
    std::sort(out.begin(), out.end());
    return out;
  }
  pmem::Pool& pool() const { return pool_; }
  // Frees what `tid` retired once no thread is pinned (tests, shutdown);
  // false if another thread stays pinned.
  bool reclaim(int tid) { return this->ebr_.drain(tid); }

 private:
  BytesHashMap(pmem::Pool& pool, std::string_view name, const MapOptions& o, std::size_t bytes)
      : Base(pool, name, o.threads, bytes, o.buckets), pool_(pool), count_(static_cast<std::size_t>(o.threads)) {}
  BytesHashMap(pmem::Pool& pool, std::string_view name, const MapOptions& o)
      : Base(pool, name, o.threads), pool_(pool), count_(static_cast<std::size_t>(o.threads)) {
    std::int64_t n = 0;
    for_each_entry([&](std::uint64_t, std::uint64_t) { ++n; });
    count_[0].value.store(n, std::memory_order_relaxed);
  }

  // Under the caller's pin: the old value's offset if one was replaced.
  std::optional<std::int64_t> put_offset(int tid, std::string_view key, std::string_view value) {
    check_size(key, "key");
    check_size(value, "value");
    const BytesKey k{bytes_hash(key), key};
    // PERSIST: P1: the value's pwbs are issued here; its fence is make's
    // psync (a new node) or before_value_cas's (a replace).
    const std::uint64_t v = pmem::write_payload(pool_, tid, value);
    std::optional<std::int64_t> old;
    try {
      old = this->list_->put(head(k.hash), k, static_cast<std::int64_t>(v), tid);
    } catch (...) {
      pmem::free_payload(pool_, tid, v);  // the put threw before any CAS named it
      throw;
    }
    if (!old.has_value()) bump(tid, 1);
    return old;
  }
  std::optional<std::int64_t> erase_offset(int tid, std::string_view key) {
    const BytesKey k{bytes_hash(key), key};
    const auto old = this->list_->erase(head(k.hash), k, tid);
    if (old.has_value()) bump(tid, -1);
    return old;
  }
  static void check_size(std::string_view b, const char* what) {
    if (b.size() > pmem::kMaxPayloadBytes)
      throw pmem::PoolError(pmem::Errc::kInvalidArgument,
                            std::string("mirror::BytesHashMap::put: a ") + what + " of " + std::to_string(b.size()) +
                                " bytes exceeds the limit of " + std::to_string(pmem::kMaxPayloadBytes) +
                                " bytes (pmem::kMaxPayloadBytes)");
  }
  void bump(int tid, std::int64_t d) {
    // ORDER: relaxed: a statistic, exact only when quiescent (size()).
    count_[static_cast<std::size_t>(tid)].value.fetch_add(d, std::memory_order_relaxed);
  }
  typename Base::Link& head(std::uint64_t hash) { return this->heads_[hash % this->n_]; }

  pmem::Pool& pool_;
  std::vector<sync::CachePadded<std::atomic<std::int64_t>>> count_;
};

static_assert(ferrite::Map<BytesHashMap<>>);

}  // namespace ferrite::mirror
