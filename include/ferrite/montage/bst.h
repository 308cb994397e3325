// ferrite/montage/bst.h — the Natarajan–Mittal lock-free external binary
// search tree on nbMontage, as a map (put/get/erase).
//
// Papers: A. Natarajan, N. Mittal, "Fast Concurrent Lock-Free Binary Search
// Trees", PPoPP 2014 (Algorithms 1–4: seek, search, insert, delete,
// cleanup); its nbMontage port: W. Cai et al., "Fast Nonblocking
// Persistence for Concurrent Data Structures", DISC 2021, §5 (the BST of
// the evaluation; the paper's artifact has no recovery for it).
//
// What it is. An external (leaf-oriented) BST in DRAM: internal nodes route
// (key < node.key: left, else right), leaves hold the map's entries. Each
// leaf points to an immutable payload {key, value} in the pool; only the
// payloads persist. Three sentinel keys inf0 < inf1 < inf2, larger than
// every real key, make the tree never empty (NM Fig. 2): R(inf2) has left
// S(inf1) and right leaf(inf2); S has left leaf(inf0) and right leaf(inf1);
// every real key lives in S's left subtree. An edge (a child CASObj) carries
// two bits in its low bits: FLAG (the leaf it points to is being deleted)
// and TAG (the edge's node is being removed: the edge no longer changes
// except to gain bits). Deletion is NM's: inject (flag the edge to the
// leaf), then cleanup (tag the sibling edge, swing the ancestor's edge to
// the sibling), helped by any operation that meets a flagged/tagged edge.
//
// Linearization points (each update at one lin_CAS on the edge parent→leaf,
// so conflicting updates of one key meet at one word, §3.2 constraint 2):
//   put, key absent:  lin_CAS(edge, leaf, new internal{leaf, new leaf})  (NM l.insert)
//   put, key present: lin_CAS(edge, leaf, new leaf), detaching the old
//                     leaf's payload (NM has no replace; ours swaps the leaf)
//   erase:            lin_CAS(edge, leaf, leaf|FLAG), detaching its payload
//                     (NM's injection)
//   get:              the load of the edge to the leaf (absent if flagged).
// Cleanup's tag and swing are plain (non-verifying) CASes: they change the
// shape, not the abstract state. A flagged leaf blocks every update of its
// key until a cleanup removes it (an update that finds it helps first).
//
// Thread safety: put/get/erase/sync concurrently for distinct thread ids in
// [0, threads); contents() only when no operation runs.
//
// Invariants (crash-free). T1 every real key has at most one reachable leaf
// whose edge is not flagged; T2 a tagged or flagged edge never loses a bit
// nor changes its node; T3 a node leaves the tree by exactly one successful
// swing (that thread retires it: the removed chain is successor … parent,
// each with its flagged leaf).
//
// Persistence invariants: those of the epoch system (epoch_sys.h P1–P5); the
// tree writes nothing to the pool itself but payloads, set before lin_CAS.
//
// Recovery (attach). The epoch system keeps the payloads of operations
// that linearized up to the epoch before last (§3.4). At most one kept
// payload per key (a replacing put commits the new payload and the old
// one's anti-node in one operation; two are a recovery bug, which throws).
// The tree is rebuilt balanced from the kept payloads sorted by key: leaves
// in order, each internal node keyed by the smallest key of its right
// subtree, leaf(inf0) rightmost. The keys are read and sorted in
// EpochOptions::recovery_threads threads (chunks, then merged); the nodes
// are made by the calling thread (why one: internal/kv_payload.h).
// Rebuilding needs no pool writes; a crash during it (or during the epoch
// system's recovery, which is idempotent) recovers the same state.
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
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ferrite/montage/epoch_sys.h"
#include "ferrite/montage/internal/kv_payload.h"
#include "ferrite/montage/transient_sys.h"
#include "ferrite/sync/ebr.h"

namespace ferrite::montage {

struct BstOptions {
  std::size_t value_bytes = 8;  // payload value size (>= 8; the value is its first 8 bytes)
};

// K: std::int64_t, or ferrite::Key32 (32-byte keys compared as bytes,
// stored in the payload and in the nodes: `ferrite bench --key-size 32`).
// S: the system, EpochSys<F> (persistent) or TransientSys (the transient
// original, TransientBst below).
template <unsigned F = fault::kNone, class K = std::int64_t, class S = EpochSys<F>>
class Bst {
 public:
  using Sys = S;
  // The system's CAS object and payload block (EpochSys: the 16-byte CASObj
  // and the pool's PBlk; TransientSys: a word and a DRAM block).
  using CASObj = typename Sys::CASObj;
  using PBlk = typename Sys::Blk;
  using Options = BstOptions;
  using Key = K;
  using KV = internal::KVOf<K>;  // {key, value} + padding (internal/kv_payload.h)
  using Keyed = internal::KeyedOf<K>;

