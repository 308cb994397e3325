// ferrite/montage/split_ordered.h — the Shalev–Shavit split-ordered
// resizable lock-free hash table on nbMontage, as a map (put/get/erase).
//
// Papers: O. Shalev, N. Shavit, "Split-Ordered Lists: Lock-Free Extensible
// Hash Tables", JACM 53(3), 2006 (Fig. 4: the list operations and their
// helpers; Fig. 5: insert, find, delete and initialize_bucket; §3.2: the
// two-level bucket array); the list is M. M. Michael's, "High Performance
// Dynamic Lock-Free Hash Tables and List-Based Sets", SPAA 2002 (Fig. 4
// there: find). The nbMontage port: W. Cai et al., "Fast Nonblocking
// Persistence for Concurrent Data Structures", DISC 2021, §5 ("the
// resizable hash table of Shalev & Shavit"), built as their Fig. 7 builds
// Michael's table.
//
// What it is. ONE lock-free sorted list of DRAM nodes (Michael's list: a
// node is logically deleted by marking the low bit of its next word, then
// unlinked by any thread that passes it), ordered by split-order key:
//   regular node of key k, h = hash(k) (63 bits):  so = reverse(h) | 1
//   dummy node of bucket b:                        so = reverse(b)
// (odd for regular nodes, even for dummies), ties between regular nodes
// of one hash broken by the key. The bucket array (DRAM) maps bucket b to
// its dummy; with size s (a power of two), key k belongs to bucket
// h mod s, and that bucket's dummy precedes every node of the bucket in
// the list — for every s, so doubling s moves no node: the new buckets'
// dummies are inserted lazily (initialize_bucket, recursively from the
// parent bucket b minus its top bit). The array is two-level (SS §3.2):
// a directory of segments, segment i > 0 holding buckets [2^(i-1), 2^i),
// each allocated on first use by one CAS. Dummies are never removed.
//
// Each regular node points to an immutable payload {key, value, padding}
// in the pool; only payloads persist. Dummies, the bucket array, `size`
// and `count` are index state, rebuilt by recovery.
//
// Linearization points (each update at one lin_CAS, §3.2 constraint 2; the
// same as hash_map.h, whose D6 applies: every update of a present key
// CASes that node's next word, so a racing put and erase of one key meet
// at one location):
//   put, key absent:   lin_CAS(prev->next, curr, new)            (SS insert)
//   put, key present:  lin_CAS(curr->next, next, new | mark), with
//                      new->next = next: marks the old node and links the
//                      new one after it (SS has no replace)
//   erase:             lin_CAS(curr->next, next, next | mark)     (SS delete)
//   get:               the load of curr->next that finds it unmarked.
// Dummy insertion, unlinking and the bucket array use plain (non-verifying)
// CASes: they change the index, not the abstract state.
//
// Resizing (SS Fig. 5 insert): after an insert, count/size > max_load
// doubles size with one CAS (a failed CAS means another thread resized).
// size and count are heuristics: any size a thread reads names a bucket
// whose dummy precedes the key, so a stale size is never incorrect.
//
// Thread safety: put/get/erase/sync concurrently for distinct thread ids in
// [0, threads); contents(), check_index() only when no operation runs.
//
// Invariants (crash-free).
//  S1 The list from dummy 0 is increasing in (so, key), strictly between
//     unmarked nodes; two adjacent nodes are equal only when the first is
//     marked and the second replaced it (put's replace links the new node
//     right after the node it marks, and the unlink of the marked one may
//     fail and wait for a later traversal — also at quiescence). The
//     unmarked regular nodes hold the map, one per key.
//  S2 A bucket slot, once set, names the one dummy with so = reverse(b)
//     and never changes; a dummy is in the list before its slot is set
//     (so every slot read leads into the list), and its parent's dummy
//     precedes it.
//  S3 A mark is never removed; a marked node's next never changes again
//     (an insert after it would CAS its next word, which is marked).
//  S4 A regular node is retired exactly once, by the thread whose CAS
//     unlinks it (EBR; its payload is pdeleted when EBR frees it).
//
// Persistence invariants: those of the epoch system (epoch_sys.h P1–P5).
// The table writes nothing to the pool but payloads, each filled before
// the lin_CAS that tags it (Fig. 2 l.75–76) and never written after
// (constraint 3). A crash anywhere loses only DRAM.
//
// Recovery (attach). The epoch system's scan (§3.4) keeps at most one
// payload per key (a replacing put commits its new payload and the old
// one's anti-node in one operation). The table is rebuilt with
// size = the smallest power of two >= initial_buckets holding the kept
// payloads at max_load, every bucket's dummy present: the (so, key,
// payload) of every node are sorted in EpochOptions::recovery_threads
// threads (sorted chunks, then merged), then the nodes are made and linked
// in list order by the calling thread. No pool writes: a crash during it
// recovers the same.
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
#include <bit>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "ferrite/montage/epoch_sys.h"
#include "ferrite/montage/internal/bytes_payload.h"
#include "ferrite/montage/internal/kv_payload.h"
#include "ferrite/montage/transient_sys.h"
#include "ferrite/sync/ebr.h"

