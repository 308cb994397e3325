// ferrite/montage/layout.h — nbMontage's on-media layout: payload blocks,
// per-thread DCSS descriptors, slabs and the root.
//
// Paper: W. Cai, H. Wen, V. Beadle, C. Kjellqvist, M. Hedayati, M. L. Scott,
// "Fast Nonblocking Persistence for Concurrent Data Structures", DISC 2021
// (nbMontage). Figure 2's pseudocode is the specification; "l.N" below is
// its line N (numbering of the figure: CircBuffer l.1–21, globals l.22–28,
// Desc l.29–37, PBlk l.38–51, pdelete l.54–58, begin_op l.59–76, end_op
// l.77–81, abort_op l.82–94, reset_op l.95–97, advance l.98–106).
//
// Every persistent word is listed here with its meaning; epoch_sys.h says
// when each becomes durable. All types are standard layout with asserted
// offsets; the format version is MontageRoot::kTypeVersion.
//
//   MontageRoot (a named pool root)
//     magic, version, structure kind, max_threads
//     global_epoch        alone on a line (l.22; persisted at every advance)
//     slab_head           pool offset of the newest slab (a singly linked list)
//     descs[kMaxThreads]  one Desc per thread id, a line each (l.52)
//     user[8]             words the structure on top may use (e.g. buckets)
//   Slab (a 64 KiB heap block, linked from the root before any block in it
//         is used): SlabHeader, then fixed-size blocks of `block_size`.
//   Block = PBlkHeader (one line) + payload bytes.
//
// A block is a candidate for recovery only if its header's magic/type word
// is valid AND its stamp equals its slab's stamp. Stamps are unique across
// runs (run number = the global epoch the run started in, which recovery
// moves past every epoch of the crashed run), so bytes left in a slab's
// memory by an earlier use of that heap block never pass for a payload.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace ferrite::montage {

inline constexpr int kMaxThreads = 64;
inline constexpr std::uint64_t kBlockMagic = 0x4d4e5447'4250ull;  // "MNTG" "BP"
inline constexpr std::uint64_t kSlabMagic = 0x4d4e5447'534c4142ull;  // "MNTGSLAB"
inline constexpr std::uint64_t kRootMagic = 0x4d4e5447'524f4f54ull;  // "MNTGROOT"

// Block types (l.42). kFree: never tagged, or reset by a destructor (l.50).
enum BlockType : std::uint64_t { kFree = 0, kPayload = 1, kAnti = 2 };

// The header of every payload block and anti-node (l.38–43). Fields are
// atomics because advancers of other threads read `size` (to write the
// block back); relaxed accesses suffice for all of them (publication goes
// through lin_CAS, a seq_cst 16-byte CAS).
//
// type_word = a 48-bit checksum of the other header words (and the magic)
// << 16 | type. The abstract persistency model may persist a line torn at
// 8-byte words; a torn header (say, a new serial number next to an old
// epoch) fails the checksum and is never taken for a block in use. Every
// header store is followed by seal() before the next persistence verb.
struct alignas(64) PBlkHeader {
  std::atomic<std::uint64_t> type_word;  // checksum << 16 | BlockType (l.42)
  std::atomic<std::uint64_t> epoch;      // l.41: 0 = not (or no longer) a live block
  std::atomic<std::uint64_t> tid_sn;     // l.43: op id = tid << 48 | serial number
  std::atomic<std::uint64_t> uid_run;    // l.43 blk_uid, part 1: run that created the payload
  std::atomic<std::uint64_t> uid_seq;    //   part 2: tid << 40 | per-thread counter
  std::atomic<std::uint64_t> stamp;      // the slab's stamp (see above)
  std::atomic<std::uint64_t> size;       // payload bytes after the header
  std::atomic<std::uint64_t> anti;       // l.40: the anti-node (a pool address; DRAM meaning only)

  std::uint64_t sum() const {
    std::uint64_t h = kBlockMagic;
    for (const auto* w : {&epoch, &tid_sn, &uid_run, &uid_seq, &stamp, &size}) {
      h = (h ^ w->load(std::memory_order_relaxed)) * 0x9e3779b97f4a7c15ull;
      h ^= h >> 29;
    }
    return h >> 16;
  }
  void seal(std::uint64_t type) { type_word.store(sum() << 16 | type, std::memory_order_relaxed); }
  // The type if the header is intact, else ~0.
  std::uint64_t type() const {
    const std::uint64_t w = type_word.load(std::memory_order_relaxed);
    return (w >> 16) == sum() ? (w & 0xffff) : ~std::uint64_t{0};
  }
  void* data() { return reinterpret_cast<char*>(this) + sizeof(PBlkHeader); }
  const void* data() const { return reinterpret_cast<const char*>(this) + sizeof(PBlkHeader); }
};
static_assert(sizeof(PBlkHeader) == 64);
static_assert(offsetof(PBlkHeader, epoch) == 8);
static_assert(offsetof(PBlkHeader, tid_sn) == 16);
static_assert(std::atomic<std::uint64_t>::is_always_lock_free);
using PBlk = PBlkHeader;

