// ferrite/montage/skiplist.h — a lock-free skip list on nbMontage, as a
// map (put/get/erase).
//
// Papers: M. Herlihy, N. Shavit, "The Art of Multiprocessor Programming",
// §14.4 (LockFreeSkipList: find, add, remove, contains), itself after
// K. Fraser, "Practical Lock-Freedom", PhD thesis, Cambridge 2004 (whose
// upper-level linking we use, see below); the nbMontage port: W. Cai et
// al., "Fast Nonblocking Persistence for Concurrent Data Structures",
// DISC 2021, §5, where the evaluated skip list is the rotating skip list
// of Dick, Fekete and Gramoli. Why not the rotating one: its towers are
// maintained by a background thread (not lock-free by itself, and a thread
// the crash campaigns' scheduler cannot see); Herlihy–Shavit's list has
// the same map interface, is lock-free on its own, and its update
// linearizes at one CAS, which is what nbMontage needs (§3.2 constraint 2).
//
// What it is. Towers of DRAM nodes; each node holds its key and a `val`
// CASObj with the pointer to its immutable payload {key, value} in the
// pool (only payloads persist), and `next[level]` CASObjs (as many as its
// height, in the node's allocation) whose low bit marks the tower as
// removed at that level. Deviation from Herlihy–Shavit, and why: their
// remove linearizes at marking next[0]; a put on a present key would
// then be a second word (the value), and a concurrent put and
// erase could both succeed on one node (the hash map's D6). Here the
// logical deletion is a mark in `val`: replace and erase both lin_CAS
// `val`, and meet there. next[] marks (all levels, top down) follow the
// logical deletion and are physical only; a node whose val is marked but
// whose next[0] is not may still gain a successor (the insert CASes
// pred.next[0], which is unmarked): that successor stays linked when the
// node is unlinked, since unlinking reads the node's marked next[0].
//
// Linearization points:
//   put, key absent:   lin_CAS(pred.next[0], succ, node)     (HS add l.0)
//   put, key present:  lin_CAS(node.val, p, p'), detaching p
//   erase:             lin_CAS(node.val, p, p | mark), detaching p
//   get:               the load of node.val (absent if marked or no node).
//   scan:              per key, the load of its tower's val (not a snapshot
//                      of the range: each key is seen before or after any
//                      concurrent change of it).
// An update that finds its key's node with a marked val helps (marks the
// tower, runs find, which unlinks it) and retries.
//
// Upper levels (Fraser): after its level-0 link, an insert links levels
// 1..h-1 bottom up with plain CASes; before each attempt it points the new
// node's next[level] at the current successor, and it stops when that word
// is marked (the node was erased meanwhile).
//
// Thread safety: put/get/erase/scan/sync concurrently for distinct thread
// ids in [0, threads); contents() only when no operation runs.
//
// Invariants (crash-free). K1 at level 0 the unmarked-val nodes reachable
// from the head have strictly increasing keys, one per key in the map;
// K2 val is marked before any next[] of its node, and a mark is never
// removed; K3 a node is retired exactly once, by the second of its
// inserter (done linking) and its eraser (done with its find) — each
// runs find(key) after its last change, so at that point the node is
// unlinked at every level (find unlinks every marked node on key's path).
// Payloads are retired (EBR, then pdelete) by the thread whose lin_CAS
// removed them from `val`.
//
// Persistence invariants: those of the epoch system (epoch_sys.h P1–P5);
// the list writes nothing to the pool but payloads, set before lin_CAS.
//
// Recovery (attach). The epoch system's scan (§3.4) yields at most one
// payload per key (two are a recovery bug, which throws); the list is
// rebuilt in key order (tower heights a fixed function of the rank, each
// level linked behind the last node of that level): the keys are read and
// sorted in EpochOptions::recovery_threads threads (chunks, then merged),
// and the towers are made by the calling thread (why one:
// internal/kv_payload.h). No pool writes: a crash during it recovers the
// same.
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
#include <new>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "ferrite/montage/epoch_sys.h"
#include "ferrite/montage/internal/bytes_payload.h"
#include "ferrite/montage/internal/kv_payload.h"
#include "ferrite/montage/transient_sys.h"
#include "ferrite/sync/ebr.h"

