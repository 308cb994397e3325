// ferrite/montage/hash_map.h — Michael's lock-free chained hash table on
// nbMontage (Cai et al., DISC 2021, Appendix A, Figure 7).
//
// Paper: M. M. Michael, "High Performance Dynamic Lock-Free Hash Tables and
// List-Based Sets", SPAA 2002; its nbMontage port, Figure 7.
//
// What it is. A fixed array of buckets in DRAM, each a sorted lock-free
// list of DRAM nodes (Michael's list: a node is logically deleted by
// marking the low bit of its next pointer, then unlinked by any thread that
// passes it). Each node points to a payload {key, value, padding} in the
// pool (the key: 8 bytes, or the paper's 32-byte keys with K = Key32, kept
// in the payload and copied into the node, compared and hashed as bytes); payloads are immutable, so a put on a present key makes a new node
// and payload and detaches the old payload.
//
// Linearization points (each update at one lin_CAS, §3.2 constraint 2):
//   put, key absent:   lin_CAS(prev->next, curr, new)          (Fig. 7)
//   put, key present:  lin_CAS(curr->next, next, new | mark)  with
//                      new->next = next: ONE CAS marks the old node deleted
//                      and links the new one after it.
//   erase:             lin_CAS(curr->next, next, next | mark)
//   get:               the load of curr->next that finds it unmarked.
// Deviation from Figure 7, and why: Figure 7 replaces a present key by a
// lin_CAS on prev->next (new node inserted before curr), then marks curr
// with a plain CAS. An erase of the same key linearizes at curr->next, a
// different word, so a concurrent put and erase can both succeed on the
// same old node: erase returns and removes the old value while the put's
// new value stays — no sequential history explains it, and both detach one
// payload. Here every update of a present key CASes that node's next word,
// so conflicting updates meet at one location (constraint 2).
//
// Thread safety: put/get/erase/sync concurrently for distinct thread ids in
// [0, threads); contents() only when no operation runs.
//
// Recovery (attach): each payload in use becomes a node in its bucket
// (kept sorted). At most one payload per key is in use (a put that
// replaces commits its new payload and the anti-node of the old one in one
// operation), so no key appears twice (if one does, recovery has a bug:
// attach throws). The index's nodes are made by the calling thread and
// linked in EpochOptions::recovery_threads threads, each owning a disjoint
// range of buckets (rebuild()).
//
// Durability (what a user can count on): a crash loses at most the
// operations of the last two epochs (call sync() to make them durable); a
// clean close or destruction syncs — the destructor (also through a
// std::unique_ptr at a normal exit) runs the epoch system's sync(), so
// every operation that returned before it is kept. abandon() skips that
// (tests that simulate a crash in-process). No value is reserved: every
// int64 is a value. create and attach take the same arguments, so
// pmem::Pool::open_or_create<T>(name, threads, options, epochs) creates or
// re-attaches (the options and epoch options are this run's: DRAM and new
// payloads). `threads` at create is a capacity (recorded in the root):
// attach for fewer works; for more throws std::invalid_argument naming both.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "ferrite/montage/epoch_sys.h"
#include "ferrite/montage/internal/kv_payload.h"
#include "ferrite/montage/transient_sys.h"
#include "ferrite/sync/ebr.h"

namespace ferrite::montage {

struct HashMapOptions {
  std::size_t buckets = 1024;     // rounded up to a power of two
  std::size_t value_bytes = 8;    // payload value size (>= 8; the value is its first 8 bytes)
};

// K: std::int64_t, or ferrite::Key32 (32-byte keys compared and hashed as
// bytes, stored in the payload and in the DRAM node).
// S: the system, EpochSys<F> (persistent) or TransientSys (the transient
// original, TransientHashMap below).
template <unsigned F = fault::kNone, class K = std::int64_t, class S = EpochSys<F>>
class HashMap {
 public:
  using Sys = S;
  // The system's CAS object and payload block (EpochSys: the 16-byte CASObj
  // and the pool's PBlk; TransientSys: a word and a DRAM block).
  using CASObj = typename Sys::CASObj;
  using PBlk = typename Sys::Blk;
  using Options = HashMapOptions;
  using Key = K;
  using KV = internal::KVOf<K>;  // {key, value} + padding (internal/kv_payload.h)