namespace ferrite::montage {

struct SplitOrderedOptions {
  std::size_t initial_buckets = 2;  // rounded up to a power of two
  std::size_t max_load = 2;         // SS's MAX_LOAD: keys per bucket before size doubles
  std::size_t value_bytes = 8;      // payload value size (>= 8; the value is its first 8 bytes)
};

// K: std::int64_t, or ferrite::Key32 (32-byte keys hashed and compared as
// bytes, stored in the payload and the node: `ferrite bench --key-size 32`),
// or montage::Bytes: byte-string keys and values of any size (the node
// holds the key's hash and a view of the key in its payload; the public
// interface is bytes_hash_map.h's BytesHashMap). The policy
// internal::KVPolicy<K> says what a node keeps and how payloads are made
// and read; the algorithm below is the same for all three.
// S: the system, EpochSys<F> (persistent) or TransientSys (the transient
// original, TransientSplitOrderedMap below).
template <unsigned F = fault::kNone, class K = std::int64_t, class S = EpochSys<F>>
class SplitOrderedMap {
 public:
  using Sys = S;
  // The system's CAS object and payload block (EpochSys: the 16-byte CASObj
  // and the pool's PBlk; TransientSys: a word and a DRAM block).
  using CASObj = typename Sys::CASObj;
  using PBlk = typename Sys::Blk;
  using Options = SplitOrderedOptions;
  using Policy = internal::KVPolicy<K>;  // internal/kv_payload.h, internal/bytes_payload.h
  using Key = typename Policy::Key;      // K, or (Bytes) a std::string_view into the payload
  using Value = typename Policy::Value;  // std::int64_t, or (Bytes) a std::string_view into the payload
  static constexpr bool kBytes = Policy::kBytes;
  static constexpr Kind kKind = kBytes ? Kind::kBytesHashMap : Kind::kSplitOrdered;
  // Segment i > 0 holds buckets [2^(i-1), 2^i): 2^(kSegments-1) buckets at most.
  static constexpr int kSegments = 40;
  static constexpr std::uint64_t kMaxBuckets = std::uint64_t{1} << (kSegments - 1);

  static std::unique_ptr<SplitOrderedMap> create(pmem::Pool& pool, std::string_view name, int threads,
                                                 const SplitOrderedOptions& so = {}, const EpochOptions& opt = {})
    requires Sys::kPersistent
  {
    auto m = std::unique_ptr<SplitOrderedMap>(new SplitOrderedMap(threads, so));
    m->es_ = Sys::create(pool, name, kKind, threads, opt);
    m->init_empty();
    return m;
  }
  // The transient original: payloads in DRAM, nothing persists.
  static std::unique_ptr<SplitOrderedMap> create(int threads, const SplitOrderedOptions& so = {})
    requires(!Sys::kPersistent)
  {
    auto m = std::unique_ptr<SplitOrderedMap>(new SplitOrderedMap(threads, so));
    m->es_ = Sys::create(threads);
    m->init_empty();
    return m;
  }