namespace ferrite::montage {

struct SkipListOptions {
  std::size_t value_bytes = 8;  // payload value size (>= 8; the value is its first 8 bytes)
};

// K: std::int64_t, or ferrite::Key32 (32-byte keys compared as bytes,
// stored in the payload and in the tower: `ferrite bench --key-size 32`),
// or montage::Bytes: byte-string keys and values of any size (the payload
// is internal/bytes_payload.h's; the tower holds a DRAM copy of the key's
// bytes after its links, since `val` — and with it the payload — changes
// under a replace while the tower stays; the public interface is
// bytes_skip_map.h's BytesSkipMap). The policy internal::KVPolicy<K> says
// how payloads are made and read; the algorithm below is the same for all.
// S: the system, EpochSys<F> (persistent) or TransientSys (the transient
// original, TransientSkipList below).
template <unsigned F = fault::kNone, class K = std::int64_t, class S = EpochSys<F>>
class SkipList {
 public:
  using Sys = S;
  // The system's CAS object and payload block (EpochSys: the 16-byte CASObj
  // and the pool's PBlk; TransientSys: a word and a DRAM block).
  using CASObj = typename Sys::CASObj;
  using PBlk = typename Sys::Blk;
  using Options = SkipListOptions;
  static constexpr int kLevels = 20;  // 2^20 keys at p = 1/2
  using Policy = internal::KVPolicy<K>;  // internal/kv_payload.h, internal/bytes_payload.h
  using Key = typename Policy::Key;      // K, or (Bytes) a std::string_view (the tower's copy)
  using Value = typename Policy::Value;  // std::int64_t, or (Bytes) a view into the payload
  static constexpr bool kBytes = Policy::kBytes;
  static constexpr Kind kKind = kBytes ? Kind::kBytesSkipList : Kind::kSkipList;
  using Keyed = std::pair<Key, PBlk*>;

  static std::unique_ptr<SkipList> create(pmem::Pool& pool, std::string_view name, int threads,
                                          const SkipListOptions& so = {}, const EpochOptions& opt = {})
    requires Sys::kPersistent
  {
    auto l = std::unique_ptr<SkipList>(new SkipList(threads, so));
    l->es_ = Sys::create(pool, name, kKind, threads, opt);
    return l;
  }
  // The transient original: payloads in DRAM, nothing persists.
  static std::unique_ptr<SkipList> create(int threads, const SkipListOptions& so = {})
    requires(!Sys::kPersistent)
  {
    auto l = std::unique_ptr<SkipList>(new SkipList(threads, so));
    l->es_ = Sys::create(threads);
    return l;
  }
  static std::unique_ptr<SkipList> attach(pmem::Pool& pool, std::string_view name, int threads,
                                          const SkipListOptions& so = {}, const EpochOptions& opt = {},
                                          RecoveryStats* stats = nullptr)
    requires Sys::kPersistent
  {
    auto* root = pool.root<MontageRoot>(name);
    if (root->kind != static_cast<std::uint64_t>(kKind))
      throw std::runtime_error("montage: root '" + std::string(name) + "' is not a " +
                               (kBytes ? "byte-string skip list" : "skip list"));
    Sys::check_attach(root, threads);  // before the DRAM side exists (its destructor needs es_)
    auto l = std::unique_ptr<SkipList>(new SkipList(threads, so));
    std::vector<PBlk*> kept;
    l->es_ = Sys::attach(pool, root, threads, &kept, opt, stats);
    // The rebuild (see the header): sorted in recovery_threads threads,
    // checked, then built.
    // Bytes: every kept payload validated first, by this thread (its
    // lengths must add up to its block: else PoolError(kCorrupt) naming
    // it), so the sort's threads read only valid payloads and throw nothing.
    if constexpr (kBytes) {
      for (const PBlk* p : kept) {
        try {
          (void)Policy::lengths(p);
        } catch (const pmem::PoolError& e) {
          l->abandon();  // a refused recovery: the close writes nothing more to the pool
          throw pmem::PoolError(pmem::Errc::kCorrupt, "montage: recovery of '" + std::string(name) +
                                                          "': the payload block at offset " +
                                                          std::to_string(pool.offset_of(p)) + ": " + e.what());
        }
      }
    }
    const std::vector<Keyed> keyed = internal::sorted_in_parts<Keyed>(
        kept.size(), std::max(1, opt.recovery_threads), [&](std::size_t i) { return Keyed{key_of(kept[i]), kept[i]}; },
        [](const Keyed& a, const Keyed& b) { return a.first < b.first; });
    internal::check_distinct_keys(keyed);  // at most one payload per key (see the header)
    l->rebuild(keyed);
    return l;
  }

