// ferrite/combining/pbcomb.h — PBcomb, recoverable blocking software
// combining (Algorithms 1–2, §3 of Fatourou, Kallimanis, Kosmas, "The
// Performance Power of Software Combining in Persistence", PPoPP 2022).
//
// What it is. A generic protocol that turns a *sequential* object (a
// Policy, see below) whose state is a trivially copyable block of bytes
// into a detectably recoverable concurrent object. Each thread announces
// its request in a volatile, cache-padded Request[p]; one thread at a time
// becomes the combiner by taking a volatile odd/even Lock, copies the
// current StateRec MemState[MIndex] into the other one, applies every
// active request to the copy, persists the copy, switches the persistent
// MIndex to it, persists MIndex, and unlocks. Served threads leave without
// any CAS (Alg. 2 l.10–13).
//
// Thread safety: apply/recover may be called concurrently by distinct
// thread ids; one thread id must not run two operations at once.
//
// Thread capacity. The n given at creation is a capacity (the structures'
// create defaults it to kDefaultThreads = 64): the records hold n
// (response, tag) entries and the combiner scans n request slots. A later
// attach may ask for any 1 <= threads <= n, or kAsCreated (attach's
// default) for n (more throws, naming both numbers); apply then takes ids
// in [0, threads), while recover (and
// applied/response) take any id in [0, n): a thread of an earlier, wider
// run may have left a pending operation, and whoever recovers it for that
// id is served like any other thread (its slot exists; the combiner scans
// every slot, so a recovered request of an id >= threads is combined too).
//
// Two round designs (PBCombRoot::design, chosen at compile time):
//  * stamped (the default, Ferrite's): each StateRec carries a round stamp
//    and a checksum, so recovery finds the newest complete record without
//    MIndex. A round writes the record, writes back the lines of it that
//    changed (header and a small state as one range; of the per-thread
//    response pairs, and of a large state whose policy reports its stores
//    (StateWrites: a heap's sift paths), only changed lines) and issues ONE
//    psync (plus one pfence before it only when the round wrote nodes
//    outside the record). MIndex is a volatile hint.
//  * paper (kPaperRound, the ablation `*-paper`): Alg. 2 l.22–27 exactly:
//    pwb(StateRec), pfence, MIndex, pwb(MIndex), psync.
//
// The combiners' image. Combiners keep a DRAM copy of MemState[MIndex]
// (written only under the lock): a round collects, simulates and answers
// from it and then writes the new record from it, so it never loads a
// record line it (or the round before) wrote back — on CPUs whose clwb
// evicts the line (this machine's), each such load was a miss. Waiting
// threads and recovery still read the records. The image is rebuilt from
// the current record at attach.
//
// Persistent layout (per instance; the structure's root embeds a
// PBCombRoot):
//   PBCombRoot { rec[2], rec_bytes, threads n, state_bytes, tag kind,
//                design, MIndex (alone on its cache line) }
//   StateRec (heap block of whole cache lines, 64-byte aligned) =
//     [ stamp : u64 ][ checksum : u64 ][ state (state_bytes, 8-aligned) ]
//     [ (ReturnVal[q] : u64, tag[q] : u64) for q in 0..n-1 ]
//   The header and the state come first and each thread's response and tag
//   share one 16-byte pair, so a round that serves few threads of a record
//   sized for many modifies few lines: with a small state the header, the
//   state and the first two threads' pairs are one cache line. A round
//   writes back the header and the state's used prefix (Policy::used_bytes:
//   a bounded heap persists only its used keys) and, of the pair area, only
//   the lines it changed (layout v3; v2 kept ReturnVal[n] and tag[n] apart,
//   so one served thread dirtied three lines of an 8-thread record). Of a
//   state larger than a line whose policy reports its stores, only the
//   lines stored to in this round and the previous one (layout v5: the
//   state's checksum is a sum of per-word terms, kept per line, so those
//   lines are all a round rehashes; copy_state_lines).
//
// Tags. The paper keeps one Deactivate bit per thread and uses seq mod 2 as
// the activate bit (TagKind::kBit). A structure built from two instances
// (PBqueue) cannot use a bit: a thread's per-thread seq advances on the
// other instance too, so its parity on this instance is not alternating.
// TagKind::kSeq stores the full seq of the last served request instead
// (8 bytes per thread, same protocol, exact detection).
//
// Invariants.
//  * MemState[MIndex] is never written while it is current: combiners write
//    only MemState[1 - MIndex] and only while holding Lock (odd).
//  * tag[q] in MemState[MIndex] names q's last request whose effect is in
//    MemState[MIndex].state, and ReturnVal[q] is that request's response.
//  * Lock is odd iff a combiner holds it; LockVal is the odd Lock value of
//    the last combiner that executed l.24.
//
// Persistence invariants (stamped round).
//  * A round writes only MemState[1 - current]; the current record is never
//    written, so a crash leaves it complete and valid whatever it tears.
//  * Nodes a round wrote outside the record are written back and ordered
//    (pfence) before the record's write-back: a durable record never names
//    a node that is not.
//  * The record (stamp and checksum included) is durable (psync) before
//    Lock is released, so every served thread returns after its effect is
//    durable; the LockVal rule (l.12) is kept as in the paper.
//  * The checksum is computed over the round's final contents (the DRAM
//    image after simulate): a record verifies only if every word recovery
//    reads is this round's. The order of the stores into dst does not
//    matter (nothing of dst is relied on before the psync); sealing dst
//    before its data is in it does (broken variant stamp-before-data).
//  * A line of dst the round does not write holds, durably, what the image
//    holds: dst's own last round (two rounds ago) wrote it back, and
//    neither that round's successor nor this round changed it (the
//    entries of the threads they served, the state lines their simulate
//    reported, and the lines the used prefix grew into are written;
//    copy_state_lines). The first two rounds after attach write everything.
//  * Recovery: the valid record with the newer round (mod 2^40) is current.
//
// Persistence invariants (paper round).
//  * (Alg. 2 l.22–23) the new StateRec is written back and ordered before
//    the MIndex write-back, so a durable MIndex names a durable StateRec.
//  * (l.26–27) MIndex is durable before Lock is released, so every thread
//    served in the round returns only after its effect is durable; a thread
//    that observes its request served by a *later* round than the one it
//    waited for waits for that round's unlock (LockVal check, l.12).
//  * Policy::before_persist runs before l.22 (nodes outside the StateRec,
//    e.g. Alg. 5 l.24); Policy::after_durable after l.27 and before l.28
//    (Alg. 5 l.31–32: publish oldTail, recycle removed nodes).
//
// Recovery. Nothing is needed for durable linearizability beyond
// re-attaching (null recovery; the stamped design picks the current record
// from the stamps, writing nothing): the volatile Request/Lock/LockVal
// restart from their initial values (valid bits 0). Detectable recovery is
// recover(tid, seq, op, arg) — Alg. 1 l.3–6: re-announce with the seq's
// tag, and re-run the request unless MemState[MIndex] says it was served.
// Heap blocks: the structure's recover hook, run by the pool when it opens
// (pmem/root_registry.h), keeps both StateRecs (pbcomb_mark_records) and
// whatever the current state reaches (pbcomb_current_state); attaching
// frees nothing.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "ferrite/combining/common.h"
#include "ferrite/persist/persist.h"
#include "ferrite/sync/backoff.h"
#include "ferrite/sync/cache_padded.h"