  static std::unique_ptr<SplitOrderedMap> attach(pmem::Pool& pool, std::string_view name, int threads,
                                                 const SplitOrderedOptions& so = {}, const EpochOptions& opt = {},
                                                 RecoveryStats* stats = nullptr)
    requires Sys::kPersistent
  {
    auto* root = pool.root<MontageRoot>(name);
    if (root->kind != static_cast<std::uint64_t>(kKind))
      throw std::runtime_error("montage: root '" + std::string(name) + "' is not a " +
                               (kBytes ? "byte-string hash map" : "split-ordered hash table"));
    Sys::check_attach(root, threads);  // before the DRAM side exists (its destructor needs es_)
    auto m = std::unique_ptr<SplitOrderedMap>(new SplitOrderedMap(threads, so));
    std::vector<PBlk*> kept;
    m->es_ = Sys::attach(pool, root, threads, &kept, opt, stats);
    // Bytes: every kept payload validated first, by this thread (a damaged
    // one is PoolError(kCorrupt) naming its offset): the rebuild's sort
    // reads keys in recovery_threads threads, where a throw would end the
    // process instead of reaching the caller.
    if constexpr (kBytes) {
      for (const PBlk* p : kept) {
        try {
          (void)Policy::lengths(p);
        } catch (const pmem::PoolError& e) {
          m->abandon();  // a refused recovery: the close writes nothing more to the pool
          throw pmem::PoolError(pmem::Errc::kCorrupt, "montage: recovery of '" + std::string(name) +
                                                          "': the payload block at offset " +
                                                          std::to_string(pool.offset_of(p)) + ": " + e.what());
        }
      }
    }
    m->rebuild(kept, std::max(1, opt.recovery_threads));
    return m;
  }

  ~SplitOrderedMap() {
    closing_ = true;
    ebr_.reset();  // frees the retired (unlinked) nodes; no pdelete while closing
    // Every node still linked, dummies included, is reachable from dummy 0 (S1).
    std::uint64_t c = reinterpret_cast<std::uint64_t>(slot(0).load(std::memory_order_relaxed));
    while ((c & ~kMark) != 0) {
      Node* n = addr(c);
      c = es_->load(n->next);
      delete n;
    }
    for (auto& s : dir_) delete[] s.load(std::memory_order_relaxed);
  }

  // put(k, v) -> the old value, or none (fixed-size keys; the byte-string
  // map's put returns whether it inserted: bytes_hash_map.h).
  std::optional<Value> put(int tid, const Key& key, Value value)
    requires(!kBytes)
  {
    auto g = ebr_->pin(tid);
    std::optional<Value> old;
    put_pinned(tid, key, value, [&](Value v) { old = v; });
    return old;
  }
  std::optional<Value> get(int tid, const Key& key)
    requires(!kBytes)
  {
    std::optional<Value> out;
    get_with(tid, key, [&](Value v) { out = v; });
    return out;
  }
  std::optional<Value> erase(int tid, const Key& key)
    requires(!kBytes)
  {
    std::optional<Value> out;
    erase_with(tid, key, [&](Value v) { out = v; });
    return out;
  }

