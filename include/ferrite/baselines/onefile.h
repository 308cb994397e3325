// ferrite/baselines/onefile.h — OneFile, a persistent transactional memory
// whose every word is a (value, sequence) pair, in its two variants,
// OneFile-LF (lock-free) and OneFile-WF (wait-free), and the sequential
// objects (seq_objects.h) run on it: the "onefile-*" and "onefile-wf-*"
// competitors.
//
// Paper: Pedro Ramalhete, Andreia Correia, Pascal Felber, Nachshon Cohen,
// "OneFile: A Wait-free Persistent Transactional Memory", DSN 2019. Both of
// its variants are built here and share everything but the entry point of
// an update (OneFileProgress): the words, curTx, the logs, the helping
// (H1–H5), the commit (T4–T6) and recovery are one code. Implemented from
// the paper's description; the public reference code (pramalhe/OneFile,
// ptms/OneFilePTMLF.hpp and OneFilePTMWF.hpp) was read to settle details,
// never copied. The paper's text is not among the repository's sources, so
// its algorithm and line numbers are not cited; the steps T1–T6, H1–H5 and
// W1–W5 below are ours, in the order the paper describes them.
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
// line tore at 8 bytes) is rewritten whole; an entry for a DRAM result
// word (OneFile-WF) is skipped: the crashed run's threads are gone. A log
// whose tag is not s was rewritten after s was applied and durable (see
// "Persistent logs"): nothing to do. The crashed run's DRAM (write-sets,
// parities, durable_seq_, announcements, results) is never used: a new
// process starts with durable_seq_ = 0 (its first transaction helps the
// current curTx again: every DCAS fails, the words are written back), each
// thread's parity is the one curTx does not name, and its result words at
// seq(curTx) (so that help applies none of the old entries to them).
//
// OneFile-WF (OneFileProgress::kWaitFree; update()). An update is not a
// transaction its caller retries but an operation it announces; every
// update transaction runs every announced operation it finds pending (the
// paper's aggregated transaction), so a thread whose own commits keep
// failing is helped by the thread that beats it. In DRAM, per thread: an
// announcement (arg, req = opSeq << 2 | insert << 1 | 1) and two result
// words, (out, seq) and (ok, seq), pairs like the region's, changed only by
// transactions (their write-set entries carry kOneFileVolatile and an index
// instead of a region offset: H3 applies them by DCAS like any word, H4
// does not write them back, recovery skips them).
//   W1  opSeq := seq(ok word); store arg (release), then req (seq_cst)
//   W2  c := curTx (seq_cst); help apply c (H1–H5)
//   W3  seq(ok word) > opSeq: the operation was applied by a transaction
//       <= c, which is durable (H1 before its DCAS): return (out, ok)
//   W4  run the aggregated transaction from c (T2–T6): for every thread i
//       whose req is valid and whose ok word (a transactional load: state
//       c) has seq <= opSeq(i), run the object's operation for i and store
//       (out, ok) into i's result words, out first
//   W5  go to W2 (at most kOneFileWaitFreeAttempts times W4)
// Bound: each W4 that does not commit (an abort, a failed CAS) means curTx
// moved past the c of its W2 (a word newer than c is stored only after
// curTx moved), so the third W2 reads c3 >= c1 + 2. The transaction that
// committed c1 + 2 read curTx = c1 + 1 (seq_cst) after the CAS from c1,
// which came after our W2 read c1, which came after our req store (all
// seq_cst): it read our req and ran the operation, or found it done. W2's
// help of c3 has applied every transaction <= c3: the third W3 returns.
// A W4 that commits, or finds nothing to store, leaves the operation
// applied: the next W3 returns. The bound is checked: an update that
// finds its operation pending at a third W3 throws std::logic_error. A
// read known to store nothing (a kReadOnlyRemove object's remove) runs as a
// read-only transaction up to kOneFileReadTries times first, then is
// announced (as the reference's readTx poses as an update). The
// operations are data ((insert, arg), run by the object's apply for thread
// i), not closures, so no announced closure needs reclaiming (the
// reference's hazard eras). Mixing transaction() updates with update() on
// one OneFile keeps every property but the bound (an LF commit reads no
// announcement): OneFileObject uses only one kind of update.
//
// Thread safety: transaction(), update() and read() concurrently for
// distinct tids in [0, max_threads); load/store/alloc/free/object/
// set_object only inside a transaction of the calling thread.
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
//     durable curTx;
//   * (WF) thread i's operation announced with opSeq is applied by exactly
//     one committed transaction s > opSeq, the one that gives i's result
//     words seq s; i's req changes only after i read them.
//
// Not built (docs/baselines.md, "OneFile"): the reference's wait-free
// memory reclamation (a freed block is reused inside the region by later
// transactions; the region itself is never returned); the hash lookup of
// large write-sets (a linear search here: the objects write at most a few
// dozen words). Not detectable, like RomulusLog and RedoOpt: the result
// words are DRAM, as in the reference.
#pragma once