// The record accessors are on every combining round's path; GCC at -O2
// declines to inline some of them (measured: 45% of a 1-thread round in an
// out-of-line RecView::ret).
#define FERRITE_PB_INLINE [[gnu::always_inline]] inline
#define FERRITE_PB_LAMBDA_INLINE __attribute__((always_inline))

namespace ferrite::combining {

enum class TagKind : std::uint32_t { kBit = 1, kSeq = 2 };

// One active request collected by the combiner (Alg. 2 l.17).
struct Active {
  int tid;
  OpCode op;
  std::int64_t arg;
};

// A sequential object usable by PBcomb:
//   static constexpr TagKind kTag;
//   std::size_t state_bytes() const;              // maximum state size
//   std::size_t used_bytes(const void* st) const; // prefix to copy/persist
//   void init_state(void* st) const;              // initial state
//   // Simulation phase (Alg. 2 l.16–20): apply `active[0..k)` in order to
//   // `st`, write each response word to resp[i]. `tid` = the combiner.
//   void simulate(void* st, const Active* active, std::size_t k,
//                 std::uint64_t* resp, int tid);
//   bool before_persist(void* st, int tid);  // extra pwbs, before l.22;
//                                            // true if it issued any
//   void after_durable(void* st, int tid);   // after l.27, before l.28
// Optionally (a state larger than a cache line, e.g. a heap's array): the
// same simulate with a last argument StateWrites& w, calling
// w.wrote(offset, bytes) for every range of the state it stores to. The
// stamped round then copies into the new record, writes back and rehashes
// only the lines written in this round and the one before (PBComb::
// copy_state_lines), instead of the whole used prefix. A store it does not
// report is lost at a crash: the crash campaigns catch it.
class StateWrites {
 public:
  // [off, off + bytes) of the state was stored to.
  FERRITE_PB_INLINE void wrote(std::size_t off, std::size_t bytes) {
    if (bytes == 0) return;
    for (std::size_t l = (skew_ + off) / 64, e = (skew_ + off + bytes - 1) / 64; l <= e; ++l)
      if (flag_[l] == 0) {
        flag_[l] = 1;
        lines_->push_back(static_cast<std::uint32_t>(l));
      }
  }
  StateWrites(std::size_t skew, std::uint8_t* flag, std::vector<std::uint32_t>* lines)
      : skew_(skew), flag_(flag), lines_(lines) {}

 private:
  std::size_t skew_;                    // the state's offset in its first cache line
  std::uint8_t* flag_;                  // per state line: in lines_
  std::vector<std::uint32_t>* lines_;  // the state lines written (unordered)
};
template <class P>
concept ReportsStateWrites = requires(P p, void* st, const Active* a, std::size_t k, std::uint64_t* r, int tid,
                                      StateWrites& w) { p.simulate(st, a, k, r, tid, w); };
template <class P>
concept SequentialObject = requires(P p, const P cp, void* st, const void* cst, const Active* a,
                                    std::size_t k, std::uint64_t* r, int tid) {
  { P::kTag } -> std::convertible_to<TagKind>;
  { cp.state_bytes() } -> std::convertible_to<std::size_t>;
  { cp.used_bytes(cst) } -> std::convertible_to<std::size_t>;
  cp.init_state(st);
  p.simulate(st, a, k, r, tid);
  { p.before_persist(st, tid) } -> std::convertible_to<bool>;
  p.after_durable(st, tid);
};

// Persistent part of one PBcomb instance, embedded in a structure's root.
struct PBCombRoot {
  void* rec[2] = {nullptr, nullptr};  // MemState[0..1] (heap blocks)
  std::uint64_t rec_bytes = 0;
  std::uint32_t threads = 0;      // n
  std::uint32_t state_bytes = 0;  // maximum state size
  std::uint32_t tag_kind = 0;
  std::uint32_t design = 0;  // kDesignStamped, or kDesignPaper (the ablation)
  // MIndex: alone on its line. The paper's round writes it back every round
  // (Alg. 2 l.26); the stamped round only stores it (a volatile hint that
  // attach recomputes from the records' stamps).
  alignas(64) std::atomic<std::uint64_t> mindex{0};
  char pad_[56] = {};

  static constexpr std::uint32_t kDesignPaper = 1;
  static constexpr std::uint32_t kDesignStamped = 2;

  PBCombRoot() = default;
  PBCombRoot(void* r0, void* r1, std::uint64_t bytes, std::uint32_t n, std::uint32_t sbytes,
             TagKind tk, std::uint32_t d = kDesignStamped)
      : rec{r0, r1}, rec_bytes(bytes), threads(n), state_bytes(sbytes),
        tag_kind(static_cast<std::uint32_t>(tk)), design(d) {}
};
static_assert(sizeof(PBCombRoot) == 128);
static_assert(offsetof(PBCombRoot, design) == 36);
static_assert(offsetof(PBCombRoot, mindex) == 64);

// Byte layout of a StateRec for n threads (layout v3):
//   [ stamp u64 ][ checksum u64 ][ Deactivate bits: ceil(n/64) u64, kBit only ]
//   [ state (state_bytes) ][ entry[0..n-1] ]    (state_bytes <= 64)
//   [ entry[0..n-1] ][ state (state_bytes) ]    (a larger state: entries_first)
//   entry[q] = ReturnVal[q] u64 (kBit; 8 bytes) or (ReturnVal[q], tag[q]) u64
//   pair (kSeq; 16 bytes, 16-aligned: never straddles two lines).
// The "head" [0, state_off + used) is the stamp, the checksum, the paper's
// Deactivate bits (kBit) and the state's used prefix (and, entries_first,
// every entry). With a small state the responses come last, each thread's
// alone (with its tag), so a round that serves a few threads of a record
// sized for many changes a few lines; the head and the first entries share
// one line (a 4-thread AtomicFloat: 16 + 8 + 8 + 32 = 64 bytes).
//   stamp = round | len << 40. round (mod 2^40): the round that wrote the
//   record (0 for both formatted records); len (< 2^24): the state's used
//   prefix in bytes; checksum: rec_checksum over the stamp, the rest of the
//   head and the n entries (everything a reader of the record uses).
//   Only the stamped round uses stamp and checksum; the paper's round
//   leaves them as format wrote them.
struct RecLayout {
  static constexpr std::size_t kHeader = 16;
  static constexpr unsigned kRoundBits = 40;
  static constexpr std::uint64_t kRoundMask = (std::uint64_t{1} << kRoundBits) - 1;
  static constexpr std::size_t kMaxLen = (std::size_t{1} << (64 - kRoundBits)) - 1;
  static std::uint64_t stamp(std::uint64_t round, std::uint64_t len) { return (round & kRoundMask) | len << kRoundBits; }
  static std::uint64_t round_of(std::uint64_t stamp) { return stamp & kRoundMask; }
  static std::uint64_t len_of(std::uint64_t stamp) { return stamp >> kRoundBits; }
  int n = 0;
  TagKind tag = TagKind::kBit;
  std::size_t state_bytes = 0;