  static std::unique_ptr<Bst> create(pmem::Pool& pool, std::string_view name, int threads, const BstOptions& bo = {},
                                     const EpochOptions& opt = {})
    requires Sys::kPersistent
  {
    auto t = std::unique_ptr<Bst>(new Bst(threads, bo));
    t->es_ = Sys::create(pool, name, Kind::kBst, threads, opt);
    t->init_sentinels(new Node(K{}, 1, nullptr));  // leaf(inf0)
    return t;
  }
  // The transient original: payloads in DRAM, nothing persists.
  static std::unique_ptr<Bst> create(int threads, const BstOptions& bo = {})
    requires(!Sys::kPersistent)
  {
    auto t = std::unique_ptr<Bst>(new Bst(threads, bo));
    t->es_ = Sys::create(threads);
    t->init_sentinels(new Node(K{}, 1, nullptr));  // leaf(inf0)
    return t;
  }
  static std::unique_ptr<Bst> attach(pmem::Pool& pool, std::string_view name, int threads, const BstOptions& bo = {},
                                     const EpochOptions& opt = {}, RecoveryStats* stats = nullptr)
    requires Sys::kPersistent
  {
    auto* root = pool.root<MontageRoot>(name);
    if (root->kind != static_cast<std::uint64_t>(Kind::kBst))
      throw std::runtime_error("montage: root '" + std::string(name) + "' is not a BST");
    Sys::check_attach(root, threads);  // before the DRAM side exists (its destructor needs es_)
    auto t = std::unique_ptr<Bst>(new Bst(threads, bo));
    std::vector<PBlk*> kept;
    t->es_ = Sys::attach(pool, root, threads, &kept, opt, stats);
    // The rebuild (see the header): sorted in recovery_threads threads,
    // checked, then built.
    const std::vector<Keyed> keyed = internal::sort_by_key<K>(kept, std::max(1, opt.recovery_threads));
    internal::check_distinct_keys(keyed);  // at most one payload per key (see the header)
    // Leaves 0 .. n-1 are the kept payloads' (sorted), leaf n is leaf(inf0).
    t->init_sentinels(build(keyed, 0, keyed.size() + 1));
    // ORDER: the tree is handed to its user by this thread (which built
    // it), and a thread it starts later synchronizes through that start
    // (Sys::init's plain stores need no more).
    return t;
  }

  ~Bst() {
    closing_ = true;
    ebr_.reset();
    destroy_subtree(root_);
  }

  // put(k, v) -> the old value, or none.
  std::optional<std::int64_t> put(int tid, const K& key, std::int64_t value) {
    auto g = ebr_->pin(tid);
    PBlk* p = internal::new_kv(*es_, tid, payload_bytes_, key, value);
    Node* nl = new Node(key, 0, p);
    Node* ni = nullptr;  // the internal node of an insert, reused across retries
    for (;;) {
      Seek s;
      seek(key, s);
      CASObj& edge = child_edge(s.parent, key);
      const std::uint64_t clean = ptr(s.leaf);
      if (s.leaf_edge == clean) {
        if (s.leaf->inf == 0 && s.leaf->key == key) {
          // Replace: one lin_CAS swaps the leaf (detaching its payload).
          const std::int64_t old = value_of(s.leaf->payload);
          es_->pdetach(tid, s.leaf->payload);
          if (es_->lin_cas(tid, edge, clean, ptr(nl))) {
            delete ni;
            ebr_->retire(tid, s.leaf, &Bst::free_node, this);
            return old;
          }
        } else {
          // NM insert: a new internal node with the old and the new leaf.
          if (ni == nullptr) ni = new Node(K{}, 0, nullptr);
          const bool new_left = less(key, s.leaf);
          ni->key = new_left ? s.leaf->key : key;
          ni->inf = new_left ? s.leaf->inf : 0;
          Sys::init(ni->left, ptr(new_left ? nl : s.leaf));
          Sys::init(ni->right, ptr(new_left ? s.leaf : nl));
          if (es_->lin_cas(tid, edge, clean, ptr(ni))) return std::nullopt;
        }
      }
      // CAS failed or the edge is flagged/tagged: help the pending delete
      // on this edge (NM insert l.: "if address unchanged and flagged or
      // tagged, cleanup"), then retry.
      const std::uint64_t now = es_->load(edge);
      if (addr(now) == s.leaf && (now & (kFlag | kTag)) != 0) cleanup(tid, key, s);
    }
  }

  std::optional<std::int64_t> get(int tid, const K& key) {
    auto g = ebr_->pin(tid);
    Seek s;
    seek(key, s);
    // The edge read by seek is the linearization point: a flagged edge
    // means the erase of this leaf linearized already.
    if (s.leaf->inf != 0 || s.leaf->key != key || (s.leaf_edge & kFlag) != 0) return std::nullopt;
    return value_of(s.leaf->payload);
  }

