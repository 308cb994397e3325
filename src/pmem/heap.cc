// src/pmem/heap.cc — the pool's heap: per-thread arenas of size-classed
// blocks carved from 64 KiB chunks, a persistent chunk map, volatile free
// lists, and recovery from a technique's notion of liveness.
//
// Persistence: the only persistent allocator state is the chunk map. It is
// written (+ pwb + psync) when a chunk is assigned to a size class or a run,
// and when recovery or a run free returns chunks. alloc/free of small blocks
// issue no persistence verb at all (docs/architecture.md: allocator
// metadata is volatile): a crash simply forgets the free lists, and recovery rebuilds
// them from what the technique reports live.
#include <algorithm>
#include <cstring>

#include "internal.h"

namespace ferrite::pmem {

namespace L = layout;
using detail::blocks_per_chunk;
using detail::class_size;

namespace detail {

int class_for(std::size_t n) {
  auto it = std::lower_bound(L::kSizeClasses.begin(), L::kSizeClasses.end(), n);
  return static_cast<int>(it - L::kSizeClasses.begin());
}

std::vector<bool> orphan_tails(const std::vector<std::uint32_t>& map) {
  std::vector<bool> orphan(map.size(), false);
  for (std::size_t i = 0; i < map.size();) {
    const std::uint32_t e = map[i];
    if (L::chunk_kind(e) == L::kLargeHead && L::chunk_arg(e) >= 1 &&
        i + L::chunk_arg(e) <= map.size()) {
      i += L::chunk_arg(e);
      continue;
    }
    if (e == L::kLargeTail) orphan[i] = true;
    ++i;
  }
  return orphan;
}

}  // namespace detail

Heap::Impl::Impl(const std::string& path, char* base, const L::HeaderSlot& h, int arenas)
    : path_(path),
      base_(base),
      heap_(base + h.heap_offset),
      count_(h.chunk_count),
      map_(reinterpret_cast<std::uint32_t*>(base + h.chunk_map_offset)),
      arenas_(arenas),
      arena_(new sync::CachePadded<Arena>[static_cast<std::size_t>(arenas) + 1]),
      used_(count_, 0),
      pending_(count_, 0) {
  // The map was validated by load_and_validate before mapping. Every block
  // of every assigned chunk counts as allocated until recovery.
  std::vector<std::uint32_t> copy(map_, map_ + count_);
  const auto orphan = detail::orphan_tails(copy);
  std::int64_t blocks = 0, bytes = 0;
  std::uint64_t used = 0;
  for (std::uint64_t i = 0; i < count_; ++i) {
    const std::uint32_t e = copy[i];
    if (e == L::kChunkFree || orphan[i]) continue;
    used_[i] = 1;
    pending_[i] = 1;
    ++used;
    if (L::is_small(e)) {
      const int c = static_cast<int>(L::chunk_kind(e)) - 1;
      blocks += blocks_per_chunk(c);
      bytes += static_cast<std::int64_t>(blocks_per_chunk(c)) * class_size(c);
    } else if (L::chunk_kind(e) == L::kLargeHead) {
      blocks += 1;
      bytes += static_cast<std::int64_t>(L::chunk_arg(e) * L::kChunkSize);
    }
  }
  while (hint_ < count_ && used_[hint_]) ++hint_;
  chunks_used_.store(used, std::memory_order_relaxed);
  base_blocks_.store(blocks, std::memory_order_relaxed);
  base_bytes_.store(bytes, std::memory_order_relaxed);
  recovered_.store(used == 0, std::memory_order_relaxed);
}

std::int64_t Heap::Impl::chunk_of(const void* p) const {
  const char* c = static_cast<const char*>(p);
  if (c < heap_ || c >= heap_ + count_ * L::kChunkSize) return -1;
  return static_cast<std::int64_t>(static_cast<std::uint64_t>(c - heap_) / L::kChunkSize);
}

std::uint64_t Heap::Impl::head_of(std::uint64_t i) const {
  while (i > 0 && entry(i) == L::kLargeTail) --i;
  return i;
}

char* Heap::Impl::take_chunks(std::uint32_t n, std::uint32_t e, std::size_t request) {
  std::uint64_t first = 0;
  {
    std::lock_guard<std::mutex> g(chunk_mu_);
    std::uint64_t run = 0;
    bool found = false;
    for (std::uint64_t i = hint_; i < count_; ++i) {
      run = used_[i] ? 0 : run + 1;
      if (run == n) {
        first = i + 1 - n;
        found = true;
        break;
      }
    }
    if (!found)
      detail::fail(Errc::kFull, path_,
                   "heap full: no " + std::to_string(n) + " free chunk(s) of 64 KiB for a " +
                       std::to_string(request) + "-byte allocation (" +
                       std::to_string(chunks_used_.load(std::memory_order_relaxed)) + " of " +
                       std::to_string(count_) + " chunks in use)");
    for (std::uint64_t i = first; i < first + n; ++i) used_[i] = 1;
    while (hint_ < count_ && used_[hint_]) ++hint_;
    chunks_used_.fetch_add(n, std::memory_order_relaxed);
  }
  if (n > 1) {
    for (std::uint64_t i = first + 1; i < first + n; ++i) set_entry(i, L::kLargeTail);
    persist::pwb(&map_[first + 1], 4 * (n - 1));
    // PERSIST: tails are durable-ordered before the head that claims them, so
    // a crash leaves either a whole run or orphan tails (read as free).
    persist::pfence();
  }
  set_entry(first, e);
  // PERSIST: layout.h invariant 1 — the map entry is durable before any
  // block of the chunk is handed out (and thus before anything can point
  // into it).
  persist::pwb(&map_[first], 4);
  persist::psync();
  return chunk_addr(first);
}

void Heap::Impl::release_chunks(std::uint64_t first, std::uint32_t n) {
  // CRASH: the head is cleared (and ordered) before the tails, so an
  // interrupted release leaves orphan tails, which read as free.
  set_entry(first, L::kChunkFree);
  persist::pwb(&map_[first], 4);
  if (n > 1) {
    persist::pfence();
    for (std::uint64_t i = first + 1; i < first + n; ++i) set_entry(i, L::kChunkFree);
    persist::pwb(&map_[first + 1], 4 * (n - 1));
  }
  persist::psync();
  std::lock_guard<std::mutex> g(chunk_mu_);
  for (std::uint64_t i = first; i < first + n; ++i) used_[i] = 0;
  hint_ = std::min(hint_, first);
  chunks_used_.fetch_sub(n, std::memory_order_relaxed);
}

namespace {
// Single-writer counter update (the arena's owner): no RMW needed.
inline void bump(std::atomic<std::int64_t>& c, std::int64_t d) {
  c.store(c.load(std::memory_order_relaxed) + d, std::memory_order_relaxed);
}
}  // namespace

bool Heap::Impl::refill_from_recovered(int c, ClassState& cs) {
  std::lock_guard<std::mutex> g(recovered_mu_);
  auto& v = recovered_free_[c];
  if (v.empty()) return false;
  cs.free = std::move(v.back());
  v.pop_back();
  return !cs.free.empty();
}

void* Heap::Impl::alloc(std::size_t n, std::size_t align, int a) {
  if (n == 0) n = 1;
  if (align > L::kChunkSize)
    detail::fail(Errc::kInvalidArgument, path_,
                 "alignment " + std::to_string(align) + " exceeds the chunk size (64 KiB)");
  // Power-of-two classes are aligned to their size; others to 64.
  if (align > 64) {
    std::size_t s = std::max(n, align);
    std::size_t p2 = 1;
    while (p2 < s) p2 <<= 1;
    n = p2;
  }
  Arena& ar = *arena_[static_cast<std::size_t>(a)];
  if (n > L::kChunkSize) {
    const std::uint64_t k = (n + L::kChunkSize - 1) / L::kChunkSize;
    if (k > count_ || k > L::kMaxRunChunks)
      detail::fail(Errc::kFull, path_,
                   "allocation of " + std::to_string(n) + " bytes exceeds the heap (" +
                       std::to_string(count_) + " chunks of 64 KiB)");
    const auto run = static_cast<std::uint32_t>(k);
    char* p = take_chunks(run, L::large_head_entry(run), n);
    bump(ar.blocks, 1);
    bump(ar.bytes, static_cast<std::int64_t>(k * L::kChunkSize));
    return p;
  }
  const int c = detail::class_for(n);
  const std::uint32_t bs = class_size(c);
  ClassState& cs = ar.cls[c];
  void* p;
  if (!cs.free.empty()) {
    p = cs.free.back();
    cs.free.pop_back();
  } else if (cs.next == cs.end && refill_from_recovered(c, cs)) {
    p = cs.free.back();
    cs.free.pop_back();
  } else {
    if (cs.next == cs.end) {
      char* chunk = take_chunks(1, L::small_entry(c), n);
      cs.next = chunk;
      cs.end = chunk + static_cast<std::size_t>(blocks_per_chunk(c)) * bs;
    }
    // Consecutive addresses within the thread's chunk (persistence
    // principle 3 of the PBcomb paper).
    p = cs.next;
    cs.next += bs;
  }
  bump(ar.blocks, 1);
  bump(ar.bytes, bs);
  return p;
}

void Heap::Impl::free(void* p, int a) {
  if (p == nullptr) return;
  const std::int64_t ci = chunk_of(p);
  if (ci < 0) detail::fail(Errc::kInvalidArgument, path_, "free of " + detail::hex(reinterpret_cast<std::uintptr_t>(p)) + ": not in the heap");
  const auto i = static_cast<std::uint64_t>(ci);
  // A block of a chunk that awaits recovery stays allocated until recovery
  // decides (it is free then unless the technique marks it): dropping the
  // free here avoids handing it out twice.
  if (pending_[head_of(i)]) return;
  const std::uint32_t e = entry(i);
  Arena& ar = *arena_[static_cast<std::size_t>(a)];
  if (L::is_small(e)) {
    const int c = static_cast<int>(L::chunk_kind(e)) - 1;
    const std::uint32_t bs = class_size(c);
    const auto off = static_cast<std::size_t>(static_cast<char*>(p) - chunk_addr(i));
    if (off % bs != 0 || off / bs >= blocks_per_chunk(c))
      detail::fail(Errc::kInvalidArgument, path_,
                   "free of " + detail::hex(reinterpret_cast<std::uintptr_t>(p)) + ": not the start of a block");
    ar.cls[c].free.push_back(p);
    bump(ar.blocks, -1);
    bump(ar.bytes, -static_cast<std::int64_t>(bs));
    return;
  }
  if (L::chunk_kind(e) == L::kLargeHead && static_cast<char*>(p) == chunk_addr(i)) {
    const std::uint32_t run = L::chunk_arg(e);
    release_chunks(i, run);
    bump(ar.blocks, -1);
    bump(ar.bytes, -static_cast<std::int64_t>(run * L::kChunkSize));
    return;
  }
  detail::fail(Errc::kInvalidArgument, path_,
               "free of " + detail::hex(reinterpret_cast<std::uintptr_t>(p)) + ": not an allocated block");
}

std::size_t Heap::Impl::block_size(const void* p) const {
  const std::int64_t ci = chunk_of(p);
  if (ci < 0) detail::fail(Errc::kInvalidArgument, path_, "block_size: pointer not in the heap");
  const std::uint64_t h = head_of(static_cast<std::uint64_t>(ci));
  const std::uint32_t e = entry(h);
  if (L::is_small(e)) return class_size(static_cast<int>(L::chunk_kind(e)) - 1);
  if (L::chunk_kind(e) == L::kLargeHead) return L::chunk_arg(e) * L::kChunkSize;
  detail::fail(Errc::kInvalidArgument, path_, "block_size: pointer into a free chunk");
}

std::size_t Heap::Impl::block_at(const void* p) const noexcept {
  const std::int64_t ci = chunk_of(p);
  if (ci < 0) return 0;
  const std::uint64_t h = head_of(static_cast<std::uint64_t>(ci));
  const std::uint32_t e = entry(h);
  const auto in_block = static_cast<std::uint64_t>(static_cast<const char*>(p) - chunk_addr(h));
  if (L::is_small(e)) {
    const int cls = static_cast<int>(L::chunk_kind(e)) - 1;
    const std::uint32_t bs = class_size(cls);
    if (in_block % bs != 0 || in_block / bs >= blocks_per_chunk(cls)) return 0;
    return bs;
  }
  if (L::chunk_kind(e) == L::kLargeHead && in_block == 0) return L::chunk_arg(e) * L::kChunkSize;
  return 0;
}

const void* Heap::Impl::block_containing(const void* p, std::size_t* size) const noexcept {
  *size = 0;
  const std::int64_t ci = chunk_of(p);
  if (ci < 0) return nullptr;
  const std::uint64_t h = head_of(static_cast<std::uint64_t>(ci));
  const std::uint32_t e = entry(h);
  const char* chunk = chunk_addr(h);
  if (L::is_small(e)) {
    const int cls = static_cast<int>(L::chunk_kind(e)) - 1;
    const std::uint32_t bs = class_size(cls);
    const auto i = static_cast<std::uint64_t>(static_cast<const char*>(p) - chunk) / bs;
    if (i >= blocks_per_chunk(cls)) return nullptr;  // the chunk's unused tail
    *size = bs;
    return chunk + i * bs;
  }
  if (L::chunk_kind(e) == L::kLargeHead) {
    *size = L::chunk_arg(e) * L::kChunkSize;
    return chunk;
  }
  return nullptr;
}

void Heap::Impl::recover(const std::function<void(const std::function<void(void*)>&)>* trace,
                         const std::function<bool(void*, std::size_t)>* scan) {
  if (recovered_.load(std::memory_order_relaxed)) return;
  // live[i]: one bit per block of pending chunk i (a single bit for runs).
  std::vector<std::vector<std::uint64_t>> live(count_);
  auto nblocks = [&](std::uint32_t e) -> std::uint32_t {
    return L::is_small(e) ? blocks_per_chunk(static_cast<int>(L::chunk_kind(e)) - 1) : 1;
  };
  for (std::uint64_t i = 0; i < count_; ++i)
    if (pending_[i] && entry(i) != L::kLargeTail) live[i].assign((nblocks(entry(i)) + 63) / 64, 0);
  auto mark = [&](void* p) {
    const std::int64_t ci = chunk_of(p);
    if (ci < 0) return;
    const std::uint64_t h = head_of(static_cast<std::uint64_t>(ci));
    if (!pending_[h] || live[h].empty()) return;
    const std::uint32_t e = entry(h);
    std::size_t j = 0;
    if (L::is_small(e)) {
      const std::uint32_t bs = class_size(static_cast<int>(L::chunk_kind(e)) - 1);
      j = static_cast<std::size_t>(static_cast<char*>(p) - chunk_addr(h)) / bs;
      if (j >= nblocks(e)) return;  // the chunk's unused tail
    }
    live[h][j / 64] |= std::uint64_t{1} << (j % 64);
  };
  if (root_offsets_)
    for (std::uint64_t off : root_offsets_()) mark(base_ + off);
  if (trace != nullptr) {
    const std::function<void(void*)> m = mark;
    (*trace)(m);
  }
  // Rebuild, highest chunk first so that LIFO pops hand out ascending
  // addresses (lowest chunk first); the free blocks of partly live chunks go
  // to the shared recovered lists, per chunk.
  std::int64_t blocks = 0, bytes = 0;
  std::vector<std::uint64_t> freed;
  bool runs_freed = false;
  for (std::uint64_t i = count_; i-- > 0;) {
    if (!pending_[i] || live[i].empty()) continue;
    const std::uint32_t e = entry(i);
    const std::uint32_t nb = nblocks(e);
    const std::uint32_t bs = L::is_small(e) ? class_size(static_cast<int>(L::chunk_kind(e)) - 1)
                                            : static_cast<std::uint32_t>(0);
    const std::size_t run_bytes = L::is_small(e) ? bs : L::chunk_arg(e) * L::kChunkSize;
    std::uint32_t nlive = 0;
    for (std::uint32_t j = 0; j < nb; ++j) {
      bool is = (live[i][j / 64] >> (j % 64)) & 1;
      if (!is && scan != nullptr) {
        is = (*scan)(chunk_addr(i) + static_cast<std::size_t>(j) * bs, run_bytes);
        if (is) live[i][j / 64] |= std::uint64_t{1} << (j % 64);
      }
      nlive += is ? 1 : 0;
    }
    if (nlive == 0) {
      const std::uint32_t run = L::is_small(e) ? 1 : L::chunk_arg(e);
      // PERSIST: a freed single chunk's entry is not written back. CRASH:
      // the media may keep it assigned; every open recomputes the map from
      // the roots' traces (nothing else is trusted), so the next recovery
      // frees it again, and a chunk handed out again is written back by
      // take_chunks (invariant 1). Mutation testing found that write-back
      // never needed (docs/crash.md §6).
      set_entry(i, L::kChunkFree);
      if (run > 1) {
        // PERSIST: a freed run IS written back (head, then tails, as in
        // release_chunks) before the psync below, i.e. before any of its
        // chunks can be handed out again. CRASH: a stale run head left on
        // the media would claim a chunk of the run that a later single
        // allocation took, and the next recovery, finding no live block in
        // the run, would free that live chunk with it.
        persist::pwb(&map_[i], 4);
        persist::pfence();
        for (std::uint64_t t = i + 1; t < i + run; ++t) set_entry(t, L::kChunkFree);
        persist::pwb(&map_[i + 1], 4 * (run - 1));
        runs_freed = true;
      }
      for (std::uint64_t t = i; t < i + run; ++t) freed.push_back(t);
      continue;
    }
    blocks += nlive;
    bytes += static_cast<std::int64_t>(nlive) * static_cast<std::int64_t>(run_bytes);
    if (nlive == nb) continue;
    const int c = static_cast<int>(L::chunk_kind(e)) - 1;  // runs are all-or-nothing
    std::vector<void*> fl;
    fl.reserve(nb - nlive);
    for (std::uint32_t j = nb; j-- > 0;)
      if (!((live[i][j / 64] >> (j % 64)) & 1))
        fl.push_back(chunk_addr(i) + static_cast<std::size_t>(j) * bs);
    std::lock_guard<std::mutex> g(recovered_mu_);
    recovered_free_[c].push_back(std::move(fl));
  }
  // Orphan run tails (a crash inside a run allocation/free): clear them.
  {
    std::vector<std::uint32_t> copy(count_);
    for (std::uint64_t i = 0; i < count_; ++i) copy[i] = entry(i);
    const auto orphan = detail::orphan_tails(copy);
    // Not written back: an orphan tail reads as free on the media, and a
    // run allocated over it writes its entry back.
    for (std::uint64_t i = 0; i < count_; ++i)
      if (orphan[i]) set_entry(i, L::kChunkFree);
  }
  if (runs_freed) persist::psync();  // PERSIST: the freed runs, before any is handed out
  {
    std::lock_guard<std::mutex> g(chunk_mu_);
    for (std::uint64_t t : freed) {
      used_[t] = 0;
      hint_ = std::min(hint_, t);
    }
    chunks_used_.fetch_sub(freed.size(), std::memory_order_relaxed);
  }
  std::fill(pending_.begin(), pending_.end(), 0);
  base_blocks_.store(blocks, std::memory_order_relaxed);
  base_bytes_.store(bytes, std::memory_order_relaxed);
  recovered_.store(true, std::memory_order_relaxed);
}

Heap::Stats Heap::Impl::stats() const {
  std::int64_t blocks = base_blocks_.load(std::memory_order_relaxed);
  std::int64_t bytes = base_bytes_.load(std::memory_order_relaxed);
  for (int a = 0; a <= arenas_; ++a) {
    blocks += arena_[static_cast<std::size_t>(a)]->blocks.load(std::memory_order_relaxed);
    bytes += arena_[static_cast<std::size_t>(a)]->bytes.load(std::memory_order_relaxed);
  }
  return Stats{count_, chunks_used_.load(std::memory_order_relaxed),
               static_cast<std::size_t>(std::max<std::int64_t>(blocks, 0)),
               static_cast<std::size_t>(std::max<std::int64_t>(bytes, 0))};
}

// ------------------------------------------------------------ Heap facade

namespace {
void check_tid(int arenas, const std::string& path, int tid) {
  if (tid < 0 || tid >= arenas)
    detail::fail(Errc::kInvalidArgument, path,
                 "thread id " + std::to_string(tid) + " outside [0, " + std::to_string(arenas) +
                     ") (PoolOptions::arenas)");
}
}  // namespace

std::size_t Heap::max_block() const { return L::kChunkSize; }
int Heap::arenas() const { return impl_->arenas_; }
void* Heap::alloc(std::size_t n, int tid) {
  check_tid(impl_->arenas_, impl_->path_, tid);
  return impl_->alloc(n, 0, tid);
}
void Heap::free(void* p, int tid) {
  check_tid(impl_->arenas_, impl_->path_, tid);
  impl_->free(p, tid);
}
std::size_t Heap::block_size(const void* p) const { return impl_->block_size(p); }
std::size_t Heap::block_at(const void* p) const noexcept { return impl_->block_at(p); }
const void* Heap::block_containing(const void* p, std::size_t* size) const noexcept {
  return impl_->block_containing(p, size);
}
void Heap::recover_by_trace(
    const std::function<void(const std::function<void(void*)>& mark)>& trace) {
  impl_->recover(&trace, nullptr);
}
void Heap::recover_by_scan(const std::function<bool(void* block, std::size_t size)>& is_live) {
  impl_->recover(nullptr, &is_live);
}
bool Heap::recovered() const { return impl_->recovered_.load(std::memory_order_relaxed); }
Heap::Stats Heap::stats() const { return impl_->stats(); }

}  // namespace ferrite::pmem