  FERRITE_PB_INLINE constexpr std::size_t nu() const { return static_cast<std::size_t>(n); }
  FERRITE_PB_INLINE constexpr std::size_t bits_bytes() const { return tag == TagKind::kBit ? 8 * ((nu() + 63) / 64) : 0; }
  FERRITE_PB_INLINE constexpr std::size_t entry_size() const { return tag == TagKind::kBit ? 8 : 16; }
  static constexpr std::size_t round_up(std::size_t v, std::size_t a) { return (v + a - 1) & ~(a - 1); }
  // A state larger than a line (a bounded heap's array) comes after the
  // entries instead, so that its used prefix and the entries stay one
  // contiguous range: the state's lines past its used prefix are never
  // written back, and a small heap's round is still one line.
  FERRITE_PB_INLINE constexpr bool entries_first() const { return state_bytes > 64; }
  FERRITE_PB_INLINE constexpr std::size_t entry_off() const {
    return entries_first() ? round_up(kHeader + bits_bytes(), entry_size())
                           : round_up(kHeader + bits_bytes() + state_bytes, entry_size());
  }
  FERRITE_PB_INLINE constexpr std::size_t state_off() const {
    return entries_first() ? entry_off() + entries_bytes() : kHeader + bits_bytes();
  }
  FERRITE_PB_INLINE constexpr std::size_t entries_bytes() const { return entry_size() * nu(); }
  FERRITE_PB_INLINE constexpr std::size_t ret_off(int q) const { return entry_off() + entry_size() * static_cast<std::size_t>(q); }
  // kSeq: the tag's offset; kBit: the offset of the word holding bit q % 64.
  FERRITE_PB_INLINE constexpr std::size_t tag_off(int q) const {
    return tag == TagKind::kBit ? kHeader + 8 * (static_cast<std::size_t>(q) / 64) : ret_off(q) + 8;
  }
  FERRITE_PB_INLINE constexpr std::size_t total() const {
    return entries_first() ? state_off() + state_bytes : entry_off() + entries_bytes();
  }
};
static_assert(RecLayout{4, TagKind::kBit, 8}.total() == 64, "a 4-thread AtomicFloat's record is one line");
static_assert(RecLayout{1, TagKind::kBit, 8200}.state_off() == 32, "a 1-thread heap's entry precedes its state");
static_assert(RecLayout{2, TagKind::kSeq, 8}.entry_off() == 32 && RecLayout{2, TagKind::kSeq, 8}.total() == 64,
              "a 2-thread record of an 8-byte state with seq tags is one line");

// Accessors for one StateRec. ReturnVal and tags are read by waiting threads
// while a later combiner may be overwriting a (no longer current) record
// with the same values for them, so they are accessed through relaxed
// atomic_refs (the publication order comes from MIndex/Lock); the state is
// touched only by combiners and by quiescent recovery.
struct RecView {
  char* base;
  const RecLayout* layout;