  ~SkipList() {
    closing_ = true;
    ebr_.reset();
    Node* n = head_;
    while (n != nullptr) {
      Node* next = addr<Node>(es_->load(n->next(0)));
      Node::destroy(n);
      n = next;
    }
  }

  // put(k, v) -> the old value, or none (fixed-size keys; the byte-string
  // map's put returns whether it inserted: bytes_skip_map.h).
  std::optional<Value> put(int tid, const Key& key, Value value)
    requires(!kBytes)
  {
    std::optional<Value> old;
    put_with(tid, key, value, [&](Value v) { old = v; });
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
    // Bytes: an anti-node for lin_CAS's detach (l.71) cannot fail to
    // allocate once the payload exists: a full pool throws here or in pnew,
    // before the operation changes anything (split_ordered.h's put).
    if constexpr (kBytes && Sys::kPersistent) es_->reserve_anti(tid);
    PBlk* p = Policy::make(*es_, tid, payload_bytes_, key, value);  // outside the retry loop (Fig. 7's pattern)
    Node* nn = nullptr;  // a new tower, reused across retries
    Node* preds[kLevels];
    Node* succs[kLevels];
    for (;;) {
      if (find(key, preds, succs)) {
        Node* n = succs[0];
        const std::uint64_t w = es_->load(n->val);
        if ((w & kMark) == 0) {
          PBlk* old = addr<PBlk>(w);
          es_->pdetach(tid, old);
          // PERSIST: the linearization point (Fig. 1 lin_CAS): p and the
          // anti-node of old are tagged with the epoch the DCSS commits in
          // (l.69–76), so recovery keeps both or neither (§3.4).
          if (es_->lin_cas(tid, n->val, w, ptr(p))) {
            if (nn != nullptr) Node::destroy(nn);
            fn(value_of(old));  // old is retired below, freed after the pin
            retire_payload(tid, old);
            return false;
          }
          // CRASH: a failed attempt leaves p and the anti-node with a serial
          // number the descriptor never commits (§3.4 rule 2).
          continue;
        }
        help_remove(n);
        continue;
      }
      if (nn == nullptr) {
        nn = Node::make(key, random_height(ts(tid).rng));
        Sys::init(nn->val, ptr(p));
      }
      for (int lv = 0; lv < nn->height; ++lv) Sys::init(nn->next(lv), ptr(succs[lv]));
      // PERSIST: the linearization point (Fig. 1 lin_CAS); p tagged at
      // l.75–76.
      if (es_->lin_cas(tid, preds[0]->next(0), ptr(succs[0]), ptr(nn))) {
        // ORDER: relaxed: size() is exact only at quiescence.
        count_.fetch_add(1, std::memory_order_relaxed);
        link_upper(tid, nn, preds, succs);
        return true;
      }
    }
  }

  // get_with / erase_with: false if the key is absent, else fn(its value).
  template <class Fn>
  bool get_with(int tid, const Key& key, Fn&& fn) {
    auto g = ebr_->pin(tid);
    Node* preds[kLevels];
    Node* succs[kLevels];
    if (!find(key, preds, succs)) return false;
    const std::uint64_t w = es_->load(succs[0]->val);
    if ((w & kMark) != 0) return false;
    fn(value_of(addr<PBlk>(w)));
    return true;
  }

