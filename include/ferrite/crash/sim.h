// ferrite/crash/sim.h — the crash simulator: a persistence backend that
// models what NVM holds, and the crash images a crash may leave.
//
// The machine (docs/crash.md §1):
//   - The pool's working memory plays the cache. The simulator keeps a
//     separate *media image* of [base, base+size): what NVM holds. Lines are
//     64 bytes; aligned 8-byte words are failure-atomic.
//   - Every verb gets a global sequence number k (0-based since attach or
//     settle): crash point k is the instant just before verb k takes effect.
//   - A *persistency model* (crash/model.h; sim::set_model, default
//     "abstract") decides what the verbs do and which images a crash may
//     leave:
//       abstract  the PBcomb paper's pwb/pfence/psync: pwb records a pending
//                 write-back (a copy of the line now), pfence only orders a
//                 thread's write-backs (epochs), psync makes them durable;
//                 lines may tear at any 8-byte word.
//       x86       Px86 with clwb + sfence: every fence (pfence, psync, ...)
//                 makes the thread's earlier write-backs durable; a line
//                 persists its stores in order (an image holds media, a
//                 pending copy or the working contents of each line), so it
//                 tears only at words of stores declared multi-word
//                 (persist::declare_store); dirty lines may be evicted at
//                 any time, independently.
//   - Per-line coherence (both): once a copy of a line taken at verb k is
//     durable, older copies of that line pending in other threads are
//     dropped.
//     The store models (hops, hops+, strand; crash/model.h, docs/crash.md
//     §1) persist annotated stores (persist::store) instead; pwbs do nothing
//     there. Code that persists with pwbs is checked under the write-back
//     models above (crash::writeback_model_names()).
//
// Images. Image 0 loses every pending write-back and dirty line (media);
// image 1 persists everything (working memory). images_for enumerates every
// image when the model says they are few, else samples random ones;
// image_at rebuilds any one of them from its index.
//
// Dirty lines are found through write tracking: after attach, settle and
// each capture, clean pool pages are write-protected; the first store to one
// faults, a SIGSEGV handler records the page and unprotects it (faults
// outside the pool go to the previous handler). A capture compares only the
// recorded pages. FERRITE_SIM_TRACKING=0 (or set_write_tracking(false))
// compares the whole pool instead.
//
// Thread safety: the verbs are safe from any thread (one mutex around the
// simulator state; the crash hook runs under it). One sim pool at a time.
// The working memory of an attached pool is remapped MAP_PRIVATE (its
// contents are copied back to the file on detach), so fork() snapshots it
// atomically and crashed children never write the file. The kernel cannot
// write a write-protected pool page: a system call that stores into the
// pool (read(2) into it, say) fails with EFAULT under write tracking.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ferrite/persist/persist.h"

namespace ferrite::crash {

// Registers the simulator with persist::set_sim_hooks (idempotent): pools
// opened with backend "sim" are simulated from then on.
void enable_sim();

using Line = std::array<std::uint8_t, persist::kCacheLine>;

struct PendingWriteBack {
  std::uint64_t offset = 0;  // line offset from the pool base
  std::uint64_t k = 0;       // verb number of the pwb
  std::uint32_t thread = 0;  // simulator thread index
  std::uint32_t epoch = 0;   // the thread's fence epoch at the pwb
  // 8-byte words of the line (bit w = bytes [8w, 8w+8)) covered by a store
  // declared multi-word since the line's previous pwb (by any thread).
  std::uint8_t declared = 0;
  Line data{};               // line contents at the pwb
  friend bool operator==(const PendingWriteBack&, const PendingWriteBack&) = default;
};

// The persistence state of a crashed machine, restricted to the lines where
// images can differ (dirty or with a pending write-back). A plain value:
// copy it, compare it, send it to another process (serialize).
struct CrashState {
  std::string model = "abstract";        // the model that produced it (crash/model.h)
  std::uint64_t k = 0;                   // crash point
  std::size_t size = 0;                  // pool size
  std::vector<std::uint64_t> lines;      // offsets, ascending
  std::vector<Line> media;               // per line: media image contents
  std::vector<Line> working;             // per line: working memory contents
  std::vector<bool> dirty;               // per line: working != media
  // Per line: words covered by a declared multi-word store since the line's
  // last pwb (they may tear between the newest copy and the working value).
  std::vector<std::uint8_t> declared;
  std::vector<PendingWriteBack> pending; // ascending k
  std::vector<std::uint32_t> epochs;     // per simulator thread: current epoch
  std::vector<std::uint64_t> model_data; // model-specific, opaque to the simulator
  std::size_t dirty_count() const;