  FERRITE_PB_INLINE std::uint64_t ret(int q) const { return word_at(layout->ret_off(q)).load(std::memory_order_relaxed); }
  FERRITE_PB_INLINE void set_ret(int q, std::uint64_t v) const { word_at(layout->ret_off(q)).store(v, std::memory_order_relaxed); }
  // The stamp header's words (0 stamp, 1 checksum). Written only by
  // the combiner that owns the record and by format; read by recovery and
  // by the next combiner (under the lock).
  std::uint64_t& word(int i) const { return reinterpret_cast<std::uint64_t*>(base)[i]; }
  FERRITE_PB_INLINE std::uint64_t tag(int q) const {
    const std::uint64_t w = word_at(layout->tag_off(q)).load(std::memory_order_relaxed);
    return layout->tag == TagKind::kBit ? (w >> (q % 64)) & 1u : w;
  }
  // Stores the tag of request `seq` (its low bit for kBit). Only the
  // combiner writing this record stores: a load + store, not an RMW.
  FERRITE_PB_INLINE void set_tag(int q, std::uint64_t seq) const {
    auto w = word_at(layout->tag_off(q));
    if (layout->tag == TagKind::kSeq) {
      w.store(seq, std::memory_order_relaxed);
      return;
    }
    const std::uint64_t bit = std::uint64_t{1} << (q % 64);
    const std::uint64_t old = w.load(std::memory_order_relaxed);
    w.store((seq & 1) != 0 ? old | bit : old & ~bit, std::memory_order_relaxed);
  }
  // Has request `seq` of q been applied in this record?
  FERRITE_PB_INLINE bool served(int q, std::uint64_t seq) const {
    const std::uint64_t t = tag(q);
    return layout->tag == TagKind::kBit ? t == (seq & 1) : t == seq;
  }
  FERRITE_PB_INLINE void* state() const { return base + layout->state_off(); }
  FERRITE_PB_INLINE std::atomic_ref<std::uint64_t> word_at(std::size_t off) const {
    return std::atomic_ref<std::uint64_t>(*reinterpret_cast<std::uint64_t*>(base + off));
  }
};

// The stamped record's checksum (layout v5): a 64-bit hash of the stamp
// word, the Deactivate bits and the n entries, folded with the state's sum
// (below), so that every word a reader of the record uses moves it. A
// record torn between two rounds' contents (some lines or words of each)
// fails it except with probability about 2^-64.
//
// The state's part is a SUM of one term per word (rec_state_term: the
// word's index and value through splitmix64's finalizer), not a chain, so a
// combiner that changed a few lines of a large state (a heap's sift) updates
// it from per-line sums it keeps (PBComb::lsum_) instead of rehashing every
// used byte: a 1024-key heap's round spent 68% of its time in a hash over
// the whole state (docs/results.md, "A --full run at its own settings").
// The terms are independent strong hashes of (position, value), so a torn
// mix of two rounds' words sums to the checksum's value with probability
// about 2^-64, as a chain would.
FERRITE_PB_INLINE std::uint64_t rec_mix(std::uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}
// Word j (the state's j-th 8 bytes) with value w.
FERRITE_PB_INLINE std::uint64_t rec_state_term(std::uint64_t j, std::uint64_t w) {
  return rec_mix(w ^ (j * 0xd6e8feb86659fd93ULL + 0x2545f4914f6cdd1dULL));
}
// Sum of the terms of the state's bytes [from, to) (from 8-aligned; a
// partial last word is zero-padded: the length is in the stamp).
FERRITE_PB_INLINE std::uint64_t rec_state_sum(const char* st, std::size_t from, std::size_t to) {
  std::uint64_t s = 0;
  std::size_t i = from;
  for (; i + 64 <= to; i += 64) {  // a whole line: eight independent terms
    std::uint64_t w[8];
    std::memcpy(w, st + i, 64);
    const std::uint64_t j = i / 8;
    s += (rec_state_term(j, w[0]) + rec_state_term(j + 1, w[1])) + (rec_state_term(j + 2, w[2]) + rec_state_term(j + 3, w[3])) +
         (rec_state_term(j + 4, w[4]) + rec_state_term(j + 5, w[5])) + (rec_state_term(j + 6, w[6]) + rec_state_term(j + 7, w[7]));
  }
  for (; i + 8 <= to; i += 8) {
    std::uint64_t w;
    std::memcpy(&w, st + i, 8);
    s += rec_state_term(i / 8, w);
  }
  if (i < to) {
    std::uint64_t w = 0;
    std::memcpy(&w, st + i, to - i);
    s += rec_state_term(i / 8, w);
  }
  return s;
}

// The checksum of record `rec` with stamp `stamp`, given its state's sum
// (rec_state_sum over the used prefix, or a combiner's incremental value).
inline std::uint64_t rec_checksum(const char* rec, std::uint64_t stamp, const RecLayout& l, std::uint64_t state_sum) {
  // Eight independent chains over the bits and the entries: words in
  // blocks of eight, word j of a block into chain j, each step one multiply
  // (c = rotl(c ^ w, 29) * K + pos); a segment's last < 8 words into chain
  // 0; the chains folded by the full mix at the end (one serial chain of
  // the full mix per word was twice as slow).
  constexpr std::uint64_t kK = 0x9e3779b97f4a7c15ULL;
  auto step = [](std::uint64_t c, std::uint64_t w, std::uint64_t pos) FERRITE_PB_LAMBDA_INLINE {
    const std::uint64_t x = c ^ w;
    return ((x << 29) | (x >> 35)) * kK + pos;
  };
  std::uint64_t h0 = rec_mix(stamp ^ kK), h1 = rec_mix(stamp ^ (2 * kK)), h2 = rec_mix(stamp ^ (3 * kK)),
                h3 = rec_mix(stamp ^ (4 * kK)), h4 = rec_mix(stamp ^ (5 * kK)), h5 = rec_mix(stamp ^ (6 * kK)),
                h6 = rec_mix(stamp ^ (7 * kK)), h7 = rec_mix(stamp ^ (8 * kK));
  std::uint64_t pos = 0;  // position in the hashed sequence (bits, then entries)
  auto hash = [&](const char* p, std::size_t len) FERRITE_PB_LAMBDA_INLINE {
    std::size_t i = 0;
    for (; i + 64 <= len; i += 64, pos += 64) {
      std::uint64_t w[8];
      std::memcpy(w, p + i, 64);
      h0 = step(h0, w[0], pos);
      h1 = step(h1, w[1], pos + 8);
      h2 = step(h2, w[2], pos + 16);
      h3 = step(h3, w[3], pos + 24);
      h4 = step(h4, w[4], pos + 32);
      h5 = step(h5, w[5], pos + 40);
      h6 = step(h6, w[6], pos + 48);
      h7 = step(h7, w[7], pos + 56);
    }
    for (; i + 8 <= len; i += 8, pos += 8) {
      std::uint64_t w;
      std::memcpy(&w, p + i, 8);
      h0 = step(h0, w, pos);
    }
  };
  hash(rec + RecLayout::kHeader, l.bits_bytes());  // bits and entries are whole words
  hash(rec + l.entry_off(), l.entries_bytes());
  std::uint64_t r = rec_mix(pos ^ stamp);
  for (const std::uint64_t c : {h0, h1, h2, h3, h4, h5, h6, h7}) r = rec_mix(r ^ c);
  return rec_mix(r ^ state_sum);
}
inline std::uint64_t rec_checksum(const char* rec, std::uint64_t stamp, const RecLayout& l) {
  return rec_checksum(rec, stamp, l, rec_state_sum(rec + l.state_off(), 0, RecLayout::len_of(stamp)));
}

// Is record `rec` a complete stamped record (its len fits the state, its
// checksum verifies)?
inline bool rec_valid(const char* rec, const RecLayout& l) {
  const auto* w = reinterpret_cast<const std::uint64_t*>(rec);
  return RecLayout::len_of(w[0]) <= l.state_bytes && w[1] == rec_checksum(rec, w[0], l);
}

// Stamped design: the current record is the valid one with the newer
// round (ties: rec[0]); -1 when neither is valid (damage: every crash
// leaves the previous round's record untouched). The two records' rounds
// differ by at most 1, so "newer" is modulo 2^40: rec[1] is newer iff
// round1 - round0 (mod 2^40) is in [1, 2^39). `check` false trusts the
// rounds without the checksums (the kNoChecksumCheck broken variant).
inline int pbcomb_stamped_current(const PBCombRoot& r, const RecLayout& l, bool check = true) {
  bool ok[2];
  std::uint64_t round[2];
  for (int i = 0; i < 2; ++i) {
    const char* rec = static_cast<const char*>(r.rec[i]);
    ok[i] = !check || rec_valid(rec, l);
    round[i] = RecLayout::round_of(reinterpret_cast<const std::uint64_t*>(rec)[0]);
  }
  if (ok[0] && ok[1]) {
    const std::uint64_t d = (round[1] - round[0]) & RecLayout::kRoundMask;
    return d != 0 && d < (std::uint64_t{1} << (RecLayout::kRoundBits - 1)) ? 1 : 0;
  }
  return ok[0] ? 0 : ok[1] ? 1 : -1;
}

// From an instance's persistent root alone (no PBComb object, no DRAM
// state: for the pool's recover hooks, pmem/root_registry.h): the state of
// the current StateRec (the paper's round: MemState[MIndex]; the stamped
// round: the valid record with the higher round). Throws
// std::runtime_error when the root is inconsistent.
inline void* pbcomb_current_state(const PBCombRoot& r) {
  if (r.rec[0] == nullptr || r.rec[1] == nullptr || r.threads == 0 ||
      (r.tag_kind != static_cast<std::uint32_t>(TagKind::kBit) &&
       r.tag_kind != static_cast<std::uint32_t>(TagKind::kSeq)) ||
      (r.design != PBCombRoot::kDesignPaper && r.design != PBCombRoot::kDesignStamped))
    throw std::runtime_error("PBcomb: corrupt persistent root");
  const RecLayout l{static_cast<int>(r.threads), static_cast<TagKind>(r.tag_kind), r.state_bytes};
  if (r.rec_bytes < l.total()) throw std::runtime_error("PBcomb: corrupt persistent root");
  std::uint64_t mi = r.mindex.load(std::memory_order_acquire);
  if (r.design == PBCombRoot::kDesignStamped) {
    const int c = pbcomb_stamped_current(r, l);
    if (c < 0) throw std::runtime_error("PBcomb: corrupt persistent root (no StateRec verifies)");
    mi = static_cast<std::uint64_t>(c);
  }
  if (mi > 1) throw std::runtime_error("PBcomb: corrupt persistent root");
  return static_cast<char*>(r.rec[mi]) + l.state_off();
}
// Marks both StateRecs of an instance (heap recovery must keep both).
template <class Mark>
void pbcomb_mark_records(const PBCombRoot& r, const Mark& mark) {
  mark(r.rec[0]);
  mark(r.rec[1]);
}

// From an instance's persistent root alone (recover hooks): ReturnVal[q]
// of the current StateRec (pbcomb_current_state's record).
inline std::uint64_t pbcomb_current_response(const PBCombRoot& r, int q) {
  char* st = static_cast<char*>(pbcomb_current_state(r));  // validates the root
  const RecLayout l{static_cast<int>(r.threads), static_cast<TagKind>(r.tag_kind), r.state_bytes};
  return RecView{st - l.state_off(), &l}.ret(q);
}

// A response or node word that names a payload (0 is no payload offset:
// the records are formatted with responses 0).
inline bool names_payload(std::uint64_t w) { return w != 0 && is_value_word(w); }

template <SequentialObject Policy, unsigned Faults = kNoFaults>
class PBComb {
 public:
  static constexpr TagKind kTag = Policy::kTag;
  static constexpr bool kPaper = (Faults & kPaperRound) != 0;
  static constexpr std::uint32_t kDesign = kPaper ? PBCombRoot::kDesignPaper : PBCombRoot::kDesignStamped;

  static RecLayout layout_for(const Policy& pol, int n) {
    const RecLayout l{n, kTag, pol.state_bytes()};
    if (l.state_bytes > RecLayout::kMaxLen)
      throw std::invalid_argument("PBcomb: a StateRec of " + std::to_string(l.total()) +
                                  " bytes exceeds the stamped record's 16 MiB");
    return l;
  }