  template <class Fn>
  bool erase_with(int tid, const Key& key, Fn&& fn) {
    auto g = ebr_->pin(tid);
    Node* preds[kLevels];
    Node* succs[kLevels];
    for (;;) {
      if (!find(key, preds, succs)) return false;
      Node* n = succs[0];
      const std::uint64_t w = es_->load(n->val);
      if ((w & kMark) == 0) {
        PBlk* old = addr<PBlk>(w);
        es_->pdetach(tid, old);
        // PERSIST: the linearization point; the anti-node of old is tagged
        // at l.69–74 and cancels it in recovery (rule 3).
        if (es_->lin_cas(tid, n->val, w, w | kMark)) {
          count_.fetch_sub(1, std::memory_order_relaxed);
          fn(value_of(old));
          help_remove(n);
          // K3: the eraser is done (its find ran after every mark).
          // ORDER: acq_rel, see link_upper.
          if (n->done.fetch_add(1, std::memory_order_acq_rel) == 1) ebr_->retire(tid, n, &SkipList::free_node, this);
          retire_payload(tid, old);
          return true;
        }
        continue;
      }
      // Erased by another operation that linearized first: help, retry
      // (the retry's find no longer reaches it).
      help_remove(n);
    }
  }

  // scan: fn(key, value) for every key in [lo, hi) in ascending order, at
  // level 0 from the first tower not below lo (HS find), until fn returns
  // false. Each key's value is read at one load of its tower's val (a
  // marked val: the key is absent then, skipped), under the caller's epoch
  // pin, so every value given to fn is a payload some put published and
  // that no reclamation has freed; the scan is not a snapshot (keys
  // changed meanwhile are seen before or after their change). The walk
  // reads only (like HS contains): marked towers are passed, not unlinked.
  template <class Fn>
  void scan(int tid, const Key& lo, const Key& hi, Fn&& fn) {
    if (!(lo < hi)) return;
    walk_from(tid, lo, &hi, std::forward<Fn>(fn));
  }
  // scan_from: the same for every key >= lo (no upper bound: iteration in
  // key order, until fn returns false).
  template <class Fn>
  void scan_from(int tid, const Key& lo, Fn&& fn) {
    walk_from(tid, lo, static_cast<const Key*>(nullptr), std::forward<Fn>(fn));
  }

 private:
  template <class Fn>
  void walk_from(int tid, const Key& lo, const Key* hi, Fn&& fn) {
    auto g = ebr_->pin(tid);
    Node* preds[kLevels];
    Node* succs[kLevels];
    find(lo, preds, succs);
    for (Node* n = succs[0]; n != nullptr; n = addr<Node>(es_->load(n->next(0)))) {
      if (hi != nullptr && !(n->key < *hi)) return;
      if (n->key < lo) continue;  // not reached: find returned the first >= lo
      const std::uint64_t w = es_->load(n->val);
      if ((w & kMark) != 0) continue;
      if (!fn(n->key, value_of(addr<PBlk>(w)))) return;
    }
  }

 public:
  // Keys present (exact when no update runs).
  std::size_t size() const {
    return static_cast<std::size_t>(std::max<std::int64_t>(0, count_.load(std::memory_order_relaxed)));
  }

  void sync() { es_->sync(); }
  // A simulated crash for tests: destruction then syncs nothing (the
  // destructor otherwise syncs: a clean close loses nothing; epoch_sys.h).
  void abandon() { es_->abandon(); }
  Sys& epochs() { return *es_; }

  // key,value pairs sorted by key (quiescent only).
  std::vector<std::pair<Key, Value>> contents() {
    std::vector<std::pair<Key, Value>> out;
    for (Node* n = addr<Node>(es_->load(head_->next(0))); n != nullptr; n = addr<Node>(es_->load(n->next(0)))) {
      const std::uint64_t w = es_->load(n->val);
      if ((w & kMark) == 0) out.emplace_back(n->key, value_of(addr<PBlk>(w)));
    }
    return out;
  }

 private:
  static constexpr std::uint64_t kMark = 1;
  // A tower sized to its height: the header, then `height` CASObjs
  // (next(0) .. next(height - 1)) in the same allocation. Heights are
  // geometric (p = 1/2): the average tower has two links, 64 B with the
  // 16-byte CASObj, where a fixed kLevels array made every node 352 B
  // (recovery's rebuild allocated 92 MB of towers for 260k keys).
  // Bytes: the key's bytes follow the links (the tower's own copy; `key`
  // views them).
  struct alignas(16) Node {
    CASObj val{0};
    Key key;
    int height;
    std::atomic<int> done{0};  // K3: inserter and eraser, each adds 1 when done

