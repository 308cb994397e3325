// ferrite/baselines/onefile.h — OneFile-LF, a lock-free persistent
// transactional memory whose every word is a (value, sequence) pair, and the
// sequential objects (seq_objects.h) run on it: the "onefile-*" competitors.
//
// Paper: Pedro Ramalhete, Andreia Correia, Pascal Felber, Nachshon Cohen,
// "OneFile: A Wait-free Persistent Transactional Memory", DSN 2019. The paper
// gives two variants: OneFile-LF (lock-free) and OneFile-WF (wait-free, with
// an announcement array of operations and helpers that run them). Only
// OneFile-LF is built here; OneFile-WF is not (see "Not built"). Implemented
// from the paper's description; the public reference code (pramalhe/OneFile,
// ptms/OneFilePTMLF.hpp) was read to settle details, never copied. The paper's
// text is not among the repository's sources, so its algorithm and line
// numbers are not cited; the steps T1–T6 and H1–H5 below are ours, in the
// order the paper describes them.
//
// What it is. Every transactional word is a pair (val, seq) of 8-byte words,
// 16-byte aligned, changed only by a 16-byte CAS (DCAS, sync/dwcas.h). One
// persistent word, curTx = (seq, owner), names the last committed
// transaction and the write-set (redo log) its owner published. A
// transaction runs optimistically:
//   T1  c := curTx; help apply c's write-set (H1–H5): state seq(c) is then
//       applied and durable
//   T2  run the function: a load returns the write-set's value of the word if
//       the transaction stored to it, else the word's val — and aborts (an
//       exception caught in T1's loop, which restarts) if the word's seq is
//       newer than seq(c): every value read is one of state seq(c) (opacity,
//       so the sequential code never sees a torn state); a store only adds
//       (address, value) to the private write-set
//   T3  no store: done (a read-only transaction; T1 made its state durable)
//   T4  copy the write-set into this thread's persistent log (tag seq(c)+1,
//       count, entries); pwb the log; psync (not a pfence: see below)
//   T5  CAS curTx from c to (seq(c)+1, me); on failure restart at T1
//   T6  help apply the new curTx (H1–H5); return: the transaction is durable
// Helping, by every thread that finds a curTx c whose state is not known to
// be durable (durable_seq_ < seq(c)):
//   H1  pwb(curTx); psync       (curTx durable before any word of seq(c)
//                                is stored)
//   H2  read the log c names, entry by entry; after each, re-read curTx: if
//       it moved, c was applied and made durable by whoever moved it: stop
//   H3  DCAS each entry's word from (v, s) to (entry value, seq(c)) if s <
//       seq(c) (an older word: not yet applied)
//   H4  pwb every line of the write-set's words (whoever applied them),
//       after the last DCAS
//   H5  psync; durable_seq_ := seq(c)
//
// Persistent logs, two per thread. A thread's transactions alternate
// between its two logs (the parity is part of curTx): a log named by curTx
// is rewritten by its owner only after the owner's next commit moved curTx
// away from it (T5, with the other log) and made that durable (H1, H5), so a
// helper that finds curTx unchanged after reading an entry (H2) read the
// committed entry, and a durable curTx always names a log that holds the
// write-set of its seq. (The reference closes a per-thread "request" word
// with a CAS instead; the second log spares that CAS and its write-back.)
//
// Memory. The words live in a region of pairs; the objects see a region of
// plain 8-byte words ("V-space") at the same base, twice smaller: the word at
// V address base+off is the pair at base+2*off. The objects hold V addresses
// and never dereference them: every load and store goes through the storage
// policy (OneFileStorage: seq_objects.h's `get`/`next`/`set`/`set_next`).
// The region header (allocator and object root, below) is made of such
// words, so allocation is transactional: a bump pointer and a few exact-size
// free lists read and written by the transaction that allocates (the
// paper's PTM uses a transactional allocator the same way; this one is the
// small one RedoOpt uses).
//
// Why T4 and H1 end with a psync, not a pfence: under the PBcomb paper's
// pwb/pfence/psync model a pfence orders the issuing thread's own
// write-backs (and later stores) only, and here other threads write back
// the same lines: any helper writes curTx back (H1) as soon as the CAS is
// visible, so the log must be durable before the CAS (T4); and any
// helper's H4 write-back of a line takes every word of that line, also a
// word a later transaction just stored, so curTx must be durable before a
// word of its transaction is stored (H1), not only ordered before the
// storing thread's own write-backs. The 2-thread campaigns under that
// model found both (a durable curTx naming a torn log line; a durable word
// newer than the durable curTx) with pfences. Under x86 (a fence after a
// write-back makes it durable) the two are the same instruction: the
// hardware backend issues an sfence for either, and the reference code,
// written for x86, fences there; `emulated:N` charges N ns per psync, so
// an update pays 3N here.
//
// Recovery: durable curTx = (s, t, p). If log (t, p) carries tag s, write
// every entry's (value, s) into its pair and pwb it; psync. No other log
// matters. Unconditional writes are safe and make the repair idempotent: no
// word of a later transaction is stored before curTx names it durably (H1),
// so no durable word is newer than s; a pair torn by a crash (a DCAS whose
// line tore at 8 bytes) is rewritten whole. A log whose tag is not s was
// rewritten after s was applied and durable (see "Persistent logs"): nothing
// to do. The crashed run's DRAM (write-sets, parities, durable_seq_) is never
// used: a new process starts with durable_seq_ = 0 (its first transaction
// helps the current curTx again: every DCAS fails, the words are written
// back) and each thread's parity is the one curTx does not name.
//
// Thread safety: transaction() concurrently for distinct tids in
// [0, max_threads); load/store/alloc/free/object/set_object only inside a
// transaction of the calling thread.
//
// Invariants:
//   * a word's seq only grows; a word with seq s holds the value transaction s
//     (or an earlier one) gave it;
//   * curTx changes only by T5, from a c whose state the CASer applied and
//     made durable (T1);
//   * durable curTx = (s, t, p) => log (t, p) is durable with tag s, and
//     every transaction before s is applied and durable;
//   * no word of transaction s is stored before curTx >= s is durable (the
//     storing thread's H1 psync), so no durable word is newer than the
//     durable curTx.
//
// Not built (docs/baselines.md, "OneFile"): OneFile-WF (the announcement
// array, the helpers that run announced operations, the result array) — an
// update here is lock-free (a transaction restarts when another commits
// first), not wait-free; the reference's wait-free memory reclamation (a
// freed block is reused inside the region by later transactions; the region
// itself is never returned); the hash lookup of large write-sets (a linear
// search here: the objects write at most a few dozen words). Not detectable,
// like RomulusLog and RedoOpt.
#pragma once