  // Fills a fresh pair of StateRecs (both hold the initial state, tags 0,
  // responses 0) and writes them back. It issues no fence: the caller then
  // publishes a root holding PBCombRoot{rec0, rec1, ...} with
  // pool.create_root, which pfences before the root's write-back and psyncs
  // after it (PBQueue formats from its root's constructor, inside
  // create_root). A psync here was redundant before create_root: mutation
  // testing found it never needed (docs/crash.md §6).
  // Both records get round 0 and a valid stamp (either may be current).
  static void format(const Policy& pol, int n, void* rec0, void* rec1) {
    const RecLayout l = layout_for(pol, n);
    for (void* r : {rec0, rec1}) {
      std::memset(r, 0, l.total());
      char* st = static_cast<char*>(r) + l.state_off();
      pol.init_state(st);
      auto* w = static_cast<std::uint64_t*>(r);
      w[0] = RecLayout::stamp(0, pol.used_bytes(st));  // bits 0: tags 0
      w[1] = rec_checksum(static_cast<char*>(r), w[0], l);
      // PERSIST: initial MemState[0..1] (Alg. 1 "initially") written back;
      // the caller's fence makes them durable before anything names them.
      persist::pwb(r, l.total());
    }
  }

  // Attaches to a formatted instance (fresh or after a restart: the
  // volatile part starts from its initial values, Request valid bits 0).
  // `threads` may be fewer than the capacity the instance was created for
  // (root->threads); everything persistent or scanned is sized by the
  // capacity (n_), only apply's ids by `threads`.
  PBComb(PBCombRoot* root, Policy* policy, int threads)
      : root_(root), pol_(policy), n_(static_cast<int>(root->threads)), attached_(threads) {
    if (threads < 0)
      throw std::invalid_argument("PBcomb: attach asked for " + std::to_string(threads) +
                                  " threads; it takes at least 1 (or kAsCreated: the capacity)");
    if (root->threads == 0 || root->threads > static_cast<std::uint32_t>(std::numeric_limits<int>::max()))
      throw std::invalid_argument("PBcomb: corrupt persistent root (thread capacity " +
                                  std::to_string(root->threads) + ")");
    if (threads == kAsCreated) attached_ = threads = n_;
    if (static_cast<std::uint32_t>(threads) > root->threads)
      throw std::invalid_argument("PBcomb: structure was created for at most " + std::to_string(root->threads) +
                                  " threads; attach asked for " + std::to_string(threads) +
                                  " — create the structure with a larger capacity");
    if (root->tag_kind != static_cast<std::uint32_t>(kTag))
      throw std::invalid_argument("PBcomb: persistent tag kind does not match the structure");
    layout_ = layout_for(*policy, n_);
    if (root->state_bytes != layout_.state_bytes || root->rec_bytes < layout_.total())
      throw std::invalid_argument("PBcomb: persistent state size does not match the structure");
    if (root->design != kDesign)
      throw std::invalid_argument(root->design == PBCombRoot::kDesignPaper || root->design == PBCombRoot::kDesignStamped
                                      ? "PBcomb: structure was created with the other round design (paper/stamped)"
                                      : "PBcomb: corrupt persistent root (unknown round design)");
    if (root->rec[0] == nullptr || root->rec[1] == nullptr ||
        (kPaper && root->mindex.load(std::memory_order_relaxed) > 1))
      throw std::invalid_argument("PBcomb: corrupt persistent root");
    if constexpr (!kPaper) {
      // CRASH: the stamped round's recovery — the current record is the
      // valid one with the higher round; the other may be torn by a round
      // the crash interrupted (it never served anyone). MIndex is only a
      // hint: set it, not written back (the next attach recomputes it).
      const int c = pbcomb_stamped_current(*root, layout_, (Faults & kNoChecksumCheck) == 0);
      if (c < 0) throw std::invalid_argument("PBcomb: corrupt persistent root (no StateRec verifies)");
      root->mindex.store(static_cast<std::uint64_t>(c), std::memory_order_relaxed);
    }
    // Every slot of the capacity: a recovered request of an id >= threads
    // is announced, scanned and served like the others.
    const auto slots = static_cast<std::size_t>(n_);
    requests_ = std::vector<RequestSlot>(slots);
    next_seq_ = std::vector<sync::CachePadded<std::uint64_t>>(slots);
    line_dirty_.assign((layout_.total() + persist::kCacheLine - 1) / persist::kCacheLine, 0);
    ranges_.resize(line_dirty_.size() + 1);
    prev_served_.reserve(slots);
    active_.resize(slots);
    active_tag_.resize(slots);
    resp_.resize(slots);
    const RecView cur = current();
    for (int q = 0; q < n_; ++q) next_seq_[static_cast<std::size_t>(q)].value = cur.tag(q) + 1;
    // The combiners' DRAM image of the current record (see combine()).
    shadow_buf_.assign((layout_.total() + 7) / 8, 0);
    std::memcpy(shadow_buf_.data(), cur.base, layout_.total());
    if constexpr (!kPaper && ReportsStateWrites<Policy>) {
      delta_ = layout_.entries_first();
      if (delta_) {
        // The state's lines (see copy_state_lines): their sums from the image.
        skew_ = layout_.state_off() % persist::kCacheLine;
        state_lines_ = (skew_ + layout_.state_bytes + persist::kCacheLine - 1) / persist::kCacheLine;
        line_flag_.assign(state_lines_, 0);
        lsum_.resize(state_lines_);
        const char* st = static_cast<const char*>(shadow().state());
        for (std::size_t sl = 0; sl < state_lines_; ++sl) lsum_[sl] = rec_state_sum(st, line_lo(sl), line_hi(sl));
        changed_now_.reserve(state_lines_);
        changed_prev_.reserve(state_lines_);
      }
    }
  }
  PBComb(const PBComb&) = delete;
  PBComb& operator=(const PBComb&) = delete;

  // The thread count this handle was attached for (apply's ids: [0,
  // threads())) and the capacity the instance was created for (recover's
  // ids: [0, max_threads())).
  int threads() const { return attached_; }
  int max_threads() const { return n_; }

  // Alg. 1 PBcomb(func, args, seq): runs (op, arg) as thread tid with the
  // caller's sequence number (seq's low bit alternates per request on this
  // instance for TagKind::kBit; seq strictly increases for kSeq). Returns
  // the response word.
  std::uint64_t apply(int tid, std::uint64_t seq, OpCode op, std::int64_t arg) {
    check_tid(tid);
    const RecView cur = current();
    if (cur.served(tid, seq) || (kTag == TagKind::kSeq && seq < cur.tag(tid)))
      throw std::invalid_argument(
          kTag == TagKind::kBit
              ? "PBcomb: seq parity must alternate between a thread's operations (first seq odd)"
              : "PBcomb: seq must increase between a thread's operations (first seq >= 1)");
    next_seq_[static_cast<std::size_t>(tid)].value = seq + 1;
    // Alg. 1 l.1: announce.
    requests_[static_cast<std::size_t>(tid)].announce(op, arg, seq);
    return perform(tid);  // l.2
  }
  // Same, with a sequence number kept by the handle (durably linearizable
  // use without the application keeping seq: after re-attach it restarts
  // from the persisted tag).
  std::uint64_t apply(int tid, OpCode op, std::int64_t arg) {
    check_tid(tid);
    return apply(tid, next_seq_[static_cast<std::size_t>(tid)].value, op, arg);
  }