  // The operations with the old (or found) value given to fn under the
  // epoch pin (a Bytes value is a view into its payload, valid only there).
  // put_with: true if the key was absent (inserted), else fn(old value).
  template <class Fn>
  bool put_with(int tid, const Key& key, Value value, Fn&& fn) {
    auto g = ebr_->pin(tid);
    return put_pinned(tid, key, value, fn);
  }
  // get_with / erase_with: false if the key is absent, else fn(its value).
  template <class Fn>
  bool get_with(int tid, const Key& key, Fn&& fn) {
    auto g = ebr_->pin(tid);
    const std::uint64_t h = hash(key);
    CASObj* prev;
    Node* curr;
    std::uint64_t next;
    if (!find(tid, bucket_of(tid, h), so_regular(h), key, prev, curr, next)) return false;
    fn(value_of(curr->payload));
    return true;
  }
  template <class Fn>
  bool erase_with(int tid, const Key& key, Fn&& fn) {
    auto g = ebr_->pin(tid);
    const std::uint64_t h = hash(key);
    const std::uint64_t so = so_regular(h);
    for (;;) {
      CASObj* prev;
      Node* curr;
      std::uint64_t next;
      if (!find(tid, bucket_of(tid, h), so, key, prev, curr, next)) return false;
      es_->pdetach(tid, curr->payload);
      // PERSIST: the linearization point; the anti-node of curr's payload
      // is tagged at l.69–74 and cancels it in recovery (rule 3).
      if (es_->lin_cas(tid, curr->next, next, next | kMark)) {
        // ORDER: relaxed: count is a resize heuristic (see the header).
        count_.fetch_sub(1, std::memory_order_relaxed);
        // The payload stays readable: curr is retired below (or by a later
        // traversal) and its payload pdeleted only when EBR frees it.
        fn(value_of(curr->payload));
        if constexpr ((F & fault::kFreeOnDetach) != 0) es_->free_now(tid, curr->payload);
        if (es_->cas(*prev, ptr(curr), next)) ebr_->retire(tid, curr, &SplitOrderedMap::free_node, this);
        return true;
      }
    }
  }

  void sync() { es_->sync(); }
  // A simulated crash for tests: destruction then syncs nothing (the
  // destructor otherwise syncs: a clean close loses nothing; epoch_sys.h).
  void abandon() { es_->abandon(); }
  Sys& epochs() { return *es_; }

  // The current number of buckets (a power of two) and of keys (approximate
  // while operations run).
  std::uint64_t bucket_count() const { return size_.load(std::memory_order_relaxed); }
  std::int64_t approximate_size() const { return count_.load(std::memory_order_relaxed); }

  // key,value pairs sorted by key (quiescent only).
  std::vector<std::pair<Key, Value>> contents() {
    std::vector<std::pair<Key, Value>> out;
    for_each_node([&](Node* n, bool marked) {
      if (n->payload != nullptr && !marked) out.emplace_back(n->key, value_of(n->payload));
    });
    std::sort(out.begin(), out.end());
    return out;
  }

  // Checks S1 and S2 (quiescent only): "" if they hold, else what is wrong.
  // Returns the number of initialized buckets through `initialized`.
  std::string check_index(std::uint64_t* initialized = nullptr) {
    std::string err;
    Node* last = nullptr;
    bool last_marked = false;
    Node* last_unmarked = nullptr;
    std::uint64_t dummies = 0;
    for_each_node([&](Node* n, bool marked) {
      if (last != nullptr && err.empty()) {
        const bool equal = !before(*last, *n) && !before(*n, *last);
        if (before(*n, *last))
          err = "list out of split order at so " + std::to_string(n->so);
        else if (equal && !last_marked)
          err = "two nodes of key " + internal::key_text(n->key) + " and the first is not marked (replaced)";
      }
      if (!marked) {
        if (last_unmarked != nullptr && !before(*last_unmarked, *n) && err.empty())
          err = "two unmarked nodes out of split order at so " + std::to_string(n->so);
        last_unmarked = n;
      }
      if (n->payload == nullptr) {
        ++dummies;
        if ((n->so & 1) != 0 && err.empty()) err = "a dummy with an odd split-order key";
      } else if ((n->so & 1) == 0 && err.empty()) {
        err = "a regular node with an even split-order key";
      } else if (n->so != so_regular(hash(n->key)) && err.empty()) {
        err = "a regular node whose split-order key is not its key's";
      }
      last = n;
      last_marked = marked;
    });
    std::uint64_t set = 0;
    const std::uint64_t size = size_.load(std::memory_order_relaxed);
    for (std::uint64_t b = 0; b < size; ++b) {
      Node* d = slot_if_present(b);
      if (d == nullptr) continue;
      ++set;
      if ((d->payload != nullptr || d->so != reverse_bits(b)) && err.empty())
        err = "bucket " + std::to_string(b) + " names a node that is not its dummy";
    }
    if (set != dummies && err.empty())
      err = std::to_string(set) + " bucket slots set but " + std::to_string(dummies) + " dummies in the list";
    if (initialized != nullptr) *initialized = set;
    return err;
  }