  std::optional<std::int64_t> erase(int tid, const K& key) {
    auto g = ebr_->pin(tid);
    for (;;) {
      Seek s;
      seek(key, s);
      if (s.leaf->inf != 0 || s.leaf->key != key) return std::nullopt;
      CASObj& edge = child_edge(s.parent, key);
      const std::uint64_t clean = ptr(s.leaf);
      if (s.leaf_edge == clean) {
        const std::int64_t old = value_of(s.leaf->payload);
        es_->pdetach(tid, s.leaf->payload);
        // NM injection: the erase linearizes at the flag.
        if (es_->lin_cas(tid, edge, clean, clean | kFlag)) {
          // NM cleanup mode: remove the flagged leaf (or see that a helper
          // removed it: the seek no longer finds it behind that edge).
          for (;;) {
            if (cleanup(tid, key, s)) break;
            seek(key, s);
            if (s.leaf != addr(clean)) break;
          }
          return old;
        }
      }
      // The CAS failed, or the edge is flagged (another erase of this key
      // linearized first) or tagged: help that cleanup, then retry — the
      // seek no longer finds a removed leaf (NM delete, injection mode).
      const std::uint64_t now = es_->load(edge);
      if (addr(now) == s.leaf && (now & (kFlag | kTag)) != 0) cleanup(tid, key, s);
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
    collect(es_->load(s_node()->left), out);
    return out;
  }

 private:
  static constexpr std::uint64_t kFlag = 1;
  static constexpr std::uint64_t kTag = 2;
  static constexpr std::uint64_t kBits = kFlag | kTag;
  struct alignas(16) Node {
    CASObj left{0}, right{0};
    K key;  // a sentinel's is never read
    std::uint64_t inf;  // 0: a real key; 1, 2, 3: the sentinels inf0 < inf1 < inf2
    PBlk* payload;      // leaves of real keys only
    Node(const K& k, std::uint64_t i, PBlk* p) : key(k), inf(i), payload(p) {}
  };
  // NM's seek record; leaf_edge is the value of parent's edge to leaf as
  // the seek read it (with its bits).
  struct Seek {
    Node* ancestor;
    Node* successor;
    Node* parent;
    Node* leaf;
    std::uint64_t leaf_edge;
  };

  Bst(int threads, const BstOptions& bo)
      : payload_bytes_(internal::kv_payload_bytes<K>(bo.value_bytes)),
        ebr_(std::make_unique<sync::Ebr>(threads)) {}

  static std::uint64_t ptr(const Node* n) { return reinterpret_cast<std::uint64_t>(n); }
  static Node* addr(std::uint64_t w) { return reinterpret_cast<Node*>(w & ~kBits); }
  static K key_of(const PBlk* p) { return Sys::template get<KV>(p).key; }
  static std::int64_t value_of(const PBlk* p) { return Sys::template get<KV>(p).value; }
  // key < node's key (a sentinel's key is larger than every real key).
  static bool less(const K& key, const Node* n) { return n->inf != 0 || key < n->key; }
  static CASObj& child_edge(Node* n, const K& key) { return less(key, n) ? n->left : n->right; }
  Node* s_node() { return addr(es_->load(root_->left)); }

  // R(inf2){ S(inf1){ sub, leaf(inf1) }, leaf(inf2) } where sub is S's left
  // subtree (leaf(inf0) alone in a new tree).
  void init_sentinels(Node* sub) {
    Node* s = new Node(K{}, 2, nullptr);
    Sys::init(s->left, ptr(sub));
    Sys::init(s->right, ptr(new Node(K{}, 2, nullptr)));
    root_ = new Node(K{}, 3, nullptr);
    Sys::init(root_->left, ptr(s));
    Sys::init(root_->right, ptr(new Node(K{}, 3, nullptr)));
  }
  // A balanced external tree over leaves [lo, hi) of keyed (sorted; leaf
  // keyed.size() is leaf(inf0)): each internal node's key is its right
  // subtree's smallest.
  static Node* build(const std::vector<Keyed>& keyed, std::size_t lo, std::size_t hi) {
    const auto leaf = [&](std::size_t i) {
      return i < keyed.size() ? new Node(keyed[i].first, 0, keyed[i].second) : new Node(K{}, 1, nullptr);
    };
    if (hi - lo == 1) return leaf(lo);
    const std::size_t mid = lo + (hi - lo) / 2;
    Node* n = mid < keyed.size() ? new Node(keyed[mid].first, 0, nullptr) : new Node(K{}, 1, nullptr);
    Sys::init(n->left, ptr(build(keyed, lo, mid)));
    Sys::init(n->right, ptr(build(keyed, mid, hi)));
    return n;
  }

  // NM Algorithm 1 (seek).
  void seek(const K& key, Seek& s) {
    s.ancestor = root_;
    s.successor = s_node();
    s.parent = s.successor;
    std::uint64_t parent_field = es_->load(s.successor->left);
    s.leaf = addr(parent_field);
    std::uint64_t current_field = es_->load(child_edge(s.leaf, key));
    Node* current = addr(current_field);
    while (current != nullptr) {
      // Move down: the last untagged edge's endpoints become ancestor and
      // successor (the swing's target).
      if ((parent_field & kTag) == 0) {
        s.ancestor = s.parent;
        s.successor = s.leaf;
      }
      s.parent = s.leaf;
      s.leaf = current;
      parent_field = current_field;
      current_field = es_->load(child_edge(current, key));
      current = addr(current_field);
    }
    s.leaf_edge = parent_field;
  }

  // NM Algorithm 4 (cleanup): true iff this call's swing removed the leaf
  // the seek record found flagged (or its sibling).
  bool cleanup(int tid, const K& key, const Seek& s) {
    Node* ancestor = s.ancestor;
    Node* successor = s.successor;
    Node* parent = s.parent;
    CASObj& successor_edge = child_edge(ancestor, key);
    CASObj* child_edge_p = &child_edge(parent, key);
    CASObj* sibling_edge = less(key, parent) ? &parent->right : &parent->left;
    // The child edge is not flagged: the leaf being deleted is the sibling
    // (this cleanup helps that delete), and our leaf stays.
    if ((es_->load(*child_edge_p) & kFlag) == 0) sibling_edge = child_edge_p;
    // NM's BTS: tag the sibling edge (it no longer changes).
    std::uint64_t sib = es_->load(*sibling_edge);
    while ((sib & kTag) == 0 && !es_->cas(*sibling_edge, sib, sib | kTag)) sib = es_->load(*sibling_edge);
    sib = es_->load(*sibling_edge);
    // Swing: the sibling moves up, keeping its flag, losing the tag.
    if (!es_->cas(successor_edge, ptr(successor), sib & ~kTag)) return false;
    retire_chain(tid, successor, parent, addr(sib));
    return true;
  }

  // T3: the swing removed successor … parent; each node on the chain has one
  // edge down the chain (tagged) and one flagged leaf, parent's are the
  // flagged leaf and the sibling that moved up. Every edge involved is
  // tagged or flagged, so none changes under us (T2).
  void retire_chain(int tid, Node* successor, Node* parent, Node* sibling) {
    Node* n = successor;
    for (;;) {
      const std::uint64_t l = es_->load(n->left), r = es_->load(n->right);
      if (n == parent) {
        Node* gone = addr(l) == sibling ? addr(r) : addr(l);
        ebr_->retire(tid, gone, &Bst::free_node, this);
        ebr_->retire(tid, n, &Bst::free_node, this);
        return;
      }
      // The flagged edge leads to a deleted leaf; the other one down.
      Node* leaf = (l & kFlag) != 0 ? addr(l) : addr(r);
      Node* down = (l & kFlag) != 0 ? addr(r) : addr(l);
      ebr_->retire(tid, leaf, &Bst::free_node, this);
      ebr_->retire(tid, n, &Bst::free_node, this);
      n = down;
    }
  }

  void collect(std::uint64_t w, std::vector<std::pair<K, std::int64_t>>& out) {
    Node* n = addr(w);
    const std::uint64_t l = es_->load(n->left);
    if (addr(l) == nullptr) {
      if (n->inf == 0 && (w & kFlag) == 0) out.emplace_back(n->key, value_of(n->payload));
      return;
    }
    collect(l, out);
    collect(es_->load(n->right), out);
  }
  void destroy_subtree(Node* n) {
    if (n == nullptr) return;
    std::vector<Node*> stack{n};
    while (!stack.empty()) {
      Node* c = stack.back();
      stack.pop_back();
      if (Node* l = addr(es_->load(c->left)); l != nullptr) stack.push_back(l);
      if (Node* r = addr(es_->load(c->right)); r != nullptr) stack.push_back(r);
      delete c;
    }
  }

  static void free_node(void* ctx, void* p, int tid) {
    auto* t = static_cast<Bst*>(ctx);
    auto* n = static_cast<Node*>(p);
    if (!t->closing_ && n->payload != nullptr) t->es_->pdelete(tid, n->payload);
    delete n;
  }

  std::size_t payload_bytes_;
  std::unique_ptr<Sys> es_;
  Node* root_ = nullptr;
  std::unique_ptr<sync::Ebr> ebr_;
  bool closing_ = false;
};

// The paper's DRAM (T): the same tree with its payloads in DRAM and plain
// CASes (transient_sys.h).
template <class K = std::int64_t>
using TransientBst = Bst<fault::kNone, K, TransientSys>;

}  // namespace ferrite::montage