  static std::unique_ptr<HashMap> create(pmem::Pool& pool, std::string_view name, int threads,
                                         const HashMapOptions& hm = {}, const EpochOptions& opt = {})
    requires Sys::kPersistent
  {
    auto m = std::unique_ptr<HashMap>(new HashMap(threads, hm));
    m->es_ = Sys::create(pool, name, Kind::kHashMap, threads, opt);
    return m;
  }
  // The transient original: payloads in DRAM, nothing persists.
  static std::unique_ptr<HashMap> create(int threads, const HashMapOptions& hm = {})
    requires(!Sys::kPersistent)
  {
    auto m = std::unique_ptr<HashMap>(new HashMap(threads, hm));
    m->es_ = Sys::create(threads);
    return m;
  }
  static std::unique_ptr<HashMap> attach(pmem::Pool& pool, std::string_view name, int threads,
                                         const HashMapOptions& hm = {}, const EpochOptions& opt = {},
                                         RecoveryStats* stats = nullptr)
    requires Sys::kPersistent
  {
    auto* root = pool.root<MontageRoot>(name);
    if (root->kind != static_cast<std::uint64_t>(Kind::kHashMap))
      throw std::runtime_error("montage: root '" + std::string(name) + "' is not a hash map");
    Sys::check_attach(root, threads);  // before the DRAM side exists (its destructor needs es_)
    auto m = std::unique_ptr<HashMap>(new HashMap(threads, hm));
    std::vector<PBlk*> kept;
    m->es_ = Sys::attach(pool, root, threads, &kept, opt, stats);
    m->rebuild(kept, std::max(1, opt.recovery_threads));
    return m;
  }

  ~HashMap() {
    closing_ = true;
    ebr_.reset();
    for (std::size_t i = 0; i < nbuckets_; ++i) {
      std::uint64_t c = es_->load(buckets_[i]);
      while ((c & ~kMark) != 0) {
        Node* n = reinterpret_cast<Node*>(c & ~kMark);
        c = es_->load(n->next);
        delete n;
      }
    }
  }

  // put(k, v) -> the old value, or none.
  std::optional<std::int64_t> put(int tid, const K& key, std::int64_t value) {
    auto g = ebr_->pin(tid);
    PBlk* p = internal::new_kv(*es_, tid, payload_bytes_, key, value);  // Fig. 7: pnew outside the retry loop
    Node* nn = new Node(key, p);
    for (;;) {
      CASObj* prev;
      Node* curr;
      std::uint64_t next;
      if (find(tid, key, prev, curr, next)) {
        const std::int64_t old = value_of(curr->payload);
        Sys::init(nn->next, next);
        es_->pdetach(tid, curr->payload);
        if (es_->lin_cas(tid, curr->next, next, reinterpret_cast<std::uint64_t>(nn) | kMark)) {
          // Unlink the replaced node (or leave it to a traversal).
          if (es_->cas(*prev, reinterpret_cast<std::uint64_t>(curr), reinterpret_cast<std::uint64_t>(nn)))
            ebr_->retire(tid, curr, &HashMap::free_node, this);
          return old;
        }
      } else {
        Sys::init(nn->next, reinterpret_cast<std::uint64_t>(curr));
        if (es_->lin_cas(tid, *prev, reinterpret_cast<std::uint64_t>(curr), reinterpret_cast<std::uint64_t>(nn)))
          return std::nullopt;
      }
    }
  }

