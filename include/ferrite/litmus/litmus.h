// ferrite/litmus/litmus.h — persistency litmus tests (docs/litmus.md).
//
// A litmus test is a few threads of stores, loads and persist verbs on
// named 8-byte variables, an initial state, a post-crash condition and,
// per persistency model, whether the condition is expected to be allowed
// (some crash may leave a state satisfying it) or forbidden.
//
// `run` decides it by brute force with the crash simulator's own model
// objects (crash/model.h): for every interleaving of the threads and every
// crash point of it (before each event and after the last), it captures the
// model run's CrashState on a small in-memory machine and enumerates every
// image the model's ImageSpace allows. No rule is written twice: the
// litmus tool and the simulator apply the same ModelRun and ImageSpace.
//
// Thread safety: parse and run are pure functions of their arguments.
#pragma once

#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "ferrite/crash/model.h"

namespace ferrite::litmus {

// A malformed test: the message names the file and line.
class ParseError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

enum class OpKind {
  kStore,    // store X v|rN : annotated store (persist::store)
  kWrite,    // write X v|rN : unannotated store (the model does not see it)
  kPersist,  // persist X v|rN : StrandWeaver's P(X)=v — store, then pwb X
  kLoad,     // load rN X
  kPwb,      // pwb X
  kVerb,     // pfence psync ofence dfence persist_barrier new_strand join_strand
  kAcquire,  // acquire L [rN] : takes lock L (waits while another thread holds
             // it); rN := how many times L was released before
  kRelease,  // release L
};

struct Op {
  OpKind kind = OpKind::kStore;
  std::string var;          // store/write/persist/load/pwb; acquire/release: the lock
  std::uint64_t value = 0;  // store/write/persist: the constant (if reg is empty)
  std::string reg;          // load: destination; store: source register (empty: constant)
  persist::Verb verb = persist::Verb::kPfence;  // kVerb
  int line = 0;             // source line
};

// One conjunct of the condition: VAR (or T:rN) has one of the values.
struct Atom {
  std::string var;  // variable, or "T:rN" for thread T's register rN
  std::vector<std::uint64_t> values;
};

struct Test {
  std::string name, description, file;
  int line = 0;                                  // of the `litmus` line
  std::vector<std::string> vars;                 // in declaration order
  std::map<std::string, std::uint64_t> init;     // every var (default 0)
  std::vector<std::vector<std::string>> groups;  // `line A B`: vars sharing a cache line
  std::vector<std::string> locks;                // named by acquire / release, in order of appearance
  std::vector<std::vector<Op>> threads;
  std::vector<Atom> condition;                   // conjunction
  std::string condition_text;
  std::map<std::string, bool> expect;            // model -> allowed?
};

// Parses every test of a file. Throws ParseError ("FILE:LINE: message").
std::vector<Test> parse(std::string_view text, const std::string& file = "<input>");
std::vector<Test> parse_file(const std::string& path);

struct Verdict {
  bool allowed = false;
  std::uint64_t interleavings = 0;  // complete interleavings explored
  std::uint64_t crash_states = 0;   // distinct (state, registers) pairs whose images were enumerated
  std::uint64_t images = 0;         // images checked
  std::string witness;              // allowed: how (interleaving, crash point, image)
};

// Decides the test under a model. Throws std::runtime_error if the model's
// images at some crash point are too many to enumerate (never for tests
// of a few threads and events).
Verdict run(const Test& t, const crash::Model& m);

}  // namespace ferrite::litmus