    static Node* make(const Key& k, int h) {
      const std::size_t links = static_cast<std::size_t>(h) * sizeof(CASObj);
      std::size_t extra = 0;
      if constexpr (kBytes) extra = k.size();
      void* mem = ::operator new(sizeof(Node) + links + extra, std::align_val_t{alignof(Node)});
      Node* n = ::new (mem) Node(k, h);
      for (int lv = 0; lv < h; ++lv) ::new (static_cast<void*>(n->links() + lv)) CASObj(0);
      if constexpr (kBytes) {
        char* bytes = reinterpret_cast<char*>(mem) + sizeof(Node) + links;
        if (extra != 0) std::memcpy(bytes, k.data(), extra);
        n->key = std::string_view(bytes, extra);
      }
      return n;
    }
    static void destroy(Node* n) {
      static_assert(std::is_trivially_destructible_v<CASObj>, "towers are freed without destroying their links");
      n->~Node();
      ::operator delete(static_cast<void*>(n), std::align_val_t{alignof(Node)});
    }
    CASObj& next(int lv) { return links()[lv]; }

   private:
    Node(const Key& k, int h) : key(k), height(h) {}
    // The links follow the header; sizeof(Node) is a multiple of its
    // alignment, which is at least CASObj's.
    CASObj* links() { return std::launder(reinterpret_cast<CASObj*>(this + 1)); }
  };
  static_assert(sizeof(Node) % alignof(CASObj) == 0 && alignof(Node) >= alignof(CASObj));
  struct alignas(64) PerThread {
    std::uint64_t rng;
  };

  SkipList(int threads, const SkipListOptions& so)
      : payload_bytes_(Policy::payload_bytes(so.value_bytes)),
        ebr_(std::make_unique<sync::Ebr>(threads)),
        per_thread_(new PerThread[static_cast<std::size_t>(threads)]) {
    for (int t = 0; t < threads; ++t) per_thread_[static_cast<std::size_t>(t)].rng = 0x9e3779b97f4a7c15ull * (t + 1) | 1;
    head_ = Node::make(Key{}, kLevels);  // its key is never read
  }

  template <class T = Node>
  static std::uint64_t ptr(const T* n) {
    return reinterpret_cast<std::uint64_t>(n);
  }
  template <class T>
  static T* addr(std::uint64_t w) {
    return reinterpret_cast<T*>(w & ~kMark);
  }
  static Key key_of(const PBlk* p) { return Policy::template key_of<Sys>(p); }
  static Value value_of(const PBlk* p) { return Policy::template value_of<Sys>(p); }
  PerThread& ts(int tid) { return per_thread_[static_cast<std::size_t>(tid)]; }
  // Geometric heights, p = 1/2, in [1, kLevels].
  static int random_height(std::uint64_t& r) {
    r ^= r << 13;
    r ^= r >> 7;
    r ^= r << 17;
    int h = 1 + __builtin_ctzll(r | (std::uint64_t{1} << (kLevels - 1)));
    return std::min(h, kLevels);
  }

  // HS find: for each level, preds[l].key < key <= succs[l].key (null =
  // +inf), unlinking every marked node met on the way (plain CASes; a
  // failure restarts from the head). True iff succs[0] has the key.
  bool find(const Key& key, Node** preds, Node** succs) {
  retry:
    Node* pred = head_;
    for (int lv = kLevels - 1; lv >= 0; --lv) {
      Node* curr = addr<Node>(es_->load(pred->next(lv)));
      for (;;) {
        if (curr == nullptr) break;
        std::uint64_t succ = es_->load(curr->next(lv));
        while ((succ & kMark) != 0) {
          // curr is removed at this level: unlink it (pred unmarked, else
          // the CAS fails and we restart).
          if (!es_->cas(pred->next(lv), ptr(curr), succ & ~kMark)) goto retry;
          curr = addr<Node>(succ);
          if (curr == nullptr) break;
          succ = es_->load(curr->next(lv));
        }
        if (curr == nullptr || curr->key >= key) break;
        pred = curr;
        curr = addr<Node>(succ);
      }
      preds[lv] = pred;
      succs[lv] = curr;
    }
    return succs[0] != nullptr && succs[0]->key == key;
  }

  // Marks n's tower top down (K2), then unlinks it on key's path.
  void help_remove(Node* n) {
    for (int lv = n->height - 1; lv >= 0; --lv) {
      std::uint64_t w = es_->load(n->next(lv));
      while ((w & kMark) == 0 && !es_->cas(n->next(lv), w, w | kMark)) w = es_->load(n->next(lv));
    }
    Node* preds[kLevels];
    Node* succs[kLevels];
    find(n->key, preds, succs);
  }