#include <algorithm>
#include <atomic>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <exception>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "ferrite/baselines/persistent_common.h"
#include "ferrite/baselines/seq_objects.h"
#include "ferrite/persist/persist.h"
#include "ferrite/pmem/pool.h"
#include "ferrite/pmem/root_registry.h"
#include "ferrite/sync/cache_padded.h"
#include "ferrite/sync/dwcas.h"

namespace ferrite::baselines {

// Deliberately broken variants (the crash campaigns must catch each).
inline constexpr unsigned kOneFileNoLogSync = 1u << 12;    // T4 without its psync
inline constexpr unsigned kOneFileNoCurTxPwb = 1u << 13;   // H1 without pwb(curTx): words before curTx
// H5 without its psync. Not registered as a crash subject: in a 1-thread
// run the thread's next T4 psync makes its H4 write-backs durable before
// its next commit, so only multi-threaded runs catch it (mutation testing
// does: docs/crash.md).
inline constexpr unsigned kOneFileNoApplySync = 1u << 14;

// A transactional word: (val, seq), changed only by a 16-byte CAS.
struct alignas(16) OneFileWord {
  std::atomic<std::uint64_t> val{0};
  std::atomic<std::uint64_t> seq{0};
};
static_assert(sizeof(OneFileWord) == 16);
static_assert(offsetof(OneFileWord, seq) == 8);
// Its bits, for the DCAS.
struct alignas(16) OneFilePair {
  std::uint64_t val;
  std::uint64_t seq;
};

// A persistent log (line aligned): the header, then the entries, so a
// write-set of up to three words is one line to write back.
struct OneFileLogHeader {
  std::atomic<std::uint64_t> tag{0};    // the seq of the transaction it holds
  std::atomic<std::uint64_t> count{0};  // entries
};
static_assert(sizeof(OneFileLogHeader) == 16);
struct OneFileLogEntry {
  std::atomic<std::uint64_t> off{0};  // V-space offset of the word
  std::atomic<std::uint64_t> val{0};
};
static_assert(sizeof(OneFileLogEntry) == 16);

// The pool root: curTx and where the words and the logs are.
struct OneFileRoot {
  static constexpr std::uint32_t kTypeTag = 0x4F4E'4546;  // "ONEF"
  static constexpr std::uint32_t kTypeVersion = 1;
  static constexpr const char* kTypeName = "baselines::OneFile";
  static constexpr int kMaxThreads = 256;
  // curTx = seq << 9 | parity << 8 | owner tid.
  static constexpr int kSeqShift = 9;
  OneFileRoot(std::uint64_t threads, std::uint64_t bytes, std::uint64_t entries, OneFileWord* w, std::uint8_t* l)
      : max_threads(threads), region_bytes(bytes), log_entries(entries), words(w), logs(l) {}
  // Written by T5's CAS only; an aligned 8-byte word, so failure-atomic.
  alignas(64) std::atomic<std::uint64_t> cur_tx{0};
  // Set at creation, never changed.
  alignas(64) std::uint64_t max_threads = 0;
  std::uint64_t region_bytes = 0;  // V-space bytes (the pairs take twice as many)
  std::uint64_t log_entries = 0;   // entries per log
  OneFileWord* words = nullptr;    // region_bytes / 8 pairs
  std::uint8_t* logs = nullptr;    // 2 * max_threads logs of log_bytes(log_entries)
  static std::uint64_t log_bytes(std::uint64_t entries) { return (16 + 16 * entries + 63) & ~std::uint64_t{63}; }
  static std::uint64_t seq_of(std::uint64_t c) { return c >> kSeqShift; }
  static int tid_of(std::uint64_t c) { return static_cast<int>(c & 0xff); }
  static int parity_of(std::uint64_t c) { return static_cast<int>((c >> 8) & 1); }
  static std::uint64_t make(std::uint64_t seq, int parity, int tid) {
    return seq << kSeqShift | static_cast<std::uint64_t>(parity) << 8 | static_cast<std::uint64_t>(tid);
  }
  OneFileLogHeader* log(int tid, int parity) const {
    return reinterpret_cast<OneFileLogHeader*>(logs + (2 * static_cast<std::uint64_t>(tid) + static_cast<std::uint64_t>(parity)) *
                                                          log_bytes(log_entries));
  }
};
static_assert(offsetof(OneFileRoot, cur_tx) == 0);
static_assert(offsetof(OneFileRoot, max_threads) == 64);
static_assert(offsetof(OneFileRoot, logs) == 96);
static_assert(sizeof(OneFileRoot) == 128);
static_assert(std::atomic<std::uint64_t>::is_always_lock_free);

inline OneFileLogEntry* onefile_entries(OneFileLogHeader* h) { return reinterpret_cast<OneFileLogEntry*>(h + 1); }

// The header at V offset 0 of the region: transactional words. Offsets,
// never pointers.
struct OneFileRegion {
  static constexpr std::uint64_t kMagic = 0x4F4E'4546'494C'4531;  // "ONEFILE1"
  static constexpr int kFreeLists = 6;
  std::uint64_t magic;
  std::uint64_t used;        // V bytes [0, used) are allocated
  std::uint64_t object;      // V offset of the object's root, 0: none
  std::uint64_t object_tag;  // its Root::kTypeTag
  struct FreeList {
    std::uint64_t size;      // block size (0: unused list)
    std::uint64_t head;      // V offset of the first free block (0: empty); its first word: the next's
  } free[kFreeLists];
};
inline constexpr std::uint64_t kOneFileHeaderBytes = 128;
static_assert(sizeof(OneFileRegion) == kOneFileHeaderBytes);

struct OneFileParams {
  int max_threads = 8;
  std::size_t region_bytes = std::size_t{1} << 20;  // V-space; the pairs take twice as many
  std::size_t log_entries = 512;                    // stores per transaction at most
};

// Thrown by a load that finds a word newer than the transaction's state (T2).
struct OneFileAbort {};

template <unsigned Faults = kNoFaults>
class OneFile {
 public:
  OneFile(pmem::Pool& pool, std::string_view name, const OneFileParams& p) {
    if (pool.has_root(name)) {
      root_ = pool.root<OneFileRoot>(name);
    } else {
      if (p.max_threads < 1 || p.max_threads > OneFileRoot::kMaxThreads)
        throw std::invalid_argument("OneFile: max_threads must be in [1, 256]");
      const std::size_t bytes = std::max<std::size_t>((p.region_bytes + 4095) & ~std::size_t{4095}, 8192);
      auto* words = static_cast<OneFileWord*>(pool.heap().alloc(2 * bytes, 0));
      if (reinterpret_cast<std::uintptr_t>(words) % 64 != 0)
        throw std::logic_error("OneFile: the region is not line aligned");
      const std::size_t lb = OneFileRoot::log_bytes(p.log_entries);
      auto* logs = static_cast<std::uint8_t*>(pool.heap().alloc(2 * static_cast<std::size_t>(p.max_threads) * lb, 0));
      if (reinterpret_cast<std::uintptr_t>(logs) % 64 != 0) throw std::logic_error("OneFile: logs not line aligned");
      // Every pair (0, 0), then the header's words at seq 0. The logs need
      // nothing: curTx = (0, ...) names no write-set.
      std::memset(static_cast<void*>(words), 0, 2 * bytes);
      words[offsetof(OneFileRegion, magic) / 8].val.store(OneFileRegion::kMagic, std::memory_order_relaxed);
      words[offsetof(OneFileRegion, used) / 8].val.store(kOneFileHeaderBytes, std::memory_order_relaxed);
      // PERSIST: the zeroed region before the root naming it (create_root's
      // pfence orders it; its publish makes all durable). CRASH: before the
      // root is published no root marks the blocks: the pool's recovery
      // frees them.
      persist::pwb(words, 2 * bytes);
      root_ = pool.create_root<OneFileRoot>(name, static_cast<std::uint64_t>(p.max_threads),
                                            static_cast<std::uint64_t>(bytes), static_cast<std::uint64_t>(p.log_entries),
                                            words, logs);
    }
    max_ = static_cast<int>(root_->max_threads);
    bytes_ = root_->region_bytes;
    entries_ = root_->log_entries;
    if (max_ < 1 || max_ > OneFileRoot::kMaxThreads || bytes_ < 8192 || bytes_ % 4096 != 0 || entries_ == 0 ||
        root_->words == nullptr || root_->logs == nullptr)
      throw std::runtime_error("OneFile: corrupt root");
    vbase_ = reinterpret_cast<std::uint8_t*>(root_->words);
    const std::uint64_t c = root_->cur_tx.load(std::memory_order_acquire);
    if (OneFileRoot::tid_of(c) >= max_) throw std::runtime_error("OneFile: corrupt curTx " + std::to_string(c));
    txs_ = std::vector<sync::CachePadded<Tx>>(static_cast<std::size_t>(max_));
    for (int t = 0; t < max_; ++t) {
      Tx& tx = txs_[static_cast<std::size_t>(t)].value;
      tx.ws.reserve(entries_);
      // A thread's first log is the one curTx does not name (see
      // "Persistent logs").
      tx.parity = (OneFileRoot::tid_of(c) == t && OneFileRoot::seq_of(c) > 0) ? 1 - OneFileRoot::parity_of(c) : 0;
    }
  }
  OneFile(const OneFile&) = delete;
  OneFile& operator=(const OneFile&) = delete;

