// ferrite/crash/sim.h — the crash simulator: a persistence backend that
// models what NVM holds, and the crash images a crash may leave.
//
// Model (x86 / the PBcomb paper's model; docs/crash.md has the details):
//   - The pool's working memory plays the cache. The simulator keeps a
//     separate *media image* of [base, base+size): what NVM holds. Lines are
//     64 bytes; aligned 8-byte words are failure-atomic, so a line may tear
//     at 8-byte boundaries.
//   - pwb(line) records a *pending write-back*: (thread, line, a copy of the
//     line's contents now, the thread's fence epoch, the verb number k).
//   - pfence ends the thread's epoch: its earlier pending write-backs are
//     ordered before its later ones. psync applies all the thread's pending
//     write-backs to the media image (and ends the epoch).
//   - ofence, persist_barrier = pfence; dfence, join_strand = psync;
//     new_strand = nothing (x86 mapping; the strand/HOPS models come later).
//   - Every verb gets a global sequence number k (0-based since attach or
//     settle): crash point k is the instant just before verb k takes effect.
//
// A crash image = media image + an order-respecting subset of the pending
// write-backs (per thread: all of epochs < E plus any subset of epoch E, for
// some E) + any subset of the dirty lines (working != media) at their
// current contents (evictions; only together with E = the thread's current
// epoch for every thread, see docs/crash.md), optionally torn at 8-byte
// boundaries. Image 0 loses every pending write-back and dirty line; image 1
// persists everything (= working memory); images >= 2 are random, drawn
// deterministically from (seed, k, image index).
//
// Thread safety: the verbs are safe from any thread (one mutex around the
// simulator state; the crash hook runs under it). One sim pool at a time.
// The working memory of an attached pool is remapped MAP_PRIVATE (its
// contents are copied back to the file on detach), so fork() snapshots it
// atomically and crashed children never write the file.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "ferrite/persist/persist.h"

namespace ferrite::crash {

// Registers the simulator with persist::set_sim_hooks (idempotent): pools
// opened with backend "sim" are simulated from then on.
void enable_sim();

using Line = std::array<std::uint8_t, persist::kCacheLine>;

struct PendingWriteBack {
  std::uint64_t offset;  // line offset from the pool base
  std::uint64_t k;       // verb number of the pwb
  std::uint32_t thread;  // simulator thread index
  std::uint32_t epoch;   // the thread's fence epoch at the pwb
  Line data;             // line contents at the pwb
};

// The persistence state of a crashed machine, restricted to the lines where
// images can differ (dirty or with a pending write-back).
struct CrashState {
  std::uint64_t k = 0;                   // crash point
  std::size_t size = 0;                  // pool size
  std::vector<std::uint64_t> lines;      // offsets, ascending
  std::vector<Line> media;               // per line: media image contents
  std::vector<Line> working;             // per line: working memory contents
  std::vector<bool> dirty;               // per line: working != media
  std::vector<PendingWriteBack> pending; // ascending k
  std::vector<std::uint32_t> epochs;     // per simulator thread: current epoch
  std::size_t dirty_count() const;
};

struct ImageOptions {
  bool tearing = true;  // random images may tear lines at 8-byte boundaries
};

struct Image {
  int index = 0;
  std::vector<Line> lines;  // parallel to CrashState::lines
  std::uint64_t hash = 0;   // of the line contents (for deduplication)
  std::string how;          // e.g. "random: E=[2,5] 3/7 pending, 2/4 evicted, 1 torn"
};

inline constexpr int kImageAllLost = 0;
inline constexpr int kImageAllPersisted = 1;
// Builds image `index` (deterministic in (seed, state.k, index)).
Image build_image(const CrashState& state, int index, std::uint64_t seed, const ImageOptions& opt = {});
// Writes the image's lines at base (the rest of the range must already hold
// the working memory, which equals media outside CrashState::lines).
void install_image(const CrashState& state, const Image& image, void* base);

namespace sim {

bool attached();
void* base();
std::size_t size();
// Verbs issued since attach/settle (the next crash point's k).
std::uint64_t verbs();
// Everything in working memory becomes durable, pending write-backs are
// dropped, epochs and the verb counter restart at 0 (call when quiescent).
void settle();
// The media image contents of the line holding `p` (tests, debugging).
Line media_line(const void* p);
// Pending write-backs of all threads, ascending k.
std::vector<PendingWriteBack> pending();

// Crash points. The hook runs in the thread that issues verb k, under the
// simulator lock, before the verb takes effect. It typically fork()s.
using CrashHook = void (*)(void* ctx, std::uint64_t k, persist::Verb verb);
void set_crash_hook(CrashHook hook, void* ctx);
// Runs the hook now for k = verbs() (a crash after the last verb).
void crash_now();
// Threads currently blocked waiting for the simulator lock (the campaign
// uses it to let other threads reach a verb before it forks).
int threads_waiting();

// Captures the crash state. capture_locked() is for the crash hook (the
// lock is held); capture() takes the lock. Scans the whole pool for dirty
// lines (O(size)); the rest is O(dirty + pending).
CrashState capture_locked(std::uint64_t k);
CrashState capture();
// In a fork()ed child: stop simulating (verbs become no-ops and never take
// the lock, which the child may have inherited locked).
void enter_child();
// In a crashed child: pools opened from now on (on a crash image file) map
// that file MAP_PRIVATE (fd of the same file), so recovery never writes it.
void set_child_backing_fd(int fd);
// The media image is a memfd: this descriptor (-1 when detached). A crashed
// child writes an image's lines into it (the parent is blocked meanwhile),
// opens it as the pool, and restores the media lines before it exits.
int media_fd();
// The same media image, mapped shared (nullptr when detached): writing it
// changes what media_fd() reads.
std::uint8_t* media_data();

}  // namespace sim
}  // namespace ferrite::crash