  static constexpr std::uint64_t reverse_bits(std::uint64_t x) {
    x = ((x >> 1) & 0x5555555555555555ull) | ((x & 0x5555555555555555ull) << 1);
    x = ((x >> 2) & 0x3333333333333333ull) | ((x & 0x3333333333333333ull) << 2);
    x = ((x >> 4) & 0x0f0f0f0f0f0f0f0full) | ((x & 0x0f0f0f0f0f0f0f0full) << 4);
    return __builtin_bswap64(x);
  }
  // A 63-bit hash: splitmix64's finalizer (a bijection of 64 bits), or
  // Key32's hash of its 32 bytes, top bit dropped (two keys may share a
  // hash; the key breaks the tie).
  static constexpr std::uint64_t hash(const Key& key) {
    if constexpr (kBytes) {
      return internal::bytes_hash(key);
    } else if constexpr (std::is_same_v<K, std::int64_t>) {
      std::uint64_t z = static_cast<std::uint64_t>(key);
      z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
      z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
      return (z ^ (z >> 31)) & ~(std::uint64_t{1} << 63);
    } else {
      return key.hash() & ~(std::uint64_t{1} << 63);
    }
  }
  static constexpr std::uint64_t so_regular(std::uint64_t h) { return reverse_bits(h) | 1; }  // SS so_regularkey
  static constexpr std::uint64_t so_dummy(std::uint64_t b) { return reverse_bits(b); }       // SS so_dummykey

 private:
  static constexpr std::uint64_t kMark = 1;
  struct alignas(16) Node {
    CASObj next{0};
    std::uint64_t so;  // split-order key
    Key key;           // regular nodes; Key{} in dummies (Bytes: a view into the payload)
    PBlk* payload;     // null: a dummy
    Node(std::uint64_t s, const Key& k, PBlk* p) : so(s), key(k), payload(p) {}
  };
  using Slot = std::atomic<Node*>;

  SplitOrderedMap(int threads, const SplitOrderedOptions& so)
      : payload_bytes_(Policy::payload_bytes(so.value_bytes)),
        max_load_(std::max<std::size_t>(1, so.max_load)),
        ebr_(std::make_unique<sync::Ebr>(threads)) {
    initial_ = 1;
    while (initial_ < so.initial_buckets && initial_ < kMaxBuckets) initial_ *= 2;
  }

  // A new table: initial_ buckets, only bucket 0's dummy (SS: T[0] = dummy(0)).
  void init_empty() {
    size_.store(initial_, std::memory_order_relaxed);
    slot(0).store(new Node(0, Key{}, nullptr), std::memory_order_release);
  }
  static std::uint64_t ptr(const Node* n) { return reinterpret_cast<std::uint64_t>(n); }
  static Node* addr(std::uint64_t w) { return reinterpret_cast<Node*>(w & ~kMark); }
  static Value value_of(const PBlk* p) { return Policy::template value_of<Sys>(p); }
  static Key key_of(const PBlk* p) { return Policy::template key_of<Sys>(p); }
  // The list order (S1): split-order key, then the key (regular nodes of
  // one hash; a dummy's so is never a regular node's). A: a Node, or
  // recovery's Item (rebuild).
  template <class A>
  static bool before(const A& a, const A& b) {
    return a.so != b.so ? a.so < b.so : a.key < b.key;
  }