  // Runs fn() as a transaction (T1–T6), again until it commits; durable on
  // return. A read-only fn commits without a verb once its state is durable.
  // An exception other than an abort discards the transaction and is
  // rethrown.
  template <class F>
  void transaction(int tid, F&& fn) {
    check_tid(tid, max_, "OneFile");
    if (current_ != nullptr) throw std::logic_error("OneFile: nested transaction");
    Tx& tx = txs_[static_cast<std::size_t>(tid)].value;
    tx.tid = tid;
    tx.owner = this;
    current_ = &tx;
    struct Leave {
      ~Leave() { current_ = nullptr; }
    } leave;
    for (;;) {
      // T1. ORDER: acquire: the state of c's seq (applied by its committer's
      // T6 or a helper) happens before our loads.
      const std::uint64_t c = root_->cur_tx.load(std::memory_order_acquire);
      help_apply(c);
      tx.cur = c;
      tx.seq = OneFileRoot::seq_of(c);
      tx.ws.clear();
      // T2.
      try {
        fn();
      } catch (const OneFileAbort&) {
        aborts_.fetch_add(1, std::memory_order_relaxed);
        continue;
      } catch (...) {
        tx.ws.clear();
        throw;
      }
      // T3.
      if (tx.ws.empty()) return;
      if (commit(tx)) return;
      aborts_.fetch_add(1, std::memory_order_relaxed);
    }
  }