inline constexpr std::uint64_t kSnBits = 48;
inline constexpr std::uint64_t kSnMask = (std::uint64_t{1} << kSnBits) - 1;
inline constexpr std::uint64_t make_tid_sn(std::uint64_t tid, std::uint64_t sn) { return tid << kSnBits | sn; }

// DCSS status (l.33–34: "64 for cnt, with last 2 for status"): one word
// holds the attempt's serial number and its status, so that the persistent
// answer to "did operation (t, s) commit?" is one failure-atomic word.
enum DescStatus : std::uint64_t { kInProgress = 0, kCommitted = 1, kFailed = 2 };
inline constexpr std::uint64_t status_word(std::uint64_t sn, std::uint64_t st) { return sn << 2 | st; }
inline constexpr std::uint64_t status_sn(std::uint64_t w) { return w >> 2; }
inline constexpr std::uint64_t status_of(std::uint64_t w) { return w & 3; }

// The per-thread persistent descriptor (l.29–37). Recovery reads `status`
// only; the other words serve the DCSS helpers (they are in the pool
// because the paper puts the whole descriptor there, l.52).
struct alignas(64) Desc {
  std::atomic<std::uint64_t> status;   // status_word(sn, st)  (l.32 tid_sn + l.33 r_c_s)
  std::atomic<std::uint64_t> epoch;    // l.30: the epoch the attempt must linearize in
  std::atomic<std::uint64_t> old_val;  // l.30
  std::atomic<std::uint64_t> old_cnt;  //   the CASObj's counter half when installed
  std::atomic<std::uint64_t> new_val;  // l.30
  std::atomic<std::uint64_t> obj;      // l.33: the CASObj (a DRAM address; informative: a
                                       // helper uninstalls at the object it read the attempt from)
  std::uint64_t tid;                   // constant
  std::uint64_t type;                  // l.31: kDescType
};
static_assert(sizeof(Desc) == 64);
inline constexpr std::uint64_t kDescType = 0x4d4e5447'44455343ull;  // "MNTGDESC"

struct alignas(64) SlabHeader {
  std::uint64_t magic;       // kSlabMagic
  std::uint64_t block_size;  // bytes per block (header included)
  std::uint64_t stamp;       // unique across runs
  std::uint64_t next;        // pool offset of the previous slab (0: none)
  std::uint64_t nblocks;
  std::uint64_t pad[3];
};
static_assert(sizeof(SlabHeader) == 64);
inline constexpr std::size_t kSlabBytes = std::size_t{64} << 10;  // one heap chunk

struct MontageRoot {
  static constexpr std::uint32_t kTypeTag = 0x4d4e5447;  // "MNTG"
  // 2: slabs of every multiple of 64 bytes (EpochSys::class_bytes); 1 had
  // the powers of two only, and its code would file a 1152-byte slab's
  // blocks under the 2 KiB class (overlapping blocks).
  static constexpr std::uint32_t kTypeVersion = 2;
  static constexpr const char* kTypeName = "montage";

  // The first epoch of a fresh root: >= 2, so e-2 never underflows.
  static constexpr std::uint64_t kInitialEpoch = 4;

  MontageRoot() = default;
  // A fresh root for `kind` (a montage::Kind) and `threads` descriptors,
  // initialized here, inside Pool::create_root: its write-back and the
  // header slot's psync cover every field before the root is published,
  // so a crash during creation leaves no root or a complete one (the
  // campaigns' --crash-create found roots published with kind 0 when
  // EpochSys::create set these fields after the publication).
  MontageRoot(std::uint64_t kind_, std::uint64_t threads) : kind(kind_), max_threads(threads) {
    for (int t = 0; t < kMaxThreads; ++t) {
      descs[t].tid = static_cast<std::uint64_t>(t);
      descs[t].type = kDescType;
    }
    global_epoch.store(kInitialEpoch, std::memory_order_relaxed);
  }

  std::uint64_t magic = kRootMagic;
  std::uint64_t kind = 0;  // which structure (montage::Kind)
  std::uint64_t max_threads = 0;
  std::uint64_t pad0[5] = {};
  alignas(64) std::atomic<std::uint64_t> global_epoch{0};  // l.22
  alignas(64) std::atomic<std::uint64_t> slab_head{0};
  alignas(64) Desc descs[kMaxThreads] = {};                 // l.52
  alignas(64) std::uint64_t user[8] = {};
};
static_assert(offsetof(MontageRoot, global_epoch) == 64);
static_assert(offsetof(MontageRoot, slab_head) == 128);
static_assert(offsetof(MontageRoot, descs) == 192);
static_assert(sizeof(MontageRoot) == 192 + 64 * kMaxThreads + 64);

// Structures built on the epoch system (MontageRoot::kind).
enum class Kind : std::uint64_t { kQueue = 1, kHashMap = 2, kBst = 3, kSkipList = 4, kSplitOrdered = 5, kBytesHashMap = 6,
                                  kBytesSkipList = 7, kBytesQueue = 8, kTest = 99 };

}  // namespace ferrite::montage