  // Alg. 1 Recover(func, args, seq): for the operation (tid, seq) that was
  // pending at a crash. Completes it if it had not taken effect; returns its
  // response either way. Idempotent (a crash during recovery re-invokes it).
  // tid may be any id of the capacity, also one >= threads() (a pending
  // operation of a wider run).
  std::uint64_t recover(int tid, std::uint64_t seq, OpCode op, std::int64_t arg) {
    check_slot(tid);
    next_seq_[static_cast<std::size_t>(tid)].value = seq + 1;
    // l.3: re-announce with seq's tag and the valid bit set.
    requests_[static_cast<std::size_t>(tid)].announce(op, arg, seq);
    const RecView cur = current();
    // l.4–5: not yet applied -> run it now.
    if (!cur.served(tid, seq)) return perform(tid);
    return cur.ret(tid);  // l.6
  }

  // Did request (tid, seq) take effect in the current (durable once
  // quiescent) state? Its response is response(tid).
  bool applied(int tid, std::uint64_t seq) const { return current().served(tid, seq); }
  std::uint64_t response(int tid) const { return current().ret(tid); }
  std::uint64_t next_seq(int tid) const { return next_seq_[static_cast<std::size_t>(tid)].value; }

  // The current state (for quiescent inspection: tracing, observe, tests).
  const void* state() const { return current().state(); }
  // The two StateRec blocks (heap recovery must keep both).
  void* rec(int i) const { return root_->rec[i]; }

  double combining_degree() const { return stats_.degree(); }
  const CombineStats& stats() const { return stats_; }
  void reset_stats() { stats_.reset(); }

 private:
  // apply's ids: those of the threads attached for.
  void check_tid(int tid) const {
    if (tid < 0 || tid >= attached_)
      throw std::out_of_range("PBcomb: thread id " + std::to_string(tid) + " not in [0, " +
                              std::to_string(attached_) + ")" +
                              (tid >= attached_ && tid < n_
                                   ? " (attached for " + std::to_string(attached_) + " of its " + std::to_string(n_) +
                                         " threads; recover takes any id below " + std::to_string(n_) + ")"
                                   : std::string()));
  }
  // recover's ids: every slot of the capacity.
  void check_slot(int tid) const {
    if (tid < 0 || tid >= n_)
      throw std::out_of_range("PBcomb: thread id " + std::to_string(tid) + " not in [0, " +
                              std::to_string(n_) + ") (the structure's thread capacity)");
  }

  RecView view(std::uint64_t i) const { return RecView{static_cast<char*>(root_->rec[i]), &layout_}; }
  RecView shadow() { return RecView{reinterpret_cast<char*>(shadow_buf_.data()), &layout_}; }
  RecView current() const {
    // ORDER: acquire pairs with the combiner's release store of MIndex
    // (l.25): the record it names is fully written.
    return view(root_->mindex.load(std::memory_order_acquire));
  }

  // Alg. 2 PerformRequest.
  std::uint64_t perform(int p) {
    auto& req = requests_[static_cast<std::size_t>(p)];
    for (;;) {
      std::uint64_t lval = lock_->load(std::memory_order_acquire);  // l.6
      if (lval % 2 == 0) {                                          // l.7
        std::uint64_t expected = lval;
        // ORDER: acq_rel: acquiring the lock sees the previous combiner's
        // writes (its release unlock); nothing is published by it.
        if (lock_->compare_exchange_strong(expected, lval + 1, std::memory_order_acq_rel,
                                           std::memory_order_acquire))
          return combine(p, lval + 1);  // l.8
        lval = lval + 1;                // l.9: someone else took lval+1
      }
      // l.10: wait for the combiner holding lval to leave (spin, then yield:
      // the combiner may be preempted on an oversubscribed machine).
      sync::spin_until([&] { return lock_->load(std::memory_order_acquire) != lval; });
      const RecView cur = current();
      const std::uint64_t my_tag = req.ctl.load(std::memory_order_relaxed) >> 1;  // own slot
      if (cur.served(p, my_tag)) {  // l.11
        const std::uint64_t resp = cur.ret(p);
        // l.12: served by a round later than lval's (LockVal moved on, l.24):
        // that round may not have reached its psync yet — wait for its unlock.
        if (lockval_->load(std::memory_order_acquire) != lval)
          sync::spin_until([&] { return lock_->load(std::memory_order_acquire) != lval + 2; });
        return resp;  // l.13
      }
    }
  }

  // Alg. 2 l.14–29, run while holding Lock == lock_val (odd).
  std::uint64_t combine(int p, std::uint64_t lock_val) {
    // Only combiners write MIndex and we hold the lock (acquired with
    // acquire semantics after the previous combiner's release): relaxed.
    const std::uint64_t mi = root_->mindex.load(std::memory_order_relaxed);
    const std::uint64_t ind = 1 - mi;  // l.14
    // The combiners keep a DRAM image of MemState[MIndex] (shadow_buf_,
    // written only under the lock, like the records): a round reads the
    // current state, tags and responses from it, never from the record
    // (whose lines the previous round wrote back — on CPUs whose clwb
    // evicts, every load of them would miss).
    const RecView sh = shadow();
    const RecView dst = view(ind);

    // l.16–17: collect the active, valid requests (against src's tags, which
    // are the same as the copy's).
    std::size_t k = 0;
    for (int q = 0; q < n_; ++q) {
      // ORDER: acquire pairs with announce(): op/arg of the request are visible.
      const std::uint64_t ctl = requests_[static_cast<std::size_t>(q)].ctl.load(std::memory_order_acquire);
      if ((ctl & 1u) == 0) continue;  // not valid (never announced since restart)
      const std::uint64_t tag = ctl >> 1;
      if (sh.served(q, tag)) continue;
      const auto& r = requests_[static_cast<std::size_t>(q)];
      active_[k] = Active{q, static_cast<OpCode>(r.op.load(std::memory_order_relaxed)),
                          r.arg.load(std::memory_order_relaxed)};
      active_tag_[k] = tag;
      ++k;
    }
    if (k == 0) {
      // Our own request was served (and made durable) by an earlier round
      // that completed before we took the lock: nothing to switch.
      const std::uint64_t resp = sh.ret(p);
      lock_->store(lock_val + 1, std::memory_order_release);
      return resp;
    }

    // l.18–21: simulate on the image; record responses and tags there. A
    // large state's round writes only the lines simulate stored to (and
    // the previous round's): the policy reports them (copy_state_lines).
    std::size_t old_len = 0;
    bool reported = false;
    if constexpr (!kPaper && ReportsStateWrites<Policy>)
      if (delta_) {
        old_len = pol_->used_bytes(sh.state());
        changed_prev_.swap(changed_now_);
        changed_now_.clear();
        StateWrites w(skew_, line_flag_.data(), &changed_now_);
        pol_->simulate(sh.state(), active_.data(), k, resp_.data(), p, w);
        reported = true;
      }
    if (!reported) pol_->simulate(sh.state(), active_.data(), k, resp_.data(), p);
    for (std::size_t i = 0; i < k; ++i) {
      sh.set_ret(active_[i].tid, resp_[i]);
      sh.set_tag(active_[i].tid, active_tag_[i]);
    }
    // The broken variant stamp-before-data seals dst (stamp + checksum)
    // before the round's data is in it: the checksum covers dst's old
    // contents. (With the checksum computed over the round's own contents,
    // the order of the stores into dst does not matter: nothing of dst is
    // relied on before the psync, and a torn mix fails the checksum.)
    if constexpr ((Faults & kSealBeforeFill) != 0)
      early_seal_ = rec_checksum(dst.base, RecLayout::stamp(RecLayout::round_of(sh.word(0)) + 1,
                                                            pol_->used_bytes(sh.state())),
                                 layout_);
    // l.15 with l.18–21's effects: MemState[ind] := the new state.
    write_rec(sh, dst, k, old_len);
    stats_.record(k);

    if constexpr (!kPaper) return stamped_round(p, lock_val, sh, dst, ind);

    // PERSIST: data outside the StateRec this round created or changed
    // (new nodes, the old tail's next) — Alg. 5 l.19, 23, 24 — before the
    // StateRec and MIndex.
    pol_->before_persist(dst.state(), p);
    // PERSIST: Alg. 2 l.22 — the StateRec: the head (bits, the state's used
    // prefix) and every response, as one range when the state is all used.
    write_back_head_and(dst, layout_.state_off() + pol_->used_bytes(sh.state()), /*all entries=*/true);
    // PERSIST: l.23 — the StateRec's write-backs are ordered before the
    // MIndex store/write-back (else MIndex may be durable while part of the
    // record is not: a served request with a lost effect).
    if constexpr ((Faults & kNoPfenceBetweenPwbs) == 0) persist::pfence();
    // l.24: LockVal := Lock. ORDER: ordered before the MIndex release below,
    // so a thread that sees its request served in this record sees LockVal.
    lockval_->store(lock_val, std::memory_order_release);
    // l.25. ORDER: release publishes the record to waiters (acquire in current()).
    root_->mindex.store(ind, std::memory_order_release);
    persist::pwb(&root_->mindex);  // PERSIST: l.26
    // PERSIST: l.27 — the switch is durable before any served thread may
    // return (they return only after the unlock below).
    if constexpr ((Faults & kNoPsyncBeforeUnlock) == 0) persist::psync();
    // Alg. 5 l.31–32 (oldTail, recycling of nodes whose removal is now durable).
    pol_->after_durable(sh.state(), p);
    const std::uint64_t resp = sh.ret(p);
    // l.28. ORDER: release: waiters that see the new Lock see the new record.
    lock_->store(lock_val + 1, std::memory_order_release);
    return resp;  // l.29
  }