  // ---- inside a transaction only
  std::uint64_t load_word(const void* v) const {
    Tx& tx = current(v);
    const std::uint64_t off = offset(v);
    for (auto it = tx.ws.rbegin(); it != tx.ws.rend(); ++it)
      if (it->first == off) return it->second;
    const OneFileWord& w = word(off);
    // ORDER: val, then seq (acquire each): a val written by a transaction
    // after ours (seq > tx.seq) is seen with its seq, and the load aborts.
    // T1 made every value of state tx.seq visible, so an older val is never
    // returned.
    const std::uint64_t v1 = w.val.load(std::memory_order_acquire);
    if (w.seq.load(std::memory_order_acquire) > tx.seq) [[unlikely]] {
      // A newer word was stored by a transaction that committed after T1:
      // its DCAS came after its helper read the new curTx (acquire), so
      // curTx has moved here too (happens-before). If it has not, the word
      // is newer than every committed transaction: a corrupt image, which
      // would abort every transaction that reads it, forever.
      if (root_->cur_tx.load(std::memory_order_acquire) == tx.cur)
        throw std::runtime_error("OneFile: a word newer than curTx (corrupt image)");
      throw OneFileAbort{};
    }
    return v1;
  }
  void store_word(void* v, std::uint64_t x) {
    Tx& tx = current(v);
    const std::uint64_t off = offset(v);
    for (auto& e : tx.ws)
      if (e.first == off) {
        e.second = x;
        return;
      }
    if (tx.ws.size() == entries_) throw std::length_error("OneFile: write set full");
    tx.ws.emplace_back(off, x);
  }
  template <class T>
  T load(const T* v) const {
    static_assert(sizeof(T) == 8 && std::is_trivially_copyable_v<T>, "OneFile words are 8 bytes");
    return std::bit_cast<T>(load_word(v));
  }
  template <class T>
  void store(T* v, T x) {
    static_assert(sizeof(T) == 8 && std::is_trivially_copyable_v<T>, "OneFile words are 8 bytes");
    store_word(v, std::bit_cast<std::uint64_t>(x));
  }
  // A block of V-space (16-aligned, or `align`), transactional.
  void* alloc(std::size_t bytes, std::size_t align = 16) {
    const std::uint64_t size = round16(bytes);
    OneFileRegion* h = header();
    if (align <= 16) {
      for (auto& f : h->free) {
        if (load(&f.size) != size) continue;
        const std::uint64_t head = load(&f.head);
        if (head == 0) break;
        store(&f.head, load_word(vbase_ + head));
        return vbase_ + head;
      }
    }
    const std::uint64_t used = load(&h->used);
    const std::uint64_t start = (used + align - 1) / align * align;
    if (start + size > bytes_) throw std::runtime_error("OneFile: region full");
    store(&h->used, start + size);
    return vbase_ + start;
  }
  void free(void* p, std::size_t bytes) {
    const std::uint64_t size = round16(bytes), off = offset(p);
    OneFileRegion* h = header();
    OneFileRegion::FreeList* spare = nullptr;
    for (auto& f : h->free) {
      const std::uint64_t s = load(&f.size);
      if (s == size) {
        spare = &f;
        break;
      }
      if (s == 0 && spare == nullptr) spare = &f;
    }
    if (spare == nullptr) return;  // every list holds another size: the block is leaked
    store(&spare->size, size);
    store_word(p, load(&spare->head));
    store(&spare->head, off);
  }
  void* object(std::uint32_t tag) {
    OneFileRegion* h = header();
    if (load(&h->magic) != OneFileRegion::kMagic) throw std::runtime_error("OneFile: corrupt region header");
    const std::uint64_t off = load(&h->object);
    if (off == 0) return nullptr;
    if (load(&h->object_tag) != tag) throw std::runtime_error("OneFile: the region holds an object of another type");
    return vbase_ + off;
  }
  void set_object(void* p, std::uint32_t tag) {
    OneFileRegion* h = header();
    store(&h->object, offset(p));
    store(&h->object_tag, std::uint64_t{tag});
  }