  std::optional<std::int64_t> get(int tid, const K& key) {
    auto g = ebr_->pin(tid);
    CASObj* prev;
    Node* curr;
    std::uint64_t next;
    if (!find(tid, key, prev, curr, next)) return std::nullopt;
    return value_of(curr->payload);
  }

  std::optional<std::int64_t> erase(int tid, const K& key) {
    auto g = ebr_->pin(tid);
    for (;;) {
      CASObj* prev;
      Node* curr;
      std::uint64_t next;
      if (!find(tid, key, prev, curr, next)) return std::nullopt;
      const std::int64_t old = value_of(curr->payload);
      es_->pdetach(tid, curr->payload);
      if (es_->lin_cas(tid, curr->next, next, next | kMark)) {
        if (es_->cas(*prev, reinterpret_cast<std::uint64_t>(curr), next))
          ebr_->retire(tid, curr, &HashMap::free_node, this);
        return old;
      }
    }
  }

  void sync() { es_->sync(); }
  // A simulated crash for tests: destruction then syncs nothing (the
  // destructor otherwise syncs: a clean close loses nothing; epoch_sys.h).
  void abandon() { es_->abandon(); }
  Sys& epochs() { return *es_; }

  // key,value pairs sorted by key (quiescent only).
  std::vector<std::pair<K, std::int64_t>> contents() {
    std::vector<std::pair<K, std::int64_t>> out;
    for (std::size_t i = 0; i < nbuckets_; ++i) {
      std::uint64_t c = es_->load(buckets_[i]);
      while ((c & ~kMark) != 0) {
        Node* n = reinterpret_cast<Node*>(c & ~kMark);
        c = es_->load(n->next);
        if ((c & kMark) == 0) out.emplace_back(n->key, value_of(n->payload));
      }
    }
    std::sort(out.begin(), out.end());
    return out;
  }

 private:
  static constexpr std::uint64_t kMark = 1;
  struct alignas(16) Node {
    CASObj next{0};
    K key;
    PBlk* payload;
    Node(const K& k, PBlk* p) : key(k), payload(p) {}
  };

  HashMap(int threads, const HashMapOptions& hm)
      : payload_bytes_(internal::kv_payload_bytes<K>(hm.value_bytes)),
        ebr_(std::make_unique<sync::Ebr>(threads)) {
    nbuckets_ = 1;
    while (nbuckets_ < hm.buckets) nbuckets_ *= 2;
    buckets_.reset(new CASObj[nbuckets_]);
  }
  static K key_of(const PBlk* p) { return Sys::template get<KV>(p).key; }
  static std::int64_t value_of(const PBlk* p) { return Sys::template get<KV>(p).value; }
  CASObj& bucket(const K& key) { return buckets_[bucket_index(key)]; }
  std::size_t bucket_index(const K& key) const {
    std::uint64_t h;
    if constexpr (std::is_same_v<K, std::int64_t>) {
      h = static_cast<std::uint64_t>(key) * 0x9e3779b97f4a7c15ull;
      h ^= h >> 32;
    } else {
      h = key.hash();  // every byte of the key
    }
    return static_cast<std::size_t>(h & (nbuckets_ - 1));
  }