  // The stamped round: Alg. 2 l.22–27 with ONE write-back range and one
  // psync, and no MIndex write-back. The record carries its round and a
  // checksum (RecLayout), so recovery finds the newest complete record by
  // itself (pbcomb_stamped_current) and MIndex stays volatile.
  //   1. data outside the record (nodes), written back, then a pfence —
  //      only when the round wrote some (a record naming a node must never
  //      be durable before the node);
  //   2. round := src.round + 1 (mod 2^40), len, checksum; the record's used prefix,
  //      header included, written back as one range; psync;
  //   3. LockVal, MIndex (volatile), after_durable, unlock.
  // CRASH: before the psync completes, dst may be durable in any part
  // (torn): its checksum fails or it is complete — either way src, which
  // this round never writes, is a complete record of the previous round,
  // and no thread served by this round has returned. After the psync, dst
  // is durable and complete: it is the newest valid record.
  std::uint64_t stamped_round(int p, std::uint64_t lock_val, const RecView& sh, const RecView& dst,
                              std::uint64_t ind) {
    // PERSIST: data outside the StateRec (nodes, the old tail's next), then
    // a pfence ordering it before the record's write-back.
    const bool outside = pol_->before_persist(dst.state(), p);
    if constexpr ((Faults & kNoOutsideFence) == 0)
      if (outside) persist::pfence();
    const std::uint64_t len = pol_->used_bytes(sh.state());
    const std::uint64_t stamp = RecLayout::stamp(RecLayout::round_of(sh.word(0)) + 1, len);
    // The image holds the whole new record: its checksum is dst's.
    sh.word(0) = stamp;
    sh.word(1) = rec_checksum(sh.base, stamp, layout_, delta_ ? image_state_sum(len) : rec_state_sum(static_cast<const char*>(sh.state()), 0, len));
    if constexpr ((Faults & kSealBeforeFill) != 0) sh.word(1) = early_seal_;
    dst.word(0) = stamp;
    dst.word(1) = sh.word(1);
    // PERSIST: l.22 + l.26 in one — the record's lines this round wrote:
    // the header and a small state (or a large state's entries) as one
    // range, and the lines of the (response, tag) pairs and of a large
    // state that differ from what dst held (write_rec). The others hold
    // what dst's own last write-back made durable (or, after a restart,
    // what the media holds: working == media at attach), so the whole
    // record is durable after the psync; l.27 — before any served thread
    // may return.
    write_back_head_and(dst, layout_.state_off() + (delta_ ? 0 : len), /*all entries=*/false);
    if constexpr ((Faults & kNoPsyncBeforeUnlock) == 0) persist::psync();
    // l.24 and l.25 as in the paper (ORDER as there); MIndex is not written
    // back: recovery recomputes it from the stamps.
    lockval_->store(lock_val, std::memory_order_release);
    root_->mindex.store(ind, std::memory_order_release);
    pol_->after_durable(sh.state(), p);
    const std::uint64_t resp = sh.ret(p);
    lock_->store(lock_val + 1, std::memory_order_release);  // l.28 (ORDER as there)
    return resp;
  }

  // Writes the new record (the image `sh`, after this round's simulate)
  // into dst. dst already holds what it held after the round before last
  // (its own last write); since then only the entries of the threads the
  // previous round and this round served changed. So only those are
  // written, and only their lines are marked for write-back (line_dirty_);
  // a large state likewise (copy_state_lines). Right after attach nothing
  // is known about dst (a crash may have torn it): the first two rounds
  // write every entry and the whole used state.
  void write_rec(const RecView& sh, const RecView& dst, std::size_t k, std::size_t old_len) {
    std::fill(line_dirty_.begin(), line_dirty_.end(), std::uint8_t{0});
    const bool full = full_copies_ > 0;
    if (full) {
      --full_copies_;
      for (int q = 0; q < n_; ++q) copy_entry(sh, dst, q);
    } else {
      for (const int q : prev_served_) copy_entry(sh, dst, q);
      for (std::size_t i = 0; i < k; ++i) copy_entry(sh, dst, active_[i].tid);
    }
    prev_served_.clear();
    for (std::size_t i = 0; i < k; ++i) prev_served_.push_back(active_[i].tid);  // the next round writes these
    // kBit: the Deactivate words are in the head (written back every round).
    for (std::size_t w = 0; w < layout_.bits_bytes() / 8; ++w)
      dst.word_at(RecLayout::kHeader + 8 * w).store(sh.word_at(RecLayout::kHeader + 8 * w).load(std::memory_order_relaxed),
                                                    std::memory_order_relaxed);
    const std::size_t used = pol_->used_bytes(sh.state());
    if constexpr (!kPaper)
      if (delta_) return copy_state_lines(sh, dst, old_len, used, full);
    std::memcpy(dst.state(), sh.state(), used);
    persist::declare_store(dst.state(), used);  // CRASH: a memcpy may tear (crash/model.h)
  }