  // ---- introspection
  OneFileRoot* root() const { return root_; }
  int max_threads() const { return max_; }
  std::uint64_t seq() const { return OneFileRoot::seq_of(root_->cur_tx.load(std::memory_order_acquire)); }
  std::uint64_t aborts() const { return aborts_.load(std::memory_order_relaxed); }
  // The pair behind a V address (tests).
  const OneFileWord& word_of(const void* v) const { return word(offset(v)); }
  std::uint64_t used() {
    std::uint64_t u = 0;
    transaction(0, [&] { u = load(&header()->used); });
    return u;
  }

 private:
  struct Tx {
    const OneFile* owner = nullptr;
    int tid = 0;
    int parity = 0;        // the log the next commit writes
    std::uint64_t cur = 0;  // curTx read at T1
    std::uint64_t seq = 0;
    std::vector<std::pair<std::uint64_t, std::uint64_t>> ws;  // (V offset, value)
  };
  static std::uint64_t round16(std::size_t n) { return (static_cast<std::uint64_t>(n) + 15) & ~std::uint64_t{15}; }
  OneFileRegion* header() const { return reinterpret_cast<OneFileRegion*>(vbase_); }
  Tx& current(const void* v) const {
    if (current_ == nullptr || current_->owner != this) throw std::logic_error("OneFile: a load or store outside a transaction");
    (void)v;
    return *current_;
  }
  std::uint64_t offset(const void* v) const {
    const auto* q = static_cast<const std::uint8_t*>(v);
    if (q < vbase_ || static_cast<std::uint64_t>(q - vbase_) + 8 > bytes_ || (q - vbase_) % 8 != 0)
      throw std::logic_error("OneFile: a load or store outside the region, or unaligned");
    return static_cast<std::uint64_t>(q - vbase_);
  }
  OneFileWord& word(std::uint64_t off) const { return root_->words[off / 8]; }