  // Fraser's upper-level linking, then K3's handshake.
  void link_upper(int tid, Node* n, Node** preds, Node** succs) {
    for (int lv = 1; lv < n->height; ++lv) {
      for (;;) {
        const std::uint64_t w = es_->load(n->next(lv));
        if ((w & kMark) != 0) goto finished;  // erased meanwhile: stop linking
        if (w != ptr(succs[lv]) && !es_->cas(n->next(lv), w, ptr(succs[lv]))) continue;
        if (es_->cas(preds[lv]->next(lv), ptr(succs[lv]), ptr(n))) break;
        find(n->key, preds, succs);
        // A find that does not return n at level 0 means n was unlinked
        // there (erased): stop.
        if (succs[0] != n) goto finished;
      }
    }
  finished:
    // An erase that finished its find before our last link would leave n
    // linked above: unlink it ourselves (K3).
    if ((es_->load(n->val) & kMark) != 0) {
      Node* p2[kLevels];
      Node* s2[kLevels];
      find(n->key, p2, s2);
    }
    // ORDER: acq_rel: the second of inserter and eraser sees the other's
    // finds done before it retires the node.
    if (n->done.fetch_add(1, std::memory_order_acq_rel) == 1) ebr_->retire(tid, n, &SkipList::free_node, this);
  }

  // Tower i's height: geometric (p = 1/2) in [1, kLevels], a function of
  // i alone (splitmix64's finalizer of it): the rebuilt list is the same
  // for any recovery.
  static int height_at(std::size_t i) {
    std::uint64_t z = (static_cast<std::uint64_t>(i) + 1) * 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    return std::min(1 + __builtin_ctzll(z | (std::uint64_t{1} << (kLevels - 1))), kLevels);
  }

  // Recovery's index from the kept payloads sorted by key (distinct): the
  // towers in key order, each level linked behind the last tower of that
  // level (the head's, at first).
  void rebuild(const std::vector<Keyed>& keyed) {
    Node* last[kLevels];
    std::fill(last, last + kLevels, head_);
    for (std::size_t i = 0; i < keyed.size(); ++i) {
      Node* x = Node::make(keyed[i].first, height_at(i));
      Sys::init(x->val, ptr(keyed[i].second));
      x->done.store(1, std::memory_order_relaxed);  // no inserter: linking is done
      for (int lv = 0; lv < x->height; ++lv) {
        Sys::init(last[lv]->next(lv), ptr(x));
        last[lv] = x;
      }
    }
    count_.store(static_cast<std::int64_t>(keyed.size()), std::memory_order_relaxed);
    // ORDER: the list is handed to its user by this thread; a thread it
    // starts later synchronizes through that start.
  }

  // A payload detached by this thread's committed lin_CAS: freed by EBR
  // (then pdelete's epoch delay, P4) once no reader can hold it.
  void retire_payload(int tid, PBlk* old) {
    if constexpr ((F & fault::kFreeOnDetach) != 0) {
      es_->free_now(tid, old);  // the broken variant: reused while recovery may still need it
    } else {
      ebr_->retire(tid, old, &SkipList::free_payload, this);
    }
  }

  static void free_node(void*, void* p, int) { Node::destroy(static_cast<Node*>(p)); }
  static void free_payload(void* ctx, void* p, int tid) {
    auto* l = static_cast<SkipList*>(ctx);
    if (!l->closing_) l->es_->pdelete(tid, static_cast<PBlk*>(p));
  }

  std::size_t payload_bytes_;
  std::unique_ptr<Sys> es_;
  std::unique_ptr<sync::Ebr> ebr_;
  std::unique_ptr<PerThread[]> per_thread_;
  Node* head_ = nullptr;
  std::atomic<std::int64_t> count_{0};
  bool closing_ = false;
};

// The paper's DRAM (T): the same skip list with its payloads in DRAM and plain
// CASes (transient_sys.h).
template <class K = std::int64_t>
using TransientSkipList = SkipList<fault::kNone, K, TransientSys>;

}  // namespace ferrite::montage