  // put under the caller's pin: fn(old value) on a replace.
  template <class Fn>
  bool put_pinned(int tid, const Key& key, Value value, Fn&& fn) {
    // An anti-node for lin_CAS's detach (l.71) cannot fail to allocate
    // once the payload exists: a full pool throws here or in pnew, before
    // the operation changes anything.
    if constexpr (Sys::kPersistent) es_->reserve_anti(tid);
    // Fig. 7's pattern: pnew outside the retry loop; abort_op (l.91–92)
    // resets it for the next attempt, pdetach is repeated inside.
    PBlk* p = Policy::make(*es_, tid, payload_bytes_, key, value);
    const std::uint64_t h = hash(key);
    Node* nn = new Node(so_regular(h), Policy::node_key(key, p), p);
    for (;;) {
      Node* start = bucket_of(tid, h);
      CASObj* prev;
      Node* curr;
      std::uint64_t next;
      if (find(tid, start, nn->so, key, prev, curr, next)) {
        Sys::init(nn->next, next);  // nn is private until the lin_CAS publishes it
        es_->pdetach(tid, curr->payload);
        // PERSIST: the linearization point (Fig. 1 lin_CAS): p and the
        // anti-node of curr's payload are tagged with the epoch the DCSS
        // commits in (l.69–76), so recovery keeps both or neither (§3.4).
        if (es_->lin_cas(tid, curr->next, next, ptr(nn) | kMark)) {
          fn(value_of(curr->payload));  // retired below, freed after the pin
          if constexpr ((F & fault::kFreeOnDetach) != 0) es_->free_now(tid, curr->payload);
          // Unlink the replaced node (or leave it to a traversal's find).
          if (es_->cas(*prev, ptr(curr), ptr(nn))) ebr_->retire(tid, curr, &SplitOrderedMap::free_node, this);
          return false;
        }
        // CRASH: a failed attempt (conflict: abort_op; epoch change:
        // reset_op inside lin_cas) leaves p and any anti-node with a serial
        // number the descriptor never commits (§3.4 rule 2).
      } else {
        Sys::init(nn->next, ptr(curr));
        // PERSIST: the linearization point (Fig. 1 lin_CAS); p tagged at
        // l.75–76.
        if (es_->lin_cas(tid, *prev, ptr(curr), ptr(nn))) {
          grow_after_insert();
          return true;
        }
      }
    }
  }

