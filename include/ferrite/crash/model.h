// ferrite/crash/model.h — persistency models: the rules that decide which
// images a crash may leave (docs/crash.md §1).
//
// A model has two halves, both behind this interface:
//
//   1. A state machine per simulated pool (ModelRun, made by Model::start at
//      attach). The simulator feeds it every persistence verb of every
//      thread, every declared multi-word store (persist::declare_store) and
//      every annotated store (persist::store, store_bytes), in the
//      global order in which the simulator serialises them (one mutex; verb
//      k is the k-th event of kind verb). The run decides what a verb does:
//      record a pending write-back, order, make write-backs durable (it
//      writes the media image through Machine). At a crash it describes
//      what is still undecided in the CrashState (pending write-backs,
//      per-thread epochs, per-line annotations, model-specific words).
//
//   2. An image space per captured state (ImageSpace, made by Model::space):
//      how many images a crash may leave, the c-th of an enumeration of
//      them, and random ones. images_for / image_at (sim.h) number and
//      deduplicate them; a CrashState names its model, so nothing else has
//      to be passed around.
//
// Built-in models: the write-back models ("abstract", "x86") in
// src/crash/model_writeback.cc, in which pwbs are what persists; the store
// models ("hops", "hops+", "strand") in src/crash/model_store.cc, in which
// annotated stores are what persists (docs/crash.md §1). A new model
// implements the three classes and registers itself in the table of
// src/crash/model.cc.
//
// Thread safety: Model and ImageSpace are immutable after construction
// (const methods only; an ImageSpace must not outlive its CrashState). A
// ModelRun is only called under the simulator lock.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "ferrite/crash/sim.h"
#include "ferrite/persist/persist.h"

namespace ferrite::crash {

// A persistence verb as the simulator numbers it.
struct VerbEvent {
  persist::Verb verb = persist::Verb::kPwb;
  std::uint32_t thread = 0;            // simulator thread index (order of first event)
  std::uint64_t k = 0;                 // the verb's global number (crash point k is just before it)
  // pwb only (one event per line; lines outside the pool are not reported):
  std::uint64_t offset = 0;            // the line's offset from the pool base
  const std::uint8_t* line = nullptr;  // the line's working contents now (kCacheLine bytes)
};

// A store the model is told about, clipped to the pool: a declared
// multi-word store (persist::declare_store: only its tearing matters) or an
// annotated store (persist::store / store_bytes: under the store models the
// store that persists; its bytes are in the working memory already).
struct StoreEvent {
  enum class Kind : std::uint8_t { kDeclared, kStored };
  Kind kind = Kind::kDeclared;
  std::uint32_t thread = 0;
  std::uint64_t k = 0;       // verbs before it: it lies between verb k-1 and verb k
  std::uint64_t offset = 0;  // first byte, from the pool base
  std::uint64_t size = 0;    // bytes
};

// A load of pool memory. Only the litmus tool reports loads (the simulator
// cannot see them; it sees lock hand-offs, LockEvent): the hops+ model's
// hardware history follows them.
struct LoadEvent {
  std::uint32_t thread = 0;
  std::uint64_t k = 0;
  std::uint64_t offset = 0;
  std::uint64_t size = 0;
};

// A lock hand-off of the program (persist::note_acquired / note_releasing:
// logging::Lock, the litmus tool's acquire / release). The hops+ model's
// hardware history follows them: the lock word's coherence is the load that
// orders the next critical section after the previous one.
struct LockEvent {
  std::uint32_t thread = 0;
  std::uint64_t k = 0;
  std::uint64_t lock = 0;  // the lock's identity (an address; a litmus lock's index)
  bool acquired = false;   // false: being released
};

// The memories of a simulated pool, owned by the simulator. A run reads the
// working memory (the cache) and writes the media image (what NVM holds)
// only through write_media, so the simulator knows which lines changed.
class Machine {
 public:
  virtual std::size_t size() const = 0;
  virtual const std::uint8_t* working() const = 0;
  virtual const std::uint8_t* media() const = 0;
  // Makes `data` the media contents of the line at `offset` (line aligned).
  virtual void write_media(std::uint64_t offset, const Line& data) = 0;