  // T4, T5, T6.
  bool commit(Tx& tx) {
    OneFileLogHeader* log = root_->log(tx.tid, tx.parity);
    OneFileLogEntry* e = onefile_entries(log);
    // ORDER: release stores (plain stores on x86): a helper that reads one
    // of them (H2, acquire) sees our previous commit's CAS on curTx, which
    // is sequenced before them, and stops: the log it read is no longer
    // curTx's. (Not a release fence and relaxed stores: TSan does not
    // support fences.)
    const std::uint64_t s = tx.seq + 1;
    log->tag.store(s, std::memory_order_release);
    log->count.store(tx.ws.size(), std::memory_order_release);
    for (std::size_t i = 0; i < tx.ws.size(); ++i) {
      e[i].off.store(tx.ws[i].first, std::memory_order_release);
      e[i].val.store(tx.ws[i].second, std::memory_order_release);
    }
    // PERSIST: the log (T4) durable before curTx names it: a durable curTx
    // always names a durable log. A psync, not a pfence: any helper may
    // write curTx back (H1) as soon as the CAS is visible, and under the
    // PBcomb paper's model our pfence orders only our own write-backs, so
    // a helper's write-back of curTx could become durable before our log
    // (the 2-thread campaigns found a durable curTx naming a log line torn
    // between this transaction's tag and an older one's entry). Under x86
    // a pfence would do; the hardware backend issues the same sfence for
    // both (emulated:N pays N ns more per update). CRASH: until the CAS,
    // curTx names another log; this one is never read.
    persist::pwb(log, sizeof(OneFileLogHeader) + sizeof(OneFileLogEntry) * tx.ws.size());
    if constexpr ((Faults & kOneFileNoLogSync) == 0) persist::psync();
    // T5. ORDER: seq_cst RMW; release publishes the log to the helpers.
    std::uint64_t expected = tx.cur;
    const std::uint64_t next = OneFileRoot::make(s, tx.parity, tx.tid);
    if (!root_->cur_tx.compare_exchange_strong(expected, next, std::memory_order_seq_cst)) return false;
    // CRASH: curTx may be evicted from here on: recovery re-applies this log.
    tx.parity ^= 1;
    help_apply(next);  // T6
    return true;
  }

  // H1–H5 for curTx value c.
  void help_apply(std::uint64_t c) {
    const std::uint64_t s = OneFileRoot::seq_of(c);
    if (s == 0) return;  // the initial state: no write-set
    // ORDER: acquire pairs with H5's release: every word of s applied and
    // durable.
    if (durable_seq_.load(std::memory_order_acquire) >= s) return;
    const int t = OneFileRoot::tid_of(c);
    if (t >= max_) throw std::runtime_error("OneFile: corrupt curTx");
    OneFileLogHeader* log = root_->log(t, OneFileRoot::parity_of(c));
    OneFileLogEntry* e = onefile_entries(log);
    // H1. PERSIST: curTx = c durable before this thread stores any word of
    // s: whoever writes back a line holding a word of s, curTx >= s is
    // already durable, so recovery never finds a word newer than its curTx
    // (it could not undo it). A psync, not a pfence (see the top of the
    // file). The transaction is durable from here (its log is, since T4).
    if constexpr ((Faults & kOneFileNoCurTxPwb) == 0) persist::pwb(&root_->cur_tx);
    persist::psync();
    // H2. Acquire loads, then a check of curTx: a seqlock read (the owner
    // rewrites this log only after curTx moved, and a load that reads a
    // rewritten word synchronizes with the owner, whose CAS came first).
    const std::uint64_t n = log->count.load(std::memory_order_acquire);
    if (root_->cur_tx.load(std::memory_order_acquire) != c) return;  // applied and durable by whoever moved it
    if (n > entries_) throw std::runtime_error("OneFile: corrupt log");
    // The lines of the write-set's words, written back after the last DCAS
    // (a write-back takes the line as it is when issued).
    thread_local std::vector<const void*> lines;
    lines.clear();
    for (std::uint64_t i = 0; i < n; ++i) {
      const std::uint64_t off = e[i].off.load(std::memory_order_acquire);
      const std::uint64_t val = e[i].val.load(std::memory_order_acquire);
      if (root_->cur_tx.load(std::memory_order_acquire) != c) return;
      if (off % 8 != 0 || off + 8 > bytes_) throw std::runtime_error("OneFile: corrupt log entry");
      OneFileWord& w = word(off);
      // H3. Only an older word: a newer seq means s (or a later
      // transaction) already wrote it.
      for (;;) {
        const std::uint64_t lseq = w.seq.load(std::memory_order_acquire);
        if (lseq >= s) break;
        const std::uint64_t lval = w.val.load(std::memory_order_acquire);
        if (sync::dwcas(reinterpret_cast<OneFilePair*>(&w), OneFilePair{lval, lseq}, OneFilePair{val, s})) {
          // CRASH: a written-back line may tear between val and seq:
          // recovery rewrites the whole pair from the log.
          persist::declare_store(&w, sizeof w);
          break;
        }
      }
      const void* line = reinterpret_cast<const void*>(reinterpret_cast<std::uintptr_t>(&w) & ~std::uintptr_t{63});
      if (lines.empty() || lines.back() != line) lines.push_back(line);
    }
    // H4. PERSIST: every word of s, whoever applied it (our failed DCAS or
    // seq load saw its value: the line written back holds it), after the
    // last DCAS: a line is written back with the contents it has when the
    // pwb is issued. Two words of one line applied in a row: one pwb.
    for (const void* line : lines) persist::pwb(line);
    // H5. PERSIST: the words (H4) durable: the owner may later rewrite its
    // log, and a later curTx may be committed (the log of s is then never
    // re-applied).
    if constexpr ((Faults & kOneFileNoApplySync) == 0) persist::psync();
    // ORDER: release: pairs with the check at the top.
    std::uint64_t d = durable_seq_.load(std::memory_order_relaxed);
    while (d < s && !durable_seq_.compare_exchange_weak(d, s, std::memory_order_release, std::memory_order_relaxed)) {
    }
  }