  // Recovery's index (see the header), two rounds:
  //  1. this thread makes the nodes of `kept` in its order (the scan's slab
  //     order: one sequential pass over the pool reads each key once; why
  //     one thread: internal/kv_payload.h) and sorts them by owner: of
  //     `threads` parts P, part q owns the buckets [q B / P, (q+1) B / P);
  //  2. part q sorts the nodes it owns by (bucket, key) and builds each
  //     bucket's sorted list back to front, pushing at the head (the
  //     buckets start empty: a fresh map). No two parts touch one bucket or
  //     one node: plain stores.
  // Sorting makes it O(n log n) whatever the load: inserting each node into
  // its bucket's sorted list walked the list, quadratic in a bucket's
  // length, and a table with many more keys than buckets (the repeated-kill
  // test: 4,096 buckets, ~460,000 keys) spent half its recovery walking.
  // The lists are sorted, so they are the same for any thread count.
  void rebuild(const std::vector<PBlk*>& kept, int threads) {
    const std::size_t n = kept.size();
    const std::size_t parts = internal::rebuild_parts(n, threads);
    using Placed = std::pair<std::size_t, Node*>;  // (bucket index, node)
    std::vector<std::vector<Placed>> owned(parts);  // owned[q]: the nodes of owner q
    for (PBlk* b : kept) {
      Node* x = new Node(key_of(b), b);
      const std::size_t i = bucket_index(x->key);
      owned[i * parts / nbuckets_].emplace_back(i, x);
    }
    // ORDER: round 1 happens before round 2's parts start (run_parts): every
    // node and `owned` list is visible to its owner.
    std::vector<std::optional<K>> dup(parts);
    internal::run_parts(parts, [&](std::size_t q) {
      auto& v = owned[q];
      std::sort(v.begin(), v.end(), [](const Placed& a, const Placed& b) {
        return a.first != b.first ? a.first < b.first : a.second->key < b.second->key;
      });
      for (std::size_t j = v.size(); j-- > 0;) {
        Node* x = v[j].second;
        CASObj& head = buckets_[v[j].first];
        const std::uint64_t curr = es_->load(head);  // the bucket's smallest key above x's, or null
        // At most one payload per key (see the header): anything else is
        // a recovery bug, thrown below once every node is linked (and
        // freed by the destructor).
        if (curr != 0 && reinterpret_cast<Node*>(curr)->key == x->key && !dup[q]) dup[q] = x->key;
        Sys::init(x->next, curr);
        Sys::init(head, reinterpret_cast<std::uint64_t>(x));
      }
    });
    // ORDER: round 2's parts are joined: the buckets are complete here; the
    // map is handed to its user by this thread, and a thread it starts
    // later synchronizes through that start.
    for (const auto& k : dup)
      if (k) throw std::runtime_error("montage: two recovered payloads for key " + internal::key_text(*k));
  }

  // Michael's find: prev is the word that held curr (unmarked), curr the
  // first node with key >= `key` (or null), next curr's successor (unmarked
  // when returned). Unlinks (and retires) marked nodes on the way.
  bool find(int tid, const K& key, CASObj*& prev, Node*& curr, std::uint64_t& next) {
  retry:
    prev = &bucket(key);
    curr = reinterpret_cast<Node*>(es_->load(*prev));
    for (;;) {
      if (curr == nullptr) return false;
      next = es_->load(curr->next);
      if (es_->load(*prev) != reinterpret_cast<std::uint64_t>(curr)) goto retry;
      if ((next & kMark) == 0) {
        if (curr->key >= key) return curr->key == key;
        prev = &curr->next;
      } else {
        if (!es_->cas(*prev, reinterpret_cast<std::uint64_t>(curr), next & ~kMark)) goto retry;
        ebr_->retire(tid, curr, &HashMap::free_node, this);
      }
      curr = reinterpret_cast<Node*>(next & ~kMark);
    }
  }

  static void free_node(void* ctx, void* p, int tid) {
    auto* m = static_cast<HashMap*>(ctx);
    auto* n = static_cast<Node*>(p);
    if (!m->closing_) m->es_->pdelete(tid, n->payload);
    delete n;
  }

  std::size_t payload_bytes_;
  std::unique_ptr<Sys> es_;
  std::size_t nbuckets_ = 0;
  std::unique_ptr<CASObj[]> buckets_;
  std::unique_ptr<sync::Ebr> ebr_;
  bool closing_ = false;
};

// The paper's DRAM (T): the same table with its payloads in DRAM and plain
// CASes (transient_sys.h).
template <class K = std::int64_t>
using TransientHashMap = HashMap<fault::kNone, K, TransientSys>;

}  // namespace ferrite::montage