 protected:
  ~Machine() = default;
};

// A model's state machine for one attached pool.
class ModelRun {
 public:
  virtual ~ModelRun() = default;
  // Verb e.k of thread e.thread takes effect (after the crash hook ran for
  // e.k). For kPwb, one call per line of the pool written back.
  virtual void on_verb(const VerbEvent& e) = 0;
  // A declared or annotated store (after it reached working memory).
  virtual void on_store(const StoreEvent& e) = 0;
  // A load (litmus tool only). Models that ignore loads do nothing.
  virtual void on_load(const LoadEvent& /*e*/) {}
  // A lock acquired or about to be released. Models that ignore lock
  // hand-offs do nothing.
  virtual void on_lock(const LockEvent& /*e*/) {}
  // sim::settle(): the media image already equals the working memory;
  // forget everything pending, epochs restart at 0.
  virtual void settle() = 0;
  // Pending write-backs of every thread, ascending k (sim::pending()).
  virtual std::vector<PendingWriteBack> pending() const = 0;
  // A crash. Called with cs.k, cs.size, cs.model set and cs.lines holding
  // the dirty lines: fill what the model keeps (pending write-backs,
  // epochs, model_data) and append to cs.lines every other line whose image
  // contents may differ from media (unsorted; the simulator sorts, removes
  // duplicates and fills media/working/dirty).
  virtual void capture(CrashState& cs) const = 0;
  // Then, with cs.lines final: per-line model data (cs.declared).
  virtual void capture_lines(CrashState& cs) const = 0;
};

// The images a crash may leave, for one captured state and options.
// Enumerated images are numbered by a choice c in [0, choices); several
// choices may give the same image (images_for deduplicates).
class ImageSpace {
 public:
  virtual ~ImageSpace() = default;
  std::size_t optional_lines = 0;  // lines with more than one possible content
  double choices = 0;              // size of the enumeration (may exceed 2^64: then never enumerated)
  // Enumerating every choice yields every image the model allows under the
  // options (false: some images, e.g. torn ones, are only sampled).
  bool complete = false;
  // Distinct images the model allows: exact if possible_exact, else an
  // upper bound (images_for makes it exact whenever it enumerates completely).
  double possible = 0;
  bool possible_exact = false;

  // Line contents (parallel to CrashState::lines) of choice c < choices;
  // `how` receives a one-line description.
  virtual std::vector<Line> enumerated(std::uint64_t c, std::string* how) const = 0;
  // A random image, a deterministic function of (seed, state k, index).
  virtual std::vector<Line> sampled(int index, std::uint64_t seed, std::string* how) const = 0;
};

class Model {
 public:
  virtual ~Model() = default;
  virtual std::string_view name() const = 0;
  virtual std::string_view summary() const = 0;  // one line, for --list / docs
  virtual std::unique_ptr<ModelRun> start(Machine& machine) const = 0;
  // `cs` must outlive the returned space.
  virtual std::unique_ptr<ImageSpace> space(const CrashState& cs, const ImageOptions& opt) const = 0;
  // Does a pfence make the issuing thread's earlier write-backs durable
  // (persist::pfence_is_durable under the simulator)? Only x86's does.
  virtual bool pfence_durable() const { return false; }
  // The rules this model is made of (the names make_model_without accepts).
  virtual std::vector<std::string> rules() const { return {}; }
};

// "abstract", "hops", "hops+", "strand", "x86"; nullptr if unknown.
const Model* find_model(std::string_view name);
// Registered models, sorted by name.
std::vector<std::string> model_names();
// The write-back models ("abstract", "x86"): those in which pwb/pfence/psync
// make stores durable. Code that persists with pwbs (every structure but
// the logging library) is checked under these; under the store models its
// pwbs do nothing (docs/crash.md §1).
std::vector<std::string> writeback_model_names();
// The store models ("hops", "hops+", "strand"): annotated stores persist.
std::vector<std::string> store_model_names();
// Empty under a write-back model; under a store model, why a campaign can't
// crash pool and structure creation: creation persists through pwb/psync,
// which a store model does not execute (it persists annotated stores only),
// so every image of a crash inside creation would hold a pool that never
// was durable. (run_campaign throws std::invalid_argument with this text.)
std::string crash_create_needs_writeback(std::string_view model);

// A store model with one of its rules removed (Model::rules() names them),
// for the tests that show each rule is needed (its CrashStates carry the
// registered model's name). Throws std::invalid_argument for an unknown
// model or rule, or a write-back model.
std::unique_ptr<Model> make_model_without(std::string_view model, std::string_view rule);

// A crash state of a machine captured without the simulator (the litmus
// tool): every line whose working contents differ from media, the lines the
// run adds, sorted, with media/working/dirty/declared filled.
CrashState capture_state(const Machine& m, const ModelRun& run, std::string_view model, std::uint64_t k);

// The image space images_for uses (for tools and tests): throws
// std::invalid_argument if cs.model is not a registered model.
std::unique_ptr<ImageSpace> image_space(const CrashState& cs, const ImageOptions& opt = {});

}  // namespace ferrite::crash