  OneFileRoot* root_ = nullptr;
  int max_ = 0;
  std::uint64_t bytes_ = 0;
  std::uint64_t entries_ = 0;
  std::uint8_t* vbase_ = nullptr;
  std::vector<sync::CachePadded<Tx>> txs_;
  std::atomic<std::uint64_t> durable_seq_{0};
  std::atomic<std::uint64_t> aborts_{0};
  static inline thread_local Tx* current_ = nullptr;
};

// The pool's recover hook: re-apply the write-set durable curTx names (see
// "Recovery"); keep the region and the logs.
inline void onefile_recover_root(pmem::Pool&, OneFileRoot* r, const std::function<void(void*)>& mark) {
  if (r->max_threads == 0 || r->max_threads > static_cast<std::uint64_t>(OneFileRoot::kMaxThreads) ||
      r->words == nullptr || r->logs == nullptr || r->log_entries == 0)
    throw std::runtime_error("OneFile: corrupt root");
  const std::uint64_t c = r->cur_tx.load(std::memory_order_acquire);
  const std::uint64_t s = OneFileRoot::seq_of(c);
  if (s > 0 && static_cast<std::uint64_t>(OneFileRoot::tid_of(c)) < r->max_threads) {
    OneFileLogHeader* log = r->log(OneFileRoot::tid_of(c), OneFileRoot::parity_of(c));
    const std::uint64_t n = log->count.load(std::memory_order_relaxed);
    // CRASH: a tag other than s: the log was rewritten after s was applied
    // and durable: nothing to re-apply.
    if (log->tag.load(std::memory_order_relaxed) == s && n <= r->log_entries) {
      OneFileLogEntry* e = onefile_entries(log);
      for (std::uint64_t i = 0; i < n; ++i) {
        const std::uint64_t off = e[i].off.load(std::memory_order_relaxed);
        if (off % 8 != 0 || off + 8 > r->region_bytes) throw std::runtime_error("OneFile: corrupt log entry");
        OneFileWord& w = r->words[off / 8];
        // CRASH: a crash here leaves some pairs rewritten: the next
        // recovery writes the same values again (idempotent).
        w.val.store(e[i].val.load(std::memory_order_relaxed), std::memory_order_relaxed);
        w.seq.store(s, std::memory_order_relaxed);
        persist::pwb(&w);
      }
      persist::psync();
    }
  }
  mark(r->words);
  mark(r->logs);
}
inline const bool kOneFileRootRegistered = pmem::register_root_type<OneFileRoot>(&onefile_recover_root);

// The storage policy of seq_objects.h for an object in a OneFile region:
// loads and stores interposed (T2), allocation in the region, frees inside
// the transaction, persistence by the transaction (the objects' own
// pwb/pfence/psync are no-ops). One instance serves every thread: the
// transaction is the calling thread's.
template <unsigned Faults = kNoFaults>
class OneFileStorage {
 public:
  using Context = OneFile<Faults>;
  static constexpr bool kTransactional = true;
  OneFileStorage(Context& ptm, const SeqParams& p, bool nodes)
      : ptm_(&ptm), node_size_(nodes ? sizeof(PNode) + (p.value_size > 8 ? p.value_size - 8 : 0) : 0) {
    if (nodes && p.value_size < 8) throw std::invalid_argument("value_size must be >= 8");
  }
  template <class Root>
  Root* find_root(std::string_view) {
    return static_cast<Root*>(ptm_->object(Root::kTypeTag));
  }
  // Every word of a default Root (the block may be a reused one).
  template <class Root>
  Root* create_root(std::string_view) {
    static_assert(std::is_trivially_copyable_v<Root> && sizeof(Root) % 8 == 0);
    auto* mem = static_cast<std::uint8_t*>(ptm_->alloc(sizeof(Root), alignof(Root)));
    const Root init{};
    std::uint64_t w[sizeof(Root) / 8];
    std::memcpy(w, &init, sizeof(Root));
    for (std::size_t i = 0; i < sizeof(Root) / 8; ++i) ptm_->store_word(mem + 8 * i, w[i]);
    ptm_->set_object(mem, Root::kTypeTag);
    return reinterpret_cast<Root*>(mem);
  }
  template <class T>
  void set(T& dst, T v) {
    ptm_->store(&dst, v);
  }
  void set_next(PNode* n, PNode* v) { ptm_->store_word(&n->next, reinterpret_cast<std::uintptr_t>(v)); }
  template <class T>
  T get(const T& src) const {
    return ptm_->load(&src);
  }
  PNode* next(const PNode* n) const { return reinterpret_cast<PNode*>(ptm_->load_word(&n->next)); }
  void pwb(const void*, std::size_t = 1) {}
  void pfence() {}
  void psync() {}
  // next, value and the payload words (deq_by/enq_by are not used by the
  // sequential objects).
  PNode* make(int, std::int64_t v) {
    auto* mem = static_cast<std::uint8_t*>(ptm_->alloc(node_size_));
    auto* n = reinterpret_cast<PNode*>(mem);
    ptm_->store_word(&n->next, 0);
    ptm_->store(&n->value, v);
    std::uint64_t fill = 0;
    std::memset(&fill, static_cast<int>(v & 0xff), sizeof fill);
    for (std::size_t o = sizeof(PNode); o + 8 <= node_size_; o += 8) ptm_->store_word(mem + o, fill);
    return n;
  }
  std::size_t node_size() const { return node_size_; }
  void release(int, PNode* n) { ptm_->free(n, node_size_); }
  void after_sync(int) {}
  // The heap's keys: read only below the size, each written before.
  void* alloc_array(std::size_t bytes, int) { return ptm_->alloc(bytes, 64); }