  // ------------------------------------------------------------ buckets
  static int segment_of(std::uint64_t b) { return b == 0 ? 0 : std::bit_width(b); }
  static std::uint64_t segment_base(int s) { return s == 0 ? 0 : std::uint64_t{1} << (s - 1); }
  static std::uint64_t segment_len(int s) { return s == 0 ? 1 : std::uint64_t{1} << (s - 1); }
  // The slot of bucket b, its segment allocated on first use (SS §3.2).
  Slot& slot(std::uint64_t b) {
    const int s = segment_of(b);
    // ORDER: acquire: the segment's slots were value-initialized (null)
    // before the release CAS that published it.
    Slot* seg = dir_[s].load(std::memory_order_acquire);
    if (seg == nullptr) {
      Slot* fresh = new Slot[segment_len(s)]();
      if (dir_[s].compare_exchange_strong(seg, fresh, std::memory_order_acq_rel)) {
        seg = fresh;
      } else {
        delete[] fresh;  // another thread's segment won (seg holds it)
      }
    }
    return seg[b - segment_base(s)];
  }
  Node* slot_if_present(std::uint64_t b) {
    Slot* seg = dir_[segment_of(b)].load(std::memory_order_acquire);
    return seg == nullptr ? nullptr : seg[b - segment_base(segment_of(b))].load(std::memory_order_acquire);
  }
  // The dummy that starts key hash h's bucket under the current size.
  Node* bucket_of(int tid, std::uint64_t h) {
    // ORDER: relaxed: any size read is correct (see the header); a stale
    // one starts the search at an earlier dummy.
    const std::uint64_t size = size_.load(std::memory_order_relaxed);
    return bucket_dummy(tid, h & (size - 1));
  }
  Node* bucket_dummy(int tid, std::uint64_t b) {
    // ORDER: acquire: the dummy's fields (and its link into the list, S2)
    // were written before the release that set the slot.
    Node* d = slot(b).load(std::memory_order_acquire);
    return d != nullptr ? d : initialize_bucket(tid, b);
  }
  // SS Fig. 5 initialize_bucket: the parent's dummy first (b minus its top
  // bit), then this bucket's dummy is inserted after it (or found, if
  // another thread inserted it), then published in the slot (S2).
  Node* initialize_bucket(int tid, std::uint64_t b) {
    const std::uint64_t parent = b & ~(std::uint64_t{1} << (std::bit_width(b) - 1));
    Node* start = bucket_dummy(tid, parent);
    Node* d = new Node(so_dummy(b), Key{}, nullptr);
    for (;;) {
      CASObj* prev;
      Node* curr;
      std::uint64_t next;
      if (find(tid, start, d->so, Key{}, prev, curr, next)) {
        delete d;  // another thread's dummy is in the list: use it
        d = curr;
        break;
      }
      Sys::init(d->next, ptr(curr));
      // A plain CAS: a dummy carries no payload and changes no key's
      // presence (nothing to persist, constraint 2 concerns updates).
      if (es_->cas(*prev, ptr(curr), ptr(d))) break;
    }
    Node* expected = nullptr;
    // ORDER: release: publishes d after its link (S2). A failed CAS found
    // the same dummy (one dummy per so is ever in the list).
    if (!slot(b).compare_exchange_strong(expected, d, std::memory_order_acq_rel)) return expected;
    return d;
  }
  // SS Fig. 5 insert's tail: count, then double size past max_load.
  void grow_after_insert() {
    // ORDER: relaxed: a heuristic; the size CAS is the only decision.
    const std::int64_t c = count_.fetch_add(1, std::memory_order_relaxed) + 1;
    std::uint64_t size = size_.load(std::memory_order_relaxed);
    if (size < kMaxBuckets && c > 0 && static_cast<std::uint64_t>(c) > size * max_load_)
      size_.compare_exchange_strong(size, size * 2, std::memory_order_relaxed);
  }

  // Michael's find from `start` (a dummy, never removed): prev is the word
  // that held curr (unmarked), curr the first node not before (so, key) (or
  // null), next curr's successor (unmarked when returned). Unlinks and
  // retires the marked nodes it meets (S4).
  bool find(int tid, Node* start, std::uint64_t so, const Key& key, CASObj*& prev, Node*& curr,
            std::uint64_t& next) {
  retry:
    prev = &start->next;
    curr = addr(es_->load(*prev));
    for (;;) {
      if (curr == nullptr) return false;
      next = es_->load(curr->next);
      if (es_->load(*prev) != ptr(curr)) goto retry;
      if ((next & kMark) == 0) {
        if (curr->so > so || (curr->so == so && curr->key >= key)) return curr->so == so && curr->key == key;
        prev = &curr->next;
      } else {
        // Only regular nodes are ever marked (dummies stay, S2).
        if (!es_->cas(*prev, ptr(curr), next & ~kMark)) goto retry;
        ebr_->retire(tid, curr, &SplitOrderedMap::free_node, this);
      }
      curr = addr(next);
    }
  }