  // Appends a binary encoding to `out` (same machine, same build).
  void serialize(std::string& out) const;
  // Throws std::invalid_argument on a malformed or truncated encoding.
  static CrashState deserialize(std::string_view in);
  friend bool operator==(const CrashState&, const CrashState&) = default;
};

struct ImageOptions {
  // Images may tear lines at 8-byte words (where the model allows it).
  bool tearing = true;
  // images_for enumerates every image of a crash point when the model has
  // at most `enumerate_lines` optional lines and at most `enumerate_max`
  // choices (each image is a recovery in its own process: 64 keeps a crash
  // point within ~6x today's 10 images); else it samples.
  std::size_t enumerate_lines = 12;
  std::uint64_t enumerate_max = 64;
};

struct Image {
  int index = 0;
  std::vector<Line> lines;  // parallel to CrashState::lines
  std::uint64_t hash = 0;   // of the line contents (for deduplication)
  std::string how;          // e.g. "random: E=[2/5] 3/7 pending applied, 2/4 dirty evicted, 1 torn"
};

struct ImageSet {
  std::vector<Image> images;  // distinct images (by hash), ascending index
  // Every image the model allows (under the options) is in `images`.
  bool exhaustive = false;
  // Distinct images the model allows at this crash point. Exact when
  // possible_exact (always when exhaustive; always under x86, torn images
  // included); otherwise an upper bound (abstract: ignores that orders and
  // per-line coherence exclude combinations, and counts every word mix of
  // tearable lines), so images.size() / possible is a lower bound of the
  // coverage. May be astronomically large (a double).
  double possible = 0;
  bool possible_exact = false;
  std::uint64_t built = 0;         // images constructed incl. duplicates
  bool enumerated = false;         // the model's enumeration was run (indices 2 .. choices+1)
  std::size_t optional_lines = 0;  // lines with more than one possible content
};

inline constexpr int kImageAllLost = 0;
inline constexpr int kImageAllPersisted = 1;

// The images of a crash point, deterministic in (state, seed, random, opt).
// Index 0: all lost (media); 1: all persisted (working memory). If the
// model's enumeration is small (ImageOptions::enumerate_*), indices 2 ..
// choices+1 are the enumeration, in the model's order, and `exhaustive` is
// set unless some images (abstract: torn ones) are only sampled; then
// `random` random images follow (indices choices+2 ..). Otherwise indices
// 2 .. random+1 are random. Duplicates (by hash) are counted in `built` and
// left out, so indices may skip. Throws std::invalid_argument if
// state.model is not a registered model.
ImageSet images_for(const CrashState& state, int random, std::uint64_t seed, const ImageOptions& opt = {});
// The image with this index as images_for builds it (also a duplicate's,
// and any random index: random images are unbounded); std::nullopt for a
// negative index or one past an exhaustive enumeration.
std::optional<Image> image_at(const CrashState& state, int index, std::uint64_t seed, const ImageOptions& opt = {});
// image_at, or past an exhaustive enumeration a random image of the model
// (still a possible image). Kept for older callers.
Image build_image(const CrashState& state, int index, std::uint64_t seed, const ImageOptions& opt = {});
// Writes the image's lines at base (the rest of the range must already hold
// the working memory, which equals media outside CrashState::lines).
void install_image(const CrashState& state, const Image& image, void* base);

namespace sim {

// Selects the persistency model for pools attached from now on (default
// "abstract"). Throws std::invalid_argument for an unknown name
// (crash::model_names() lists them).
void set_model(std::string_view name);
std::string_view model();

// Write tracking (see above; default on unless FERRITE_SIM_TRACKING=0).
// Takes effect at the next attach. write_tracking(): in force for the
// attached pool.
void set_write_tracking(bool on);
bool write_tracking();

bool attached();
void* base();
std::size_t size();
// Verbs issued since attach/settle (the next crash point's k).
std::uint64_t verbs();
// Everything in working memory becomes durable, pending write-backs are
// dropped, epochs and the verb counter restart at 0 (call when quiescent).
// keep_count: the verb counter goes on (the crash points already explored
// keep their numbers — a campaign that crashes pool creation).
void settle(bool keep_count = false);
// The media image contents of the line holding `p` (tests, debugging).
Line media_line(const void* p);
// Pending write-backs of all threads, ascending k.
std::vector<PendingWriteBack> pending();

// Crash points. The hook runs in the thread that issues verb k, under the
// simulator lock, before the verb takes effect. It typically fork()s.
using CrashHook = void (*)(void* ctx, std::uint64_t k, persist::Verb verb);
void set_crash_hook(CrashHook hook, void* ctx);
// Controlled scheduling: called by a thread about to issue a verb, before it
// takes the simulator lock (it may block there until the campaign's
// scheduler lets it through). Set and cleared only while no verb runs.
using Turnstile = void (*)(void* ctx);
void set_turnstile(Turnstile t, void* ctx);
// Runs the hook now for k = verbs() (a crash after the last verb).
void crash_now();

// Captures the crash state. capture_locked() is for the crash hook (the
// lock is held); capture() takes the lock. O(pages written since the last
// capture + pending) with write tracking, O(size) without. Outside a
// crashed child it also write-protects the pages it found clean again.
CrashState capture_locked(std::uint64_t k);
CrashState capture();
// In a fork()ed child: stop simulating (verbs become no-ops and never take
// the lock, which the child may have inherited locked).
void enter_child();
// In a crashed child: the persistence verbs issued since the last pool was
// attached (counted, not simulated). They are the verbs a live simulator
// would number 0, 1, ... on the same code path: a campaign picks the points
// at which to crash recovery from the count of a plain restart.
std::uint64_t child_verbs();
// In a child of a worker that crashes recovery (campaign, crash during
// recovery): simulate again (pools attached from now on are live).
void leave_child();
// In a crashed child: pools opened from now on (on a crash image file) map
// that file MAP_PRIVATE (fd of the same file), so recovery never writes it.
void set_child_backing_fd(int fd);
// In a crashed child, before it opens the next image of the same file: make
// the reusable view of a small pool (kept at the pool's base between
// restarts) equal to `image` (the file's `size` bytes). A view of another
// size is dropped. No-op without a view.
void sync_child_view(const std::uint8_t* image, std::size_t size);
// The media image is a memfd: this descriptor (-1 when detached). A crashed
// child writes an image's lines into it (the parent is blocked meanwhile),
// opens it as the pool, and restores the media lines before it exits.
int media_fd();
// The same media image, mapped shared (nullptr when detached): writing it
// changes what media_fd() reads.
std::uint8_t* media_data();

}  // namespace sim
}  // namespace ferrite::crash