 private:
  Context* ptm_;
  std::size_t node_size_;
};

// A OneFile region holding one sequential object: the onefile-* technique.
// One instance of the object serves every thread (its loads and stores are
// the calling thread's transaction's).
template <template <unsigned, class> class Seq, unsigned Faults = kNoFaults>
class OneFileObject {
 public:
  using Object = Seq<kNoFaults, OneFileStorage<Faults>>;
  OneFileObject(pmem::Pool& pool, std::string_view name, const SeqParams& p, std::size_t region_bytes)
      : max_(p.max_threads), ptm_(pool, name, OneFileParams{p.max_threads, region_bytes}) {
    // Creating or attaching is a transaction of its own: a crash inside
    // creation leaves curTx on the state without the object.
    ptm_.transaction(0, [&] { obj_.emplace(ptm_, name, p); });
  }
  // As RomulusObject::apply. Durable on return.
  bool apply(int tid, bool insert, std::int64_t arg, std::int64_t* out) {
    check_tid(tid, max_, "OneFileObject");
    bool r = false;
    ptm_.transaction(tid, [&] { r = obj_->apply(tid, insert, arg, out); });
    return r;
  }
  std::vector<std::int64_t> snapshot(int tid = 0) {
    std::vector<std::int64_t> v;
    ptm_.transaction(tid, [&] { v = obj_->snapshot(); });
    return v;
  }
  OneFile<Faults>& ptm() { return ptm_; }
  double combining_degree() const { return 1.0; }  // no combining: one transaction per operation

 private:
  int max_;
  OneFile<Faults> ptm_;
  std::optional<Object> obj_;
};

}  // namespace ferrite::baselines