#include <algorithm>
#include <atomic>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <exception>
#include <functional>
#include <memory>
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

// The two variants: how an update makes progress (see "OneFile-WF").
enum class OneFileProgress { kLockFree, kWaitFree };

// A write-set entry whose offset carries this bit names a DRAM result word
// (index = the rest / 8), not a word of the region (OneFile-WF).
inline constexpr std::uint64_t kOneFileVolatile = std::uint64_t{1} << 63;
// W4 runs at most this many times per update (see "Bound").
inline constexpr int kOneFileWaitFreeAttempts = 2;
// A known read runs as a read-only transaction this many times before it is
// announced.
inline constexpr int kOneFileReadTries = 4;

// An announced operation and its result: the sequential objects' one entry
// point, apply(tid, insert, arg, &out) -> ok.
struct OneFileOp {
  bool insert = false;
  std::int64_t arg = 0;
};
struct OneFileResult {
  bool ok = false;
  std::int64_t out = 0;
};

// A thread's announcement (DRAM, its own line). req = opSeq << 2 | insert <<
// 1 | 1 (0: nothing announced yet). The owner writes arg, then req; a
// reader reads req, then arg (see update()).
struct alignas(64) OneFileAnnounce {
  std::atomic<std::uint64_t> req{0};
  std::atomic<std::uint64_t> arg{0};
};
// A thread's result words (DRAM, their own line): transactional pairs.
struct alignas(64) OneFileResultWords {
  OneFileWord out;
  OneFileWord ok;
};
static_assert(sizeof(OneFileResultWords) == 64);
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
    // OneFile-WF's DRAM: no announcement; result words (0, seq(c)), as of
    // the state this process opens: the log of c (or of an older
    // transaction) holds entries for the crashed run's result words, and a
    // help of c (T1) then leaves these words alone (H3 skips a word whose
    // seq is not older), so no stale result answers a new announcement.
    announce_ = std::make_unique<OneFileAnnounce[]>(static_cast<std::size_t>(max_));
    results_ = std::make_unique<OneFileResultWords[]>(static_cast<std::size_t>(max_));
    for (int t = 0; t < max_; ++t) {
      results_[static_cast<std::size_t>(t)].out.seq.store(OneFileRoot::seq_of(c), std::memory_order_relaxed);
      results_[static_cast<std::size_t>(t)].ok.seq.store(OneFileRoot::seq_of(c), std::memory_order_relaxed);
    }
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
  // rethrown. OneFile-LF's update, and every read-only transaction.
  template <class F>
  void transaction(int tid, F&& fn) {
    Enter enter(*this, tid);
    for (;;) {
      // T1. ORDER: seq_cst (a plain load on x86): acquire, the state of c's
      // seq (applied by its committer's T6 or a helper) happens before our
      // loads; seq_cst, OneFile-WF's bound (see "Bound").
      const std::uint64_t c = root_->cur_tx.load(std::memory_order_seq_cst);
      help_apply(c);
      if (attempt(enter.tx, c, fn)) return;
    }
  }

  // OneFile-WF's read of a kReadOnlyRemove object: fn() (which stores
  // nothing) as a read-only transaction, at most kOneFileReadTries times.
  // false: every try aborted; the caller announces the read (update()).
  template <class F>
  bool read(int tid, F&& fn) {
    Enter enter(*this, tid);
    for (int i = 0; i < kOneFileReadTries; ++i) {
      const std::uint64_t c = root_->cur_tx.load(std::memory_order_seq_cst);  // T1
      help_apply(c);
      if (attempt(enter.tx, c, fn)) {
        if (!enter.tx.ws.empty()) throw std::logic_error("OneFile: a read stored a word");
        return true;
      }
    }
    return false;
  }

  // OneFile-WF's update (W1–W5): announces op, then helps until a committed
  // transaction (its own or another thread's) ran it; durable on return.
  // run(i, op, &out) -> ok runs thread i's operation inside the calling
  // thread's transaction (it may run several times: aborts).
  template <class Run>
  OneFileResult update(int tid, const OneFileOp& op, Run&& run) {
    Enter enter(*this, tid);
    Tx& tx = enter.tx;
    OneFileAnnounce& a = announce_[static_cast<std::size_t>(tid)];
    OneFileResultWords& mine = results_[static_cast<std::size_t>(tid)];
    // W1. Our result words are ours to read: no transaction writes them
    // while our last operation is answered (seq > its opSeq) and we have
    // not announced again.
    const std::uint64_t op_seq = mine.ok.seq.load(std::memory_order_acquire);
    // ORDER: arg (release) before req: a helper that reads the new req
    // (seq_cst, acquire) reads the new arg; one that reads the old req and
    // the new arg finds the old operation answered (our acquire load of
    // its ok word happens before the arg store), and skips it.
    a.arg.store(static_cast<std::uint64_t>(op.arg), std::memory_order_release);
    // ORDER: seq_cst (an xchg on x86): before our W2 load of curTx in the
    // single total order (see "Bound").
    a.req.store(op_seq << 2 | (op.insert ? 2u : 0u) | 1u, std::memory_order_seq_cst);
    // W4's body: every pending announced operation, ours included.
    auto aggregate = [&] {
      tx.helped = 0;
      tx.ops = 0;
      for (int i = 0; i < max_; ++i) {
        const std::uint64_t req = announce_[static_cast<std::size_t>(i)].req.load(std::memory_order_seq_cst);
        if ((req & 1) == 0) continue;  // never announced
        const auto arg = static_cast<std::int64_t>(
            announce_[static_cast<std::size_t>(i)].arg.load(std::memory_order_acquire));
        // State c's answer to "is it done?": a transactional load (aborts
        // if a later transaction wrote it).
        if (result_seq(i) > (req >> 2)) continue;
        std::int64_t out = 0;
        const bool ok = run(i, OneFileOp{(req & 2) != 0, arg}, &out);
        // out before ok: every helper applies the entries in order, so an
        // ok word with seq s means out has seq s too (W3 reads out after).
        push_result(tx, result_off(i, 0), static_cast<std::uint64_t>(out));
        push_result(tx, result_off(i, 1), ok ? 1u : 0u);
        if (i != tid) ++tx.helped;
        ++tx.ops;
      }
    };
    for (int attempts = 0;; ++attempts) {
      // W2. ORDER: seq_cst: after our req store (see "Bound").
      const std::uint64_t c = root_->cur_tx.load(std::memory_order_seq_cst);
      help_apply(c);
      // W3. ORDER: acquire: pairs with the DCAS that applied the ok word
      // (after the out word, by that helper or before it).
      if (mine.ok.seq.load(std::memory_order_acquire) > op_seq) {
        OneFileResult r;
        r.out = static_cast<std::int64_t>(mine.out.val.load(std::memory_order_acquire));
        r.ok = mine.ok.val.load(std::memory_order_acquire) != 0;
        std::uint64_t m = max_attempts_.load(std::memory_order_relaxed);
        while (m < static_cast<std::uint64_t>(attempts) &&
               !max_attempts_.compare_exchange_weak(m, static_cast<std::uint64_t>(attempts), std::memory_order_relaxed)) {
        }
        return r;
      }
      if (attempts >= kOneFileWaitFreeAttempts)
        throw std::logic_error("OneFile-WF: an announced operation is pending after " +
                               std::to_string(attempts) + " transactions (the wait-free bound)");
      // W4.
      if (attempt(tx, c, aggregate) && !tx.ws.empty()) {
        // Only committed transactions count (relaxed: statistics).
        helped_.fetch_add(tx.helped, std::memory_order_relaxed);
        ops_.fetch_add(tx.ops, std::memory_order_relaxed);
        commits_.fetch_add(1, std::memory_order_relaxed);
      }
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
  // OneFile-WF: committed update transactions, the operations they ran,
  // those run for another thread, and the most W4s an update needed.
  std::uint64_t wf_commits() const { return commits_.load(std::memory_order_relaxed); }
  std::uint64_t wf_ops() const { return ops_.load(std::memory_order_relaxed); }
  std::uint64_t helped() const { return helped_.load(std::memory_order_relaxed); }
  std::uint64_t max_attempts() const { return max_attempts_.load(std::memory_order_relaxed); }
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
    std::vector<std::pair<std::uint64_t, std::uint64_t>> ws;  // (V offset or volatile index, value)
    std::uint64_t ops = 0;     // OneFile-WF: operations run by this attempt
    std::uint64_t helped = 0;  // of them, other threads'
  };
  // Marks the calling thread inside a transaction of this OneFile.
  struct Enter {
    Tx& tx;
    Enter(OneFile& f, int tid) : tx(f.enter(tid)) {}
    ~Enter() { current_ = nullptr; }
    Enter(const Enter&) = delete;
    Enter& operator=(const Enter&) = delete;
  };
  Tx& enter(int tid) {
    check_tid(tid, max_, "OneFile");
    if (current_ != nullptr) throw std::logic_error("OneFile: nested transaction");
    Tx& tx = txs_[static_cast<std::size_t>(tid)].value;
    tx.tid = tid;
    tx.owner = this;
    current_ = &tx;
    return tx;
  }
  // T2–T6 from c (T1 done: c applied and durable). true: committed, or
  // read-only (tx.ws empty); false: aborted, or the CAS failed.
  template <class F>
  bool attempt(Tx& tx, std::uint64_t c, F& fn) {
    tx.cur = c;
    tx.seq = OneFileRoot::seq_of(c);
    tx.ws.clear();
    // T2.
    try {
      fn();
    } catch (const OneFileAbort&) {
      aborts_.fetch_add(1, std::memory_order_relaxed);
      return false;
    } catch (...) {
      tx.ws.clear();
      throw;
    }
    // T3.
    if (tx.ws.empty()) return true;
    if (commit(tx)) return true;
    aborts_.fetch_add(1, std::memory_order_relaxed);
    return false;
  }
  // OneFile-WF's result words: thread i's out (which 0) or ok (1).
  static std::uint64_t result_off(int i, int which) {
    return kOneFileVolatile | (2 * static_cast<std::uint64_t>(i) + static_cast<std::uint64_t>(which)) * 8;
  }
  OneFileWord& volatile_word(std::uint64_t off) const {
    const std::uint64_t k = (off & ~kOneFileVolatile) / 8;
    OneFileResultWords& r = results_[static_cast<std::size_t>(k / 2)];
    return k % 2 == 0 ? r.out : r.ok;
  }
  bool valid_volatile(std::uint64_t off) const {
    return off % 8 == 0 && (off & ~kOneFileVolatile) / 16 < static_cast<std::uint64_t>(max_);
  }
  // T2's load of thread i's ok word, its seq: aborts if a transaction after
  // ours wrote it (as load_word).
  std::uint64_t result_seq(int i) const {
    const OneFileWord& w = results_[static_cast<std::size_t>(i)].ok;
    const std::uint64_t s = w.seq.load(std::memory_order_acquire);
    if (s > current_->seq) [[unlikely]] throw OneFileAbort{};
    return s;
  }
  void push_result(Tx& tx, std::uint64_t off, std::uint64_t v) {
    if (tx.ws.size() == entries_) throw std::length_error("OneFile: write set full");
    tx.ws.emplace_back(off, v);
  }
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
      // A DRAM result word (OneFile-WF): applied like any word, never
      // written back.
      const bool dram = (off & kOneFileVolatile) != 0;
      if (dram ? !valid_volatile(off) : (off % 8 != 0 || off + 8 > bytes_))
        throw std::runtime_error("OneFile: corrupt log entry");
      OneFileWord& w = dram ? volatile_word(off) : word(off);
      // H3. Only an older word: a newer seq means s (or a later
      // transaction) already wrote it.
      for (;;) {
        const std::uint64_t lseq = w.seq.load(std::memory_order_acquire);
        if (lseq >= s) break;
        const std::uint64_t lval = w.val.load(std::memory_order_acquire);
        if (sync::dwcas(reinterpret_cast<OneFilePair*>(&w), OneFilePair{lval, lseq}, OneFilePair{val, s})) {
          // CRASH: a written-back line may tear between val and seq:
          // recovery rewrites the whole pair from the log.
          if (!dram) persist::declare_store(&w, sizeof w);
          break;
        }
      }
      if (dram) continue;
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
  std::unique_ptr<OneFileAnnounce[]> announce_;   // OneFile-WF, per thread
  std::unique_ptr<OneFileResultWords[]> results_;  // OneFile-WF, per thread
  std::atomic<std::uint64_t> commits_{0}, ops_{0}, helped_{0}, max_attempts_{0};
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
        // CRASH: a DRAM result word of the crashed run (OneFile-WF): its
        // threads are gone.
        if ((off & kOneFileVolatile) != 0) continue;
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
template <template <unsigned, class> class Seq, unsigned Faults = kNoFaults,
          OneFileProgress P = OneFileProgress::kLockFree>
class OneFileObject {
 public:
  using Object = Seq<kNoFaults, OneFileStorage<Faults>>;
  OneFileObject(pmem::Pool& pool, std::string_view name, const SeqParams& p, std::size_t region_bytes)
      : max_(p.max_threads), ptm_(pool, name, OneFileParams{p.max_threads, region_bytes}) {
    // Creating or attaching is a transaction of its own: a crash inside
    // creation leaves curTx on the state without the object. (Alone, before
    // any thread runs: an LF transaction under either progress.)
    ptm_.transaction(0, [&] { obj_.emplace(ptm_, name, p); });
  }
  // As RomulusObject::apply. Durable on return. OneFile-LF: one
  // transaction, retried until it commits. OneFile-WF: announced and run by
  // whichever aggregated transaction commits first (a read of a
  // kReadOnlyRemove object first tries read-only transactions).
  bool apply(int tid, bool insert, std::int64_t arg, std::int64_t* out) {
    check_tid(tid, max_, "OneFileObject");
    bool r = false;
    if constexpr (P == OneFileProgress::kLockFree) {
      ptm_.transaction(tid, [&] { r = obj_->apply(tid, insert, arg, out); });
      return r;
    } else {
      if constexpr (requires { Object::kReadOnlyRemove; }) {
        if (!insert && ptm_.read(tid, [&] { r = obj_->apply(tid, false, arg, out); })) return r;
      }
      const OneFileResult res = ptm_.update(tid, OneFileOp{insert, arg}, [&](int i, const OneFileOp& o, std::int64_t* o_out) {
        return obj_->apply(i, o.insert, o.arg, o_out);
      });
      // A refused insert or an empty remove leaves *out untouched, as the
      // object's own apply does.
      if (res.ok) *out = res.out;
      return res.ok;
    }
  }
  // A read-only transaction (never announced: tests and the crash checker
  // observe a quiescent object).
  std::vector<std::int64_t> snapshot(int tid = 0) {
    std::vector<std::int64_t> v;
    ptm_.transaction(tid, [&] { v = obj_->snapshot(); });
    return v;
  }
  OneFile<Faults>& ptm() { return ptm_; }
  // OneFile-LF: no combining, one transaction per operation. OneFile-WF:
  // operations per committed update transaction (an aggregated transaction
  // runs every pending announced one).
  double combining_degree() const {
    if constexpr (P == OneFileProgress::kLockFree) return 1.0;
    const std::uint64_t c = ptm_.wf_commits();
    return c == 0 ? 1.0 : static_cast<double>(ptm_.wf_ops()) / static_cast<double>(c);
  }

 private:
  int max_;
  OneFile<Faults> ptm_;
  std::optional<Object> obj_;
};

// OneFile-WF with a sequential object: the onefile-wf-* technique.
template <template <unsigned, class> class Seq, unsigned Faults = kNoFaults>
using OneFileWFObject = OneFileObject<Seq, Faults, OneFileProgress::kWaitFree>;

}  // namespace ferrite::baselines