  template <class Fn>
  void for_each_node(Fn&& fn) {
    Node* n = slot(0).load(std::memory_order_acquire);
    while (n != nullptr) {
      const std::uint64_t w = es_->load(n->next);
      fn(n, (w & kMark) != 0);
      n = addr(w);
    }
  }

  // Recovery's index: every bucket of the recovered size has its dummy; the
  // nodes' values are sorted in `threads` chunks and merged, then the nodes
  // are made and linked (S1, S2).
  void rebuild(const std::vector<PBlk*>& kept, int threads) {
    std::uint64_t size = initial_;
    while (size < kMaxBuckets && size * max_load_ < kept.size()) size *= 2;
    const std::size_t n = kept.size() + size;
    // Every node's (so, key, payload) as a value, sorted into S1's order:
    // the keys are read from the pool once, in the scan's slab order, and
    // the sort compares values in DRAM (sorting node pointers cost two
    // cache misses per comparison: 0.9 s of a 1 GiB recovery).
    struct Item {
      std::uint64_t so;
      Key key;
      PBlk* payload;  // null: a dummy
    };
    const auto item_before = [](const Item& a, const Item& b) { return before(a, b); };
    const std::vector<Item> items = internal::sorted_in_parts<Item>(
        n, threads,
        [&](std::size_t i) {
          if (i >= kept.size()) return Item{so_dummy(i - kept.size()), Key{}, nullptr};
          const Key k = key_of(kept[i]);
          return Item{so_regular(hash(k)), k, kept[i]};
        },
        item_before);
    // At most one payload per key (see the header): anything else is a
    // recovery bug, reported before any node is made.
    for (std::size_t i = 0; i + 1 < n; ++i)
      if (items[i].payload != nullptr && items[i + 1].payload != nullptr && !item_before(items[i], items[i + 1]))
        throw std::runtime_error("montage: two recovered payloads for key " + internal::key_text(items[i].key));
    // The nodes, in list order, made by this thread (why one:
    // internal/kv_payload.h), each bucket's dummy in its slot (dummy 0,
    // so 0, first: the list's head).
    Node* prev = nullptr;
    for (const Item& it : items) {
      Node* x = new Node(it.so, it.key, it.payload);
      if (prev != nullptr) Sys::init(prev->next, ptr(x));
      if (x->payload == nullptr) slot(reverse_bits(x->so)).store(x, std::memory_order_relaxed);
      prev = x;
    }
    size_.store(size, std::memory_order_relaxed);
    count_.store(static_cast<std::int64_t>(kept.size()), std::memory_order_relaxed);
    // ORDER: the map is handed to its user by the thread that built it; a
    // thread it starts later synchronizes through that start.
  }

  static void free_node(void* ctx, void* p, int tid) {
    auto* m = static_cast<SplitOrderedMap*>(ctx);
    auto* n = static_cast<Node*>(p);
    // PERSIST: pdelete (l.54–58) frees the payload once recovery can no
    // longer need it (epoch_sys.h P4); its anti-node was committed with the
    // detach.
    if (!m->closing_ && (F & fault::kFreeOnDetach) == 0) m->es_->pdelete(tid, n->payload);
    delete n;
  }

  std::size_t payload_bytes_;
  std::size_t max_load_;
  std::uint64_t initial_ = 2;
  std::unique_ptr<Sys> es_;
  std::atomic<Slot*> dir_[kSegments] = {};
  std::atomic<std::uint64_t> size_{2};
  std::atomic<std::int64_t> count_{0};
  std::unique_ptr<sync::Ebr> ebr_;
  bool closing_ = false;
};

// The paper's DRAM (T): the same table with its payloads in DRAM and plain
// CASes (transient_sys.h).
template <class K = std::int64_t>
using TransientSplitOrderedMap = SplitOrderedMap<fault::kNone, K, TransientSys>;

}  // namespace ferrite::montage