  // A large state (entries_first: a bounded heap's array) of a policy that
  // reports its writes, stamped round: copies into dst, and marks for
  // write-back, only the state lines whose contents dst does not already
  // hold. dst holds the state of the round before last (used prefix L2),
  // durable; the image holds this round's (len), and held the previous
  // round's (old_len) before simulate. A byte b < len of dst is stale only
  // if a store of the previous round or of this one changed it (the lines
  // simulate reported: changed_prev_, changed_now_), or if it lies beyond
  // the prefix dst was last written with — and then it lies in [L2,
  // old_len) (the previous round's grown lines, in changed_prev_) or in
  // [old_len, len) (this round's, added here). So those lines are all that
  // dst needs. The per-line sums of the state checksum (lsum_) are
  // recomputed for the lines this round wrote or grew; a line beyond the
  // prefix may hold a stale sum until it grows into the prefix.
  void copy_state_lines(const RecView& sh, const RecView& dst, std::size_t old_len, std::size_t len, bool full) {
    const char* nowc = static_cast<const char*>(sh.state());
    if (len > old_len)
      for (std::size_t sl = line_of(old_len); sl < state_lines_ && line_lo(sl) < len; ++sl)
        if (line_flag_[sl] == 0) {
          line_flag_[sl] = 1;
          changed_now_.push_back(static_cast<std::uint32_t>(sl));
        }
    auto copy_line = [&](std::size_t c) {
      const std::size_t lo = line_lo(c), hi = std::min(line_hi(c), len);
      if (lo >= hi) return;
      std::memcpy(static_cast<char*>(dst.state()) + lo, nowc + lo, hi - lo);
      persist::declare_store(static_cast<char*>(dst.state()) + lo, hi - lo);  // CRASH: a memcpy may tear
      line_dirty_[(layout_.state_off() + lo) / persist::kCacheLine] = 1;
    };
    for (const std::uint32_t c : changed_now_) {
      const std::uint64_t sum = rec_state_sum(nowc, line_lo(c), line_hi(c));
      if (c < head_lines_) head_sum_ += sum - lsum_[c];
      lsum_[c] = sum;
      if (!full) copy_line(c);
    }
    // head_sum_ follows the prefix: the lines before its last one.
    for (const std::size_t last = len == 0 ? 0 : line_of(len - 1); head_lines_ != last;)
      head_lines_ < last ? head_sum_ += lsum_[head_lines_++] : head_sum_ -= lsum_[--head_lines_];
    if (full) {
      for (std::size_t sl = 0; sl < state_lines_ && line_lo(sl) < len; ++sl) copy_line(sl);
    } else if constexpr ((Faults & kStaleLines) == 0) {
      // The previous round's lines this round did not write again (their
      // flag, still set for this round's, tells). The broken variant
      // stale-lines forgets that dst is two rounds old and skips them.
      for (const std::uint32_t c : changed_prev_)
        if (line_flag_[c] == 0) copy_line(c);
    }
    for (const std::uint32_t c : changed_now_) line_flag_[c] = 0;  // (StateWrites' next round)
  }
  // State line sl: the state's bytes in the record's cache line
  // state_off / 64 + sl ([line_lo, line_hi), 8-aligned: state_off is).
  std::size_t line_lo(std::size_t sl) const { return sl == 0 ? 0 : sl * persist::kCacheLine - skew_; }
  std::size_t line_hi(std::size_t sl) const {
    return std::min((sl + 1) * persist::kCacheLine - skew_, layout_.state_bytes);
  }
  std::size_t line_of(std::size_t b) const { return (skew_ + b) / persist::kCacheLine; }
  // rec_state_sum over the image's state prefix [0, len) (after this
  // round's copy_state_lines): head_sum_ for every line before the last
  // (whole lines, all inside the prefix), the last one hashed.
  std::uint64_t image_state_sum(std::size_t len) {
    if (len == 0) return 0;
    return head_sum_ + rec_state_sum(static_cast<const char*>(shadow().state()), line_lo(head_lines_), len);
  }
  void copy_entry(const RecView& src, const RecView& dst, int q) {
    dst.set_ret(q, src.ret(q));
    if constexpr (kTag == TagKind::kSeq) dst.set_tag(q, src.tag(q));
    mark_pair(q);
  }

  void mark_pair(int q) { line_dirty_[layout_.ret_off(q) / persist::kCacheLine] = 1; }

  // Writes back [dst, dst + head) and the lines marked dirty (`all`: every
  // entry line) that range does not cover, merging neighbours into one
  // range (and into the head's range when they adjoin it). The ranges are
  // computed first and issued from one call site, so mutation testing
  // (crash/sites.h) removes the record's write-back as a whole.
  void write_back_head_and(const RecView& dst, std::size_t head, bool all) {
    constexpr std::size_t L = persist::kCacheLine;
    const std::size_t total = layout_.total();
    if (all && !layout_.entries_first())
      for (std::size_t line = layout_.entry_off() / L; line * L < total; ++line) line_dirty_[line] = 1;
    std::size_t n = 0;
    ranges_[n++] = {0, head};
    if constexpr ((Faults & kHeadOnly) == 0)
      for (std::size_t line = (head + L - 1) / L; line < line_dirty_.size(); ++line) {
        if (line_dirty_[line] == 0) continue;
        auto& last = ranges_[n - 1];
        if (line == (last.second + L - 1) / L)
          last.second = std::min((line + 1) * L, total);  // adjoins: extend
        else
          ranges_[n++] = {line * L, std::min((line + 1) * L, total)};
      }
    for (std::size_t i = 0; i < n; ++i) persist::pwb(dst.base + ranges_[i].first, ranges_[i].second - ranges_[i].first);
  }

  PBCombRoot* root_;
  Policy* pol_;
  int n_;         // the capacity (root->threads): the records' entries, the request slots
  int attached_;  // the threads attached for: apply's ids [0, attached_)
  RecLayout layout_;
  std::vector<RequestSlot> requests_;  // Request[0..n-1] (volatile)
  std::vector<sync::CachePadded<std::uint64_t>> next_seq_;  // owner-only
  sync::CachePadded<std::atomic<std::uint64_t>> lock_{0};     // Lock (volatile)
  sync::CachePadded<std::atomic<std::uint64_t>> lockval_{0};  // LockVal (volatile)
  // Combiner-only scratch (under the lock).
  std::vector<std::uint8_t> line_dirty_;  // per cache line of the record: written this round
  std::vector<std::pair<std::size_t, std::size_t>> ranges_;  // write_back_head_and's ranges
  std::vector<int> prev_served_;  // threads the previous round served (their entries changed)
  std::vector<std::uint64_t> shadow_buf_;  // DRAM image of MemState[MIndex] (combiners only)
  int full_copies_ = 2;           // rounds after attach that copy every entry
  std::uint64_t early_seal_ = 0;  // kSealBeforeFill only
  // A large state's round (stamped, entries_first; copy_state_lines):
  bool delta_ = false;
  std::size_t skew_ = 0;         // state_off() % kCacheLine
  std::size_t state_lines_ = 0;  // cache lines the state spans
  std::vector<std::uint8_t> line_flag_;    // per state line: in changed_now_ (StateWrites)
  std::vector<std::uint64_t> lsum_;        // per state line: rec_state_sum of the image's line
  std::size_t head_lines_ = 0;   // the state lines before the prefix's last one...
  std::uint64_t head_sum_ = 0;   // ...and the sum of their lsum_ (mod 2^64)
  std::vector<std::uint32_t> changed_now_, changed_prev_;  // state lines this / the previous round changed
  std::vector<Active> active_;
  std::vector<std::uint64_t> active_tag_;
  std::vector<std::uint64_t> resp_;
  CombineStats stats_;
};

}  // namespace ferrite::combining
